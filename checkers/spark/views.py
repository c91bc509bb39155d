"""DataFrame views on the ops shared by the Spark checks (the Spark side of checkers/reads.py).

All take the persisted ops of :func:`ingest.load_ops` restricted to
well-formed ops (:func:`good`). Payloads are compared as their JSON text:
an int payload (every appended value) is its decimal text on both sides.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from checkers.reads import DATA, LEADER_CHANGE  # noqa: F401  (re-exported for the checks)

#: The group id of the final committed log in :func:`read_records` (real reads use their index).
FINAL_GROUP = -1
#: ``pnum`` of a payload that is not an int (its text is then in ``ptxt``).
NOT_INT = -(2 ** 63)


def payload_key(text: F.Column) -> tuple[F.Column, F.Column]:
    """A payload's JSON text as the key ``(pnum, ptxt)``: an int payload (every appended
    value) is ``(value, "")``, anything else ``(NOT_INT, text)``. Keys are equal
    exactly when the texts are; joins and groups on two columns of which one
    is a long are much cheaper than on the text."""
    num = text.try_cast("bigint")
    is_int = num.isNotNull() & (num.cast("string") == text)
    return (F.when(is_int, num).otherwise(F.lit(NOT_INT)).alias("pnum"),
            F.when(is_int, F.lit("")).otherwise(text).alias("ptxt"))


def good(ops: DataFrame) -> DataFrame:
    """The well-formed ops."""
    return ops.where(F.col("problem").isNull())


def acks(ops: DataFrame) -> DataFrame:
    """Ok appends with an int offset: ``run, index, node, value (text), pnum, ptxt, offset, epoch``."""
    return (ops.where(F.col("ack").isNotNull() & F.col("ack.offset").isNotNull()
                      & F.col("ack.value").isNotNull())
            .select("run", "index", "node", F.col("ack.value").alias("value"),
                    *payload_key(F.col("ack.value")),
                    F.col("ack.offset").alias("offset"), F.col("ack.epoch").alias("epoch")))


def ok_reads(ops: DataFrame) -> DataFrame:
    """Ok reads with a parsed value: ``run, index, process, node, from, to, high_watermark,
    linearizable, final, records, end`` (``end``: ``to`` if set, else the high watermark)."""
    r = F.col("read")
    return (ops.where(r.isNotNull())
            .select("run", "index", "process", "node", r["from"].alias("from"), r["to"].alias("to"),
                    r["high_watermark"].alias("high_watermark"),
                    F.coalesce(r["linearizable"], F.lit(False)).alias("linearizable"),
                    F.coalesce(r["final"], F.lit(False)).alias("final"), r["records"].alias("records"),
                    F.coalesce(r["to"], r["high_watermark"]).alias("end")))


def final_pages(reads: DataFrame) -> DataFrame:
    """The pages of each run's final committed read (checkers.reads.final_committed_pages):
    the last ok read with final and linearizable true, or, when that is a page
    (``to`` set), every final page with its high watermark. Columns as ok_reads."""
    fin = reads.where(F.col("final") & F.col("linearizable"))
    w = Window.partitionBy("run")
    last = (fin.withColumn("last", F.max("index").over(w)).where(F.col("index") == F.col("last"))
            .select("run", F.col("high_watermark").alias("last_hw"), F.col("to").isNotNull().alias("paged"),
                    F.col("index").alias("last_index")))
    j = fin.join(F.broadcast(last), "run")
    return (j.where((~F.col("paged") & (F.col("index") == F.col("last_index")))
                    | (F.col("paged") & F.col("to").isNotNull()
                       & (F.col("high_watermark") == F.col("last_hw"))))
            .drop("last_hw", "paged", "last_index"))


def read_records(reads: DataFrame, pages: DataFrame) -> DataFrame:
    """Every well-formed record of every ok read: ``run, group, read, node, offset, epoch,
    rtype, payload, pnum, ptxt``; records that are not ``[int, int, str, payload]`` are skipped.

    ``group`` is the read's index, or FINAL_GROUP for the pages of the final
    committed log (one read for duplicates); ``read`` is the op's index.
    """
    tagged = (reads.join(pages.select("run", "index", F.lit(True).alias("is_final_page")),
                         ["run", "index"], "left")
              .withColumn("group", F.when(F.col("is_final_page"), F.lit(FINAL_GROUP))
                          .otherwise(F.col("index"))))
    rec = F.col("rec")
    return (tagged.select("run", "group", F.col("index").alias("read"), "node",
                          F.explode("records").alias("rec"))
            .where(F.size(rec) == 4)
            .select("run", "group", "read", "node",
                    F.expr("try_cast(rec[0] as bigint)").alias("offset"),
                    F.expr("try_cast(rec[1] as bigint)").alias("epoch"),
                    rec[2].alias("rtype"), rec[3].alias("payload"), *payload_key(rec[3]))
            .where(F.col("offset").isNotNull() & F.col("epoch").isNotNull() & F.col("rtype").isNotNull()))
