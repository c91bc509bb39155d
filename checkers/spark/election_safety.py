"""Election safety as a Spark job: at most one leader per epoch (Raft §5.2, KIP-595;
the Spark side of checkers/election_safety.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .schema import DESCRIBE_QUORUM_SCHEMA
from .views import LEADER_CHANGE


def leader_claims(ops: DataFrame, records: DataFrame, acks: DataFrame | None = None) -> DataFrame:
    """Evidence "leader L led epoch E" from the history: LeaderChange records in ok reads,
    ok describe-quorum answers (their LeaderId, and the answering node's own id
    when it differs), and ok appends (``acks``: the answering node led the epoch the
    ack names). Columns ``run, epoch, leader``; leaders that are not non-negative
    ints are dropped."""
    c = F.col
    lc = (records.where(c("rtype") == LEADER_CHANGE)
          .select("run", "epoch", F.expr("try_cast(get_json_object(payload, '$.LeaderId') as bigint)")
                  .alias("leader")))
    # every expression is guarded by the filter's own test: the optimizer may move the
    # claim filters below it, and a regex over every op's node costs seconds
    is_dq = (c("f") == "describe-quorum") & (c("type") == "ok")
    v = F.when(is_dq, F.from_json("value", DESCRIBE_QUORUM_SCHEMA))
    answering = F.when(is_dq, F.expr("try_cast(nullif(regexp_extract(node, '(\\\\d+)$', 1), '') as bigint)"))
    dq = (ops.where(is_dq).select("run", v.alias("v"), answering.alias("answering"))
          .select("run", c("v.LeaderEpoch").alias("epoch"),
                  F.explode(F.array(c("v.LeaderId"), F.when(c("answering") != c("v.LeaderId"), c("answering"))))
                  .alias("leader")))
    claims = lc.unionByName(dq)
    if acks is not None:
        claims = claims.unionByName(acks.select(
            "run", c("epoch").cast("bigint").alias("epoch"),
            F.expr("try_cast(nullif(regexp_extract(node, '(\\d+)$', 1), '') as bigint)").alias("leader")))
    return claims.where(c("epoch").isNotNull() & c("leader").isNotNull() & (c("leader") >= 0))


def election_safety(claims: DataFrame) -> DataFrame:
    """Group the claims (history and node logs) by (run, epoch): two or more distinct leaders
    is an anomaly. Returns the anomalies: ``run, epoch, leaders`` (sorted)."""
    per_epoch = claims.groupBy("run", "epoch").agg(F.array_sort(F.collect_set("leader")).alias("leaders"))
    return per_epoch.where(F.size("leaders") > 1)
