"""Nodes that died on their own: found not running once every fault had been stopped.

At the end of the faults the runner stops every fault (restarting what the
nemesis killed), then heals everything once more and records that as a
``heal`` op of the nemesis, whose value names the nodes it had to start
again (``restarted``) and those a fault still held (``held``, e.g. a stop
that failed). A node restarted and not held had exited by itself: a crash,
or a node stopping itself on a broken invariant (kraft exits 70 when asked
to truncate below its high watermark). Black-box: only the history is read.
"""
from __future__ import annotations

from history import NEMESIS

from .fold import Checker


class CrashedNode(Checker):
    """``crashed-node``: one anomaly per node found dead after the faults:
    ``{"node", "op": the heal op}``. A history without a heal op (runs from
    before it existed) is judged valid with a note."""

    def __init__(self, ctx=None) -> None:
        self.heals: list[tuple[int, dict]] = []

    def feed(self, op: dict) -> None:
        if op["process"] == NEMESIS and op["f"] == "heal" and op["type"] == "info" \
                and isinstance(op.get("value"), dict):
            self.heals.append((op["index"], op["value"]))

    def result(self, nodes) -> dict:
        anomalies = []
        for index, value in self.heals:
            held = set(value.get("held") or [])
            for node in value.get("restarted") or []:
                if node not in held:
                    anomalies.append({"node": node, "op": index})
        out = {"valid": not anomalies, "anomalies": anomalies, "heals": len(self.heals)}
        if not self.heals:
            out["note"] = "no heal op in the history"
        return out
