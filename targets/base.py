"""The DB interface (Jepsen's ``db``): what the runner, nemeses and workloads may ask of a
system under test, whichever it is (``--db kraft`` or ``--db kafka``).

A DB drives the system's processes on the nodes of a :class:`clusters.remote.Cluster`
through its :class:`~clusters.remote.Remote`. Every method that acts on one node may
raise ``clusters.remote.RemoteError`` when the node cannot be reached.
"""
from __future__ import annotations

import abc
import logging
from pathlib import Path
from typing import Callable, Iterable, Protocol

from clusters.remote import Cluster, RemoteError

log = logging.getLogger("kraft_chaos.targets")


class QuorumClient(Protocol):
    """A DescribeQuorum client for one quorum node (KIP-595 / KIP-836).

    ``describe_quorum()`` returns the leader's answer as a dict with KIP-595's field
    names: ``LeaderId``, ``LeaderEpoch``, ``HighWatermark``, ``CurrentVoters`` and
    ``Observers`` (lists of ``{"ReplicaId", "LogEndOffset", ...}``). A node that does
    not lead raises ``history.outcomes.ClientError`` (``NOT_LEADER_OR_FOLLOWER``, with the
    ``leader_epoch`` and ``leader_id`` it named when it named them); an answer that
    may not have arrived raises ``history.outcomes.IndefiniteError``.
    """

    async def describe_quorum(self) -> dict: ...

    async def close(self) -> None: ...


#: ``(host, port, cluster_id, timeout_ms) -> QuorumClient``
QuorumClientFactory = Callable[[str, int, str, int], QuorumClient]


class QueueClientOptions(Protocol):
    """What a target's queue client reads of the queue workload's options (workloads/queue.py,
    ``QueueOptions``): ``timeout_ms`` (ms, per request), ``acks`` (0, 1 or -1) and
    ``idempotence`` (the producer's; a target without one ignores it)."""

    timeout_ms: int
    acks: int
    idempotence: bool


