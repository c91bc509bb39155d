"""Applies scheduled faults to a cluster and heals them.

Blocking code: the asyncio runner (:mod:`nemesis.runner`) calls it through
``asyncio.to_thread``.
"""
from __future__ import annotations

import logging
import random
import threading
from typing import Callable

from clusters.remote import Cluster
from nemesis import grudge as grudges
from nemesis.kill import kill_nodes, restart_nodes
from nemesis.parallel import NodeErrors
from nemesis.partition import Partitioner
from nemesis.pause import pause_nodes, resume_nodes
from nemesis.process_db import ProcessDB
from nemesis.schedule import CRASH_KINDS, FAULT_NAMES, PARTITION_KINDS, PROCESS_KINDS, Fault
from nemesis.targets import choose_targets

log = logging.getLogger("kraft_chaos.nemesis")


class NemesisController:
    """Starts and stops :class:`~nemesis.schedule.Fault` s on a cluster.

    ``cluster``: the :class:`~clusters.remote.Cluster` (iptables go through
    its remote); ``db``: the node-process controls (``harness.db.KraftDB``);
    ``find_leader``: returns the current leader's node name or None (it
    queries DescribeQuorum; exceptions count as "unknown"); ``rng``: the
    seeded source of every target and grudge choice.
    """

    def __init__(self, cluster: Cluster, db: ProcessDB, find_leader: Callable[[], str | None],
                 rng: random.Random):
        self.cluster = cluster
        self.db = db
        self.find_leader = find_leader
        self.rng = rng
        self.partitioner = Partitioner(cluster)
        self._active: dict[str, list[str]] = {}  # fault name -> targets
        self._lock = threading.Lock()

    @property
    def nodes(self) -> list[str]:
        """The cluster's node names."""
        return list(self.cluster.nodes)

    @property
    def active(self) -> dict[str, list[str]]:
        """A copy of the active faults: ``{name: targets}``."""
        with self._lock:
            return dict(self._active)

    def _leader(self) -> str | None:
        try:
            return self.find_leader()
        except Exception as err:  # noqa: BLE001 - an unknown leader is a normal outcome
            log.warning("find_leader failed: %s", err)
            return None

    def _grudge(self, kind: str) -> tuple[grudges.Grudge, list[str], bool]:
        """(grudge, targets, leader_unknown) for a partition kind."""
        nodes = self.nodes
        if kind == "random-halves":
            g = grudges.random_halves(nodes, self.rng)
            components = sorted({frozenset(grudges.sees(g, n)) for n in nodes},
                                key=lambda c: (len(c), sorted(c)))
            return g, sorted(components[0], key=nodes.index), False
        if kind == "isolate-one":
            target = self.rng.choice(nodes)
            return grudges.isolate(nodes, target), [target], False
        if kind == "isolate-leader":
            choice = choose_targets("leader", nodes, self.rng, self._leader())
            return grudges.isolate(nodes, choice.targets[0]), choice.targets, choice.leader_unknown
        if kind == "majorities-ring":
            return grudges.majorities_ring(nodes, self.rng), nodes, False
        if kind == "bridge":
            g = grudges.bridge(nodes, self.rng)
            return g, [n for n in nodes if not g[n]], False
        raise ValueError(f"unknown partition kind {kind!r}: choose from {', '.join(PARTITION_KINDS)}")

    def start(self, fault: Fault) -> dict:
        """Apply ``fault``; return the op value for the history.

        Value: ``{"kind": K, "targets": [nodes]}``, plus ``"grudge"``
        (``{node: [nodes it drops]}``) for partitions, ``"leader_unknown":
        true`` when a leader-targeted fault had to pick a random node, and
        ``"no_process": [nodes]`` when a kill or pause found no process.
        Partition targets: the isolated node, the smaller half, the bridge
        node, or every node for majorities-ring.

        Raises ``ValueError`` for an unknown fault or kind, or when a fault
        of the same name is already active; ``nemesis.parallel.NodeErrors``
        when some node failed (the fault stays active so :meth:`stop` and
        :meth:`heal_all` undo what was applied).
        """
        if fault.name not in FAULT_NAMES:
            raise ValueError(f"unknown nemesis {fault.name!r}: choose from {', '.join(FAULT_NAMES)}")
        with self._lock:
            if fault.name in self._active:
                raise ValueError(f"nemesis {fault.name!r} is already active on {self._active[fault.name]}")
        value: dict = {"kind": fault.kind}
        if fault.name == "partition":
            g, targets, leader_unknown = self._grudge(fault.kind)
            value["targets"] = targets
            value["grudge"] = grudges.grudge_to_json(g)
            with self._lock:
                self._active[fault.name] = targets
            self.partitioner.apply(g)
        else:
            kinds = CRASH_KINDS if fault.name == "crash" else PROCESS_KINDS
            if fault.kind not in kinds:
                raise ValueError(f"unknown {fault.name} kind {fault.kind!r}: choose from {', '.join(kinds)}")
            leader = self._leader() if fault.kind in ("leader", "majority") else None
            choice = choose_targets(fault.kind, self.nodes, self.rng, leader)
            targets, leader_unknown = choice.targets, choice.leader_unknown
            value["targets"] = targets
            with self._lock:
                self._active[fault.name] = targets
            signalled = (pause_nodes if fault.name == "pause" else kill_nodes)(self.db, targets)
            missing = [n for n in targets if not signalled[n]]
            if missing:
                value["no_process"] = missing
        if leader_unknown:
            value["leader_unknown"] = True
        log.info("nemesis start-%s %s", fault.name, value)
        return value

    def stop(self, fault: Fault) -> dict:
        """Heal ``fault``: flush iptables on every node (partition), restart
        the killed nodes (kill, crash) or SIGCONT the paused ones (pause).

        Returns ``{"kind": K, "targets": [nodes]}``; stopping a fault that
        is not active does nothing and returns ``"targets": []``. Raises
        ``nemesis.parallel.NodeErrors`` if a node could not be healed (the
        fault then stays active for :meth:`heal_all`).
        """
        with self._lock:  # claim the fault, so a concurrent stop does nothing
            targets = self._active.pop(fault.name, None)
        if targets is None:
            return {"kind": fault.kind, "targets": []}
        try:
            if fault.name == "partition":
                self.partitioner.heal()
            elif fault.name in ("kill", "crash"):
                restart_nodes(self.db, targets)
            else:
                resume_nodes(self.db, targets)
        except BaseException:
            with self._lock:
                self._active.setdefault(fault.name, targets)
            raise
        log.info("nemesis stop-%s %s", fault.name, targets)
        return {"kind": fault.kind, "targets": targets}

    def heal_all(self) -> dict:
        """Undo every fault on every node: flush iptables, SIGCONT, start any stopped node.

        Idempotent and tolerant: it never raises for a node failure; it
        returns ``{"restarted": [nodes started], "errors": {node: message}}``
        and logs the errors. Clears the active faults when there were no errors.
        """
        nodes = self.nodes
        errors: dict[str, str] = {}
        restarted: list[str] = []
        steps = [(self.partitioner.heal, "flush"),
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
        return {"restarted": restarted, "errors": errors}
