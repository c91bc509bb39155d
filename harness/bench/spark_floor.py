"""``make bench``, Spark part: what the Spark steps that every log-safety analysis needs cost
on this machine, each alone, so the ``analyze`` figure can be read against a floor.

``analyze`` has to (a) parse every history line once, (b) group every
observation by offset (lost writes, inconsistent offsets), (c) group every
value (duplicates, phantoms) and (d) order each process's ops (Jepsen
pairing, for latency and nonmonotonic reads). This times, on the master
given, each of those as one bare Spark job, with its result discarded
(Spark's ``noop`` sink):

- ``parse``: the history read with its declared schema and each op's value
  parsed per op kind, as ``analyze`` reads it (ingest.parse_ops, every
  column materialised, nothing cached);
- ``group``: one ``groupBy(run, key).agg(min, max, count)`` over as many
  narrow rows of longs (made by ``spark.range``) as the history has ops,
  three to a key (fewer rows than (b) and (c) group: every ack plus every
  read record, so the floor stays a lower bound);
- ``window``: one ``lag`` window over as many rows, partitioned by 100
  processes and ordered by index.

The floor printed is start + parse + 2 x group + window: a lower bound for
any analysis built from these DataFrame steps (it leaves out caching,
joins, the exact passes and writing the results). Nothing is asserted.
"""
from __future__ import annotations

import time
from pathlib import Path

from checkers.spark.runs import run_info
from checkers.spark.session import spark_session
from harness.run.check import run_target


def _timed(df) -> float:
    """Seconds to run ``df`` to Spark's noop sink (every row computed, none kept)."""
    t = time.monotonic()
    df.write.format("noop").mode("overwrite").save()
    return time.monotonic() - t


def measure(history: Path, ops: int, master: str = "local[*]") -> dict[str, float]:
    """Time the steps of the module doc on ``history`` (a history.jsonl of ``ops`` lines).
    Returns seconds by step: ``start``,
    ``parse``, ``group``, ``window``, and ``floor`` (start + parse + 2 x group +
    window). Raises SparkSetupError if Spark cannot start."""
    from pyspark.sql import functions as F      # deferred: PySpark
    from pyspark.sql.window import Window      # deferred: PySpark

    from checkers.spark.ingest import parse_ops      # deferred: PySpark

    t = time.monotonic()
    spark = spark_session(master, app="kraft-chaos bench floor")
    out = {"start": time.monotonic() - t}
    try:
        c = F.col
        parsed = parse_ops(spark, [run_info(0, history, None, run_target)])
        _timed(parsed)                            # JIT warm-up, not counted
        out["parse"] = _timed(parsed)
        rows = spark.range(ops).select(F.lit(1).alias("run"), (c("id") % max(1, ops // 3)).alias("key"),
                                     F.xxhash64("id").alias("h"))
        out["group"] = _timed(rows.groupBy("run", "key").agg(F.min("h"), F.max("h"), F.count("*")))
        w = Window.partitionBy("run", "proc").orderBy("id")
        seq = spark.range(ops).select(F.lit(1).alias("run"), (c("id") % 100).alias("proc"), "id")
        out["window"] = _timed(seq.select("id", F.lag("id").over(w)))
    finally:
        spark.stop()
    out["floor"] = out["start"] + out["parse"] + 2 * out["group"] + out["window"]
    return out


def report(history: Path, ops: int, master: str, analyze_s: float) -> None:
    """Print :func:`measure`'s figures, the ops/s its floor allows, and ``analyze``'s wall
    time (``analyze_s``) as a multiple of the floor."""
    m = measure(history, ops, master)
    print(f"Spark floor on this machine ({master}): start {m['start']:.1f} s, one parse of the "
          f"history with its values (warm) {m['parse']:.1f} s, one grouping of {ops:,} rows {m['group']:.1f} s, "
          f"one window over {ops:,} rows {m['window']:.1f} s")
    print(f"  start + parse + 2 groupings + window = {m['floor']:.1f} s = at most "
          f"{ops / m['floor']:,.0f} ops/s for any analysis built from these steps; "
          f"analyze took {analyze_s / m['floor']:.1f}x that")
