"""Tests for checkers/node_data.py against real segment files (kraft/core/records.py encoding)."""
import pytest

from checkers.node_data import NodeData, load_node_data
from kraft.core.records import Record, encode
from kraft.storage.segments import segment_name


def _write_node(nodes_dir, name, records, hw=None, torn=b""):
    log_dir = nodes_dir / name / "data" / "log"
    log_dir.mkdir(parents=True)
    (log_dir / segment_name(0)).write_bytes(b"".join(encode(r) for r in records) + torn)
    if hw is not None:
        (nodes_dir / name / "data" / "high-watermark").write_text(f"{hw}\n")


def test_loads_records_and_checkpoint_per_node(tmp_path):
    recs = [Record(0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1, 2], "GrantingVoters": [1]}),
            Record(1, 1, "data", 10), Record(2, 1, "data", 11)]
    _write_node(tmp_path, "n1", recs, hw=2)
    _write_node(tmp_path, "n2", recs[:2], torn=encode(recs[2])[:7])   # torn tail is cut
    (tmp_path / "n3").mkdir()                                          # copy failed: no data/
    nodes = load_node_data(tmp_path)
    assert set(nodes) == {"n1", "n2"}
    assert nodes["n1"] == NodeData("n1", [(0, 1, "LeaderChange", recs[0].payload),
                                          (1, 1, "data", 10), (2, 1, "data", 11)], 2)
    assert nodes["n2"].records == [(0, 1, "LeaderChange", recs[0].payload), (1, 1, "data", 10)]
    assert nodes["n2"].high_watermark is None


def test_missing_nodes_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope: node data directory not found"):
        load_node_data(tmp_path / "nope")
