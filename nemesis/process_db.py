"""What the process nemeses need from the DB lifecycle (``targets.kraft_db.KraftDB``)."""
from __future__ import annotations

from typing import Protocol


class ProcessDB(Protocol):
    """The node-process controls used by :mod:`nemesis.kill` and :mod:`nemesis.pause`.

    ``targets.kraft_db.KraftDB`` implements it. Each method acts on one node and
    may raise ``clusters.remote.RemoteError`` when the node is unreachable.
    """

    def start(self, node: str) -> bool:
        """Start the node's process unless it runs; True if it was started."""

    def kill(self, node: str) -> bool:
        """SIGKILL the node's process; True if a process was signalled."""

    def pause(self, node: str) -> bool:
        """SIGSTOP the node's process; True if a process was signalled."""

    def resume(self, node: str) -> bool:
        """SIGCONT the node's process; True if a process was signalled."""

    def is_running(self, node: str) -> bool:
        """True if the node's process exists (paused counts as running)."""
