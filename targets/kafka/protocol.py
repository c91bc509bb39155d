"""Kafka wire-protocol primitives, standard library only.

Implements the encodings of the Apache Kafka protocol guide
(https://kafka.apache.org/protocol#protocol_types) as used by the JSON
message schemas in ``clients/src/main/resources/common/message/``:
fixed-width big-endian integers, unsigned varints, classic (int16-length)
and compact (uvarint length+1) strings, compact arrays, UUIDs and tagged
fields (KIP-482), the request header v1/v2 (``RequestHeader.json``), the
response header v0/v1 (``ResponseHeader.json``) and the 4-byte size-prefixed
framing of every request and response; and ApiVersions v0-4
(``ApiVersionsRequest.json`` / ``ApiVersionsResponse.json``, KIP-511), which
every client uses to negotiate the versions of the other APIs.

:class:`Writer` builds bytes; :class:`Reader` parses them and raises
:class:`KafkaProtocolError`, naming the field and byte offset, on anything
truncated or malformed. This module is the bottom layer: it imports only the
standard library.
"""
from __future__ import annotations

import asyncio
import base64
import dataclasses
import struct
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")

#: Largest frame accepted by default (bytes); Kafka's own socket.request.max.bytes is 100 MiB.
MAX_FRAME_BYTES = 100 * 1024 * 1024

#: Kafka error codes (``org.apache.kafka.common.protocol.Errors``) a quorum monitor can meet.
ERROR_NAMES: dict[int, str] = {
    -1: "UNKNOWN_SERVER_ERROR", 0: "NONE", 2: "CORRUPT_MESSAGE", 3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT",
    8: "BROKER_NOT_AVAILABLE", 13: "NETWORK_EXCEPTION", 31: "CLUSTER_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION", 41: "NOT_CONTROLLER", 42: "INVALID_REQUEST",
    56: "KAFKA_STORAGE_ERROR", 74: "FENCED_LEADER_EPOCH", 75: "UNKNOWN_LEADER_EPOCH",
    94: "INCONSISTENT_VOTER_SET", 104: "INCONSISTENT_CLUSTER_ID", 108: "NEW_LEADER_ELECTED",
    116: "UNKNOWN_CONTROLLER_ID", 125: "INVALID_VOTER_KEY", 126: "DUPLICATE_VOTER",
    127: "VOTER_NOT_FOUND",
}
NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, UNSUPPORTED_VERSION = 0, 3, 6, 35


def error_name(code: int) -> str:
    """The Kafka name of error ``code`` (e.g. 6 -> "NOT_LEADER_OR_FOLLOWER"), or
    ``"UNKNOWN_ERROR_CODE_<code>"`` for one not in :data:`ERROR_NAMES`."""
    return ERROR_NAMES.get(code, f"UNKNOWN_ERROR_CODE_{code}")


class KafkaProtocolError(Exception):
    """Bytes that do not follow the Kafka protocol: a truncated or oversized frame,
    a bad length or varint, trailing bytes, a wrong correlation id. The message
    names the field and the byte offset where parsing stopped."""


_I8, _I16, _U16, _I32, _I64 = (struct.Struct(f) for f in (">b", ">h", ">H", ">i", ">q"))


