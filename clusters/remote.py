"""The remote interface: what the DB lifecycle and the nemeses may do to a node.

Every backend (Docker today; network namespaces and SSH later) implements
:class:`Remote` and :class:`Cluster`. Code outside ``clusters/`` touches nodes
only through these two classes, so a new backend needs no change elsewhere.
"""
from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import Sequence


class RemoteError(RuntimeError):
    """A command on a node could not be run, or exited non-zero with ``check=True``.

    Attributes: ``node`` (str), ``cmd`` (the command as given), ``result``
    (:class:`ExecResult` or None when the command never ran).
    """

    def __init__(self, node: str, cmd: object, message: str, result: "ExecResult | None" = None):
        super().__init__(f"{node}: {message} (command: {cmd!r})")
        self.node = node
        self.cmd = cmd
        self.result = result


@dataclasses.dataclass(frozen=True)
class ExecResult:
    """The outcome of one command on a node.

    ``exit_code`` is the process exit status (int); ``stdout`` and ``stderr``
    are decoded as UTF-8 with replacement.
    """

    exit_code: int
    stdout: str
    stderr: str

    def checked(self, node: str, cmd: object, timeout_s: float | None, check: bool) -> "ExecResult":
        """This result, after the checks every backend's ``exec`` makes: raises
        :class:`RemoteError` when ``timeout_s`` (s) was set and the exit code is ``timeout``'s
        (124, or 137 after its kill), or when ``check`` and the exit code is not 0 (the
        message ends with the last 500 characters of stderr)."""
        from clusters.commands import TIMEOUT_EXIT_CODES
        if timeout_s is not None and self.exit_code in TIMEOUT_EXIT_CODES:
            raise RemoteError(node, cmd, f"timed out after {timeout_s} s", self)
        if check and self.exit_code != 0:
            raise RemoteError(node, cmd, f"exited {self.exit_code}: {self.stderr.strip()[-500:]}", self)
        return self


class Remote(abc.ABC):
    """Run commands on nodes and copy files to and from them."""

    @abc.abstractmethod
    def exec(self, node: str, cmd: Sequence[str] | str, *, check: bool = True,
             detach: bool = False, timeout_s: float | None = 30.0) -> ExecResult:
        """Run ``cmd`` on ``node``.

        ``cmd`` is an argv list, or a string run with ``sh -c``. With
        ``detach=True`` the command runs in the background and the result is
        ``ExecResult(0, "", "")`` once it has started. ``timeout_s`` bounds a
        foreground command (seconds).

        Raises :class:`RemoteError` when the node is unreachable, the command
        times out, or (with ``check=True``) it exits non-zero.
        """

    @abc.abstractmethod
    def put(self, node: str, local_path: Path, remote_path: str) -> None:
        """Copy a local file or directory to ``remote_path`` on ``node``.

        ``remote_path`` is the full destination path (its parent must exist).
        Raises :class:`RemoteError` or ``FileNotFoundError``.
        """

    @abc.abstractmethod
    def get(self, node: str, remote_path: str, local_path: Path) -> None:
        """Copy ``remote_path`` (file or directory) on ``node`` to ``local_path``.

        ``local_path`` becomes the copy (it is created, with parents). Raises
        :class:`RemoteError` when the remote path does not exist.
        """


class Cluster(abc.ABC):
    """A set of nodes that can reach each other, with a :class:`Remote`.

    Use as a context manager: ``__exit__`` calls :meth:`teardown` unless the
    cluster was created with ``keep=True``.
    """

    #: node names in order, e.g. ``["n1", "n2", "n3"]``
    nodes: list[str]
    remote: Remote

    @abc.abstractmethod
    def setup(self) -> None:
        """Create the nodes. Raises ``clusters.errors.ClusterError`` on failure."""

    @abc.abstractmethod
    def teardown(self) -> None:
        """Remove every node, network and rule this cluster created. Idempotent."""

    @abc.abstractmethod
    def ip(self, node: str) -> str:
        """The node's address, reachable from the harness and from the other nodes."""

    keep: bool = False

    def __enter__(self) -> "Cluster":
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.keep:
            self.teardown()
