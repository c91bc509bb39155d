"""Declared Spark schemas for ``history.jsonl`` and the op values the checks read.

A history line is read with :data:`HISTORY_SCHEMA`, never an inferred one.
``value`` is kept as its raw JSON text (Spark's JSON reader gives the text
of an object, array or number read into a string column) and parsed per
op kind with the value schemas below, so one history can mix value shapes.
A line that is not JSON, or whose fields do not fit the schema, lands in
``_corrupt`` (the reader's corrupt-record column).
"""
from __future__ import annotations

from pyspark.sql import types as T

CORRUPT = "_corrupt"

#: One history op (DEVELOPERS.md, "History"); ``process`` is the text of an
#: int or "nemesis", ``value`` the raw JSON text of the value.
HISTORY_SCHEMA = T.StructType([
    T.StructField("index", T.LongType()),
    T.StructField("time", T.LongType()),
    T.StructField("type", T.StringType()),
    T.StructField("process", T.StringType()),
    T.StructField("f", T.StringType()),
    T.StructField("value", T.StringType()),
    T.StructField("node", T.StringType()),
    T.StructField("error", T.StringType()),
    T.StructField(CORRUPT, T.StringType()),
])

#: The value of an ok append: ``{"value": V, "offset": O, "epoch": E}`` (V as JSON text).
ACK_SCHEMA = T.StructType([
    T.StructField("value", T.StringType()),
    T.StructField("offset", T.LongType()),
    T.StructField("epoch", T.LongType()),
])

#: ACK_SCHEMA with the value as a long: the fast path for an int value (every appended
#: value), which then needs no JSON text. Any other value parses as null here (the
#: other fields are kept) and is re-read with ACK_SCHEMA.
ACK_INT_SCHEMA = T.StructType([T.StructField("value", T.LongType())] + ACK_SCHEMA.fields[1:])

#: The value of an ok read; each record is ``[offset, epoch, type, payload]``
#: as JSON texts. ``to`` is present on the pages of a paged final read.
READ_SCHEMA = T.StructType([
    T.StructField("from", T.LongType()),
    T.StructField("to", T.LongType()),
    T.StructField("high_watermark", T.LongType()),
    T.StructField("linearizable", T.BooleanType()),
    T.StructField("final", T.BooleanType()),
    T.StructField("records", T.ArrayType(T.ArrayType(T.StringType()))),
])

#: The value of an ok describe-quorum (the fields election safety reads).
DESCRIBE_QUORUM_SCHEMA = T.StructType([
    T.StructField("LeaderId", T.LongType()),
    T.StructField("LeaderEpoch", T.LongType()),
])

#: A kv op's ``[key, value]`` (both as JSON texts).
KV_SCHEMA = T.ArrayType(T.StringType())
