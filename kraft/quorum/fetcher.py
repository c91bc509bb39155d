"""The Fetches a follower and an observer send (KIP-595 Fetch, KIP-853 discovery); functions
over :class:`kraft.quorum.state.QuorumState`. What comes back is handled by
kraft/quorum/follower.py.

A follower has one Fetch in flight to its leader (``fetching``), with MaxWaitMs
``fetch_max_wait_ms``, reporting its log end offset and echoing the newest read round it
got. After records were copied it fetches again only once they are fsynced
(``sync_gen``): the next Fetch reports them as stored.

An observer that knows no leader (Unattached, not a voter), or whose leader stopped
answering for a fetch timeout, sends Fetch (MaxWaitMs 0) to the bootstrap servers in
turn (at kraft.version 1 without any: to the voters).
"""
from __future__ import annotations

from ..core.events import Send
from ..core.states import StateKind
from .messages import FetchRequest
from .state import QuorumState

FOLLOWER = StateKind.FOLLOWER


def fetch_request(s: QuorumState, max_wait_ms: int) -> FetchRequest:
    """A Fetch from our log end (and last epoch), echoing our read round."""
    lg = s.log
    return FetchRequest(s.id, s.key.directory_id, s.election.epoch, lg.end_offset, lg.last_epoch,
                        max_wait_ms, s.echo_round)


def start_fetching(s: QuorumState) -> None:
    """A new Follower: forget the read rounds of earlier leaders and fetch."""
    s.echo_round = 0
    send_fetch(s)


def send_fetch(s: QuorumState) -> None:
    """Send the Fetch to the leader (one in flight)."""
    s.fetching = True
    s.out.append(Send(s.election.leader_id, fetch_request(s, s.cfg.fetch_max_wait_ms), s.gen))


def fetch_after_sync(s: QuorumState) -> None:
    """The fsync a Follower's next Fetch waited for is done: fetch."""
    if s.sync_gen == s.gen and s.kind is FOLLOWER and s.durable.end >= s.log.end_offset:
        s.sync_gen = -1
        send_fetch(s)


# -- observers: finding the leader ---------------------------------------------------------
def discovery_targets(s: QuorumState) -> list:
    """Where an observer asks for the leader: the bootstrap servers, else (kraft.version 1)
    the voters; empty at kraft.version 0 without bootstrap servers."""
    if s.cfg.bootstrap_servers:
        return list(s.cfg.bootstrap_servers)
    if s.history.kraft_version >= 1:
        return [v.id for v in s.history.latest.voters if v.id != s.id]
    return []


def start_discovery(s: QuorumState) -> None:
    """Start asking for the leader, from the first target."""
    s.discovery_i = 0
    discover(s)


def discover(s: QuorumState) -> None:
    """Ask the next target (round robin) for the leader."""
    targets = discovery_targets(s)
    if not targets:
        return
    to = targets[s.discovery_i % len(targets)]
    s.discovery_i += 1
    s.out.append(Send(to, fetch_request(s, 0), s.gen))
