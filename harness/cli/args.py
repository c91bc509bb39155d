"""The ``kraft-chaos`` argument parser: argparse whose errors raise :class:`UsageError` (exit 3)
instead of exiting 2. The value types of its flags are harness/config/values.py."""
from __future__ import annotations

import argparse


class UsageError(Exception):
    """Bad command-line input (exit 3); the message names the bad value."""


class Parser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of exiting 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: error: {message}")
