"""``kraft-chaos matrix``: the file, the cells, the outputs and the exit codes, with the run
replaced by a stand-in (no Docker)."""
from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from harness.cli import main as cli
from harness.matrix import cells as matrix
from harness.matrix.cells import exit_code, run_matrix
from harness.matrix.file import MatrixError, load

VALID = {"valid": True, "anomalies": {"lost-write": 0}}
INVALID = {"valid": False, "anomalies": {"lost-write": 2, "phantom": 1, "duplicate": 0}}
UNKNOWN = {"valid": "unknown", "anomalies": {}}


def write(tmp_path, text: str, name: str = "m.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_cells_are_the_product_with_per_target_overrides_and_unsupported_pairs_skipped(tmp_path):
    p = write(tmp_path, """
        name = "nightly"
        targets = ["kraft", "kafka"]
        workloads = ["append", "kv"]
        nemeses = ["partition,kill", "none"]
        seeds = 2
        time_limit = 20
        nodes = 3
        unsafe = ["no-fsync"]

        [target.kafka]
        workloads = ["metadata"]
        seeds = [7]
        time_limit = 45
    """)
    m = load(p, {"store": str(tmp_path / "s"), "subnet": "10.86.0.0/24"})
    assert m.name == "nightly" and m.skipped == []
    ids = [c.id for c in m.cells]
    assert ids == ["kraft/append/partition,kill/seed0", "kraft/append/partition,kill/seed1",
                   "kraft/append/none/seed0", "kraft/append/none/seed1",
                   "kraft/kv/partition,kill/seed0", "kraft/kv/partition,kill/seed1",
                   "kraft/kv/none/seed0", "kraft/kv/none/seed1",
                   "kafka/metadata/partition,kill/seed7", "kafka/metadata/none/seed7"]
    k = m.cells[0].config
    assert (k.db, k.workload, k.nemesis, k.seed, k.time_limit, k.nodes, k.unsafe, k.store, k.subnet) == \
        ("kraft", "append", ["partition", "kill"], 0, 20.0, 3, ["no-fsync"], str(tmp_path / "s"), "10.86.0.0/24")
    assert m.cells[-1].config.time_limit == 45.0 and m.cells[-1].config.nemesis == []
    # a workload one target cannot run is skipped with a note; defaults: kraft, its workload, seed 0
    m = load(write(tmp_path, 'targets = ["kraft", "kafka"]\nworkloads = ["kv"]\nnemeses = ["kill"]\n'))
    assert [c.id for c in m.cells] == ["kraft/kv/kill/seed0"]
    assert m.skipped == [{"db": "kafka", "workload": "kv",
                          "reason": "workload 'kv' does not run on --db kafka: it supports kraft"}]
    from harness.config.run import RunConfig
    (c,) = load(write(tmp_path, "")).cells
    assert (c.db, c.workload, c.nemesis, c.seed) == ("kraft", "append", RunConfig(seed=0).nemesis, 0)


@pytest.mark.parametrize("text, needle", [
    ('targets = ["kraft"]\nnemeses = [\n  "partition",\n  "partiton",\n]\n',
     ":4: 'nemeses': unknown nemesis 'partiton'"),
    ('time_limit = 5\nworkload = "kv"\n', ":2: 'workload': unknown key (did you mean 'workloads'?)"),
    ('colour = "red"\n', ":1: 'colour': unknown key: choose from"),
    ('targets = ["kraft", "etcd"]\n', ":1: 'targets': unknown --db 'etcd'"),
    ('workloads = ["bank"]\n', ":1: 'workloads': unknown workload 'bank'"),
    ('seeds = [1, -2]\n', ":1: 'seeds': a seed must be an integer in 0..2^63-1, got -2"),
    ('nodes = 0\n', ":1: 'nodes': nodes must be >= 1"),
    ('time_limit = "long"\n', ":1: 'time_limit': must be int or float"),
    ('unsafe = ["no-fsync", "nope"]\n', ":1: 'unsafe': unknown unsafe switch nope"),
    ('keep_cluster = true\n', ":1: 'keep_cluster': not in a matrix"),
    ('targets = ["kraft"]\n\n[target.kraft]\nnodez = 3\n', ":4: [target.kraft] 'nodez': unknown key"),
    ('targets = ["kraft"]\n\n[target.kafka]\nnodes = 3\n', ":3: [target.kafka]: 'kafka' is not in targets"),
    ('targets = ["kraft"]\n[target.kraft]\nnemeses = ["none", "flood"]\n',
     ":3: [target.kraft] 'nemeses': unknown nemesis 'flood'"),
    ('workloads = ["metadata"]\n', "no cell to run: workload 'metadata' does not run on --db kraft"),
    ('targets = ["kraft"\n', "not TOML"),
])
def test_a_bad_file_names_line_and_key_and_exits_3(tmp_path, capsys, text, needle):
    p = write(tmp_path, text)
    with pytest.raises(MatrixError, match=None) as e:
        load(p)
    assert needle in str(e.value) and str(p) in str(e.value)
    assert cli.main(["matrix", str(p)]) == 3
    assert needle in capsys.readouterr().err


class StandIn:
    """A run function for run_matrix: results by seed (an exception is raised)."""

    def __init__(self, by_seed: dict):
        self.by_seed, self.configs = by_seed, []

    def __call__(self, config, run_dir):
        self.configs.append(config)
        v = self.by_seed.get(config.seed, VALID)
        if isinstance(v, BaseException):
            raise v
        return v, run_dir


def test_outputs_json_junit_table_and_exit_codes(tmp_path):
    from clusters.errors import ClusterError
    p = write(tmp_path, 'nemeses = ["partition,kill"]\nseeds = [0, 1, 2, 3, 4]\ntargets = ["kraft", "kafka"]\n'
                        'workloads = ["append"]\n')
    m = load(p, {"store": str(tmp_path / "store")})
    out = tmp_path / "out"
    lines = []
    run = StandIn({1: INVALID, 2: UNKNOWN, 3: ClusterError("no engine"), 4: RuntimeError("boom")})
    doc = run_matrix(m, out, run=run, echo=lines.append)
    assert doc["exit_code"] == 1
    assert doc["counts"] == {"valid": 1, "invalid": 1, "unknown": 1, "error": 2, "interrupted": 0, "not-run": 0}
    assert any("skipped: workload 'append' does not run on --db kafka" in x for x in lines)
    stored = json.loads((out / "matrix.json").read_text())
    c = {x["seed"]: x for x in stored["cells"]}
    assert c[1]["verdict"] == "invalid" and c[1]["anomalies"] == {"lost-write": 2, "phantom": 1}
    assert c[1]["valid"] is False and c[1]["config"]["seed"] == 1 and c[1]["wall_s"] >= 0
    assert (tmp_path / "store").resolve() in (tmp_path / c[1]["store"]).resolve().parents
    assert (c[3]["verdict"], c[3]["error"], c[3]["error_kind"]) == ("error", "ClusterError: no engine", "cluster")
    assert c[3]["store"] and (c[4]["verdict"], c[4]["error_kind"]) == ("error", "harness")
    assert c[0]["verdict"] == "valid" and c[0]["error"] is None and c[0]["repeat"].startswith("kraft-chaos run")

    suite = ET.parse(out / "matrix.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("6", "2", "2", "1")
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["partition,kill seed 1"].iter("property")}
    assert props["kraft_chaos.store"] == c[1]["store"] and props["kraft_chaos.verdict"] == "INVALID"
    assert props["kraft_chaos.anomalies"] == "lost-write=2, phantom=1" and props["kraft_chaos.anomaly.phantom"] == "1"
    fail = cases["partition,kill seed 1"].find("failure")
    assert fail.get("message") == f"kraft-chaos run INVALID: lost-write 2, phantom 1 (store: {c[1]['store']})"
    assert "repeat with: kraft-chaos run" in fail.text and "lost-write: 2" in fail.text
    assert cases["partition,kill seed 2"].find("failure").get("type") == "unknown"
    assert "ClusterError: no engine" in cases["partition,kill seed 3"].find("error").get("message")
    assert cases["partition,kill seed 0"].find("failure") is None
    assert "does not run on --db kafka" in cases["unsupported"].find("skipped").get("message")

    from harness.matrix.report import format_table
    table = format_table(stored)
    assert "INVALID" in table and "lost-write 2, phantom 1" in table and "ClusterError: no engine" in table
    assert "1 valid, 1 invalid, 1 unknown, 2 error" in table


@pytest.mark.parametrize("verdicts, kinds, code", [
    (["valid", "valid"], [], 0), (["valid", "invalid", "unknown"], [], 1), (["unknown", "valid"], [], 2),
    (["error", "valid"], ["cluster"], 4), (["error", "error"], ["cluster", "harness"], 5),
    (["unknown", "error"], [None, "harness"], 2)])
def test_exit_codes(verdicts, kinds, code):
    recs = [{"verdict": v, "error_kind": k} for v, k in zip(verdicts, kinds or [None] * len(verdicts))]
    assert exit_code(recs) == code
    assert exit_code(recs, interrupted=True) == 130


def test_ctrl_c_writes_what_ran_and_exits_130(tmp_path, monkeypatch, capsys):
    from harness.run import runner
    p = write(tmp_path, 'nemeses = ["kill"]\nseeds = [0, 1, 2]\n')
    calls = []

    def fake_run_test(config, run_dir=None, progress=None):
        calls.append((config.seed, progress))
        if config.seed == 1:
            raise runner.Interrupted()
        return INVALID if config.seed == 0 else VALID, run_dir

    monkeypatch.setattr(runner, "run_test", fake_run_test)
    out = tmp_path / "out"
    assert cli.main(["matrix", str(p), "--out", str(out), "--store", str(tmp_path / "store")]) == 130
    assert calls == [(0, False), (1, False)]
    doc = json.loads((out / "matrix.json").read_text())
    assert doc["interrupted"] is True and doc["exit_code"] == 130
    assert [c["verdict"] for c in doc["cells"]] == ["invalid", "interrupted", "not-run"]
    suite = ET.parse(out / "matrix.xml").getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "2")
    printed = capsys.readouterr().out
    assert "interrupted" in printed and "INVALID" in printed and "matrix.json and matrix.xml in" in printed


