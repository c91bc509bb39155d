"""Lost writes as a Spark job: the acknowledged appends against the final committed log
(the Spark side of checkers/lost_write.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .views import DATA


def lost_writes(offsets: DataFrame, acks: DataFrame, pages: DataFrame, final_records: DataFrame
                ) -> tuple[DataFrame, DataFrame]:
    """Find ok appends whose value is not at their offset in the final committed log.

    An ack at offset O is lost when O >= the final high watermark, or when a
    page covers O and the final log holds no data record with the ack's
    value at O; acks below the high watermark that no page covers are
    unjudged. Coverage is a range test against the union of the pages when
    they are contiguous (every history we write), else page by page.

    The anti-join of the acks against the final log runs on candidates:
    :func:`offsets.by_offset` already grouped every ack with the final
    record at its offset, so only offsets where an ack's key differs from the
    final record's (or with no final record, or several acks) are joined,
    exactly, against ``final_records``.

    Returns ``(anomalies, per_run)``: anomalies ``run, op, value, offset,
    epoch, node``; per_run ``run, acked, has_final``.
    """
    c = F.col
    meta = (pages.groupBy("run")
            .agg(F.max("high_watermark").alias("hw"), F.min("from").alias("lo_off"),
                 F.max("end").alias("hi_off"),
                 F.sum(F.greatest(c("end") - c("from"), F.lit(0))).alias("width")))
    meta = meta.withColumn("contiguous", c("width") == c("hi_off") - c("lo_off"))
    gapped = meta.where(~c("contiguous")).limit(1).count() > 0
    meta = F.broadcast(meta)
    ranges = F.broadcast(pages.select("run", c("from").alias("p_from"), c("end").alias("p_end")))
    with_acks = offsets.where(c("acks") > 0).join(meta, "run", "left")
    tight = F.coalesce(c("contiguous"), F.lit(True))
    covered = F.coalesce((c("offset") >= c("lo_off")) & (c("offset") < c("hi_off")), F.lit(False))
    past_end = F.coalesce(c("offset") >= c("hw"), F.lit(False))
    # offsets whose acks all match the final record cannot hold a lost write; an offset
    # the final log has no data record at (final is null) is not settled: a null here
    # would drop the offset from the suspects, and its lost write with it
    settled = F.coalesce((c("ack_lo") == c("ack_hi")) & (c("ack_lo") == c("final")) & (c("lo_num") == c("hi_num")),
                         F.lit(False))
    per_offset = with_acks.select("run", "offset", "acks", F.when(tight, covered).alias("covered"),
                                  past_end.alias("past_end"),
                                  settled.alias("settled"))
    if gapped:   # page by page, only for runs whose pages leave gaps (none that we write)
        loose = (per_offset.where(c("covered").isNull()).join(ranges, "run")
                 .withColumn("in_page", (c("offset") >= c("p_from")) & (c("offset") < c("p_end")))
                 .groupBy("run", "offset").agg(F.max("in_page").alias("in_page")))
        per_offset = (per_offset.join(loose, ["run", "offset"], "left")
                      .withColumn("covered", F.coalesce("covered", "in_page", F.lit(False))).drop("in_page"))
    else:
        per_offset = per_offset.withColumn("covered", F.coalesce("covered", F.lit(False)))
    suspects = per_offset.where(c("past_end") | (c("covered") & ~c("settled")))
    suspect_offsets = F.broadcast(suspects.select("run", "offset", "past_end"))
    cand = acks.join(suspect_offsets, ["run", "offset"])
    # the final log's data at the suspect offsets only: the anti-join then moves no large side
    held = (final_records.where(c("rtype") == DATA).join(suspect_offsets.where(~c("past_end")), ["run", "offset"])
            .select("run", "offset", "pnum", "ptxt"))
    lost = (cand.where(c("past_end"))
            .unionByName(cand.where(~c("past_end")).join(held, ["run", "offset", "pnum", "ptxt"], "left_anti"))
            .select("run", c("index").alias("op"), "value", "offset", "epoch", "node"))
    per_run = (per_offset.groupBy("run").agg(F.sum("acks").alias("acked"))
               .join(meta.select("run", F.lit(True).alias("has_final")), "run", "full")
               .fillna({"acked": 0, "has_final": False}))
    return lost, per_run
