"""The kraft-chaos CLI: argument errors (exit 3) and ``check`` on hand-made stores."""
from __future__ import annotations

import json

import pytest

from harness import exits
from harness.cli import main as cli
from history import store
from history import HistoryWriter

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("argv, needle", [
    (["run", "--nemesis", "partition,flood"], "unknown nemesis 'flood': choose from partition, kill, pause, stop, crash, packet, flap, rolling, wipe, power-loss, membership, lag, catchup, elect, batch"),
    (["run", "--workload", "bank"], "unknown workload 'bank': choose from append, kv"),
    (["run", "--rate", "fast"], "--rate must be a number, got 'fast'"),
    (["run", "--rate", "-5"], "--rate must be > 0"),
    (["run", "--nodes", "0"], "--nodes must be >= 1, got 0"),
    (["run", "--concurrency", "2.5"], "--concurrency must be an integer, got '2.5'"),
    (["run", "--time-limit", "nan"], "--time-limit must be > 0"),
    (["run", "--seed", "x"], "seed must be an integer, got 'x'"),
    (["run", "--subnet", "10.77.0.1/24"], "bad --subnet '10.77.0.1/24'"),
    (["run", "--unsafe", "no-fsync,yolo"], "unknown unsafe switch yolo: choose from"),
    (["run", "--cluster", "lxc"], "invalid choice: 'lxc'"),
    (["run", "--cluster", "ssh"], "--cluster ssh needs --hosts FILE"),
    (["run", "--db", "mysql"], "unknown --db 'mysql': choose from kraft, kafka"),
    (["run", "--db", "kafka", "--kafka-version", "4.3"], "Kafka version '4.3' is not of the form MAJOR.MINOR.PATCH"),
    (["run", "--db", "kafka", "--kraft-version", "2"], "invalid choice: 2"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: command"),
])
def test_bad_arguments_exit_3_with_clear_message(argv, needle, capsys):
    assert cli.main(argv) == 3
    err = capsys.readouterr().err
    assert needle in err


def test_run_defaults_parse():
    """The defaults are the catalogue's default schedule, and RunConfig's too."""
    from harness.config.schedules import DEFAULT_SCHEDULE as D
    from harness.config.run import RunConfig
    from targets.registry import target_spec
    args = cli.build_parser().parse_args(["run"])
    assert args.workload is None and args.db == "kraft"     # None: the target's default workload
    assert target_spec("kafka").default_workload == "metadata"
    got = (args.nodes, args.time_limit, args.nemesis, target_spec(args.db).default_workload,
           args.concurrency, args.rate, args.nemesis_mode, args.nemesis_interval, args.nemesis_duration)
    want = (D.nodes, D.time_limit, list(D.nemesis), D.workload, D.concurrency, D.rate, D.mode,
            D.interval, D.duration)
    assert got == want
    cfg = RunConfig(seed=1)
    assert (cfg.nodes, cfg.time_limit, cfg.nemesis, cfg.workload, cfg.concurrency, cfg.rate,
            cfg.nemesis_mode, cfg.nemesis_interval, cfg.nemesis_duration) == want
    assert (args.seed, args.store) == (None, "store")
    assert D.mode == "windows" and len(D.nemesis) >= 3      # calm, then overlapping faults (issue 32)
    assert cli.build_parser().parse_args(["run", "--nemesis", "none"]).nemesis == []


def write_node_log(data_dir, records):
    """A kraft data dir holding ``records`` in one segment (kraft.core.records encoding)."""
    from kraft.core import records as rec
    from kraft.storage.segments import segment_name
    (data_dir / "log").mkdir(parents=True)
    (data_dir / "log" / segment_name(0)).write_bytes(
        b"".join(rec.encode(rec.Record.from_wire(r)) for r in records))


def write_store(root, lose: int | None = None, truncate: bool = False):
    """A hand-made run: 5 acked appends, monitor samples, final reads.

    ``lose``: leave that offset's value out of the final linearizable read
    (a lost write). ``truncate``: cut the last history line in half.
    """
    run = store.create_run_dir(root, "append-none", "20250101T000000.000Z")
    h = HistoryWriter(run / "history.jsonl")
    lc = [0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1, 2, 3], "GrantingVoters": [1, 2]}]
    records = [lc]
    dq = h.invoke(100, "describe-quorum", None, node="n1")
    h.complete(dq, "ok", {"LeaderId": 1, "LeaderEpoch": 1, "HighWatermark": 1,
                          "CurrentVoters": [], "Observers": []})
    for v in range(5):
        inv = h.invoke(0, "append", v, node="n1")
        h.complete(inv, "ok", {"value": v, "offset": v + 1, "epoch": 1})
        records.append([v + 1, 1, "data", v])
    final = [r for r in records if r[0] != lose] if lose is not None else records
    val = {"from": 0, "linearizable": True, "final": True}
    inv = h.invoke(1, "read", val, node="n1")
    h.complete(inv, "ok", {**val, "high_watermark": 6, "records": final})
    for i, n in enumerate(["n1", "n2", "n3"]):
        val = {"from": 0, "linearizable": False, "final": True}
        inv = h.invoke(2 + i, "read", val, node=n)
        h.complete(inv, "ok", {**val, "high_watermark": 6, "records": records})
    h.close()
    for n in ("n1", "n2", "n3"):   # each node's data dir: the same log segment
        write_node_log(run / "nodes" / n / "data", records)
    store.write_test_json(run, {"nodes": 3}, 5, "kraft-chaos run --seed 5")
    store.update_latest(root, run)
    if truncate:
        lines = (run / "history.jsonl").read_text().splitlines(keepends=True)
        (run / "history.jsonl").write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    return run


