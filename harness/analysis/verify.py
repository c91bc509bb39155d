"""Compare ``kraft-chaos analyze`` with ``kraft-chaos check``, run by run.

``python -m harness.analysis.verify ANALYSIS_DIR`` runs the
single-process check (``harness.run.check.check_run_dir``, what ``kraft-chaos
check RUN`` runs) on every run the analysis covered and compares its verdict,
each checker's verdict and each anomaly count with ``ANALYSIS_DIR/
analysis.json``. Prints one line per mismatch and a total; exits 0 when all
agree, 1 otherwise. Runs ``check`` refuses (malformed histories: exit 3)
must be "unknown" in the analysis.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from checkers.spark.verdict import name as verdict_name
from harness.run.check import check_run_dir


def compare(analysis_dir: Path) -> tuple[int, list[str]]:
    """Check every run of ``analysis_dir/analysis.json``; returns (runs compared, mismatches)."""

    rec = json.loads((Path(analysis_dir) / "analysis.json").read_text())
    bad = []
    for r in rec["runs"]:
        run_dir = Path(r["history"]).parent
        try:
            res = check_run_dir(run_dir)
        except ValueError as e:   # HistoryError included
            if r["verdict"] != "unknown":
                bad.append(f"{r['name']}: check refuses it ({e}) but analyze says {r['verdict']}")
            continue
        want = verdict_name(res["valid"])
        if r["verdict"] != want:
            bad.append(f"{r['name']}: verdict analyze {r['verdict']} != check {want}")
        for name, result in res["checkers"].items():
            v = verdict_name(result.get("valid"))
            if r["checkers"].get(name) != v:
                bad.append(f"{r['name']}: {name} analyze {r['checkers'].get(name)} != check {v}")
            n = res["anomalies"].get(name)
            if name != "linearizability" and r["anomalies"].get(name) != n:
                bad.append(f"{r['name']}: {name} anomalies analyze {r['anomalies'].get(name)} != check {n}")
    return len(rec["runs"]), bad


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m harness.analysis.verify ANALYSIS_DIR", file=sys.stderr)
        return 3
    n, bad = compare(Path(args[0]))
    for line in bad:
        print(line)
    print(f"{n} run(s) compared: {n - len({b.split(':')[0] for b in bad})} agree, {len(bad)} mismatch(es)")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
