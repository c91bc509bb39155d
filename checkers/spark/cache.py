"""The per-run cache of ``kraft-chaos analyze``: each run's results, so that the analysis
after one new run reads only that run's history.

Runs do not interact in the analysis (every job groups by run), so a run's
verdict, counts, examples, stats and anomaly rows are the same whatever
other runs are analysed with it. One entry per run, in a folder named by
a hash of the run's store path (``RunInfo.name``)::

    CACHE_DIR/<sha1 of the name, 20 hex>/
        manifest.json        written last: format, name, key, the run's record, the tables
        <checker>.parquet    that run's anomaly rows (no ``run`` column); only non-empty tables

The key is the history file's size and mtime (ns), test.json's size and
mtime, the checkers the run's workload declares (they decide how it is
judged), a fingerprint of the analysis code (:data:`CODE_FILES`) and the
linearizability timeout. An entry whose
key differs is stale and the run is analysed again. An entry that cannot
be read (no or broken manifest, a missing or unreadable Parquet file, a row
count that differs from the manifest's) is corrupt: it is never trusted,
the run is analysed again and the entry rewritten. A failure to write an
entry is logged and costs only the next run's time.

Where the cache lives is the caller's choice (``kraft-chaos analyze``:
``STORE_ROOT/analysis/cache/``, its ``--cache`` default).
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .runs import RunInfo

log = logging.getLogger("kraft_chaos.analyze.cache")

#: Bumped when an entry's layout or meaning changes: older entries are then stale.
FORMAT = 2      # 2: every declared checker judged (the queue workload's, membership); Kafka node data
MANIFEST = "manifest.json"
_CHECKERS = Path(__file__).resolve().parent.parent
#: The code whose change makes every entry stale (relative to the project root): the
#: Spark jobs, every single-process checker (the driver runs those Spark lacks, e.g. the
#: queue workload's) and the history rules they call.
CODE_FILES = (*sorted(p.relative_to(_CHECKERS.parent).as_posix() for p in (_CHECKERS / "spark").glob("*.py")),
              *sorted(p.relative_to(_CHECKERS.parent).as_posix() for p in _CHECKERS.glob("*.py")),
              "history/__init__.py")


def code_fingerprint(root: Path = _CHECKERS.parent) -> str:
    """sha1 over :data:`CODE_FILES` (path and bytes; a missing file counts as empty)."""
    h = hashlib.sha1()
    for rel in CODE_FILES:
        h.update(rel.encode() + b"\0")
        try:
            h.update((root / rel).read_bytes())
        except OSError:
            pass
        h.update(b"\0")
    return h.hexdigest()


def _stat(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _workload_checkers(workload: str) -> list[str] | None:
    """The checkers the workload declares (workloads/registry.py), which decide how its
    runs are judged; None for a workload this harness does not know."""
    from workloads.registry import WORKLOAD_SPECS
    spec = WORKLOAD_SPECS.get(workload)
    return list(spec.checkers) if spec is not None else None


def run_key(run: RunInfo, code: str, lin_timeout_s: float) -> dict:
    """The key an entry of ``run`` must carry to be used: ``{"history": [size, mtime_ns],
    "test_json": [size, mtime_ns] or None, "checkers": its workload's checkers, "code",
    "lin_timeout_s"}``."""
    return {"history": _stat(run.history), "test_json": _stat(run.dir / "test.json"),
            "checkers": _workload_checkers(run.workload), "code": code, "lin_timeout_s": float(lin_timeout_s)}


@dataclasses.dataclass
class Entry:
    """A usable cache entry: ``record``, the run's dict as :func:`analyze.analyze` gives it
    (without ``run_id`` and ``info``); ``tables``: its anomaly rows by checker, Arrow
    tables without ``run``."""

    record: dict
    tables: dict[str, pa.Table]


class RunCache:
    """The cache under ``root`` (created on the first write) for analyses with
    ``lin_timeout_s``. ``stats`` counts lookups: ``hit``, ``missing``, ``stale``,
    ``corrupt``, and ``written`` / ``write_failed`` entries."""

    def __init__(self, root: Path | str, lin_timeout_s: float, code: str | None = None):
        self.root = Path(root)
        self.lin_timeout_s = lin_timeout_s
        self.code = code or code_fingerprint()
        self.stats = {"hit": 0, "missing": 0, "stale": 0, "corrupt": 0, "written": 0, "write_failed": 0}

    def entry_dir(self, run: RunInfo) -> Path:
        """The folder of ``run``'s entry (a hash of its store path)."""
        return self.root / hashlib.sha1(run.name.encode()).hexdigest()[:20]

    def load(self, run: RunInfo) -> Entry | None:
        """``run``'s entry if it is there, intact and keyed by the run as it is now; else
        None (and the reason counted in ``stats``). Never raises for a bad entry."""
        d = self.entry_dir(run)
        path = d / MANIFEST
        if not d.exists():
            self.stats["missing"] += 1
            return None
        try:
            man = json.loads(path.read_text())
            if not isinstance(man, dict) or man.get("format") != FORMAT or man.get("name") != run.name:
                raise ValueError("not an entry of this run and format")
        except (OSError, ValueError) as e:
            return self._corrupt(run, e)
        if man.get("key") != run_key(run, self.code, self.lin_timeout_s):
            self.stats["stale"] += 1
            return None
        try:
            tables = {}
            for name, t in man["tables"].items():
                if t["rows"]:
                    table = pq.read_table(d / f"{name}.parquet")
                    if table.num_rows != t["rows"]:
                        raise ValueError(f"{name}: {table.num_rows} rows, the manifest says {t['rows']}")
                else:
                    table = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(t["schema"]))).empty_table()
                tables[name] = table
            record = man["run"]
            if not isinstance(record, dict) or "verdict" not in record:
                raise ValueError("no run record")
        except Exception as e:   # pyarrow raises many kinds for a damaged file
            return self._corrupt(run, e)
        self.stats["hit"] += 1
        return Entry(record, tables)

    def _corrupt(self, run: RunInfo, e: Exception) -> None:
        log.warning("analysis cache: entry of %s unusable (%s); analysing the run again", run.name, e)
        self.stats["corrupt"] += 1
        return None

    def store(self, run: RunInfo, record: dict, tables: dict[str, pa.Table]) -> bool:
        """Write ``run``'s entry (``record``: its dict without ``run_id``/``info``;
        ``tables``: its rows by checker, without ``run``), replacing any old one.
        The entry is assembled in a temporary folder and renamed into place, the
        manifest written last. Returns False (logged) when it cannot be written."""
        d = self.entry_dir(run)
        tmp = d.with_name(f"{d.name}.tmp-{os.getpid()}")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            listed = {}
            for name, table in tables.items():
                if table.num_rows:
                    pq.write_table(table, tmp / f"{name}.parquet")
                    listed[name] = {"rows": table.num_rows}
                else:
                    listed[name] = {"rows": 0, "schema": base64.b64encode(
                        table.schema.serialize().to_pybytes()).decode()}
            man = {"format": FORMAT, "name": run.name, "key": run_key(run, self.code, self.lin_timeout_s),
                   "run": record, "tables": listed}
            (tmp / MANIFEST).write_text(json.dumps(man, default=str))
            shutil.rmtree(d, ignore_errors=True)
            os.replace(tmp, d)
        except OSError as e:
            log.warning("analysis cache: cannot write the entry of %s: %s", run.name, e)
            shutil.rmtree(tmp, ignore_errors=True)
            self.stats["write_failed"] += 1
            return False
        self.stats["written"] += 1
        return True


