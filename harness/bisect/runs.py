"""The runs of ``kraft-chaos bisect``: each release the search asks about, ``runs`` times, scored
(:mod:`harness.catalogue.scoring`), into the ``bisect.json`` document; its table and exit code.

A release's verdict (:func:`harness.bisect.search.release_verdict`): ``invalid`` when a run
showed the anomaly, ``valid`` when every run ran and none did, else ``unknown``. Each run may
hold an exclusive ``flock`` on a lock file (``lock``).
"""
from __future__ import annotations

from typing import Callable

from harness.bisect.search import Subject, release_verdict, search
from harness.catalogue.scoring import outcome_line, outcomes_json, run_one, summarize
from history import store


def run_bisect(subj: Subject, releases: list[str], runs: int, seed: int, root: str, mode: str = "bisect",
               subnet: str | None = None, lock: str | None = None, echo: Callable[[str], None] = print,
               run: Callable | None = None, on_release: Callable[[dict], None] | None = None) -> dict:
    """Search ``releases`` for the change of ``subj``'s verdict, ``runs`` runs per release
    tested; returns the ``bisect.json`` document: the subject, the releases, the search's
    answer (:func:`harness.bisect.search.search`) and per release tested its summary and
    outcomes. ``on_release(doc)`` is called after each release (to write it out)."""
    doc: dict = {"subject": subj.name, "what": subj.what, "describe": subj.describe(),
                 "kinds": list(subj.kinds), "mode": mode, "runs_per_release": runs, "seed": seed,
                 "releases": releases, "results": {}, "started": store.timestamp()}

    def verdict_of(version: str) -> str:
        fields = {**subj.fields, "kafka_version": version}
        outs = []
        for i in range(runs):
            o = run_one(fields, seed + i, root, kinds=subj.kinds, subnet=subnet, lock=lock, run=run,
                        label=f"{subj.name} on {version}")
            echo(outcome_line(f"{subj.name} on {version}", o))
            outs.append(o)
        verdict = release_verdict(outs)
        doc["results"][version] = {"verdict": verdict, **summarize(outs), "outcomes": outcomes_json(outs)}
        echo(f"{version}: {verdict} ({doc['results'][version]['detected']}/{runs} showed it)")
        if on_release:
            on_release(doc)
        return verdict

    doc.update(search(releases, verdict_of, mode))
    doc["finished"] = store.timestamp()
    return doc


def format_table(doc: dict) -> str:
    """The table of a ``bisect.json`` document and its answer."""
    lines = [f"bisect {doc['describe']}", f"{'release':10} {'runs':>5} {'detected':>9}  {'verdict':8}  anomalies (runs)"]
    for v in doc["releases"]:
        r = doc["results"].get(v)
        if r is None:
            lines.append(f"{v:10} {'-':>5} {'-':>9}  {'not run':8}")
            continue
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["all_kinds"].items(), key=lambda kv: -kv[1])) or "-"
        mark = "  <- changed here" if v == doc.get("changed_at") else ""
        lines.append(f"{v:10} {r['runs']:>5} {r['detected']:>5}/{r['runs']:<3}  {r['verdict']:8}  {kinds}{mark}")
    if doc.get("changed_at"):
        lines.append(f"the verdict changes at {doc['changed_at']}: {doc['from']} up to {doc['before']}, "
                     f"{doc['to']} from {doc['changed_at']} ({doc['reason']})")
    else:
        lines.append(f"no change found: {doc['reason']}")
    return "\n".join(lines)


def exit_code(doc: dict) -> int:
    """0: a change was named; 2: unknown verdicts left it undecided; 1: no change."""
    if doc.get("changed_at"):
        return 0
    verdicts = set(doc.get("verdicts", {}).values())
    return 2 if "unknown" in verdicts or not verdicts - {"unknown"} else 1