class Writer:
    """Appends Kafka-encoded values to a growing buffer; :meth:`bytes` returns it.

    Every method returns ``self`` so calls chain. Integers out of range raise
    ``struct.error`` / ValueError (a caller bug, not a protocol error).
    """

    def __init__(self) -> None:
        self.buf = bytearray()

    def bytes(self) -> bytes:
        return bytes(self.buf)

    def _put(self, s: struct.Struct, v: int) -> "Writer":
        self.buf += s.pack(v)
        return self

    def int8(self, v: int) -> "Writer": return self._put(_I8, v)
    def int16(self, v: int) -> "Writer": return self._put(_I16, v)
    def uint16(self, v: int) -> "Writer": return self._put(_U16, v)
    def int32(self, v: int) -> "Writer": return self._put(_I32, v)
    def int64(self, v: int) -> "Writer": return self._put(_I64, v)

    def uvarint(self, v: int) -> "Writer":
        """Unsigned varint (7 bits a byte, least significant group first), 0 <= v < 2**32."""
        if not 0 <= v < 1 << 32:
            raise ValueError(f"unsigned varint out of range: {v}")
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)
        return self

    def string(self, s: str | None) -> "Writer":
        """Classic nullable string: int16 byte length (-1 for None), then UTF-8."""
        b = None if s is None else s.encode()
        self.int16(-1 if b is None else len(b))
        self.buf += b or b""
        return self

    def compact_string(self, s: str | None) -> "Writer":
        """Compact (nullable) string: uvarint length+1 (0 for None), then UTF-8."""
        b = None if s is None else s.encode()
        self.uvarint(0 if b is None else len(b) + 1)
        self.buf += b or b""
        return self

    def compact_array(self, items: Iterable[T] | None, each: Callable[["Writer", T], object]) -> "Writer":
        """Compact (nullable) array: uvarint count+1 (0 for None), then ``each(w, item)``."""
        items = None if items is None else list(items)
        self.uvarint(0 if items is None else len(items) + 1)
        for it in items or ():
            each(self, it)
        return self

    def uuid(self, u: bytes | None) -> "Writer":
        """A 16-byte UUID; None writes Kafka's ZERO_UUID (16 zero bytes)."""
        u = bytes(16) if u is None else u
        if len(u) != 16:
            raise ValueError(f"uuid must be 16 bytes, got {len(u)}")
        self.buf += u
        return self

    def tagged_fields(self, fields: dict[int, bytes] | None = None) -> "Writer":
        """Tagged-field section (KIP-482): uvarint count, then per field (ascending tag)
        uvarint tag, uvarint size, raw bytes. None or {} writes the single byte 0."""
        fields = fields or {}
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag).uvarint(len(fields[tag]))
            self.buf += fields[tag]
        return self


class Reader:
    """Reads Kafka-encoded values from ``data``; ``pos`` is the next byte's offset.

    ``context`` prefixes every error message (e.g. "DescribeQuorumResponse v2").
    Each read method takes the field's name, used only in error messages, and
    raises :class:`KafkaProtocolError` when the bytes are short or invalid.
    """

    def __init__(self, data: bytes, context: str = "") -> None:
        self.data, self.pos, self.context = memoryview(bytes(data)), 0, context

    def fail(self, what: str) -> KafkaProtocolError:
        """A :class:`KafkaProtocolError` for ``what`` at the current offset."""
        where = f"{self.context}: " if self.context else ""
        return KafkaProtocolError(f"{where}{what} at byte {self.pos} of {len(self.data)}")

    def remaining(self) -> int:
        """Bytes left to read."""
        return len(self.data) - self.pos

    def take(self, n: int, field: str = "bytes") -> bytes:
        """The next ``n`` raw bytes."""
        if n < 0 or self.remaining() < n:
            raise self.fail(f"truncated {field}: needs {n} bytes, {self.remaining()} left")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def _fixed(self, s: struct.Struct, field: str) -> int:
        return s.unpack(self.take(s.size, field))[0]

    def int8(self, field: str = "int8") -> int: return self._fixed(_I8, field)
    def int16(self, field: str = "int16") -> int: return self._fixed(_I16, field)
    def uint16(self, field: str = "uint16") -> int: return self._fixed(_U16, field)
    def int32(self, field: str = "int32") -> int: return self._fixed(_I32, field)
    def int64(self, field: str = "int64") -> int: return self._fixed(_I64, field)

    def uvarint(self, field: str = "uvarint") -> int:
        """Unsigned varint of at most 5 bytes (32 bits), as Kafka's ByteUtils.readUnsignedVarint."""
        value = 0
        for i in range(5):
            if self.remaining() < 1:
                raise self.fail(f"truncated {field}: varint ends after {i} bytes")
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                if value >= 1 << 32:
                    raise self.fail(f"{field}: varint exceeds 32 bits")
                return value
        raise self.fail(f"{field}: varint longer than 5 bytes")

    def _utf8(self, n: int, field: str) -> str:
        raw = self.take(n, field)
        try:
            return raw.decode()
        except UnicodeDecodeError as e:
            self.pos -= n
            raise self.fail(f"{field}: invalid UTF-8 ({e.reason})") from None

    def string(self, field: str = "string", nullable: bool = True) -> str | None:
        """Classic string: int16 length (-1 = null), then UTF-8."""
        n = self.int16(f"{field} length")
        if n == -1 and nullable:
            return None
        if n < 0:
            self.pos -= 2
            raise self.fail(f"{field}: invalid length {n}")
        return self._utf8(n, field)

    def compact_string(self, field: str = "compact string", nullable: bool = False) -> str | None:
        """Compact string: uvarint length+1, then UTF-8; 0 is null (an error unless ``nullable``)."""
        n = self.uvarint(f"{field} length")
        if n == 0:
            if nullable:
                return None
            raise self.fail(f"{field}: null where the schema does not allow it")
        return self._utf8(n - 1, field)

    def compact_array(self, each: Callable[["Reader"], T], field: str = "compact array",
                      nullable: bool = False) -> list[T] | None:
        """Compact array: uvarint count+1 (0 = null), then ``each(reader)`` per element."""
        n = self.uvarint(f"{field} count")
        if n == 0:
            if nullable:
                return None
            raise self.fail(f"{field}: null array where the schema does not allow it")
        if n - 1 > self.remaining():        # every element takes at least one byte
            raise self.fail(f"{field}: count {n - 1} exceeds the {self.remaining()} bytes left")
        return [each(self) for _ in range(n - 1)]

    def array(self, each: Callable[["Reader"], T], field: str = "array") -> list[T]:
        """Classic (non-flexible) array: int32 count (-1 = null, read as []), then elements."""
        n = self.int32(f"{field} count")
        if n < -1 or n > self.remaining():
            self.pos -= 4
            raise self.fail(f"{field}: invalid count {n}")
        return [each(self) for _ in range(max(n, 0))]

    def uuid(self, field: str = "uuid") -> bytes:
        return self.take(16, field)                 # raw; see uuid_str

    def tagged_fields(self, field: str = "tagged fields") -> dict[int, bytes]:
        """A tagged-field section: {tag: raw bytes}. Unknown tags are kept, not interpreted."""
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint(f"{field} count")):
            tag = self.uvarint(f"{field} tag")
            if tag in out:
                raise self.fail(f"{field}: duplicate tag {tag}")
            out[tag] = self.take(self.uvarint(f"{field} tag {tag} size"), f"{field} tag {tag}")
        return out

    def expect_end(self) -> None:
        """Raise unless every byte was consumed."""
        if self.remaining():
            raise self.fail(f"{self.remaining()} unexpected trailing bytes")


