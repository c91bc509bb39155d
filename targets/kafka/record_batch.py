"""Kafka's on-disk log format: RecordBatch v2 (magic 2, KIP-98), read offline, stdlib only.

A log segment (``<base offset>.log``) or a KRaft snapshot (``.checkpoint``,
KIP-630) is a sequence of batches. Each batch, all integers big-endian::

    baseOffset            i64   offset of the first record
    batchLength           i32   bytes that follow this field
    partitionLeaderEpoch  i32
    magic                 i8    2
    crc                   u32   CRC-32C (Castagnoli) of every byte after this field
    attributes            i16   bits 0-2 codec, 3 timestamp type, 4 transactional,
                                5 control, 6 has delete horizon
    lastOffsetDelta       i32
    baseTimestamp         i64   ms
    maxTimestamp          i64   ms
    producerId            i64
    producerEpoch         i16
    baseSequence          i32
    recordsCount          i32
    records                     (compressed as one block when the codec is not none)

and each record (signed zigzag varints unless noted)::

    length varint, attributes i8, timestampDelta varlong, offsetDelta varint,
    keyLength varint (-1: null), key, valueLength varint (-1: null), value,
    headerCount varint, then per header: keyLength varint, key (UTF-8),
    valueLength varint (-1: null), value

Errors: a complete batch whose CRC does not match, or whose content does not
parse, raises :class:`CorruptBatchError` (naming the file, byte position and
base offset); a codec other than none or gzip raises
:class:`UnsupportedCodecError`. A batch cut short by the end of the data (a
torn write) is not an error: scanning stops and reports a :class:`TornTail`.
"""
from __future__ import annotations

import dataclasses
import struct
import zlib
from pathlib import Path

#: Bytes before batchLength's coverage starts (baseOffset + batchLength).
LOG_OVERHEAD = 12
#: Bytes of a v2 batch header, records excluded.
BATCH_HEADER_BYTES = 61
_HEAD = struct.Struct(">qiibIhiqqqhii")   # baseOffset .. recordsCount
_CRC_START = 21                            # attributes start here: the CRC covers [21, end)

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes | memoryview, crc: int = 0) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of ``data``, as an unsigned int.

    Table-driven, one byte per step; ``crc`` continues an earlier value.
    ``crc32c(b"123456789") == 0xE3069283``.
    """
    table = _CRC32C_TABLE
    c = crc ^ 0xFFFFFFFF
    for b in bytes(data):
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


class RecordBatchError(ValueError):
    """Base of the errors this module raises."""


class CorruptBatchError(RecordBatchError):
    """A complete batch that fails its CRC-32C check or does not parse.

    Attributes: ``source`` (file path or label), ``position`` (byte position of
    the batch in the source), ``base_offset`` (as stored, maybe itself
    damaged), ``reason`` (text).
    """

    def __init__(self, source: str, position: int, base_offset: int, reason: str):
        self.source, self.position, self.base_offset, self.reason = source, position, base_offset, reason
        super().__init__(f"{source}: corrupt record batch at byte position {position} "
                         f"(baseOffset {base_offset}): {reason}")


class UnsupportedCodecError(RecordBatchError):
    """A batch compressed with a codec this reader does not decode (snappy, lz4, zstd).

    Attributes: ``codec`` (name), ``source``, ``position``, ``base_offset``.
    """

    def __init__(self, codec: str, source: str, position: int, base_offset: int):
        self.codec, self.source, self.position, self.base_offset = codec, source, position, base_offset
        super().__init__(f"{source}: record batch at byte position {position} (baseOffset "
                         f"{base_offset}) is compressed with {codec}, which is not supported "
                         f"(only none and gzip are)")


@dataclasses.dataclass(frozen=True, slots=True)
class TornTail:
    """Bytes at the end of a source that do not hold a whole batch: ``source``,
    ``position`` (byte position where they start), ``size_bytes`` and
    ``reason`` ("partial batch header", "batch extends past end of data" or
    "zero-filled tail")."""

    source: str
    position: int
    size_bytes: int
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class KafkaRecord:
    """One record of a batch: ``offset`` (absolute), ``timestamp`` (ms),
    ``key`` and ``value`` (bytes or None), ``headers`` ([(key str, value bytes
    or None)])."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


