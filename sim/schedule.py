"""One simulated schedule: build the cluster for a seed, run its faults and clients in virtual
time with the invariants after every step, heal, make the final reads, and judge the
history (:mod:`sim.judging`).

:func:`run_schedule` is a pure function of (options, seed, plan): the same arguments give
the same :class:`RunResult`, bit for bit. A :class:`Plan` is the schedule as data (faults and
client ops), drawn from the seed by :func:`plan_for`, or given (a shrunk one).
"""
from __future__ import annotations

import dataclasses
import logging
import random
import time

from kraft.core.unsafe import Unsafe

from .admin import leader_of
from .clients import CLIENT_TIMEOUT_MS, FINAL_READ_MS, AppendClients
from .controller_nodes import ControllerNode
from .data_plane import DataPlane
from .faults import PlannedFault, draw_client_ops, draw_schedule
from .invariants import InvariantBroken, QuorumInvariants, Violation
from .liveness import LivenessWatch
from .monitor import Monitor
from .nemesis import Nemesis
from .quorum_nodes import TIMEOUTS, QuorumNode, quorum_nodes
from .recording import Recording
from .runtime import Runtime
from .workloads import WORKLOADS

#: client slots (Jepsen processes)
CONCURRENCY = 5
#: after the faults: how long to wait for a leader and catch-up, then for the final reads (ms)
SETTLE_MS, FINAL_MS = 15000.0, 6000.0


@dataclasses.dataclass(frozen=True)
class Plan:
    """A schedule as data: ``faults`` (:class:`PlannedFault`) and ``client_ops`` ``(at_ms, slot,
    f)``; ``end_ms`` when the faults and clients stop."""

    faults: tuple[PlannedFault, ...]
    client_ops: tuple[tuple[float, int, str], ...]
    end_ms: float


@dataclasses.dataclass
class RunResult:
    """What one schedule did: ``violation`` (None: every invariant held), ``verdict`` of the
    judge (True, False, "unknown", or None when there was no judge or an invariant broke
    first), ``anomalies`` (checker names), ``events`` (core steps), ``sim_ms`` reached,
    ``wall_s``, ``trace`` (the last steps, as lines), ``applied`` (the faults as they landed),
    ``ops`` (the history) and ``nodes`` (each node's final log and high watermark)."""

    violation: Violation | None
    verdict: object
    anomalies: list
    events: int
    sim_ms: float
    wall_s: float
    trace: list[str]
    applied: list[dict]
    ops: list[dict]
    nodes: dict

    @property
    def ok(self) -> bool:
        """No invariant broke and the judge found no anomaly ("unknown": it could not judge all,
        e.g. no final read because the cluster did not recover; not a failure)."""
        return self.violation is None and self.verdict is not False

    @property
    def first(self) -> tuple[str | None, str | None]:
        """(invariant or checker anomaly, one line), or (None, None) when ok."""
        if self.violation is not None:
            v = self.violation
            return v.name, f"{v.detail} (at {v.at_ms / 1000:.3f} s virtual)"
        if self.verdict is False:
            kinds = ",".join(self.anomalies) or "unknown"
            return (f"checker:{self.anomalies[0]}" if self.anomalies else "checker:unknown",
                    f"the checkers judged the history {self.verdict}: {kinds}")
        return None, None


def plan_for(opts, seed: int) -> Plan:
    """The schedule seed ``seed`` draws for options ``opts`` (a :class:`sim.api.SimOptions`; its
    swarm draw made first)."""
    opts = opts.for_seed(seed)
    rng = random.Random(seed)
    end = opts.sim_seconds * 1000.0
    faults = draw_schedule(rng, end, opts.kraft_version, max_duration_ms=opts.fault_max_ms, families=opts.families)
    reads = opts.read_fraction
    if reads == 0.1:
        reads = WORKLOADS[opts.workload_name].read_fraction    # the workload's own share
    ops = draw_client_ops(random.Random(seed + 0x5EED), end, opts.client_rate, CONCURRENCY, reads)
    return Plan(tuple(faults), tuple(ops), end)


def _format_trace(trace) -> list[str]:
    out = []
    for t, node, what in trace:
        text = what if isinstance(what, str) else repr(what)
        if len(text) > 240:
            text = text[:237] + "..."
        out.append(f"{t / 1000:10.4f}s {'n' + str(node) if node else '--':>4} {text}")
    return out


def run_schedule(opts, seed: int, plan: Plan | None = None, judge=None, keep: bool = False) -> RunResult:
    """Run seed ``seed`` under ``opts`` (``plan``: its own by default); ``judge`` (see
    sim/judging.py) judges the history when no invariant broke. ``keep``: return the history
    and node logs too (else they are dropped once judged)."""
    kraft_log = logging.getLogger("kraft")
    level = kraft_log.level
    kraft_log.setLevel(logging.CRITICAL)          # the cores' INFO/WARNING lines, by the thousand
    try:
        return _run(opts, seed, plan, judge, keep)
    finally:
        kraft_log.setLevel(level)


