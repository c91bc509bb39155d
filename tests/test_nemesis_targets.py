import random

import pytest

from nemesis.targets import choose_targets, minority_size

NODES = ["n1", "n2", "n3", "n4", "n5"]


def test_minority_size():
    assert [minority_size(n) for n in (1, 2, 3, 4, 5, 7)] == [1, 1, 1, 1, 2, 3]


def test_one():
    picks = {tuple(choose_targets("one", NODES, random.Random(s), None).targets) for s in range(30)}
    assert all(len(p) == 1 and p[0] in NODES for p in picks)
    assert len(picks) > 1


def test_minority_in_cluster_order_and_sized():
    for s in range(30):
        t = choose_targets("minority", NODES, random.Random(s), "n1").targets
        assert len(t) == 2 and len(set(t)) == 2
        assert t == sorted(t, key=NODES.index)


def test_leader_known():
    c = choose_targets("leader", NODES, random.Random(0), "n4")
    assert c.targets == ["n4"] and not c.leader_unknown


@pytest.mark.parametrize("leader", [None, "n9"])
def test_leader_unknown_falls_back(leader):
    c = choose_targets("leader", NODES, random.Random(0), leader)
    assert c.leader_unknown and len(c.targets) == 1 and c.targets[0] in NODES


def test_bad_mode():
    with pytest.raises(ValueError, match="unknown target mode 'most'"):
        choose_targets("most", NODES, random.Random(0), None)


def test_seeded():
    a = [choose_targets("minority", NODES, random.Random(7), None).targets for _ in range(3)]
    assert a[0] == a[1] == a[2]
