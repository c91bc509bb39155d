"""nemesis.faults: families, kinds, and a fault as the value of its ops."""
import pytest

from faults.registry import families, fault_spec
from nemesis.faults import EXPLICIT, Fault, check_kind, kinds_for


def test_families():
    assert families() == ("partition", "kill", "pause", "stop", "crash", "packet", "flap", "rolling", "wipe", "power-loss",
                          "membership")
    assert fault_spec("crash").kinds == ("majority", "all") and fault_spec("rolling").kinds == ("kill",)


def test_value_round_trip():
    f = Fault("flap", "nodes", slot="f2", targets=("n1", "n3"), params={"period_ms": 50})
    assert f.key == "f2" and Fault("flap", "bridge").key == "flap"
    assert f.to_value() == {"kind": "nodes", "slot": "f2", "targets": ["n1", "n3"], "period_ms": 50}
    assert Fault.from_value("flap", f.to_value()) == f
    assert Fault.from_value("kill", {"kind": "one"}) == Fault("kill", "one")
    assert Fault("kill", "one").to_value() == {"kind": "one"}


@pytest.mark.parametrize("name,value,msg", [
    ("kill", {"kind": "all"}, "unknown kill kind 'all'"),
    ("storm", {"kind": "one"}, "unknown nemesis 'storm'"),
    ("pause", {"kind": "one", "targets": "n1"}, "list of node names"),
    ("pause", {"kind": "one", "targets": [1, 2]}, "list of node names"),
])
def test_from_value_rejects(name, value, msg):
    with pytest.raises(ValueError, match=msg):
        Fault.from_value(name, value)


def test_every_family_takes_explicit_nodes():
    for name in families():
        check_kind(name, EXPLICIT)
    with pytest.raises(ValueError, match="choose from one, minority, leader, txn-coordinator, group-coordinator, "
                                         "partition-leader, nodes"):
        check_kind("kill", "some")


def test_kinds_for_cluster_sizes():
    assert kinds_for("flap", 2) == ["random-halves", "isolate-one", "isolate-leader"]
    assert kinds_for("flap", 1) == [] and kinds_for("partition", 1) == []
    assert "bridge" in kinds_for("flap", 3)
    assert kinds_for("packet", 1) == list(fault_spec("packet").kinds)
    assert kinds_for("rolling", 3) == ["kill"]
    with pytest.raises(ValueError, match="unknown nemesis 'lag'"):
        kinds_for("lag", 5)
    with pytest.raises(ValueError, match="unknown nemesis 'clock'"):     # the simulator's alone
        kinds_for("clock", 5)
