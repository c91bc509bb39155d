"""The ``kraft-chaos`` command line: the parser and dispatch (main.py), the argument types, exit codes, and one module per subcommand."""
