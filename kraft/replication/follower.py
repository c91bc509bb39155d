"""The follower side of a partition on a broker, without I/O: truncate, then fetch from the
leader (Kafka 0.8 replication design, ``becomeFollower`` and the ReplicaFetcherThread;
KIP-101 for the truncation). A mixin of :class:`kraft.replication.core.BrokerCore`.

Per partition and role generation (:attr:`ReplicaState.generation`), one request at a
time to the leader:

1. Truncation. ``truncate-to-hw`` (unsafe): to the local high watermark, at once, as
   0.8. Default: OffsetForLeaderEpoch for the log's last epoch and
   :func:`kraft.rules.truncation.leader_epoch_step`, repeated until the epochs agree.
2. ReplicaFetch from the log end offset, long-polled by the leader. Records are
   appended and fsynced (not under ``page-cache-ack``) before the next fetch reports
   the new offset; the high watermark becomes ``min(leader's, own log end offset)``.
   OFFSET_OUT_OF_RANGE (the leader's log ends below our fetch offset) truncates to the
   leader's log end offset.

A failed request or an error backs off ``fetch_backoff_ms`` and retries; a new
leadership (LeaderAndIsr) starts a new generation.
"""
from __future__ import annotations

import logging

from ..core import errors
from ..core.events import Send
from ..rules.truncation import leader_epoch_step, truncate_to_hw_target
from .messages import OffsetForLeaderEpochRequest, ReplicaFetchRequest
from .replica import FOLLOWER, ReplicaState

log = logging.getLogger("kraft.replica_fetcher")

TRUNCATE, FETCH = "truncate", "fetch"


class FollowerSide:
    """Truncation and fetching of the partitions this broker follows (needs the core's state)."""

    def _start_following(self, st: ReplicaState) -> None:
        st.phase, st.fetching, st.sync_wait = TRUNCATE, False, False
        if self.policy.truncate_to_hw:
            st.truncate_to(truncate_to_hw_target(st.hw, st.log.end_offset))
            st.phase = FETCH
        self._follow(st)

    def _follow(self, st: ReplicaState) -> None:
        """Send the next request of the current phase to the leader."""
        if st.role != FOLLOWER:
            return
        if st.phase == TRUNCATE and st.log.end_offset == 0:
            st.phase = FETCH
        if st.phase == TRUNCATE:
            msg = OffsetForLeaderEpochRequest(st.key, st.leader_epoch, st.log.last_epoch)
        else:
            msg = ReplicaFetchRequest(st.key, self.id, st.leader_epoch, st.log.end_offset,
                                      self.cfg.fetch_max_records, self.cfg.replica_fetch_wait_max_ms)
        st.fetching = True
        self.out.append(Send(st.leader_id, msg, st.generation))

    def _back_off(self, st: ReplicaState) -> None:
        self._set_deadline(("fetch", st.key), self.now + self.cfg.fetch_backoff_ms)

    def _on_fetch_backoff(self, key) -> None:
        st = self.states.get(key)
        if st is not None and st.role == FOLLOWER and not st.fetching and not st.sync_wait:
            self._follow(st)

    def _on_follower_reply(self, ev) -> None:
        req = ev.request
        st = self.states.get(req.key)
        if st is None or ev.gen != st.generation or st.role != FOLLOWER:
            return
        st.fetching = False
        resp = ev.response
        if resp is None or resp.error_code not in (errors.NONE, errors.OFFSET_OUT_OF_RANGE):
            if resp is not None and log.isEnabledFor(logging.DEBUG):
                log.debug("%s: %s from leader %d: %s", st.name, type(req).__name__, st.leader_id,
                          errors.name(resp.error_code))
            self._back_off(st)
            return
        if type(req) is OffsetForLeaderEpochRequest:
            self._on_leader_epoch(st, req, resp)
        else:
            self._on_fetched(st, resp)

    def _on_leader_epoch(self, st: ReplicaState, req, resp) -> None:
        if st.log.last_epoch != req.leader_epoch:
            self._follow(st)                       # the log changed meanwhile: ask again
            return
        if resp.error_code != errors.NONE:
            self._back_off(st)
            return
        step = leader_epoch_step(st.log, resp.epoch, resp.end_offset, st.hw)
        st.truncate_to(step.offset)
        if step.done:
            st.phase = FETCH
        self._follow(st)

    def _on_fetched(self, st: ReplicaState, resp) -> None:
        if resp.error_code == errors.OFFSET_OUT_OF_RANGE:
            end = resp.log_end_offset
            if 0 <= end < st.log.end_offset:
                log.warning("%s: leader %d's log ends at %d, below ours (%d): truncating",
                            st.name, st.leader_id, end, st.log.end_offset)
                st.truncate_to(end)
                self._follow(st)
            else:
                self._back_off(st)
            return
        if st.apply_fetched(resp.records, resp.high_watermark) and not self.policy.page_cache_ack:
            st.sync_wait = True                   # durable before the next fetch reports it
            st.sync()
        else:
            self._follow(st)

    def _follower_synced(self, st: ReplicaState) -> None:
        if st.sync_wait and st.role == FOLLOWER and st.durable_end >= st.log.end_offset:
            st.sync_wait = False
            self._follow(st)
