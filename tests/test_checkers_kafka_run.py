"""The log checkers on a real Kafka run: the stored run passes, damaged copies of it do not.

The fixture ``tests/data/kafka/run`` is a stored run of Apache Kafka 4.3.1 (3 combined
controller+broker nodes), made with::

    kraft-chaos run --db kafka --workload metadata --kafka-topology combined --nodes 3 \\
        --time-limit 12 --rate 20 --concurrency 4 --nemesis partition,kill \\
        --nemesis-mode serial --nemesis-interval 5 --nemesis-duration 3 --seed 11 \\
        --subnet 10.81.0.0/24 --store /tmp/k14s/store --no-progress

(verdict VALID; 20 acknowledged topic creations; final reads of the 3 controllers'
metadata logs up to high watermark 108). Kept: test.json, history.jsonl, results.json and
each node's ``metadata/meta.properties`` and ``metadata/__cluster_metadata-0/`` (segment,
bootstrap checkpoint, quorum-state, leader-epoch-checkpoint, partition.metadata).

The damage is done to copies in tmp_path, on Kafka's own bytes: a TopicRecord cut out of
one controller's segment (the batch rewritten with one record fewer, its CRC-32C
recomputed, the other records' offsets unchanged) together with its entry in the final
reads, or a topic name changed in one controller's segment. The checkers are run as
``kraft-chaos check`` runs them (``harness.run.check.check_run_dir``, and the CLI itself
for the lost record).
"""
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.check import check_run_dir
from targets.kafka.metadata_log import read_metadata_dir
from targets.kafka.record_batch import BATCH_HEADER_BYTES, LOG_OVERHEAD, crc32c, scan_batches
from workloads.registry import workload_spec

REPO = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "data" / "kafka" / "run"
PARTITION = Path("metadata") / "__cluster_metadata-0"
SEGMENT = PARTITION / "00000000000000000000.log"
NODES = ("n1", "n2", "n3")

# RecordBatch v2 header fields we rewrite (byte positions inside the batch)
_BATCH_LENGTH_AT = 8            # i32
_CRC_AT = 17                    # u32, covers [21, end)
_CRC_START = 21
_RECORDS_COUNT_AT = 57          # i32


# --- reading the fixture's history -----------------------------------------------------------

def _history(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines() if line.strip()]


def _final_reads(history: list[dict]) -> tuple[dict, dict[str, dict]]:
    """(the ok linearizable final read, {node: its ok non-linearizable final read})."""
    lin, per_node = None, {}
    for op in history:
        v = op.get("value")
        if op["type"] == "ok" and op["f"] == "read" and isinstance(v, dict) and v.get("final") is True:
            if v.get("linearizable") is True:
                lin = op
            else:
                per_node[op["node"]] = op
    assert lin is not None, "the fixture has no ok linearizable final read"
    return lin, per_node


def _acks(history: list[dict]) -> dict[int, dict]:
    """{V: the ok append of V} (the metadata workload's acks: ``{"value": V}``, no offset)."""
    return {op["value"]["value"]: op for op in history if op["type"] == "ok" and op["f"] == "append"}


