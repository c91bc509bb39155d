"""The error every history reader raises for bad input."""
from __future__ import annotations


class FormatError(ValueError):
    """A history file that cannot be read; the message names the file and line.

    ``path`` and ``line`` (1-based, or None) are kept as attributes.
    """

    def __init__(self, path, line: int | None, message: str):
        self.path, self.line = path, line
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