def test_the_command_runs_every_cell_and_exits_0_when_all_are_valid(tmp_path, monkeypatch, capsys):
    from harness.run import runner
    p = write(tmp_path, 'nemeses = ["kill", "none"]\nseeds = [3]\ntime_limit = 12\n')
    seen = []
    monkeypatch.setattr(runner, "run_test", lambda c, d=None, progress=None: (seen.append(c) or VALID, d))
    assert cli.main(["matrix", str(p), "--store", str(tmp_path / "store"), "--subnet", "10.86.0.0/24"]) == 0
    assert [(c.nemesis.faults, c.seed, c.cluster.subnet, c.time_limit) for c in seen] == \
        [(("kill",), 3, "10.86.0.0/24", 12.0), ((), 3, "10.86.0.0/24", 12.0)]
    out = capsys.readouterr().out
    (folder,) = (tmp_path / "store" / "matrix").iterdir()
    assert f"matrix.json and matrix.xml in {folder}" in out and (folder / "matrix.xml").is_file()
    assert cli.main(["matrix", str(p), "--dry-run"]) == 0
    assert "2 cell(s)" in capsys.readouterr().out and len(seen) == 2


def test_the_example_nightly_matrix_loads(tmp_path):
    from pathlib import Path
    root = Path(matrix.__file__).resolve().parents[2]
    m = load(root / "examples" / "nightly.toml")
    assert {c.db for c in m.cells} == {"kraft", "kafka"} and len({c.seed for c in m.cells}) == 2
    assert len({",".join(c.nemesis) for c in m.cells}) >= 2 and len(m.cells) >= 4
    # a nightly job over the newest release of three minor lines
    from targets.kafka.releases import release
    versions = {c.kafka_version for c in m.cells if c.db == "kafka"}
    assert len(versions) == 3 and {release(v).line for v in versions} == {(4, 2), (4, 3), (4, 4)}
    assert all(v == release(v).newest for v in versions)
    assert all(c.config.kafka_version == c.kafka_version for c in m.cells if c.db == "kafka")
    assert all(c.kafka_version is None for c in m.cells if c.db == "kraft")


