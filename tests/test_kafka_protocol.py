"""Kafka wire primitives (targets/kafka/protocol.py) and the DescribeQuorum codec and client
(targets/kafka/describe_quorum.py), against byte vectors written out by hand from the
message schemas (DescribeQuorumResponse.json etc.) and a scripted fake server."""
from __future__ import annotations

import asyncio
import random
import re
import struct

import pytest

from targets.kafka import describe_quorum as dq
from targets.kafka.protocol import (FrameDecoder, KafkaProtocolError, Reader, Writer, decode_api_versions_response,
                                    decode_response_header, encode_api_versions_request, encode_request_header,
                                    error_name, frame, read_frame, uuid_str)

H = bytes.fromhex


# -- primitives ---------------------------------------------------------------------

@pytest.mark.parametrize("method,value,hexbytes", [
    ("int8", -1, "ff"), ("int8", 127, "7f"),
    ("int16", 1, "0001"), ("int16", -2, "fffe"),
    ("uint16", 65535, "ffff"), ("uint16", 19111, "4aa7"),
    ("int32", -2, "fffffffe"), ("int32", 0x01020304, "01020304"),
    ("int64", 1 << 40, "0000010000000000"), ("int64", -1, "ffffffffffffffff"),
    ("uvarint", 0, "00"), ("uvarint", 1, "01"), ("uvarint", 127, "7f"), ("uvarint", 128, "8001"),
    ("uvarint", 300, "ac02"), ("uvarint", 16384, "808001"), ("uvarint", 2**32 - 1, "ffffffff0f"),
    ("string", "ab", "00026162"), ("string", None, "ffff"), ("string", "", "0000"),
    ("compact_string", "abc", "04616263"), ("compact_string", None, "00"), ("compact_string", "", "01"),
    ("compact_string", "ü", "03c3bc"),
])
def test_primitive_known_bytes_and_round_trip(method, value, hexbytes):
    assert getattr(Writer(), method)(value).bytes() == H(hexbytes)
    r = Reader(H(hexbytes))
    got = r.compact_string(nullable=True) if method == "compact_string" else getattr(r, method)()
    assert got == value
    r.expect_end()


def test_uvarint_round_trip_random():
    rng = random.Random(7)
    values = [rng.randrange(0, 2**32) for _ in range(500)] + [2**k for k in range(32)]
    w = Writer()
    for v in values:
        w.uvarint(v)
    r = Reader(w.bytes())
    assert [r.uvarint() for _ in values] == values
    r.expect_end()
    with pytest.raises(ValueError):
        Writer().uvarint(2**32)


def test_compact_array_uuid_and_tagged_fields():
    w = Writer().compact_array([1, 2], lambda w, v: w.int32(v)).compact_array(None, lambda w, v: None)
    assert w.bytes() == H("03" "00000001" "00000002" "00")
    r = Reader(w.bytes())
    assert r.compact_array(lambda r: r.int32()) == [1, 2]
    assert r.compact_array(lambda r: r.int32(), nullable=True) is None
    assert Writer().uuid(None).bytes() == bytes(16)
    assert uuid_str(bytes(16)) is None
    assert uuid_str(bytes(range(16))) == "AAECAwQFBgcICQoLDA0ODw"      # Kafka's Uuid.toString form
    tagged = Writer().tagged_fields({5: b"ab", 0: b"\x01"}).bytes()
    assert tagged == H("02" "00" "01" "01" "05" "02" "6162")            # ascending tags
    assert Reader(tagged).tagged_fields() == {0: b"\x01", 5: b"ab"}
    assert Writer().tagged_fields().bytes() == H("00")


def test_headers_known_bytes():
    assert encode_request_header(55, 2, 7, "kc", 2) == H("0037" "0002" "00000007" "0002" "6b63" "00")
    assert encode_request_header(18, 0, 1, None, 1) == H("0012" "0000" "00000001" "ffff")
    assert decode_response_header(Reader(H("0000002a")), 0) == 42
    r = Reader(H("0000002a" "01" "03" "01" "ff"))                      # v1 with an unknown tag 3
    assert decode_response_header(r, 1) == 42
    r.expect_end()


