"""Many small DataFrames brought to the driver in one Spark job.

The analysis ends in a dozen small results (the anomaly tables, per-run
stats, per-run lost-write facts, linearizability by key). Collecting each
on its own costs a job, and its stages, per result; on a small store that
fixed cost is most of the run. :func:`collect_all` instead unions them,
each row as its table's name and its JSON text, and collects once; each
table is then rebuilt as an Arrow table typed by its Spark schema, so it
writes to Parquet with the column types a Spark write would give.
"""
from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema


def arrow_schema(df: DataFrame) -> pa.Schema:
    """The Arrow schema of ``df``'s Spark schema (longs as int64, arrays as lists...)."""
    return to_arrow_schema(df.schema)


def collect_all(tables: dict[str, DataFrame]) -> dict[str, pa.Table]:
    """Run every DataFrame of ``tables`` in one job; returns ``{name: Arrow table}``.

    Each result has ``df``'s columns in order, typed by ``df``'s schema
    (:func:`arrow_schema`); nested structs and arrays as Arrow's. Raises only
    for Spark failures. Meant for small results: every row comes to the
    driver.
    """
    if not tables:
        return {}
    parts = [df.select(F.lit(name).alias("_t"), F.to_json(F.struct(*df.columns)).alias("_j"))
             for name, df in tables.items()]
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    rows: dict[str, list[dict]] = {name: [] for name in tables}
    for r in union.collect():
        rows[r["_t"]].append(json.loads(r["_j"]))
    return {name: pa.Table.from_pylist(rows[name], schema=arrow_schema(df)) for name, df in tables.items()}
