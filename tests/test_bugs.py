"""kraft-chaos bugs (harness/bugs/, harness/cli/bugs.py) with a stand-in for real runs: the table, bugs.json, the
chart, the correct-build runs and the exit code."""
from __future__ import annotations

import json
from pathlib import Path

from harness.bugs import report, runs as bug_runs
from harness.cli import bugs as bugs_cli
from harness.cli import main as cli
from history import store
from harness.catalogue.bugs import CATALOGUE, bug_named
from harness.config import values
from harness.config.schedules import SCHEDULES


def fake_run(tmp_path, caught: dict[str, set[int]]):
    """A run_test stand-in: a stored run whose history has one op at 2.5 s; invalid
    (lost-write, naming that op) for the seeds in ``caught[switches]``."""
    def run(resolved, progress=False):
        cfg = resolved.flat
        run_dir = store.create_run_dir(tmp_path, "fake", f"s{len(list(tmp_path.rglob('history.jsonl')))}")
        (run_dir / "history.jsonl").write_text(
            '{"index":0,"time":1000000000,"type":"invoke","process":0,"f":"append","value":1}\n'
            '{"index":1,"time":3500000000,"type":"ok","process":0,"f":"append",'
            '"value":{"value":1,"offset":0,"epoch":1}}\n')
        bad = cfg.seed in caught.get(",".join(cfg.unsafe), set())
        results = {"valid": not bad, "anomalies": {"lost-write": int(bad)},
                   "checkers": {"lost-write": {"anomalies": [{"op": 1}] if bad else []}}}
        assert cfg.time_limit <= 120 - bug_runs.OVERHEAD_S
        return results, run_dir
    return run


def test_rates_median_time_to_detect_and_false_alarms(tmp_path):
    picked = [bug_named("no-fsync"), bug_named("lease-read")]
    run = fake_run(tmp_path, {"no-fsync": {1, 2, 3}, "lease-read": {2}, "": {3}})
    lines = []
    doc = bug_runs.run_bugs(picked, runs=3, correct_runs=3, seed=1, root=str(tmp_path), budget_s=120,
                        echo=lines.append, run=run)
    fsync, lease = doc["bugs"]
    assert (fsync["detected"], fsync["runs"], fsync["median_detect_s"]) == (3, 3, 2.5)
    assert fsync["kinds"] == {"lost-write": 3} and fsync["jira"] == "KAFKA-10533"
    assert (lease["detected"], lease["median_detect_s"]) == (1, 2.5)
    # the correct build under each schedule used: crash, isolate
    assert [c["schedule"] for c in doc["correct"]] == ["crash", "isolate"]
    assert [c["false_alarms"] for c in doc["correct"]] == [1, 1]   # seed 3 "fails" in the fake
    table = report.format_table(doc)
    assert "no-fsync" in table and "3/3" in table and "1/3" in table and "false alarms 1/3" in table
    assert len(lines) == 3 + 3 + 2 * 3
    report.write_chart(doc, tmp_path / "bugs.png")
    assert (tmp_path / "bugs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_schedule_for_every_bug_and_a_failed_run_is_an_error_not_a_verdict(tmp_path):
    def broken(cfg, progress=False):
        raise RuntimeError("no engine")
    doc = bug_runs.run_bugs([bug_named("lease-read")], runs=2, correct_runs=0, seed=5, root=str(tmp_path),
                        budget_s=60, run=broken, schedule="lag", echo=lambda s: None)
    (b,) = doc["bugs"]
    assert b["schedule"] == "lag" and b["detected"] == 0 and b["errors"] == 2
    assert all(o["error"] == "RuntimeError: no engine" for o in b["outcomes"])


def test_cli_bad_bug_name_exits_3(capsys):
    assert cli.main(["bugs", "--only", "no-such-bug"]) == 3
    assert "unknown bug 'no-such-bug'" in capsys.readouterr().err


def test_cli_writes_bugs_json_and_exit_code(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bugs_cli, "run_bugs", lambda *a, **k: {
        "runs_per_bug": 1, "bugs": [{"name": "x", "class": "reads", "jira": None, "runs": 1, "detected": 1,
                                     "median_detect_s": 1.0, "max_wall_s": 50.0, "kinds": {"a": 1}}],
        "correct": [{"schedule": "default", "schedule_text": "", "runs": 1, "false_alarms": 0,
                     "errors": 0}]})
    assert cli.main(["bugs", "--runs", "1", "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "bugs.json").read_text())
    assert doc["bugs"][0]["name"] == "x" and (tmp_path / "o" / "bugs.png").is_file()
    assert "bugs.json and bugs.png in" in capsys.readouterr().out


def test_every_schedule_fits_the_budget():
    for s in SCHEDULES.values():
        assert s.time_limit + bug_runs.OVERHEAD_S <= bug_runs.DEFAULT_BUDGET_S
    assert all(b.schedule in SCHEDULES for b in CATALOGUE)


def test_a_scenario_schedule_runs_the_scenarios_run_table_and_steps():
    """``isr-shrink`` is a built-in scenario (isr-shrink-loss-b), not a nemesis mix."""
    from harness.config.run import RunConfig
    fields = SCHEDULES["isr-shrink"].run_config()
    assert fields["nemesis"] == [] and fields["scenario"] and fields["scenario_file"].endswith("isr-shrink-loss-b.toml")
    assert (fields["workload"], fields["brokers"], fields["min_insync_replicas"]) == ("queue", 3, 2)
    cfg = RunConfig(seed=1, unsafe=["hw-below-min-isr"], **fields)      # a config the runner takes
    assert cfg.scenario == fields["scenario"] and cfg.unclean_leader_election is True


def test_cli_lock_is_the_default_file_unless_another_or_none_is_given(tmp_path, monkeypatch, capsys):
    seen = []
    doc = {"runs_per_bug": 1, "bugs": [], "correct": []}
    monkeypatch.setattr(bugs_cli, "run_bugs", lambda *a, **k: seen.append(k["lock"]) or doc)
    out = ["--runs", "1", "--out", str(tmp_path / "o")]
    assert cli.main(["bugs", *out]) == 0
    assert seen[-1] == values.DEFAULT_LOCK and Path(values.DEFAULT_LOCK).is_file()      # created if missing
    assert cli.main(["bugs", *out, "--lock", str(tmp_path / "new" / "l.lock")]) == 0
    assert seen[-1] == str(tmp_path / "new" / "l.lock") and (tmp_path / "new" / "l.lock").is_file()
    assert cli.main(["bugs", *out, "--lock", "none"]) == 0 and seen[-1] is None
    assert cli.main(["bugs", *out, "--lock", "/proc/self/no-such/l.lock"]) == 3
    assert "cannot create or open the lock file '/proc/self/no-such/l.lock'" in capsys.readouterr().err
    assert len(seen) == 3
