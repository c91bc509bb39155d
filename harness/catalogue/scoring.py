"""One scored run of a catalogue entry, and the summary of several: what ``kraft-chaos bugs``
and ``kraft-chaos bisect`` share.

A run counts as *detecting* when it shows one of the entry's declared anomaly kinds (its
``kinds``), or, for an entry that declares none, when its verdict is invalid. Its time to
detect is the time of the earliest op that an anomaly of those kinds names
(:mod:`harness.catalogue.detection`). Runs may each hold an exclusive lock on a file
(``flock``; the commands' ``--lock``, by default ``/run/lock/kraft-chaos.lock``), so that other
users of the machine can run between them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import logging
import statistics
import time
from typing import Any, Callable, Iterator

from harness.catalogue.detection import anomaly_kinds, first_anomaly_in_run
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.run.runner import Interrupted, run_test

log = logging.getLogger("kraft_chaos.catalogue")

#: seconds a run needs besides its time limit (cluster set-up, final reads, collection, checks)
OVERHEAD_S = 30.0


@dataclasses.dataclass
class RunOutcome:
    """One run: its ``valid`` verdict, anomaly ``kinds`` (all of them), ``detected`` (it
    showed a declared kind; with none declared, its verdict was invalid), ``detect_s`` (s
    from the history's start to the first op of a declared anomaly, or None), ``wall_s``
    (s), ``store`` path, ``seed``, and ``error`` when the run itself failed (a harness error,
    not a verdict)."""

    seed: int
    valid: Any
    kinds: list[str]
    detect_s: float | None
    wall_s: float
    store: str | None
    error: str | None = None
    detected: bool = False


@contextlib.contextmanager
def run_lock(path: str | None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block; nothing
    when ``path`` is None. Waits as long as another holder keeps it."""
    if not path:
        yield
        return
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_one(fields: dict[str, Any], seed: int, root: str, *, kinds: tuple[str, ...] = (),
            budget_s: float | None = None, subnet: str | None = None, lock: str | None = None,
            run: Callable | None = None, label: str = "") -> RunOutcome:
    """One run of the :class:`harness.config.run.RunConfig` ``fields`` (without seed, store
    and subnet) with ``seed`` into store ``root``, scored on ``kinds`` (module docstring).
    ``budget_s`` cuts the time limit to fit (less :data:`OVERHEAD_S`); ``lock``: a file to
    ``flock`` for the run. A harness failure is an outcome with ``error`` (the next run goes
    on). Raises ``harness.run.runner.Interrupted`` on Ctrl-C."""
    fields = dict(fields)
    if budget_s is not None:
        fields["time_limit"] = max(5.0, min(fields.get("time_limit", RunConfig.time_limit), budget_s - OVERHEAD_S))
    t0 = time.monotonic()
    try:
        cfg = resolve(RunConfig(seed=seed, store=root, **fields, **({"subnet": subnet} if subnet else {})))
        with run_lock(lock):
            t0 = time.monotonic()
            results, run_dir = (run or run_test)(cfg, progress=False)
    except Interrupted:
        raise
    except Exception as e:  # noqa: BLE001 - recorded; the benchmark goes on
        log.error("run %s seed %d failed: %s", label, seed, e)
        return RunOutcome(seed, "unknown", [], None, time.monotonic() - t0, None, f"{type(e).__name__}: {e}")
    wall = time.monotonic() - t0
    among = kinds or None
    hit = bool(anomaly_kinds(results, among)) if kinds else results.get("valid") is False
    return RunOutcome(seed, results.get("valid"), anomaly_kinds(results),
                      first_anomaly_in_run(results, run_dir, among) if hit else None, wall, str(run_dir),
                      detected=hit)


def summarize(outcomes: list[RunOutcome]) -> dict:
    """``{"runs", "detected", "median_detect_s", "kinds": {kind: runs}, "max_wall_s",
    "errors"}``: ``kinds`` counts every anomaly kind of the detecting runs (all runs' under
    ``all_kinds``, so that what a release shows besides the entry's kinds is reported)."""
    detected = [o for o in outcomes if o.detected]
    kinds: dict[str, int] = {}
    every: dict[str, int] = {}
    for o in outcomes:
        for k in o.kinds:
            every[k] = every.get(k, 0) + 1
            if o.detected:
                kinds[k] = kinds.get(k, 0) + 1
    times = [o.detect_s for o in detected if o.detect_s is not None]
    return {"runs": len(outcomes), "detected": len(detected),
            "median_detect_s": round(statistics.median(times), 1) if times else None,
            "kinds": kinds, "all_kinds": every,
            "max_wall_s": round(max((o.wall_s for o in outcomes), default=0.0), 1),
            "errors": sum(1 for o in outcomes if o.error)}


def verdict_word(o: RunOutcome) -> str:
    """``INVALID``, ``VALID``, ``UNKNOWN`` or ``ERROR`` for a run."""
    if o.error:
        return "ERROR"
    return {True: "VALID", False: "INVALID"}.get(o.valid, "UNKNOWN")


def outcome_line(label: str, o: RunOutcome) -> str:
    """One progress line: ``label seed S: VERDICT kinds at T s (W s) STORE``."""
    at = f" at {o.detect_s:.1f} s" if o.detect_s is not None else ""
    return (f"{label} seed {o.seed}: {verdict_word(o)} {','.join(o.kinds)}{at} ({o.wall_s:.0f} s) "
            f"{o.store or o.error}")


def outcomes_json(outcomes: list[RunOutcome]) -> list[dict]:
    """The outcomes as JSON-ready dicts."""
    return [dataclasses.asdict(o) for o in outcomes]
