"""The runs of ``kraft-chaos bugs``: each catalogued bug under its schedule, into a
``bugs.json`` document.

Two catalogues, by target (:data:`CATALOGUES`):

- ``kraft``: each :class:`harness.catalogue.bugs.Bug`, N runs with seeds ``seed .. seed+N-1``
  and its ``--unsafe`` switches on; then the correct build N' times under every schedule those
  bugs used (:func:`run_bugs`). A run detects the bug when its verdict is invalid; the correct
  build's invalid runs are false alarms.
- ``kafka``: each :class:`harness.catalogue.kafka_bugs.KafkaBug`, N runs on its affected
  release and N' on its fixed release, under its schedule (:func:`run_kafka_bugs`). A run
  detects the bug when it shows one of the entry's declared anomaly kinds
  (:mod:`harness.catalogue.scoring`); the fixed release's runs that show one are false alarms.
  Every other anomaly is reported beside them.

Each run may hold an exclusive ``flock`` on a lock file (``lock``), not between runs.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from harness.catalogue.bugs import CATALOGUE, Bug, bug_named
from harness.catalogue.kafka_bugs import KAFKA_CATALOGUE, KafkaBug, kafka_bug_named
from harness.catalogue.scoring import (OVERHEAD_S, outcome_line, outcomes_json, run_one,  # noqa: F401
                                        summarize)
from harness.config.schedules import SCHEDULES
from targets.registry import target_spec

#: each target's bug catalogue: ``db -> (entries, name -> entry)`` (a name that is none
#: raises ``ValueError``); a versioned target's (``TargetSpec.versioned``) pairs an affected
#: with a fixed release (:func:`run_kafka_bugs`), the others run switches (:func:`run_bugs`)
CATALOGUES: dict[str, tuple[tuple, Callable]] = {
    "kraft": (tuple(CATALOGUE), bug_named),
    "kafka": (tuple(KAFKA_CATALOGUE), kafka_bug_named),
}


def paired(db: str | None) -> bool:
    """True when ``db``'s catalogue pairs an affected with a fixed release."""
    return target_spec(db or "kraft").versioned


#: seconds a run may take in all (set-up, faults, final phase, checks); its time limit is cut to fit
DEFAULT_BUDGET_S = 150.0


def run_bugs(bugs: list[Bug], runs: int, correct_runs: int, seed: int, root: str, budget_s: float,
             subnet: str | None = None, echo: Callable[[str], None] = print,
             run: Callable | None = None, schedule: str | None = None, lock: str | None = None) -> dict:
    """Run our quorum's catalogue; returns the ``bugs.json`` document (see the module
    docstring). ``schedule`` (a :data:`SCHEDULES` name) replaces every bug's own."""
    if schedule is not None:
        bugs = [dataclasses.replace(b, schedule=schedule) for b in bugs]
    doc: dict = {"db": "kraft", "runs_per_bug": runs, "correct_runs_per_schedule": correct_runs, "seed": seed,
                 "budget_s": budget_s, "bugs": [], "correct": []}

    def one(fields: dict, i: int, label: str):
        o = run_one(fields, seed + i, root, budget_s=budget_s, subnet=subnet, lock=lock, run=run, label=label)
        echo(outcome_line(label, o))
        return o

    for bug in bugs:
        sched = SCHEDULES[bug.schedule]
        fields = {**sched.run_config(), "unsafe": list(bug.switches)}
        outs = [one(fields, i, bug.name) for i in range(runs)]
        doc["bugs"].append({"name": bug.name, "switches": list(bug.switches), "class": bug.klass,
                            "jira": bug.jira, "schedule": bug.schedule, "schedule_text": sched.describe(),
                            "note": bug.note, **summarize(outs), "outcomes": outcomes_json(outs)})
    for name in dict.fromkeys(b.schedule for b in bugs):
        sched = SCHEDULES[name]
        outs = [one(sched.run_config(), i, f"correct build, {name}") for i in range(correct_runs)]
        s = summarize(outs)
        doc["correct"].append({"schedule": name, "schedule_text": sched.describe(), **s,
                               "false_alarms": s["detected"], "outcomes": outcomes_json(outs)})
    return doc


def run_kafka_bugs(bugs: list[KafkaBug], runs: int, fixed_runs: int, seed: int, root: str,
                   budget_s: float, subnet: str | None = None, echo: Callable[[str], None] = print,
                   run: Callable | None = None, lock: str | None = None) -> dict:
    """Run Kafka's catalogue: each entry ``runs`` times on its affected release and
    ``fixed_runs`` times on its fixed release, scored on its declared kinds; returns the
    ``bugs.json`` document (``{"db": "kafka", "bugs": [{..., "affected": summary,
    "fixed": summary with "false_alarms"}]}``)."""
    doc: dict = {"db": "kafka", "runs_per_bug": runs, "fixed_runs_per_bug": fixed_runs, "seed": seed,
                 "budget_s": budget_s, "bugs": []}
    for bug in bugs:
        sched = SCHEDULES[bug.schedule]
        entry = {"name": bug.jira, "jira": bug.jira, "class": bug.klass, "cause": bug.cause,
                 "introduced": bug.introduced, "fixed_in": list(bug.fixed_in), "schedule": bug.schedule,
                 "schedule_text": sched.describe(), "kinds_declared": list(bug.kinds), "note": bug.note,
                 "command": f"kraft-chaos bugs --db kafka --only {bug.jira} --runs {runs} "
                            f"--correct-runs {fixed_runs} --seed {seed}"}
        for role, side, n in (("affected", bug.affected, runs), ("fixed", bug.fixed, fixed_runs)):
            fields = bug.run_fields(side)
            label = f"{bug.jira} on {side.label()} ({role})"
            outs = []
            for i in range(n):
                o = run_one(fields, seed + i, root, kinds=bug.kinds, budget_s=budget_s, subnet=subnet,
                            lock=lock, run=run, label=label)
                echo(outcome_line(label, o))
                outs.append(o)
            s = summarize(outs)
            entry[role] = {"version": side.version, "kraft_version": side.kraft_version, **s,
                           **({"false_alarms": s["detected"]} if role == "fixed" else {}),
                           "outcomes": outcomes_json(outs)}
        doc["bugs"].append(entry)
    return doc
