"""Scenario families: a table of variants, each a built-in scenario file, run ``--runs`` times
and judged by how many acknowledged writes the checkers found lost.

``kraft-chaos scenario disk-loss-timeline``: KIP-996's disk-loss table, driven step by step.
The table is in KIP-996's "Rejected alternatives" (seed 002): on three voters, S1 leads, S3
is caught up and S2 lags (T0); S3's disk fails and it comes back empty, campaigning
before it catches up (T1-T2); S2's election timeout fires and S3's vote may elect it,
losing what S1 and S3 had committed (T4-T6):

====  =====================================================  ========
a     no Pre-Vote (``--unsafe no-pre-vote``)                 loss
b     standard votes after a failed Pre-Vote                 loss
      (``--unsafe vote-after-failed-prevote``)
c     Pre-Vote (KIP-996), S1 alive                           no loss
d     Pre-Vote, S1 also crashes at T2, kraft.version 0       loss
e     as d, kraft.version 1 (directory ids, KIP-853)         no loss
====  =====================================================  ========

On ``--db kafka`` its nodes are 3 combined Kafka nodes under the ``metadata`` workload, and
a, c, d and e run: c, d and e on the default 4.x (Kafka 4.x always has Pre-Vote), a on the
newest 3.9.x, the last release without Pre-Vote, from its own file
(``disk-loss-timeline-a-kafka.toml``: S2 is held behind by a pause, since a Kafka follower
catches up in one Fetch); b is a switch of ours only.

``kraft-chaos scenario isr-shrink-loss``: Jepsen's 2013 Kafka loss (seed 003, Kafka 0.8's
replication design) under the ``queue`` workload: a partition leader's followers are cut
off until the ISR has shrunk to the leader alone, then the leader is cut off from the rest
of the cluster while clients still reach it; another replica is elected uncleanly:

====  =====================================================  ========
a     acks=all, min.insync.replicas=1, unclean election on    loss
b     the same schedule, min.insync.replicas=2                no loss
====  =====================================================  ========

Each variant is a file ``harness/config/scenarios/<family>-<letter>.toml`` (see
:mod:`harness.config.scenario`) whose leading comment holds ``kraft-chaos scenario <family>,
variant <letter>: <title>`` and ``Expected: loss|no loss``. Every variant runs ``runs``
times (seeds ``seed .. seed+runs-1``); a run's lost writes are its loss checkers' anomaly
counts, judged from the history alone.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable

from checkers.kind_names import current_counts, current_name
from harness.catalogue.scoring import run_lock
from harness.config.resolved import resolve
from harness.config.run import scenario_config
from harness.config.scenario import builtin_scenarios, load, retarget
from harness.run.runner import Interrupted, run_test
from history import store

NAME = "disk-loss-timeline"


@dataclasses.dataclass(frozen=True)
class Family:
    """A scenario family: ``name`` (the command and the files' prefix), ``target_variants``
    (``{db: letters}``: which variants each target runs), ``on_target`` (``{db: [run]
    settings}``: what a run on that target takes over the file's), ``loss_checkers`` (whose anomaly counts are lost
    acknowledged writes), ``source`` (whose table the variants are) and ``target_files``
    (``{db: {letter: scenario name}}``: a variant that a target runs from a file of its own,
    ``<family>-<letter>-<db>.toml``, written for it)."""

    name: str
    target_variants: dict[str, str]
    on_target: dict[str, dict[str, object]]
    loss_checkers: tuple[str, ...]
    source: str
    target_files: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)


FAMILIES: dict[str, Family] = {
    # on Kafka, a runs on the newest 3.9.x (no Pre-Vote; its own file: S2 held behind by a
    # pause), c-e on the default 4.x
    NAME: Family(NAME, {"kraft": "abcde", "kafka": "acde"},
                 {"kafka": {"db": "kafka", "workload": "metadata", "kafka_topology": "combined"}},
                 ("lost-write",), "KIP-996's table", {"kafka": {"a": f"{NAME}-a-kafka"}}),
    "isr-shrink-loss": Family("isr-shrink-loss", {"kraft": "ab", "kafka": "ab"},
                              {"kafka": {"db": "kafka", "kafka_topology": "dedicated"}},
                              ("unseen",), "Kafka 0.8's replication design (Jepsen, 2013)"),
}

def family(name: str) -> Family:
    """The family ``name``; ValueError naming the choices for an unknown one."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown scenario family {name!r}: choose from {', '.join(FAMILIES)}") from None


@dataclasses.dataclass(frozen=True)
class Variant:
    """One row of the table: ``letter``, ``title`` and ``expected`` (from the file's header),
    and its scenario ``path``."""

    letter: str
    title: str
    expected: str
    path: Path

    @property
    def expects_loss(self) -> bool:
        """Whether KIP-996's table expects acknowledged writes to be lost."""
        return self.expected.startswith("loss")




