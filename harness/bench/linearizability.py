"""``make bench``, linearizability part: our checker against porcupine, both timed in this run.

For each corpus it times our checker and porcupine (Go, ``bench/porcupine/``,
built here on first use into ``.cache/porcupine-bench/`` and rebuilt when its
sources change) on the same files: check time only, parsing excluded (as
porcupine's own benchmarks do after ``b.ResetTimer()``). Per file: one
warm-up check, then timed checks until at least :data:`MIN_ITERATIONS` ran
and together took :data:`MIN_TIME_S` / (files in the corpus) seconds; the
file's time is their mean, the corpus's the sum over its files. It prints
both times in ms, the ratio porcupine / ours (above 1: we are faster) and
both verdicts; a verdict that differs is printed loudly.

Corpora (porcupine's test data at :data:`DATA`): the 102 Jepsen etcd logs
(register); kv c01, c10 and c50, ok and bad, checked by key; kv c10-ok and
c10-bad without partitioning (one map); and, unless ``--no-cluster``, a kv
history of 100k+ ops recorded from our own cluster (recorded on first use
into ``store/bench-kv/``, reused after; ours only). Without ``go`` or when
the build fails (no module proxy), porcupine's column is "-" and the reason
is printed once. Nothing here is asserted; the exit code is 0 (3 when
porcupine's test data is missing).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from checkers.linearizability.checker import check_operations
from checkers.linearizability.formats import model_for, read_file
from checkers.linearizability.formats.jsonl import pair_run_history
from history import read_history

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data" / "porcupine"
#: the Go program timing porcupine, and where its binary is built
GO_SRC = REPO / "bench" / "porcupine"
GO_CACHE = REPO / ".cache" / "porcupine-bench"
GO_BUILD_TIMEOUT_S = 600
#: timed checks per file, at least; and at most (a cap for the tiny corpora)
MIN_ITERATIONS = 3
MAX_ITERATIONS = 100_000
#: seconds of timed checks per corpus, at least (split over its files)
MIN_TIME_S = 0.3
KV_OPS = 100_000
KV_STORE = REPO / "store" / "bench-kv"


@dataclasses.dataclass
class Corpus:
    """One row: ``files`` read as ``fmt``, checked with our ``model`` (by key or not) and with
    porcupine's ``go_model`` ("register", "kv", "kv-whole"; None: not run by porcupine)."""

    name: str
    fmt: str
    model: str
    partitioned: bool
    files: list[Path]
    go_model: str | None

    @property
    def min_time_s(self) -> float:
        """Seconds of timed checks per file, at least."""
        return MIN_TIME_S / max(1, len(self.files))


@dataclasses.dataclass
class Timing:
    """A checker's result on a corpus: ``check_s`` (s, summed over files) and a verdict per file
    (True, False or "unknown")."""

    check_s: float
    verdicts: list


def corpora(data: Path = DATA) -> list[Corpus]:
    """The porcupine corpora, in table order."""
    kv = data / "kv"
    etcd = sorted(p for p in (data / "jepsen").glob("etcd_*.log") if p.stat().st_size)
    rows = [Corpus(f"etcd ({len(etcd)} logs)", "jepsen-log", "register", True, etcd, "register")]
    for name in ("c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad"):
        rows.append(Corpus(f"{name}, by key", "kv-log", "kv", True, [kv / f"{name}.txt"], "kv"))
    for name in ("c10-ok", "c10-bad"):
        rows.append(Corpus(f"{name}, no partitioning", "kv-log", "kv", False, [kv / f"{name}.txt"],
                           "kv-whole"))
    return rows


def timed_check(model, ops, partitioned: bool, min_time_s: float = 0.0,
                min_iterations: int = MIN_ITERATIONS) -> tuple[float, object]:
    """Mean seconds of the timed checks after one warm-up (at least ``min_iterations``, and
    more until they took ``min_time_s`` s, at most :data:`MAX_ITERATIONS`); and the last result."""
    r = check_operations(model, ops, partitioned=partitioned, explain=False)
    total, n = 0.0, 0
    while n < min_iterations or (total < min_time_s and n < MAX_ITERATIONS):
        r = check_operations(model, ops, partitioned=partitioned, explain=False)
        total += r.check_s
        n += 1
    return total / n, r


