"""The ``kraft-chaos`` argument parser: argparse whose errors raise :class:`UsageError` (exit 3)
instead of exiting 2, and the flags several subcommands share. The value types of the flags are
harness/config/values.py."""
from __future__ import annotations

import argparse

from harness.config import values


class UsageError(Exception):
    """Bad command-line input (exit 3); the message names the bad value."""


class Parser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of exiting 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: error: {message}")


def add_lock_flag(p: argparse.ArgumentParser, during: str = "each run", extra: str = "") -> None:
    """``--lock FILE`` (:func:`harness.config.values.lock_file`): an exclusive ``flock`` on FILE
    held during ``during``; default :data:`harness.config.values.DEFAULT_LOCK` (read when the
    parser is built), ``none`` for no lock. ``extra`` ends the help's first clause."""
    p.add_argument("--lock", type=values.lock_file, default=values.DEFAULT_LOCK, metavar="FILE",
                   help=f"hold an exclusive flock on FILE during {during}, so that others can run between "
                        f"them{extra}; created if missing; '{values.NO_LOCK}': no lock "
                        f"(default {values.DEFAULT_LOCK})")
