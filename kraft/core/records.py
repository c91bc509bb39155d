"""Log records and their on-disk encoding, with a CRC (KIP-595 log; KIP-630 layout).

On disk a record is::

    length  u32   bytes that follow this field
    crc     u32   CRC-32 (zlib) of every byte after this field
    offset  i64
    epoch   i32
    type    u8    0 = data; control records: 1 = LeaderChange, 2 = KRaftVersion,
                  3 = KRaftVoters (KIP-853); 4 = Metadata (the data plane's
                  cluster metadata, kraft/state_machines/metadata_image.py)
    payload       UTF-8 JSON

All integers are big-endian.
"""
from __future__ import annotations

import dataclasses
import json
import struct
import zlib

_HEAD = struct.Struct(">II")       # length, crc
_BODY = struct.Struct(">qiB")      # offset, epoch, type
HEADER_BYTES = _HEAD.size + _BODY.size
#: Largest record payload accepted, in bytes (1 MiB).
MAX_PAYLOAD_BYTES = 1024 * 1024

DATA = "data"
LEADER_CHANGE = "LeaderChange"
#: KIP-853 control records: KRaftVersionRecord and VotersRecord (kraft/rules/voter_set.py).
KRAFT_VERSION = "KRaftVersion"
VOTERS = "KRaftVoters"
#: Cluster metadata (RegisterBrokerRecord, TopicRecord, ...; docs/data-plane.md): the
#: payload is a JSON object whose ``"type"`` names the record (kraft/state_machines/metadata_image.py).
METADATA = "Metadata"
_TYPE_CODES = {DATA: 0, LEADER_CHANGE: 1, KRAFT_VERSION: 2, VOTERS: 3, METADATA: 4}
_TYPE_NAMES = {v: k for k, v in _TYPE_CODES.items()}


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """One log record: ``offset`` (int), ``epoch`` (leader epoch, int),
    ``type`` ("data", "LeaderChange", "KRaftVersion", "KRaftVoters" or "Metadata") and
    ``payload`` (any JSON value; for LeaderChange ``{"LeaderId": int, "Voters": [int],
    "GrantingVoters": [int]}``; the KIP-853 ones in kraft/rules/voter_set.py; Metadata ones
    in kraft/state_machines/metadata_image.py)."""

    offset: int
    epoch: int
    type: str
    payload: object

    def to_wire(self) -> list:
        """The record as ``[offset, epoch, type, payload]`` (the client and Fetch form)."""
        return [self.offset, self.epoch, self.type, self.payload]

    @classmethod
    def from_wire(cls, item: list) -> "Record":
        """Inverse of :meth:`to_wire`; raises ValueError on a malformed item."""
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], int)
                and isinstance(item[1], int) and item[2] in _TYPE_CODES):
            raise ValueError(f"malformed record {item!r}")
        return cls(item[0], item[1], item[2], item[3])


def check_payload(payload: object) -> None:
    """Raises ValueError if ``payload`` encodes to more than MAX_PAYLOAD_BYTES (what
    :func:`encode` would refuse)."""
    n = len(json.dumps(payload, separators=(",", ":")).encode())
    if n > MAX_PAYLOAD_BYTES:
        raise ValueError(f"record payload of {n} bytes exceeds {MAX_PAYLOAD_BYTES}")


def encode(rec: Record) -> bytes:
    """Encode ``rec`` for disk. Raises ValueError if the payload exceeds MAX_PAYLOAD_BYTES."""
    payload = json.dumps(rec.payload, separators=(",", ":")).encode()
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"record payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    body = _BODY.pack(rec.offset, rec.epoch, _TYPE_CODES[rec.type]) + payload
    return _HEAD.pack(len(body) + 4, zlib.crc32(body)) + body


def scan(buf: bytes, expected_offset: int | None = None) -> tuple[list[tuple[Record, int]], int]:
    """Decode consecutive records from ``buf``.

    Returns ``(records, valid_bytes)``: each record with its byte position,
    and the length of the valid prefix. Decoding stops at the first torn,
    corrupt (CRC mismatch) or out-of-sequence record (when
    ``expected_offset`` is given, offsets must run on from it by one).
    """
    out: list[tuple[Record, int]] = []
    pos, n = 0, len(buf)
    while pos + _HEAD.size <= n:
        length, crc = _HEAD.unpack_from(buf, pos)
        end = pos + 4 + length
        if length < 4 + _BODY.size or end > n:
            break
        body = buf[pos + _HEAD.size:end]
        if zlib.crc32(body) != crc:
            break
        offset, epoch, tcode = _BODY.unpack_from(body, 0)
        if tcode not in _TYPE_NAMES or (expected_offset is not None and offset != expected_offset):
            break
        try:
            payload = json.loads(body[_BODY.size:])
        except ValueError:
            break
        out.append((Record(offset, epoch, _TYPE_NAMES[tcode], payload), pos))
        pos = end
        if expected_offset is not None:
            expected_offset += 1
    return out, pos