def time_ours(c: Corpus) -> Timing:
    """Our checker on ``c``: summed mean check time (s) and the verdicts."""
    secs, verdicts = 0.0, []
    for f in c.files:
        model = model_for(c.fmt, c.model)
        ops = read_file(f, c.fmt, model).ops
        s, r = timed_check(model, ops, c.partitioned, c.min_time_s)
        secs += s
        verdicts.append(r.valid)
    return Timing(secs, verdicts)


# -- porcupine ------------------------------------------------------------

def find_go() -> str | None:
    """The ``go`` binary: ``$GO`` if set, else ``go`` on PATH; None if there is none."""
    return os.environ.get("GO") or shutil.which("go")


def source_digest(src: Path = GO_SRC) -> str:
    """Hash of the Go program's sources (main.go, go.mod, go.sum): names its build."""
    h = hashlib.sha256()
    for name in ("main.go", "go.mod", "go.sum"):
        p = src / name
        h.update(name.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    return h.hexdigest()[:16]


def build_porcupine(src: Path = GO_SRC, cache: Path = GO_CACHE) -> tuple[Path | None, str]:
    """The porcupine-bench binary, built unless the cache has one for these sources; or None
    and why not (no ``go``, build failed, e.g. no network to the module proxy)."""
    go = find_go()
    if go is None:
        return None, "go is not installed (no `go` on PATH)"
    exe = cache / f"porcupine-bench-{source_digest(src)}"
    if exe.is_file():
        return exe, ""
    cache.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_name(exe.name + f".tmp{os.getpid()}")
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    print(f"building porcupine's bench ({src.relative_to(REPO) if src.is_relative_to(REPO) else src}) "
          f"with {go} ...", flush=True)
    try:
        p = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=src, env=env, capture_output=True,
                           text=True, timeout=GO_BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"go build failed: {e}"
    if p.returncode != 0 or not tmp.is_file():
        lines = [ln for ln in (p.stderr or p.stdout).splitlines() if ln.strip()]
        return None, "go build failed: " + (lines[-1] if lines else f"exit {p.returncode}")
    os.replace(tmp, exe)
    for old in cache.glob("porcupine-bench-*"):  # earlier builds
        if old != exe:
            old.unlink(missing_ok=True)
    return exe, ""


def go_spec(rows: list[Corpus]) -> list[dict]:
    """The porcupine-bench input (stdin JSON) for the rows porcupine runs."""
    return [{"name": c.name, "format": c.fmt, "model": c.go_model, "files": [str(f) for f in c.files],
             "min_time_s": c.min_time_s} for c in rows if c.go_model]


def parse_go_output(text: str) -> tuple[dict[str, Timing], str]:
    """porcupine-bench's stdout (one JSON object) -> ({corpus name: Timing}, porcupine version).

    Raises ValueError for output that is not that object."""
    try:
        doc = json.loads(text)
        out = {c["name"]: Timing(float(c["check_s"]), [bool(v) for v in c["verdicts"]])
               for c in doc["corpora"]}
        return out, str(doc.get("porcupine", "?"))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"unreadable porcupine-bench output ({e}): {text[:200]!r}") from None


def run_porcupine(exe: Path, rows: list[Corpus]) -> tuple[dict[str, Timing], str]:
    """Porcupine's timings for ``rows`` from the porcupine-bench binary ``exe``, and its version.

    Raises RuntimeError (with porcupine-bench's complaint) when it fails."""
    try:
        p = subprocess.run([str(exe), "-min-iterations", str(MIN_ITERATIONS),
                            "-max-iterations", str(MAX_ITERATIONS)], input=json.dumps(go_spec(rows)),
                           capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"porcupine-bench failed: {e}") from None
    if p.returncode != 0:
        raise RuntimeError(f"porcupine-bench failed: {p.stderr.strip()[-300:]}")
    try:
        return parse_go_output(p.stdout)
    except ValueError as e:
        raise RuntimeError(str(e)) from None


def time_both(rows: list[Corpus]) -> tuple[dict[str, Timing], dict[str, Timing], str]:
    """Our timings and porcupine's for ``rows``, corpus by corpus (ours, then porcupine's, so
    both see the same load on the machine), and a note: porcupine's version, or why its
    timings are missing (said once, here)."""
    exe, note = build_porcupine()
    if exe is None:
        print(f"porcupine's column skipped: {note}", flush=True)
    ours: dict[str, Timing] = {}
    theirs: dict[str, Timing] = {}
    for c in rows:
        t0 = time.perf_counter()
        ours[c.name] = time_ours(c)
        took = f"timed {c.name}: ours {time.perf_counter() - t0:.1f} s"
        if exe is not None and c.go_model:
            t0 = time.perf_counter()
            try:
                got, version = run_porcupine(exe, [c])
            except RuntimeError as e:
                exe, note = None, str(e)
                print(f"porcupine's column stops here: {note}", flush=True)
            else:
                theirs.update(got)
                note = f"porcupine {version}"
                took += f", porcupine {time.perf_counter() - t0:.1f} s"
        print(took, flush=True)
    return ours, theirs, note