def test_check_valid_store(tmp_path, capsys):
    run = write_store(tmp_path)
    assert cli.main(["check", str(run)]) == 0
    out = capsys.readouterr().out
    assert "verdict: VALID" in out and "anomalies: none" in out
    assert "repeat with: kraft-chaos run --seed 5" in out
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True
    assert results["stats"]["counts"]["append"]["ok"] == 5


def test_check_invalid_store_reports_the_lost_write(tmp_path, capsys):
    run = write_store(tmp_path, lose=3)
    assert cli.main(["check", str(tmp_path)]) == 1          # store root: resolves latest
    out = capsys.readouterr().out
    assert "verdict: INVALID" in out
    assert "lost-write: 1" in out
    assert '"value": 2' in out and '"offset": 3' in out       # first details shown
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is False and results["anomalies"]["lost-write"] == 1


def test_check_truncated_history_names_the_line(tmp_path, capsys):
    run = write_store(tmp_path, truncate=True)
    n_lines = len((run / "history.jsonl").read_text().splitlines())
    assert cli.main(["check", str(run)]) == 3
    err = capsys.readouterr().err
    assert f"history.jsonl:{n_lines}:" in err and "truncated or invalid JSON" in err
    assert not (run / "results.json").exists()


def test_check_missing_dir(tmp_path, capsys):
    assert cli.main(["check", str(tmp_path / "nope")]) == 3
    assert "no such directory" in capsys.readouterr().err


def test_verdict_exit_codes():
    assert [exits.verdict_exit(v) for v in (True, False, "unknown")] == [0, 1, 2]


def test_run_maps_cluster_error_to_exit_4(tmp_path, monkeypatch, capsys):
    """A ClusterError from setup ends the run with exit 4 and its message, no traceback."""
    from clusters.errors import ClusterError
    import clusters.engine

    def no_engine(*a, **k):
        raise ClusterError("No Docker engine answers at unix:///nowhere: run `make engine`")

    monkeypatch.setattr(clusters.engine, "connect_engine", no_engine)
    code = cli.main(["run", "--cluster", "docker", "--store", str(tmp_path), "--seed", "3", "--no-progress",
                     "--time-limit", "1"])
    captured = capsys.readouterr()
    assert code == 4
    assert "No Docker engine answers at unix:///nowhere" in captured.err
    assert "Traceback" not in captured.err
    assert "seed: 3" in captured.out and "--seed 3" in captured.out
    # the run dir exists even though setup failed, and its harness.log names the cause
    logs = list(tmp_path.glob("append-*/*/harness.log"))
    assert len(logs) == 1 and "No Docker engine answers" in logs[0].read_text()


def test_progress_line_and_both_modes(caplog):
    """The live line shows elapsed time, op outcomes, leader and fault; plain mode logs it."""
    import asyncio
    import io
    import logging

    from harness.run.progress import Progress, Snapshot

    tally = {"ok": 5, "fail": 1, "info": 2}
    faults = {}
    snap = Snapshot(lambda: tally, lambda: faults, lambda: "n2", time_limit_s=60)
    assert "ops ok=5 fail=1 info=2" in snap.line() and "/60s" in snap.line()
    assert "leader n2" in snap.line() and "fault: none" in snap.line()
    faults["kill"] = ["n1", "n3"]
    assert "fault: kill[n1,n3]" in snap.line()

    async def show(live):
        stream = io.StringIO()
        async with Progress(snap, stream=stream, live=live, plain_every_s=0.05):
            await asyncio.sleep(0.7)
            tally["ok"] = 9
        return stream.getvalue()

    with caplog.at_level(logging.INFO, logger="kraft_chaos.progress"):
        out = asyncio.run(show(live=False))
    assert out == ""
    logged = [r.getMessage() for r in caplog.records if r.name == "kraft_chaos.progress"]
    assert len(logged) >= 3 and "ok=9" in logged[-1]
    out = asyncio.run(show(live=True))
    assert "ok=9" in out and "fault: kill" in out


def test_pytest_plugin_fixture_and_marker(pytester, monkeypatch, tmp_path):
    """The plugin registers the docker marker and kraft_chaos_run builds a RunConfig and runs it resolved."""
    import harness.run.runner

    calls = []

    def fake_run_test(config, run_dir=None, progress=None):
        calls.append((config, progress))
        return {"valid": True}, tmp_path

    monkeypatch.setattr(harness.run.runner, "run_test", fake_run_test)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.docker
        def test_it(kraft_chaos_run):
            results, store_dir = kraft_chaos_run(nodes=3, nemesis=["kill"])
            assert results == {"valid": True}
    """)
    result = pytester.runpytest_inprocess("--strict-markers",
                                          "--kraft-chaos-store", str(tmp_path / "s"))
    result.assert_outcomes(passed=1)
    (config, progress), = calls
    assert (config.flat.nodes, config.nemesis.faults, config.seed, config.store, progress) == \
        (3, ("kill",), 0, str(tmp_path / "s"), False)


def test_a_workload_on_a_target_it_does_not_support_exits_3_naming_both(tmp_path, capsys):
    assert cli.main(["run", "--db", "kafka", "--workload", "kv", "--store", str(tmp_path)]) == 3
    assert "workload 'kv' does not run on --db kafka: it supports kraft" in capsys.readouterr().err
    assert cli.main(["run", "--workload", "metadata", "--store", str(tmp_path)]) == 3
    assert "workload 'metadata' does not run on --db kraft: it supports kafka" in capsys.readouterr().err
