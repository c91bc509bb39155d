"""How the ``txn`` workload's values travel as record bytes: an int's decimal digits, padded
to a chosen size with text that is a function of the value, and read back.

A record's value is ``"<digits>"`` when no padding is asked for (or it would not fit), else
``"<digits>~<pad>"`` of exactly ``size`` bytes, where ``<pad>`` is :func:`pad_for` of the
value and the pad's length: a slice of a fixed block of pseudo-random lowercase letters that
starts at a place the value picks. The padding gives a compressed batch real bytes to
decompress (lowercase letters: a ratio like text's, not a run of one byte) while the value
stays the history's identity: :func:`decode_value` strips a padding it can recompute and
returns the int, and returns anything else (digits with a padding that is not the value's,
foreign text) as the text itself, so a record whose bytes changed on the way reads as a value
no op sent and the checker names it.
"""
from __future__ import annotations

import random
import string
from typing import Any

#: the separator between the digits and the padding
SEPARATOR = "~"
#: the padding's source: letters drawn once, with a fixed seed (16 KiB)
_BLOCK = "".join(random.Random(15653).choices(string.ascii_lowercase, k=16 * 1024))
#: the largest value size the workload may ask for (bytes): a record well under Kafka's
#: default ``max.message.bytes`` (1 MiB) and the producers' ``max.request.size``
MAX_VALUE_BYTES = 512 * 1024


def pad_for(value: int, length: int) -> str:
    """The padding of ``value`` of ``length`` characters (>= 0): ``_BLOCK`` read cyclically
    from offset ``value * 7919 mod len(_BLOCK)``."""
    if length <= 0:
        return ""
    n = len(_BLOCK)
    start = (value * 7919) % n
    out = _BLOCK[start:start + length]
    while len(out) < length:
        out += _BLOCK[:length - len(out)]
    return out


def encode_value(value: int, size: int = 0) -> str:
    """``value`` as record text: its digits, padded to ``size`` bytes (:func:`pad_for`) when
    ``size`` leaves room for the separator and at least one character of padding; else the
    digits alone."""
    digits = str(value)
    room = size - len(digits) - len(SEPARATOR)
    return digits if room <= 0 else f"{digits}{SEPARATOR}{pad_for(value, room)}"


def decode_value(raw: bytes | str | None) -> Any:
    """A record's value (bytes or text) as the int :func:`encode_value` wrote, else the text
    as is (None stays None): digits alone, or digits, the separator and exactly that
    value's padding."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
    digits, sep, pad = text.partition(SEPARATOR)
    bare = digits[1:] if digits.startswith("-") else digits
    if not (bare.isascii() and bare.isdigit()):
        return text
    value = int(digits)
    if sep and (not pad or pad != pad_for(value, len(pad))):
        return text
    return value