def _load_text(tmp_path, text):
    p = tmp_path / "m.toml"
    p.write_text(text)
    return load(p)


def test_the_kafka_versions_axis_multiplies_only_the_kafka_cells(tmp_path):
    m = _load_text(tmp_path, 'targets = ["kraft", "kafka"]\nkafka_versions = ["3.9", "4.0.0"]\n'
                             'nemeses = ["kill"]\nseeds = [1, 2]\n')
    kafka = [c for c in m.cells if c.db == "kafka"]
    assert [(c.kafka_version, c.seed) for c in kafka] == [("3.9.2", 1), ("3.9.2", 2), ("4.0.0", 1), ("4.0.0", 2)]
    assert [c.config.kafka_version for c in kafka] == ["3.9.2", "3.9.2", "4.0.0", "4.0.0"]
    assert kafka[0].id == "kafka-3.9.2/metadata/kill/seed1"
    assert "--kafka-version 4.0.0" in kafka[-1].config.repeat_command()
    assert [c.id for c in m.cells if c.db == "kraft"] == ["kraft/append/kill/seed1", "kraft/append/kill/seed2"]


@pytest.mark.parametrize("text, needle", [
    ('targets = ["kafka"]\nkafka_versions = ["3.2"]\n', "not a release line kraft-chaos knows"),
    ('targets = ["kafka"]\nkafka_versions = ["9.9.9"]\n', "'kafka_versions'"),
    ('targets = ["kafka"]\nkafka_versions = []\n', "must be a non-empty list"),
    ('targets = ["kafka"]\nkafka_version = "4.4.0"\nkafka_versions = ["4.3"]\n', "not both"),
    ('targets = ["kraft"]\n[target.kraft]\nkafka_versions = ["4.3"]\n', "runs no Kafka release"),
])
def test_a_bad_kafka_versions_axis_names_its_line(tmp_path, text, needle):
    with pytest.raises(MatrixError) as e:
        _load_text(tmp_path, text)
    assert needle in str(e.value) and "m.toml:" in str(e.value)


