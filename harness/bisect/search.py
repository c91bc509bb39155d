"""In which Kafka release did the verdict change? The search behind ``kraft-chaos bisect``.

A *subject* is what runs at every release: a Kafka catalogue entry (its schedule and
kraft.version, scored on its declared anomaly kinds), a schedule written for Kafka, or a
scenario (by name or file), scored on the whole verdict or on ``kinds`` when given.
A release's verdict from its runs (:func:`release_verdict`): ``invalid`` when at least
one run showed the anomaly (one counterexample proves the release has it, as in Jepsen),
``valid`` when every run ran and none did, ``unknown`` otherwise (a run that ended unknown
or could not be made, and none showed it).

Two searches over the releases, oldest first (:func:`search`):

- ``step``: every release in turn; the first release whose verdict differs from the one
  before it (unknowns skipped) is where it changed.
- ``bisect``: the two ends first; when they differ, halve the releases between the last one
  with the first end's verdict and the first one without, until they are neighbours
  (a release whose verdict is unknown is stepped over to its neighbour). It assumes the
  verdict changes once in the range, as a fix or a regression does; ``step`` shows when it
  does not.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from harness.catalogue.kafka_bugs import KafkaBug, Side, kafka_bug_named
from harness.catalogue.scoring import RunOutcome
from harness.config.resolved import resolve
from harness.config.run import RunConfig, scenario_config
from harness.config.scenario import builtin_scenarios, load
from harness.config.schedules import SCHEDULES
from targets.registry import target_spec

MODES = ("bisect", "step")
VERDICTS = ("valid", "invalid", "unknown")


@dataclasses.dataclass(frozen=True)
class Subject:
    """What runs at each release: ``name`` (the argument), ``what`` (``catalogue``,
    ``schedule`` or ``scenario``), ``fields`` (RunConfig fields without seed, store, subnet
    and kafka_version), ``kinds`` (the anomaly kinds scored; empty: the whole verdict),
    ``bug`` (the catalogue entry, when it is one)."""

    name: str
    what: str
    fields: dict
    kinds: tuple[str, ...] = ()
    bug: KafkaBug | None = None

    def describe(self) -> str:
        """``catalogue entry KAFKA-15489 (schedule kafka-fence), scored on stale-leader``."""
        scored = f"scored on {', '.join(self.kinds)}" if self.kinds else "scored on the whole verdict"
        extra = f" (schedule {self.bug.schedule})" if self.bug else ""
        return f"{self.what} {self.name}{extra}, {scored}"


def subject(name: str, kinds: tuple[str, ...] | None = None) -> Subject:
    """The :class:`Subject` ``name`` names: a Kafka catalogue entry's JIRA id, a schedule of
    ``SCHEDULES`` written for ``--db kafka``, or a scenario (a built-in name or a file) whose
    ``[run]`` names ``db = "kafka"``. ``kinds`` replaces the entry's declared kinds (or the
    whole verdict). Raises ``ValueError`` naming what is wrong (a name that is none of them,
    a schedule or scenario for another target), ``ScenarioError`` for a malformed file."""
    try:
        bug = kafka_bug_named(name)
    except ValueError:
        bug = None
    if bug is not None:
        fields = bug.run_fields(Side(bug.affected.version, bug.affected.kraft_version))
        fields.pop("kafka_version")
        return Subject(bug.jira, "catalogue entry", fields, bug.kinds if kinds is None else kinds, bug)
    if name in SCHEDULES:
        sched = SCHEDULES[name]
        if not target_spec(sched.db).versioned:
            raise ValueError(f"schedule {name!r} is written for --db {sched.db}; bisect steps through "
                             f"Kafka releases: choose a kafka schedule "
                             f"({', '.join(n for n, s in SCHEDULES.items() if target_spec(s.db).versioned)})")
        return Subject(name, "schedule", sched.run_config(), kinds or ())
    path = Path(name) if Path(name).exists() else builtin_scenarios().get(name)
    if path is None:
        raise ValueError(f"{name!r} is neither a Kafka catalogue entry, a schedule nor a scenario "
                         f"(kraft-chaos bugs --db kafka, harness/config/schedules.py, kraft-chaos scenario list)")
    cfg = scenario_config(load(path), path)
    if not target_spec(cfg.db).versioned:
        raise ValueError(f"scenario {name!r} runs on --db {cfg.db}; bisect needs one with db = \"kafka\"")
    fields = {k: v for k, v in dataclasses.asdict(cfg).items()
              if k not in ("seed", "store", "subnet", "kafka_version", "kafka_dist", "kafka_dist_digest")}
    return Subject(name, "scenario", fields, kinds or ())


def check_release(subj: Subject, version: str) -> None:
    """Refuse, before anything runs, a release the subject cannot run on (for example a
    kraft.version 1 subject on a release before 3.9). Raises ``ValueError`` or
    ``targets.errors.TargetError`` naming the release and the reason."""
    resolve(RunConfig(seed=0, kafka_version=version, **subj.fields))


def release_verdict(outcomes: list[RunOutcome]) -> str:
    """``invalid`` when a run detected it, ``valid`` when every run ran and none did,
    ``unknown`` otherwise (module docstring)."""
    if any(o.detected for o in outcomes):
        return "invalid"
    if outcomes and all(o.error is None and o.valid is not None and o.valid != "unknown" for o in outcomes):
        return "valid"
    return "unknown"


def search(releases: list[str], verdict_of: Callable[[str], str], mode: str = "bisect") -> dict:
    """Find where the verdict changes among ``releases`` (oldest first). ``verdict_of(v)``
    runs release ``v`` and returns its verdict (called at most once per release).

    Returns ``{"changed_at": release or None, "before": the release before it (the last one
    with the first verdict) or None, "from": the first verdict, "to": the verdict at
    ``changed_at``, "tested": [releases in the order run], "verdicts": {release: verdict},
    "reason": text}``. Raises ``ValueError`` for an unknown mode or no releases."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: choose from {', '.join(MODES)}")
    if not releases:
        raise ValueError("no release to run")
    verdicts: dict[str, str] = {}
    tested: list[str] = []

    def at(i: int) -> str:
        v = releases[i]
        if v not in verdicts:
            verdicts[v] = verdict_of(v)
            tested.append(v)
        return verdicts[v]

    def done(changed: int | None, before: int | None, first: str | None, reason: str) -> dict:
        return {"changed_at": releases[changed] if changed is not None else None,
                "before": releases[before] if before is not None else None,
                "from": first, "to": verdicts.get(releases[changed]) if changed is not None else None,
                "tested": tested, "verdicts": verdicts, "reason": reason}

    if mode == "step":
        prev = None
        for i in range(len(releases)):
            v = at(i)
            if v == "unknown":
                continue
            if prev is not None and v != verdicts[releases[prev]]:
                return done(i, prev, verdicts[releases[prev]], "stepped through every release up to it")
            prev = i
        first = verdicts[releases[prev]] if prev is not None else None
        return done(None, None, first, "the verdict is the same at every release that gave one"
                    if prev is not None else "no release gave a verdict")
    # bisect: the first decisive release from each end
    lo = next((i for i in range(len(releases)) if at(i) != "unknown"), None)
    if lo is None:
        return done(None, None, None, "no release gave a verdict")
    hi = next((i for i in range(len(releases) - 1, lo, -1) if at(i) != "unknown"), None)
    first = at(lo)
    if hi is None or at(hi) == first:
        return done(None, None, first, f"{releases[lo]} and {releases[hi if hi is not None else lo]} "
                                       f"give the same verdict: no change in the range")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        # an unknown release is stepped over: its nearest decisive neighbour between lo and hi
        order = sorted(range(lo + 1, hi), key=lambda j: (abs(j - mid), j))
        pick = next((j for j in order if at(j) != "unknown"), None)
        if pick is None:
            return done(hi, lo, first, f"every release between {releases[lo]} and {releases[hi]} is "
                                       f"unknown: it changed after {releases[lo]}, at {releases[hi]} or before")
        if at(pick) == first:
            lo = pick
        else:
            hi = pick
    return done(hi, lo, first, "bisected")
