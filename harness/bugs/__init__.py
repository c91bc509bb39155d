"""``kraft-chaos bugs``' engine: every catalogued bug (harness/catalogue/) run under its
schedule, and its correct build or fixed release beside it.

``runs.py`` (the runs of our quorum's catalogue and of Apache Kafka's, into a ``bugs.json``
document) and ``report.py`` (its table, the README's Markdown rows, the chart and the exit
code). The command line is the ``bugs`` subcommand.
"""
