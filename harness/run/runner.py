"""Runs one test end to end: cluster, DB, workload + nemesis, final phase, collection, checking.

Sequence (``run_test``, of a config resolved by harness/config/resolved.py): the backend
(``--cluster``, clusters/registry.py; ``auto`` picks docker when an engine answers, else netns)
-> what the nodes run there (targets/registry.py ``node_software``: the node image, or
deployed files) -> the cluster, by name through
``clusters.registry.make_cluster`` (run id ``<timestamp>-<seed>``) -> the target's DB (``--db``, targets/registry.py)
``setup()`` -> wait for a leader -> the workload's ``setup()`` (e.g. its topic)
-> the workload's client generator and the nemesis's generator together,
run by one interpreter (generator/), for ``time_limit`` s -> heal
everything -> the workload's final phase (its spec's ``final``, e.g. the
append workload's final reads) -> stop nodes gracefully, collect every node
into ``nodes/<node>/`` -> the checkers the workload names
(:func:`harness.run.check.check_run_dir`) -> ``results.json``. The runner
names no workload: all of that comes from workloads/registry.py. The
cluster is torn down in any case (unless ``keep_cluster``), also on SIGINT,
which cancels the run cleanly and surfaces as :class:`Interrupted` (exit 130):
harness/run/lifecycle.py.
"""
from __future__ import annotations

import asyncio
import base64
import logging
import random
from pathlib import Path

from clusters.addressing import node_names
from clusters.errors import ClusterError
from clusters.registry import make_cluster, resolve_backend
from generator import Any as AnyOf, Interpreter, TimeLimit, nemesis
from harness.config.resolved import ResolvedConfig
from harness.config.run import run_table
from harness.config.scenario import dumps
from harness.run.check import check_run_dir
from harness.run.code_version import code_commit
from harness.run.disks import RunDisks
from harness.run.final import RunQuorum
from harness.run.leader import find_leader, wait_for_leader
from harness.run.lifecycle import Interrupted, RunLifecycle
from harness.run.progress import Progress, Snapshot
from harness.run.scenario_steps import ClientGate, GatedClients, budget_s, steps_generator
from history import HistoryWriter, store
from nemesis.controller import NemesisController
from nemesis.schedule import nemesis_generator
from nemesis.worker import NemesisWorker
from targets.errors import TargetError
from targets.registry import node_software
from workloads.base import WorkloadSetupError
from workloads.topology import Topology

log = logging.getLogger("kraft_chaos.runner")

#: seconds to wait for the first leader after the nodes start
FIRST_LEADER_TIMEOUT_S = 60.0
#: seconds to wait, after the first leader, for every broker node to be registered and unfenced
BROKERS_TIMEOUT_S = 60.0
#: a monitor sample of the leader older than this (s) is not trusted for aim
VIEW_FRESH_S = 1.0


class RunSetupError(RuntimeError):
    """The cluster came up but never became usable (e.g. no leader elected). Exit code 4."""


def cluster_id_for(seed: int) -> str:
    """A KRaft cluster id (22-char base64url of 16 bytes, like ``kafka-storage random-uuid``) from ``seed``."""
    rng = random.Random(f"{seed}:cluster-id")
    while True:   # like Kafka's Uuid.randomUuid: never an id starting with "-"
        raw = rng.getrandbits(128).to_bytes(16, "big")
        cid = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def attach_file_log(run_dir: Path) -> logging.Handler:
    """Send every log record (INFO and up) to ``<run>/harness.log``; returns the handler."""
    h = logging.FileHandler(store.harness_log_path(run_dir), encoding="utf-8")
    h.setLevel(logging.INFO)
    h.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(h)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    return h


def prepare_run(config: ResolvedConfig) -> tuple[ResolvedConfig, Path]:
    """Create the run directory, write ``test.json`` (``config.flat``, with the code's git
    commit) and point ``store/latest`` at it; a scenario run keeps its scenario there as
    ``scenario.toml``. Returns the config as stored (a scenario run's names that copy) and the
    run directory."""
    flat = config.flat
    run_dir = store.create_run_dir(config.store, flat.test_name())
    if flat.scenario is not None:    # the run folder keeps the scenario it repeats
        path = run_dir / "scenario.toml"
        path.write_text(dumps(run_table(flat), flat.scenario), encoding="utf-8")
        config = config.stored_as(str(path))
    store.write_test_json(run_dir, config.flat.to_dict(), config.seed, config.flat.repeat_command(),
                          commit=code_commit())
    store.update_latest(config.store, run_dir)
    return config, run_dir


