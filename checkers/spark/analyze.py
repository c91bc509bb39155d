"""``kraft-chaos analyze``: every check of every run, as Spark jobs, with one verdict per run.

The verdict rules are those of ``kraft-chaos check`` (harness/check_run.py,
``check_run_dir``): an append run is judged by the log-safety checkers, a kv
run by linearizability by key; both by election safety, divergence and the
leadership checkers (checkers/leadership.py, run on the driver over each
run's DescribeQuorum and nemesis lines only).
A run with malformed lines, or whose ops do not pair, is "unknown" (``check``
refuses it with exit 3); its other checks still run, for information.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.divergence import check_divergence

from . import ingest, verdict, views
from .duplicate import duplicates
from .election_safety import election_safety, leader_claims
from .inconsistent_offsets import inconsistent_offsets
from .linearizability import linearizability
from .lost_write import lost_writes
from .node_checks import final_node_hws, node_checks
from .nonmonotonic_read import nonmonotonic_reads
from .offsets import by_offset
from .pairing import pair
from .phantom import phantoms
from .runs import RunInfo
from .stats import run_stats
from .values import by_value
from .summary import ANOMALY_COLUMNS, CHECKERS

#: At most this many anomalies per (run, checker) go into analysis.json (all are in anomalies/).
MAX_EXAMPLES = 1000


@dataclasses.dataclass
class Analysis:
    """What :func:`analyze` found. ``runs``: one dict per run (``run_id``, ``name``,
    ``verdict``, ``checkers``: {name: verdict}, ``anomalies``: {name: count},
    ``examples``: {name: [anomaly dicts]}, ``stats``, ``malformed``: [{file,
    line, reason}], ``error``); ``tables``: the anomaly DataFrames by checker
    (persisted); ``seconds``: wall time by phase."""

    runs: list[dict]
    tables: dict[str, DataFrame]
    seconds: dict[str, float]


def _counts(df: DataFrame) -> dict[int, int]:
    return {r["run"]: r["count"] for r in df.groupBy("run").count().collect()}


def _examples(df: DataFrame, limit: int = MAX_EXAMPLES) -> dict[int, list[dict]]:
    from pyspark.sql.window import Window
    w = Window.partitionBy("run").orderBy(*[c for c in df.columns if c != "run"][:1])
    rows = df.withColumn("_k", F.row_number().over(w)).where(F.col("_k") <= limit).drop("_k").collect()
    out: dict[int, list[dict]] = {}
    for r in rows:
        d = r.asDict(recursive=True)
        out.setdefault(d.pop("run"), []).append(d)
    return out


def _checks_linearizability(run: RunInfo) -> bool:
    """Whether the run's workload is judged by linearizability (its spec's checkers,
    workloads/registry.py) rather than by the log-safety checkers."""
    from workloads.registry import WORKLOAD_SPECS
    spec = WORKLOAD_SPECS.get(run.workload)
    return spec is not None and "linearizability" in spec.checkers


def _leadership(run: RunInfo) -> dict[str, dict]:
    """The leadership checkers of one run (checkers/leadership.py), on the driver: they read
    only the run's DescribeQuorum and nemesis lines. A run whose test.json is unreadable
    gets the default fetch timeout."""
    import json
    from checkers.fold import CheckContext
    from checkers.leadership import NEMESIS_AND_MONITOR_CHECKERS, check_leadership_file
    try:
        config = json.loads((run.dir / "test.json").read_text()).get("config") or {}
    except (OSError, ValueError, AttributeError):
        config = {}
    try:
        return check_leadership_file(run.history, CheckContext(run.dir, config if isinstance(config, dict) else {}))
    except ValueError as e:      # a malformed line: the run is already "unknown"
        return {name: {"valid": "unknown", "anomalies": [], "error": str(e)} for name in NEMESIS_AND_MONITOR_CHECKERS}


def analyze(spark: SparkSession, runs: list[RunInfo], lin_timeout_s: float = 60.0) -> Analysis:
    """Run every check on ``runs``; see the module doc for the verdict rules.

    Raises only for Spark failures; bad input (malformed lines, unreadable
    node data, ops that do not pair) is reported per run.
    """
    t0 = time.monotonic()
    seconds: dict[str, float] = {}
    kv_ids = [r.run_id for r in runs if _checks_linearizability(r)]
    ops_all = ingest.load_ops(spark, runs, kv_runs=kv_ids)
    problems = ingest.run_problems(ops_all)
    seconds["ingest"] = time.monotonic() - t0
    malformed: dict[int, list[dict]] = {}
    for r in runs:
        p = problems.get(r.run_id)
        if p is None:
            malformed[r.run_id] = [{"file": str(r.history), "line": 0, "reason": "no ops (empty history)"}]
        elif p["bad"] or not p["dense"]:
            malformed[r.run_id] = ingest.malformed_lines(spark, r) or [
                {"file": str(r.history), "line": 0,
                 "reason": f"{p['bad']} malformed lines; indices not dense from 0"}]
    seconds["malformed"] = time.monotonic() - t0 - seconds["ingest"]

    ops = views.good(ops_all)
    acks = views.acks(ops).persist(StorageLevel.MEMORY_AND_DISK)
    reads = views.ok_reads(ops)
    pages = views.final_pages(reads).persist()
    every_record = views.all_records(ops, pages).persist(StorageLevel.MEMORY_AND_DISK)
    records = views.read_records(every_record)

    t = time.monotonic()
    pairs = pair(ops).persist(StorageLevel.MEMORY_AND_DISK)
    offsets = by_offset(acks, records).persist(StorageLevel.MEMORY_AND_DISK)
    values = by_value(ops, records).persist(StorageLevel.MEMORY_AND_DISK)
    final_records = records.where(F.col("group") == views.FINAL_GROUP)
    lost, lost_runs = lost_writes(offsets, acks, pages, final_records)
    nonmono, malformed_reads = nonmonotonic_reads(pairs, acks, reads, every_record)
    claims = leader_claims(ops, records, acks)
    tables = {
        "lost-write": lost,
        "phantom": phantoms(values, records),
        "duplicate": duplicates(values, records),
        "inconsistent-offsets": inconsistent_offsets(offsets, acks, records),
        "nonmonotonic-read": nonmono,
        "malformed-read": malformed_reads,
    }
    tables = {k: v.persist() for k, v in tables.items()}
    counts = {k: _counts(v) for k, v in tables.items()}
    lost_meta = {r["run"]: r.asDict() for r in lost_runs.collect()}
    seconds["log-safety"] = time.monotonic() - t

    t = time.monotonic()
    node = node_checks(spark, runs, final_node_hws(reads))
    node_claims = [(rid, int(e), int(l)) for rid, res in node.items() for e, l in res.get("claims", [])]
    if node_claims:
        claims = claims.unionByName(spark.createDataFrame(node_claims, "run int, epoch long, leader long"))
    tables["election-safety"] = election_safety(claims).persist()
    counts["election-safety"] = _counts(tables["election-safety"])
    leadership = {r.run_id: _leadership(r) for r in runs if r.run_id not in malformed}
    seconds["nodes+elections"] = time.monotonic() - t

    t = time.monotonic()
    lin_rows: dict[int, list[dict]] = {}
    if kv_ids:
        lin = linearizability(ops, kv_ids, lin_timeout_s).persist()
        tables["linearizability"] = lin.where(F.col("valid") != "valid")
        for r in lin.collect():
            lin_rows.setdefault(r["run"], []).append(r.asDict())
    seconds["linearizability"] = time.monotonic() - t

    t = time.monotonic()
    stats = {r["run"]: r.asDict() for r in run_stats(ops, pairs).collect()}
    seconds["stats"] = time.monotonic() - t

    t = time.monotonic()
    examples = {k: _examples(v) for k, v in tables.items() if k != "linearizability"}
    out = []
    for r in runs:
        rid = r.run_id
        st = stats.get(rid, {})
        n = {k: counts.get(k, {}).get(rid, 0) for k in tables if k != "linearizability"}
        node_res = node.get(rid)
        div = (node_res or {}).get("divergence") or check_divergence([], None)
        checkers: dict[str, str] = {}
        anomalies: dict[str, int] = {}
        ex: dict[str, list] = {k: examples.get(k, {}).get(rid, []) for k in examples}
        if _checks_linearizability(r):
            rows = lin_rows.get(rid, [])
            checkers["linearizability"] = verdict.worst(x["valid"] for x in rows)
            anomalies["linearizability"] = sum(1 for x in rows if x["valid"] == "invalid")
            ex["linearizability"] = [x for x in rows if x["valid"] != "valid"]
        else:
            meta = lost_meta.get(rid, {"acked": 0, "has_final": False})
            if not meta["has_final"]:
                checkers["lost-write"] = "valid" if not meta["acked"] else "unknown"
            else:
                checkers["lost-write"] = "invalid" if n["lost-write"] else "valid"
            for k in ("phantom", "duplicate", "inconsistent-offsets"):
                checkers[k] = "invalid" if n[k] else "valid"
            nm = n["nonmonotonic-read"] + n["malformed-read"]
            checkers["nonmonotonic-read"] = "invalid" if nm else "valid"
            for k in ("lost-write", "phantom", "duplicate", "inconsistent-offsets"):
                anomalies[k] = n[k]
            anomalies["nonmonotonic-read"] = nm
        checkers["election-safety"] = "invalid" if n["election-safety"] else "valid"
        anomalies["election-safety"] = n["election-safety"]
        checkers["divergence"] = verdict.name(div.get("valid"))
        anomalies["divergence"] = len(div.get("anomalies") or [])
        ex["divergence"] = div.get("anomalies") or []
        for name, res in (leadership.get(rid) or {}).items():
            checkers[name] = verdict.name(res.get("valid"))
            anomalies[name] = len(res.get("anomalies") or [])
            ex[name] = res.get("anomalies") or []
        errors = []
        if rid in malformed:
            errors.append(f"{len(malformed[rid])} malformed line(s), first "
                          f"{malformed[rid][0]['file']}:{malformed[rid][0]['line']}: "
                          f"{malformed[rid][0]['reason']}")
        if st.get("unpaired"):
            errors.append(f"{st['unpaired']} op(s) do not pair with an invoke or completion of "
                          f"their process")
        if node_res and node_res.get("error"):
            errors.append(node_res["error"])
        if r.error:
            errors.append(r.error)
        run_verdict = verdict.worst(checkers.values())
        # a history that is not a well-formed history has no verdict; other errors
        # (node data, test.json) only keep a run from being called valid
        if rid in malformed or st.get("unpaired") or (errors and run_verdict == "valid"):
            run_verdict = "unknown"
        out.append({"run_id": rid, "name": r.name, "workload": r.workload, "verdict": run_verdict,
                    "checkers": checkers, "anomalies": anomalies,
                    "examples": {k: v for k, v in ex.items() if v}, "stats": st,
                    "malformed": malformed.get(rid, []), "error": "; ".join(errors) or None,
                    "info": r})
    seconds["collect"] = time.monotonic() - t
    for df in (pairs, offsets, values, every_record, acks, pages, ops_all):
        df.unpersist()
    return Analysis(out, tables, seconds)


def summary_rows(analysis: Analysis) -> list[dict]:
    """The per-run rows of the summary table (summary.RUN_COLUMNS)."""
    rows = []
    for r in analysis.runs:
        info: RunInfo = r["info"]
        st = r["stats"]
        nem = info.nemesis
        if nem == "none" and st.get("nemesis_fs"):
            nem = "+".join(st["nemesis_fs"])
        row = {"run": r["name"], "test": info.name.split("/")[0] if "/" in info.name else None,
               "date": info.date, "workload": r["workload"], "synthetic": info.synthetic,
               "verdict": r["verdict"], "ops": st.get("ops", 0), "client_ops": st.get("client_ops", 0),
               "ok": st.get("ok", 0), "fail": st.get("fail", 0), "info": st.get("info", 0),
               "availability": st.get("availability"), "latency_p50_ms": st.get("latency_p50_ms"),
               "latency_p99_ms": st.get("latency_p99_ms"), "nemesis": nem, "seed": info.seed,
               "commit": info.commit, "malformed_lines": len(r["malformed"]), "error": r["error"]}
        for name, col in zip(CHECKERS, ANOMALY_COLUMNS):
            row[col] = r["anomalies"].get(name, 0)
        rows.append(row)
    return rows


def analysis_json(analysis: Analysis) -> dict:
    """``analysis.json``: per run its verdict, checker verdicts, anomaly counts, examples,
    malformed lines and stats; plus timings."""
    runs = []
    for r in analysis.runs:
        d = {k: v for k, v in r.items() if k != "info"}
        d["history"] = str(r["info"].history)
        runs.append(d)
    return {"runs": runs, "seconds": analysis.seconds}


def write_anomalies(analysis: Analysis, out_dir: Path) -> Path:
    """Every anomaly, one Parquet dataset per checker under ``out_dir/anomalies/<checker>/``."""
    base = out_dir / "anomalies"
    for name, df in analysis.tables.items():
        df.write.mode("overwrite").parquet(str(base / name))
    return base
