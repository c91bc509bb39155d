"""The :class:`~clusters.remote.Remote` of the SSH backend: a command runs on the node's host
over SSH (as root: through ``sudo -n`` when the host says so) inside the node's mount and pid
namespaces (``nsenter`` into its init, see :mod:`clusters.ssh_scripts`); files travel as tar
streams over the same channels.

So a command sees the node's own ``/etc``, ``/var`` and ``/opt`` (overlays on the host's) and
only the node's processes, and the host's network: ``iptables`` rules act on the host.
"""
from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Sequence

import paramiko

from clusters.commands import (COPY_MISSING, KILL_AFTER_S, as_argv, extract_tar, split_remote_path, tar_of,
                               tar_script, untar_script, with_timeout)
from clusters.remote import ExecResult, Remote, RemoteError
from clusters.ssh_session import HOST_PATH, SshCommandTimeout, SshHostError, SshSession

#: seconds the harness waits beyond a command's own ``timeout`` before it gives up on it
HOST_GRACE_S = 15.0
#: seconds a detached command may take to be started
DETACH_START_S = 30.0
#: seconds a copy may take
COPY_S = 600.0


def _decode(b: bytes) -> str:
    return (b or b"").decode("utf-8", errors="replace")


def as_root(session: SshSession, argv: Sequence[str]) -> str:
    """The command line that runs ``argv`` as root on ``session``'s host, with a clean
    environment (``PATH`` :data:`~clusters.ssh_session.HOST_PATH`): ``sudo -n --`` first when
    the host's ``sudo`` is set."""
    prefix = ["sudo", "-n", "--"] if session.spec.sudo else []
    return shlex.join([*prefix, "/usr/bin/env", "-i", f"PATH={HOST_PATH}", "LANG=C.UTF-8", *argv])


class SshRemote(Remote):
    """Runs commands in, and copies files to and from, the nodes of an SSH cluster.

    ``sessions``: ``{node: SshSession}`` of its host; ``init_pid(node)``: the host pid of the
    node's init (``KeyError`` when it has none: not set up, or torn down); ``env``: the whole
    environment of every command (``PATH``, ``PYTHONPATH``, ...).
    """

    def __init__(self, sessions: Mapping[str, SshSession], init_pid: Callable[[str], int], env: Mapping[str, str]):
        self.sessions = dict(sessions)
        self.nodes = list(self.sessions)
        self._init_pid = init_pid
        self.env = dict(env)

    def _enter(self, node: str, cmd: object, argv: list[str]) -> str:
        """The command line running ``argv`` in ``node``'s namespaces, working directory ``/``.
        Raises :class:`RemoteError` for an unknown node or one without an init."""
        if node not in self.sessions:
            raise RemoteError(node, cmd, f"unknown node; nodes are {self.nodes}")
        try:
            pid = self._init_pid(node)
        except KeyError:
            raise RemoteError(node, cmd, "the node is not running (cluster not set up, or torn down)") from None
        return as_root(self.sessions[node], ["nsenter", "-t", str(pid), "-m", "-p", "--wdns=/", "--",
                                             "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in self.env.items()),
                                             *argv])

    def _run(self, node: str, cmd: object, line: str, timeout_s: float | None, *, stdin: bytes | None = None,
             stdout=None) -> tuple[int, bytes, bytes]:
        session = self.sessions[node]
        bound = None if timeout_s is None else timeout_s + KILL_AFTER_S + HOST_GRACE_S
        try:
            code, out, err = session.run(line, stdin=stdin, timeout_s=bound, stdout=stdout)
        except SshCommandTimeout:
            raise RemoteError(node, cmd, f"timed out after {timeout_s} s (host {session.label} did not answer)") from None
        except SshHostError as e:
            raise RemoteError(node, cmd, str(e)) from e
        except (paramiko.SSHException, EOFError, OSError) as e:
            raise RemoteError(node, cmd, f"ssh host {session.label}: connection failed: {e}") from e
        text = _decode(err)
        if code != 0 and text.startswith("nsenter:"):
            raise RemoteError(node, cmd, f"the node is gone: {text.strip()[-300:]}", ExecResult(code, "", text))
        if code != 0 and text.startswith("sudo:"):
            raise RemoteError(node, cmd, f"ssh host {session.label}: {text.strip()[-300:]}", ExecResult(code, "", text))
        return code, out, err

    def exec(self, node: str, cmd: Sequence[str] | str, *, check: bool = True,
             detach: bool = False, timeout_s: float | None = 30.0) -> ExecResult:
        """Run ``cmd`` in ``node``'s namespaces on its host (see :meth:`Remote.exec`).

        A foreground command with ``timeout_s`` runs under coreutils ``timeout -k 2 <timeout_s>``
        on the host (exit 124 or 137 is reported as a timeout); the harness gives up
        :data:`HOST_GRACE_S` s later. A detached command runs in a session of its own (no
        hangup when the channel closes), stdio on /dev/null, reparented to the node's init.
        Raises :class:`RemoteError` on an unknown or stopped node, a lost connection, a
        timeout, or (``check=True``) a non-zero exit.
        """
        argv = as_argv(cmd)
        if detach:
            script = 'setsid "$@" </dev/null >/dev/null 2>&1 &'
            code, _, err = self._run(node, cmd, self._enter(node, cmd, ["sh", "-c", script, "sh", *argv]),
                                     DETACH_START_S)
            if code != 0:
                raise RemoteError(node, cmd, f"could not start it detached: {_decode(err).strip()}")
            return ExecResult(0, "", "")
        code, out, err = self._run(node, cmd, self._enter(node, cmd, with_timeout(argv, timeout_s)), timeout_s)
        return ExecResult(code, _decode(out), _decode(err)).checked(node, cmd, timeout_s, check)

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
        code, _, err = self._run(node, what, self._enter(node, what, ["sh", "-c", script]), COPY_S,
                                 stdin=tar_of(local_path, name))
        if code == COPY_MISSING:
            raise RemoteError(node, what, f"remote directory {parent} does not exist")
        if code != 0:
            raise RemoteError(node, what, f"copy failed: {_decode(err).strip()[-500:]}")

    def get(self, node: str, remote_path: str, local_path: Path) -> None:
        """Copy ``remote_path`` (file or directory) from the node to ``local_path``, which
        becomes the copy (parents created, an existing one replaced, symlinks kept as links).
        Raises :class:`RemoteError` when the remote path does not exist or the copy fails."""
        path, name, script = tar_script(remote_path)
        what = f"get {path}"
        with tempfile.TemporaryFile() as spool:
            code, _, err = self._run(node, what, self._enter(node, what, ["sh", "-c", script]), COPY_S,
                                     stdout=spool)
            if code == COPY_MISSING:
                raise RemoteError(node, what, "remote path does not exist")
            if code != 0:
                raise RemoteError(node, what, f"copy failed: {_decode(err).strip()[-500:]}")
            spool.seek(0)
            try:
                extract_tar(spool, name, Path(local_path))
            except (OSError, ValueError) as e:
                raise RemoteError(node, what, f"copy failed: {e}") from e
