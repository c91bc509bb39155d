"""The ``wipe`` family's injector: a disk failure (``targets.base.DB.wipe``: SIGKILL, the data
deleted, formatted again with a fresh directory id); the nodes stay down until the fault
stops. At kraft.version 1 random wipes keep a majority of the voter keys alive
(:func:`guard_wipes`). The start's value has ``wiped``: ``{node: {"down",
"old_directory_id", "new_directory_id", "last_offset", "quorum_node"}}``."""
from __future__ import annotations

import time

from clusters.parallel import on_nodes
from faults.registry import fault_spec
from faults.wipe import SPEC
from nemesis.injector import Injector
from nemesis.kill import restart_stop
from nemesis.leader_wait import CONTROLLER_WAIT_S, leader_voter_state
from nemesis.membership import POLL_S, wiped_voters


def guard_wipes(controller, fault, targets: list[str], value: dict) -> list[str]:
    """The wipe targets that keep a majority of the voter set's keys alive, at kraft.version 1
    (a wiped voter's key is gone for good until ``replace``: wiping a majority of keys would
    leave the quorum without a leader forever, a certainty rather than a finding). Counts as
    lost the voters that fetch under a new directory id and the nodes an active wipe holds.
    Explicit targets (kind ``nodes``) and kraft.version 0 are left alone. The leader's voter
    state is waited for up to the controller's ``leader_wait_s`` (``value["leader_wait"]``:
    ``{"waited_s", "leader"}``, added to a wait for the leader a ``leader`` kind made). What
    is skipped is recorded in ``value["wipe_skipped"]``: ``{node: reason}``."""
    db = controller.db
    if fault.kind == "nodes" or getattr(db, "kraft_version", 0) != 1 or not targets:
        return targets
    state, waited, why = leader_voter_state(
        db, getattr(controller, "_leader", None), getattr(controller, "leader_wait_s", CONTROLLER_WAIT_S),
        getattr(controller, "poll_s", POLL_S), getattr(controller, "clock", time.monotonic),
        getattr(controller, "sleep", time.sleep))
    if waited.waited:
        before = value.get("leader_wait", {}).get("waited_s", 0.0)
        value["leader_wait"] = {**waited.value(), "waited_s": round(before + waited.waited_s, 3)}
    if state is None:       # no leader in time: nothing safe to count on
        value["wipe_skipped"] = {n: f"no leader to count live voter keys: {why}" for n in targets}
        return []
    ids = {db.node_id(n): n for n in controller.nodes}
    voters = {ids[v["id"]] for v in state["voters"] if v["id"] in ids}
    held = {n for f in controller.active_faults() if fault_spec(f.name).wipes_disks and f.key != fault.key
            for n in controller.active.get(f.key, [])}
    lost = set(wiped_voters(state, controller.nodes, db.node_id)) | (held & voters)
    live, majority = len(state["voters"]) - len(lost), len(state["voters"]) // 2 + 1
    allowed, skipped = [], {}
    for n in targets:
        if n in voters and n not in lost:
            if live - 1 < majority:
                skipped[n] = (f"would leave {live - 1} of {len(state['voters'])} voter keys alive, fewer "
                              f"than a majority ({majority}): replace a wiped voter first")
                continue
            live -= 1
        allowed.append(n)
    if skipped:
        value["wipe_skipped"] = skipped
    return allowed


def _start(ctl, fault, value: dict, waited) -> bool:
    targets, leader_unknown = ctl.process_targets(fault, waited)
    targets = guard_wipes(ctl, fault, targets, value)     # kraft.version 1: keep a majority of keys
    value["targets"] = targets
    ctl.hold(fault, targets)
    value["wiped"] = on_nodes(targets, ctl.db.wipe, what="wipe")
    quorum = set(ctl.db.quorum_nodes())   # a wiped broker is no voter to replace later
    for node, w in value["wiped"].items():
        if isinstance(w, dict):
            w["quorum_node"] = node in quorum
    if ctl.disks is not None and targets:
        # a replaced disk is new hardware: a later power loss must not bring the old
        # one back (the wipe's rm and mkdir were never fsynced into its parent)
        on_nodes(targets, ctl.disks.sync, what="wipe sync")
    return leader_unknown


INJECTOR = Injector(SPEC, _start, restart_stop)
