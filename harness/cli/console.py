"""The console log of a ``kraft-chaos`` command: ``rich`` on a terminal, plain lines otherwise."""
from __future__ import annotations

import logging
import sys

from rich.logging import RichHandler


def remove_console_logging() -> None:
    """Remove the handler :func:`console_logging` added (if any)."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_kraft_chaos_console", False)]:
        root.removeHandler(h)


def console_logging(verbose: bool) -> None:
    """Log to stderr (INFO and up when ``verbose``, else WARNING), once per process."""
    root = logging.getLogger()
    if any(getattr(h, "_kraft_chaos_console", False) for h in root.handlers):
        return
    if sys.stderr.isatty():
        h: logging.Handler = RichHandler(show_path=False, markup=False)
        h.setFormatter(logging.Formatter("%(message)s"))
    else:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    h.setLevel(logging.INFO if verbose else logging.WARNING)
    h._kraft_chaos_console = True  # type: ignore[attr-defined]
    root.addHandler(h)
    root.setLevel(logging.INFO)
