"""``kraft-chaos bisect`` (harness/bisect/, harness/cli/bisect.py) with stand-ins for real
runs: the search (bisect and step), a release's verdict from its runs, the subjects, the table,
bisect.json and the exit codes. Real runs: tests/integration/test_kafka_bugs.py (``-m slow``)."""
from __future__ import annotations

import json

import pytest

from harness.bisect.search import release_verdict, search, subject
from harness.catalogue.scoring import RunOutcome
from harness.bisect import runs as bisect_runs
from harness.cli import bisect as bisect_cli
from harness.cli import main as cli
from history import store
from targets.kafka.releases import patches_between

RELEASES = ["3.5.2", "3.6.0", "3.6.1", "3.6.2", "3.7.0", "3.7.1", "3.7.2", "3.8.0", "3.8.1"]


def oracle(verdicts: dict[str, str], calls: list):
    def verdict_of(v: str) -> str:
        calls.append(v)
        return verdicts[v]
    return verdict_of


@pytest.mark.parametrize("change", range(1, len(RELEASES)))
def test_bisect_lands_on_the_first_release_with_the_new_verdict(change):
    verdicts = {v: "invalid" if i < change else "valid" for i, v in enumerate(RELEASES)}
    calls: list = []
    got = search(RELEASES, oracle(verdicts, calls), "bisect")
    assert (got["changed_at"], got["before"], got["from"], got["to"]) == \
        (RELEASES[change], RELEASES[change - 1], "invalid", "valid")
    assert len(calls) == len(set(calls)) <= 2 + 3          # the ends, then log2(9) halvings at most
    assert calls[:2] == [RELEASES[0], RELEASES[-1]] and got["tested"] == calls


def test_step_runs_every_release_until_the_change():
    verdicts = {v: "invalid" if v < "3.7.0" else "valid" for v in RELEASES}
    calls: list = []
    got = search(RELEASES, oracle(verdicts, calls), "step")
    assert got["changed_at"] == "3.7.0" and got["before"] == "3.6.2"
    assert calls == RELEASES[:5]


def test_unknown_releases_are_stepped_over():
    verdicts = {v: "invalid" if v < "3.7.0" else "valid" for v in RELEASES}
    verdicts["3.6.2"] = verdicts["3.7.0"] = verdicts["3.5.2"] = "unknown"
    got = search(RELEASES, oracle(verdicts, []), "bisect")
    # 3.6.2 and 3.7.0 gave no verdict: the change lies after 3.6.1, at 3.7.1 at the latest
    assert (got["before"], got["changed_at"]) == ("3.6.1", "3.7.1")
    assert "unknown" in got["reason"]
    got = search(RELEASES, oracle(verdicts, []), "step")
    assert (got["before"], got["changed_at"]) == ("3.6.1", "3.7.1")


def test_no_change_in_the_range_and_no_verdict_at_all():
    got = search(RELEASES, oracle({v: "valid" for v in RELEASES}, calls := []), "bisect")
    assert got["changed_at"] is None and "no change" in got["reason"] and calls == [RELEASES[0], RELEASES[-1]]
    got = search(RELEASES[:3], oracle({v: "unknown" for v in RELEASES}, []), "step")
    assert got["changed_at"] is None and got["reason"] == "no release gave a verdict"
    with pytest.raises(ValueError, match="unknown mode"):
        search(RELEASES, lambda v: "valid", "binary")


def _out(detected=False, valid=True, error=None):
    return RunOutcome(1, valid, [], None, 1.0, None, error, detected)


def test_a_release_is_invalid_when_one_run_shows_it():
    assert release_verdict([_out(), _out(True, False), _out()]) == "invalid"
    assert release_verdict([_out(), _out()]) == "valid"
    # an invalid run with another anomaly than the one scored does not make the release invalid
    assert release_verdict([_out(False, False), _out()]) == "valid"
    assert release_verdict([_out(), _out(False, "unknown")]) == "unknown"
    assert release_verdict([_out(), _out(False, "unknown", "RuntimeError: no engine")]) == "unknown"
    assert release_verdict([]) == "unknown"


def test_subjects_a_catalogue_entry_a_schedule_and_a_scenario():
    s = subject("KAFKA-15489")
    assert (s.what, s.kinds, s.fields["kraft_version"], s.fields["db"]) == ("catalogue entry", ("stale-leader",), 0, "kafka")
    assert "kafka_version" not in s.fields and "scored on stale-leader" in s.describe()
    assert subject("KAFKA-15489", ("disruptive-election",)).kinds == ("disruptive-election",)
    s = subject("kafka-fence")
    assert (s.what, s.kinds) == ("schedule", ()) and "whole verdict" in s.describe()
    s = subject("kafka-remove-partitioned-voter")
    assert s.what == "scenario" and s.fields["scenario"] and s.fields["kraft_version"] == 1
    with pytest.raises(ValueError, match="written for --db kraft"):
        subject("default")
    with pytest.raises(ValueError, match="neither a Kafka catalogue entry"):
        subject("no-such-thing")
    with pytest.raises(ValueError, match="runs on --db kraft"):
        subject("disk-loss-timeline-c")