def _run(opts, seed: int, plan: Plan | None, judge, keep: bool) -> RunResult:
    t0 = time.perf_counter()
    opts = opts.for_seed(seed)
    plan = plan or plan_for(opts, seed)
    policy = Unsafe.of(opts.unsafe)
    rt = Runtime(seed)
    rec = Recording(lambda: rt.now)
    inv = QuorumInvariants(lambda: rt.now)
    rt.on_step = inv.after_step
    ids = list(range(1, opts.voters + 1))
    brokers = opts.brokers
    workload = opts.workload_name
    spec = WORKLOADS[workload]
    violation, nemesis = None, None
    try:
        quorum_nodes(rt, opts.voters, opts.kraft_version, policy, opts.fetch_max_records,
                     ControllerNode if brokers else QuorumNode)
        nemesis = Nemesis(rt, rec, ids, opts.kraft_version, admin_clients=opts.admin_clients)
        monitor = Monitor(rt, rec, ids)
        if brokers:
            plane = DataPlane(rt, rec, random.Random(seed * 31 + 7), ids, brokers, policy, inv, CONCURRENCY)
            nemesis.brokers, clients = plane.ids, plane.clients
            extra = plane.on_reply
        else:
            clients = spec.client_class()(rt, rec, random.Random(seed * 31 + 7), ids, CONCURRENCY)
            extra = lambda token, msg: False       # noqa: E731
        handlers = [monitor.on_reply, nemesis.admin.on_reply, extra, clients.on_reply]
        rt.on_client = _first_taker(handlers)
        nemesis.schedule(list(plan.faults))
        for at, slot, f in plan.client_ops:
            rt.at(at, lambda slot=slot, f=f: clients.issue(slot, f))
        rt.run_until(plan.end_ms)
        _check_fatal(rt)
        nemesis.heal_all()
        monitor.stop()
        live = LivenessWatch(rt, ids, rt.now, TIMEOUTS["election_timeout_ms"])
        _settle(rt, ids, plan.end_ms + SETTLE_MS, live)
        live.check_leader()
        lead = leader_of(rt, ids)
        reader = clients if spec.final_reads else None
        if reader is None:          # the quorum's final log all the same (the membership and log checkers)
            reader = AppendClients(rt, rec, random.Random(seed * 31 + 8), ids, 1)
            handlers.append(reader.on_reply)
        final_end = rt.now + FINAL_READ_MS
        reader.final_read(ids[0] if lead is None else lead, True, 10_000, final_end)
        for k, i in enumerate(ids):
            reader.final_read(i, False, 10_001 + k)
        rt.run_until(rt.now + FINAL_MS)
        while reader.final_pending and rt.now < final_end + CLIENT_TIMEOUT_MS:
            rt.run_until(rt.now + 250)          # a final read tried again (a leader stepped down)
        if brokers:
            plane.final(plan.end_ms + SETTLE_MS + FINAL_MS)
        _check_fatal(rt)
        if lead is not None and rt.up(lead):
            inv.final_leader(lead, rt.nodes[lead].core)
        live.check_ops(rec.ops)
    except InvariantBroken as e:
        violation = e.violation
    nodes = {f"n{i}": ([tuple(r.to_wire()) for r in rt.nodes[i].disk.log(None).records],
                       rt.nodes[i].core.state.hw if rt.nodes[i].core is not None else None) for i in ids}
    verdict, anomalies = None, []
    if violation is None and judge is not None:
        config = {"workload": workload, "db": "kraft", "kraft_version": opts.kraft_version,
                  "unsafe": list(opts.unsafe), "brokers": brokers, "simulated": True}
        verdict, anomalies = judge(rec.ops, nodes, workload, config)
    ops, rec.ops = rec.ops, []      # the history leaves the runtime's cycles: freed by reference counting
    trace = _format_trace(rt.trace)
    if violation is None and verdict is False:     # a checker's anomaly: the faults that led to it
        trace = ["faults:"] + _format_trace(rt.notes) + ["last steps:"] + trace[-20:]
    return RunResult(violation, verdict, list(anomalies), rt.events, rt.now, time.perf_counter() - t0,
                     trace, _plain(nemesis.applied) if nemesis else [],
                     ops if keep else [], nodes if keep else {})


def _plain(applied: list[dict]) -> list[dict]:
    return [dict(a) for a in applied]


def _first_taker(handlers: list):
    """``on_client(token, msg)``: offer a reply to each handler in turn until one takes it (a
    plain loop: this runs for every client reply)."""
    def on_client(token, msg) -> bool:
        for h in handlers:
            if h(token, msg):
                return True
        return False
    return on_client


def _check_fatal(rt: Runtime) -> None:
    for n in rt.nodes.values():
        if n.fatal:
            raise InvariantBroken(Violation("node-fatal", rt.now, f"{n.name} stopped: {n.fatal}"))


def _settle(rt: Runtime, ids: list[int], until: float, live: LivenessWatch) -> None:
    """Run until a leader has committed in its epoch and every live voter reached its log end,
    or ``until``; ``live`` looks for the leader after every slice."""
    while rt.now < until:
        rt.run_until(rt.now + 250)
        live.poll()
        lead = leader_of(rt, ids)
        if lead is None:
            continue
        core = rt.nodes[lead].core
        if not core.leader_epoch_committed():
            continue
        end = core.state.log.end_offset
        if all(rt.nodes[i].core is not None and rt.nodes[i].core.state.log.end_offset >= end
               and rt.nodes[i].core.state.hw >= core.state.hw
               for i in ids):
            return
