"""One grouping of every observation by (run, offset), shared by the lost-write and
inconsistent-offsets jobs: each observation is shuffled once, into a hash
aggregate of fixed-width columns."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .views import DATA, FINAL_GROUP


def record_hash(rtype: F.Column, pnum: F.Column, ptxt: F.Column) -> F.Column:
    """A 64-bit hash of a record key (type, payload); used only to find candidate offsets,
    which are then compared exactly."""
    return F.xxhash64(rtype, pnum, ptxt)


def by_offset(acks: DataFrame, records: DataFrame) -> DataFrame:
    """Group the observations of each offset: every ok append (offset O holds data V) and
    every record of every ok read.

    Returns per (run, offset): ``lo``/``hi`` (smallest and largest record key
    hash seen there), ``lo_num``/``hi_num`` (smallest and largest payload
    number), ``final`` (the hash of the final committed log's data record
    there, or null), ``acks`` (ok appends at that offset), ``ack_lo``/``ack_hi``
    (their key hashes). An offset where two keys were seen has lo != hi or
    lo_num != hi_num (the numbers compare int payloads exactly; two
    different keys with one hash, a 2^-64 chance, could hide only a
    non-int difference). Offsets flagged here are judged exactly by the
    lost-write and inconsistent-offsets jobs.
    """
    c = F.col
    ack_rows = acks.select("run", "offset", record_hash(F.lit(DATA), c("pnum"), c("ptxt")).alias("h"), "pnum",
                           F.lit(False).alias("is_final"), F.lit(True).alias("is_ack"))
    rec_rows = records.select("run", "offset", record_hash(c("rtype"), c("pnum"), c("ptxt")).alias("h"), "pnum",
                              ((c("group") == FINAL_GROUP) & (c("rtype") == DATA)).alias("is_final"),
                              F.lit(False).alias("is_ack"))
    return (ack_rows.unionByName(rec_rows).groupBy("run", "offset")
            .agg(F.min("h").alias("lo"), F.max("h").alias("hi"),
                 F.min("pnum").alias("lo_num"), F.max("pnum").alias("hi_num"),
                 F.max(F.when(c("is_final"), c("h"))).alias("final"),
                 F.sum(F.when(c("is_ack"), 1).otherwise(0)).alias("acks"),
                 F.min(F.when(c("is_ack"), c("h"))).alias("ack_lo"),
                 F.max(F.when(c("is_ack"), c("h"))).alias("ack_hi")))


def two_keys() -> F.Column:
    """True for a :func:`by_offset` row where two different record keys were seen."""
    c = F.col
    return (c("lo") != c("hi")) | (c("lo_num") != c("hi_num"))
