"""The :class:`~clusters.remote.Remote` of the netns backend: commands enter a node's
namespaces with ``nsenter``; files are copied as tar streams through the same door.

A node is a process tree on this host (see :mod:`clusters.netns_cluster`): a pid-namespace
init whose network, mount, pid and UTS namespaces every command joins, so a command sees
the node's own ``eth0``, its own files at the usual paths (``/etc``, ``/var``, ``/opt`` as
overlays, its own ``/tmp`` and ``/run``), its own hostname and only its own processes.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Sequence

from clusters.commands import (COPY_MISSING, KILL_AFTER_S, as_argv, extract_tar, split_remote_path, tar_of,
                               tar_script, untar_script, with_timeout)
from clusters.remote import ExecResult, Remote, RemoteError

#: seconds the host waits beyond a command's own ``timeout`` before it gives up on it
HOST_GRACE_S = 10.0
#: seconds a detached command may take to be started
DETACH_START_S = 10.0


def _decode(b: bytes | str | None) -> str:
    if isinstance(b, str):
        return b
    return (b or b"").decode("utf-8", errors="replace")


class NetnsRemote(Remote):
    """Runs commands in, and copies files to and from, the nodes of a netns cluster.

    ``init_pid(node)`` gives the host pid of the node's init (raises ``KeyError`` for a node
    that has none: not set up, or torn down); ``env`` is the whole environment of every
    command (``PATH``, ``PYTHONPATH``, ...).
    """

    def __init__(self, nodes: Sequence[str], init_pid: Callable[[str], int], env: Mapping[str, str]):
        self.nodes = list(nodes)
        self._init_pid = init_pid
        self.env = dict(env)

    def _enter(self, node: str, cmd: object) -> list[str]:
        """``nsenter`` into every namespace of ``node``, working directory ``/``, with a clean
        environment. Raises :class:`RemoteError` for an unknown node or one without an init."""
        if node not in self.nodes:
            raise RemoteError(node, cmd, f"unknown node; nodes are {self.nodes}")
        try:
            pid = self._init_pid(node)
        except KeyError:
            raise RemoteError(node, cmd, "the node is not running (cluster not set up, or torn down)") from None
        return ["nsenter", "-t", str(pid), "-n", "-m", "-p", "-u", "--wdns=/", "--",
                "env", "-i", *(f"{k}={v}" for k, v in self.env.items())]

    def _run(self, node: str, cmd: object, argv: list[str], timeout_s: float | None,
             stdin: bytes | None = None, stdout=None) -> subprocess.CompletedProcess:
        """Run ``argv`` on the host and wait for it to exit; its output goes to temporary
        files (or ``stdout``), not pipes, so a background process the command leaves behind
        with its stdout open does not hold the call."""
        host_timeout = None if timeout_s is None else timeout_s + KILL_AFTER_S + HOST_GRACE_S
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                res = subprocess.run(argv, input=stdin, stdout=stdout or out, stderr=err,
                                     timeout=host_timeout, start_new_session=True)
            except subprocess.TimeoutExpired:
                raise RemoteError(node, cmd, f"timed out after {timeout_s} s (the node did not answer)") from None
            except OSError as e:
                raise RemoteError(node, cmd, f"cannot run nsenter: {e}") from e
            out.seek(0)
            err.seek(0)
            res.stdout = out.read() if stdout is None else b""
            res.stderr = err.read()
        return res

    def _check_alive(self, node: str, cmd: object, res: subprocess.CompletedProcess) -> None:
        """nsenter's own failure (exit 1 with its message) means the node is gone."""
        err = _decode(res.stderr)
        if res.returncode != 0 and err.startswith("nsenter:"):
            raise RemoteError(node, cmd, f"the node is gone: {err.strip()[-300:]}",
                              ExecResult(res.returncode, "", err))

    def exec(self, node: str, cmd: Sequence[str] | str, *, check: bool = True,
             detach: bool = False, timeout_s: float | None = 30.0) -> ExecResult:
        """Run ``cmd`` in ``node``'s namespaces (see :meth:`Remote.exec`).

        A foreground command with ``timeout_s`` runs under coreutils ``timeout -k 2
        <timeout_s>`` inside the node (exit 124 or 137 is reported as a timeout). A detached
        command is started by a shell that leaves it in the background (stdio on /dev/null),
        reparented to the node's init. Raises :class:`RemoteError` on an unknown or stopped
        node, a timeout, or (``check=True``) a non-zero exit.
        """
        argv = as_argv(cmd)
        enter = self._enter(node, cmd)
        if detach:
            script = 'exec "$@" </dev/null >/dev/null 2>&1 &'
            res = self._run(node, cmd, [*enter, "sh", "-c", script, "sh", *argv], DETACH_START_S)
            self._check_alive(node, cmd, res)
            if res.returncode != 0:
                raise RemoteError(node, cmd, f"could not start it detached: {_decode(res.stderr).strip()}")
            return ExecResult(0, "", "")
        res = self._run(node, cmd, [*enter, *with_timeout(argv, timeout_s)], timeout_s)
        self._check_alive(node, cmd, res)
        return ExecResult(res.returncode, _decode(res.stdout), _decode(res.stderr)).checked(
            node, cmd, timeout_s, check)

    def put(self, node: str, local_path: Path, remote_path: str) -> None:
        """Copy local file or directory ``local_path`` to ``remote_path`` on the node, owned by
        root. Raises ``FileNotFoundError`` when ``local_path`` is missing, ``ValueError`` when
        ``remote_path`` is not absolute, :class:`RemoteError` when the remote parent directory
        is missing or the copy fails."""
        local_path = Path(local_path)
        if not local_path.exists():
            raise FileNotFoundError(f"put to {node}: local path {local_path} does not exist")
        parent, name = split_remote_path(remote_path)
        what = f"put {remote_path}"
        script = untar_script(parent)
        res = self._run(node, what, [*self._enter(node, what), "sh", "-c", script], 300.0,
                        stdin=tar_of(local_path, name))
        self._check_alive(node, what, res)
        if res.returncode == COPY_MISSING:
            raise RemoteError(node, what, f"remote directory {parent} does not exist")
        if res.returncode != 0:
            raise RemoteError(node, what, f"copy failed: {_decode(res.stderr).strip()[-500:]}")

    def get(self, node: str, remote_path: str, local_path: Path) -> None:
        """Copy ``remote_path`` (file or directory) from the node to ``local_path``, which
        becomes the copy (parents created, an existing one replaced, symlinks kept as links).
        Raises :class:`RemoteError` when the remote path does not exist or the copy fails."""
        path, name, script = tar_script(remote_path)
        what = f"get {path}"
        with tempfile.TemporaryFile() as spool:
            res = self._run(node, what, [*self._enter(node, what), "sh", "-c", script], 300.0, stdout=spool)
            self._check_alive(node, what, res)
            if res.returncode == COPY_MISSING:
                raise RemoteError(node, what, "remote path does not exist")
            if res.returncode != 0:
                raise RemoteError(node, what, f"copy failed: {_decode(res.stderr).strip()[-500:]}")
            spool.seek(0)
            try:
                extract_tar(spool, name, Path(local_path))
            except (OSError, ValueError) as e:
                raise RemoteError(node, what, f"copy failed: {e}") from e
