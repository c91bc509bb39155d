"""The simulator's public API (its contract: sim/README.md; used by ``kraft-chaos simulate``,
``kraft-chaos hunt`` and ``make bench``): :class:`SimOptions`, :class:`SeedOutcome`,
:func:`simulate`, :func:`run_seed` and :func:`shrink_and_export`.

Seeds run in worker processes (multiprocessing, ``fork``); the judge (sim/judging.py) is a
parameter, sent to the workers with each seed; each outcome depends on its seed alone.
"""
from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import signal
import time
from pathlib import Path
from typing import Iterable, Iterator

from faults.registry import SIMULATED
from kraft.core.unsafe import SWITCHES

from .judging import Judge
from .swarm import DIMENSIONS, configure
from .workloads import WORKLOADS, workload_of


@dataclasses.dataclass(frozen=True)
class SimOptions:
    """What to simulate: ``voters`` (3 or 5), ``brokers`` (0: the quorum only; else that many
    of our brokers, the data plane), ``kraft_version`` (0 static voters, 1 KIP-853 with wipes
    and voter changes), ``unsafe`` (kraft.core.unsafe switch names), ``sim_seconds`` (virtual
    seconds of faults and clients per schedule; the heal and final reads come after),
    ``client_rate`` (ops per virtual second), ``read_fraction`` (of them, reads) and
    ``fetch_max_records`` (per Fetch response); ``workload`` (a :data:`sim.workloads.WORKLOADS`
    name; None: the one that runs on ``brokers``), ``families`` (the fault families a schedule
    draws from; None: all the simulator plays), ``admin_clients`` (voter changes requested at
    once, 1..3), ``fault_max_ms`` (how long a fault lasts at most; a few last up to twice
    that); ``swarm`` (the :data:`sim.swarm.DIMENSIONS` each seed draws for itself,
    :func:`sim.swarm.configure`; empty: the fields as given).
    :meth:`check` raises ValueError naming a bad field."""

    voters: int = 3
    brokers: int = 0
    kraft_version: int = 0
    unsafe: tuple[str, ...] = ()
    sim_seconds: float = 30.0
    client_rate: float = 40.0       # client ops per virtual second, in all
    read_fraction: float = 0.1      # the share of them that are linearizable reads
    fetch_max_records: int = 2000   # records per Fetch response (small: followers catch up slowly)
    workload: str | None = None
    families: tuple[str, ...] | None = None
    admin_clients: int = 1
    fault_max_ms: float = 5000.0
    swarm: tuple[str, ...] = ()

    @property
    def workload_name(self) -> str:
        """The workload: ``workload``, else the one that runs on ``brokers``."""
        return self.workload or workload_of(self.brokers)

    def for_seed(self, seed: int) -> "SimOptions":
        """The concrete options seed ``seed`` runs (:func:`sim.swarm.configure`)."""
        return configure(self, seed)

    def check(self) -> "SimOptions":
        if self.voters not in (1, 3, 5, 7):
            raise ValueError(f"voters must be 1, 3, 5 or 7, got {self.voters!r}")
        if not 0 <= self.brokers <= 9:
            raise ValueError(f"brokers must be 0..9, got {self.brokers!r}")
        if self.kraft_version not in (0, 1):
            raise ValueError(f"kraft_version must be 0 or 1, got {self.kraft_version!r}")
        bad = sorted(set(self.unsafe) - SWITCHES.keys())
        if bad:
            raise ValueError(f"unknown unsafe switch {', '.join(bad)}: choose from {', '.join(sorted(SWITCHES))}")
        if not 1.0 <= self.sim_seconds <= 3600.0:
            raise ValueError(f"sim_seconds must be 1..3600, got {self.sim_seconds!r}")
        if not 0.0 < self.client_rate <= 1000.0:
            raise ValueError(f"client_rate must be in (0, 1000] ops/s, got {self.client_rate!r}")
        if not 0.0 <= self.read_fraction <= 1.0:
            raise ValueError(f"read_fraction must be 0..1, got {self.read_fraction!r}")
        if not 1 <= self.fetch_max_records <= 100000:
            raise ValueError(f"fetch_max_records must be 1..100000, got {self.fetch_max_records!r}")
        self._check_swarm()
        return self

    def _check_swarm(self) -> None:
        if self.workload is not None and self.workload not in WORKLOADS:
            raise ValueError(f"workload must be one of {', '.join(WORKLOADS)}, got {self.workload!r}")
        if (self.workload is not None and "brokers" not in self.swarm
                and (WORKLOADS[self.workload].brokers > 0) != (self.brokers > 0)):
            raise ValueError(f"workload {self.workload} runs on {WORKLOADS[self.workload].brokers or 'no'} "
                             f"broker(s), not on brokers={self.brokers}")
        if self.families is not None:
            bad = sorted(set(self.families) - set(SIMULATED))
            if bad:
                raise ValueError(f"families: the simulator plays no {', '.join(bad)}: choose from "
                                 f"{', '.join(SIMULATED)}")
        if not 1 <= self.admin_clients <= 3:
            raise ValueError(f"admin_clients must be 1..3, got {self.admin_clients!r}")
        if not 500.0 <= self.fault_max_ms <= 60000.0:
            raise ValueError(f"fault_max_ms must be 500..60000 ms, got {self.fault_max_ms!r}")
        bad = sorted(set(self.swarm) - set(DIMENSIONS))
        if bad:
            raise ValueError(f"swarm: no dimension {', '.join(bad)}: choose from {', '.join(DIMENSIONS)}")