def test_the_axis_release_is_in_the_table_and_junit(tmp_path):
    from harness.matrix.report import format_table, write_junit
    m = _load_text(tmp_path, 'targets = ["kafka"]\nkafka_versions = ["4.3"]\nnemeses = ["kill"]\n')
    rec = matrix._record(m.cells[0])
    rec.update(verdict="valid", wall_s=1.0)
    doc = {"name": "x", "cells": [rec], "counts": {"valid": 1}, "wall_s": 1.0}
    assert "kafka-4.3.1" in format_table(doc)
    write_junit(doc, tmp_path / "m.xml")
    xml = (tmp_path / "m.xml").read_text()
    assert 'classname="kraft-chaos.matrix.kafka-4_3_1.metadata"' in xml and 'value="4.3.1"' in xml


# -- the txn workload's client axes ----------------------------------------------------------

def test_the_client_axes_multiply_only_the_txn_cells(tmp_path):
    m = _load_text(tmp_path, 'targets = ["kraft", "kafka"]\nkafka_versions = ["4.4"]\n'
                             'clients = ["librdkafka", "java"]\ntransaction_versions = [0, 2]\n'
                             'nemeses = ["kill"]\n[target.kafka]\nworkloads = ["txn", "metadata"]\n')
    txn = [c for c in m.cells if c.workload == "txn"]
    assert [(c.client, c.transaction_version) for c in txn] == [
        ("librdkafka", 0), ("librdkafka", 2), ("java", 0), ("java", 2)]
    assert [(c.config.client, c.config.transaction_version) for c in txn] == [
        ("librdkafka", 0), ("librdkafka", 2), ("java", 0), ("java", 2)]
    assert txn[-1].id == "kafka-4.4.0/txn+java+tv2/kill/seed0"
    assert "--client java" in txn[-1].config.repeat_command() and "--transaction-version 2" in \
        txn[-1].config.repeat_command()
    others = [c for c in m.cells if c.workload != "txn"]          # metadata on kafka, append on kraft
    assert [c.id for c in others] == ["kraft/append/kill/seed0", "kafka-4.4.0/metadata/kill/seed0"]
    assert all(c.client is None and c.config.client is None and c.config.transaction_version is None
               for c in others)


