"""A simulated node disk with lazyfs's power-loss semantics (clusters/lazyfs/): what an fsync
did not cover is lost at a crash, and the newest unsynced write may survive torn.

Each log (None: the metadata log; else a partition key) is a :class:`LogFile`: the
records written (the page cache), how many an fsync made durable, the fsyncs in flight, and
where a torn record lies (``torn``: a restart's scan stops there; cutting it is recovery's
decision, kraft/storage/recovery.py). quorum-state and high-watermark checkpoints are written
atomically and durably (the adapters write them with temp file, fsync, rename and directory
fsync, kraft/storage/durable.py), so a crash keeps them whole. A wipe loses everything, as a
disk failure plus ``format`` with a fresh directory id does.
"""
from __future__ import annotations

import random

from kraft.core.states import ElectionState
from kraft.rules.voter_set import VoterSet
from kraft.storage.recovery import DiskContents


class LogFile:
    """One log on the disk: ``records`` written (page cache), ``durable`` how many of them an
    fsync covered, ``syncs`` the fsyncs in flight as ``[end, cap]`` (cap: lowered by later
    truncations), ``last_write`` the start offset of the newest write not yet synced,
    ``torn`` the offset before which a torn record lies in the file (None: none; the records
    from there on, if any, were written after it and a scan never reaches them)."""

    __slots__ = ("records", "durable", "syncs", "last_write", "torn")

    def __init__(self) -> None:
        self.records: list = []
        self.durable = 0
        self.syncs: list[list[int]] = []
        self.last_write: int | None = None
        self.torn: int | None = None

    def readable(self) -> list:
        """The records a scan of the file reads: those before a torn record."""
        return self.records if self.torn is None else self.records[:self.torn]

    def write(self, records: list) -> None:
        """Append ``records`` (they must start at the end of what was written)."""
        if records and records[0].offset != len(self.records):
            raise AssertionError(f"write at offset {records[0].offset}, log end {len(self.records)}")
        self.last_write = len(self.records)
        self.records.extend(records)

    def sync(self, end: int) -> None:
        """An fsync up to ``end`` starts (finishes with :meth:`synced`)."""
        self.syncs.append([end, end])

    def synced(self) -> None:
        """The oldest fsync in flight finished: durable up to its end (less truncations)."""
        if self.syncs:
            end = min(self.syncs.pop(0)[1], len(self.records))
            if end > self.durable:
                self.durable = end
            if self.last_write is not None and self.durable >= len(self.records):
                self.last_write = None

    def truncate(self, offset: int) -> None:
        """Remove the records at ``offset`` and above, durably."""
        del self.records[offset:]
        self.durable = min(self.durable, offset)
        for s in self.syncs:
            s[1] = min(s[1], offset)
        if self.last_write is not None and self.last_write >= offset:
            self.last_write = None
        if self.torn is not None and offset < self.torn:
            self.torn = None                   # cut before the torn record: gone with the rest

    def crash(self, rng: random.Random | None) -> int:
        """A power loss: keep the durable prefix; with ``rng`` (a torn write), when the newest
        unsynced write is all that was unsynced, a random strict prefix of its records survives,
        followed by the record cut in two (:attr:`torn`; it fails its CRC at the next start).
        Returns the records lost."""
        keep = self.durable
        if rng is not None and self.last_write == self.durable and len(self.records) > keep:
            keep += rng.randrange(len(self.records) - keep)
            if self.torn is None:
                self.torn = keep
        lost = len(self.records) - keep
        del self.records[keep:]
        self.durable = keep
        self.syncs.clear()
        self.last_write = None
        return lost


class SimDisk:
    """A node's disk: ``logs`` by key, ``election`` (quorum-state), ``hw`` (partition
    high-watermark checkpoints by key), ``directory_id`` (meta.properties; a wipe makes a
    fresh one), ``bootstrap`` (bootstrap.checkpoint as ``(kraft_version, voters or None)``;
    None: no such file, kraft.version 0) and ``generation`` (how many times it was
    formatted)."""

    def __init__(self, directory_id: str | None, bootstrap: tuple | None = None) -> None:
        self.logs: dict[object, LogFile] = {}
        self.election = ElectionState()
        self.hw: dict[object, int] = {}
        self.directory_id = directory_id
        self.bootstrap = bootstrap
        self.generation = 0

    def log(self, key=None) -> LogFile:
        """The log file of ``key`` (created empty on first use)."""
        f = self.logs.get(key)
        if f is None:
            f = self.logs[key] = LogFile()
        return f

    def crash(self, rng: random.Random | None = None) -> int:
        """A power loss on every log (torn last writes when ``rng`` is given); returns the
        records lost."""
        return sum(f.crash(rng) for f in self.logs.values())

    def recover(self) -> None:
        """What a restart finds: every log as written (after a power loss, only what survived
        it); the kernel writes a killed process's page cache back, so all of it counts as
        durable from here on."""
        for f in self.logs.values():
            f.durable = len(f.records)
            f.syncs.clear()
            f.last_write = None

    def contents(self, static_voters: VoterSet) -> DiskContents:
        """What a quorum node's start reads here (kraft/storage/recovery.py): the metadata
        log's records up to a torn one, quorum-state, the bootstrap checkpoint and the
        directory id; ``static_voters`` is the node's configured voter set."""
        f = self.log(None)
        torn = 0 if f.torn is None else len(f.records) - f.torn + 1
        return DiskContents(f.readable(), torn, self.election, self.bootstrap, self.directory_id, static_voters)

    def recovered(self, cut_torn_tail: bool) -> None:
        """Carry out recovery's decision on the metadata log: what follows a torn record is
        unreadable from now on; with ``cut_torn_tail`` the file ends at the last valid record,
        else the torn record stays there, before whatever is written next."""
        f = self.log(None)
        if f.torn is not None:
            del f.records[f.torn:]
            f.durable = min(f.durable, f.torn)
            if cut_torn_tail:
                f.torn = None

    def wipe(self, directory_id: str | None, bootstrap: tuple | None = None) -> None:
        """A disk failure and ``format`` again: nothing kept, a new ``directory_id`` and
        ``bootstrap`` checkpoint."""
        self.logs.clear()
        self.election = ElectionState()
        self.hw.clear()
        self.directory_id = directory_id
        self.bootstrap = bootstrap
        self.generation += 1
