"""What waits in a quorum core: the Fetches a leader holds (long polling), the writes waiting
for the high watermark, and the linearizable reads waiting for a majority to confirm the
leadership. Plain ``__slots__`` records, kept in :class:`kraft.quorum.state.QuorumState`
(``parked``, ``pending``, ``pending_reads``)."""
from __future__ import annotations

#: What a pending write is (:attr:`PendingWrite.kind`): an Append (``ack-before-commit``
#: answers these on the leader's fsync), an in-process proposal, a KvWrite, or a voter change.
PLAIN, PROPOSE, KV, VOTERS = "append", "propose", "kv", "voters"
#: What a pending read answers (:attr:`PendingRead.purpose`): the read index itself, a Read, a KvGet.
INDEX, READ, KVGET = "index", "read", "kvget"


class Parked:
    """A Fetch waiting for news (kraft/quorum/leader.py): its ``token`` and ``req`` (a
    FetchRequest), and what it saw: ``hw`` (offset), ``round`` (read round), ``gen`` (the
    core's transition count); and its ``deadline`` (ms)."""

    __slots__ = ("token", "req", "hw", "round", "gen", "deadline")

    def __init__(self, token, req, hw: int, rnd: int, gen: int, deadline: float):
        self.token, self.req, self.hw, self.round, self.gen, self.deadline = token, req, hw, rnd, gen, deadline


class PendingWrite:
    """A write waiting for the high watermark to pass ``offset`` (its last record;
    kraft/quorum/commit.py): its ``token``, ``kind`` (:data:`PLAIN`, :data:`PROPOSE`,
    :data:`KV`, :data:`VOTERS`), ``first`` offset and ``seq`` (its expiry entry)."""

    __slots__ = ("token", "kind", "first", "offset", "seq")

    def __init__(self, token, kind: str, first: int, offset: int, seq: int):
        self.token, self.kind, self.first, self.offset, self.seq = token, kind, first, offset, seq


class PendingRead:
    """A read waiting for read round ``round`` (kraft/quorum/read_index.py): its ``token``,
    ``purpose`` (:data:`INDEX`, :data:`READ`, :data:`KVGET`) and request ``req``."""

    __slots__ = ("token", "purpose", "req", "round")

    def __init__(self, token, purpose: str, req, rnd: int):
        self.token, self.purpose, self.req, self.round = token, purpose, req, rnd