@pytest.mark.parametrize("data,read,message", [
    (H("0001"), lambda r: r.int32("LeaderId"), "truncated LeaderId: needs 4 bytes, 2 left at byte 0"),
    (H("8080"), lambda r: r.uvarint("count"), "truncated count: varint ends after 2 bytes"),
    (H("ffffffffff01"), lambda r: r.uvarint("count"), "count: varint longer than 5 bytes"),
    (H("ffffffff1f"), lambda r: r.uvarint("count"), "count: varint exceeds 32 bits"),
    (H("00"), lambda r: r.compact_string("TopicName"), "TopicName: null where the schema does not allow it"),
    (H("03ff61"), lambda r: r.compact_string("Host"), "Host: invalid UTF-8"),
    (H("0a61"), lambda r: r.compact_string("Host"), "truncated Host: needs 9 bytes, 1 left"),
    (H("fffe"), lambda r: r.string("ClientId"), "ClientId: invalid length -2"),
    (H("0900"), lambda r: r.compact_array(lambda r: r.int32(), "Voters"), "Voters: count 8 exceeds the 1 bytes left"),
    (H("000000ff"), lambda r: r.array(lambda r: r.int16(), "ApiKeys"), "ApiKeys: invalid count 255"),
    (H("020101000101"), lambda r: r.tagged_fields(), "tagged fields: duplicate tag 1"),
    (H("00ff"), lambda r: (r.tagged_fields(), r.expect_end()), "1 unexpected trailing bytes"),
])
def test_malformed_primitives_name_the_problem(data, read, message):
    with pytest.raises(KafkaProtocolError, match=re.escape(message)):
        read(Reader(data))
    with pytest.raises(KafkaProtocolError, match="^Ctx: .* at byte \\d+ of \\d+$"):
        read(Reader(data, context="Ctx"))


def test_frame_decoder_and_read_frame():
    d = FrameDecoder(max_bytes=10)
    stream = frame(b"abc") + frame(b"") + frame(b"xyz0123456")
    got = [f for i in range(len(stream)) for f in d.feed(stream[i:i + 1])]     # byte by byte
    assert got == [b"abc", b"", b"xyz0123456"] and d.pending() == 0
    assert FrameDecoder().feed(stream) == got
    with pytest.raises(KafkaProtocolError, match="frame size 11 outside 0..10"):
        FrameDecoder(max_bytes=10).feed(frame(b"x" * 11))
    with pytest.raises(KafkaProtocolError, match="frame size -1"):
        FrameDecoder().feed(H("ffffffff"))

    async def read(data: bytes) -> bytes:
        r = asyncio.StreamReader()
        r.feed_data(data)
        r.feed_eof()
        return await read_frame(r)
    assert asyncio.run(read(frame(b"hello") + b"more")) == b"hello"
    with pytest.raises(KafkaProtocolError, match="truncated frame: connection closed after 2 of 5 bytes"):
        asyncio.run(read(frame(b"hello")[:6]))
    with pytest.raises(KafkaProtocolError, match="after 2 of 4 frame-size bytes"):
        asyncio.run(read(b"\x00\x00"))
    with pytest.raises(ConnectionResetError):
        asyncio.run(read(b""))


# -- ApiVersions --------------------------------------------------------------------

def test_api_versions_request_bytes():
    assert encode_api_versions_request(0, 1, "kc") == H("0012" "0000" "00000001" "0002" "6b63")
    assert encode_api_versions_request(3, 2, "kc", ("a", "1")) == H(
        "0012" "0003" "00000002" "0002" "6b63" "00"        # header v2
        "02" "61" "02" "31" "00")                          # ClientSoftwareName/Version, tags
    with pytest.raises(ValueError):
        encode_api_versions_request(5, 1)


def test_api_versions_response_v3_and_unsupported_v0():
    v3 = H("00000009"                                      # header v0 (always, for ApiVersions)
           "0000" "03"                                     # ErrorCode, 2 ApiKeys
           "0012" "0000" "0004" "00"                       # ApiVersions 0-4
           "0037" "0000" "0001" "00"                       # DescribeQuorum 0-1
           "00000000"                                      # ThrottleTimeMs
           "01" "01" "08" "0000000000000005")              # tag 1 FinalizedFeaturesEpoch (kept raw)
    r = decode_api_versions_response(v3, 3)
    assert (r.correlation_id, r.error_code, r.version) == (9, 0, 3)
    assert r.api_keys == {18: (0, 4), 55: (0, 1)} and r.tagged == {1: H("0000000000000005")}
    # a newer request than the server knows: UNSUPPORTED_VERSION, body in v0 form
    v0 = H("00000001" "0023" "00000001" "0012" "0000" "0003")
    r = decode_api_versions_response(v0, 4)
    assert (r.error_code, r.version, r.api_keys) == (35, 0, {18: (0, 3)})
    with pytest.raises(KafkaProtocolError, match=r"ApiVersionsResponse v3: truncated ThrottleTimeMs"):
        decode_api_versions_response(v3[:-15], 3)


