"""The replicated key-value state machine: registers fed by the committed log.

Raft's replicated state machine (Raft §5.3 and §5.4.3, "State Machine
Safety"; the KIP-595 log carries the commands): a command is a data record
(type 0) whose payload is one of::

    {"Kv": "put", "Key": K, "Value": V}                 set K to V
    {"Kv": "cas", "Key": K, "Expected": O, "Value": N}  set K to N iff K's value == O

``K`` is a string of at most :data:`MAX_KEY_BYTES` UTF-8 bytes; ``V``, ``O``
and ``N`` are ints (not bools) or null. Every key starts null ("never
written"), so ``cas(K, null, N)`` succeeds on a fresh key.

Every node applies records in offset order, each exactly once, and only once
it is committed (offset < the node's high watermark). Applying is a pure
function of the state and the record, so every node decides the same cas
outcomes from the same committed prefix. The state is not persisted: a node
starts empty and rebuilds it by replaying its own log as it learns the high
watermark again (committed records are never truncated, KIP-595 Fetch).
Data records that are not kv commands (e.g. the append workload's values)
and LeaderChange control records apply as no-ops.

The ``kv-cas-at-propose`` unsafe switch (kraft/core/unsafe.py) plants a bug here:
with :attr:`KvStateMachine.decide_at_propose` the leader's write outcomes are
decided when :meth:`KvStateMachine.expect` registers them, against the state as
applied then, and the outcome of applying the command in log order is ignored.
"""
from __future__ import annotations

import dataclasses
from typing import Protocol, Sequence

from ..core.records import DATA, Record

PUT = "put"
CAS = "cas"
#: Longest key accepted, in UTF-8 bytes.
MAX_KEY_BYTES = 256


class CommandError(ValueError):
    """A kv command field has the wrong type or size (the message names the field)."""


class _Log(Protocol):
    def read(self, start: int, end: int, max_records: int | None = None) -> Sequence[Record]: ...


def check_key(key: object) -> str:
    """``key`` if it is a str of 1..MAX_KEY_BYTES UTF-8 bytes; raises CommandError."""
    if not isinstance(key, str):
        raise CommandError(f"Key must be a string, got {type(key).__name__}")
    if not 1 <= len(key.encode()) <= MAX_KEY_BYTES:
        raise CommandError(f"Key must be 1..{MAX_KEY_BYTES} bytes long")
    return key


def check_value(name: str, value: object) -> int | None:
    """``value`` if it is an int (not a bool) or None; raises CommandError naming ``name``."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise CommandError(f"{name} must be an int or null, got {type(value).__name__}")


def put_command(key: str, value: int | None) -> dict:
    """The record payload of ``put(key, value)``; raises CommandError."""
    return {"Kv": PUT, "Key": check_key(key), "Value": check_value("Value", value)}


def cas_command(key: str, expected: int | None, value: int | None) -> dict:
    """The record payload of ``cas(key, expected, value)``; raises CommandError."""
    return {"Kv": CAS, "Key": check_key(key), "Expected": check_value("Expected", expected),
            "Value": check_value("Value", value)}


def command(op: object, fields: dict) -> dict:
    """The record payload of the ``op`` command ("put" or "cas") with ``fields``
    ``Key``, ``Expected`` (cas only; required) and ``Value`` (a missing Value
    is null); raises CommandError."""
    if op == PUT:
        return put_command(fields.get("Key"), fields.get("Value"))
    if op == CAS:
        if "Expected" not in fields:
            raise CommandError("missing field Expected")
        return cas_command(fields.get("Key"), fields.get("Expected"), fields.get("Value"))
    raise CommandError(f"Op must be {PUT!r} or {CAS!r}, got {op!r}")


def parse_command(payload: object) -> dict | None:
    """The command in a data record's payload, or None when it is not a well-formed kv command."""
    if not isinstance(payload, dict):
        return None
    try:
        return command(payload.get("Kv"), payload)
    except CommandError:
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class ApplyResult:
    """What applying one kv command did.

    ``offset``: the record's offset. ``succeeded``: True for a put, and for
    a cas whose expected value matched. ``previous``: the key's value just
    before (the value a failed cas compared against).
    """

    offset: int
    succeeded: bool
    previous: int | None


class KvStateMachine:
    """Registers by key, applied from committed records in offset order.

    ``applied`` is the applied index: the offset of the next record to
    apply (every record below it has been applied). Results of commands are
    kept only for offsets registered with :meth:`expect` (the leader's
    pending writes), so memory stays bounded.
    """

    def __init__(self, decide_at_propose: bool = False) -> None:
        self.applied = 0
        self._data: dict[str, int | None] = {}
        self._expected: dict[int, ApplyResult | None] = {}
        #: the ``kv-cas-at-propose`` bug: outcomes decided by :meth:`expect`, at proposal
        self.decide_at_propose = decide_at_propose
        self._decided: set[int] = set()

    def get(self, key: str) -> int | None:
        """The value of ``key`` as of :attr:`applied` (None when never written)."""
        return self._data.get(key)

    def snapshot(self) -> dict[str, int | None]:
        """A copy of every written key's value."""
        return dict(self._data)

    def apply(self, record: Record) -> ApplyResult | None:
        """Apply ``record`` (which must be at offset :attr:`applied`).

        Returns the result for a kv command, None for anything else (a
        no-op). Raises ValueError for a record out of order: a bug, since
        the caller passes committed records only, in order.
        """
        if record.offset != self.applied:
            raise ValueError(f"apply out of order: record at offset {record.offset}, "
                             f"applied index {self.applied}")
        self.applied += 1
        cmd = parse_command(record.payload) if record.type == DATA else None
        if cmd is None:
            return None
        result = self._outcome(cmd, record.offset)
        if result.succeeded:
            self._data[cmd["Key"]] = cmd["Value"]
        if record.offset in self._expected and record.offset not in self._decided:
            self._expected[record.offset] = result
        return result

    def _outcome(self, cmd: dict, offset: int) -> ApplyResult:
        """What command ``cmd`` (parsed) at ``offset`` does to the state as it is now."""
        previous = self._data.get(cmd["Key"])
        return ApplyResult(offset, cmd["Kv"] == PUT or previous == cmd["Expected"], previous)

    def apply_committed(self, log: _Log, high_watermark: int) -> int:
        """Apply every record of ``log`` in [applied, high_watermark); returns how many.

        ``log`` is a :class:`kraft.storage.log.Log` (anything with ``read(start, end)``).
        """
        if high_watermark <= self.applied:
            return 0
        records = log.read(self.applied, high_watermark)
        for r in records:
            self.apply(r)
        return len(records)

    def expect(self, offset: int, payload: object = None) -> None:
        """Keep the result of the command at ``offset`` (whose record payload is ``payload``)
        for :meth:`take_result`. With :attr:`decide_at_propose` (the bug) the result is decided
        now, from the state as applied so far, and applying the record will not change it."""
        if self.decide_at_propose:
            cmd = parse_command(payload)
            if cmd is not None:
                self._expected[offset] = self._outcome(cmd, offset)
                self._decided.add(offset)
                return
        self._expected.setdefault(offset, None)

    def take_result(self, offset: int) -> ApplyResult | None:
        """The kept result at ``offset`` (None if not applied yet, or not a command); forgets it."""
        self._decided.discard(offset)
        return self._expected.pop(offset, None)
