"""``make bench``, linearizability part: check time against porcupine's Go benchmarks.

For each corpus it prints the check time (parsing excluded, as porcupine's
``b.ResetTimer()`` does): one warm-up check, then the mean of 3 timed checks,
summed over the corpus's files, beside porcupine's figure on this machine
(``go test -bench``, check time only, 3 iterations, from issue 3) and the
ratio. Corpora: the 102 Jepsen etcd logs; kv c50-ok and c50-bad by key; kv
c10-ok and c10-bad without partitioning; and a kv history of 100k+ ops
recorded from our own cluster (recorded on first use into
``store/bench-kv/``, reused after). Nothing here is asserted.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from checkers.linearizability.checker import check_operations
from checkers.linearizability.formats import model_for, read_file
from checkers.linearizability.formats.jsonl import pair_run_history

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "porcupine"
#: porcupine (Go) on this machine, seconds of check time (issue 3)
PORCUPINE_S = {"etcd (102 logs)": 0.35, "c50-ok": 0.13, "c50-bad": 0.014,
               "c10-ok, no partitioning": 1.6, "c10-bad, no partitioning": 1.8}
KV_OPS = 100_000
KV_STORE = REPO / "store" / "bench-kv"


def timed_check(model, ops, partitioned: bool, iterations: int = 3) -> tuple[float, object]:
    """Mean seconds of ``iterations`` checks after one warm-up; and the last result."""
    check_operations(model, ops, partitioned=partitioned, explain=False)
    total = 0.0
    for _ in range(iterations):
        r = check_operations(model, ops, partitioned=partitioned, explain=False)
        total += r.check_s
    return total / iterations, r


def corpus(files: list[Path], fmt: str, model_name: str, partitioned: bool) -> tuple[float, list]:
    """Summed mean check time over ``files`` and their verdicts."""
    secs, verdicts = 0.0, []
    for f in files:
        model = model_for(fmt, model_name)
        ops = read_file(f, fmt, model).ops
        s, r = timed_check(model, ops, partitioned)
        secs += s
        verdicts.append(r.valid)
    return secs, verdicts


def kv_history(min_ops: int) -> tuple[Path, list[dict]]:
    """A kv history.jsonl of at least ``min_ops`` client ops from our cluster (recorded if needed),
    and its ops (``read_history``)."""
    from history import read_history
    for h in sorted(KV_STORE.glob("*/*/history.jsonl"), reverse=True):
        ops = read_history(h)
        if sum(1 for op in ops if op["type"] != "invoke" and op["process"] != "nemesis") >= min_ops:
            return h, ops
    print(f"recording a kv history of {min_ops} ops from a 5-node cluster (once; kept in {KV_STORE})",
          flush=True)
    cmd = [sys.executable, "-m", "harness", "run", "--workload", "kv", "--nodes", "5",
           "--nemesis", "partition,kill,pause", "--concurrency", "40", "--rate", "2000",
           "--time-limit", str(int(min_ops / 2000 * 1.3) + 10), "--store", str(KV_STORE),
           "--subnet", "10.82.0.0/24", "--seed", "100000", "--no-progress"]
    subprocess.run(cmd, cwd=REPO, check=False)
    hs = sorted(KV_STORE.glob("*/*/history.jsonl"), reverse=True)
    if not hs:
        raise SystemExit("bench: recording the kv history failed (see the output above)")
    return hs[0], read_history(hs[0])


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns 0 (3 when porcupine's data is missing)."""
    ap = argparse.ArgumentParser(prog="bench_linearizability", description=__doc__)
    ap.add_argument("--no-cluster", action="store_true", help="skip the 100k-op history from our cluster")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"bench: porcupine's test data is not at {DATA}", file=sys.stderr)
        return 3
    rows = []
    etcd = sorted(p for p in (DATA / "jepsen").glob("etcd_*.log") if p.stat().st_size)
    s, v = corpus(etcd, "jepsen-log", "register", True)
    rows.append(("etcd (102 logs)", s, f"{len(etcd)} files, {v.count(True)} linearizable"))
    for name in ("c50-ok", "c50-bad"):
        s, v = corpus([DATA / "kv" / f"{name}.txt"], "kv-log", "kv", True)
        rows.append((name, s, f"by key: {v[0]}"))
    for name in ("c10-ok", "c10-bad"):
        s, v = corpus([DATA / "kv" / f"{name}.txt"], "kv-log", "kv", False)
        rows.append((f"{name}, no partitioning", s, f"whole map: {v[0]}"))
    if not args.no_cluster:
        h, ops = kv_history(KV_OPS)
        model = model_for("jsonl", "kv")
        paired = pair_run_history(ops, model, h)
        s, r = timed_check(model, paired.ops, True)
        rows.append((f"our kv, {len(paired.ops)} ops", s, f"by key: {r.valid} ({h.parent.name})"))
    print(f"{'corpus':34} {'check s':>9} {'porcupine s':>12} {'ratio':>7}  verdicts")
    for name, secs, note in rows:
        ref = PORCUPINE_S.get(name)
        ratio = f"{ref / secs:6.1f}x" if ref and secs else "      -"
        print(f"{name:34} {secs:9.4f} {ref if ref is not None else '-':>12} {ratio}  {note}")
    print("ratio = porcupine's time / ours (above 1: we are faster). Check time only, mean of 3 "
          "after a warm-up.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
