"""The ``wipe`` family's injector: a disk failure (``targets.base.DB.wipe``: SIGKILL, the data
deleted, formatted again with a fresh directory id); the nodes stay down until the fault
stops. At kraft.version 1 random wipes keep a majority of the voter keys alive
(:func:`nemesis.membership.guard_wipes`). The start's value has ``wiped``: ``{node: {"down",
"old_directory_id", "new_directory_id", "last_offset", "quorum_node"}}``."""
from __future__ import annotations

from clusters.parallel import on_nodes
from faults.wipe import SPEC
from nemesis.injector import Injector
from nemesis.kill import restart_stop
from nemesis.membership import guard_wipes


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