def test_run_bisect_runs_n_seeds_per_release_and_scores_on_the_kinds(tmp_path):
    """A stand-in for run_test: stale-leader up to 3.6.2, disruptive-election on every 3.x."""
    seen = []

    def run(resolved, progress=False):
        cfg = resolved.flat
        seen.append((cfg.kafka_version, cfg.seed))
        run_dir = store.create_run_dir(tmp_path, "fake", f"s{len(seen)}")
        (run_dir / "history.jsonl").write_text(
            '{"index":0,"time":0,"type":"invoke","process":0,"f":"append","value":1}\n'
            '{"index":1,"time":4000000000,"type":"ok","process":0,"f":"append","value":{"value":1}}\n')
        found = {"disruptive-election": 1, **({"stale-leader": 1} if cfg.kafka_version < "3.7.0" else {})}
        return {"valid": False, "anomalies": found, "checkers": {k: {"anomalies": [{"op": 1}]} for k in found}}, run_dir

    doc = bisect_runs.run_bisect(subject("KAFKA-15489"), RELEASES, 2, 7, str(tmp_path), echo=lambda m: None, run=run)
    assert doc["changed_at"] == "3.7.0" and doc["before"] == "3.6.2" and doc["from"] == "invalid"
    assert all(seed in (7, 8) for _, seed in seen) and len(seen) == 2 * len(doc["tested"])
    assert doc["results"]["3.5.2"]["detected"] == 2 and doc["results"]["3.8.1"]["verdict"] == "valid"
    table = bisect_runs.format_table(doc)
    assert "the verdict changes at 3.7.0: invalid up to 3.6.2, valid from 3.7.0" in table
    assert "<- changed here" in table and "not run" in table
    assert bisect_runs.exit_code(doc) == 0
    # scored on the whole verdict, every 3.x release is invalid: no change in the range
    doc = bisect_runs.run_bisect(subject("kafka-fence"), RELEASES, 1, 7, str(tmp_path), echo=lambda m: None, run=run)
    assert doc["changed_at"] is None and bisect_runs.exit_code(doc) == 1


def test_cli_bad_input_exits_3_and_a_run_writes_bisect_json(tmp_path, monkeypatch, capsys):
    assert cli.main(["bisect", "KAFKA-15489", "--from", "3.8.1", "--to", "3.5.2"]) == 3
    assert "give the older release first" in capsys.readouterr().err
    assert cli.main(["bisect", "KAFKA-17030", "--from", "3.8.1", "--to", "4.0.0"]) == 3
    assert "cannot run the membership nemesis" in capsys.readouterr().err
    assert cli.main(["bisect", "KAFKA-15489", "--from", "3.6.2", "--to", "3.6.2"]) == 3
    assert "at least two releases" in capsys.readouterr().err
    assert cli.main(["bisect", "KAFKA-15489", "--from", "3.2.0", "--to", "3.6.2"]) == 3

    def fake(subj, releases, runs, seed, root, mode, subnet, lock, echo, on_release):
        assert (releases, runs, mode, lock) == (patches_between("3.6.1", "3.7.1"), 1, "step", "/tmp/l")
        doc = {"subject": subj.name, "describe": subj.describe(), "releases": releases, "results": {},
               "changed_at": "3.7.0", "before": "3.6.2", "from": "invalid", "to": "valid", "reason": "r",
               "verdicts": {}}
        on_release(doc)
        return doc
    monkeypatch.setattr(bisect_cli, "run_bisect", fake)
    assert cli.main(["bisect", "KAFKA-15489", "--from", "3.6.1", "--to", "3.7.1", "--runs", "1", "--mode", "step",
                     "--lock", "/tmp/l", "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "bisect.json").read_text())
    assert doc["changed_at"] == "3.7.0" and doc["exit_code"] == 0
    assert "the verdict changes at 3.7.0" in capsys.readouterr().out


def test_patches_between_takes_every_patch_that_resolves():
    assert patches_between("3.6.2", "3.7.2") == ["3.6.2", "3.7.0", "3.7.1", "3.7.2"]
    assert patches_between("3.9.1", "4.0.2") == ["3.9.1", "3.9.2", "4.0.0", "4.0.2"]