def _acked_record(history: list[dict]) -> tuple[int, int, int, int]:
    """(op index, V, offset O, epoch) of an acknowledged V whose ``[O, epoch, "data", V]`` is in
    the linearizable final read below its high watermark: the middle one of those."""
    lin, _ = _final_reads(history)
    acks = _acks(history)
    hw = lin["value"]["high_watermark"]
    found = [(acks[r[3]]["index"], r[3], r[0], r[1]) for r in lin["value"]["records"]
             if r[2] == "data" and r[3] in acks and r[0] < hw]
    assert len(found) >= 3, found
    return found[len(found) // 2]


def _write_history(run: Path, history: list[dict]) -> None:
    (run / "history.jsonl").write_text(
        "".join(json.dumps(op, separators=(",", ":")) + "\n" for op in history))


# --- rewriting Kafka's segment bytes ---------------------------------------------------------

def _zigzag_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after) of the signed zigzag varint at ``pos``."""
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


def _batch_at(data: bytes, offset: int):
    """The batch of ``data`` holding ``offset`` (an uncompressed one)."""
    batches, torn = scan_batches(data)
    assert torn is None
    (batch,) = [b for b in batches if b.base_offset <= offset <= b.last_offset]
    assert batch.compression == "none", batch
    return batch


def _with_header(batch_bytes: bytearray, records_count: int) -> bytes:
    """``batch_bytes`` with its batchLength, recordsCount and CRC-32C made to fit its contents."""
    struct.pack_into(">i", batch_bytes, _BATCH_LENGTH_AT, len(batch_bytes) - LOG_OVERHEAD)
    struct.pack_into(">i", batch_bytes, _RECORDS_COUNT_AT, records_count)
    struct.pack_into(">I", batch_bytes, _CRC_AT, crc32c(bytes(batch_bytes[_CRC_START:])))
    return bytes(batch_bytes)


def _remove_record(segment: Path, offset: int) -> None:
    """Rewrite ``segment`` with the record at ``offset`` cut out of its batch; the batch keeps its
    baseOffset and lastOffsetDelta and the other records their offsetDelta."""
    data = segment.read_bytes()
    batch = _batch_at(data, offset)
    start, end = batch.position, batch.position + batch.size_bytes
    raw = data[start:end]
    pos, kept, removed = BATCH_HEADER_BYTES, bytearray(raw[:BATCH_HEADER_BYTES]), 0
    while pos < len(raw):
        length, body = _zigzag_varint(raw, pos)
        _ts_delta, p = _zigzag_varint(raw, body + 1)          # after the record's attributes byte
        delta, _ = _zigzag_varint(raw, p)
        if batch.base_offset + delta == offset:
            removed += 1
        else:
            kept += raw[pos:body + length]
        pos = body + length
    assert removed == 1 and pos == len(raw)
    segment.write_bytes(data[:start] + _with_header(kept, batch.records_count - 1) + data[end:])


def _rename_topic(segment: Path, offset: int, old: str, new: str) -> None:
    """Rewrite ``segment`` with the TopicRecord at ``offset`` naming topic ``new`` instead of ``old``
    (same length, so only the batch's CRC-32C changes)."""
    assert len(old) == len(new) and old != new
    data = segment.read_bytes()
    batch = _batch_at(data, offset)
    start, end = batch.position, batch.position + batch.size_bytes
    raw = bytearray(data[start:end])
    needle = bytes([len(old) + 1]) + old.encode()            # a compact string: length + 1, bytes
    at = raw.find(needle, BATCH_HEADER_BYTES)
    assert at > 0 and raw.find(needle, at + 1) < 0, "the name is not once in its batch"
    raw[at + 1:at + 1 + len(new)] = new.encode()
    segment.write_bytes(data[:start] + _with_header(raw, batch.records_count) + data[end:])


# --- the checks ------------------------------------------------------------------------------

@pytest.fixture
def run(tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(FIXTURE, dst)
    return dst


def _entries(run: Path, node: str) -> dict[int, tuple]:
    """{offset: (epoch, type, payload)} of a node's metadata log, read strictly (a batch whose
    CRC-32C does not match raises)."""
    parsed = read_metadata_dir(run / "nodes" / node / "metadata", strict=True)
    assert parsed.torn is None and parsed.corrupt is None and not parsed.notes, parsed.notes
    return {e.offset: (e.epoch, e.type, e.payload) for e in parsed.entries}


def test_fixture_is_a_valid_kafka_run(run):
    results = check_run_dir(run)
    checkers = results["checkers"]
    # a kraft.version 1 run (Kafka's default) is also checked for voter-set safety (KIP-853)
    assert set(checkers) == set(workload_spec("metadata").checkers) | {"membership"}
    assert {name: r["valid"] for name, r in checkers.items()} == {name: True for name in checkers}
    assert results["valid"] is True
    lost = checkers["lost-write"]
    assert lost["acked"] == len(_acks(_history(run))) > 0
    assert lost["unjudged"] == 0 and lost["final_pages"] == 1
    div = checkers["divergence"]
    assert len(div["high_watermarks"]) >= 2 and div["anomalies"] == []
    # the logs read are Kafka's, with our topics in them below the high watermark
    hw = _final_reads(_history(run))[0]["value"]["high_watermark"]
    for node in NODES:
        topics = [p["name"] for o, (_e, t, p) in _entries(run, node).items() if t == "TopicRecord" and o < hw]
        assert len(topics) >= lost["acked"]


def test_record_lost_from_one_controller_and_the_final_reads(run):
    history = _history(run)
    index, value, offset, epoch = _acked_record(history)
    lin, per_node = _final_reads(history)
    node = lin["node"]                    # the leader: its log is the linearizable final read too
    others = sorted(set(NODES) - {node})
    before = _entries(run, node)
    assert before[offset][1] == "TopicRecord" and before[offset][2]["name"] == f"t-{value}"

    _remove_record(run / "nodes" / node / SEGMENT, offset)
    for op in (lin, per_node[node]):
        recs = op["value"]["records"]
        assert [offset, epoch, "data", value] in recs
        recs.remove([offset, epoch, "data", value])
    _write_history(run, history)

    # the segment still reads, strictly, with just that record gone
    after = _entries(run, node)
    assert offset not in after and after == {o: e for o, e in before.items() if o != offset}

    proc = subprocess.run([sys.executable, "-m", "harness", "check", str(run)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "INVALID" in proc.stdout
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is False

    lost = results["checkers"]["lost-write"]
    assert lost["valid"] is False
    assert [(a["op"], a["value"]) for a in lost["anomalies"]] == [(index, value)]

    div = results["checkers"]["divergence"]
    assert div["valid"] is False
    flagged = {tuple(a["nodes"]): a for a in div["anomalies"]}
    assert set(flagged) == {tuple(sorted((node, other))) for other in others}
    for a in flagged.values():
        assert a["offset"] == offset and a["count"] == 1
        assert a["records"][node] is None
        other = next(n for n in a["nodes"] if n != node)
        assert a["records"][other][:3] == [offset, epoch, "TopicRecord"]
        assert a["records"][other][3]["name"] == f"t-{value}"


def test_topic_renamed_in_one_controller(run):
    history = _history(run)
    _index, value, offset, epoch = _acked_record(history)
    lin, _ = _final_reads(history)
    node = next(n for n in NODES if n != lin["node"])   # a follower: the final reads stay as they are
    before = _entries(run, node)
    old = f"t-{value}"
    assert before[offset][1] == "TopicRecord" and before[offset][2]["name"] == old
    names = {p.get("name") for _e, t, p in before.values() if t == "TopicRecord"}
    # one digit changed (same length, no leading zero), to a name no topic of the log has
    new = next(n for i in range(2, len(old)) for d in "0123456789"
               if (n := old[:i] + d + old[i + 1:]) not in names and not (i == 2 and d == "0" and len(old) > 3))

    _rename_topic(run / "nodes" / node / SEGMENT, offset, old, new)
    after = _entries(run, node)
    assert after[offset][2] == {**before[offset][2], "name": new}
    assert {o: e for o, e in after.items() if o != offset} == {o: e for o, e in before.items() if o != offset}

    results = check_run_dir(run)
    assert results["valid"] is False
    assert results["checkers"]["lost-write"]["valid"] is True       # the final reads are untouched
    assert results["checkers"]["lost-write"]["acked"] > 0
    div = results["checkers"]["divergence"]
    assert div["valid"] is False
    flagged = {tuple(a["nodes"]): a for a in div["anomalies"]}
    assert set(flagged) == {tuple(sorted((node, other))) for other in NODES if other != node}
    for a in flagged.values():
        assert a["offset"] == offset and a["count"] == 1 and offset < a["limit"]
        assert a["records"][node][3]["name"] == new
        other = next(n for n in a["nodes"] if n != node)
        assert a["records"][other][3]["name"] == old
