"""``kraft-chaos bisect``'s engine: in which Kafka release did the verdict change?

``search.py`` (what runs at every release, a release's verdict from its runs, and the two
searches over the releases; pure) and ``runs.py`` (the runs of each release tested, the
``bisect.json`` document, its table and exit code). The command line is the ``bisect``
subcommand.
"""
