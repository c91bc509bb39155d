"""What ``kraft-chaos serve`` reads from a store: its runs, safe paths under it, history pages.

Nothing here writes: summaries, line offsets and generated pages are cached in memory,
keyed by the source file's size and mtime, so a run still being written is re-read as it
grows. Every path from a URL goes through :func:`resolve_under`, which refuses anything
that is not under the store once symlinks are resolved.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import re
import threading
from array import array
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

from checkers.kind_names import current_counts
from history import store

#: How deep under the store root runs are looked for (``<test>/<ts>`` is 2; synthetic runs
#: such as ``bench-check/synth-append/<ts>`` are 3).
MAX_DEPTH = 4
#: Files that make a directory a run.
RUN_MARKERS = (store.HISTORY, store.TEST_JSON, store.RESULTS)
VERDICTS = ("valid", "invalid", "unknown", "incomplete")
_STAMP = re.compile(r"^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)(?:\.(\d{3}))?Z")


def resolve_under(root: Path, rel: str) -> Path | None:
    """The path ``rel`` (already percent-decoded, ``/``-separated) names under ``root``, or None
    when it would leave the store: an absolute path, a ``..`` or ``.`` segment, a backslash or
    NUL, or a symlink (anywhere on the way) resolving outside ``root``. The path need not exist.
    """
    if "\x00" in rel or "\\" in rel or rel.startswith("/"):
        return None
    parts = [p for p in rel.split("/") if p]
    if any(p in (".", "..") for p in parts):
        return None
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(base.joinpath(*parts))) if parts else base
    if target != base and base not in target.parents:
        return None
    return target


def parse_stamp(name: str) -> _dt.datetime | None:
    """The UTC time of a run folder named by ``store.timestamp`` (``20250101T120000.123Z``,
    maybe with a ``-1`` suffix), or None."""
    m = _STAMP.match(name)
    if not m:
        return None
    y, mo, d, h, mi, s, ms = m.groups()
    try:
        return _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), int(ms or 0) * 1000,
                            tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One run of the index. ``rel``: its path under the store (``/``-separated); ``test``: the
    folder above it; ``verdict``: one of :data:`VERDICTS` (``incomplete``: no results.json,
    e.g. still running); ``anomalies``: the checkers with a non-zero count, by today's names
    (an older run's ``queue-*`` ones read as checkers/kind_names.py says); ``error``: why
    results.json or test.json could not be read, if so."""

    rel: str
    test: str
    when: _dt.datetime
    verdict: str
    anomalies: dict
    seed: Any
    workload: str | None
    db: str | None
    nemesis: str | None
    error: str | None = None


def _read_json(path: Path) -> tuple[Any, str | None]:
    if not path.is_file():
        return None, None
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (OSError, ValueError) as e:
        return None, f"{path.name}: {e}"


