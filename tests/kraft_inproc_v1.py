"""In-process kraft.version 1 clusters (KIP-853) for unit tests: voters formatted with
``--initial-controllers``, observers with ``--no-initial-controllers``, every node
finding the quorum through ``controller.quorum.bootstrap.servers``."""
from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

from kraft.runtime.config import NodeConfig
from kraft.storage.bootstrap import format_node
from kraft.wire.client import KraftClient
from tests.kraft_inproc import CLUSTER_ID, Running, free_ports

FAST = dict(election_timeout_ms=150, fetch_timeout_ms=300, request_timeout_ms=500,
            fetch_max_wait_ms=100, election_backoff_max_ms=100)


class V1Cluster:
    """``n_voters`` voters (ids 1..n) and ``n_observers`` observers (ids after them) under
    ``root``; ``dir_ids[id]`` is each voter's directory id; ``overrides[id]`` config fields."""

    def __init__(self, root: Path, n_voters: int, n_observers: int = 0, overrides: dict | None = None):
        self.root = root
        n = n_voters + n_observers
        self.ports = dict(zip(range(1, n + 1), free_ports(n)))
        self.voter_ids = list(range(1, n_voters + 1))
        self.dir_ids = {i: str(uuid.uuid4()) for i in self.voter_ids}
        self.initial = ",".join(f"{i}@127.0.0.1:{self.ports[i]}:{self.dir_ids[i]}" for i in self.voter_ids)
        self.overrides = overrides or {}
        self.running: dict[int, Running] = {}
        for i in self.ports:
            if i in self.dir_ids:
                format_node(self.data_dir(i), CLUSTER_ID, i, initial_controllers=self.initial)
            else:
                format_node(self.data_dir(i), CLUSTER_ID, i, no_initial_controllers=True)

    def data_dir(self, i: int) -> Path:
        return self.root / f"n{i}"

    def config(self, i: int) -> NodeConfig:
        kw = dict(node_id=i, listen_host="127.0.0.1", listen_port=self.ports[i], voters=(),
                  data_dir=self.data_dir(i), seed=i,
                  bootstrap_servers=tuple(("127.0.0.1", self.ports[v]) for v in self.voter_ids), **FAST)
        kw.update(self.overrides.get(i, {}))
        return NodeConfig(**kw)

    async def start(self, i: int, partition=None) -> Running:
        self.running[i] = await Running(self.config(i), partition).start()
        return self.running[i]

    async def crash(self, i: int) -> None:
        await self.running.pop(i).crash()

    def wipe(self, i: int) -> str:
        """Lose node ``i``'s disk and format it again as a fresh replica (a new directory id,
        no voters: ``--no-initial-controllers``); returns the new directory id."""
        shutil.rmtree(self.data_dir(i))
        return format_node(self.data_dir(i), CLUSTER_ID, i, no_initial_controllers=True).directory_id

    def client(self, i: int) -> KraftClient:
        return KraftClient("127.0.0.1", self.ports[i], CLUSTER_ID, timeout_ms=3000)

    async def close(self) -> None:
        for i in list(self.running):
            try:
                await self.crash(i)
            except Exception:   # noqa: BLE001 - best effort at teardown
                pass


async def eventually(check, timeout_s: float = 5.0, what: str = "condition"):
    """Poll the (sync or async) ``check`` every 20 ms until it returns a truthy value, which is
    returned; raises AssertionError naming ``what`` after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    last = None
    while loop.time() < deadline:
        try:
            last = check()
            if asyncio.iscoroutine(last):
                last = await last
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last = e
        if last and not isinstance(last, Exception):
            return last
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")
