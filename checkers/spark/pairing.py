"""Jepsen pairing as a Spark job: each completion with its process's invoke."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window


def pair(ops: DataFrame) -> DataFrame:
    """A window over each process's ops in index order puts every op beside the op
    before it. Returns the completions (and the invokes that break pairing):
    ``run, index, client (false for the nemesis), f, ok (the type is ok), time,
    invoke, invoke_time, paired``;
    ``paired`` is false for an invoke while the process has one in flight, or a
    completion whose previous op is not an invoke of the same ``f`` (what
    history.pair_ops refuses). The window carries the type as a
    one-byte code (0 for invoke), not its text: the sort and the lags move
    every op.
    """
    c = F.col
    w = Window.partitionBy("run", "proc").orderBy("index")
    nemesis = c("process") == "nemesis"
    proc = F.when(nemesis, F.lit(-1)).otherwise(c("process").try_cast("bigint"))
    code = F.when(c("type") == "invoke", 0).when(c("type") == "ok", 1).otherwise(2).cast("tinyint")
    seq = (ops.select("run", "index", proc.alias("proc"), (~nemesis).alias("client"), "f", code.alias("t"), "time")
           .select("run", "index", "client", "f", "t", "time",
                   F.lag("index").over(w).alias("invoke"), F.lag("time").over(w).alias("invoke_time"),
                   F.lag("t").over(w).alias("prev"), F.lag("f").over(w).alias("prev_f")))
    ok_pair = (c("prev") == 0) & (c("prev_f") == c("f"))
    return (seq.where((c("t") != 0) | (c("prev") == 0))
            .select("run", "index", "client", "f", (c("t") == 1).alias("ok"), "time", "invoke", "invoke_time",
                    ((c("t") != 0) & F.coalesce(ok_pair, F.lit(False))).alias("paired")))