def run_tables(tables: dict[str, pa.Table], run_id: int) -> dict[str, pa.Table]:
    """The rows of one run (``run`` == ``run_id``) of each table, without ``run``."""
    import pyarrow.compute as pc
    return {name: t.filter(pc.equal(t["run"], run_id)).drop_columns(["run"]) for name, t in tables.items()}


def named_tables(per_run: list[tuple[str, dict[str, pa.Table]]]) -> dict[str, pa.Table]:
    """Each checker's rows over every run, ``run`` (the run's store path, a string) first:
    ``per_run`` is ``[(run name, {checker: rows without run})]`` in output order.
    A checker no run has a table for is absent."""
    names = sorted({n for _, ts in per_run for n in ts})
    out = {}
    for name in names:
        parts = []
        for run, ts in per_run:
            t = ts.get(name)
            if t is not None:
                parts.append(t.add_column(0, "run", pa.array([run] * t.num_rows, pa.string())))
        out[name] = pa.concat_tables(parts, promote_options="permissive")
    return out


def write_named_tables(tables: dict[str, pa.Table], base: Path) -> Path:
    """Write each table as a one-file Parquet dataset ``base/<checker>/part-00000.parquet``
    (replacing what was there); returns ``base``."""
    for name, t in tables.items():
        d = base / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        pq.write_table(t, d / "part-00000.parquet")
    return base
