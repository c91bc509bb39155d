"""What the workload unit tests share: a fake 3-node topology and a driver for a workload run."""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from kraft.wire import client as kclient
from targets.kraft_client import kraft_client
from workloads.topology import Topology

NODES = ("n1", "n2", "n3")


def topology() -> Topology:
    """n1..n3 at made-up addresses (the fake clients never connect)."""
    return Topology(NODES, {n: (f"10.0.0.{n}", 9093) for n in NODES}, {n: int(n[1:]) for n in NODES}, kraft_client)


def install_fake_client(monkeypatch, client_cls: type, cluster: Any) -> Any:
    """Make ``kraft.wire.client.KraftClient`` build ``client_cls`` (sharing ``cluster``); returns it."""
    client_cls.cluster = cluster
    monkeypatch.setattr(kclient, "KraftClient", client_cls)
    return cluster


def drive(wl, duration_s: float, during: Callable[[], None] | None = None,
          after: Callable[[], Awaitable[Any]] | None = None) -> Any:
    """Run ``wl`` for ``duration_s`` s, calling ``during()`` halfway; returns ``await after()``."""
    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(wl.run(stop))
        await asyncio.sleep(duration_s / 2)
        if during:
            during()
        await asyncio.sleep(duration_s / 2)
        stop.set()
        await task
        return await after() if after else None

    return asyncio.run(main())
