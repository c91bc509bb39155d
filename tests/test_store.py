"""Store layout, test.json, the latest symlink, run-dir resolution; config repeat commands."""
from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from history import store
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.run.runner import cluster_id_for, prepare_run


def test_create_run_dir_layout_and_collision(tmp_path):
    a = store.create_run_dir(tmp_path, "append-kill", "20250101T000000.000Z")
    b = store.create_run_dir(tmp_path, "append-kill", "20250101T000000.000Z")
    assert a == tmp_path / "append-kill" / "20250101T000000.000Z"
    assert b.name == "20250101T000000.000Z-1"
    assert (a / "nodes").is_dir() and (b / "nodes").is_dir()


@pytest.mark.parametrize("bad", ["", "a/b", "latest", ".."])
def test_bad_test_name(tmp_path, bad):
    with pytest.raises(store.StoreError, match="bad test name"):
        store.create_run_dir(tmp_path, bad)


def test_timestamp_format():
    t = dt.datetime(2025, 3, 4, 5, 6, 7, 891000, tzinfo=dt.timezone.utc)
    assert store.timestamp(t) == "20250304T050607.891Z"


def test_latest_symlink_is_relative_and_replaced(tmp_path):
    a = store.create_run_dir(tmp_path, "t", "1")
    b = store.create_run_dir(tmp_path, "u", "2")
    link = store.update_latest(tmp_path, a)
    assert os.readlink(link) == os.path.join("t", "1")
    assert link.resolve() == a.resolve()
    store.update_latest(tmp_path, b)
    assert (tmp_path / "latest").resolve() == b.resolve()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_prepare_run_writes_test_json_and_latest(tmp_path):
    cfg = resolve(RunConfig(seed=42, nodes=3, nemesis=["kill", "partition"], store=str(tmp_path), time_limit=20))
    stored, run = prepare_run(cfg)
    assert stored == cfg               # only a scenario run is stored otherwise
    assert run.parent == tmp_path / "append-kill+partition"
    data = json.loads((run / "test.json").read_text())
    assert data["seed"] == 42
    assert data["config"]["nodes"] == 3 and data["config"]["nemesis"] == ["kill", "partition"]
    assert "--seed 42" in data["command"] and "--nemesis kill,partition" in data["command"]
    assert (tmp_path / "latest").resolve() == run.resolve()


def test_repeat_command_round_trips_through_the_cli_parser():
    from harness.cli.main import build_parser
    import shlex
    cfg = RunConfig(seed=9, nodes=3, time_limit=12.5, nemesis=[], rate=50, unsafe=["no-fsync"],
                    subnet="10.99.0.0/24", keep_cluster=True, store="/tmp/s", fetch_max_records=100)
    argv = shlex.split(cfg.repeat_command())
    assert argv[:2] == ["kraft-chaos", "run"]
    args = build_parser().parse_args(argv[1:])
    assert (args.seed, args.nodes, args.time_limit, args.nemesis, args.rate, args.unsafe,
            args.subnet, args.keep_cluster, args.store, args.fetch_max_records) == \
        (9, 3, 12.5, [], 50.0, ["no-fsync"], "10.99.0.0/24", True, "/tmp/s", 100)


def test_resolve_run_dir(tmp_path):
    run = store.create_run_dir(tmp_path, "t", "1")
    with pytest.raises(store.StoreError, match="not a run directory"):
        store.resolve_run_dir(run)
    (run / "history.jsonl").write_text("")
    store.update_latest(tmp_path, run)
    assert store.resolve_run_dir(run) == run.resolve()
    assert store.resolve_run_dir(tmp_path) == run.resolve()          # via latest
    with pytest.raises(store.StoreError, match="no such directory"):
        store.resolve_run_dir(tmp_path / "nope")


def test_cluster_id_is_seeded_and_kraft_shaped():
    a, b = cluster_id_for(1), cluster_id_for(2)
    assert a == cluster_id_for(1) and a != b
    assert len(a) == 22 and all(c.isalnum() or c in "-_" for c in a)
    # a leading "-" would read as an option on a command line (Kafka never makes one)
    assert not any(cluster_id_for(s).startswith("-") for s in range(3000))
