"""The ``kraft-chaos`` command line: the parser and the dispatch to one module per subcommand.

``run`` (harness/cli/run.py), ``check`` (harness/cli/check.py), ``teardown``
(harness/cli/teardown.py), ``analyze``, ``export`` and ``synth`` (harness/cli/analyze.py),
``bugs`` (harness/cli/bugs.py), ``bisect`` (harness/cli/bisect.py), ``scenario`` and ``shrink`` (harness/cli/scenario.py),
``matrix`` (harness/cli/matrix.py), ``hunt`` (harness/cli/hunt.py) and ``serve`` (harness/web/serve.py). Exit codes:
harness/exits.py.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from harness.cli import analyze, bisect, bugs, check, hunt, matrix, run, scenario, simulate, teardown
from harness.cli.args import Parser, UsageError
from harness.exits import EXIT_BAD_INPUT
from harness.web import serve

#: each subcommand's handler, by name
COMMANDS = {"run": run.cmd_run, "check": check.cmd_check, "teardown": teardown.cmd_teardown,
            "analyze": analyze.cmd_analyze, "export": analyze.cmd_export, "synth": analyze.cmd_synth,
            "bugs": bugs.cmd_bugs, "bisect": bisect.cmd_bisect, "scenario": scenario.cmd_scenario, "shrink": scenario.cmd_shrink,
            "matrix": matrix.cmd_matrix, "hunt": hunt.cmd_hunt, "serve": serve.cmd_serve,
            "simulate": simulate.cmd_simulate}


def build_parser() -> argparse.ArgumentParser:
    """The ``kraft-chaos`` argument parser (errors raise :class:`harness.cli.args.UsageError`)."""
    p = Parser(prog="kraft-chaos", description="Jepsen-style fault injection for a KRaft quorum.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    run.add_parser(sub)
    check.add_parser(sub)
    teardown.add_parser(sub)
    analyze.add_parsers(sub)
    bugs.add_parser(sub)
    bisect.add_parser(sub)
    scenario.add_parsers(sub)
    matrix.add_parser(sub)
    hunt.add_parser(sub)
    serve.add_parser(sub)
    simulate.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``kraft-chaos`` / ``python -m harness``; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:      # e.g. `kraft-chaos check DIR | head`
        sys.stdout = None
        return 0