# -- DescribeQuorum -----------------------------------------------------------------

TOPIC_HEX = "13" + b"__cluster_metadata".hex()

DQ_V2 = H(
    "00000007" "00"                    # header v1: CorrelationId 7, no tags
    "0000" "00"                        # ErrorCode 0, ErrorMessage null
    "02" + TOPIC_HEX +                 # 1 topic
    "02"                               # 1 partition
    "00000000" "0000" "00"             # PartitionIndex 0, ErrorCode 0, ErrorMessage null
    "00000002" "00000003"              # LeaderId 2, LeaderEpoch 3
    "000000000000001e"                 # HighWatermark 30
    "03"                               # 2 CurrentVoters
    "00000001" "000102030405060708090a0b0c0d0e0f" "000000000000001e"
    "000001a2077bf15c" "000001a2077beda0" "00"
    "00000002" "00000000000000000000000000000000" "000000000000001d"
    "ffffffffffffffff" "ffffffffffffffff" "00"
    "02"                               # 1 Observer
    "00000004" "0f0e0d0c0b0a09080706050403020100" "0000000000000010"
    "000001a2077bf15c" "000001a2077beda0" "00"
    "00"                               # PartitionData tags
    "00"                               # TopicData tags
    "02"                               # 1 Node
    "00000001" "02"                    # NodeId 1, 1 Listener
    "0b" + b"CONTROLLER".hex() + "0a" + b"127.0.0.1".hex() + "4aa7" "00"
    "00"                               # Node tags
    "01" "05" "02" "abcd")             # top-level: unknown tag 5 (skipped)

DQ_V0 = H(
    "0000000b" "00" "0000" "02" + TOPIC_HEX + "02" "00000000" "0000"
    "00000001" "00000001" "0000000000000042"
    "02" "00000001" "0000000000000042" "00"
    "01"                               # no Observers
    "00" "00" "00")

DQ_V1 = H(
    "00000003" "00" "0000" "02" + TOPIC_HEX + "02" "00000000" "0000" "00000001" "00000005"
    "0000000000000009" "02" "00000001" "0000000000000009" "000001a2077bf15c" "ffffffffffffffff" "00"
    "01" "00" "00" "00")


def test_describe_quorum_request_bytes():
    body = "02" + TOPIC_HEX + "02" "00000000" "00" "00" "00"
    assert dq.encode_describe_quorum_request(2, 7, "kc") == H("0037" "0002" "00000007" "0002" "6b63" "00" + body)
    assert dq.encode_describe_quorum_request(0, 7, "kc")[4:] == dq.encode_describe_quorum_request(2, 7, "kc")[4:]


def test_describe_quorum_v2_response_decodes():
    resp = dq.decode_describe_quorum_response(DQ_V2, 2)
    assert (resp.correlation_id, resp.error_code, resp.error_message) == (7, 0, None)
    s = resp.sample()
    assert (s.leader_id, s.leader_epoch, s.high_watermark, s.version) == (2, 3, 30, 2)
    assert s.voters == (dq.ReplicaState(1, "AAECAwQFBgcICQoLDA0ODw", 30, 1795421892956, 1795421892000),
                        dq.ReplicaState(2, None, 29, -1, -1))
    assert s.observers == (dq.ReplicaState(4, uuid_str(bytes(range(15, -1, -1))), 16, 1795421892956,
                                           1795421892000),)
    assert s.nodes == {1: (dq.Listener("CONTROLLER", "127.0.0.1", 19111),)}
    body = s.to_body()
    assert body["LeaderEpoch"] == 3 and body["CurrentVoters"][1] == {
        "ReplicaId": 2, "ReplicaDirectoryId": None, "LogEndOffset": 29, "LastFetchTimestamp": -1,
        "LastCaughtUpTimestamp": -1}
    assert body["Nodes"] == [{"NodeId": 1, "Listeners": [{"Name": "CONTROLLER", "Host": "127.0.0.1", "Port": 19111}]}]


def test_describe_quorum_v0_response_decodes():
    s = dq.decode_describe_quorum_response(DQ_V0, 0).sample()
    assert (s.leader_id, s.leader_epoch, s.high_watermark, s.nodes) == (1, 1, 0x42, None)
    assert s.voters == (dq.ReplicaState(1, None, 0x42, -1, -1),) and s.observers == ()
    assert "Nodes" not in s.to_body()