def run_test(config: ResolvedConfig, run_dir: Path | None = None,
             progress: bool | None = None) -> tuple[dict, Path]:
    """Run the test ``config`` describes (resolved and checked: harness/config/resolved.py
    ``resolve``); returns ``(results, run_dir)``.

    ``run_dir`` defaults to a new store directory (:func:`prepare_run`);
    ``progress`` forces the live line on/off (None: when stdout is a TTY).
    Raises :class:`Interrupted` on SIGINT, ``clusters.errors.ClusterError``,
    ``targets.errors.TargetError`` or :class:`RunSetupError` when the cluster cannot be set up, ``ValueError``
    for a config the cluster cannot run; the cluster is torn down before any of these propagate
    (unless ``keep_cluster``).
    """
    if run_dir is None:
        config, run_dir = prepare_run(config)
    run_dir = Path(run_dir)
    handler = attach_file_log(run_dir)
    try:
        log.info("run %s: %s", run_dir, config.flat.repeat_command())
        results = asyncio.run(_Run(config, run_dir, progress).main())
        return results, run_dir
    except Interrupted:
        log.warning("run interrupted")
        raise
    except Exception as e:
        if isinstance(e, (ClusterError, RunSetupError, TargetError, ValueError)):
            log.error("run failed: %s", e)
        else:
            log.exception("run failed with a harness error")
        raise
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()


