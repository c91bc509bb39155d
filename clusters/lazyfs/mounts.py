"""Host-side manager of the lazyfs mounts: one daemon per node, crash/stats through its control socket.

Layout under ``root`` (one directory per node)::

    root/<node>/backing/      the durable state (what survives a power loss)
    root/<node>/mnt/          the lazyfs mount the node's data dir lives on
    root/<node>/lazyfs.log    the daemon's log
    root/<node>/daemon.pid    its process id (for a sweep after a harness crash)
    root/<node>/control.sock  its control socket (a short path under /tmp when this one is too long)

Mounts carry the fsname ``kraft-chaos-lazyfs-<node>`` (type
``fuse.kraft-chaos-lazyfs``), so a stale one left by a killed harness shows in
``/proc/mounts``; :func:`sweep` (also ``python -m clusters.lazyfs.mounts
--sweep [ROOT]``) unmounts every such mount and stops the daemons named by pid
files under ROOT. Tear the containers down before :meth:`LazyMounts.unmount_all`:
a container that bind-mounts a mountpoint keeps its own copy of the mount,
which dies (ENOTCONN) when the daemon is stopped.

This module does not import pyfuse3 (only the daemon process does).
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from clusters.lazyfs.control import ControlClient, ControlError

log = logging.getLogger(__name__)

FSNAME_PREFIX = "kraft-chaos-lazyfs"
REPO_ROOT = Path(__file__).resolve().parents[2]
_SOCK_MAX = 100   # sun_path is 108 bytes


class LazyFSError(RuntimeError):
    """A lazyfs mount could not be set up, or a node has none."""


def _unescape(field: str) -> str:
    """``/proc/mounts`` escapes space, tab, newline and backslash as octal ``\\040`` etc."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field[i + 1:i + 4]) == 3 and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def lazyfs_mounts(under: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    """``[(source, mountpoint), ...]`` of the lazyfs mounts in ``/proc/mounts`` (source starting
    with ``kraft-chaos-lazyfs``), only those at or below ``under`` when given."""
    prefix = os.path.realpath(under) if under is not None else None
    found = []
    try:
        with open("/proc/mounts", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split(" ")
        if len(parts) < 3 or not parts[0].startswith(FSNAME_PREFIX):
            continue
        mnt = _unescape(parts[1])
        if prefix is None or mnt == prefix or mnt.startswith(prefix.rstrip("/") + "/"):
            found.append((_unescape(parts[0]), mnt))
    return found


def is_mounted(mountpoint: str | os.PathLike) -> bool:
    """True when a lazyfs mount sits exactly at ``mountpoint``."""
    mnt = os.path.realpath(mountpoint)
    return any(m == mnt for _, m in lazyfs_mounts())


def force_unmount(mountpoint: str | os.PathLike) -> bool:
    """Unmount ``mountpoint``: ``fusermount3 -u``, then ``fusermount3 -uz``, then ``umount -l``.

    Never raises. Returns True when no lazyfs mount is left there.
    """
    mnt = os.path.realpath(mountpoint)
    for argv in (["fusermount3", "-u", mnt], ["fusermount3", "-uz", mnt], ["umount", "-l", mnt]):
        if not is_mounted(mnt):
            return True
        try:
            subprocess.run(argv, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError) as e:
            log.debug("%s: %s", argv, e)
    return not is_mounted(mnt)


def _is_daemon(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"clusters.lazyfs" in f.read()
    except OSError:
        return False


def _stop_pid(pid: int, wait_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL a lazyfs daemon ``pid`` (only if its cmdline says it is one)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _is_daemon(pid):
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _is_daemon(pid):
            time.sleep(0.05)


def sweep(root: str | os.PathLike | None = None) -> list[str]:
    """Remove leftovers of a crashed harness: every lazyfs mount (under ``root`` if given) is
    unmounted, and every daemon named by a ``root/*/daemon.pid`` is stopped. Never raises;
    returns what was done, one line each."""
    done = []
    for source, mnt in lazyfs_mounts(root):
        ok = force_unmount(mnt)
        done.append(f"unmounted {source} at {mnt}" if ok else f"could not unmount {source} at {mnt}")
    if root is not None:
        for pidfile in Path(root).glob("*/daemon.pid"):
            try:
                pid = int(pidfile.read_text().strip())
            except (OSError, ValueError):
                continue
            if _is_daemon(pid):
                _stop_pid(pid)
                done.append(f"stopped lazyfs daemon {pid}")
            pidfile.unlink(missing_ok=True)
    return done


