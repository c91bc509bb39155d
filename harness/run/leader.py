"""Finding the quorum's leader, and waiting for a leader or for followers to catch up.

Uses DescribeQuorum (KIP-595), which only a node that believes it leads
answers without error. These probes are not recorded in the history.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Callable

from history import outcomes

log = logging.getLogger(__name__)

#: DescribeQuorum probe timeout (ms)
PROBE_TIMEOUT_MS = 1000


async def describe_all(db, nodes, cluster_id: str,
                       timeout_ms: int = PROBE_TIMEOUT_MS) -> dict[str, dict | None]:
    """DescribeQuorum on every node at once: ``{node: response body, or None on any error}``.

    ``db.address(node)`` gives ``(host, port)``, ``db.quorum_client_factory()`` the client
    (``targets.base.DB``).
    """
    factory = db.quorum_client_factory()

    async def one(node: str) -> dict | None:
        host, port = db.address(node)
        c = factory(host, port, cluster_id, timeout_ms)
        try:
            return await c.describe_quorum()
        except outcomes.ClientError:
            return None
        except Exception as e:  # a probe must never break the caller
            log.debug("describe-quorum probe of %s failed: %r", node, e)
            return None
        finally:
            await c.close()

    nodes = list(nodes)
    bodies = await asyncio.gather(*(one(n) for n in nodes))
    return dict(zip(nodes, bodies))


def pick_leader(bodies: dict[str, dict | None]) -> str | None:
    """The node that answered DescribeQuorum ok with the highest ``LeaderEpoch``.

    During a partition a deposed leader may still answer; the highest epoch
    wins. Ties go to the first node in order. None when nobody answered.
    """
    best, best_epoch = None, -1
    for node, body in bodies.items():
        if body is None:
            continue
        epoch = body.get("LeaderEpoch", -1)
        if isinstance(epoch, int) and epoch > best_epoch:
            best, best_epoch = node, epoch
    return best


async def find_leader_async(db, nodes, cluster_id: str,
                            timeout_ms: int = PROBE_TIMEOUT_MS) -> str | None:
    """Async :func:`find_leader`."""
    return pick_leader(await describe_all(db, nodes, cluster_id, timeout_ms))


def find_leader(db, nodes, cluster_id: str, timeout_ms: int = PROBE_TIMEOUT_MS) -> str | None:
    """The current leader's node name, or None (synchronous; for the nemesis thread).

    Probes every node concurrently with a ``timeout_ms`` (ms) DescribeQuorum
    and returns the one answering ok with the highest LeaderEpoch. Safe to
    call from a thread with or without a running event loop (it then runs
    its own loop in a helper thread). Takes at most about ``timeout_ms``.
    """
    coro_fn: Callable = lambda: find_leader_async(db, nodes, cluster_id, timeout_ms)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(lambda: asyncio.run(coro_fn())).result()


async def wait_for_leader(db, nodes, cluster_id: str, timeout_s: float,
                          poll_s: float = 0.5) -> str | None:
    """Poll until some node leads; returns its name, or None after ``timeout_s`` (s)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        leader = await find_leader_async(db, nodes, cluster_id)
        if leader is not None:
            return leader
        if loop.time() + poll_s >= deadline:
            return None
        await asyncio.sleep(poll_s)


def caught_up(body: dict) -> bool:
    """True when every voter's ``LogEndOffset`` equals the leader's, in a DescribeQuorum body.

    The leader's own entry is the voter whose ``ReplicaId`` is ``LeaderId``;
    with no such entry the largest LogEndOffset stands in. False when there
    are no voters or any voter lacks a LogEndOffset.
    """
    voters = body.get("CurrentVoters") or []
    ends = {v.get("ReplicaId"): v.get("LogEndOffset") for v in voters if isinstance(v, dict)}
    if not ends or any(not isinstance(e, int) for e in ends.values()):
        return False
    target = ends.get(body.get("LeaderId"), max(ends.values()))
    return all(e == target for e in ends.values())


async def wait_for_catch_up(db, nodes, cluster_id: str, timeout_s: float,
                            poll_s: float = 0.5) -> bool:
    """Poll the leader's DescribeQuorum until all voters reach its log end offset.

    Returns True once :func:`caught_up` holds, False after ``timeout_s`` (s).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        bodies = await describe_all(db, nodes, cluster_id)
        leader = pick_leader(bodies)
        if leader is not None and caught_up(bodies[leader]):
            return True
        if loop.time() + poll_s >= deadline:
            return False
        await asyncio.sleep(poll_s)