def test_describe_quorum_v1_response_decodes():
    s = dq.decode_describe_quorum_response(DQ_V1, 1).sample()
    assert s.voters == (dq.ReplicaState(1, None, 9, 1795421892956, -1),) and s.leader_epoch == 5


def test_describe_quorum_error_answers():
    msg = b"not leader"
    not_leader = H("00000007" "00" "0000" "00" "02" + TOPIC_HEX + "02" "00000000" "0006"
                   + "0b" + msg.hex() + "00000000" "00000000" "0000000000000000" "01" "01" "00" "00" "01" "00")
    with pytest.raises(dq.KafkaDefiniteError) as ei:
        dq.decode_describe_quorum_response(not_leader, 2).sample()
    e = ei.value
    assert (e.code, e.error_code, e.leader_id, e.leader_epoch) == ("NOT_LEADER_OR_FOLLOWER", 6, None, None)
    assert "not leader" in str(e)
    unknown = not_leader.replace(H("0006"), H("0003"), 1)
    with pytest.raises(dq.KafkaDefiniteError, match="^UNKNOWN_TOPIC_OR_PARTITION"):
        dq.decode_describe_quorum_response(unknown, 2).sample()
    top = H("00000007" "00" "001f" "05" "6e6f7065" "01" "01" "00")     # CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(dq.KafkaDefiniteError, match="^CLUSTER_AUTHORIZATION_FAILED: nope"):
        dq.decode_describe_quorum_response(top, 2).sample()
    with pytest.raises(KafkaProtocolError, match="no partition __cluster_metadata-1"):
        dq.decode_describe_quorum_response(DQ_V2, 2).sample(partition=1)
    assert error_name(6) == "NOT_LEADER_OR_FOLLOWER" and error_name(9999) == "UNKNOWN_ERROR_CODE_9999"


def test_every_truncation_of_a_response_raises_protocol_error():
    for n in range(len(DQ_V2)):
        with pytest.raises(KafkaProtocolError, match=r"^DescribeQuorumResponse v2: .* at byte \d+ of " + str(n)):
            dq.decode_describe_quorum_response(DQ_V2[:n], 2)
    for n in range(len(DQ_V0)):
        with pytest.raises(KafkaProtocolError):
            dq.decode_describe_quorum_response(DQ_V0[:n], 0)


def test_malformed_response_names_the_field():
    leo_at = DQ_V2.index(bytes(range(16))) + 16              # first voter's LogEndOffset
    with pytest.raises(KafkaProtocolError, match="truncated LogEndOffset: needs 8 bytes, 5 left at byte 73 of 78"):
        dq.decode_describe_quorum_response(DQ_V2[:leo_at + 5], 2)
    with pytest.raises(KafkaProtocolError, match="2 unexpected trailing bytes"):
        dq.decode_describe_quorum_response(DQ_V2 + b"\x00\x00", 2)
    with pytest.raises(KafkaProtocolError, match="TopicName: null"):
        dq.decode_describe_quorum_response(DQ_V2.replace(H(TOPIC_HEX), H("00"), 1), 2)
    # decoding v2 bytes as v1 misreads the layout and must fail loudly, not silently
    with pytest.raises(KafkaProtocolError):
        dq.decode_describe_quorum_response(DQ_V2, 1)


def test_pick_version():
    assert dq.pick_version((0, 2), (0, 1), "DescribeQuorum") == 1
    assert dq.pick_version((0, 2), (1, 5), "DescribeQuorum") == 2
    with pytest.raises(dq.KafkaDefiniteError, match="UNSUPPORTED_VERSION: DescribeQuorum: we speak 0-2"):
        dq.pick_version((0, 2), (3, 4), "DescribeQuorum")
    with pytest.raises(dq.KafkaDefiniteError, match="offers nothing"):
        dq.pick_version((0, 2), None, "DescribeQuorum")


# -- the client against a scripted server ---------------------------------------------

