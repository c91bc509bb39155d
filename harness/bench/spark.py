"""``make bench``, Spark part: ``kraft-chaos analyze`` end to end on a 10M-op synthetic
history, beside the single-process ``kraft-chaos check`` on the same history.

The history (``kraft-chaos synth --ops 10000000 --seed 1 --lost 100
--duplicates 100 --inconsistent 10``: 10M history ops, Jepsen's count of
invokes and completions) is written on first use into ``store/bench-spark/``
and reused after. Both commands are timed as whole processes, Spark
start-up, parsing and writing included; each figure is history ops per
second of wall time. Both commands' anomaly counts are compared with the
sidecar's (a mismatch is printed as such). Then
harness.bench.spark_floor times Spark's bare steps (one parse, one
grouping, one window) on this machine and prints the floor they set.
``--skip-single`` leaves out the
single-process check (it takes a few minutes; its memory is measured by
harness.bench.check_memory). Nothing here is
asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.analysis.synth import read_sidecar
from harness.bench.spark_floor import report
from harness.run.code_version import PROJECT_ROOT

STORE = PROJECT_ROOT / "store" / "bench-spark"
SYNTH = {"ops": 10_000_000, "seed": 1, "lost": 100, "duplicates": 100, "inconsistent": 10}
CLI = [sys.executable, "-m", "harness"]


def synthetic_run(params: dict) -> tuple[Path, dict]:
    """The bench's synthetic run and its sidecar, the run written on first use (about a minute)."""
    for d in sorted(STORE.glob("synth-append/*")):
        side = read_sidecar(d)
        if side and side.get("ops") == params["ops"] and side.get("seed") == params["seed"] and all(
                side["counts"].get(k, 0) == v for k, v in
                (("lost-write", params["lost"]), ("duplicate", params["duplicates"]),
                 ("inconsistent-offsets", params["inconsistent"]))):
            return d, side
    print(f"writing the synthetic history ({params['ops']:,} ops) into {STORE} ...", flush=True)
    cmd = CLI + ["synth", "--store", str(STORE)] + [x for k, v in params.items() for x in (f"--{k}", str(v))]
    subprocess.run(cmd, check=True)
    return synthetic_run(params)


def timed(cmd: list[str]) -> tuple[float, int, float]:
    """Run ``cmd``; returns (wall seconds, exit code, peak RSS of that process (and the
    children it waited for) in GB)."""
    t = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL) as proc:
        try:
            _, status, usage = os.wait4(proc.pid, 0)     # this child's own rusage
        except BaseException:
            proc.kill()                                  # as subprocess.run does
            raise
        wall = time.monotonic() - t
        proc.returncode = rc = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
    return wall, rc, usage.ru_maxrss / 2**20


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--master", default="local[*]")
    p.add_argument("--skip-single", action="store_true", help="leave out the single-process check")
    args = p.parse_args(argv)

    run, side = synthetic_run(SYNTH)
    ops = side["ops"]
    want = side["counts"]
    with tempfile.TemporaryDirectory() as out:
        wall, rc, _ = timed(CLI + ["analyze", str(run), "--master", args.master, "--out", out])
        rec = json.loads((Path(out) / "analysis.json").read_text())
    got = rec["runs"][0]["anomalies"]
    exact = all(got.get(k) == v for k, v in want.items())
    print(f"Spark analyze ({args.master}), {ops:,} ops, whole command: {wall:.1f} s = "
          f"{ops / wall:,.0f} ops/s (exit {rc}; Spark start {rec['seconds'].get('spark_start', 0):.1f} s)")
    print("  phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in rec["seconds"].items()))
    print(f"  anomalies {'equal' if exact else 'DIFFER from'} the injected ones: "
          + ", ".join(f"{k} {got.get(k)}/{v}" for k, v in want.items()))
    report(run / "history.jsonl", ops, args.master, wall)
    if args.skip_single:
        return 0
    swall, src, rss = timed(CLI + ["check", str(run)])
    res = json.loads((run / "results.json").read_text())
    sexact = all(res["anomalies"].get(k) == v for k, v in want.items())
    print(f"single-process check, same history, whole command: {swall:.1f} s = {ops / swall:,.0f} ops/s "
          f"(exit {src}; peak RSS {rss:.1f} GB)")
    print(f"  anomalies {'equal' if sexact else 'DIFFER from'} the injected ones: "
          + ", ".join(f"{k} {res['anomalies'].get(k)}/{v}" for k, v in want.items()))
    print(f"ratio Spark / single process: {swall / wall:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
