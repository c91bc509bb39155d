"""Tests for targets/kafka: Kafka's RecordBatch v2 reader and the __cluster_metadata decoder.

The fixture ``tests/data/kafka/metadata-run`` is a real data dir (segment,
bootstrap snapshot, quorum-state, meta.properties) written by Kafka 4.3.1 in
KRaft combined mode, formatted ``--standalone``: topics t-1 and t-2 created,
t-1 deleted, then SIGTERM.
"""
import gzip
import json
import re
import shutil
import struct
from pathlib import Path

import pytest

from checkers.election_safety import check_election_safety
from history.node_data import NodeData
from targets.kafka.metadata_log import read_metadata_dir, read_metadata_log
from targets.kafka.metadata_records import decode_metadata_value
from targets.kafka.record_batch import (CorruptBatchError, UnsupportedCodecError, crc32c,
                                        read_batch_file, scan_batches)

FIXTURE = Path(__file__).parent / "data" / "kafka" / "metadata-run"
SEGMENT = "__cluster_metadata-0/00000000000000000000.log"

# Offsets and types as printed by Kafka 4.3.1's own decoder, verbatim labels:
#   java -cp '/tmp/kpom/libs/*' org.apache.kafka.tools.DumpLogSegments \
#       --cluster-metadata-decoder --files __cluster_metadata-0/00000000000000000000.log
# (control records print as "LeaderChange:", "KRaftVersion", "KRaftVoters"; metadata
# records as payload {"type": "TOPIC_RECORD", ...}). Every batch had partitionLeaderEpoch 1.
DUMP_TYPES = [
    (0, "LeaderChange"), (1, "KRaftVersion"), (2, "KRaftVoters"), (3, "BEGIN_TRANSACTION_RECORD"),
    (4, "FEATURE_LEVEL_RECORD"), (5, "FEATURE_LEVEL_RECORD"), (6, "FEATURE_LEVEL_RECORD"),
    (7, "FEATURE_LEVEL_RECORD"), (8, "FEATURE_LEVEL_RECORD"), (9, "FEATURE_LEVEL_RECORD"),
    (10, "CONFIG_RECORD"), (11, "END_TRANSACTION_RECORD"), (12, "REGISTER_CONTROLLER_RECORD"),
    (13, "NO_OP_RECORD"), (14, "REGISTER_BROKER_RECORD"), (15, "BROKER_REGISTRATION_CHANGE_RECORD"),
    (16, "NO_OP_RECORD"), (17, "BROKER_REGISTRATION_CHANGE_RECORD")] + \
    [(o, "NO_OP_RECORD") for o in range(18, 27)] + [
    (27, "TOPIC_RECORD"), (28, "PARTITION_RECORD"), (29, "NO_OP_RECORD"), (30, "NO_OP_RECORD"),
    (31, "NO_OP_RECORD"), (32, "TOPIC_RECORD"), (33, "PARTITION_RECORD")] + \
    [(o, "NO_OP_RECORD") for o in range(34, 38)] + [
    (38, "REMOVE_TOPIC_RECORD"), (39, "NO_OP_RECORD"), (40, "NO_OP_RECORD"), (41, "NO_OP_RECORD"),
    (42, "BROKER_REGISTRATION_CHANGE_RECORD"), (43, "PARTITION_CHANGE_RECORD"),
    (44, "BROKER_REGISTRATION_CHANGE_RECORD")]
# From the same output: the batches' (baseOffset, position) of the ones the damage tests hit.
T1_ID = "FgZgRAwCRFKeSAVXkZo0rQ"
BATCH_27_POSITION = 2071          # baseOffset 27, size 166: TopicRecord t-1 + PartitionRecord
LAST_BATCH_POSITION, LAST_BATCH_SIZE = 3352, 87       # baseOffset 44


def _dump_label(entry) -> str:
    """Our type in DumpLogSegments' spelling (TopicRecord -> TOPIC_RECORD; control names as is)."""
    if entry.control:
        return entry.type
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", entry.type).upper()


def _copy_fixture(tmp_path) -> Path:
    dst = tmp_path / "data"
    shutil.copytree(FIXTURE, dst)
    return dst


# --- a minimal RecordBatch v2 writer, for cases Kafka did not produce here -------------------

def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _varint(n: int) -> bytes:
    return _uvarint((n << 1) ^ (n >> 63))


def _bytes_field(b) -> bytes:
    return _varint(-1) if b is None else _varint(len(b)) + b


def _batch(base_offset: int, epoch: int, records, control=False, codec=0) -> bytes:
    """A RecordBatch v2 holding ``records`` [(key, value)], with a valid CRC-32C."""
    body = b""
    for i, (key, value) in enumerate(records):
        rec = b"\x00" + _varint(0) + _varint(i) + _bytes_field(key) + _bytes_field(value) + _varint(0)
        body += _varint(len(rec)) + rec
    if codec == 1:
        body = gzip.compress(body)
    attrs = codec | (0x20 if control else 0)
    after_crc = struct.pack(">hiqqqhii", attrs, len(records) - 1, 1000, 1000, -1, -1, -1, len(records)) + body
    after_len = struct.pack(">ibI", epoch, 2, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base_offset, len(after_len)) + after_len


