"""Voter keys, voter sets and the voter-set history of a log (KIP-853).

Pure: no I/O. A replica is identified by its :class:`ReplicaKey` (node id,
directory id). At kraft.version 0 the voters come from the static
``controller.quorum.voters`` config and carry no directory id (``None``
matches any directory id, as Kafka's ZERO_UUID voters do). At kraft.version
1 the voter set lives in the log as KRaftVoters (VotersRecord) control
records; the set in effect is the latest one in the log, committed or not
(KIP-853, "Reconfiguration"), falling back to the bootstrap set written by
``format``; truncating a VotersRecord away reverts to the one before.

VotersRecord payload (our JSON form of Kafka's ``VotersRecord``)::

    {"Version": 0, "Voters": [{"VoterId": int, "VoterDirectoryId": str,
      "Endpoints": [{"Name": "CONTROLLER", "Host": str, "Port": int}],
      "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": 1}}, ...]}

KRaftVersionRecord payload: ``{"Version": 0, "KRaftVersion": int}``.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Iterable

from ..core.records import KRAFT_VERSION, VOTERS, Record

log = logging.getLogger("kraft.voter_set")

#: The listener name every endpoint carries (Kafka's default controller listener).
LISTENER_NAME = "CONTROLLER"
#: The kraft.version range this implementation supports.
MIN_KRAFT_VERSION, MAX_KRAFT_VERSION = 0, 1


@dataclasses.dataclass(frozen=True, order=True)
class ReplicaKey:
    """A replica's identity: ``id`` (node id) and ``directory_id`` (str, or None: unknown)."""

    id: int
    directory_id: str | None = None


@dataclasses.dataclass(frozen=True)
class VoterNode:
    """One voter: ``id``, ``directory_id`` (None at kraft.version 0), endpoint ``host``:``port``."""

    id: int
    directory_id: str | None
    host: str
    port: int

    @property
    def key(self) -> ReplicaKey:
        """The voter's :class:`ReplicaKey`."""
        return ReplicaKey(self.id, self.directory_id)

    def matches(self, key: ReplicaKey) -> bool:
        """True iff ``key`` is this voter: same id, and same directory id unless ours is None."""
        return key.id == self.id and (self.directory_id is None or self.directory_id == key.directory_id)


@dataclasses.dataclass(frozen=True)
class VoterSet:
    """An immutable set of voters, at most one per node id (KIP-853 VoterSet)."""

    voters: tuple[VoterNode, ...] = ()

    def __post_init__(self) -> None:
        ids = [v.id for v in self.voters]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate voter id in {ids}")
        object.__setattr__(self, "voters", tuple(sorted(self.voters, key=lambda v: v.id)))
        object.__setattr__(self, "_by_id", {v.id: v for v in self.voters})     # not a field: a lookup

    def __len__(self) -> int:
        return len(self.voters)

    @property
    def ids(self) -> list[int]:
        """Voter ids, ascending."""
        return [v.id for v in self.voters]

    @property
    def majority(self) -> int:
        """Votes (or copies) a majority needs: ``len // 2 + 1``."""
        return len(self.voters) // 2 + 1

    def get(self, node_id: int) -> VoterNode | None:
        """The voter with ``node_id``, or None."""
        return self._by_id.get(node_id)

    def is_voter(self, key: ReplicaKey) -> bool:
        """True iff ``key`` is a voter (a voter without directory id matches any)."""
        v = self.get(key.id)
        return v is not None and v.matches(key)

    def conflicts(self, key: ReplicaKey) -> bool:
        """True iff ``key.id`` is a voter under another known directory id (e.g. a wiped voter)."""
        v = self.get(key.id)
        return (v is not None and v.directory_id is not None and key.directory_id is not None
                and v.directory_id != key.directory_id)

    def add(self, node: VoterNode) -> "VoterSet | None":
        """A new set with ``node`` added; None if its id is already a voter."""
        return None if self.get(node.id) else VoterSet(self.voters + (node,))

    def remove(self, key: ReplicaKey) -> "VoterSet | None":
        """A new set without the voter ``key`` (id and directory id must both match); None if
        ``key`` is not a voter."""
        v = self.get(key.id)
        if v is None or v.key != key:
            return None
        return VoterSet(tuple(x for x in self.voters if x.id != key.id))

    def update(self, node: VoterNode) -> "VoterSet | None":
        """A new set with voter ``node.key``'s endpoint replaced; None if it is not a voter."""
        v = self.get(node.id)
        if v is None or v.key != node.key:
            return None
        return VoterSet(tuple(node if x.id == node.id else x for x in self.voters))

    def to_payload(self) -> dict:
        """The VotersRecord payload (see the module docstring)."""
        return {"Version": 0, "Voters": [
            {"VoterId": v.id, "VoterDirectoryId": v.directory_id,
             "Endpoints": [{"Name": LISTENER_NAME, "Host": v.host, "Port": v.port}],
             "KRaftVersionFeature": {"MinSupportedVersion": MIN_KRAFT_VERSION,
                                     "MaxSupportedVersion": MAX_KRAFT_VERSION}}
            for v in self.voters]}

    @classmethod
    def from_payload(cls, payload: object) -> "VoterSet":
        """Inverse of :meth:`to_payload`. Raises ValueError on a malformed payload."""
        try:
            out = []
            for v in payload["Voters"]:
                host, port = endpoint_of(v["Endpoints"])
                vid, vdir = v["VoterId"], v["VoterDirectoryId"]
                if not isinstance(vid, int) or isinstance(vid, bool) or not (vdir is None or isinstance(vdir, str)):
                    raise ValueError(f"bad voter {v!r}")
                out.append(VoterNode(vid, vdir, host, port))
            return cls(tuple(out))
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed VotersRecord {payload!r}: {e!r}") from None

    @classmethod
    def from_static(cls, voters: Iterable) -> "VoterSet":
        """The kraft.version 0 set from config voters (objects with ``id``, ``host``, ``port``)."""
        return cls(tuple(VoterNode(v.id, None, v.host, v.port) for v in voters))


