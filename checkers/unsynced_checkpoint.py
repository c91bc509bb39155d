"""Files renamed into place before their bytes were durable, as a power loss shows them.

A target writes some small files by atomic replace: the new content into ``<name>.tmp``, an
fsync of it, a rename over ``<name>`` (Kafka's checkpoints: ``CheckpointFile.write``). Done so,
the file is never among those a power loss reverts: its bytes were on the disk before its name
pointed at them. A power loss's history line (nemesis/power_loss.py) lists every file of each
target's lazyfs disk that lost bytes (``lost: {node: {"reverted_files": [paths]}}``); a path
whose last component is one of the target's such names (``RunTarget.synced_files``, from its
``TargetSpec``) means the discipline was broken: on a filesystem that orders metadata before
data the file comes back empty or torn (KAFKA-16541: 3.7.x rewrote ``leader-epoch-checkpoint``
without the fsync at every broker start). White-box, from the history alone; a client need
not see anything. The ``.tmp`` file itself may be torn at any time and is never counted.
"""
from __future__ import annotations

import posixpath

from history import NEMESIS

from .fold import CheckContext, Checker


class UnsyncedCheckpoint(Checker):
    """``unsynced-checkpoint``: one anomaly per (power loss, node, path):
    ``{"op": the start op's index, "node", "path": relative to the node's disk, "explanation"}``.
    ``names``: the file names that must never be reverted (empty: the checker reads the power
    losses and finds nothing, as for a target that declares none)."""

    def __init__(self, names: tuple[str, ...] | frozenset[str] = ()) -> None:
        self.names = frozenset(names)
        self.anomalies: list[dict] = []
        self.power_losses = 0
        self.reverted = 0

    def feed(self, op: dict) -> None:
        if op["process"] != NEMESIS or op["f"] != "start-power-loss" or op["type"] != "info":
            return
        lost = op.get("value", {}).get("lost") if isinstance(op.get("value"), dict) else None
        if not isinstance(lost, dict):
            return
        self.power_losses += 1
        for node, info in sorted(lost.items()):
            paths = info.get("reverted_files") if isinstance(info, dict) else None
            for path in paths if isinstance(paths, list) else ():
                self.reverted += 1
                if isinstance(path, str) and posixpath.basename(path) in self.names:
                    self.anomalies.append({
                        "op": op["index"], "node": node, "path": path,
                        "explanation": f"op {op['index']}: {node} lost power and {path} lost bytes: it "
                                       f"had been renamed into place before its data was fsynced"})

    def result(self, nodes) -> dict:
        return {"valid": not self.anomalies, "anomalies": self.anomalies,
                "power_losses": self.power_losses, "reverted_files": self.reverted,
                "names": sorted(self.names)}


def make(ctx: CheckContext) -> UnsyncedCheckpoint:
    """The checker for one run: the names its target declares (``ctx.target.synced_files``)."""
    return UnsyncedCheckpoint(ctx.target.synced_files)
