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
    return (ops.where(F.col("offset").isNotNull() & F.col("ack_value").isNotNull())
            .select("run", "index", "node", F.col("ack_value").alias("value"),
                    *payload_key(F.col("ack_value")), "offset", "epoch"))


def ok_reads(ops: DataFrame) -> DataFrame:
    """Ok reads with a parsed value: ``run, index, process, node, from, to, high_watermark,
    linearizable, final, nrec, end`` (``nrec``: how many records, -1 when ``records``
    is not a list; ``end``: ``to`` if set, else the high watermark). The records
    themselves are in :func:`all_records` (and the well-formed ones in :func:`read_records`)."""
    c = F.col
    return (ops.where(c("nrec").isNotNull())
            .select("run", "index", "process", "node", "from", "to", "high_watermark",
                    F.coalesce(c("linearizable"), F.lit(False)).alias("linearizable"),
                    F.coalesce(c("final"), F.lit(False)).alias("final"), "nrec",
                    F.coalesce(c("to"), c("high_watermark")).alias("end")))


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


def all_records(ops: DataFrame, pages: DataFrame) -> DataFrame:
    """Every record of every ok read, well formed or not, at its position:
    ``run, group, read, node, placed, offset, epoch, rtype, payload, pnum, ptxt``.

    ``group`` is the read's index, or FINAL_GROUP for the pages of the final
    committed log (one read for duplicates); ``read`` is the op's index;
    ``placed`` is false for a record that is not a 4-array whose offset is
    the read's ``from`` plus its position (checkers.nonmonotonic_read.malformed_read).
    """
    c = F.col
    tagged = (ops.where(c("records").isNotNull())
              .join(F.broadcast(pages.select("run", "index", F.lit(True).alias("is_final_page"))),
                    ["run", "index"], "left")
              .select("run", F.when(c("is_final_page"), F.lit(FINAL_GROUP)).otherwise(c("index")).alias("group"),
                      c("index").alias("read"), "node", "from", F.posexplode("records").alias("pos", "rec")))
    four = F.size(c("rec")) == 4

    def field(i: int) -> F.Column:
        return F.when(four, F.try_element_at(c("rec"), F.lit(i + 1)))

    offset = field(0).try_cast("bigint")
    return (tagged.select("run", "group", "read", "node",
                          F.coalesce(offset == c("from") + c("pos"), F.lit(False)).alias("placed"),
                          offset.alias("offset"), field(1).try_cast("bigint").alias("epoch"),
                          field(2).alias("rtype"), field(3).alias("payload"))
            .select("*", *payload_key(c("payload"))))


def read_records(records: DataFrame) -> DataFrame:
    """The well-formed records of :func:`all_records` (``[int, int, str, payload]``, as
    checkers.reads.read_records keeps them)."""
    c = F.col
    return records.where(c("offset").isNotNull() & c("epoch").isNotNull() & c("rtype").isNotNull())
