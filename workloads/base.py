"""What the client workloads share: topology, history, process ids, the quorum monitor, workers."""
from __future__ import annotations

import asyncio
import dataclasses

from generator import Any, Generator, Interpreter, OnThreads, Stagger

from .clients import ClientFactory, ClientPool
from .counters import OpTally, Sequence
from .monitor import QuorumMonitor
from .topology import Topology
from .worker import ClientWorker


class WorkloadSetupError(RuntimeError):
    """A workload's :meth:`ClientWorkload.setup` could not prepare the cluster (e.g. its
    topic was never created); the runner reports it as a setup failure (exit 4)."""


@dataclasses.dataclass(frozen=True)
class ClientOptions:
    """Knobs every client workload has.

    ``concurrency``: number of workers (>= 1). ``rate``: target total ops/s
    (> 0). ``read_any_node``: probability a read goes to a random node instead
    of the believed leader (Jepsen-style: a stale leader or a lagging follower
    must refuse it; a correct node answers NOT_LEADER_OR_FOLLOWER).
    ``roaming_clients``: the fraction of workers (rounded down) that send
    every op to a random node, never following leader hints, like clients
    with stale metadata (workloads/worker.py). ``timeout_ms``: per-request
    client timeout (ms). ``monitor_interval_ms`` / ``monitor_timeout_ms``:
    DescribeQuorum sampling period and timeout (ms). Raises ``ValueError``
    naming the bad field.
    """

    concurrency: int = 10
    rate: float = 100.0
    read_any_node: float = 0.5
    roaming_clients: float = 0.2
    timeout_ms: int = 3000
    monitor_interval_ms: int = 250
    monitor_timeout_ms: int = 1000

    def __post_init__(self) -> None:
        self.check_counts("concurrency")
        if not self.rate > 0:
            raise ValueError(f"rate must be > 0 ops/s, got {self.rate!r}")
        self.check_fractions("read_any_node", "roaming_clients")
        for name in ("timeout_ms", "monitor_interval_ms", "monitor_timeout_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0 ms, got {getattr(self, name)!r}")

    def check_counts(self, *names: str) -> None:
        """Raise ValueError unless each named field is an int >= 1."""
        for name in names:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")

    def check_fractions(self, *names: str) -> None:
        """Raise ValueError unless each named field is in [0, 1]."""
        for name in names:
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")


class ClientWorkload:
    """Base of the workloads (workloads/registry.py): which op next, and how it is sent.

    ``history`` is a ``history.HistoryWriter``; ``seed`` (int) seeds every
    random choice; ``pids`` hands out process ids (shared with any other
    client of the history); ``client_factory`` builds clients (default
    the topology's ``quorum_factory``: the target's client). Subclasses set ``name``,
    ``options_class``, ``client_fs`` and ``worker_class`` (the client: how
    an op is sent), and implement :meth:`generator` (which op comes next). A
    :class:`workloads.monitor.QuorumMonitor` samples the quorum alongside.
    """

    name = "workload"
    options_class: type = object
    #: The history's ``f`` of the client ops (progress totals).
    client_fs: tuple[str, ...] = ()
    #: Worker ``index`` (0-based) is ``worker_class(self, index, roaming)``.
    worker_class: type[ClientWorker] = ClientWorker

    def __init__(self, topology: Topology, cluster_id: str, history, seed: int,
                 options=None, pids: Sequence | None = None,
                 client_factory: ClientFactory | None = None):
        self.topology, self.cluster_id, self.history = topology, cluster_id, history
        self.seed = seed
        self.options = options or self.options_class()
        self.pids = pids or Sequence(0)
        self.tally = OpTally()
        self.client_factory = client_factory
        self.monitor = QuorumMonitor(topology, cluster_id, history, self.pids,
                                     interval_ms=self.options.monitor_interval_ms,
                                     timeout_ms=self.options.monitor_timeout_ms,
                                     client_factory=client_factory or topology.quorum_factory)

    def pool(self) -> ClientPool:
        """A fresh client pool (one client per node) for one owner."""
        return ClientPool(self.topology, self.cluster_id, self.options.timeout_ms, self.client_factory)

    async def setup(self) -> None:
        """Prepare the cluster before the clients start (the runner awaits it once, after the
        first leader and before the first op); nothing by default. Raises
        :class:`WorkloadSetupError` when the cluster cannot be prepared."""

    def describe(self) -> dict | None:
        """What ``test.json`` records of the workload's client once the run's ops are done
        (``"client"``: e.g. the library and its version), or None (the default)."""
        return None

    async def close(self) -> None:
        """Release what the workload's clients share (the runner awaits it once at the end of
        a run, whatever happened); nothing by default. Never raises."""

    def generator(self) -> Generator:
        """The client ops, endless, unpaced (:meth:`client_generator` paces them)."""
        raise NotImplementedError

    def roaming_threads(self) -> int:
        """How many client threads roam: ``floor(concurrency * roaming_clients)``, the last ones."""
        return int(self.options.concurrency * self.options.roaming_clients)

    def client_generator(self) -> Generator:
        """:meth:`generator` for the client threads, at ``options.rate`` ops/s in all.

        Roaming threads get their share of the rate paced apart (a roaming
        op to a non-leader fails at once, so one shared pace would hand them
        most of the ops); both draw from the one generator.
        """
        gen, c, r = self.generator(), self.options.concurrency, self.roaming_threads()
        rate = self.options.rate
        if r == 0 or r == c:       # one pace for all (a zero share would be a zero rate)
            return OnThreads(lambda t: t != "nemesis", Stagger(rate, gen))
        first = c - r
        return Any([OnThreads(lambda t: isinstance(t, int) and t < first, Stagger(rate * first / c, gen)),
                    OnThreads(lambda t: isinstance(t, int) and t >= first, Stagger(rate * r / c, gen))])

    def workers(self) -> dict[int, ClientWorker]:
        """One client worker per thread ``0..concurrency-1``; the last :meth:`roaming_threads` roam."""
        c, r = self.options.concurrency, self.roaming_threads()
        return {i: self.worker_class(self, i, roaming=i >= c - r) for i in range(c)}

    async def run(self, stop: asyncio.Event, monitor: bool = True) -> None:
        """Run the client ops alone (no nemesis) and the monitor until ``stop`` is set.

        Ops in flight when ``stop`` is set finish (bounded by ``timeout_ms``)
        before this returns. Cancellation records in-flight ops as ``info``.
        """
        interp = Interpreter(self.client_generator(), self.workers(), self.pids.next, self.seed,
                             view=lambda: self.monitor.view)
        tasks = [asyncio.create_task(interp.run(stop), name=f"{self.name}-clients")]
        if monitor:
            tasks.append(asyncio.create_task(self.monitor.run(stop), name="quorum-monitor"))
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