class LazyMounts:
    """One lazyfs daemon and mount per node under ``root`` (the layout in the module docstring).

    ``python``: the interpreter that runs ``-m clusters.lazyfs`` (default: this
    one; it needs pyfuse3). ``backing_fsync``: fsync backing files on guest
    syncs. ``mount_timeout``: seconds to wait for a mount. ``control_timeout``:
    seconds for a control command (a crash). Thread-safe; also a context
    manager (``unmount_all`` on exit) and registered with ``atexit``.
    """

    def __init__(self, root: str | os.PathLike, *, python: str | None = None,
                 backing_fsync: bool = True, mount_timeout: float = 15.0,
                 control_timeout: float = 60.0):
        self.root = Path(root).resolve()
        self.python = python or sys.executable
        self.backing_fsync = backing_fsync
        self.mount_timeout = mount_timeout
        self.control_timeout = control_timeout
        self._procs: dict[str, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._atexit = False

    def __enter__(self) -> "LazyMounts":
        return self

    def __exit__(self, *exc) -> None:
        self.unmount_all()

    def node_dir(self, node: str) -> Path:
        """``root/<node>``. Raises ``ValueError`` for a node name that is not a plain file name."""
        if not node or "/" in node or node in (".", ".."):
            raise ValueError(f"bad node name {node!r}")
        return self.root / node

    def backing(self, node: str) -> Path:
        """The node's backing directory (durable state)."""
        return self.node_dir(node) / "backing"

    def mountpoint(self, node: str) -> Path:
        """The node's lazyfs mountpoint (bind this into its container)."""
        return self.node_dir(node) / "mnt"

    def control_path(self, node: str) -> Path:
        """The node's control socket path."""
        p = self.node_dir(node) / "control.sock"
        if len(os.fsencode(p)) < _SOCK_MAX:
            return p
        h = hashlib.sha1(os.fsencode(self.root)).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"kc-lazyfs-{h}-{node}.sock"

    def binds(self, container_path: str, nodes=None) -> dict[str, dict[str, str]]:
        """``{node: {host mountpoint: container_path}}`` for the mounted (or given) nodes, the shape
        ``DockerCluster(binds=...)`` takes."""
        return {n: {str(self.mountpoint(n)): container_path} for n in (nodes or sorted(self._procs))}

    def mount(self, node: str) -> Path:
        """Start the node's daemon and wait until it is mounted and answers; returns the mountpoint.

        Idempotent for a node already mounted. A stale mount at the mountpoint
        is removed first. Raises :class:`LazyFSError` (with the daemon log's
        tail) when it does not come up within ``mount_timeout``.
        """
        with self._lock:
            proc = self._procs.get(node)
            mnt = self.mountpoint(node)
            if proc is not None and proc.poll() is None and is_mounted(mnt):
                return mnt
            if not self._atexit:
                atexit.register(self.unmount_all)
                self._atexit = True
            force_unmount(mnt)
            for d in (self.backing(node), mnt):
                d.mkdir(parents=True, exist_ok=True)
            logf = self.node_dir(node) / "lazyfs.log"
            sock = self.control_path(node)
            argv = [self.python, "-m", "clusters.lazyfs", str(self.backing(node)), str(mnt),
                    "--control", str(sock), "--log", str(logf), "--fsname", f"{FSNAME_PREFIX}-{node}"]
            if not self.backing_fsync:
                argv.append("--no-backing-fsync")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
            with open(logf, "ab") as out:
                proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=out, start_new_session=True)
            self._procs[node] = proc
            (self.node_dir(node) / "daemon.pid").write_text(f"{proc.pid}\n")
            deadline = time.monotonic() + self.mount_timeout
            while True:
                if proc.poll() is not None:
                    self._procs.pop(node, None)
                    raise LazyFSError(f"lazyfs daemon for {node} exited with {proc.returncode}: "
                                      f"{self._tail(logf)}")
                if is_mounted(mnt):
                    try:
                        ControlClient(sock, timeout=2.0).call("ping")
                        log.info("lazyfs %s mounted at %s (pid %d)", node, mnt, proc.pid)
                        return mnt
                    except (OSError, ControlError):
                        pass
                if time.monotonic() > deadline:
                    self._stop(node)
                    raise LazyFSError(f"lazyfs for {node} not mounted after {self.mount_timeout}s: "
                                      f"{self._tail(logf)}")
                time.sleep(0.05)

    def mount_all(self, nodes) -> dict[str, Path]:
        """:meth:`mount` each node; ``{node: mountpoint}``. On a failure the ones mounted are unmounted."""
        try:
            return {n: self.mount(n) for n in nodes}
        except BaseException:
            self.unmount_all()
            raise

    def _client(self, node: str) -> ControlClient:
        proc = self._procs.get(node)
        if proc is None or proc.poll() is not None:
            raise LazyFSError(f"no lazyfs daemon runs for {node!r} (mounted: {sorted(self._procs)})")
        return ControlClient(self.control_path(node), timeout=self.control_timeout)

    def crash(self, node: str, torn: bool = False, lost_renames: bool = False,
              seed: int | None = None) -> dict:
        """Power loss on ``node``'s disk: drop everything it did not fsync (see ``power.crash``).

        Kill the node's process first; restart it after. ``torn``: persist a
        seeded random strict prefix (byte granularity) of the newest unsynced
        write. ``lost_renames``: undo the creates, renames, unlinks, mkdirs and
        rmdirs whose directory was not fsynced (otherwise they are kept). Returns
        ``{"dropped_bytes": int, "reverted_files": [paths relative to the mount],
        "torn": {"path", "offset", "length", "kept"} | None, "namespace_undone":
        [ops], "namespace_kept": int, "undo_errors": [ops with "error"], "seed": int}``.
        Raises :class:`LazyFSError` (no daemon), ``ControlError`` (the daemon
        refused or failed) or ``OSError`` (the daemon did not answer).
        """
        args = {"torn": bool(torn), "lost_renames": bool(lost_renames)}
        if seed is not None:
            args["seed"] = int(seed)
        return self._client(node).call("crash", **args)

    def sync(self, node: str) -> dict:
        """Make everything on ``node``'s mount durable (``sync(2)``): ``{"synced_files",
        "synced_bytes", "namespace_synced"}``. Errors as :meth:`crash`."""
        return self._client(node).call("sync")

    def stats(self, node: str) -> dict:
        """The daemon's counters and unsynced state: ``writes``, ``bytes_written``, ``reads``,
        ``fsyncs``, ``fsyncdirs``, ``synced_bytes``, ``dirty_files``, ``dirty_bytes``,
        ``pending_namespace_ops``, ``open_files``. Errors as :meth:`crash`."""
        return self._client(node).call("stats")

    def _stop(self, node: str) -> None:
        proc = self._procs.pop(node, None)
        mnt = self.mountpoint(node)
        if not force_unmount(mnt):
            log.warning("lazyfs %s: %s still mounted", node, mnt)
        if proc is not None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _stop_pid(proc.pid)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    log.warning("lazyfs %s: daemon %d did not exit", node, proc.pid)
            force_unmount(mnt)   # a daemon killed before its unmount leaves a dead mount
        (self.node_dir(node) / "daemon.pid").unlink(missing_ok=True)

    def unmount(self, node: str) -> None:
        """Unmount ``node`` and stop its daemon. Idempotent; never raises (problems are logged)."""
        with self._lock:
            try:
                self._stop(node)
            except Exception as e:  # noqa: BLE001 - teardown must not raise
                log.warning("lazyfs %s: unmount failed: %s", node, e)

    def unmount_all(self) -> None:
        """Unmount every node's mount and stop every daemon, also stale ones under ``root``.
        Idempotent; never raises; leaves no lazyfs mount under ``root`` and no daemon."""
        for node in list(self._procs):
            self.unmount(node)
        try:
            for line in sweep(self.root):
                log.info("lazyfs sweep: %s", line)
        except Exception as e:  # noqa: BLE001 - teardown must not raise
            log.warning("lazyfs sweep of %s failed: %s", self.root, e)

    @staticmethod
    def _tail(path: Path, n: int = 2000) -> str:
        try:
            return path.read_text(errors="replace")[-n:].strip() or "(empty log)"
        except OSError:
            return "(no log)"


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(prog="python -m clusters.lazyfs.mounts",
                                 description="remove stale kraft-chaos lazyfs mounts and daemons")
    ap.add_argument("--sweep", nargs="?", const="", metavar="ROOT",
                    help="unmount lazyfs mounts (under ROOT if given) and stop ROOT's daemons")
    a = ap.parse_args()
    if a.sweep is None:
        ap.error("nothing to do; pass --sweep [ROOT]")
    for msg in sweep(a.sweep or None):
        print(msg)
