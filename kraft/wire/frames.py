"""The wire format: length-prefixed JSON frames over TCP (see kraft/README.md).

A frame is a 4-byte big-endian unsigned length N (1 <= N <= MAX_FRAME_BYTES)
followed by N bytes of UTF-8 JSON encoding one object. Requests are
``{"ApiKey": int, "CorrelationId": int, "Body": {...}}``; responses are
``{"CorrelationId": int, "Body": {...}}``.
"""
from __future__ import annotations

import asyncio
import json
import struct

#: Largest accepted frame body, in bytes (8 MiB).
MAX_FRAME_BYTES = 8 * 1024 * 1024
_LEN = struct.Struct(">I")


class FrameError(ValueError):
    """A frame was malformed: bad length, not UTF-8 JSON, or not an object."""


def encode(obj: dict) -> bytes:
    """Encode ``obj`` as one frame (length prefix + compact JSON).

    Raises :class:`FrameError` if the encoding exceeds MAX_FRAME_BYTES.
    """
    body = json.dumps(obj, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _LEN.pack(len(body)) + body


def decode_body(body: bytes) -> dict:
    """Decode a frame body; raises :class:`FrameError` unless it is a JSON object."""
    try:
        obj = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FrameError(f"frame is not UTF-8 JSON: {e}") from None
    if not isinstance(obj, dict):
        raise FrameError(f"frame is JSON {type(obj).__name__}, not an object")
    return obj


async def read_frame(reader: asyncio.StreamReader) -> dict | None:
    """Read one frame. Returns None on a clean EOF before a frame starts.

    Raises :class:`FrameError` on a zero or oversized length or a bad body,
    and ``asyncio.IncompleteReadError`` when the peer closes mid-frame.
    """
    try:
        header = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise
    (n,) = _LEN.unpack(header)
    if n == 0 or n > MAX_FRAME_BYTES:
        raise FrameError(f"frame length {n} outside 1..{MAX_FRAME_BYTES}")
    return decode_body(await reader.readexactly(n))