class FakeController:
    """Answers ApiVersions (refusing v4 with a v0 UNSUPPORTED_VERSION answer offering 0-3, as
    Kafka 3.x does) and DescribeQuorum (offering 0-1; DQ_V0 / DQ_V1 bytes), or per ``mode``
    misbehaves once ApiVersions is done: "garbage" (a 2-byte body), "close", "silent"."""

    def __init__(self, mode: str = "ok"):
        self.mode, self.requests, self.connections = mode, [], 0

    async def handle(self, reader, writer):
        self.connections += 1
        try:
            while True:
                payload = await read_frame(reader)
                key, ver, cid = struct.unpack(">hhi", payload[:8])
                self.requests.append((key, ver))
                if key == 18 and ver >= 4:
                    out = struct.pack(">ih", cid, 35) + H("00000001" "0012" "0000" "0003")
                elif key == 18:
                    out = struct.pack(">ih", cid, 0) + H("03" "0012" "0000" "0003" "00"
                                                         "0037" "0000" "0001" "00" "00000000" "00")
                elif self.mode == "silent":
                    continue
                elif self.mode == "close":
                    break
                elif self.mode == "garbage":
                    out = b"\x00\x01"
                else:
                    out = struct.pack(">i", cid) + (DQ_V0 if ver == 0 else DQ_V1)[4:]
                writer.write(frame(out))
                await writer.drain()
        except (ConnectionError, KafkaProtocolError):
            pass
        finally:
            writer.close()


async def _with_fake(mode: str, body):
    fake = FakeController(mode)
    server = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
    async with server:
        return fake, await body(server.sockets[0].getsockname()[1])


def test_client_negotiates_down_and_reuses_the_connection():
    async def body(port):
        c = dq.KafkaQuorumClient("127.0.0.1", port, "ignored-cluster-id", 2000)
        samples = [await c.sample(), await c.sample()]
        out = (samples, await c.describe_quorum(), dict(c.versions))
        await c.close()
        return out
    fake, (samples, body, versions) = asyncio.run(_with_fake("ok", body))
    assert versions == {18: 3, 55: 1}
    assert fake.requests == [(18, 4), (18, 3), (55, 1), (55, 1), (55, 1)] and fake.connections == 1
    assert samples[0].voters == (dq.ReplicaState(1, None, 9, 1795421892956, -1),) and samples[0].version == 1
    assert body["LeaderEpoch"] == 5 and body["CurrentVoters"][0]["LastFetchTimestamp"] == 1795421892956


def test_blocking_describe_quorum():
    async def body(port):
        return await asyncio.to_thread(dq.describe_quorum, "127.0.0.1", port, 2.0)
    fake, s = asyncio.run(_with_fake("ok", body))
    assert (s.leader_id, s.leader_epoch, s.high_watermark) == (1, 5, 9)
    assert fake.requests == [(18, 4), (18, 3), (55, 1)]


@pytest.mark.parametrize("mode,cls,code", [
    ("garbage", dq.KafkaIndefiniteError, "protocol"),
    ("close", dq.KafkaIndefiniteError, "connection"),
    ("silent", dq.KafkaIndefiniteError, "timeout"),
])
@pytest.mark.parametrize("blocking", [False, True])
def test_client_failures(mode, cls, code, blocking):
    async def body(port):
        if blocking:
            call = asyncio.to_thread(dq.describe_quorum, "127.0.0.1", port, 0.5)
        else:
            c = dq.KafkaQuorumClient("127.0.0.1", port, None, 500)
            call = c.sample()
        try:
            await call
        except dq.KafkaClientError as e:
            return e
        finally:
            if not blocking:
                assert c._writer is None          # closed after a failure: the stream is out of step
    _, err = asyncio.run(_with_fake(mode, body))
    assert type(err) is cls and err.code == code and err.error_code is None
    if mode == "silent":
        assert "no answer within 0.5s" in str(err)
    if mode == "garbage":
        assert isinstance(err.__cause__, KafkaProtocolError)
        assert "DescribeQuorumResponse v1: truncated response header CorrelationId" in str(err)


def test_connection_refused_is_definite():
    import socket
    with socket.socket() as s:                      # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(dq.KafkaDefiniteError, match="nothing was sent") as ei:
        dq.describe_quorum("127.0.0.1", port, 1.0)
    assert ei.value.code == "connection"

    async def main():
        with pytest.raises(dq.KafkaDefiniteError, match="nothing was sent"):
            await dq.KafkaQuorumClient("127.0.0.1", port, None, 1000).sample()
    asyncio.run(main())


def test_cancelled_sample_drops_the_connection():
    async def body(port):
        c = dq.KafkaQuorumClient("127.0.0.1", port, None, 5000)
        task = asyncio.create_task(c.sample())
        await asyncio.sleep(0.3)                        # ApiVersions done, DescribeQuorum unanswered
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return c._writer, c.versions
    fake, (writer, versions) = asyncio.run(_with_fake("silent", body))
    assert writer is None and versions == {} and fake.requests[-1] == (55, 1)