def uuid_str(u: bytes | None) -> str | None:
    """Kafka's text form of a UUID (``Uuid.toString``: URL-safe base64, no padding,
    22 chars, as ``kafka-metadata-quorum`` prints directory ids); None for ZERO_UUID."""
    if u is None or u == bytes(16):
        return None
    return base64.urlsafe_b64encode(u).rstrip(b"=").decode()


def encode_request_header(api_key: int, api_version: int, correlation_id: int,
                          client_id: str | None, header_version: int) -> bytes:
    """RequestHeader v1 (key, version, correlation id, classic nullable ClientId) or v2
    (v1 plus an empty tagged-field section). ClientId is never compact (RequestHeader.json)."""
    if header_version not in (1, 2):
        raise ValueError(f"request header version {header_version} not supported (1 or 2)")
    w = Writer().int16(api_key).int16(api_version).int32(correlation_id).string(client_id)
    if header_version == 2:
        w.tagged_fields()
    return w.bytes()


def decode_response_header(r: Reader, header_version: int) -> int:
    """Read ResponseHeader v0 (int32 CorrelationId) or v1 (plus tagged fields); returns
    the correlation id. Raises :class:`KafkaProtocolError` if truncated."""
    cid = r.int32("response header CorrelationId")
    if header_version >= 1:
        r.tagged_fields("response header tagged fields")
    return cid


def frame(payload: bytes) -> bytes:
    """``payload`` prefixed by its int32 size (bytes), as every request is sent."""
    return _I32.pack(len(payload)) + payload


class FrameDecoder:
    """Sans-IO splitter of a byte stream into size-prefixed frames: :meth:`feed` it
    received chunks. A size below 0 or above ``max_bytes`` raises :class:`KafkaProtocolError`."""

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()

    def pending(self) -> int:
        """Bytes held that do not yet form a whole frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the payloads (without their size) of the frames now complete."""
        self._buf += data
        out = []
        while len(self._buf) >= 4:
            size = check_frame_size(_I32.unpack_from(self._buf)[0], self.max_bytes)
            if len(self._buf) < 4 + size:
                break
            out.append(bytes(self._buf[4:4 + size]))
            del self._buf[:4 + size]
        return out


