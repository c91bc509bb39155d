"""Follower-side replication (KIP-595 Fetch, DivergingEpoch truncation) and an observer's
search for the leader (KIP-853): a mixin of :class:`kraft.quorum.core.QuorumCore`.

A follower has one Fetch in flight to its leader. What a response brings is appended
(WriteLog) and fsynced (SyncLog) before the next Fetch reports the new log end offset
(the leader counts it as stored); the high watermark becomes ``min(leader's, own log
end offset)``. A failed Fetch is retried after ``retry_backoff_ms``.

An observer that knows no leader (Unattached, not a voter), or whose leader stopped
answering for a fetch timeout, sends Fetch (MaxWaitMs 0) to the bootstrap servers in
turn (at kraft.version 1 without any: to the voters), every ``max(retry_backoff_ms,
50)`` ms; any answer naming a leader makes it a Follower of that leader.
"""
from __future__ import annotations

import logging

from ..core import errors
from ..core.events import FatalError, Send, WriteLog
from ..core.record_log import LogError
from ..core.states import StateKind
from .messages import FetchRequest, FetchResponse

log = logging.getLogger("kraft.quorum")

UNATTACHED, FOLLOWER = StateKind.UNATTACHED, StateKind.FOLLOWER
ELECTION, FETCH = "election", "fetch"
#: Least back-off between an observer's discovery Fetches (ms).
DISCOVERY_BACKOFF_MIN_MS = 50


class FollowerReplication:
    """The follower's side of replication (needs the core's state)."""

    def _init_follower(self) -> None:
        self.echo_round = 0          # Follower: the newest read round the leader sent us
        self.fetching = False        # Follower: a Fetch is in flight
        self._sync_gen = -1          # Follower: fetch again once the pending fsync is done
        self._discovery_i = 0

    def _fetch_request(self, max_wait_ms: int) -> FetchRequest:
        lg = self.log
        return FetchRequest(self.id, self.key.directory_id, self.election.epoch, lg.end_offset, lg.last_epoch,
                            max_wait_ms, self.echo_round)

    def _start_fetching(self) -> None:
        self.echo_round = 0
        self._send_fetch()

    def _send_fetch(self) -> None:
        self.fetching = True
        self.out.append(Send(self.election.leader_id, self._fetch_request(self.cfg.fetch_max_wait_ms), self.gen))

    def _on_fetch_timer(self) -> None:
        """The back-off after a failed Fetch (or between discovery Fetches) is over."""
        if self.kind is FOLLOWER and not self.fetching and self._sync_gen != self.gen:
            self._send_fetch()
        elif self.kind is UNATTACHED and not self.is_voter:
            self._discover()

    def _on_fetch_reply(self, ev) -> None:
        if ev.gen != self.gen:
            return
        if self.kind is UNATTACHED:
            self._on_discovery_reply(ev)
            return
        if self.kind is not FOLLOWER:
            return
        self.fetching = False
        resp = ev.response
        if resp is not None and self._handle_fetch_response(resp):
            if self.log.end_offset > self.durable_end:
                self._sync_gen = self.gen            # durable before the next Fetch reports it
                self._sync()
            else:
                self._send_fetch()
        elif ev.gen == self.gen:
            self._set_deadline(FETCH, self.now + self.cfg.retry_backoff_ms)

    def _fetch_after_sync(self) -> None:
        if self._sync_gen == self.gen and self.kind is FOLLOWER and self.durable_end >= self.log.end_offset:
            self._sync_gen = -1
            self._send_fetch()

    def _handle_fetch_response(self, resp: FetchResponse) -> bool:
        """Apply one Fetch response; returns True to fetch again at once."""
        if self.observe(resp.leader_epoch, resp.leader_id):
            return False
        if resp.error_code != errors.NONE:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("Fetch error %s", errors.name(resp.error_code))
            return False
        if resp.leader_epoch < self.election.epoch:
            return False
        if resp.read_round > self.echo_round:
            self.echo_round = resp.read_round     # echoed in our next Fetch: it confirms the leader's reads
        if resp.diverging is not None:
            self._truncate_diverging(*resp.diverging)
            self._fetched_ok()
            return True
        lg = self.log
        end, appended, bad = lg.end_offset, [], False
        for r in resp.records:
            if r.offset != end:
                if r.offset > end:
                    break
                continue
            try:
                lg.append(r)
            except LogError as e:          # e.g. an older epoch after ours (no-fetch-validation)
                log.warning("cannot append fetched record at offset %d: %s", r.offset, e)
                bad = True
                break
            appended.append(r)
            end += 1
        if appended:
            self.out.append(WriteLog(appended))
        if bad:
            return False
        hw = min(resp.high_watermark, lg.end_offset)
        if hw > self.hw:
            self.hw = hw
            self._apply_committed()
        self._fetched_ok()
        return True

    def _fetched_ok(self) -> None:
        self.has_fetched = True
        self._set_deadline(ELECTION, self.now + self.cfg.fetch_timeout_ms)

    def _truncate_diverging(self, epoch: int, end_offset: int) -> None:
        """KIP-595: truncate to the end of the diverging epoch (never below the high watermark).
        Raises FatalError when that would remove committed records."""
        local_epoch, local_end = self.log.end_offset_for_epoch(epoch)
        target = min(local_end, end_offset) if local_epoch == epoch else local_end
        if target < self.hw:
            raise FatalError(f"leader asked for truncation to offset {target} (diverging epoch "
                             f"{epoch} end {end_offset}), below the high watermark {self.hw}")
        removed = self.log.truncate_to(target)
        if removed:
            self._truncated(target)
        log.info("DivergingEpoch(epoch=%d, end=%d): truncated %d records to offset %d",
                 epoch, end_offset, removed, target)

    # -- observers: finding the leader ---------------------------------------------------------
    def _discovery_targets(self) -> list:
        """Where an observer asks for the leader: the bootstrap servers, else (kraft.version 1)
        the voters; empty at kraft.version 0 without bootstrap servers."""
        if self.cfg.bootstrap_servers:
            return list(self.cfg.bootstrap_servers)
        if self.history.kraft_version >= 1:
            return [v.id for v in self.voters.voters if v.id != self.id]
        return []

    def _start_discovery(self) -> None:
        self._discovery_i = 0
        self._discover()

    def _discover(self) -> None:
        targets = self._discovery_targets()
        if not targets:
            return
        to = targets[self._discovery_i % len(targets)]
        self._discovery_i += 1
        self.out.append(Send(to, self._fetch_request(0), self.gen))

    def _on_discovery_reply(self, ev) -> None:
        resp = ev.response
        if resp is not None and self.observe(resp.leader_epoch, resp.leader_id):
            log.info("observer found leader %d in epoch %d via %s", self.election.leader_id,
                     self.election.epoch, ev.to)
            return
        if not self.is_voter:
            self._set_deadline(FETCH, self.now + max(self.cfg.retry_backoff_ms, DISCOVERY_BACKOFF_MIN_MS))
