"""``make bench``, single-process check part: wall time and peak memory of ``kraft-chaos
check`` on 1M- and 10M-op synthetic ``append`` histories.

The histories (``kraft-chaos synth --ops N --seed 1 --lost 100
--duplicates 100 --inconsistent 10``; N history ops, Jepsen's count of
invokes and completions) are written on first use into
``store/bench-check/`` and reused after (the 10M one takes about a minute
and 1.5 GB). Each check runs as a child process; its peak RSS is that
child's own ``ru_maxrss`` (``os.wait4``), in MB. The anomaly counts are
compared with the injected ones (a mismatch is printed as such). The
checkers stream the history (checkers/fold.py), so memory follows the final
log, not the history: the goal is a peak under 2 GB at 10M ops. Nothing
here is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from harness.analysis.synth import read_sidecar
from harness.run.code_version import PROJECT_ROOT

STORE = PROJECT_ROOT / "store" / "bench-check"
SIZES = (1_000_000, 10_000_000)
INJECT = {"seed": 1, "lost": 100, "duplicates": 100, "inconsistent": 10}
CLI = [sys.executable, "-m", "harness"]
#: the goal for the peak RSS of a check at 10M ops (MB)
GOAL_MB = 2000


def synthetic_run(ops: int, store: Path = STORE) -> tuple[Path, dict]:
    """The ``ops``-op bench history under ``store`` and its sidecar, written on first use."""
    for d in sorted(store.glob("synth-append/*")):
        side = read_sidecar(d)
        if side and side.get("ops") == ops and side.get("seed") == INJECT["seed"] and all(
                side["counts"].get(k, 0) == INJECT[a] for k, a in
                (("lost-write", "lost"), ("duplicate", "duplicates"), ("inconsistent-offsets", "inconsistent"))):
            return d, side
    print(f"writing the synthetic history ({ops:,} ops) into {store} ...", flush=True)
    cmd = CLI + ["synth", "--store", str(store), "--ops", str(ops)] + \
        [x for k, v in INJECT.items() for x in (f"--{k}", str(v))]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return synthetic_run(ops, store)


def measured(cmd: list[str]) -> tuple[float, int, "os.struct_rusage"]:
    """Run ``cmd`` (output discarded); returns (wall seconds, exit code, that process's own
    rusage)."""
    t = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL) as proc:
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            raise
        wall = time.monotonic() - t
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
    return wall, rc, usage


def timed(cmd: list[str]) -> tuple[float, int, float]:
    """Run ``cmd`` (output discarded); returns (wall seconds, exit code, peak RSS of that
    process in MB, from its own rusage)."""
    wall, rc, usage = measured(cmd)
    return wall, rc, usage.ru_maxrss / 1024      # ru_maxrss is in KB on Linux


def bench(ops: int, store: Path = STORE) -> dict:
    """Check the ``ops``-op history once; returns what :func:`main` prints."""
    run, side = synthetic_run(ops, store)
    wall, rc, rss_mb = timed(CLI + ["check", str(run)])
    got = json.loads((run / "results.json").read_text())["anomalies"]
    return {"ops": side["ops"], "run": str(run), "wall_s": wall, "exit": rc, "peak_rss_mb": rss_mb,
            "anomalies": got, "injected": side["counts"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ops", default=",".join(str(n) for n in SIZES),
                   help="comma-separated history sizes (default %(default)s)")
    p.add_argument("--store", type=Path, default=STORE)
    args = p.parse_args(argv)
    print("kraft-chaos check (single process, streaming), whole command:")
    for ops in (int(x) for x in args.ops.split(",")):
        r = bench(ops, args.store)
        want = r["injected"]
        exact = all(r["anomalies"].get(k) == v for k, v in want.items())
        print(f"  {r['ops']:>12,} ops: {r['wall_s']:7.1f} s = {r['ops'] / r['wall_s']:>9,.0f} ops/s, "
              f"peak RSS {r['peak_rss_mb']:,.0f} MB (exit {r['exit']}; goal < {GOAL_MB:,} MB at 10M)")
        print(f"      anomalies {'equal' if exact else 'DIFFER from'} the injected ones: "
              + ", ".join(f"{k} {r['anomalies'].get(k)}/{v}" for k, v in want.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