def test_the_client_axes_are_in_matrix_json_the_table_and_junit(tmp_path):
    from harness.matrix.report import format_table, write_junit
    m = _load_text(tmp_path, 'targets = ["kafka"]\nworkloads = ["txn"]\nclients = ["java"]\n'
                             'transaction_versions = [2]\nnemeses = ["kill"]\n')
    rec = matrix._record(m.cells[0])
    assert (rec["client"], rec["transaction_version"]) == ("java", 2)
    rec.update(verdict="valid", wall_s=1.0)
    doc = {"name": "x", "cells": [rec], "counts": {"valid": 1}, "wall_s": 1.0}
    table = format_table(doc).splitlines()
    assert table[0].split()[:5] == ["target", "workload", "client", "txn", "version"]
    assert table[1].split()[:4] == ["kafka", "txn", "java", "2"]
    write_junit(doc, tmp_path / "m.xml")
    case = ET.parse(tmp_path / "m.xml").getroot().find("testsuite/testcase")
    assert case.get("name") == "kill seed 0 java tv2"
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props["kraft_chaos.client"] == "java" and props["kraft_chaos.transaction_version"] == "2"
    # a matrix without them has no such columns
    plain = _load_text(tmp_path, 'nemeses = ["kill"]\n')
    rec = matrix._record(plain.cells[0])
    rec.update(verdict="valid", wall_s=1.0)
    assert "client" not in format_table({"name": "x", "cells": [rec], "counts": {}, "wall_s": 1.0})


@pytest.mark.parametrize("text, needle", [
    ('targets = ["kafka"]\nworkloads = ["txn"]\nclients = ["java", "kafkajs"]\n',
     ":3: 'clients': unknown client 'kafkajs'; known: java, librdkafka"),
    ('targets = ["kafka"]\nworkloads = ["txn"]\ntransaction_versions = [2, 3]\n',
     ":3: 'transaction_versions': no transaction version 3: choose from 0, 1, 2"),
    ('targets = ["kafka"]\nworkloads = ["txn"]\ntransaction_versions = ["2"]\n',
     "'transaction_versions': a transaction version must be an integer, got '2'"),
    ('targets = ["kafka"]\nworkloads = ["txn"]\nclients = []\n', "'clients': must be a non-empty list"),
    ('targets = ["kafka"]\nworkloads = ["metadata"]\nclients = ["java"]\n',
     ":3: 'clients': no cell takes it: only the txn workload's cells on --db kafka do"),
    ('targets = ["kraft", "kafka"]\nworkloads = ["txn"]\n[target.kraft]\nworkloads = ["append"]\n'
     'transaction_versions = [2]\n', ":5: [target.kraft] 'transaction_versions': no workload of --db kraft"),
    ('targets = ["kafka"]\nworkloads = ["txn"]\nkafka_versions = ["3.9", "4.0"]\ntransaction_versions = [2]\n',
     ":4: 'transaction_versions': cell kafka-3.9.2/txn+tv2/"),
    ('targets = ["kafka"]\nworkloads = ["txn"]\nclient = "java"\n', ":3: 'client': unknown key (did you mean 'clients'?)"),
])
def test_a_bad_client_axis_names_its_line_and_exits_3(tmp_path, capsys, text, needle):
    p = write(tmp_path, text)
    with pytest.raises(MatrixError) as e:
        load(p)
    assert needle in str(e.value) and str(p) in str(e.value)
    assert cli.main(["matrix", str(p), "--dry-run"]) == 3
    assert needle in capsys.readouterr().err
