"""``timeline.html``: Jepsen's timeline of a history, drawn on a canvas so 100k+ ops stay usable.

One lane per process (the nemesis first, then client processes in order), each op a bar from
its invoke to its completion coloured by the completion's type (ok, fail, info; an op never
completed runs to the end of the history as "open"), the nemesis's faults as shaded bands
(the same start/stop pairing as harness/reports/plots.py), and hovering an op shows it. Jepsen's
timeline is one DOM node per op and stops at 10k ops; here the ops are compact columnar
JSON in a ``<script type="application/json">`` tag and the page draws only what is in view
(``harness/reports/timeline_assets/timeline.js``; the JS and CSS are inlined, so the file is
standalone, with no network).

Data shape (:meth:`TimelineData.doc`), times in µs since the test started, ops sorted by
invoke time::

    {"v": 1, "unit": "us", "end": int, "n": int, "dropped": int, "unpaired": int,
     "lanes": ["nemesis", "0", ...], "fs": [str], "nodes": [str],
     "types": ["ok", "fail", "info", "open"],
     "faults": [[name, start, stop], ...], "fault_colours": {name: "#RRGGBB"},
     "lane": [lane no], "ds": [invoke time minus the previous op's], "dur": [completion - invoke],
     "type": [type no], "f": [f no], "node": [node no or -1],
     "di": [invoke index minus the previous op's], "dc": [completion index - invoke index, -1 open],
     "desc": [the value (the completion's, else the invoke's) and error, <= DESC_CHARS chars]}

Pairing is lenient, since this is a viewer: a completion with no invoke in flight is counted
in ``unpaired`` and skipped, and an invoke while its process has one in flight closes that one
as open at the new invoke's time. Ops past ``max_ops`` are counted in ``dropped``.
"""
from __future__ import annotations

import html
import json
import os
from array import array
from pathlib import Path
from typing import Iterable

import numpy as np

from harness.reports.plot_data import PlotData, fault_colours
from history import NEMESIS

#: File name the report step writes next to ``results.json``.
TIMELINE_NAME = "timeline.html"
#: Ops kept per timeline (by completion order); more are counted in ``dropped``. About 60
#: bytes of HTML per op, so this bounds a page near 20 MB.
MAX_OPS = 300_000
#: The report step (harness/run/check.py) writes ``timeline.html`` only for histories up to
#: this size (bytes); ``kraft-chaos serve`` draws larger ones on demand.
REPORT_MAX_BYTES = 64 << 20
#: Longest op description (value and error) kept for the hover.
DESC_CHARS = 80
TYPES = ("ok", "fail", "info", "open")
_TYPE_NO = {t: i for i, t in enumerate(TYPES)}
OPEN = _TYPE_NO["open"]
_ASSETS = Path(__file__).with_name("timeline_assets")
#: Characters that must not appear raw inside an inline <script> (JSON escapes keep the value).
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                   "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _describe(value, error) -> str:
    """The hover text of an op: its value as compact JSON, then its error, cut to DESC_CHARS."""
    text = "" if value is None else json.dumps(value, separators=(",", ":"), default=str)
    if error is not None:
        text = f"{text} error={error}" if text else f"error={error}"
    return text if len(text) <= DESC_CHARS else text[:DESC_CHARS - 1] + "…"