@dataclasses.dataclass(frozen=True)
class SeedOutcome:
    """One seed's result: ``ok`` (no invariant violated and the checkers' verdict valid),
    ``invariant`` (the first violated invariant, or ``checker:<anomaly>``; None when ok),
    ``detail`` (one line: what, at which virtual time), ``events`` (core steps),
    ``sim_seconds`` (virtual time reached), ``wall_s``; ``trace`` (the last steps before the
    violation, as lines; empty when ok), ``verdict`` (the judge's: True, False, "unknown" or
    None when not judged), ``options`` (the concrete :class:`SimOptions` the seed ran, its swarm
    draw made; a function of the options and the seed, so not in :meth:`key`)."""

    seed: int
    ok: bool
    invariant: str | None
    detail: str | None
    events: int
    sim_seconds: float
    wall_s: float
    trace: tuple[str, ...] = ()
    verdict: object = None
    options: SimOptions | None = None

    def key(self) -> tuple:
        """What must replay bit for bit (everything but the wall time)."""
        return (self.seed, self.ok, self.invariant, self.detail, self.events, round(self.sim_seconds, 6),
                self.trace, self.verdict)


def run_seed(opts: SimOptions, seed: int, judge: Judge | None = None) -> SeedOutcome:
    """Run one seed in this process, its history judged by ``judge`` (None: the invariants
    alone); options that swarm (``opts.swarm``) run the configuration the seed draws. A
    simulator error is this seed's failure (invariant ``sim-error``), not raised. Python's
    cyclic garbage collector is paused for the schedule and run once after it: a schedule's
    objects live until its end, then die together as one graph full of cycles (the runtime
    and its callbacks), which the collector would otherwise scan again and again as they age
    (about a tenth of a schedule's CPU time). The history, most of those objects, leaves the
    graph once judged (sim/schedule.py) and is freed by reference counting; in a worker, what
    outlives the seed is then frozen (``gc.freeze``), so no later collection scans it again."""
    from .schedule import run_schedule
    opts = opts.for_seed(seed)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        r = run_schedule(opts, seed, judge=judge)
    except Exception as e:  # noqa: BLE001 - a simulator bug is reported as this seed's failure
        import traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        return SeedOutcome(seed, False, "sim-error", f"{type(e).__name__}: {e} ({where.filename}:{where.lineno})",
                           0, 0.0, 0.0, tuple(traceback.format_exc().splitlines()), options=opts)
    finally:
        if was_enabled:
            gc.enable()
            gc.collect()
            if _freeze_survivors:
                gc.freeze()     # what outlived the seed (modules imported, caches) is the worker's for good
    name, detail = r.first
    return SeedOutcome(seed, r.ok, name, detail, r.events, r.sim_ms / 1000.0, r.wall_s,
                       tuple(r.trace) if not r.ok else (), r.verdict, opts)


#: set in worker processes (:func:`_worker_init`): after each seed's collection, what survived is
#: frozen out of the collector's sight, so the next seed's collection scans that seed's objects only
_freeze_survivors = False


def _work(args) -> SeedOutcome:
    return run_seed(*args)


def _worker_init() -> None:
    """A worker leaves Ctrl-C to its parent, which ends the pool, and dies quietly when the pool
    terminates it (a parent's own SIGTERM handler, inherited through fork, would print a
    traceback in every worker). What it inherited is frozen out of the cyclic collector's
    sight (``gc.freeze``), so the collection after each seed scans that seed's objects only."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    global _freeze_survivors
    gc.freeze()         # the parent's modules and objects live as long as the worker: never scan them
    _freeze_survivors = True


def simulate(opts: SimOptions, seeds: Iterable[int], workers: int = 2,
             deadline: float | None = None, judge: Judge | None = None) -> Iterator[SeedOutcome]:
    """Run each seed (in ``workers`` processes; 1: in this one), yielding outcomes as they
    finish (not in seed order); stops starting seeds once ``time.monotonic()`` passes
    ``deadline``. ``judge`` judges each history (None: the invariants alone); with workers it
    is pickled by name, so it must be a module-level function. Raises ValueError for bad
    options."""
    opts.check()
    if workers <= 1:
        for s in seeds:
            if deadline is not None and time.monotonic() > deadline:
                return
            yield run_seed(opts, s, judge)
        return
    from . import schedule  # noqa: F401 - imported once here, inherited (and frozen) by every worker
    ctx = multiprocessing.get_context("fork")
    seeds = iter(seeds)
    with ctx.Pool(workers, initializer=_worker_init) as pool:
        inflight = []
        def top_up():
            while len(inflight) < workers * 4:
                if deadline is not None and time.monotonic() > deadline:
                    return
                s = next(seeds, None)
                if s is None:
                    return
                inflight.append(pool.apply_async(_work, ((opts, s, judge),)))
        top_up()
        while inflight:
            ready = next((r for r in inflight if r.ready()), None)
            if ready is None:
                inflight[0].wait(0.02)
                continue
            inflight.remove(ready)
            yield ready.get()
            top_up()


def shrink_and_export(opts: SimOptions, seed: int, out_dir: Path, judge: Judge | None = None) -> Path:
    """Shrink a failing seed's trace (sim/shrink.py; each candidate judged by ``judge``, as
    :func:`simulate` judged the seed) and write its scenario file (the one ``kraft-chaos
    scenario run FILE`` replays, sim/export.py); returns the file's path. Raises ValueError
    when the seed does not fail."""
    from .export import write_scenario
    from .shrink import shrink_seed
    opts = opts.check().for_seed(seed)
    result = shrink_seed(opts, seed, judge=judge)
    return write_scenario(opts, seed, result, Path(out_dir))