def check_frame_size(size: int, max_bytes: int = MAX_FRAME_BYTES) -> int:
    """``size`` if it is a plausible frame size, else :class:`KafkaProtocolError`."""
    if size < 0 or size > max_bytes:
        raise KafkaProtocolError(f"frame size {size} outside 0..{max_bytes} bytes "
                                 f"(not a Kafka endpoint, or a TLS/SASL listener?)")
    return size


async def read_frame(reader: asyncio.StreamReader, max_bytes: int = MAX_FRAME_BYTES) -> bytes:
    """Read one size-prefixed frame; return its payload. Raises :class:`KafkaProtocolError`
    for a bad size or a stream ending mid-frame, ``ConnectionResetError`` for one
    ending before the frame's first byte (the peer closed the connection)."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            raise ConnectionResetError("connection closed by the peer") from None
        raise KafkaProtocolError(f"truncated frame: connection closed after {len(e.partial)} "
                                 f"of 4 frame-size bytes") from None
    size = check_frame_size(_I32.unpack(head)[0], max_bytes)
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as e:
        raise KafkaProtocolError(f"truncated frame: connection closed after {len(e.partial)} "
                                 f"of {size} bytes") from None


API_VERSIONS = 18
#: ApiVersions versions spoken here (inclusive): 0-2 classic, 3-4 flexible (KIP-511, KAFKA-17011).
API_VERSIONS_VERSIONS = (0, 4)


@dataclasses.dataclass(frozen=True)
class ApiVersionsResponse:
    """A decoded ApiVersionsResponse: ``api_keys`` {api key: (min, max)},
    ``throttle_time_ms`` (v1+, else 0), raw top-level ``tagged`` fields (v3+:
    SupportedFeatures, FinalizedFeatures... undecoded), header ``correlation_id``,
    and the ``version`` the body was decoded as (0 for an UNSUPPORTED_VERSION answer)."""

    correlation_id: int
    version: int
    error_code: int
    api_keys: dict[int, tuple[int, int]]
    throttle_time_ms: int
    tagged: dict[int, bytes]


def check_version(name: str, version: int, supported: tuple[int, int]) -> None:
    """ValueError unless ``supported[0] <= version <= supported[1]`` (a caller bug)."""
    if not supported[0] <= version <= supported[1]:
        raise ValueError(f"{name} version {version} not supported ({supported[0]}-{supported[1]})")


def encode_api_versions_request(version: int, correlation_id: int, client_id: str | None = "kraft-chaos",
                                software: tuple[str, str] = ("kraft-chaos", "0.1.0")) -> bytes:
    """ApiVersionsRequest ``version`` (0-4) with its header (v1 below 3, v2 from 3), unframed.
    ``software``: ClientSoftwareName/Version (v3+; Kafka requires ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``)."""
    check_version("ApiVersions", version, API_VERSIONS_VERSIONS)
    head = encode_request_header(API_VERSIONS, version, correlation_id, client_id, 2 if version >= 3 else 1)
    if version < 3:
        return head
    return head + Writer().compact_string(software[0]).compact_string(software[1]).tagged_fields().bytes()


def decode_api_versions_response(payload: bytes, version: int) -> ApiVersionsResponse:
    """Decode an ApiVersionsResponse frame payload (header v0 + body) sent for a
    request of ``version``. An UNSUPPORTED_VERSION answer is decoded as v0, as
    Kafka sends it. Raises :class:`KafkaProtocolError` when malformed."""
    check_version("ApiVersions", version, API_VERSIONS_VERSIONS)
    r = Reader(payload, context=f"ApiVersionsResponse v{version}")
    cid = decode_response_header(r, 0)
    err = r.int16("ErrorCode")
    if err == UNSUPPORTED_VERSION:
        version, r.context = 0, "ApiVersionsResponse v0 (UNSUPPORTED_VERSION)"
    flexible = version >= 3

    def key(rr: Reader) -> tuple[int, int, int]:
        k = (rr.int16("ApiKey"), rr.int16("MinVersion"), rr.int16("MaxVersion"))
        if flexible:
            rr.tagged_fields("ApiVersion tagged fields")
        return k
    keys = r.compact_array(key, "ApiKeys") if flexible else r.array(key, "ApiKeys")
    throttle = r.int32("ThrottleTimeMs") if version >= 1 else 0
    tagged = r.tagged_fields() if flexible else {}
    r.expect_end()
    return ApiVersionsResponse(cid, version, err, {k: (lo, hi) for k, lo, hi in keys}, throttle, tagged)
