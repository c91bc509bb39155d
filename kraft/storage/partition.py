"""One partition replica's storage on a broker, over its pure state
(:class:`kraft.replication.ReplicaState`): the log and the high watermark checkpoint.

Storage (docs/data-plane.md, "Storage"): a :class:`kraft.storage.log.Log` in
``<log.dir>/partitions/<topic>-<partition>/`` holding data records (epoch = the leader
epoch, payload = the value), and ``replication-offset-checkpoint`` there with the high
watermark, in Kafka's checkpoint format (``0``, ``1``, ``<topic> <partition> <hw>``).

:meth:`PartitionReplica.apply` carries out the disk effects of the state (WriteLog,
SyncLog, TruncateLog, CheckpointHighWatermark). Opened with a
:class:`kraft.replication.BrokerCore`, the state is the core's (the broker adapter,
kraft/broker/service.py, drives it); opened alone, the replica drives its own state, and
:meth:`wait_produce` answers with asyncio futures (for tests and tools).
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from ..core.events import CheckpointHighWatermark, Reply, SyncDone, SyncLog, TruncateLog, WriteLog
from ..replication.replica import FOLLOWER, LEADER, NONE, ReplicaState
from .durable import make_dirs, write_atomic
from .log import Log

__all__ = ["CHECKPOINT", "FOLLOWER", "LEADER", "NONE", "PartitionReplica", "partition_dir", "read_checkpoint",
           "write_checkpoint"]
CHECKPOINT = "replication-offset-checkpoint"


def partition_dir(data_dir: Path, topic: str, partition: int) -> Path:
    """``<log.dir>/partitions/<topic>-<partition>``."""
    return Path(data_dir) / "partitions" / f"{topic}-{partition}"


def read_checkpoint(path: Path) -> int:
    """The high watermark in a ``replication-offset-checkpoint`` file; 0 when it is missing
    or malformed (a replica that never checkpointed knows nothing committed)."""
    try:
        lines = path.read_text().split("\n")
        return max(0, int(lines[2].split()[2]))
    except (OSError, ValueError, IndexError):
        return 0


def write_checkpoint(path: Path, topic: str, partition: int, hw: int) -> None:
    """Write the checkpoint durably (temp file, fsync, rename). Raises OSError."""
    write_atomic(path, f"0\n1\n{topic} {partition} {hw}\n".encode())


class PartitionReplica:
    """A partition's replica on broker ``broker_id``: ``log`` (the disk log) and ``state``
    (the :class:`ReplicaState`, after :meth:`open`), whose fields read through (``hw``,
    ``role``, ``isr``, ``pending_isr``, ...)."""

    def __init__(self, data_dir: Path, topic: str, partition: int, broker_id: int,
                 segment_bytes: int, page_cache_ack: bool = False, hw_below_min_isr: bool = False):
        self.topic, self.partition, self.broker_id = topic, partition, broker_id
        self.key = (topic, partition)
        self.dir = partition_dir(data_dir, topic, partition)
        self.log = Log(self.dir, segment_bytes=segment_bytes, fsync=True)
        self.page_cache_ack, self.hw_below_min_isr = page_cache_ack, hw_below_min_isr
        self.state: ReplicaState | None = None
        self._out: list = []
        self._futures: dict[int, asyncio.Future] = {}
        self._tokens = 0

    def __getattr__(self, name: str):
        """The state's fields and pure methods read through (``hw``, ``role``, ``isr``,
        ``hw_isr()``, ``isr_proposal()``, ...)."""
        state = self.__dict__.get("state")
        if state is None:
            raise AttributeError(name)
        return getattr(state, name)

    @property
    def pending_isr(self):
        """The ISR proposed with AlterPartition and not yet in the image, or None."""
        return self.state.pending_isr

    @pending_isr.setter
    def pending_isr(self, value) -> None:
        self.state.pending_isr = value

    @property
    def name(self) -> str:
        """``topic-partition``."""
        return f"{self.topic}-{self.partition}"

    # -- storage ------------------------------------------------------------------
    def open(self, core=None) -> ReplicaState:
        """startReplica: create the directory, open the log (cutting a torn tail), read the
        high watermark checkpoint (capped at the log end offset); the state is ``core``'s
        (a BrokerCore) when given. Raises OSError."""
        make_dirs(self.dir)
        self.log.open()
        hw = read_checkpoint(self.dir / CHECKPOINT)
        if core is not None:
            self.state = core.add_partition(self.key, self.log.index, hw)
        else:
            self.state = ReplicaState(self.key, self.broker_id, self.log.index, hw, self._out,
                                      page_cache_ack=self.page_cache_ack, hw_below_min_isr=self.hw_below_min_isr)
        return self.state

    def apply(self, e) -> list:
        """Carry out the disk effect ``e`` on this replica; returns the events it gives back
        (SyncDone)."""
        t = type(e)
        if t is WriteLog:
            self.log.write(e.records)
        elif t is SyncLog:
            self.log.flush()
            return [SyncDone(e.end, self.key)]
        elif t is TruncateLog:
            self.log.truncate_to(e.offset)
        elif t is CheckpointHighWatermark:
            write_checkpoint(self.dir / CHECKPOINT, self.topic, self.partition, e.hw)
        return []

    def close(self) -> None:
        """Flush, checkpoint and close the log (waiting produces of a replica driving its own
        state get REQUEST_TIMED_OUT)."""
        st = self.state
        if st.out is self._out:
            self._do(st.fail_waiters, "broker shutting down")
        st.generation += 1
        try:
            self.log.flush()
            if st.hw != st.checkpointed:
                write_checkpoint(self.dir / CHECKPOINT, self.topic, self.partition, st.hw)
                st.checkpointed = st.hw
        finally:
            self.log.close()

    # -- driving its own state (tests, tools) ------------------------------------------
    def _run(self) -> None:
        while self._out:
            e = self._out.pop(0)
            if type(e) is Reply:
                fut = self._futures.pop(e.token, None)
                if fut is not None and not fut.done():
                    fut.set_result(e.msg.error_code)
            else:
                for ev in self.apply(e):
                    self.state.synced(ev.end)

    def _do(self, fn, *args):
        result = fn(*args)
        self._run()
        return result

    def checkpoint(self) -> None:
        """Write the high watermark checkpoint if it changed. Raises OSError."""
        self._do(self.state.checkpoint)

    def truncate_to(self, offset: int) -> int:
        """Truncate the log to ``offset``; returns the number of records removed."""
        return self._do(self.state.truncate_to, offset)

    def become_leader(self, *args, **kw) -> None:
        """See :meth:`ReplicaState.become_leader`."""
        self._do(lambda: self.state.become_leader(*args, **kw))

    def update_leader_state(self, *args) -> None:
        """See :meth:`ReplicaState.update_leader_state`."""
        self._do(self.state.update_leader_state, *args)

    def become_follower(self, leader_id: int, leader_epoch: int) -> None:
        """See :meth:`ReplicaState.become_follower`."""
        self._do(self.state.become_follower, leader_id, leader_epoch)

    def become_offline(self, leader_epoch: int) -> None:
        """See :meth:`ReplicaState.become_offline`."""
        self._do(self.state.become_offline, leader_epoch)

    def append(self, value) -> int:
        """Append ``value`` as a data record of the leader epoch (written, not fsynced)."""
        return self._do(self.state.append, value)

    def after_flush(self) -> None:
        """The log was flushed (:meth:`Log.flush`): the leader's counted end moved."""
        self._do(self.state.synced, self.log.flushed_end)

    def on_replica_fetch(self, replica_id: int, fetch_offset: int, now_ms: float) -> None:
        """See :meth:`ReplicaState.on_replica_fetch`."""
        self._do(self.state.on_replica_fetch, replica_id, fetch_offset, now_ms)

    def wait_produce(self, offset: int, acks: int) -> asyncio.Future:
        """A future answered with the Produce error code for the record at ``offset``
        (kraft/rules/produce.py ``outcome``)."""
        self._tokens += 1
        fut = self._futures[self._tokens] = asyncio.get_running_loop().create_future()
        self._do(self.state.wait_produce, self._tokens, offset, acks)
        return fut
