"""Reading histories into Spark with the declared schema, and finding malformed lines.

Every history is read in one pass (:func:`load_ops`, which persists
:func:`parse_ops`); each line becomes a row tagged with its run's id and a
``problem`` (None for a well-formed op). :func:`malformed_lines` then
reports each bad line by file and 1-based line number. A run with
malformed lines is never dropped: the analysis reports it, and its
verdict is "unknown".
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterator

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from history import NEMESIS, OP_TYPES

from .runs import RunInfo
from .schema import ACK_INT_SCHEMA, ACK_SCHEMA, CORRUPT, HISTORY_SCHEMA, READ_SCHEMA

#: At most this many malformed lines are listed per file (all are counted).
MAX_LISTED = 100


def _problem() -> F.Column:
    """Why a parsed row is not a well-formed op (the rules of history.read_history)."""
    c = F.col
    return (F.when(c(CORRUPT).isNotNull(), F.lit("truncated or invalid JSON, or a field of the wrong type"))
            .when(c("index").isNull(), F.lit("missing field 'index'"))
            .when(c("time").isNull(), F.lit("missing field 'time'"))
            .when(c("type").isNull(), F.lit("missing field 'type'"))
            .when(c("process").isNull(), F.lit("missing field 'process'"))
            .when(c("f").isNull(), F.lit("missing field 'f'"))
            .when(c("index") < 0, F.lit("'index' must be a non-negative int"))
            .when(~c("type").isin(*OP_TYPES), F.concat(F.lit(f"'type' must be one of {', '.join(OP_TYPES)}, got "),
                                                       c("type")))
            .when(~_is_process(c("process")),
                  F.concat(F.lit(f"'process' must be an int or {NEMESIS!r}, got "), c("process"))))


def _is_process(p: F.Column) -> F.Column:
    """``p`` is the text of an int or NEMESIS. The text of a long (every process we write)
    is recognised by a cast, much cheaper than the regex that judges any other text."""
    canonical = p.try_cast("bigint").cast("string") == p
    return F.when(canonical, F.lit(True)).otherwise(p.rlike(r"^-?[0-9]+$") | (p == NEMESIS))


def file_key(spark: SparkSession, run: RunInfo) -> str:
    """The key :func:`file_key_column` gives the rows of ``run``'s history: its path
    as Hadoop encodes it in a URI (spaces as %20, '+' kept), without scheme."""
    return spark._jvm.org.apache.hadoop.fs.Path(str(run.history)).toUri().getRawPath()


def file_key_column() -> F.Column:
    """The file a row was read from, as :func:`file_key` names it."""
    return F.regexp_replace(F.input_file_name(), r"^file:/*", "/")


def read_json(spark: SparkSession, paths: str | list[str]) -> DataFrame:
    """History lines read with HISTORY_SCHEMA, nothing dropped: a malformed line is a row
    with its raw text in CORRUPT."""
    return (spark.read.schema(HISTORY_SCHEMA).option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT).json(paths))


def read_runs(spark: SparkSession, runs: list[RunInfo], tag: Callable[[RunInfo], Any],
              tag_type: str) -> DataFrame:
    """Every run's history lines (:func:`read_json`), each row tagged with column ``run``:
    ``tag(run)`` of the run it was read from, of Spark SQL type ``tag_type``."""
    if len(runs) == 1:   # one (often huge) history: no per-line file lookup
        return read_json(spark, str(runs[0].history)).withColumn("run", F.lit(tag(runs[0])).cast(tag_type))
    ids = spark.createDataFrame([(file_key(spark, r), tag(r)) for r in runs], f"uri string, run {tag_type}")
    return (read_json(spark, [str(r.history) for r in runs]).withColumn("uri", file_key_column())
            .join(F.broadcast(ids), "uri").drop("uri"))


def load_ops(spark: SparkSession, runs: list[RunInfo], kv_runs: list[int] = ()) -> DataFrame:
    """:func:`parse_ops`, persisted (memory, then disk): the one pass over the histories
    that every check then reads."""
    return parse_ops(spark, runs, kv_runs).persist(StorageLevel.MEMORY_AND_DISK)


def parse_ops(spark: SparkSession, runs: list[RunInfo], kv_runs: list[int] = ()) -> DataFrame:
    """All runs' history lines as one DataFrame, read with HISTORY_SCHEMA (not persisted).

    Columns: ``run`` (int id), ``index``, ``time`` (ns), ``type``,
    ``process`` (text), ``f``, ``node``, ``error``, ``problem`` (None when
    well formed), ``value`` (raw JSON text; None for ok appends and ok
    reads, whose values are parsed instead). Ok appends (ACK_SCHEMA):
    ``ack_value`` (the appended value's JSON text), ``offset``, ``epoch``.
    Ok reads (READ_SCHEMA): ``from``, ``to``, ``high_watermark``,
    ``linearizable``, ``final``, ``records`` and ``nrec`` (its size). The
    parsed fields are flat columns, so a job that reads offsets never
    decodes a read's records. Blank lines are skipped, as by read_history.
    ``kv_runs``: ids of kv runs, whose reads are kv ops (``[k, v]``), kept as
    raw values rather than parsed as log reads.
    """
    raw = read_runs(spark, runs, lambda r: r.run_id, "int")
    c = F.col
    is_ok_append = (c("f") == "append") & (c("type") == "ok")
    is_ok_read = (c("f") == "read") & (c("type") == "ok") & ~c("run").isin(list(kv_runs))
    base = ("run", "index", "time", "type", "process", "f", "node", "error", "problem", "value")
    parsed = raw.select(*base[:8], _problem().alias("problem"),
                        F.when(~(is_ok_append | is_ok_read), c("value")).alias("value"),
                        F.when(is_ok_append, F.from_json("value", ACK_INT_SCHEMA)).alias("_ack"),
                        F.when(is_ok_append, c("value")).alias("_ack_text"),
                        F.when(is_ok_read, F.from_json("value", READ_SCHEMA)).alias("_read"))
    fast, r = c("_ack"), c("_read")
    # an int value (every appended value) needs no second parse; any other is re-read as
    # text. The re-read is the second branch of a single coalesce, so it runs only for
    # those (with one coalesce per field, codegen hoisted it and re-read every ack).
    a = F.coalesce(F.when(fast["value"].isNotNull(),
                          F.struct(fast["value"].cast("string").alias("value"), fast["offset"], fast["epoch"])),
                   F.from_json("_ack_text", ACK_SCHEMA))
    return parsed.select(*base, a["value"].alias("ack_value"), a["offset"].alias("offset"),
                         a["epoch"].alias("epoch"),
                         *[r[k].alias(k) for k in ("from", "to", "high_watermark", "linearizable", "final",
                                                   "records")],
                         F.when(r.isNotNull(), F.coalesce(F.size(r["records"]), F.lit(-1))).alias("nrec"))


def run_problems(ops: DataFrame) -> dict[int, dict]:
    """Per run: ``{"ops": well-formed ops, "bad": malformed lines, "dense": bool}``.

    ``dense``: the well-formed ops' indices are 0..n-1, checked by count,
    min, max, sum and sum of squares modulo a prime (a cheap stand-in for read_history's
    line-by-line sequence check; a run that fails it is scanned line by
    line by :func:`malformed_lines`).
    """
    c = F.col
    good = c("problem").isNull()
    sq = (c("index") % _P) * (c("index") % _P) % _P
    rows = (ops.groupBy("run")
            .agg(F.sum(F.when(good, 1).otherwise(0)).alias("n"),
                 F.sum(F.when(good, 0).otherwise(1)).alias("bad"),
                 F.min(F.when(good, c("index"))).alias("lo"),
                 F.max(F.when(good, c("index"))).alias("hi"),
                 F.try_sum(F.when(good, c("index"))).alias("s1"),
                 F.try_sum(F.when(good, sq)).alias("s2"))
            .collect())
    out = {}
    for r in rows:
        n = int(r["n"])
        dense = n == 0 or (r["lo"] == 0 and r["hi"] == n - 1 and r["s1"] is not None
                           and int(r["s1"]) == n * (n - 1) // 2 and r["s2"] is not None
                           and int(r["s2"]) % _P == (n - 1) * n * (2 * n - 1) // 6 % _P)
        out[r["run"]] = {"ops": n, "bad": int(r["bad"]), "dense": dense}
    return out


#: The modulus of the sum of squares in :func:`run_problems` (a prime; long arithmetic,
#: no overflow for any index).
_P = 1_000_000_007


def _scan_lines(rows: Iterator[tuple[str, int]]) -> Iterator[tuple[int, str, bool]]:
    """Python check of (line, 0-based number) pairs; yields (1-based line, reason,
    is_sequence_problem) for bad ones."""
    from history import op_problem as _op_problem

    for text, i in rows:
        if not text.strip():
            continue
        try:
            op = json.loads(text)
        except ValueError as exc:
            yield i + 1, f"truncated or invalid JSON: {exc}", False
            continue
        problem = _op_problem(op)
        if problem:
            yield i + 1, problem, False
        elif op["index"] != i:
            yield i + 1, f"index {op['index']} out of sequence (expected {i}; indices are dense from 0)", True


def malformed_lines(spark: SparkSession, run: RunInfo) -> list[dict]:
    """The malformed lines of one run's history: ``[{"file", "line", "reason"}]``.

    Scans the file line by line (in parallel, with line numbers from
    ``zipWithIndex``) with read_history's own rules, including the index
    sequence. Lines that are not ops are listed; when there are none, the
    first op out of sequence is (one bad line shifts every later index, so
    only the first says anything). At most :data:`MAX_LISTED` are returned,
    in line order.
    """
    rdd = spark.sparkContext.textFile(str(run.history)).zipWithIndex().mapPartitions(_scan_lines)
    bad = rdd.filter(lambda x: not x[2]).takeOrdered(MAX_LISTED, key=lambda x: x[0])
    if not bad:
        bad = rdd.takeOrdered(1, key=lambda x: x[0])
    return [{"file": str(run.history), "line": line, "reason": reason} for line, reason, _ in bad]
