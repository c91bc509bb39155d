"""``kraft-chaos matrix``'s engine: workloads x nemeses x targets x seeds, run back to back.

``file.py`` (a matrix file read and checked, its cells), ``cells.py`` (each cell run, the
``matrix.json`` document rewritten after each, the exit code) and ``report.py`` (the summary
table and the JUnit XML, which the hunt's report uses too). The command line is the ``matrix``
subcommand.
"""