class DB(abc.ABC):
    """A system under test on ``cluster``'s nodes.

    Node names are ``cluster.nodes``; each has a numeric node id. The quorum nodes
    (voters, or Kafka's controllers) are where DescribeQuorum is sampled and what
    the nemeses target by default; the client nodes are where a workload's clients
    connect.
    """

    cluster: Cluster

    @property
    def remote(self):
        """The cluster's :class:`~clusters.remote.Remote`."""
        return self.cluster.remote

    # -- identity and addresses ---------------------------------------------------
    def node_id(self, node: str) -> int:
        """The node id of ``node``: its 1-based position in ``cluster.nodes`` (n1 -> 1).

        Raises ``ValueError`` for a node not in the cluster.
        """
        try:
            return self.cluster.nodes.index(node) + 1
        except ValueError:
            raise ValueError(f"unknown node {node!r}: nodes are {self.cluster.nodes}") from None

    def node_for_id(self, node_id: int) -> str:
        """The node name with id ``node_id``; raises ``ValueError`` if out of range."""
        if not 1 <= node_id <= len(self.cluster.nodes):
            raise ValueError(f"no node with id {node_id}: ids are 1..{len(self.cluster.nodes)}")
        return self.cluster.nodes[node_id - 1]

    @abc.abstractmethod
    def address(self, node: str) -> tuple[str, int]:
        """``(host, port)`` of the node's quorum (controller) listener."""

    def quorum_nodes(self) -> list[str]:
        """The nodes of the KRaft quorum (voters, or controllers), in node-id order."""
        return list(self.cluster.nodes)

    def client_nodes(self) -> list[str]:
        """The nodes a workload's clients connect to (by default the quorum nodes)."""
        return self.quorum_nodes()

    def client_endpoint(self, node: str) -> str:
        """``host:port`` where a workload's clients reach ``node`` (by default its quorum
        listener)."""
        host, port = self.address(node)
        return f"{host}:{port}"

    def fault_nodes(self, which: str = "quorum") -> list[str]:
        """The nodes the nemeses may target: ``quorum`` (the default), ``clients`` or
        ``all``. Raises ``ValueError`` for another choice."""
        if which == "quorum":
            return self.quorum_nodes()
        if which == "clients":
            return self.client_nodes()
        if which == "all":
            return list(self.cluster.nodes)
        raise ValueError(f"unknown nemesis targets {which!r}: choose from quorum, clients, all")

    def wait_for_brokers(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` (s) until every broker node is registered and unfenced in
        the cluster's metadata (a topic of replication factor B can then be created); True
        once they are, False after the timeout. Targets without brokers: True at once."""
        return True

    def queue_client_factory(self):
        """How the queue workload makes its producer/consumer: ``factory(bootstrap: tuple of
        "host:port", options: QueueClientOptions) -> QueueClient`` (workloads/queue.py's
        contract), or None when the target has no data plane (the default)."""
        return None

    def txn_client_factory(self):
        """The ``txn`` workload's transactional client: a ``targets.txn_client.TxnClientFactory``
        (its sessions: one producer and consumer each), made when called; raises
        ``ValueError`` when it cannot be made. A target without transactions has none: the
        workload's spec keeps it off such targets (workloads/registry.py); this default
        raises ``NotImplementedError``."""
        raise NotImplementedError(f"{type(self).__name__} has no transactional client")

    @abc.abstractmethod
    def quorum_client_factory(self) -> QuorumClientFactory:
        """How to make a :class:`QuorumClient`: ``factory(host, port, cluster_id, timeout_ms)``,
        each request bounded by ``timeout_ms`` (ms)."""

    # -- lifecycle ----------------------------------------------------------------
    @abc.abstractmethod
    def install_config(self, node: str) -> None:
        """Create the node's directories and write its configuration."""

    def setup_node(self, node: str) -> None:
        """Config, format and start one node. Raises ``RemoteError``."""
        self.install_config(node)
        self.format(node)
        self.start(node)

    @abc.abstractmethod
    def setup(self) -> None:
        """Configure, format and start every node; raises :class:`targets.errors.TargetError`
        naming the nodes that failed, with their log tails."""

    @abc.abstractmethod
    def teardown(self) -> dict[str, str]:
        """Stop every node; tolerant: returns ``{node: error}`` instead of raising."""

    @abc.abstractmethod
    def format(self, node: str) -> None:
        """Wipe the node's data and log and format its storage (cluster id, node id)."""

    @abc.abstractmethod
    def start(self, node: str) -> bool:
        """Start the node's process unless it runs; True if it was started."""

    @abc.abstractmethod
    def stop(self, node: str, timeout_s: float | None = None) -> bool:
        """SIGTERM, wait up to ``timeout_s`` (s), then SIGKILL; True if a process ran."""

    @abc.abstractmethod
    def kill(self, node: str) -> bool:
        """SIGKILL the node's process; True if a process was signalled."""

    @abc.abstractmethod
    def pause(self, node: str) -> bool:
        """SIGSTOP the node's process; True if a process was signalled."""

    @abc.abstractmethod
    def resume(self, node: str) -> bool:
        """SIGCONT the node's process; True if a process was signalled."""

    @abc.abstractmethod
    def is_running(self, node: str) -> bool:
        """True if the node's process exists (a paused one counts)."""

    def wipe(self, node: str) -> dict:
        """A disk failure: SIGKILL the node (if it runs), delete its data, and format it again
        with the same cluster id and node id and a fresh directory id. The node is left
        down; the nemesis restarts it when the fault heals.

        Returns ``{"down": True if no process ran, "old_directory_id": str or None,
        "new_directory_id": str or None, "last_offset": the last offset of its log before
        the wipe, or None for an empty or unreadable log}``. Raises ``RemoteError`` when the
        node cannot be reached or the format fails. A node that is down is wiped all the same
        (``"down": true``).
        """
        down = not self.kill(node)
        before = self.disk_state(node)
        self.reformat(node)
        after = self.disk_state(node)
        return {"down": down, "old_directory_id": before.get("directory_id"),
                "new_directory_id": after.get("directory_id"), "last_offset": before.get("last_offset")}

    def disk_state(self, node: str) -> dict:
        """What the node's data dir holds now: ``{"directory_id": str or None, "last_offset":
        int or None}`` (None where missing or unreadable). Not provided by default: raises
        ``NotImplementedError``."""
        raise NotImplementedError(f"{type(self).__name__} cannot read {node}'s disk")

    def reformat(self, node: str) -> None:
        """Delete the node's durable state (not its process log) and format it again, as a
        replaced disk would be. Not provided by default: raises ``NotImplementedError``."""
        raise NotImplementedError(f"{type(self).__name__} cannot wipe {node}")

    def read_log(self, node: str) -> list[tuple[int, int, str, object]]:
        """The node's replicated log as found in its data dir now, ``[(offset, epoch, type,
        payload)]`` in offset order. Raises ``NotImplementedError`` where a target does not
        provide it, ``clusters.remote.RemoteError`` when the node cannot be reached."""
        raise NotImplementedError(f"{type(self).__name__} cannot read {node}'s log")

    # -- KIP-853 voter changes (targets/voters.py) -----------------------------------
    def voter_state(self) -> dict:
        """The quorum's voters and observers from its leader's DescribeQuorum:
        ``{"leader", "leader_id", "epoch", "high_watermark", "voters": [{"id",
        "directory_id", "log_end"}], "observers": [...]}``. Raises
        ``targets.voters.VoterChangeError`` when no node answers as leader."""
        from .voters import voter_state
        return voter_state(self)

    def add_voter(self, node: str) -> dict:
        """AddRaftVoter (KIP-853): make ``node`` a voter again under its current directory id
        (the one it fetches with as an observer in DescribeQuorum, else the one on its disk).
        Answers once the leader committed the new voter set, or says why not.

        Returns ``{"voter_id", "directory_id", "leader"?, "outcome": "ok" | "fail" | "info",
        "error"?: Kafka's error name (e.g. DUPLICATE_VOTER, REQUEST_TIMED_OUT: maybe
        appended, e.g. the replica not caught up yet), "message"?}``. Raises
        ``targets.voters.VoterChangeError`` at kraft.version 0 ("not supported at
        kraft.version 0"), when no leader or directory id is found, or when the target has
        no voter changes."""
        from . import voters
        voters.require_dynamic(self, f"add voter {node}")
        nid = self.node_id(node)
        directory_id = voters.observed_key(self.voter_state(), nid) or self.disk_state(node).get("directory_id")
        if directory_id is None:
            raise voters.VoterChangeError(f"add voter {node}: its directory id is unknown (not an "
                                          f"observer in DescribeQuorum, disk unreadable)")
        return self._voter_change("add", node, directory_id)

    def remove_voter(self, node: str, directory_id: str | None = None) -> dict:
        """RemoveRaftVoter (KIP-853) of (``node``'s id, ``directory_id``); default directory
        id: the node's voter key in DescribeQuorum, else the one on its disk (a key that is
        not a voter gets VOTER_NOT_FOUND). The leader may remove itself. Returns and raises
        as :meth:`add_voter`."""
        from . import voters
        voters.require_dynamic(self, f"remove voter {node}")
        if directory_id is None:
            directory_id = (voters.voter_key(self.voter_state(), self.node_id(node))
                            or self.disk_state(node).get("directory_id"))
        if directory_id is None:
            raise voters.VoterChangeError(f"remove voter {node}: its directory id is unknown")
        return self._voter_change("remove", node, directory_id)

    def _voter_change(self, op: str, node: str, directory_id: str) -> dict:
        """Send AddRaftVoter (``op`` "add") or RemoveRaftVoter ("remove"); the outcome as
        :meth:`add_voter` returns it. Not provided by default: raises
        ``targets.voters.VoterChangeError``."""
        from .voters import VoterChangeError
        raise VoterChangeError(f"{type(self).__name__} has no voter changes")

    @abc.abstractmethod
    def log_tail(self, node: str, lines: int = 20) -> str:
        """The last ``lines`` lines of the node's log ('' if unreadable)."""

    @abc.abstractmethod
    def collect(self, node: str, dest: Path) -> dict[str, str]:
        """Copy the node's logs, config and data dir into ``dest``; returns ``{name: error}``
        for what could not be copied."""

    def copy_from(self, node: str, dest: Path, files: Iterable[tuple[str, str]]) -> dict[str, str]:
        """Copy each ``(remote path, local name)`` of ``files`` from ``node`` into the folder
        ``dest`` (made if missing). Tolerant: returns ``{local name: error}`` for what could
        not be copied, and logs it."""
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        missing: dict[str, str] = {}
        for remote_path, name in files:
            try:
                self.remote.get(node, remote_path, dest / name)
            except (RemoteError, OSError) as err:
                missing[name] = str(err)
                log.warning("%s: could not collect %s: %s", node, remote_path, err)
        return missing
