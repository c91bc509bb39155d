"""Applies faults to a cluster and heals them.

Blocking code: the nemesis worker (:mod:`nemesis.worker`) calls it through
``asyncio.to_thread``. Faults in different slots may overlap; each slot
holds at most one active fault. Each family is started and stopped by its injector
(nemesis/registry.py); the controller holds what they share: the slots, the cluster's
iptables chains and packet shapers, the wait for a leader, and the heal of everything.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from typing import Callable

from clusters.parallel import NodeErrors, on_nodes
from clusters.remote import Cluster
from faults.registry import fault_spec
from nemesis import grudge as grudges
from nemesis import packet
from nemesis.background import Background
from nemesis.faults import EXPLICIT, Fault, check_kind
from nemesis.kill import restart_nodes
from nemesis.leader_wait import CONTROLLER_WAIT_S, POLL_S, Waited, aims_at_leader, await_leader
from nemesis.packet_faults import PacketFaults
from nemesis.partition import Partitioner
from nemesis.partition_kinds import partition_grudge
from nemesis.pause import resume_nodes
from nemesis.power_loss import Disks
from nemesis.process_db import ProcessDB
from nemesis.registry import injector
from nemesis.targets import choose_targets

log = logging.getLogger("kraft_chaos.nemesis")


class NemesisController(PacketFaults):
    """Starts and stops :class:`~nemesis.faults.Fault` s on a cluster.

    ``cluster``: the :class:`~clusters.remote.Cluster` (iptables and tc go
    through its remote); ``db``: the node-process controls
    (a ``targets.base.DB``); ``find_leader``: returns the current leader's
    node name or None (the quorum monitor's view, or a DescribeQuorum probe;
    exceptions count as "unknown"); ``rng``: the seeded source of every
    target and grudge choice; ``nodes``: the nodes faults may touch (default every node
    of the cluster; e.g. only Kafka's controllers), in order; ``disks``: the nodes' lazyfs
    mounts, for power-loss (None: the run has none). ``leader_wait_s``: how long (s) a fault
    that needs a leader waits for ``find_leader`` to name one, polling every ``poll_s``
    (nemesis/leader_wait.py), on ``clock`` and ``sleep`` (monotonic s). Each family's start
    and stop are its injector's (nemesis/registry.py), which uses the public methods below;
    the packet faults' state is :class:`~nemesis.packet_faults.PacketFaults`'s; what each
    partition kind cuts, :mod:`nemesis.partition_kinds`'s.
    """

    def __init__(self, cluster: Cluster, db: ProcessDB, find_leader: Callable[[], str | None],
                 rng: random.Random, nodes: list[str] | None = None, disks: Disks | None = None,
                 leader_wait_s: float = CONTROLLER_WAIT_S, poll_s: float = POLL_S,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.cluster = cluster
        self._nodes = list(cluster.nodes if nodes is None else nodes)
        unknown = set(self._nodes) - set(cluster.nodes)
        if unknown or not self._nodes:
            raise ValueError(f"nemesis nodes {self._nodes} must be nodes of the cluster {list(cluster.nodes)}")
        self.db = db
        self.disks = disks
        self.find_leader = find_leader
        self.rng = rng
        self.leader_wait_s, self.poll_s, self.clock, self.sleep = leader_wait_s, poll_s, clock, sleep
        self.partitioner = Partitioner(cluster)
        self._active: dict[str, tuple[Fault, list[str]]] = {}   # slot -> (fault, targets)
        self._background: dict[str, Background] = {}
        self._netem: bool | None = None
        self._shapers: dict[str, tuple[int, list[str]]] = {}   # slot -> (nfqueue, nodes running a shaper)
        self._lock = threading.Lock()

    @property
    def nodes(self) -> list[str]:
        """The node names faults may touch."""
        return list(self._nodes)

    @property
    def active(self) -> dict[str, list[str]]:
        """A copy of the active faults: ``{slot: targets}``."""
        with self._lock:
            return {slot: list(t) for slot, (_f, t) in self._active.items()}

    def active_faults(self) -> list[Fault]:
        """The faults active now, in the order they started."""
        with self._lock:
            return [f for f, _t in self._active.values()]

    def _leader(self) -> str | None:
        try:
            return self.find_leader()
        except Exception as err:  # noqa: BLE001 - an unknown leader is a normal outcome
            log.warning("find_leader failed: %s", err)
            return None

    def _leader_among(self) -> bool:
        """Whether the quorum's leader can be one of the nodes faults touch (not when they are
        only brokers, ``--nemesis-targets clients``): only then a leader-aimed fault waits."""
        quorum = getattr(self.db, "quorum_nodes", None)
        return not callable(quorum) or bool(set(quorum()) & set(self._nodes))

    def await_leader(self) -> Waited:
        """The leader, waiting up to ``leader_wait_s`` for one (blocking; see
        nemesis/leader_wait.py)."""
        return await_leader(self._leader, self.leader_wait_s, self.poll_s, self.clock, self.sleep)

    # -- choosing -------------------------------------------------------------

    def grudge(self, kind: str, targets: tuple[str, ...] | None = None,
               rng: random.Random | None = None, grudge: dict | None = None,
               waited: Waited | None = None) -> tuple[grudges.Grudge, list[str], bool]:
        """(grudge, targets, leader_unknown) for a partition kind
        (:func:`nemesis.partition_kinds.partition_grudge`), drawn from ``rng`` (default: the
        controller's). A leader-aimed kind aims at the leader ``waited`` found, else at whoever
        ``find_leader`` names now."""
        leader = (lambda: waited.leader) if waited is not None else self._leader
        return partition_grudge(kind, self.nodes, rng or self.rng, leader, targets, grudge)

    def process_targets(self, fault: Fault, waited: Waited | None = None) -> tuple[list[str], bool]:
        """(targets, leader_unknown) of a kill, pause, power-loss or wipe; kind ``leader``
        aims at the leader ``waited`` found, ``majority`` holds whoever leads now."""
        if fault.kind == EXPLICIT:
            unknown = set(fault.targets or ()) - set(self.nodes)
            if unknown or not fault.targets:
                raise ValueError(f"nemesis {fault.name}: explicit targets {fault.targets!r} must be "
                                 f"nodes of {self.nodes}")
            return [n for n in self.nodes if n in fault.targets], False
        if fault.kind in fault_spec(fault.name).located:
            return self.located_targets(fault)
        if waited is not None:
            found = waited.leader
        else:
            found = self._leader() if fault.kind in ("leader", "majority") else None
        choice = choose_targets(fault.kind, self.nodes, self.rng, found)
        return choice.targets, choice.leader_unknown

    def located_targets(self, fault: Fault) -> tuple[list[str], bool]:
        """(targets, not found) of a located kind (``FaultSpec.located``): the node the DB's
        ``locate(kind, params, rng) -> node | None`` names (e.g. Kafka's transaction
        coordinator), asked now with the fault's params (``key``, ``topic``, ``partition``); when
        it names none of :attr:`nodes` (no such role yet, or the lookup failed), a random node
        and True, recorded as a leader-aimed kind's ``leader_unknown`` is. Raises
        ``ValueError`` when the DB cannot locate."""
        locate = getattr(self.db, "locate", None)
        if not callable(locate):
            raise ValueError(f"nemesis {fault.name} kind {fault.kind}: the target cannot locate it "
                             f"(its DB has no locate; Kafka's brokers do)")
        try:
            node = locate(fault.kind, dict(fault.params), self.rng)
        except Exception as err:  # noqa: BLE001 - a failed lookup strikes a random node, recorded
            log.warning("locate %s failed: %s", fault.kind, err)
            node = None
        if node in self._nodes:
            return [node], False
        return [self.rng.choice(self._nodes)], True

    # -- start and stop -------------------------------------------------------

    def start(self, fault: Fault) -> dict:
        """Apply ``fault``; return the op value for the history.

        Value: ``{"kind": K, "targets": [nodes]}`` (plus ``"slot"`` when not
        the family's), and per family: ``"grudge"`` (``{node: [nodes it
        drops]}``) for partitions and flaps, the netem settings for packet
        faults (on the targets' packets to every other node, or to the nodes of
        the fault's ``to`` param; where the kernel has no netem, ``"netem": false`` and the
        settings the userspace shaper applied, ``"shaper": "nfqueue"``, or,
        when it could not start, ``"shaper": false`` and loss only, emulated
        with iptables; settings asked but not applied in ``"not_applied"``),
        ``"leader_unknown": true`` when a
        leader-targeted fault had to pick a random node, ``"leader_wait": {"waited_s",
        "leader": bool}`` when it had to wait for a leader (up to ``leader_wait_s``), ``"no_process":
        [nodes]`` when a kill or pause found no process, and for a wipe ``"wiped":
        {node: {"down", "old_directory_id", "new_directory_id", "last_offset"}}``
        (``targets.base.DB.wipe``; the nodes stay down until the stop), and for a
        power loss what each disk dropped (:func:`nemesis.power_loss.power_loss`).

        Raises ``ValueError`` for an unknown family or kind, or when the
        fault's slot is already active; ``clusters.parallel.NodeErrors`` when
        some node failed (the fault stays active so :meth:`stop` and
        :meth:`heal_all` undo what was applied).
        """
        check_kind(fault.name, fault.kind)
        with self._lock:
            if fault.key in self._active:
                raise ValueError(f"nemesis slot {fault.key!r} is already active on "
                                 f"{self._active[fault.key][1]}")
            self._active[fault.key] = (fault, [])     # claimed; targets filled in below
        try:
            value = self._apply(fault)
        except BaseException:
            with self._lock:
                if not self._active.get(fault.key, (None, [1]))[1]:
                    self._active.pop(fault.key, None)    # nothing was applied
            raise
        log.info("nemesis start-%s %s", fault.name, value)
        return value

    def hold(self, fault: Fault, targets: list[str]) -> None:
        """Record ``targets`` as the nodes ``fault``'s slot holds (its stop and :meth:`heal_all`
        heal them); an injector calls it before it touches them."""
        with self._lock:
            self._active[fault.key] = (fault, list(targets))

    def _apply(self, fault: Fault) -> dict:
        value = fault.to_value()
        family = injector(fault.name)
        waited = None
        if family.awaits_leader and aims_at_leader(fault.name, fault.kind) and self._leader_among():
            waited = self.await_leader()         # aimed at the leader: wait for one
            if waited.waited:
                value["leader_wait"] = waited.value()
        if family.start(self, fault, value, waited):
            value["leader_unknown"] = True
        return value

    def run_background(self, fault: Fault, bg: Background) -> None:
        """Start ``bg``, a fault that acts while it holds; the slot's stop stops it."""
        with self._lock:
            self._background[fault.key] = bg
        bg.start()

    def stop(self, fault: Fault) -> dict:
        """Heal ``fault``'s slot through its family's injector (a partition's chains flushed,
        killed nodes restarted, paused ones resumed, removed voters added back, ...).

        Returns ``{"kind": K, "targets": [nodes]}`` (with ``"slot"`` when not the family's,
        ``"errors"`` from a background fault, a flap's ``"cuts"``, and what the injector adds,
        such as a shaped packet fault's ``"shaped"``: ``{node: the shaper's counts}``);
        stopping a slot that is not active does nothing and returns ``"targets": []``. Raises
        ``clusters.parallel.NodeErrors`` if a node could not be healed (the fault then stays
        active for :meth:`heal_all`).
        """
        with self._lock:  # claim the slot, so a concurrent stop does nothing
            entry = self._active.pop(fault.key, None)
            bg = self._background.pop(fault.key, None)
        if entry is None:
            return {"kind": fault.kind, "targets": []}
        held, targets = entry
        out: dict = {"kind": fault.kind, "targets": targets, **({"slot": held.slot} if held.slot else {})}
        try:
            if bg is not None:
                bg.stop()
                out.update(bg.outcome())
            injector(held.name).stop(self, held, targets, out)
        except BaseException:
            with self._lock:
                self._active.setdefault(held.key, entry)
            raise
        log.info("nemesis stop-%s %s", fault.name, targets)
        return out

    def heal_all(self) -> dict:
        """Undo every fault on every node: stop background faults, flush iptables, remove
        netem, end every packet shaper (where netem is missing), SIGCONT, start any
        stopped node.

        Idempotent and tolerant: it never raises for a node failure; it
        returns ``{"restarted": [nodes started], "errors": {node: message}}``
        and logs the errors. Clears the active faults when there were no errors.
        """
        with self._lock:
            bgs = list(self._background.values())
            self._background.clear()
        for bg in bgs:
            bg.stop()
        nodes = self.nodes
        errors: dict[str, str] = {}
        restarted: list[str] = []
        steps = [(self.partitioner.heal_all, "flush"),
                 (lambda: on_nodes(nodes, lambda n: self.cluster.remote.exec(n, packet.HEAL_COMMAND,
                                                                             check=False), what="netem heal"),
                  "netem"),
                 (lambda: on_nodes(nodes, lambda n: self.cluster.remote.exec(n, packet.SHAPER_KILL_ALL_COMMAND,
                                                                             check=False), what="shaper kill")
                  if self._netem is False or self._shapers else None, "shaper"),
                 (lambda: resume_nodes(self.db, nodes), "resume"),
                 (lambda: restart_nodes(self.db, nodes), "restart")]
        for step, what in steps:
            try:
                result = step()
            except NodeErrors as err:
                for node, exc in err.errors.items():
                    errors.setdefault(node, f"{what}: {exc}")
                result = err.results
            if what == "restart" and result:
                restarted = [n for n in nodes if result.get(n)]
        if errors:
            log.error("heal_all: could not heal %s", errors)
        else:
            with self._lock:
                self._active.clear()
                self._shapers.clear()
        return {"restarted": restarted, "errors": errors}
