"""What the plots and the timeline read from a history (:class:`PlotData`), gathered one op at a
time so a history of any length is read once, and the colours both draw with. No drawing here
(harness/reports/plots.py draws with matplotlib; harness/reports/timeline.py writes HTML)."""
from __future__ import annotations

from array import array
from typing import Iterable

from checkers.inflight import InFlight
from faults.registry import FAULTS, spec_of
from history import NEMESIS

#: Marker colour per completion type (Jepsen's palette: ok blue, info orange, fail pink).
TYPE_COLOURS = {"ok": "#81BFFC", "info": "#FFA400", "fail": "#FF1E90"}
#: The shade of a fault with no colour of its own.
FAULT_GREY = "#DDDDDD"
#: Width of a throughput bucket (s).
RATE_BUCKET_S = 1.0


def fault_colours() -> dict[str, str]:
    """``{family: "#RRGGBB"}`` of the families with a colour of their own (their specs'
    ``colour``), in the registry's order; the others are drawn :data:`FAULT_GREY`."""
    return {name: spec.colour for name, spec in FAULTS.items() if spec.colour}


def fault_colour(name: str) -> str:
    """The shade of fault family ``name``: its spec's colour, else :data:`FAULT_GREY`."""
    spec = spec_of(name)
    return spec.colour if spec is not None and spec.colour else FAULT_GREY


def fault_label(name: str) -> str:
    """The legend's name of fault family ``name`` (its spec's label; the name itself for a
    name that is no family)."""
    spec = spec_of(name)
    return spec.plot_label if spec is not None else name


class PlotData:
    """What the plots need from a history, gathered one op at a time (:meth:`feed`), so a
    history of any length is drawn without holding it: per (f, completion type) the
    points of the latency plot as arrays of doubles (x, y and the invoke index, 24
    bytes an op), per-second completion counts, and the faults.

    Pairing follows ``history.pair_ops`` (and raises its ``HistoryError`` s).
    """

    def __init__(self) -> None:
        self.inflight = InFlight()
        self.first_invoke: dict[str, int] = {}      # f -> first invoke index of a completed client op
        self.points: dict[tuple[str, str], tuple[array, array, array]] = {}
        self.buckets: dict[tuple[str, str], dict[int, int]] = {}
        self.active: dict[tuple[str, str | None], float] = {}   # (family, slot) -> start s
        self.faults: list[tuple[str, float, float]] = []
        self.end: float | None = None               # time of the last op (s)

    @classmethod
    def of(cls, ops: Iterable[dict]) -> "PlotData":
        data = cls()
        for op in ops:
            data.feed(op)
        return data

    def feed(self, op: dict) -> None:
        t = op["time"]
        self.end = t / 1e9
        if op["process"] == NEMESIS:
            if op["type"] == "invoke":
                self.inflight.invoke(op)
                return
            self.inflight.complete(op)
            if op["type"] != "info":
                return
            self._fault(op)
            return
        if op["type"] == "invoke":
            self.inflight.invoke(op, (op["index"], t))
            return
        inv_index, inv_time = self.inflight.complete(op)
        f, typ = op["f"], op["type"]
        if inv_index < self.first_invoke.get(f, inv_index + 1):
            self.first_invoke[f] = inv_index
        pts = self.points.get((f, typ))
        if pts is None:
            pts = self.points[(f, typ)] = (array("d"), array("d"), array("q"))
        pts[0].append(inv_time / 1e9)
        pts[1].append(max((t - inv_time) / 1e6, 1e-3))
        pts[2].append(inv_index)
        b = self.buckets.setdefault((f, typ), {})
        k = int(t / 1e9 // RATE_BUCKET_S)
        b[k] = b.get(k, 0) + 1

    def _fault(self, op: dict) -> None:
        """A nemesis completion: a fault of its family starts or stops, per slot (faults of
        one family in different slots overlap)."""
        phase, _, name = op["f"].partition("-")
        value = op.get("value") if isinstance(op.get("value"), dict) else {}
        key = (name, value.get("slot"))
        if phase == "start":
            self.active[key] = op["time"] / 1e9
        elif phase == "stop" and key in self.active:
            self.faults.append((name, self.active.pop(key), op["time"] / 1e9))

    def fault_intervals(self) -> list[tuple[str, float, float]]:
        """(fault name, start s, stop s) of each fault; one still active runs to the last op."""
        end = self.end if self.end is not None else 0.0
        out = self.faults + [(name, t, end) for (name, _slot), t in self.active.items()]
        return sorted(out, key=lambda x: x[1])


class PlotFold:
    """:class:`PlotData` as a fold (checkers/fold.py's ``Checker`` protocol), so the plots'
    data is gathered in the checkers' first pass instead of a read of its own; its
    result is the :class:`PlotData`."""

    passes = 1

    def __init__(self) -> None:
        self.data = PlotData()

    def begin(self, pass_no: int) -> None:
        pass

    def feed(self, op: dict) -> None:
        self.data.feed(op)

    def result(self, nodes) -> "PlotData":
        return self.data


def fault_intervals(history: list[dict]) -> list[tuple[str, float, float]]:
    """(fault name, start s, stop s) for each fault, from the nemesis's start and stop ops.

    A fault still active at the end of the history runs to its last op.
    """
    data = PlotData()
    for op in history:
        data.end = op["time"] / 1e9
        if op["process"] == NEMESIS and op["type"] == "info":
            data._fault(op)
    return data.fault_intervals()
