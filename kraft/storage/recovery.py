"""Restart and recovery: what a quorum node starts from, as one pure function of what its disk
holds (kraft/README.md, "Restarting after a crash").

Everything between a (re)start and the quorum core's first step is decided here, for the real
node (kraft/runtime/raft.py, which reads a data dir) and the simulator (sim/quorum_nodes.py,
which reads a simulated disk) alike: the adapters read their disk into a
:class:`DiskContents`, :func:`recover` decides the :class:`Recovered` state (the log the core
holds, whether the torn tail is cut, the election state, the voter history, the directory
id), the adapter carries out the cut, and :func:`start_quorum` builds the core and takes its
first step. No I/O here.

The rules: the log is the valid records up to the first invalid byte (a torn or corrupt tail,
left by a power loss, is cut so that later writes follow the last valid record; KIP-595's log
recovery); quorum-state gives the epoch, the leader and the vote (a missing file: epoch 0, no
leader, no vote); ``bootstrap.checkpoint`` gives kraft.version and the bootstrap voter set (no
checkpoint: kraft.version 0 with the static ``controller.quorum.voters``; a checkpoint without
voters: an observer until the log names it, KIP-853); ``meta.properties`` gives the directory
id. The ``recover-epoch-from-log`` unsafe switch resumes in the log's last epoch instead
(kraft/core/unsafe.py).
"""
from __future__ import annotations

import dataclasses
import random
from typing import Callable, Sequence

from ..core.record_log import RecordLog
from ..core.records import Record
from ..core.states import ElectionState
from ..core.unsafe import SAFE, Unsafe
from ..quorum import QuorumConfig, QuorumCore
from ..rules.voter_set import VoterHistory, VoterSet
from .bootstrap import bootstrap_history


@dataclasses.dataclass(frozen=True)
class DiskContents:
    """What a start finds on a node's disk, as read (parsed, not yet judged).

    ``records``: the log's valid records in offset order, read up to the first invalid byte;
    ``torn``: how much follows them (a torn or corrupt tail, and anything after it; bytes on
    a real disk, any positive count in the simulator; 0: none); ``election``: quorum-state
    (``ElectionState()`` when there is no file); ``bootstrap``: ``bootstrap.checkpoint`` as
    ``(kraft_version, voters or None)``, None when there is no such file (kraft.version 0);
    ``directory_id``: meta.properties' (None: a disk formatted without one, the simulator's
    kraft.version 0); ``static_voters``: the configured ``controller.quorum.voters`` (the
    voters at kraft.version 0)."""

    records: Sequence[Record]
    torn: int
    election: ElectionState
    bootstrap: tuple[int, VoterSet | None] | None
    directory_id: str | None
    static_voters: VoterSet


@dataclasses.dataclass(frozen=True)
class Recovered:
    """What the quorum core starts from: ``records`` (the log it holds), ``cut_torn_tail``
    (True: the adapter truncates the disk's log after them, cutting the torn tail; False when
    nothing is torn), ``election`` (for :meth:`QuorumCore.start`), ``history`` (the voter sets by
    offset before the log's records are read: the bootstrap set; the core adds the log's),
    ``directory_id`` (for :class:`QuorumConfig`)."""

    records: Sequence[Record]
    cut_torn_tail: bool
    election: ElectionState
    history: VoterHistory
    directory_id: str | None


def recover(disk: DiskContents, policy: Unsafe = SAFE) -> Recovered:
    """The state a node restarts from, given what its disk holds (the module docstring's
    rules) and the unsafe ``policy``. Pure: the same contents give the same result. Raises
    ValueError when ``disk.records`` do not start at offset 0 or skip an offset (an adapter's
    bug: its scan stops at the first gap)."""
    for i, r in enumerate(disk.records):
        if r.offset != i:
            raise ValueError(f"recovered record {i} has offset {r.offset}: the scan must stop at a gap")
    election = disk.election
    if policy.recover_epoch_from_log:
        last_epoch = disk.records[-1].epoch if disk.records else 0
        if last_epoch < election.epoch:
            election = ElectionState(last_epoch)      # the bug: quorum-state's newer epoch and vote dropped
    history = bootstrap_history(disk.bootstrap, disk.static_voters)
    return Recovered(disk.records, disk.torn > 0, election, history, disk.directory_id)


def start_quorum(recovered: Recovered, config: QuorumConfig, *, clock: Callable[[], float], rng: random.Random,
                 wall_clock: Callable[[], int] | None = None,
                 log: RecordLog | None = None) -> tuple[QuorumCore, list]:
    """The quorum core built from ``recovered`` and its first step: ``(core, start effects)``.

    ``config`` must carry ``recovered.directory_id``; ``log`` is the in-memory log the core
    shares with a real disk's :class:`kraft.storage.log.Log` (it must hold exactly
    ``recovered.records``; None: a fresh :class:`RecordLog` of them). ``clock`` (monotonic ms),
    ``rng`` and ``wall_clock`` (ms) as :class:`QuorumCore` takes them. Raises ValueError when
    ``log`` or ``config`` disagree with ``recovered``."""
    if config.directory_id != recovered.directory_id:
        raise ValueError(f"config directory id {config.directory_id!r}, recovered {recovered.directory_id!r}")
    if log is None:
        log = RecordLog(list(recovered.records))
    elif log.end_offset != len(recovered.records):
        raise ValueError(f"the log holds {log.end_offset} records, {len(recovered.records)} were recovered")
    core = QuorumCore(config, log, recovered.history, clock=clock, rng=rng, wall_clock=wall_clock)
    return core, core.start(recovered.election)
