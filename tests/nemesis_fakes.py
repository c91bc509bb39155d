"""In-memory stand-ins for a cluster, its remote and the DB, for unit tests.

:class:`FakeRemote` records every call and answers from a user-supplied
handler; :class:`FakeDB` keeps per-node process state (running / paused).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Sequence

from clusters.remote import Cluster, ExecResult, Remote, RemoteError


class FakeRemote(Remote):
    """Records ``exec``/``put``/``get`` calls.

    ``calls``: list of ``("exec", node, cmd)``, ``("put", node, remote_path,
    content)`` and ``("get", node, remote_path, local_path)`` tuples.
    ``handler(node, cmd) -> ExecResult | None`` answers execs (None means
    ``ExecResult(0, "", "")``); ``down``: nodes whose every call raises
    :class:`RemoteError`; ``files``: ``{(node, path): text}`` served by ``get``.
    """

    def __init__(self, handler: Callable[[str, object], ExecResult | None] | None = None):
        self.handler = handler
        self.calls: list[tuple] = []
        self.down: set[str] = set()
        self.files: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def execs(self, node: str | None = None) -> list:
        """The commands exec'd (on ``node``, or everywhere), in order."""
        return [c[2] for c in self.calls if c[0] == "exec" and (node is None or c[1] == node)]

    def exec(self, node: str, cmd: Sequence[str] | str, *, check: bool = True,
             detach: bool = False, timeout_s: float | None = 30.0) -> ExecResult:
        with self._lock:
            self.calls.append(("exec", node, cmd))
        if node in self.down:
            raise RemoteError(node, cmd, "node is down")
        result = (self.handler(node, cmd) if self.handler else None) or ExecResult(0, "", "")
        if check and result.exit_code != 0:
            raise RemoteError(node, cmd, f"exit {result.exit_code}", result)
        return result

    def put(self, node: str, local_path: Path, remote_path: str) -> None:
        content = Path(local_path).read_text()
        with self._lock:
            self.calls.append(("put", node, remote_path, content))
        if node in self.down:
            raise RemoteError(node, remote_path, "node is down")

    def get(self, node: str, remote_path: str, local_path: Path) -> None:
        with self._lock:
            self.calls.append(("get", node, remote_path, local_path))
        if (node, remote_path) not in self.files:
            raise RemoteError(node, remote_path, "no such file")
        local_path = Path(local_path)
        local_path.parent.mkdir(parents=True, exist_ok=True)
        local_path.write_text(self.files[(node, remote_path)])


class FakeCluster(Cluster):
    """``n`` nodes ``n1..nN`` with IPs ``10.77.0.11``, ``.12``, ... and a :class:`FakeRemote`."""

    def __init__(self, n: int = 5, remote: FakeRemote | None = None):
        self.nodes = [f"n{i}" for i in range(1, n + 1)]
        self.remote = remote or FakeRemote()

    def setup(self) -> None:
        pass

    def teardown(self) -> None:
        pass

    def ip(self, node: str) -> str:
        return f"10.77.0.{10 + self.nodes.index(node) + 1}"


class FakeDB:
    """In-memory node processes implementing ``nemesis.process_db.ProcessDB``.

    ``running`` and ``paused`` are sets of node names; ``calls`` records
    ``(method, node)``; nodes in ``down`` raise :class:`RemoteError`.
    """

    def __init__(self, nodes: Sequence[str]):
        self.running: set[str] = set(nodes)
        self.paused: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.down: set[str] = set()
        self._lock = threading.Lock()

    def _call(self, method: str, node: str) -> None:
        with self._lock:
            self.calls.append((method, node))
        if node in self.down:
            raise RemoteError(node, method, "node is down")

    def start(self, node: str) -> bool:
        self._call("start", node)
        if node in self.running:
            return False
        self.running.add(node)
        return True

    def kill(self, node: str) -> bool:
        self._call("kill", node)
        was = node in self.running
        self.running.discard(node)
        self.paused.discard(node)
        return was

    def pause(self, node: str) -> bool:
        self._call("pause", node)
        if node not in self.running:
            return False
        self.paused.add(node)
        return True

    def resume(self, node: str) -> bool:
        self._call("resume", node)
        if node not in self.running:
            return False
        self.paused.discard(node)
        return True

    def is_running(self, node: str) -> bool:
        self._call("is_running", node)
        return node in self.running