@dataclasses.dataclass(frozen=True, slots=True)
class RecordBatch:
    """One RecordBatch v2 with its header fields as stored and its ``records``.

    ``position``: byte position of the batch in its source; ``size_bytes``:
    its whole size (``batch_length`` + 12).
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int
    records: tuple[KafkaRecord, ...]

    @property
    def size_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> str:
        """Codec name from attribute bits 0-2 ("none", "gzip", ...; "codec-N" if unknown)."""
        return CODECS.get(self.attributes & 0x07, f"codec-{self.attributes & 0x07}")

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & 0x08 else "CreateTime"


class _Cursor:
    """Reads Kafka varints and byte runs from ``buf``; raises IndexError past its end."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int = 0):
        self.buf, self.pos = buf, pos

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("varint longer than 10 bytes")

    def varint(self) -> int:
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise IndexError(f"{n} bytes wanted at position {self.pos}, {len(self.buf)} available")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def nullable(self) -> bytes | None:
        n = self.varint()
        return None if n < 0 else self.take(n)


def _parse_records(buf: bytes, count: int, base_offset: int, base_ts: int) -> tuple[KafkaRecord, ...]:
    """The ``count`` records in ``buf``; raises ValueError/IndexError if they do not parse exactly."""
    cur = _Cursor(buf)
    out = []
    for _ in range(count):
        length = cur.varint()
        start = cur.pos
        cur.take(1)                                  # record attributes: unused
        ts = base_ts + cur.varint()
        offset = base_offset + cur.varint()
        key = cur.nullable()
        value = cur.nullable()
        headers = []
        for _ in range(cur.varint()):
            hkey = cur.nullable()
            if hkey is None:
                raise ValueError("record header with a null key")
            headers.append((hkey.decode("utf-8", "replace"), cur.nullable()))
        if cur.pos - start != length:
            raise ValueError(f"record at offset {offset} declares {length} bytes but holds {cur.pos - start}")
        out.append(KafkaRecord(offset, ts, key, value, tuple(headers)))
    if cur.pos != len(buf):
        raise ValueError(f"{len(buf) - cur.pos} bytes after the last of {count} records")
    return tuple(out)


def _decompress(codec: int, data: bytes, source: str, pos: int, base: int) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)   # a gzip stream
        out = d.decompress(data) + d.flush()
        if not d.eof:
            raise zlib.error("gzip stream ends early")
        return out
    raise UnsupportedCodecError(CODECS.get(codec, f"unknown codec {codec}"), source, pos, base)


def scan_batches(buf: bytes, source: str = "<buffer>",
                 verify_crc: bool = True) -> tuple[list[RecordBatch], TornTail | None]:
    """Decode the consecutive RecordBatch v2 batches of ``buf`` (Kafka RecordBatch v2, KIP-98).

    Returns ``(batches, torn)``: the whole batches in order and a
    :class:`TornTail` when the data ends inside a batch (or in a zero-filled
    run, as left by a preallocated or torn file), else None. ``source`` names
    ``buf`` in errors and reports.

    Raises :class:`CorruptBatchError` for a whole batch whose CRC-32C does not
    match (unless ``verify_crc`` is False), whose magic is not 2, whose
    batchLength is below the header size, or whose records do not parse;
    :class:`UnsupportedCodecError` for a codec other than none or gzip.
    """
    batches: list[RecordBatch] = []
    return batches, _scan(buf, source, verify_crc, batches)


