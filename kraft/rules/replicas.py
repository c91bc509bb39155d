"""The leader's view of every replica that fetches from it: voters and observers
(KIP-595 DescribeQuorum ReplicaState; KIP-853 tracks replicas by (id, directory id)).

Which replicas count is decided by the current voter set, passed in on every
call, so a voter change takes effect at once: the positions and read rounds
of the voters feed the pure majority rule of :mod:`kraft.rules.high_watermark`.
"""
from __future__ import annotations

from .voter_set import ReplicaKey, VoterSet

#: An observer not heard from for this long is dropped from DescribeQuorum (ms; Kafka's
#: observer session timeout).
OBSERVER_SESSION_TIMEOUT_MS = 300_000


class ReplicaProgress:
    """One replica: ``end_offset`` (its last FetchOffset, -1 before any), ``last_fetch``
    (the leader's clock, ms), ``read_round (newest read-index round it echoed),
    ``last_fetch_wall_ms`` / ``last_caught_up_wall_ms`` (wall clock ms, -1: never) and
    ``directory_id`` (the one it last sent)."""

    __slots__ = ("end_offset", "last_fetch", "last_fetch_wall_ms", "last_caught_up_wall_ms", "directory_id",
                 "read_round")

    def __init__(self, directory_id: str | None = None) -> None:
        self.end_offset = -1
        self.last_fetch = float("-inf")
        self.read_round = 0
        self.last_fetch_wall_ms = -1
        self.last_caught_up_wall_ms = -1
        self.directory_id = directory_id


class ReplicaTracker:
    """Progress of every replica, keyed by (id, directory id).

    A voter without a directory id (kraft.version 0) is tracked by id alone,
    whatever directory id its Fetch carries; every other replica by its full key.
    What a voter set implies (which keys are voters', whether the local replica is
    one) is worked out once per voter set and local key (both immutable), as these
    calls run on every Fetch.
    """

    def __init__(self) -> None:
        self._by_key: dict[tuple, ReplicaProgress] = {}
        self._layout_of: tuple | None = None     # (voters, local) the layout below is for
        self._local_voter = False
        self._others: list[tuple[int, tuple]] = []   # every other voter: (id, tracking key)
        self._ids_of: VoterSet | None = None         # the voter set _by_id_only is for
        self._by_id_only: frozenset = frozenset()    # voter ids tracked by id alone

    def reset(self) -> None:
        """Forget everything (a new leadership)."""
        self._by_key = {}

    def _layout(self, voters: VoterSet, local: ReplicaKey) -> None:
        lay = self._layout_of
        if lay is not None and lay[0] is voters and lay[1] is local:
            return
        self._layout_of = (voters, local)
        self._local_voter = voters.is_voter(local)
        self._others = [(v.id, (v.id, v.directory_id)) for v in voters.voters if not v.matches(local)]

    def _key(self, voters: VoterSet, rid: int, rdir: str | None) -> tuple:
        if self._ids_of is not voters:
            self._ids_of = voters
            self._by_id_only = frozenset(v.id for v in voters.voters if v.directory_id is None)
        return (rid, None) if rid in self._by_id_only else (rid, rdir)

    def get(self, voters: VoterSet, key: ReplicaKey) -> ReplicaProgress | None:
        """The progress of ``key`` (None: never fetched in this leadership)."""
        return self._by_key.get(self._key(voters, key.id, key.directory_id))

    def on_fetch(self, voters: VoterSet, key: ReplicaKey, offset: int, echoed: int, max_round: int,
                 leader_end: int, now: float, wall_ms: int) -> ReplicaProgress:
        """Record a Fetch from ``key`` at FetchOffset ``offset`` echoing read round ``echoed``
        (ignored above ``max_round``, a round never sent); caught up when ``offset`` >=
        ``leader_end``. ``now`` the leader's clock (ms), ``wall_ms`` wall clock ms."""
        k = self._key(voters, key.id, key.directory_id)
        p = self._by_key.get(k)
        if p is None:
            p = self._by_key[k] = ReplicaProgress()
        p.end_offset = offset
        p.last_fetch = now
        if echoed <= max_round and echoed > p.read_round:
            p.read_round = echoed
        p.last_fetch_wall_ms = wall_ms
        p.directory_id = key.directory_id
        if offset >= leader_end:
            p.last_caught_up_wall_ms = wall_ms
        return p

    def others(self, voters: VoterSet, local: ReplicaKey) -> list[tuple[int, ReplicaProgress | None]]:
        """``(voter id, progress or None)`` for every voter but the local replica."""
        self._layout(voters, local)
        by = self._by_key
        return [(vid, by.get(k)) for vid, k in self._others]

    def voter_values(self, voters: VoterSet, local: ReplicaKey, own: int, attr: str, missing: int) -> list[int]:
        """One value per voter, for the majority rule: ``own`` for the local replica if it
        is a voter (a removed leader does not count itself; KAFKA-16530), else the
        voter's ``attr`` (``"end_offset"`` or ``"read_round"``), ``missing`` if never heard."""
        self._layout(voters, local)
        by = self._by_key
        out = [own] if self._local_voter else []
        for _, k in self._others:
            p = by.get(k)
            out.append(missing if p is None else getattr(p, attr))
        return out

    def live_voters(self, voters: VoterSet, local: ReplicaKey, now: float, window_s: float) -> int:
        """Voters that fetched within ``window_s`` before ``now`` (the local one counts if it
        is a voter); KIP-996 check quorum. Both in the unit of the fetch times (the quorum
        core's clock: ms)."""
        live = 1 if voters.is_voter(local) else 0
        return live + sum(1 for _, p in self.others(voters, local) if p and now - p.last_fetch < window_s)

    def successors(self, voters: VoterSet, local: ReplicaKey) -> list[int]:
        """Other voters' ids sorted by fetch offset, descending (EndQuorumEpoch's
        PreferredSuccessors)."""
        return [vid for vid, p in sorted(self.others(voters, local),
                                         key=lambda t: -(t[1].end_offset if t[1] else -1))]

    def describe(self, voters: VoterSet, local: ReplicaKey, local_end: int, now_ms: int) -> tuple[list, list]:
        """DescribeQuorum's ``(CurrentVoters, Observers)``: dicts of ReplicaId,
        ReplicaDirectoryId, LogEndOffset, LastFetchTimestamp, LastCaughtUpTimestamp (ms).
        The local replica is listed as caught up now, among the voters or the observers."""
        def entry(rid, rdir, p):
            return {"ReplicaId": rid, "ReplicaDirectoryId": rdir,
                    "LogEndOffset": p.end_offset if p else -1,
                    "LastFetchTimestamp": p.last_fetch_wall_ms if p else -1,
                    "LastCaughtUpTimestamp": p.last_caught_up_wall_ms if p else -1}
        me = {"ReplicaId": local.id, "ReplicaDirectoryId": local.directory_id, "LogEndOffset": local_end,
              "LastFetchTimestamp": now_ms, "LastCaughtUpTimestamp": now_ms}
        out_voters = [me] if voters.is_voter(local) else []
        for v in voters.voters:
            if not v.matches(local):
                p = self.get(voters, v.key)
                out_voters.append(entry(v.id, v.directory_id or (p.directory_id if p else None), p))
        observers = [] if voters.is_voter(local) else [me]
        for k, p in sorted(self._by_key.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            key = ReplicaKey(*k)
            if voters.is_voter(key) or key == local:
                continue
            if now_ms - p.last_fetch_wall_ms > OBSERVER_SESSION_TIMEOUT_MS:
                del self._by_key[k]
                continue
            observers.append(entry(k[0], k[1], p))
        return out_voters, observers
