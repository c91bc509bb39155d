"""Synthetic append histories with known, injected anomalies (``kraft-chaos synth``).

For benchmarks and tests of the checkers, above all of the Spark analysis
of histories far larger than a real run gives. A synthetic run is a store
run directory (``store/synth-append/<timestamp>/``) holding ``test.json``
(workload ``append``, ``"synthetic": true``), ``history.jsonl`` in the
append workload's op shapes (DEVELOPERS.md, "Client ops") and the sidecar
``anomalies.json`` listing every anomaly the checkers must report. It has
no ``nodes/`` data, so its divergence verdict, and hence its overall verdict
when nothing was injected, is "unknown".

The model (``concurrency`` processes in rounds of concurrent ops, a nemesis op pair and a
new epoch every ``NEMESIS_EVERY`` rounds, the final committed read in pages) is
:mod:`harness.analysis.synth_history`'s.

Injected anomalies, each exactly detectable from the history:

- ``lost``: the final log ends before the last ``lost`` acknowledged
  appends (their acks are past its high watermark). The final read then
  sees a shorter prefix than those acks showed, which is one more
  nonmonotonic read, listed too.
- ``duplicates``: an info append's slot in the log holds a copy of an
  earlier acknowledged value instead (a retried produce written twice).
- ``inconsistent``: one tail read shows, at one data offset, the value of
  an info append that never reached the log.
- ``stale_reads``: a tail read reports a high watermark below a prefix
  that was acknowledged before it was invoked.

The history is generated twice from the same seed (a sizing pass, then a
writing pass with the injections chosen in between), so memory stays
small whatever ``ops`` is.
"""
from __future__ import annotations

import bisect
import dataclasses
import datetime as _dt
import json
import random
from pathlib import Path

from harness.analysis.synth_history import HistoryPass, InjectionPlan, SynthOptions
from history import store

#: The test folder name synthetic runs are stored under.
TEST_NAME = "synth-append"
#: The sidecar listing the injected anomalies.
SIDECAR = "anomalies.json"
NODES = ("n1", "n2", "n3", "n4", "n5")


def _choose(opts: SynthOptions, sizing: HistoryPass) -> tuple[InjectionPlan, dict]:
    """Pick the injections from the sizing pass; returns the plan and the expected anomalies."""
    rng = random.Random(f"{opts.seed}:inject")
    plan = InjectionPlan()
    plan.pages = sizing.pages
    acks, values = sizing.ack_offsets, sizing.ack_values

    def need(what: str, have: int, want: int) -> None:
        if have < want:
            raise ValueError(f"--ops {opts.ops} is too small for {want} {what}: "
                             f"the history has room for {have}")

    need("lost writes", len(acks), opts.lost)
    final_end = acks[-opts.lost] if opts.lost else len(sizing.kind)
    plan.final_end = final_end if opts.lost else None
    used: set[int] = set()          # offsets involved in an injection
    expected: dict = {"lost-write": [], "duplicate": [], "inconsistent-offsets": [],
                      "nonmonotonic-read": []}
    slots = [(oid, off) for oid, off in sizing.info_in_log if off < final_end]
    need("duplicates", len(slots), opts.duplicates)
    rng.shuffle(slots)
    copied: set[int] = set()
    for oid, off in slots:
        if len(plan.dup_slot) == opts.duplicates:
            break
        j = bisect.bisect_left(acks, off)       # acks before the slot
        for _ in range(8):
            if j == 0:
                break
            k = rng.randrange(j)
            if values[k] not in copied and acks[k] not in used:
                copied.add(values[k])
                used.update((acks[k], off))
                plan.dup_slot[oid] = values[k]
                expected["duplicate"].append({"value": values[k], "offsets": [acks[k], off]})
                break
    need("duplicates", len(plan.dup_slot), opts.duplicates)
    foreign = list(sizing.info_lost_values)
    rng.shuffle(foreign)
    reads = [r for r in sizing.tail_reads if r[2] > r[1]]
    rng.shuffle(reads)
    picked_reads: set[int] = set()
    for oid, start, hw, _best in reads:
        if len(plan.swap) == opts.inconsistent or not foreign:
            break
        off = rng.randrange(start, hw)
        if off in used or off >= final_end or sizing.kind[off]:
            continue
        used.add(off)
        picked_reads.add(oid)
        value = foreign.pop()
        plan.swap[oid] = (off, value)
        expected["inconsistent-offsets"].append(
            {"offset": off, "values": sorted([sizing.payload[off], value])})
    need("inconsistent offsets", len(plan.swap), opts.inconsistent)
    for oid, start, hw, best in reads:
        if len(plan.stale) == opts.stale_reads:
            break
        if oid in picked_reads or best < 2 or start >= best - 1:
            continue
        plan.stale[oid] = best - 1
    need("stale reads", len(plan.stale), opts.stale_reads)
    return plan, expected