def _scan(buf: bytes, source: str, verify_crc: bool, batches: list[RecordBatch]) -> TornTail | None:
    """:func:`scan_batches`, appending to ``batches`` as it goes (so they survive an error)."""
    pos, n = 0, len(buf)
    while pos < n:
        rest = n - pos
        if rest >= LOG_OVERHEAD and not any(buf[pos:pos + LOG_OVERHEAD]):   # offset 0, length 0
            if buf.count(0, pos) == rest:
                return TornTail(source, pos, rest, "zero-filled tail")
            raise CorruptBatchError(source, pos, 0, "batchLength 0 followed by non-zero bytes")
        if rest < BATCH_HEADER_BYTES:
            if rest < LOG_OVERHEAD:
                return TornTail(source, pos, rest, "partial batch header")
            base, length = struct.unpack_from(">qi", buf, pos)
            if length + LOG_OVERHEAD > rest:
                return TornTail(source, pos, rest, "batch extends past end of data")
            raise CorruptBatchError(source, pos, base, f"batchLength {length} is below the "
                                                       f"{BATCH_HEADER_BYTES - LOG_OVERHEAD}-byte header")
        (base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts,
         pid, pepoch, base_seq, count) = _HEAD.unpack_from(buf, pos)
        if length + LOG_OVERHEAD > rest:
            return TornTail(source, pos, rest, "batch extends past end of data")
        if magic != 2:
            raise CorruptBatchError(source, pos, base, f"magic {magic}, only magic 2 (RecordBatch v2) "
                                                       "is supported")
        if length < BATCH_HEADER_BYTES - LOG_OVERHEAD:
            raise CorruptBatchError(source, pos, base, f"batchLength {length} is below the "
                                                       f"{BATCH_HEADER_BYTES - LOG_OVERHEAD}-byte header")
        end = pos + LOG_OVERHEAD + length
        if verify_crc:
            actual = crc32c(memoryview(buf)[pos + _CRC_START:end])
            if actual != crc:
                raise CorruptBatchError(source, pos, base, f"CRC-32C mismatch: stored 0x{crc:08x}, "
                                                           f"computed 0x{actual:08x}")
        if count < 0:
            raise CorruptBatchError(source, pos, base, f"negative records count {count}")
        body = bytes(buf[pos + BATCH_HEADER_BYTES:end])
        try:
            body = _decompress(attrs & 0x07, body, source, pos, base)
            records = _parse_records(body, count, base, base_ts)
        except (ValueError, IndexError, zlib.error) as e:
            if isinstance(e, RecordBatchError):
                raise
            raise CorruptBatchError(source, pos, base, f"records do not parse: {e}") from None
        batches.append(RecordBatch(base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts,
                                   pid, pepoch, base_seq, count, pos, records))
        pos = end
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class SegmentScan:
    """A file read with :func:`read_batch_file`: ``path``, ``size_bytes``,
    ``batches``, ``valid_bytes`` (length of the prefix of whole, valid
    batches), ``torn`` (a :class:`TornTail` or None) and ``corrupt`` (the
    :class:`CorruptBatchError` that stopped a ``strict=False`` read, or None)."""

    path: Path
    size_bytes: int
    batches: list[RecordBatch]
    valid_bytes: int
    torn: TornTail | None
    corrupt: CorruptBatchError | None = None


def read_batch_file(path: Path | str, verify_crc: bool = True, strict: bool = True) -> SegmentScan:
    """Read a log segment (``.log``) or snapshot (``.checkpoint``) file with :func:`scan_batches`.

    Raises OSError if it cannot be read, and what :func:`scan_batches` raises
    (errors name ``path``); with ``strict`` False a :class:`CorruptBatchError`
    is not raised but ends the read, kept in ``corrupt`` with the batches
    before it.
    """
    p = Path(path)
    data = p.read_bytes()
    batches: list[RecordBatch] = []
    try:
        torn = _scan(data, str(p), verify_crc, batches)
    except CorruptBatchError as e:
        if strict:
            raise
        return SegmentScan(p, len(data), batches, e.position, None, e)
    return SegmentScan(p, len(data), batches, torn.position if torn else len(data), torn)