def _header(path: Path, key: str) -> str:
    """The text after ``# <key>`` in the file's leading comment ('' if absent)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        body = line.lstrip("# ")
        if body.lower().startswith(key.lower()):
            return body[len(key):].strip()
    return ""


def variants(family_name: str = NAME, db: str | None = None) -> list[Variant]:
    """Every variant of the family ``family_name`` (by default the disk-loss timeline, a to e);
    with ``db``, a variant that target runs from a file of its own comes from that file."""
    scenarios = builtin_scenarios()
    own = family(family_name).target_files.get(db, {}) if db else {}
    out = []
    for name, path in scenarios.items():
        letter = name[len(family_name) + 1:]
        if name.startswith(family_name + "-") and len(letter) == 1:
            path = scenarios[own[letter]] if letter in own else path
            first = _header(path, f"kraft-chaos scenario {family_name}, variant {letter}:")
            out.append(Variant(letter, first, _header(path, "Expected:"), path))
    return out


def variant_config(variant: Variant, db: str, seed: int, store_root: str, subnet: str | None = None,
                   family_name: str = NAME):
    """The RunConfig of one run of ``variant`` on target ``db``. Raises ``ScenarioError``
    for a malformed scenario file."""
    doc = load(variant.path)
    run = retarget(doc["run"], db)       # the settings only the file's target has do not apply
    run.update(family(family_name).on_target.get(db, {}))
    run.update(seed=seed, store=store_root, **({"subnet": subnet} if subnet else {}))
    return scenario_config({"run": run, "steps": doc["steps"]}, variant.path)


def lost_writes(results: dict, checkers: tuple[str, ...] = ("lost-write",)) -> int:
    """Acknowledged writes the ``checkers`` found missing (0 when they found none). Results
    and ``checkers`` may use the names of older runs (checkers/kind_names.py)."""
    counts = current_counts(results.get("anomalies") or {})
    return sum(n for n in (counts.get(current_name(c), 0) for c in checkers)
               if isinstance(n, int) and not isinstance(n, bool))


def run_timeline(db: str, letters: str, runs: int, seed: int, store_root: str,
                 subnet: str | None = None, echo: Callable[[str], None] = print,
                 run: Callable | None = None, family_name: str = NAME, lock: str | None = None) -> dict:
    """Run the variants ``letters`` of family ``family_name`` (default the disk-loss timeline)
    ``runs`` times each on target ``db``.

    Returns the ``scenario.json`` document: ``{"scenario", "db", "runs", "variants": [{"letter",
    "title", "expected", "target", "lost_total", "runs_with_loss", "runs": [{"seed", "store",
    "verdict", "lost_writes", "anomalies", "error"?}]}]}``. A run that fails (a harness error)
    is recorded with ``error`` and the others go on. ``lock``: a file to ``flock`` for each run
    (:func:`harness.catalogue.scoring.run_lock`). Raises ``ValueError`` for a letter the
    target does not run, ``harness.run.runner.Interrupted`` on Ctrl-C.
    """
    fam = family(family_name)
    table = {v.letter: v for v in variants(family_name, db)}
    allowed = fam.target_variants.get(db, "")
    bad = [x for x in letters if x not in allowed or x not in table]
    if bad:
        raise ValueError(f"variant(s) {', '.join(bad)} of {family_name} do not run on --db {db}: "
                         f"choose from {', '.join(allowed)}")
    doc = {"scenario": family_name, "db": db, "runs": runs, "variants": []}
    for letter in letters:
        v = table[letter]
        row = {"letter": letter, "title": v.title, "expected": v.expected, "target": db, "runs": []}
        for i in range(runs):
            cfg = variant_config(v, db, seed + i, store_root, subnet, family_name)
            t0 = time.monotonic()
            try:
                resolved = resolve(cfg)
                with run_lock(lock):
                    t0 = time.monotonic()
                    results, run_dir = (run or run_test)(resolved, progress=False)
            except Interrupted:
                raise
            except Exception as e:  # noqa: BLE001 - recorded; the other runs go on
                row["runs"].append({"seed": seed + i, "store": None, "verdict": "error",
                                    "lost_writes": None, "error": f"{type(e).__name__}: {e}"})
                echo(f"  {letter} run {i + 1}/{runs}: harness error {e}")
                continue
            verdict = {True: "valid", False: "invalid"}.get(results.get("valid"), "unknown")
            kinds = {k: n for k, n in (results.get("anomalies") or {}).items() if n}
            lost = lost_writes(results, fam.loss_checkers)
            row["runs"].append({"seed": seed + i, "store": str(run_dir), "verdict": verdict,
                                "lost_writes": lost, "anomalies": kinds})
            echo(f"  {letter} run {i + 1}/{runs}: {verdict}, {lost} lost write(s), "
                 f"{time.monotonic() - t0:.0f} s, {run_dir}")
        done = [r for r in row["runs"] if r["lost_writes"] is not None]
        row["lost_total"] = sum(r["lost_writes"] for r in done)
        row["runs_with_loss"] = sum(1 for r in done if r["lost_writes"] > 0)
        doc["variants"].append(row)
    return doc


def format_table(doc: dict) -> str:
    """The table the command prints: one row per variant, its expected and observed loss."""
    lines = [f"{doc['scenario']} on --db {doc['db']}, {doc['runs']} run(s) per variant",
             f"{'':2}{'variant':<58}{'expected':<10}{'lost writes':>12}{'runs with loss':>16}  errors"]
    for row in doc["variants"]:
        errors = sum(1 for r in row["runs"] if r.get("error"))
        expected = "loss" if row["expected"].startswith("loss") else "no loss"
        lines.append(f"{row['letter']:2}{row['title'][:56]:<58}{expected:<10}{row['lost_total']:>12}"
                     f"{row['runs_with_loss']:>11}/{len(row['runs'])}{'':4}  {errors or ''}")
    return "\n".join(lines)


def write_doc(doc: dict, out_dir: Path) -> Path:
    """Write ``scenario.json`` into ``out_dir`` (made if missing); returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "scenario.json"
    store.write_json(path, doc)
    return path


def differs(row: dict) -> bool:
    """Whether a variant's result differs from the table's expectation (loss seen where none
    is expected, or none where loss is)."""
    return (row["lost_total"] > 0) != row["expected"].startswith("loss")