def synth_run(opts: SynthOptions, root: Path | str = store.DEFAULT_ROOT,
              command: str | None = None) -> Path:
    """Write one synthetic run under ``root/synth-append/`` and return its directory.

    Files: ``history.jsonl`` (exactly ``opts.ops`` lines), ``test.json`` and
    ``anomalies.json`` (``{"ops", "expected_verdict", "counts": {checker:
    n}, "lost-write": [{"op", "value", "offset"}], "duplicate": [{"value",
    "offsets"}], "inconsistent-offsets": [{"offset", "values"}],
    "nonmonotonic-read": [{"op", "high_watermark"}]}``). Raises ValueError
    when the options are bad or the anomalies do not fit in ``ops``.
    """
    opts.check()
    sizing = HistoryPass(opts, None, None)
    sizing.run()
    plan, expected = _choose(opts, sizing)
    day = opts.date or _dt.datetime.now(_dt.timezone.utc).date()
    second = random.Random(f"{opts.seed}:time").randrange(86_400)
    stamp = store.timestamp(_dt.datetime.combine(day, _dt.time(), _dt.timezone.utc)
                            + _dt.timedelta(seconds=second))
    run_dir = store.create_run_dir(root, TEST_NAME, stamp)
    (run_dir / store.NODES).rmdir()      # no node data: nothing ran
    buf: list[str] = []
    with open(store.history_path(run_dir), "w", encoding="utf-8") as fh:
        def emit(text: str) -> None:
            buf.append(text)
            if len(buf) >= 4096:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        writer = HistoryPass(opts, plan, emit)
        writer.run()
        if buf:
            fh.write("\n".join(buf) + "\n")
    expected["lost-write"] = writer.lost_acks
    expected["nonmonotonic-read"] = list(writer.stale_ops)
    if opts.lost:
        expected["nonmonotonic-read"].append({"op": writer.final_first_page, "high_watermark":
                                              plan.final_end, "final": True})
    counts = {name: len(items) for name, items in expected.items()}
    sidecar = {"ops": writer.index, "seed": opts.seed,
               "expected_verdict": "invalid" if any(counts.values()) else "unknown",
               "counts": counts, **expected}
    store.write_json(run_dir / SIDECAR, sidecar)
    config = {**dataclasses.asdict(opts), "workload": "append", "synthetic": True,
              "nodes": len(NODES), "nemesis": list(opts.nemesis), "date": day.isoformat()}
    store.write_test_json(run_dir, config, opts.seed, command or synth_command(opts))
    return run_dir


def synth_command(opts: SynthOptions) -> str:
    """The ``kraft-chaos synth`` command that writes this run again."""
    parts = [f"kraft-chaos synth --ops {opts.ops} --seed {opts.seed}"]
    for name in ("lost", "duplicates", "inconsistent", "stale_reads"):
        if getattr(opts, name):
            parts.append(f"--{name.replace('_', '-')} {getattr(opts, name)}")
    if opts.date:
        parts.append(f"--date {opts.date.isoformat()}")
    return " ".join(parts)


def read_sidecar(run_dir: Path) -> dict | None:
    """The run's ``anomalies.json``, or None for a run that is not synthetic."""
    p = Path(run_dir) / SIDECAR
    return json.loads(p.read_text()) if p.is_file() else None