class TimelineData:
    """The timeline's ops, gathered one history op at a time (:meth:`feed`), in compact arrays
    (about 40 bytes an op plus its description); :meth:`doc` gives the page's JSON."""

    def __init__(self, max_ops: int = MAX_OPS) -> None:
        self.max_ops = max_ops
        self._faults = PlotData()             # only its fault bookkeeping is used
        self._open: dict = {}                 # process -> (invoke index, time ns, f, value, node)
        self._lanes: dict = {}
        self._fs: dict[str, int] = {}
        self._nodes: dict[str, int] = {}
        self.start, self.stop = array("q"), array("q")          # ns
        self.lane, self.f, self.node = array("l"), array("l"), array("l")
        self.type = array("b")
        self.inv, self.comp = array("q"), array("q")            # indices
        self.desc: list[str] = []
        self.dropped = self.unpaired = 0
        self.end_ns = 0

    @classmethod
    def of(cls, ops: Iterable[dict], max_ops: int = MAX_OPS) -> "TimelineData":
        """The timeline of ``ops`` (a list or a stream, read once)."""
        data = cls(max_ops)
        for op in ops:
            data.feed(op)
        return data

    @staticmethod
    def _no(table: dict, key) -> int:
        n = table.get(key)
        if n is None:
            n = table[key] = len(table)
        return n

    def feed(self, op: dict) -> None:
        """One history op (validated as ``history.iter_history`` does)."""
        t, proc = op["time"], op["process"]
        self.end_ns = max(self.end_ns, t)
        if op["type"] == "invoke":
            prev = self._open.pop(proc, None)
            if prev is not None:                 # a process invoking twice: close the first
                self._add(proc, prev, t, OPEN, prev[3], None, -1)
            self._open[proc] = (op["index"], t, op["f"], op.get("value"), op.get("node"))
            return
        if proc == NEMESIS and op["type"] == "info":
            self._faults.end = t / 1e9
            self._faults._fault(op)
        inv = self._open.pop(proc, None)
        if inv is None:
            self.unpaired += 1
            return
        value = op.get("value") if op.get("value") is not None else inv[3]
        self._add(proc, inv, t, _TYPE_NO.get(op["type"], OPEN), value, op.get("error"), op["index"])

    def _add(self, proc, inv: tuple, t: int, typ: int, value, error, comp_index: int) -> None:
        if len(self.desc) >= self.max_ops:
            self.dropped += 1
            return
        self.start.append(inv[1])
        self.stop.append(t)
        self.lane.append(self._no(self._lanes, proc))
        self.f.append(self._no(self._fs, inv[2]))
        self.node.append(self._no(self._nodes, inv[4]) if isinstance(inv[4], str) else -1)
        self.type.append(typ)
        self.inv.append(inv[0])
        self.comp.append(comp_index)
        self.desc.append(_describe(value, error))

    def __len__(self) -> int:
        return len(self.desc)

    def doc(self) -> dict:
        """The page's data (shape in the module docstring). Ops still in flight are added as
        open, running to the history's last op."""

        for proc, inv in list(self._open.items()):
            self._add(proc, inv, self.end_ns, OPEN, inv[3], None, -1)
        self._open.clear()
        # lanes: the nemesis first, then processes in order (ints before anything else)
        procs = sorted(self._lanes, key=lambda p: (p != NEMESIS, not isinstance(p, int), str(p)
                                                   if not isinstance(p, int) else p))
        remap = np.zeros(max(len(procs), 1), dtype=np.int64)
        for new, p in enumerate(procs):
            remap[self._lanes[p]] = new
        start = np.frombuffer(self.start, dtype=np.int64) // 1000 if len(self) else np.zeros(0, np.int64)
        stop = np.frombuffer(self.stop, dtype=np.int64) // 1000 if len(self) else np.zeros(0, np.int64)
        inv = np.frombuffer(self.inv, dtype=np.int64) if len(self) else np.zeros(0, np.int64)
        comp = np.frombuffer(self.comp, dtype=np.int64) if len(self) else np.zeros(0, np.int64)
        order = np.lexsort((inv, start))
        start, stop, inv, comp = start[order], stop[order], inv[order], comp[order]
        lanes = np.array(self.lane, dtype=np.int64)[order] if len(self) else np.zeros(0, np.int64)

        def col(a) -> list:
            return np.asarray(a).tolist()
        return {
            "v": 1, "unit": "us", "end": self.end_ns // 1000, "n": len(self),
            "dropped": self.dropped, "unpaired": self.unpaired,
            "lanes": [str(p) for p in procs], "fs": list(self._fs), "nodes": list(self._nodes),
            "types": list(TYPES),
            "faults": [[name, int(a * 1e6), int(b * 1e6)] for name, a, b in self._faults.fault_intervals()],
            "fault_colours": fault_colours(),
            "lane": col(remap[lanes]) if len(self) else [],
            "ds": col(np.diff(start, prepend=0)), "dur": col(stop - start),
            "type": col(np.array(self.type, dtype=np.int64)[order]) if len(self) else [],
            "f": col(np.array(self.f, dtype=np.int64)[order]) if len(self) else [],
            "node": col(np.array(self.node, dtype=np.int64)[order]) if len(self) else [],
            "di": col(np.diff(inv, prepend=0)),
            "dc": col(np.where(comp < 0, -1, comp - inv)),
            "desc": [self.desc[i] for i in order.tolist()],
        }


class TimelineFold:
    """:class:`TimelineData` as a fold (checkers/fold.py's ``Checker`` protocol), so the
    report step gathers the timeline in the checkers' first pass; its result is the data."""

    passes = 1

    def __init__(self, max_ops: int = MAX_OPS) -> None:
        self.data = TimelineData(max_ops)

    def begin(self, pass_no: int) -> None:
        pass

    def feed(self, op: dict) -> None:
        self.data.feed(op)

    def result(self, nodes) -> TimelineData:
        return self.data


def render_timeline(data: "TimelineData | dict", title: str = "timeline") -> str:
    """The standalone page of ``data`` (a :class:`TimelineData`, or its :meth:`~TimelineData.doc`),
    as one HTML string. ``title`` is shown escaped."""
    doc = data.doc() if isinstance(data, TimelineData) else data
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in _SCRIPT_ESCAPES.items():
        text = text.replace(ch, esc)
    css = (_ASSETS / "timeline.css").read_text(encoding="utf-8")
    js = (_ASSETS / "timeline.js").read_text(encoding="utf-8")
    note = ""
    if doc["dropped"]:
        note = f" The first {doc['n']:,} ops are shown; {doc['dropped']:,} more were left out."
    return _PAGE.format(title=html.escape(title), css=css, js=js, data=text, note=note,
                        n=f"{doc['n']:,}", lanes=len(doc["lanes"]))


def write_timeline(history: "Iterable[dict] | TimelineData", path: Path, title: str = "timeline") -> Path:
    """Write ``timeline.html`` of ``history`` (ops, read once, or a fed :class:`TimelineData`)
    to ``path`` (a directory means ``path/timeline.html``), atomically. Returns the file.
    Raises OSError when it cannot be written."""
    path = Path(path)
    if path.is_dir():
        path = path / TIMELINE_NAME
    data = history if isinstance(history, TimelineData) else TimelineData.of(history)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(render_timeline(data, title), encoding="utf-8")
    os.replace(tmp, path)
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head><body>
<header id="tl-header">
  <strong>{title}</strong> <span id="tl-count">{n} ops in {lanes} lanes.{note}</span>
  <span id="tl-legend"></span>
  <span class="tl-help">wheel: scroll lanes, pan time (shift) · ctrl+wheel or +/−: zoom ·
    drag: pan · double-click: zoom in · <button id="tl-fit" type="button">fit</button></span>
</header>
<div id="tl-wrap"><canvas id="tl-canvas"></canvas><canvas id="tl-overlay"></canvas>
<div id="tl-tip" hidden></div></div>
<noscript>The timeline is drawn by JavaScript.</noscript>
<script type="application/json" id="tl-data">{data}</script>
<script>{js}</script>
</body></html>
"""
