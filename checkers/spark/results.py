"""The analysis of a store put together from the per-run cache and the runs analysed now.

:func:`assemble` takes every run found (in output order), the cache entries
that were usable, and the :class:`analyze.Analysis` of the others; it
stores the fresh runs' entries and returns one :class:`StoreResult`, from
which ``kraft-chaos analyze`` writes its tables (anomaly rows named by the
run's store path, never by a number valid only in one analysis).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa

from . import cache as C
from .runs import RunInfo


@dataclasses.dataclass
class StoreResult:
    """``runs``: one dict per run as :func:`analyze.analyze` gives them (``run_id``,
    ``name``, ``verdict``, ``checkers``, ``anomalies``, ``examples``, ``stats``,
    ``malformed``, ``error``, ``info``: the RunInfo), in the order found;
    ``tables``: every anomaly by checker, ``run`` being the run's store path;
    ``seconds``: the Spark analysis's phases (empty when every run came from the cache)."""

    runs: list[dict]
    tables: dict[str, pa.Table]
    seconds: dict[str, float]

    def summary_rows(self) -> list[dict]:
        """The per-run rows of the summary table (summary.RUN_COLUMNS)."""
        from .analyze import Analysis, summary_rows
        return summary_rows(Analysis(self.runs, {}, self.seconds))

    def analysis_json(self) -> dict:
        """``analysis.json``'s runs and timings (analyze.analysis_json)."""
        from .analyze import Analysis, analysis_json
        return analysis_json(Analysis(self.runs, {}, dict(self.seconds)))

    def write_anomalies(self, out_dir: Path) -> Path:
        """Every anomaly, one Parquet dataset per checker: ``out_dir/anomalies/<checker>/``,
        first column ``run`` (the store path)."""
        return C.write_named_tables(self.tables, Path(out_dir) / "anomalies")

    def bad_input(self) -> list[str]:
        """The runs whose history is not a well-formed history (malformed or missing
        lines, or ops that do not pair), as ``name: reason``; ``check`` exits 3 for those."""
        out = []
        for r in self.runs:
            if r["malformed"]:
                m = r["malformed"][0]
                out.append(f"{r['name']}: {m['file']}:{m['line']}: {m['reason']}")
            elif (r.get("stats") or {}).get("unpaired"):
                out.append(f"{r['name']}: {r['stats']['unpaired']} op(s) do not pair")
        return out


def _record(r: dict) -> dict:
    """A run dict as the cache keeps it: no ``run_id`` (one analysis's number), no RunInfo."""
    return {k: v for k, v in r.items() if k not in ("run_id", "info")}


def assemble(runs: list[RunInfo], entries: dict[int, C.Entry | None], analysis,
             cache: C.RunCache | None) -> StoreResult:
    """Merge cached runs (``entries`` by run id; None or absent: not cached) with
    ``analysis`` (the :class:`analyze.Analysis` of every other run, or None when
    there are none), storing each freshly analysed run's entry in ``cache``
    (if any). Raises KeyError if a run is in neither."""
    fresh = {r["run_id"]: r for r in analysis.runs} if analysis is not None else {}
    out, per_run = [], []
    for run in runs:
        e = entries.get(run.run_id)
        if e is not None:
            rec, tables = dict(e.record), e.tables
        else:
            r = fresh[run.run_id]
            rec, tables = _record(r), C.run_tables(analysis.tables, run.run_id)
            if cache is not None:
                cache.store(run, rec, tables)
        rec.update(run_id=run.run_id, name=run.name, info=run)
        out.append(rec)
        per_run.append((run.name, tables))
    return StoreResult(out, C.named_tables(per_run), dict(analysis.seconds) if analysis else {})
