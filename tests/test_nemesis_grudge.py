import random

import pytest

from nemesis import grudge as g

NODES5 = ["n1", "n2", "n3", "n4", "n5"]


def symmetric(gr):
    return all((b in gr[a]) == (a in gr[b]) for a in gr for b in gr)


def test_complete_grudge_components_only_see_themselves():
    gr = g.complete_grudge([["n1", "n2"], ["n3"], ["n4", "n5"]])
    assert gr == {"n1": {"n3", "n4", "n5"}, "n2": {"n3", "n4", "n5"}, "n3": {"n1", "n2", "n4", "n5"},
                  "n4": {"n1", "n2", "n3"}, "n5": {"n1", "n2", "n3"}}
    assert symmetric(gr)


def test_complete_grudge_rejects_overlap():
    with pytest.raises(ValueError, match="overlap"):
        g.complete_grudge([["n1", "n2"], ["n2", "n3"]])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7])
def test_random_halves(n):
    nodes = NODES5[:n] if n <= 5 else [f"n{i}" for i in range(1, n + 1)]
    for seed in range(20):
        gr = g.random_halves(nodes, random.Random(seed))
        assert set(gr) == set(nodes)
        views = {frozenset(g.sees(gr, x)) for x in nodes}
        assert len(views) == 2
        small, big = sorted(views, key=len)
        assert len(small) == n // 2 and len(big) == n - n // 2
        assert small | big == set(nodes) and not small & big
        assert symmetric(gr)


def test_random_halves_depends_on_seed_only():
    a = [g.random_halves(NODES5, random.Random(s)) for s in range(10)]
    b = [g.random_halves(NODES5, random.Random(s)) for s in range(10)]
    assert a == b
    assert len({frozenset(frozenset(v) for v in x.values()) for x in a}) > 1


def test_isolate():
    gr = g.isolate(NODES5, "n3")
    assert gr["n3"] == {"n1", "n2", "n4", "n5"}
    for x in ["n1", "n2", "n4", "n5"]:
        assert gr[x] == {"n3"}
    with pytest.raises(ValueError, match="'n9' is not one of"):
        g.isolate(NODES5, "n9")


def test_isolate_one_isolates_exactly_one_node():
    seen = set()
    for seed in range(30):
        gr = g.isolate_one(NODES5, random.Random(seed))
        lonely = [x for x in NODES5 if g.sees(gr, x) == {x}]
        assert len(lonely) == 1
        seen.add(lonely[0])
        assert symmetric(gr)
    assert len(seen) > 1


def test_majorities_ring_five_nodes():
    for seed in range(30):
        gr = g.majorities_ring(NODES5, random.Random(seed))
        views = [frozenset(g.sees(gr, x)) for x in NODES5]
        for x, view in zip(NODES5, views):
            assert x in view
            assert len(view) == 3
        assert len(set(views)) == 5, "no two nodes see the same majority"
        assert symmetric(gr)


def test_majorities_ring_needs_three_nodes():
    with pytest.raises(ValueError, match="at least 3"):
        g.majorities_ring(["n1", "n2"], random.Random(1))


@pytest.mark.parametrize("n", [3, 4, 5])
def test_bridge(n):
    nodes = NODES5[:n]
    for seed in range(20):
        gr = g.bridge(nodes, random.Random(seed))
        bridges = [x for x in nodes if not gr[x]]
        assert len(bridges) == 1
        b = bridges[0]
        assert g.sees(gr, b) == set(nodes)
        assert all(b not in gr[x] for x in nodes)
        others = [x for x in nodes if x != b]
        halves = {frozenset(g.sees(gr, x) - {b}) for x in others}
        assert len(halves) == 2
        h1, h2 = halves
        assert not h1 & h2 and h1 | h2 == set(others)
        for x in others:
            mine = next(h for h in halves if x in h)
            assert gr[x] == set(others) - mine
        assert symmetric(gr)


def test_bridge_five_each_side_sees_a_majority_through_the_bridge():
    gr = g.bridge(NODES5, random.Random(3))
    for x in NODES5:
        assert len(g.sees(gr, x)) >= 3


def test_duplicates_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        g.random_halves(["n1", "n1", "n2"], random.Random(0))


def test_grudge_to_json_is_sorted_lists():
    assert g.grudge_to_json({"n2": {"n3", "n1"}, "n1": set()}) == {"n1": [], "n2": ["n1", "n3"]}


def test_one_way_drops_only_what_the_sender_sends():
    gr = g.one_way(NODES5, "n2")
    assert gr == {"n1": {"n2"}, "n2": set(), "n3": {"n2"}, "n4": {"n2"}, "n5": {"n2"}}
    assert not symmetric(gr)
    assert g.sees(gr, "n2") == set(NODES5)          # n2 still hears everyone


def test_one_way_to_chosen_receivers():
    gr = g.one_way(NODES5, "n1", ["n3", "n1"])
    assert gr == {"n1": set(), "n2": set(), "n3": {"n1"}, "n4": set(), "n5": set()}
    with pytest.raises(ValueError, match=r"\['n9'\] not in"):
        g.one_way(NODES5, "n9")
    with pytest.raises(ValueError, match="at least 2"):
        g.one_way(["n1"], "n1")


def test_diamond_cuts_only_the_pair():
    gr = g.diamond(NODES5, "n4", "n1")
    assert gr == {"n1": {"n4"}, "n2": set(), "n3": set(), "n4": {"n1"}, "n5": set()}
    assert symmetric(gr)
    assert all(len(g.sees(gr, x)) >= 3 for x in NODES5)   # each still sees a majority
    for a, b in [("n1", "n1"), ("n1", "n9")]:
        with pytest.raises(ValueError, match="two different nodes"):
            g.diamond(NODES5, a, b)
    with pytest.raises(ValueError, match="at least 3"):
        g.diamond(["n1", "n2"], "n1", "n2")