def mismatches(c: Corpus, ours: Timing, theirs: Timing | None) -> list[str]:
    """One line per file whose verdicts differ (our "unknown" differs from either)."""
    if theirs is None:
        return []
    if len(ours.verdicts) != len(theirs.verdicts):
        return [f"{c.name}: {len(ours.verdicts)} verdicts here, {len(theirs.verdicts)} from porcupine"]
    return [f"{c.name}: {f.name}: ours {a}, porcupine {b}"
            for f, a, b in zip(c.files, ours.verdicts, theirs.verdicts) if a is not b]


def describe_verdicts(verdicts: list) -> str:
    """``True`` for one file, else ``23/102 linearizable`` (plus unknowns)."""
    if len(verdicts) == 1:
        return str(verdicts[0])
    unknown = sum(1 for v in verdicts if v not in (True, False))
    return f"{sum(1 for v in verdicts if v is True)}/{len(verdicts)} linearizable" + \
        (f", {unknown} unknown" if unknown else "")


def format_table(rows: list[tuple[str, Timing, Timing | None]], note: str) -> str:
    """The table: per row our time, porcupine's (ms), the ratio and both verdicts."""
    out = [f"{'corpus':26} {'ours ms':>10} {'porcupine ms':>13} {'ratio':>8}  {'ours':<20} porcupine"]
    for name, ours, theirs in rows:
        go_ms = f"{theirs.check_s * 1e3:13.3f}" if theirs else f"{'-':>13}"
        ratio = f"{theirs.check_s / ours.check_s:7.2f}x" if theirs and ours.check_s else f"{'-':>8}"
        go_v = describe_verdicts(theirs.verdicts) if theirs else "-"
        out.append(f"{name:26} {ours.check_s * 1e3:10.3f} {go_ms} {ratio}  "
                   f"{describe_verdicts(ours.verdicts):<20} {go_v}")
    out.append(f"ratio = porcupine's time / ours (above 1: we are faster); {note}. Check time only: "
               f"mean of >= {MIN_ITERATIONS} checks after a warm-up, >= {MIN_TIME_S:g} s per corpus.")
    return "\n".join(out)


def kv_history(min_ops: int) -> tuple[Path, list[dict]]:
    """A kv history.jsonl of at least ``min_ops`` client ops from our cluster (recorded if needed),
    and its ops (``read_history``)."""
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


def our_kv_row() -> tuple[str, Timing]:
    """Our own cluster's kv history, checked by key (ours only)."""
    h, ops = kv_history(KV_OPS)
    model = model_for("jsonl", "kv")
    paired = pair_run_history(ops, model, h)
    s, r = timed_check(model, paired.ops, True)
    return f"our kv, {len(paired.ops)} ops", Timing(s, [r.valid])


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns 0 (3 when porcupine's data is missing)."""
    ap = argparse.ArgumentParser(prog="bench_linearizability", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-cluster", action="store_true", help="skip the 100k-op history from our cluster")
    ap.add_argument("--only", action="append", metavar="PREFIX",
                    help="only the corpora whose name starts with PREFIX (repeatable)")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"bench: porcupine's test data is not at {DATA}", file=sys.stderr)
        return 3
    rows = [c for c in corpora() if not args.only or any(c.name.startswith(p) for p in args.only)]
    ours, theirs, note = time_both(rows)
    if not theirs:
        note = "porcupine not run (see above)"
    table = [(c.name, ours[c.name], theirs.get(c.name)) for c in rows]
    if not args.no_cluster and not args.only:
        name, t = our_kv_row()
        table.append((name, t, None))
    print(format_table(table, note))
    bad = [m for c in rows for m in mismatches(c, ours[c.name], theirs.get(c.name))]
    if bad:
        print("\n!!! VERDICT MISMATCH between our checker and porcupine !!!", file=sys.stderr)
        for m in bad:
            print(f"!!!   {m}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