def endpoint_of(listeners: object) -> tuple[str, int]:
    """``(host, port)`` of the first listener in ``[{"Name", "Host", "Port"}, ...]`` (Kafka's
    Listeners / Endpoints). Raises ValueError when there is none or it is malformed."""
    if not isinstance(listeners, list) or not listeners:
        raise ValueError("no listener given")
    first = listeners[0]
    if not isinstance(first, dict):
        raise ValueError(f"malformed listener {first!r}")
    host, port = first.get("Host"), first.get("Port")
    if not isinstance(host, str) or not host or not isinstance(port, int) or isinstance(port, bool) \
            or not 0 < port < 65536:
        raise ValueError(f"malformed listener {first!r}")
    return host, port


def addressed_to(local: ReplicaKey, voter_id: object, voter_directory_id: object) -> bool:
    """True iff a request's (VoterId, VoterDirectoryId) names ``local`` (Kafka's
    isValidVoterKey): a missing VoterId matches, a given one must be ours, and so must a
    given directory id. A False is answered INVALID_VOTER_KEY."""
    if voter_id is None:
        return True
    if voter_id != local.id:
        return False
    return voter_directory_id is None or voter_directory_id == local.directory_id


def parse_initial_controllers(text: str) -> VoterSet:
    """Parse ``--initial-controllers``: ``id@host:port:directory-id,...`` (as Kafka's
    StorageTool). Raises ValueError naming a malformed entry or a duplicate id."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            vid, rest = item.split("@", 1)
            host, port, dir_id = rest.rsplit(":", 2)
            if not host or not dir_id or any(c.isspace() for c in dir_id):
                raise ValueError
            out.append(VoterNode(int(vid), dir_id, host, int(port)))
        except ValueError:
            raise ValueError(f"--initial-controllers: malformed entry {item!r}, "
                             f"expected id@host:port:directory-id") from None
    if not out:
        raise ValueError("--initial-controllers is empty")
    return VoterSet(tuple(out))


class VoterHistory:
    """The voter set and kraft.version as of each offset of a log (Kafka's VoterSetHistory and
    KRaftControlRecordStateMachine).

    ``bootstrap`` is the set at offset -1 (the bootstrap checkpoint, or the
    static config at kraft.version 0), ``kraft_version`` its version. Attach
    it to a :class:`kraft.storage.log.Log` as a listener: :meth:`on_append` sees every
    record appended or loaded, :meth:`on_truncate` every truncation.
    """

    def __init__(self, bootstrap: VoterSet, kraft_version: int = 0):
        self.bootstrap = bootstrap
        self.bootstrap_version = kraft_version
        self._sets: list[tuple[int, VoterSet]] = []     # (offset, set), ascending offsets
        self._versions: list[tuple[int, int]] = []      # (offset, kraft.version)

    @property
    def latest(self) -> VoterSet:
        """The voter set in effect: the latest VotersRecord's, else the bootstrap one."""
        return self._sets[-1][1] if self._sets else self.bootstrap

    @property
    def last_offset(self) -> int:
        """Offset of the latest VotersRecord, or -1 when the set is the bootstrap one."""
        return self._sets[-1][0] if self._sets else -1

    @property
    def kraft_version(self) -> int:
        """The latest kraft.version (KRaftVersionRecord), else the bootstrap one."""
        return self._versions[-1][1] if self._versions else self.bootstrap_version

    def start_of_epoch_records(self) -> list[tuple[str, dict]]:
        """What a new leader appends after its LeaderChange (Kafka's LeaderState
        appendStartOfEpochControlRecords): at kraft.version >= 1 with no VotersRecord in the
        log yet, a KRaftVersion and a KRaftVoters record of the bootstrap set, as
        ``[(type, payload), ...]``; otherwise nothing."""
        if self.kraft_version < 1 or self._sets:
            return []
        return [(KRAFT_VERSION, {"Version": 0, "KRaftVersion": self.kraft_version}),
                (VOTERS, self.bootstrap.to_payload())]

    def on_append(self, record: Record) -> None:
        """Track a record now at ``record.offset``; a malformed control record is logged and
        ignored."""
        try:
            if record.type == VOTERS:
                self._sets.append((record.offset, VoterSet.from_payload(record.payload)))
                log.info("voter set at offset %d: %s", record.offset, self.latest.ids)
            elif record.type == KRAFT_VERSION:
                v = record.payload["KRaftVersion"]
                if not isinstance(v, int) or isinstance(v, bool):
                    raise ValueError(f"bad KRaftVersion {v!r}")
                self._versions.append((record.offset, v))
        except (ValueError, TypeError, KeyError) as e:
            log.warning("ignoring malformed %s record at offset %d: %s", record.type, record.offset, e)

    def on_truncate(self, offset: int) -> None:
        """Forget the records at ``offset`` and above (their voter sets no longer apply)."""
        before = self.last_offset
        while self._sets and self._sets[-1][0] >= offset:
            self._sets.pop()
        while self._versions and self._versions[-1][0] >= offset:
            self._versions.pop()
        if self.last_offset != before:
            log.info("truncation to %d reverted the voter set to offset %d: %s",
                     offset, self.last_offset, self.latest.ids)
