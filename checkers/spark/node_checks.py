"""Checks that need the nodes' own logs (``nodes/<node>/``): divergence, and the
node-log evidence for election safety. They run per run on the executors,
which read the node data with the run's target's reader (``RunInfo.target.node_data``,
history/node_data.py), so the store must be on a filesystem the executors see."""
from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from history import store
from history.node_data import NodeDataReader

from .runs import RunInfo


def final_node_hws(ops: DataFrame) -> dict[int, dict[str, int]]:
    """Per run, each node's high watermark from its last ok read with ``final: true``
    and ``linearizable: false`` (checkers.divergence.Divergence: both flags exactly so,
    a missing one does not count), the first source of a node's high watermark in the
    divergence check; ``ops``: the parsed ops (ingest.parse_ops), whose ``final`` and
    ``linearizable`` are as the history has them (null when absent). A null high
    watermark is kept: the node's own checkpoint is then used, as by the Python checker."""
    c = F.col
    w = Window.partitionBy("run", "node").orderBy(c("index").desc())
    rows = (ops.where(c("nrec").isNotNull() & c("node").isNotNull()
                      & F.coalesce(c("final") == F.lit(True), F.lit(False))
                      & F.coalesce(c("linearizable") == F.lit(False), F.lit(False)))
            .withColumn("k", F.row_number().over(w)).where(c("k") == 1)
            .select("run", "node", "high_watermark").collect())
    out: dict[int, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r["run"], {})[r["node"]] = r["high_watermark"]
    return out


def _check_one(item: tuple[int, str, str, NodeDataReader]) -> tuple[int, str]:
    """Executor side: divergence and LeaderChange claims of one run's node logs, as JSON.
    ``item``: (run id, its ``nodes/`` folder, its final high watermarks as JSON, the reader
    of its target's node data)."""
    from checkers.divergence import check_divergence
    from checkers.reads import LEADER_CHANGE, is_int
    from history.node_data import read_nodes

    run_id, nodes_dir, hws_json, reader = item
    hws = json.loads(hws_json)
    try:
        nodes = read_nodes(nodes_dir, reader) or None
    except Exception as e:   # unreadable node data: no node evidence, not a crash
        return run_id, json.dumps({"error": f"{nodes_dir}: {e}", "divergence": None, "claims": []})
    history = [{"index": i, "type": "ok", "f": "read", "node": n,
                "value": {"final": True, "linearizable": False, "high_watermark": hw}}
               for i, (n, hw) in enumerate(sorted(hws.items()))]
    div = check_divergence(history, nodes)
    claims = []
    for name, data in sorted((nodes or {}).items()):
        for _offset, epoch, rtype, payload in data.records:
            if rtype == LEADER_CHANGE and isinstance(payload, dict):
                leader = payload.get("LeaderId")
                if is_int(leader) and leader >= 0:
                    claims.append((epoch, leader))
    return run_id, json.dumps({"divergence": div, "claims": sorted(set(claims)), "error": None},
                              default=str)


def node_checks(spark: SparkSession, runs: list[RunInfo], hws: dict[int, dict[str, int]]
                ) -> dict[int, dict]:
    """Run divergence (checkers.divergence) on every run with node data, in parallel.

    Returns ``{run_id: {"divergence": result dict, "claims": [[epoch,
    leader]], "error"}}`` for runs with node data (``RunInfo.has_nodes``, read by
    ``RunInfo.target.node_data``); runs without are absent (their divergence verdict is
    "unknown", as in the single-process check).
    """
    items = [(r.run_id, str(store.nodes_dir(r.dir)), json.dumps(hws.get(r.run_id, {})),
              r.target.node_data)
             for r in runs if r.has_nodes]
    if not items:
        return {}
    rdd = spark.sparkContext.parallelize(items, min(len(items), 64))
    return {run_id: json.loads(text) for run_id, text in rdd.map(_check_one).collect()}
