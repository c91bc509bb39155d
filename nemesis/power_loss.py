"""Power loss (what Jepsen's lazyfs does): SIGKILL nodes, then drop what their disks had not
synced.

Each node's durable state sits on a lazyfs mount (``clusters.lazyfs``) that keeps writes in
memory until ``fsync``/``fdatasync`` of the file, and creates and renames until ``fsync`` of
their directory. A power loss kills the node's process first, then asks its lazyfs to crash:
everything unsynced is dropped, optionally with a torn last write (a prefix of it kept) and
optionally with the unsynced creates and renames undone (``lost_renames``). The node restarts
when the fault stops, on the disk as it would be found after the power came back. The
family's kinds and facts are faults/power_loss.py's.
"""
from __future__ import annotations

import random
from typing import Any, Protocol, Sequence

from clusters.parallel import on_nodes
from faults.power_loss import SPEC
from nemesis.injector import Injector
from nemesis.kill import restart_stop
from nemesis.leader_wait import Waited
from nemesis.process_db import ProcessDB


#: the namespace ops undone a power loss's history line keeps (the rest are counted)
NAMESPACE_KEPT = 20


class Disks(Protocol):
    """The nodes' lazyfs mounts (``clusters.lazyfs.mounts.LazyMounts``)."""

    def crash(self, node: str, torn: bool = False, lost_renames: bool = False,
              seed: int | None = None) -> dict: ...

    def sync(self, node: str) -> dict: ...


def crash_settings(params: dict, rng: random.Random) -> dict[str, bool]:
    """``{"torn", "lost_renames"}``: the fault's params where given (bools), else a fair coin
    each from ``rng``. Raises ``ValueError`` for a param that is not a bool."""
    out = {}
    for key in ("torn", "lost_renames"):
        v = params.get(key)
        if v is not None and not isinstance(v, bool):
            raise ValueError(f"nemesis power-loss: {key} must be true or false, got {v!r}")
        out[key] = v if v is not None else rng.random() < 0.5
    return out


def power_loss(db: ProcessDB, disks: Disks | None, targets: Sequence[str], rng: random.Random,
               params: dict[str, Any]) -> dict:
    """Kill every target, then crash its disk; returns the op value's additions:
    ``{"torn", "lost_renames", "no_process": [nodes with no process]?, "lost": {node: what
    its lazyfs dropped: dropped_bytes, reverted_files (every one), torn, namespace_undone,
    ...}}`` (:func:`crash_summary`).

    Raises ``ValueError`` when the run has no lazyfs disks (``disks`` None), and
    ``clusters.parallel.NodeErrors`` when a node could not be killed or its disk crashed.
    """
    if disks is None:
        raise ValueError("nemesis power-loss needs the nodes' data dirs on lazyfs: the run mounts "
                         "them when --nemesis (or a scenario) names power-loss")
    settings = crash_settings(params, rng)
    seeds = {n: rng.getrandbits(32) for n in targets}
    killed = on_nodes(targets, db.kill, what="power-loss kill")
    lost = on_nodes(targets, lambda n: disks.crash(n, seed=seeds[n], **settings), what="power-loss crash")
    out: dict[str, Any] = {**settings, "lost": {n: crash_summary(lost[n]) for n in targets}}
    missing = [n for n in targets if not killed[n]]
    if missing:
        out["no_process"] = missing
    return out


def crash_summary(info: dict) -> dict:
    """What a lazyfs crash reported, for the history line: ``dropped_bytes``, ``torn``,
    ``namespace_kept``, ``undo_errors``, every path in ``reverted_files`` (relative to the
    disk's root, sorted: the files that lost bytes, which the checkers read, e.g.
    checkers/unsynced_checkpoint.py) and the first :data:`NAMESPACE_KEPT` of
    ``namespace_undone`` (with ``namespace_undone_count`` when there were more)."""
    keep = ("dropped_bytes", "torn", "namespace_kept", "undo_errors", "reverted_files")
    out = {k: info[k] for k in keep if k in info}
    undone = info.get("namespace_undone")
    if isinstance(undone, list):
        out["namespace_undone"] = undone[:NAMESPACE_KEPT]
        if len(undone) > NAMESPACE_KEPT:
            out["namespace_undone_count"] = len(undone)
    elif undone is not None:
        out["namespace_undone"] = undone
    return out


def _start(ctl, fault, value: dict, waited: Waited | None) -> bool:
    targets, leader_unknown = ctl.process_targets(fault, waited)
    value["targets"] = targets
    ctl.hold(fault, targets)
    value.update(power_loss(ctl.db, ctl.disks, targets, ctl.rng, dict(fault.params)))
    return leader_unknown


INJECTOR = Injector(SPEC, _start, restart_stop)
