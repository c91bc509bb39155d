"""``kraft-chaos analyze``: every check of every run, as Spark jobs, with one verdict per run.

The verdict rules are those of ``kraft-chaos check`` (harness/run/check.py,
``check_run_dir``): an append run is judged by the log-safety checkers, a kv
run by linearizability by key; both by election safety, divergence and the
leadership checkers (checkers/leadership.py, run on the driver over each
run's DescribeQuorum and nemesis lines only). A run is judged by exactly the checkers
``check`` runs on it (its workload's, :func:`declared_checkers`): those Spark has no job
for (the queue workload's, membership) are run on the driver as Python fold checkers
(:func:`python_checkers`); one that cannot be computed is "unknown", never skipped. The queue
workload's kinds (Jepsen's names: lost-write, duplicate, inconsistent-offsets, ...) then stand
in for the Spark jobs' checkers of those names, which judge the append workload's log.
A run with malformed lines, or whose ops do not pair, is "unknown" (``check``
refuses it with exit 3); its other checks still run, for information.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import time

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from checkers.divergence import check_divergence
from checkers.registry import reported_names

from . import ingest, verdict, views
from .collect import collect_all
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
from .summary import ANOMALY_COLUMNS, CHECKERS, SPARK_CHECKERS

#: At most this many anomalies per (run, checker) go into analysis.json (all are in anomalies/).
MAX_EXAMPLES = 1000


@dataclasses.dataclass
class Analysis:
    """What :func:`analyze` found. ``runs``: one dict per run (``run_id``, ``name``,
    ``verdict``, ``checkers``: {name: verdict}, ``anomalies``: {name: count},
    ``examples``: {name: [anomaly dicts]}, ``stats``, ``malformed``: [{file,
    line, reason}], ``error``, ``info``: the RunInfo); ``tables``: every anomaly
    by checker, as Arrow tables whose ``run`` column is the run's id (int32);
    ``seconds``: wall time by phase."""

    runs: list[dict]
    tables: dict[str, pa.Table]
    seconds: dict[str, float]


#: The divergence detail table (from the node logs, checkers/divergence.py): one row per
#: pair of nodes whose logs differ below the lower of their high watermarks.
DIVERGENCE_SCHEMA = pa.schema([
    ("run", pa.int32()), ("node_a", pa.string()), ("node_b", pa.string()),
    ("offset", pa.int64()),        # the first offset where they differ
    ("count", pa.int64()),         # offsets below ``limit`` where they differ
    ("limit", pa.int64()),         # the lower of the two high watermarks
    ("record_a", pa.string()), ("record_b", pa.string()),   # each node's record at ``offset`` (JSON), or null
])


def divergence_table(rows: dict[int, list[dict]]) -> pa.Table:
    """:data:`DIVERGENCE_SCHEMA` rows from ``{run_id: divergence anomalies}`` (the dicts of
    checkers.divergence: ``nodes``, ``offset``, ``records``, ``count``, ``limit``)."""
    out = []
    for rid, anomalies in sorted(rows.items()):
        for a in anomalies:
            na, nb = (list(a.get("nodes") or []) + [None, None])[:2]
            recs = a.get("records") or {}

            def rec(n):
                return None if recs.get(n) is None else json.dumps(recs[n], default=str)
            out.append({"run": rid, "node_a": na, "node_b": nb, "offset": a.get("offset"),
                        "count": a.get("count"), "limit": a.get("limit"),
                        "record_a": rec(na), "record_b": rec(nb)})
    return pa.Table.from_pylist(out, schema=DIVERGENCE_SCHEMA)


def _by_run(table: pa.Table, limit: int | None = None) -> dict[int, list[dict]]:
    """``table``'s rows as dicts (without ``run``) by run id, in table order, at most
    ``limit`` per run."""
    out: dict[int, list[dict]] = {}
    for d in table.to_pylist():
        rows = out.setdefault(d.pop("run"), [])
        if limit is None or len(rows) < limit:
            rows.append(d)
    return out


def _sorted(table: pa.Table) -> pa.Table:
    """``table`` sorted by run, then by its first other column (repeatable output)."""
    keys = [c for c in table.column_names if c != "run"][:1]
    sortable = [k for k in keys if not pa.types.is_nested(table.schema.field(k).type)]
    return table.sort_by([("run", "ascending"), *[(k, "ascending") for k in sortable]])


def _checks_linearizability(run: RunInfo) -> bool:
    """Whether the run's workload is judged by linearizability (its spec's checkers,
    workloads/registry.py) rather than by the log-safety checkers."""
    from workloads.registry import WORKLOAD_SPECS
    spec = WORKLOAD_SPECS.get(run.workload)
    return spec is not None and "linearizability" in spec.checkers


def _leadership(run: RunInfo) -> dict[str, dict]:
    """The leadership checkers of one run (checkers/leadership.py), on the driver: they read
    only the run's DescribeQuorum and nemesis lines. A run whose test.json is unreadable
    (``run.config`` empty) gets the default fetch timeout."""
    from checkers.fold import CheckContext
    from checkers.leadership import NEMESIS_AND_MONITOR_CHECKERS, check_leadership_file
    try:
        return check_leadership_file(run.history, CheckContext(run.dir, run.config, target=run.target))
    except ValueError as e:      # a malformed line: the run is already "unknown"
        return {name: {"valid": "unknown", "anomalies": [], "error": str(e)} for name in NEMESIS_AND_MONITOR_CHECKERS}


def declared_checkers(run: RunInfo) -> list[str] | None:
    """The checkers ``check`` runs on ``run`` (harness/run/check.py): its workload's
    (workloads/registry.py), plus membership when the run's config calls for it
    (checkers.registry.check_all_folds). Any other checker is run on the driver by its
    Python fold checker (:func:`python_checkers`). None for a workload this harness does
    not know."""
    from checkers.membership import wanted as membership_wanted
    from workloads.registry import WORKLOAD_SPECS
    spec = WORKLOAD_SPECS.get(run.workload)
    if spec is None:
        return None
    names = list(spec.checkers)
    if "membership" not in names and membership_wanted(run.config, run.target.default_kraft_version):
        names.append("membership")
    return names


def python_checkers(run: RunInfo, names: list[str]) -> dict[str, dict]:
    """The Python fold checkers ``names`` (checkers/registry.py) over ``run``'s history, on
    the driver, without node data (none of the checkers Spark lacks reads it). Every name
    gets a result, and so does every kind a checker reports by kind (``queue``: Jepsen's
    names; ``checkers.registry.reported_names``): one that could not be computed is
    "unknown" with an ``error``."""
    from checkers.fold import CheckContext, run_checkers
    from checkers.registry import make_checkers, split_by_kind
    from history import iter_history
    if not names:
        return {}
    reported = reported_names(names)
    try:
        checkers = make_checkers(names, CheckContext(run.dir, run.config, target=run.target))
        got = split_by_kind(run_checkers(lambda: iter_history(run.history), checkers, None))
    except Exception as e:   # a malformed line, an unknown checker, a checker's own failure
        err = f"checker failed: {type(e).__name__}: {e}"
        return {n: {"valid": "unknown", "anomalies": [], "error": err} for n in reported}
    return {n: got.get(n) or {"valid": "unknown", "anomalies": [], "error": "no result"} for n in reported}


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
    node = node_checks(spark, runs, final_node_hws(ops))
    node_claims = [(rid, int(e), int(l)) for rid, res in node.items() for e, l in res.get("claims", [])]
    if node_claims:
        claims = claims.unionByName(spark.createDataFrame(node_claims, "run int, epoch long, leader long"))
    seconds["nodes"] = time.monotonic() - t

    # every result in one job (checkers/spark/collect.py); meanwhile the driver runs the
    # leadership checkers, which read only each run's own history file
    t = time.monotonic()
    jobs = {
        "lost-write": lost,
        "phantom": phantoms(values, records),
        "duplicate": duplicates(values, records),
        "inconsistent-offsets": inconsistent_offsets(offsets, acks, records),
        "nonmonotonic-read": nonmono,
        "malformed-read": malformed_reads,
        "election-safety": election_safety(claims),
        "_stats": run_stats(ops, pairs),
        "_lost_runs": lost_runs,
    }
    if kv_ids:
        jobs["_linearizability"] = linearizability(ops, kv_ids, lin_timeout_s)
    declared = {r.run_id: declared_checkers(r) for r in runs}

    def driver_checks():
        lead = {r.run_id: _leadership(r) for r in runs if r.run_id not in malformed}
        py = {r.run_id: python_checkers(r, [n for n in declared[r.run_id] if n not in SPARK_CHECKERS])
              for r in runs if r.run_id not in malformed and declared[r.run_id] is not None}
        return lead, py

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        lead = pool.submit(driver_checks)
        got = collect_all(jobs)
        leadership, py_results = lead.result()
    seconds["checks"] = time.monotonic() - t

    t = time.monotonic()
    stats = {rid: rows[0] for rid, rows in _by_run(got.pop("_stats")).items()}
    lost_meta = {rid: rows[0] for rid, rows in _by_run(got.pop("_lost_runs")).items()}
    lin_rows = _by_run(got["_linearizability"]) if kv_ids else {}
    if kv_ids:
        lin = got.pop("_linearizability")
        got["linearizability"] = lin.filter(pa.compute.not_equal(lin["valid"], "valid"))
    got["divergence"] = divergence_table({rid: (res.get("divergence") or {}).get("anomalies") or []
                                          for rid, res in node.items()})
    tables = {k: _sorted(v) for k, v in got.items()}
    counts = {k: {rid: len(rows) for rid, rows in _by_run(v).items()} for k, v in tables.items()}
    examples = {k: _by_run(v, MAX_EXAMPLES) for k, v in tables.items()
                if k not in ("linearizability", "divergence")}
    out = []
    for r in runs:
        rid = r.run_id
        st = stats.get(rid, {})
        n = {k: counts.get(k, {}).get(rid, 0) for k in tables}
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
        for name, res in (py_results.get(rid) or {}).items():
            checkers[name] = verdict.name(res.get("valid"))
            anomalies[name] = len(res.get("anomalies") or [])
            ex[name] = (res.get("anomalies") or [])[:MAX_EXAMPLES]
        errors = []
        names = declared[rid]
        if names is not None:
            names = reported_names(names)
        if names is None:
            errors.append(f"unknown workload {r.workload!r}: its checkers are not known")
            checkers = {k: ("unknown" if v == "valid" else v) for k, v in checkers.items()}
        else:
            # exactly the checkers ``check`` runs: none it would not run, and every one it
            # would (one not computed here is "unknown", never skipped)
            checkers = {k: checkers[k] if k in checkers else "unknown" for k in names}
            anomalies = {k: anomalies.get(k, 0) for k in names}
            ex = {k: v for k, v in ex.items() if k in checkers}
            for name, res in (py_results.get(rid) or {}).items():
                if res.get("error"):
                    errors.append(f"{name}: {res['error']}")
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