def summarize(root: Path, run_dir: Path) -> RunSummary:
    """The :class:`RunSummary` of ``run_dir`` (a run under ``root``); never raises for bad files."""
    results, err1 = _read_json(run_dir / store.RESULTS)
    test, err2 = _read_json(run_dir / store.TEST_JSON)
    results = results if isinstance(results, dict) else {}
    test = test if isinstance(test, dict) else {}
    config = test.get("config") if isinstance(test.get("config"), dict) else {}
    if not results:
        verdict = "incomplete"
    else:
        verdict = {True: "valid", False: "invalid"}.get(results.get("valid"), "unknown")
    counts = results.get("anomalies") if isinstance(results.get("anomalies"), dict) else {}
    anomalies = {k: n for k, n in current_counts(counts).items() if n}
    when = parse_stamp(run_dir.name)
    if when is None:
        when = _dt.datetime.fromtimestamp(run_dir.stat().st_mtime, _dt.timezone.utc)
    rel = run_dir.relative_to(root).as_posix()
    nemesis = config.get("nemesis")
    return RunSummary(rel=rel, test=Path(rel).parent.as_posix(), when=when, verdict=verdict,
                      anomalies=anomalies, seed=test.get("seed", config.get("seed")),
                      workload=config.get("workload"), db=config.get("db"),
                      nemesis=",".join(map(str, nemesis)) if isinstance(nemesis, list) else nemesis,
                      error=err1 or err2)


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` holds any of :data:`RUN_MARKERS`."""
    return any((path / name).is_file() for name in RUN_MARKERS)


def find_runs(root: Path, max_depth: int = MAX_DEPTH) -> list[Path]:
    """Run directories under ``root`` (real directories only: ``latest`` and other symlinks are
    not followed; dot folders are skipped; a run's own folders are not searched)."""
    out: list[Path] = []

    def walk(d: Path, depth: int) -> None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if e.name.startswith(".") or not e.is_dir(follow_symlinks=False):
                continue
            p = Path(e.path)
            if is_run_dir(p):
                out.append(p)
            elif depth < max_depth:
                walk(p, depth + 1)
    walk(root, 1)
    return out


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
        return st.st_size, st.st_mtime_ns
    except OSError:
        return None, None


class Cache:
    """A small thread-safe LRU of values computed from files, keyed by (name, key, the files'
    sizes and mtimes): a changed file means a fresh value. ``get`` computes at most one value
    at a time (so two requests for a 100k-op timeline do not both build it)."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._build = threading.Lock()

    def get(self, name: str, key: Any, files: list[Path], make: Callable[[], Any]) -> Any:
        full = (name, key, tuple(_stamp(f) for f in files))
        with self._lock:
            if full in self._items:
                self._items.move_to_end(full)
                return self._items[full]
        with self._build:
            with self._lock:
                if full in self._items:
                    return self._items[full]
            value = make()
            with self._lock:
                self._items[full] = value
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
            return value


class StoreView:
    """The store as the server sees it: runs (summaries cached per run) and history pages."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._summaries: dict[str, tuple[tuple, RunSummary]] = {}
        self._lock = threading.Lock()
        self.cache = Cache()

    def runs(self) -> list[RunSummary]:
        """Every run, newest first."""
        out = []
        for d in find_runs(self.root):
            key = tuple(_stamp(d / n) for n in (store.RESULTS, store.TEST_JSON))
            rel = d.relative_to(self.root).as_posix()
            with self._lock:
                hit = self._summaries.get(rel)
            if hit is None or hit[0] != key:
                hit = (key, summarize(self.root, d))
                with self._lock:
                    self._summaries[rel] = hit
            out.append(hit[1])
        return sorted(out, key=lambda r: (r.when, r.rel), reverse=True)

    def run_dir(self, rel: str) -> Path | None:
        """The run directory ``rel`` names, or None when it is not a run under the store."""
        p = resolve_under(self.root, rel)
        return p if p is not None and p.is_dir() and is_run_dir(p) else None

    def line_offsets(self, path: Path) -> array:
        """Byte offsets of the start of every line of ``path``, and its end (cached)."""
        def scan() -> array:
            offs, pos = array("Q", [0]), 0
            with open(path, "rb") as fh:
                for line in fh:
                    pos += len(line)
                    offs.append(pos)
            return offs
        return self.cache.get("offsets", str(path), [path], scan)

    def history_page(self, path: Path, page: int, size: int) -> tuple[list[str], int]:
        """Lines ``page*size .. page*size+size-1`` (0-based) of the history at ``path`` and the
        number of lines. Raises OSError when the file cannot be read."""
        offs = self.line_offsets(path)
        total = len(offs) - 1
        first, last = min(page * size, total), min(page * size + size, total)
        if first >= last:
            return [], total
        with open(path, "rb") as fh:
            fh.seek(offs[first])
            blob = fh.read(offs[last] - offs[first])
        return blob.decode("utf-8", errors="replace").splitlines(), total