class _Run(RunLifecycle):
    """One run (see :func:`run_test`): its steps; what it holds and its cleanup are
    :class:`~harness.run.lifecycle.RunLifecycle`'s."""

    def __init__(self, config: ResolvedConfig, run_dir: Path, progress: bool | None):
        super().__init__(config, run_dir, progress)
        self.cluster_id = cluster_id_for(config.seed)

    # -- the test ---------------------------------------------------------

    async def _body(self) -> dict:

        where, target = self.config.cluster, self.config.target
        spec, settings = target.spec, target.settings
        backend = await self._blocking(resolve_backend, where.backend)
        self.engine = backend.engine
        log.info("backend: %s%s", backend.name, f" (--cluster auto: {backend.why})" if backend.why else "")
        software = await self._blocking(node_software, spec, backend, settings, lambda m: log.info("%s", m))
        n = spec.node_count(settings)
        binds = None
        if self.config.nemesis.needs_disks:
            self.disks = await self._blocking(RunDisks, node_names(n), spec.disk_dir)
            binds = self.disks.binds
        self.cluster = make_cluster(backend.name, n, self.run_id, software, subnet=where.subnet,
                                    keep=where.keep, binds=binds, engine=backend.engine,
                                    root_dir=self.run_dir / "netns", hosts=where.hosts)
        log.info("setting up %d %s nodes on %s (run id %s%s)", n, spec.name, backend.name, self.run_id,
                 f", image {software.image}" if software.image else "")
        await self._blocking(self.cluster.setup)
        self.db = spec.make_db(self.cluster, self.cluster_id, settings)
        await self._blocking(self.db.setup)
        if self.disks is not None:
            await self._blocking(self.disks.sync_all, list(self.cluster.nodes))
        nodes = self.db.quorum_nodes()

        leader = await wait_for_leader(self.db, nodes, self.cluster_id, FIRST_LEADER_TIMEOUT_S)
        if leader is None:
            raise RunSetupError(f"no leader was elected within {FIRST_LEADER_TIMEOUT_S:.0f} s of "
                                f"starting the nodes; see {store.nodes_dir(self.run_dir)}/*/node.log")
        log.info("first leader: %s", leader)
        if not await self._blocking(self.db.wait_for_brokers, BROKERS_TIMEOUT_S):
            log.warning("not every broker registered within %.0f s of the first leader", BROKERS_TIMEOUT_S)

        await self._run_phase(nodes)
        return await self._finish(nodes)

    async def _run_phase(self, nodes: list[str]) -> None:
        """The workload's clients and the nemesis together for ``time_limit`` s, then heal."""

        seed, plan = self.config.seed, self.config.nemesis
        self.history = HistoryWriter(store.history_path(self.run_dir))
        wl = self.workload = self._make_workload(Topology.from_db(self.db, nodes))
        await self._setup_workload(wl)
        gen = wl.client_generator()
        workers: dict = wl.workers()
        limit = self.config.time_limit
        if plan.active:
            self.controller = self._controller(nodes)
            workers["nemesis"] = NemesisWorker(self.controller, self.history)
        if plan.scenario is not None:
            gate = ClientGate()
            gen = AnyOf([GatedClients(gate, gen),
                         nemesis(steps_generator(list(plan.scenario), gate, nodes=self.controller.nodes))])
            limit = budget_s(list(plan.scenario))
        elif plan.faults:
            schedule = nemesis_generator(list(plan.faults), random.Random(f"{seed}:nemesis:schedule"),
                                         plan.mode, plan.interval_s, plan.duration_s,
                                         n_nodes=len(self.controller.nodes), voter_changes=plan.voter_changes,
                                         aim_at_leader=bool(set(nodes) & set(self.controller.nodes)))
            gen = AnyOf([gen, nemesis(schedule)])
        interp = Interpreter(TimeLimit(limit, gen), workers, wl.pids.next, seed,
                             view=lambda: wl.monitor.view)
        mon = wl.monitor
        snap = Snapshot(lambda: wl.tally.totals(wl.client_fs),
                        (lambda: self.controller.active) if self.controller else None,
                        lambda: (f"id {mon.leader[1]} (epoch {mon.leader[0]})" if mon.leader else None),
                        limit)
        log.info("running %s for at most %.0f s with nemesis %s", self.config.workload.spec.name, limit,
                 "scenario" if plan.scenario is not None
                 else f"{','.join(plan.faults) or 'none'} ({plan.mode})")
        stop = asyncio.Event()
        tasks = [asyncio.create_task(interp.run(stop), name="interpreter"),
                 asyncio.create_task(mon.run(stop), name="quorum-monitor")]
        try:
            async with Progress(snap, live=self.progress):
                done, _ = await asyncio.wait(tasks[:1], timeout=limit + 60,
                                             return_when=asyncio.FIRST_EXCEPTION)
                stop.set()
                results = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            # On cancellation (SIGINT) the clients and nemesis must end before the history
            # closes: cancelling records in-flight ops as info and heals an active fault.
            stop.set()
            for t in tasks:
                if not t.done():
                    t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for t, r in zip(tasks, results):
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                log.error("%s failed: %r", t.get_name(), r)
                raise r
        await self._heal(nodes)

    async def _heal(self, nodes: list[str]) -> None:
        """Heal everything, and record it as a ``heal`` op of the nemesis: its value names
        the nodes still held by a fault (``held``) and those found not running although no
        fault held them and were started again (``restarted``: they died on their own)."""
        if self.controller is None:     # no nemesis ran: a controller only to find dead nodes
            self.controller = self._controller(None)
        held = sorted({n for targets in self.controller.active.values() for n in targets})
        log.info("healing every fault")
        op = self.history.invoke("nemesis", "heal", {"kind": "all"})
        result = await self._blocking(self.controller.heal_all)
        self.history.complete(op, "info", {"kind": "all", "held": held, **result})
        if result["restarted"]:
            log.warning("nodes found not running after every fault had stopped: %s", result["restarted"])

    def _controller(self, nodes: list[str] | None) -> NemesisController:
        """The run's nemesis controller. With the quorum's ``nodes``: the one that plays the
        faults, on the nodes ``--nemesis-targets`` names, aimed by :meth:`_aim_leader`, with
        the power-loss disks (its random choices seeded ``<seed>:nemesis``). With None: the
        one the final heal makes when no fault ran, only to find dead nodes, on every node
        (seeded ``<seed>:heal``)."""
        if nodes is not None:
            aim, purpose = (lambda: self._aim_leader(nodes)), "nemesis"
            touched = self.db.fault_nodes(self.config.nemesis.targets)
            disks = self.disks.mounts if self.disks is not None else None
        else:
            aim, purpose, touched, disks = (lambda: None), "heal", list(self.cluster.nodes), None
        return NemesisController(self.cluster, self.db, aim, random.Random(f"{self.config.seed}:{purpose}"),
                                 touched, disks)

    async def _setup_workload(self, wl) -> None:
        """The workload's own preparation (``ClientWorkload.setup``, e.g. creating its topic),
        before its clients and the nemesis start; its failure is a :class:`RunSetupError`."""
        try:
            await wl.setup()
        except WorkloadSetupError as e:
            raise RunSetupError(f"workload {self.config.workload.spec.name}: {e}") from e

    def _make_workload(self, topology):
        """The configured workload (workloads/registry.py) on ``topology``, with its options."""
        chosen = self.config.workload
        return chosen.spec.workload(topology, self.cluster_id, self.history, self.config.seed, chosen.options)

    def _aim_leader(self, nodes: list[str]) -> str | None:
        """The leader to aim at: the monitor's, when its sample is fresh; else a DescribeQuorum probe."""
        view = self.workload.monitor.view if self.workload is not None else None
        if view is not None and view.leader is not None:
            seen = view.nodes.get(view.leader)
            try:
                now = self._loop.time()
            except AttributeError:
                now = None
            if seen is not None and now is not None and now - seen.time <= VIEW_FRESH_S:
                return view.leader
        return find_leader(self.db, nodes, self.cluster_id)

    async def _finish(self, nodes: list[str]) -> dict:
        spec = self.config.workload.spec
        if spec.final is not None:
            await spec.final(self.workload, RunQuorum(self.db, nodes, self.cluster_id))
        client = self.workload.describe()
        if client is not None:      # the client library and its version (known once it ran)
            store.add_to_test_json(self.run_dir, client=client)
        self.history.close()
        log.info("stopping nodes and collecting their data")
        await self._blocking(self.db.teardown)
        await self._collect(list(self.cluster.nodes))
        if self.config.cluster.keep:   # --keep-cluster leaves the quorum running, for inspection
            for node in self.cluster.nodes:
                await self._best_effort(f"restart {node}", lambda n=node: self.db.start(n))
        log.info("checking the history")
        results = await self._blocking(check_run_dir, self.run_dir)
        log.info("verdict: valid=%s anomalies=%s", results["valid"], results["anomalies"])
        return results
