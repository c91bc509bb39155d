"""In-process KRaft clusters for unit tests: real nodes and real TCP on loopback."""
from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path
from typing import AsyncIterator

from kraft.node.server import Server
from kraft.runtime.config import NodeConfig, Voter
from kraft.runtime.raft import TICK_S, RaftNode
from kraft.storage.meta import format_dir, read_meta
from kraft.wire.client import IndefiniteError

CLUSTER_ID = "unit-test-cluster"


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def make_configs(root: Path, n: int, **overrides) -> list[NodeConfig]:
    """Configs for an n-voter quorum with fast timers, data dirs formatted under root."""
    ports = free_ports(n)
    voters = tuple(Voter(i + 1, "127.0.0.1", p) for i, p in enumerate(ports))
    out = []
    for v in voters:
        d = root / f"n{v.id}"
        if not (d / "meta.properties").exists():
            format_dir(d, CLUSTER_ID, v.id)
        kw = dict(node_id=v.id, listen_host="127.0.0.1", listen_port=v.port, voters=voters, data_dir=d,
                  election_timeout_ms=150, fetch_timeout_ms=300, request_timeout_ms=500,
                  fetch_max_wait_ms=100, election_backoff_max_ms=100, seed=v.id)
        kw.update(overrides)
        out.append(NodeConfig(**kw))
    return out


class Running:
    """A node with its server and tick task, inside the current event loop."""

    def __init__(self, cfg: NodeConfig, partition: "Partition | None" = None):
        self.cfg = cfg
        self.partition = partition
        self.node: RaftNode | None = None

    async def start(self) -> "Running":
        self.node = RaftNode(self.cfg, read_meta(self.cfg.data_dir))
        if self.partition is not None:
            self.partition.attach(self.node)
        await self.node.start()
        self.server = Server(self.node, self.cfg.listen_host, self.cfg.listen_port)
        await self.server.start()
        self.ticker = asyncio.get_running_loop().create_task(self._tick())
        return self

    async def _tick(self) -> None:
        while True:
            self.node.tick()
            await asyncio.sleep(TICK_S)

    async def crash(self) -> None:
        """Stop abruptly: no resignation (the log is closed, as a kill -9 leaves fsynced data)."""
        self.ticker.cancel()
        await self.server.close()
        self.server._server.close()
        await self.node.close()


class LoopbackDB:
    """What harness.run.leader and Topology.from_db ask of a ``targets.base.DB``, for in-process nodes."""

    def __init__(self, running: dict[str, Running]):
        self.running = running

    def address(self, node):
        return ("127.0.0.1", self.running[node].cfg.listen_port)

    def node_id(self, node):
        return self.running[node].cfg.node_id

    def quorum_nodes(self):
        return list(self.running)

    def client_nodes(self):
        return list(self.running)

    def client_endpoint(self, node):
        return f"127.0.0.1:{self.running[node].cfg.listen_port}"

    def quorum_client_factory(self):
        from targets.kraft_client import kraft_client as kraft_quorum_client
        return kraft_quorum_client


@contextlib.asynccontextmanager
async def loopback_cluster(root: Path, n: int, partition: "Partition | None" = None,
                           **overrides) -> AsyncIterator[tuple[dict[str, Running], LoopbackDB, list[str]]]:
    """Start ``n`` nodes (configs from :func:`make_configs`); yields ``(running, db, names)``
    with ``running`` keyed ``"n1"``..; crashes every node still in ``running`` on exit."""
    cfgs = make_configs(root, n, **overrides)
    running = {f"n{c.node_id}": await Running(c, partition).start() for c in cfgs}
    try:
        yield running, LoopbackDB(running), list(running)
    finally:
        for r in running.values():
            with contextlib.suppress(Exception):
                await r.crash()


async def wait_for_leader(nodes: list[Running], timeout_s: float = 5.0, exclude=()) -> Running:
    """The single running node in Leader state whose epoch is highest; raises TimeoutError."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        leaders = [r for r in nodes if r not in exclude and r.node.kind.value == "Leader"]
        if leaders:
            best = max(leaders, key=lambda r: r.node.epoch)
            if best.node.hw > best.node.core.state.epoch_start:
                return best
        await asyncio.sleep(0.02)
    raise TimeoutError("no leader elected")


class Partition:
    """Drops traffic between node ids in ``cut`` (a set of frozensets {a, b}).

    Pass it to :class:`Running`; it wraps the client each node makes for a
    peer (``RaftNode._peer``) so that every request on a cut link, also on a
    connection made before the cut, fails like a dropped connection. Every RPC is a request from one
    side, so this cuts both directions.
    """

    def __init__(self) -> None:
        self.cut: set[frozenset] = set()

    def attach(self, node: RaftNode) -> None:
        """Route ``node``'s outbound requests through this partition (before it starts)."""
        real, part, me = node._peer, self, node.id

        class CutClient:
            def __init__(self, peer_id: int, inner):
                self.peer_id, self.inner = peer_id, inner

            async def request(self, api_key: int, body: dict) -> dict:
                if frozenset((me, self.peer_id)) in part.cut:
                    return await part._on_cut(self.inner, me, self.peer_id, api_key, body)
                return await self.inner.request(api_key, body)

            async def close(self) -> None:
                await part._close(self.inner)

        node._peer = lambda node_id, timeout_ms: CutClient(node_id, real(node_id, timeout_ms))

    async def _on_cut(self, inner, me: int, peer: int, api_key: int, body: dict) -> dict:
        """A request on a cut link: it fails like a dropped connection."""
        await inner.close()
        await asyncio.sleep(0.01)
        raise IndefiniteError("connection", f"link {me}-{peer} is cut")

    async def _close(self, inner) -> None:
        await inner.close()

    def isolate(self, node_id: int, others: list[int]) -> None:
        """Cut ``node_id`` off from every id in ``others``."""
        self.cut |= {frozenset((node_id, o)) for o in others}

    def heal(self) -> None:
        """Restore every link."""
        self.cut.clear()


class HeldPartition(Partition):
    """Like :class:`Partition`, but a request on a cut link is held, not failed, and
    delivered when the partition heals: as TCP retransmits a segment that an
    iptables DROP ate once the rule is gone. The sender may have given up on it
    meanwhile; the receiver still gets it, late.
    """

    def __init__(self) -> None:
        super().__init__()
        self._healed: asyncio.Event | None = None

    async def _on_cut(self, inner, me: int, peer: int, api_key: int, body: dict) -> dict:
        """Held until the heal, then sent; shielded, so a sender that times out does not
        take the held request back."""
        healed = self._event()

        async def deliver_late():
            await healed.wait()
            return await inner.request(api_key, body)
        return await asyncio.shield(asyncio.get_running_loop().create_task(deliver_late()))

    async def _close(self, inner) -> None:
        """Kept open: a held request still goes out on it after the heal."""

    def _event(self) -> asyncio.Event:
        if self._healed is None:
            self._healed = asyncio.Event()
        return self._healed

    def heal(self) -> None:
        """Restore every link and deliver every held request."""
        super().heal()
        if self._healed is not None:
            self._healed.set()
            self._healed = None
