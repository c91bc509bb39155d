"""Tests for the node data of stored runs (history/node_data.py) and the targets' readers
(targets/kraft_node_data.py on real segment files in kraft/core/records.py's encoding,
targets/kafka/node_data.py on a stored Kafka run), and how ``check`` picks a run's reader."""
import json
import shutil
from pathlib import Path

import pytest

from harness.run.check import check_run_dir, run_target
from history.node_data import NodeData, holds_node_data, read_nodes
from kraft.core.records import Record, encode
from kraft.storage.segments import segment_name
from targets.kafka.node_data import KAFKA_NODE_DATA
from targets.kraft_node_data import KRAFT_NODE_DATA
from targets.registry import TARGETS

KAFKA_RUN = Path(__file__).parent / "data" / "kafka" / "run"


def _write_node(nodes_dir, name, records, hw=None, torn=b""):
    log_dir = nodes_dir / name / "data" / "log"
    log_dir.mkdir(parents=True)
    (log_dir / segment_name(0)).write_bytes(b"".join(encode(r) for r in records) + torn)
    if hw is not None:
        (nodes_dir / name / "data" / "high-watermark").write_text(f"{hw}\n")


RECS = [Record(0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1, 2], "GrantingVoters": [1]}),
        Record(1, 1, "data", 10), Record(2, 1, "data", 11)]


def test_kraft_reader_loads_records_and_checkpoint_per_node(tmp_path):
    _write_node(tmp_path, "n1", RECS, hw=2)
    _write_node(tmp_path, "n2", RECS[:2], torn=encode(RECS[2])[:7])   # torn tail is cut
    (tmp_path / "n3").mkdir()                                          # copy failed: no data/
    (tmp_path / "stray.txt").write_text("not a node")
    nodes = read_nodes(tmp_path, KRAFT_NODE_DATA)
    assert list(nodes) == ["n1", "n2"]
    assert nodes["n1"] == NodeData("n1", [(0, 1, "LeaderChange", RECS[0].payload),
                                          (1, 1, "data", 10), (2, 1, "data", 11)], 2)
    assert nodes["n2"].records == [(0, 1, "LeaderChange", RECS[0].payload), (1, 1, "data", 10)]
    assert nodes["n2"].high_watermark is None
    assert holds_node_data(tmp_path, KRAFT_NODE_DATA)
    assert not holds_node_data(tmp_path, KAFKA_NODE_DATA) and read_nodes(tmp_path, KAFKA_NODE_DATA) == {}


def test_kafka_reader_reads_each_controllers_metadata_log():
    nodes = read_nodes(KAFKA_RUN / "nodes", KAFKA_NODE_DATA)
    assert list(nodes) == ["n1", "n2", "n3"]
    for name, data in nodes.items():
        assert data.name == name and data.high_watermark is None     # Kafka keeps it in memory
        offsets = [r[0] for r in data.records]
        assert offsets == list(range(len(offsets))) and len(offsets) >= 108
        assert data.records[0][2] == "LeaderChange" and isinstance(data.records[0][3]["LeaderId"], int)
    assert holds_node_data(KAFKA_RUN / "nodes", KAFKA_NODE_DATA)
    assert not holds_node_data(KAFKA_RUN / "nodes", KRAFT_NODE_DATA)


def test_missing_nodes_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope: node data directory not found"):
        read_nodes(tmp_path / "nope", KRAFT_NODE_DATA)
    assert not holds_node_data(tmp_path / "nope", KRAFT_NODE_DATA)


def test_every_target_names_its_reader_and_check_uses_the_runs():
    assert TARGETS["kraft"].node_data is KRAFT_NODE_DATA
    assert TARGETS["kafka"].node_data is KAFKA_NODE_DATA
    for name, spec in TARGETS.items():
        t = run_target({"db": name})
        assert (t.node_data, t.default_kraft_version) == (spec.node_data, spec.default_kraft_version)
    assert run_target({}).node_data is TARGETS["kraft"].node_data       # no db: the default target
    with pytest.raises(ValueError, match="test.json names unknown --db 'nosuch'"):
        run_target({"db": "nosuch"})


def _kafka_run_copy(tmp_path, db):
    run = tmp_path / "run"
    shutil.copytree(KAFKA_RUN, run)
    test = json.loads((run / "test.json").read_text())
    test["config"]["db"] = db
    (run / "test.json").write_text(json.dumps(test))
    return run


def test_check_reads_node_data_by_the_runs_target(tmp_path):
    """The stored Kafka run's divergence is judged from its controllers' logs under its own
    target; a test.json naming another target gets that target's reader (which finds no
    node data here), and one naming an unknown target is refused."""
    own = check_run_dir(_kafka_run_copy(tmp_path / "a", "kafka"))["checkers"]["divergence"]
    assert own["valid"] is True and len(own["high_watermarks"]) == 3
    other = check_run_dir(_kafka_run_copy(tmp_path / "b", "kraft"))["checkers"]["divergence"]
    assert other["valid"] == "unknown"
    with pytest.raises(ValueError, match="unknown --db 'nosuch'"):
        check_run_dir(_kafka_run_copy(tmp_path / "c", "nosuch"))