def _topic_value(name: str) -> bytes:
    """A TopicRecord v0 value: frame 1, apiKey 2, version 0, compact name, uuid, no tags."""
    return b"\x01\x02\x00" + _uvarint(len(name) + 1) + name.encode() + bytes(range(16)) + b"\x00"


# --- the real fixture ------------------------------------------------------------------------

def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_fixture_offsets_epochs_and_types_match_dump_log_segments():
    parsed = read_metadata_dir(FIXTURE)
    assert [(e.offset, _dump_label(e)) for e in parsed.entries] == DUMP_TYPES
    assert {e.epoch for e in parsed.entries} == {1}
    assert parsed.torn is None and parsed.torn_bytes == 0 and parsed.corrupt is None
    assert parsed.notes == []
    assert (parsed.log_start_offset, parsed.log_end_offset) == (0, 45)
    assert parsed.high_watermark is None            # Kafka keeps it in memory only
    assert all(e.decoded for e in parsed.entries)


def test_fixture_topics_in_final_read_shape():
    records = read_metadata_log(FIXTURE)
    assert all(isinstance(r, tuple) and len(r) == 4 for r in records)
    by_offset = {r[0]: r for r in records}
    # values as DumpLogSegments printed them
    assert by_offset[27] == (27, 1, "TopicRecord", {"name": "t-1", "topicId": T1_ID})
    assert by_offset[32] == (32, 1, "TopicRecord", {"name": "t-2", "topicId": "8Szpz9VETwuASLopIYt3Hw"})
    assert by_offset[38] == (38, 1, "RemoveTopicRecord", {"topicId": T1_ID})
    assert by_offset[28][3] == {
        "partitionId": 0, "topicId": T1_ID, "replicas": [1], "isr": [1], "removingReplicas": [],
        "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
        "directories": ["eQp-LCTeQ-ywt1T6lZLfpg"]}
    assert by_offset[4][3] == {"name": "metadata.version", "featureLevel": 30}
    assert by_offset[14][3]["brokerId"] == 1 and by_offset[14][3]["brokerEpoch"] == 14
    assert by_offset[3][3] == {"name": "Bootstrap records"}
    assert by_offset[13][3] == {}
    # LeaderChange in our checkers' shape
    assert by_offset[0] == (0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1], "GrantingVoters": [1]})
    assert by_offset[2][3] == {"version": 0, "voters": [{
        "voterId": 1, "voterDirectoryId": "eQp-LCTeQ-ywt1T6lZLfpg",
        "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 18093}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
    json.dumps([list(r) for r in records])          # the shape is JSON as a read's records are


def test_fixture_quorum_state_meta_and_snapshot():
    parsed = read_metadata_dir(FIXTURE)
    assert parsed.quorum_state["leaderId"] == 1 and parsed.quorum_state["leaderEpoch"] == 1
    assert parsed.quorum_state["votedId"] == -1
    assert (parsed.node_id, parsed.cluster_id, parsed.directory_id) == \
        (1, "UB1uX24CQHiwkU4nSqKHgg", "eQp-LCTeQ-ywt1T6lZLfpg")
    [snap] = parsed.snapshots                      # the bootstrap snapshot written by format
    assert (snap.end_offset, snap.epoch, snap.torn) == (0, 0, None)
    assert [(e.offset, e.type) for e in snap.entries] == [
        (0, "SnapshotHeader"), (1, "KRaftVersion"), (2, "KRaftVoters"), (3, "SnapshotFooter")]
    assert snap.entries[0].payload == {"version": 0, "lastContainedLogTimestamp": 1795421869400}
    # the partition dir itself works too
    assert read_metadata_log(FIXTURE / "__cluster_metadata-0") == read_metadata_log(FIXTURE)


def test_fixture_feeds_the_election_safety_checker():
    nodes = {"c1": NodeData("c1", read_metadata_log(FIXTURE), None)}
    assert check_election_safety([], nodes) == {"valid": True, "anomalies": [], "epochs": 1}


# --- damage ----------------------------------------------------------------------------------

def test_flipped_byte_is_a_corrupt_batch_naming_file_and_offset(tmp_path):
    data = _copy_fixture(tmp_path)
    seg = data / SEGMENT
    buf = bytearray(seg.read_bytes())
    buf[BATCH_27_POSITION + 40] ^= 0xFF              # inside the CRC-covered part of batch 27
    seg.write_bytes(bytes(buf))
    with pytest.raises(CorruptBatchError) as err:
        read_metadata_log(data)
    assert err.value.source == str(seg)
    assert (err.value.position, err.value.base_offset) == (BATCH_27_POSITION, 27)
    assert "00000000000000000000.log: corrupt record batch at byte position 2071 (baseOffset 27): " \
           "CRC-32C mismatch" in str(err.value)
    lenient = read_metadata_dir(data, strict=False)   # stop there instead
    assert [e.offset for e in lenient.entries] == list(range(27))
    assert lenient.corrupt is not None and lenient.torn_bytes == len(buf) - BATCH_27_POSITION


def test_truncated_tail_is_reported_not_raised(tmp_path):
    data = _copy_fixture(tmp_path)
    seg = data / SEGMENT
    seg.write_bytes(seg.read_bytes()[:-30])
    parsed = read_metadata_dir(data)
    assert [e.offset for e in parsed.entries] == list(range(44))
    assert parsed.torn.position == LAST_BATCH_POSITION
    assert parsed.torn.size_bytes == parsed.torn_bytes == LAST_BATCH_SIZE - 30
    assert parsed.torn.reason == "batch extends past end of data"
    assert parsed.segments[0].valid_bytes == LAST_BATCH_POSITION
    seg.write_bytes(seg.read_bytes()[:LAST_BATCH_POSITION + 5])          # a partial header
    assert read_metadata_dir(data).torn.reason == "partial batch header"
    seg.write_bytes(seg.read_bytes()[:LAST_BATCH_POSITION] + bytes(100))  # zero-filled
    assert read_metadata_dir(data).torn.reason == "zero-filled tail"


def test_segments_are_read_in_base_offset_order(tmp_path):
    data = _copy_fixture(tmp_path)
    seg = data / SEGMENT
    buf = seg.read_bytes()
    seg.write_bytes(buf[:BATCH_27_POSITION])
    (seg.parent / "00000000000000000027.log").write_bytes(buf[BATCH_27_POSITION:])
    parsed = read_metadata_dir(data)
    assert [(s.base_offset, s.batches) for s in parsed.segments] == [(0, 17), (27, 15)]
    assert read_metadata_log(data) == read_metadata_log(FIXTURE) and parsed.notes == []
    seg.write_bytes(buf[:BATCH_27_POSITION - 10])                      # torn before a later segment
    parsed = read_metadata_dir(data)
    assert parsed.entries[-1].offset == 25 and parsed.torn is not None
    assert parsed.torn_bytes == 62 + len(buf) - BATCH_27_POSITION
    assert "torn tail before 1 later segment(s)" in parsed.notes[0]


# --- synthetic batches -----------------------------------------------------------------------

def test_unknown_record_types_pass_through(tmp_path):
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    unknown_key = b"\x01\x63\x00" + b"abc"               # apiKey 99
    future = b"\x01\x02\x07" + b"xyz"                    # TopicRecord version 7
    broken = b"\x01\x02\x00\x09ab"                       # TopicRecord whose name runs past the end
    (part / "00000000000000000000.log").write_bytes(
        _batch(0, 3, [(None, _topic_value("x")), (None, unknown_key), (None, future), (None, broken)])
        + _batch(4, 3, [(struct.pack(">hh", 0, 9), b"\x00\x00"), (struct.pack(">hh", 0, 1), b"\x00" * 6)],
                 control=True))
    entries = read_metadata_dir(tmp_path).entries
    assert [(e.offset, e.epoch, e.type, e.decoded) for e in entries] == [
        (0, 3, "TopicRecord", True), (1, 3, "UnknownMetadataRecord(apiKey=99)", False),
        (2, 3, "TopicRecord", False), (3, 3, "TopicRecord", False),
        (4, 3, "UnknownControlRecord(type=9)", False), (5, 3, "Commit", False)]
    assert entries[0].payload == {"name": "x", "topicId": "AAECAwQFBgcICQoLDA0ODw"}
    assert entries[1].payload == {"apiKey": 99, "version": 0, "valueBytes": 6}
    assert "version 7 is above 0" in entries[2].payload["error"]
    assert entries[3].payload["valueBytes"] == 6 and "bytes wanted" in entries[3].payload["error"]
    assert entries[4].payload == {"controlType": 9, "version": 0, "valueBytes": 2}
    assert decode_metadata_value(b"").decoded is False


def test_gzip_batch_and_unsupported_codecs():
    buf = _batch(10, 2, [(None, _topic_value("g-1")), (None, _topic_value("g-2"))], codec=1)
    [batch], torn = scan_batches(buf)
    assert torn is None and batch.compression == "gzip"
    assert [r.offset for r in batch.records] == [10, 11]
    assert decode_metadata_value(batch.records[1].value).payload["name"] == "g-2"
    for codec, name in ((2, "snappy"), (3, "lz4"), (4, "zstd")):
        with pytest.raises(UnsupportedCodecError, match=f"compressed with {name}, which is not supported"):
            scan_batches(_batch(0, 1, [(None, b"x")]) + _batch(1, 1, [(None, b"x")], codec=codec), "seg.log")


def test_magic_other_than_2_is_reported(tmp_path):
    buf = bytearray(_batch(0, 1, [(None, _topic_value("m"))]))
    buf[16] = 1
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(buf))
    with pytest.raises(CorruptBatchError, match="magic 1, only magic 2"):
        read_batch_file(path)
