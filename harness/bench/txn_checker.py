"""``make bench``, Kafka workload part: wall time, CPU time and peak memory of ``kraft-chaos check``
on a synthetic history of Jepsen's Kafka workload with 1M micro-ops.

The history (harness/analysis/kafka_synth.py: 10 clients, 16 topic-partitions, transactions of
1 to 4 micro-ops of which 1 in 32 abort and 1 in 48 end info, crashes, assigns, final polls) is
written on first use into ``store/bench-txn/`` and reused after. The check runs as a child
process (the command a user types, Jepsen's checker chosen from the history), whose peak RSS
(``os.wait4``'s ``ru_maxrss``, MB) and CPU time (user + system, s) are its own. The goal is a
check under 60 s and 2 GB on a 2-core machine; the verdict must be valid (the log is correct).
Nothing here is asserted; the figures are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from harness.analysis.kafka_synth import SynthOptions, synth_history
from harness.bench.check_memory import measured
from harness.run.code_version import PROJECT_ROOT

STORE = PROJECT_ROOT / "store" / "bench-txn"
#: micro-ops of the benched history
MOPS = 1_000_000
SEED = 1
#: the goals (s, MB)
GOAL_S, GOAL_MB = 60, 2000


def history_file(mops: int, store: Path = STORE, seed: int = SEED) -> Path:
    """The ``mops``-micro-op bench history under ``store``, written on first use."""
    path = store / f"kafka-txn-{mops}-seed{seed}.jsonl"
    if path.is_file():
        return path
    store.mkdir(parents=True, exist_ok=True)
    print(f"writing the synthetic history ({mops:,} micro-ops) into {path} ...", flush=True)
    tmp = path.with_suffix(".part")
    with open(tmp, "w") as fh:
        write = fh.write
        synth_history(SynthOptions(mops=mops, threads=10, keys=16, topics=4), seed,
                      sink=lambda op: write(json.dumps(op, separators=(",", ":")) + "\n"))
    tmp.rename(path)
    return path


def run_child(cmd: list[str]) -> dict:
    """Run ``cmd`` (output discarded); ``{"wall_s", "cpu_s", "peak_rss_mb", "exit"}`` from its
    own rusage."""
    wall, rc, usage = measured(cmd)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
            "exit": rc}


def bench(mops: int = MOPS, store: Path = STORE) -> dict:
    """Check the bench history once; returns what :func:`main` prints."""
    path = history_file(mops, store)
    with tempfile.TemporaryDirectory(prefix="bench-txn-") as out:
        got = run_child([sys.executable, "-m", "harness", "check", str(path), "--out", out])
        doc = json.loads((Path(out) / "results.json").read_text())
    main = doc["checkers"]["kafka-txn"]
    return {**got, "history": str(path), "valid": doc["valid"], "counts": main["counts"],
            "found": {k: n for k, n in doc["anomalies"].items() if n}, "analysis_s": main["check_s"]}


def main(argv: list[str] | None = None) -> int:
    """Bench and print the figures (module docstring); 0."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mops", type=int, default=MOPS, help="micro-ops of the history (default %(default)s)")
    p.add_argument("--store", type=Path, default=STORE)
    args = p.parse_args(argv)
    r = bench(args.mops, args.store)
    c = r["counts"]
    print(f"kafka-txn checker: {c['micro_ops']:,} micro-ops ({c['ops']:,} ops, {c['sends']:,} sends, "
          f"{c['polled_records']:,} polled records, {c['keys']} keys, {c['processes']:,} processes)")
    print(f"  kraft-chaos check {r['history']}")
    print(f"  wall {r['wall_s']:.1f} s (goal < {GOAL_S} s), CPU {r['cpu_s']:.1f} s, "
          f"peak RSS {r['peak_rss_mb']:.0f} MB (goal < {GOAL_MB} MB); the analysis after reading: "
          f"{r['analysis_s']:.1f} s of the wall time")
    print(f"  verdict {json.dumps(r['valid'])} (exit {r['exit']}); kinds shown: {r['found'] or 'none'}")
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        print(f"  note: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall time is inflated; "
              "CPU time is the check's own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
