"""The kv workload's history against an in-process fake cluster (no Docker).

The fake: the leader holds the registers and applies each request at once;
other nodes answer NOT_LEADER_OR_FOLLOWER with a leader hint (or none);
"dead" nodes time out (IndefiniteError). ``kraft.wire.client.KraftClient`` is
monkeypatched, so this also checks the workload builds its clients through it.
"""
from __future__ import annotations

import asyncio

import pytest

from history import HistoryWriter, pair_ops, read_history
from kraft.wire import client as kclient
from workloads.kv import CLIENT_FS, KvOptions, KvWorkload

from .workload_fakes import NODES, drive, install_fake_client, topology

KEYS = {"k0", "k1", "k2", "k3", "k4"}


class FakeKv:
    """A toy quorum: ``leader`` applies writes to ``data`` at once; ``dead`` nodes time out."""

    def __init__(self, leader: str = "n2", hint: bool = True):
        self.leader, self.hint, self.epoch = leader, hint, 3
        self.dead: set[str] = set()
        self.data: dict[str, int | None] = {}
        self.offset = 0
        self.clients: list["FakeClient"] = []

    def check(self, node: str) -> None:
        if node in self.dead:
            raise kclient.IndefiniteError("timeout", f"{node} does not answer")
        if node != self.leader:
            lid = int(self.leader[1:]) if self.hint else None
            raise kclient.DefiniteError("NOT_LEADER_OR_FOLLOWER", "", lid, self.epoch if self.hint else None)

    def commit(self) -> int:
        self.offset += 1
        return self.offset


class FakeClient:
    cluster: FakeKv

    def __init__(self, host: str, port: int, cluster_id: str, timeout_ms: int = 3000):
        assert cluster_id == "cid"
        self.node = host.split(".")[-1]
        self.in_flight = False
        self.closed = False
        self.cluster.clients.append(self)

    async def _enter(self) -> None:
        assert not self.in_flight, "two requests in flight on one client"
        self.in_flight = True
        await asyncio.sleep(0.001)
        self.in_flight = False

    async def get(self, key):
        await self._enter()
        self.cluster.check(self.node)
        return {"value": self.cluster.data.get(key), "applied_offset": self.cluster.offset + 1}

    async def put(self, key, value):
        await self._enter()
        self.cluster.check(self.node)
        self.cluster.data[key] = value
        return {"offset": self.cluster.commit(), "epoch": self.cluster.epoch}

    async def cas(self, key, expected, value):
        await self._enter()
        self.cluster.check(self.node)
        previous = self.cluster.data.get(key)
        if previous == expected:
            self.cluster.data[key] = value
        return {"offset": self.cluster.commit(), "epoch": self.cluster.epoch,
                "succeeded": previous == expected, "previous": previous}

    async def describe_quorum(self):
        await self._enter()
        self.cluster.check(self.node)
        return {"LeaderId": int(self.cluster.leader[1:]), "LeaderEpoch": self.cluster.epoch,
                "HighWatermark": self.cluster.offset, "CurrentVoters": [], "Observers": []}

    async def close(self):
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    return install_fake_client(monkeypatch, FakeClient, FakeKv())


def run_workload(tmp_path, seed=7, duration_s=0.6, during=None, **opts):
    """Run the kv workload for ``duration_s``; ``during()`` runs halfway. Returns (history, workload)."""
    path = tmp_path / f"history-{seed}.jsonl"
    hist = HistoryWriter(path)
    options = KvOptions(**{"concurrency": 3, "rate": 150, "monitor_interval_ms": 100,
                           "timeout_ms": 500, **opts})
    wl = KvWorkload(topology(), "cid", hist, seed, options)
    drive(wl, duration_s, during)
    hist.close()
    return read_history(path), wl


def kv_ops(history, type_=None):
    return [op for op in history if op["f"] in CLIENT_FS
            and (type_ is None or op["type"] == type_)]


def test_history_shapes(tmp_path, fake):
    history, wl = run_workload(tmp_path)
    pairs = [(i, c) for i, c in pair_ops(history) if i["f"] in CLIENT_FS]
    assert len(pairs) > 40 and all(c is not None for _, c in pairs)
    assert {i["f"] for i, _ in pairs} == {"read", "write", "cas"}
    for inv, comp in pairs:
        assert inv["node"] in NODES and comp["node"] == inv["node"]
        k, arg = inv["value"]
        assert k in KEYS
        if inv["f"] == "read":
            assert arg is None
        elif inv["f"] == "write":
            assert arg in range(5)
        else:
            assert len(arg) == 2 and all(x in range(5) for x in arg)
        if comp["type"] == "ok":
            if inv["f"] == "read":
                assert comp["value"][0] == k and (comp["value"][1] is None or comp["value"][1] in range(5))
                assert isinstance(comp["applied_offset"], int)
            else:
                assert comp["value"] == inv["value"]
                assert set(comp) >= {"offset", "epoch"} and comp["epoch"] == 3
        else:
            assert comp["value"] == inv["value"]
            assert comp["error"] in ("NOT_LEADER_OR_FOLLOWER", "cas-mismatch")
            if comp["error"] == "cas-mismatch":
                assert comp["type"] == "fail" and inv["f"] == "cas" and comp["node"] == "n2"
    assert any(c["error"] == "cas-mismatch" for _, c in pairs if c["type"] == "fail")
    assert any(c["value"][1] is not None for i, c in pairs if i["f"] == "read" and c["type"] == "ok")
    assert wl.tally.totals(wl.client_fs)["ok"] == len(kv_ops(history, "ok"))
    dq = [op for op in history if op["f"] == "describe-quorum"]
    assert {op["node"] for op in dq} == set(NODES)
    assert all(c.closed for c in fake.clients)


def test_a_sequential_history_matches_a_register_model_exactly(tmp_path, fake):
    """One worker, no faults: replaying the ok and cas-mismatch ops on plain
    registers must give exactly what the history says."""
    history, _ = run_workload(tmp_path, concurrency=1, rate=300, read_any_node=0.0, duration_s=0.8)
    model: dict[str, int | None] = {}
    checked = 0
    for inv, comp in pair_ops(history):
        if inv["f"] not in CLIENT_FS or comp.get("error") == "NOT_LEADER_OR_FOLLOWER":
            continue
        k, arg = inv["value"]
        if inv["f"] == "read":
            assert comp["value"] == [k, model.get(k)]
        elif inv["f"] == "write":
            model[k] = arg
        else:
            old, new = arg
            if model.get(k) == old:
                assert comp["type"] == "ok"
                model[k] = new
            else:
                assert comp["type"] == "fail" and comp["error"] == "cas-mismatch"
        checked += 1
    assert checked > 30
    assert model == {k: v for k, v in fake.data.items()}


def test_a_cas_mismatch_keeps_the_process_and_the_leader(tmp_path, fake):
    history, _ = run_workload(tmp_path, read_fraction=0.0, cas_fraction=1.0, read_any_node=0.0)
    mismatches = [op for op in history if op.get("error") == "cas-mismatch"]
    assert len(mismatches) > 5
    for op in mismatches:
        nxt = next((o for o in history if o["index"] > op["index"] and o["process"] == op["process"]
                    and o["type"] == "invoke"), None)
        if nxt is not None:
            assert nxt["node"] == op["node"] == "n2"


def test_definite_fail_follows_the_hint_and_info_takes_a_new_process(tmp_path, fake):
    def kill_leader():
        fake.dead.add("n2")

    history, _ = run_workload(tmp_path, during=kill_leader, duration_s=1.6, read_any_node=0.0)
    fails = [op for op in kv_ops(history, "fail") if op["error"] == "NOT_LEADER_OR_FOLLOWER"]
    assert fails, "workers start on random nodes, so some must hit a follower"
    for op in fails:
        nxt = next((o for o in history if o["index"] > op["index"] and o["process"] == op["process"]
                    and o["type"] == "invoke"), None)
        if nxt is not None:
            assert nxt["node"] == "n2"
    infos = kv_ops(history, "info")
    assert infos and all(op["error"] == "timeout" and op["node"] == "n2" for op in infos)
    for op in infos:
        assert not [o for o in history if o["index"] > op["index"] and o["process"] == op["process"]]
    assert len({op["process"] for op in kv_ops(history)}) > 3


def test_reads_to_any_node_are_refused_by_non_leaders_without_moving_the_worker(tmp_path, fake):
    fake.hint = False     # a followed failure without a hint would move the worker elsewhere
    history, _ = run_workload(tmp_path, read_fraction=0.5, cas_fraction=0.0, read_any_node=1.0)
    reads = [op for op in history if op["f"] == "read" and op["type"] == "invoke"]
    assert {op["node"] for op in reads} == set(NODES)
    for op in kv_ops(history, "fail"):
        assert op["f"] == "read" or op["node"] != "n2"
    writes = [op for op in history if op["f"] == "write" and op["type"] == "invoke"]
    # once a worker's write reached the leader, a failed read never moved its writes elsewhere
    for p in {op["process"] for op in writes}:
        nodes = [op["node"] for op in writes if op["process"] == p]
        first = nodes.index("n2") if "n2" in nodes else len(nodes)
        assert all(n == "n2" for n in nodes[first:])


def test_the_seed_fixes_the_ops(tmp_path, fake):
    def invokes(seed):
        fake.data.clear()
        history, _ = run_workload(tmp_path, seed=seed, concurrency=1, rate=200, read_any_node=0.0)
        return [(op["f"], op["value"]) for op in kv_ops(history, "invoke")][:20]

    a, b, c = invokes(1), invokes(1), invokes(2)
    assert len(a) == 20 and a == b and a != c


def test_only_reads_or_only_writes(tmp_path, fake):
    history, _ = run_workload(tmp_path, read_fraction=1.0, cas_fraction=0.0, duration_s=0.3)
    assert {op["f"] for op in kv_ops(history)} == {"read"}
    history, _ = run_workload(tmp_path, seed=8, read_fraction=0.0, cas_fraction=0.0, duration_s=0.3)
    assert {op["f"] for op in kv_ops(history)} == {"write"}


@pytest.mark.parametrize("kw, needle", [
    ({"concurrency": 0}, "concurrency"),
    ({"keys": 0}, "keys must be an int >= 1"),
    ({"values": True}, "values must be an int >= 1"),
    ({"rate": 0}, "rate"),
    ({"read_fraction": 1.5}, "read_fraction"),
    ({"read_fraction": 0.6, "cas_fraction": 0.6}, "read_fraction \\+ cas_fraction must be <= 1"),
    ({"timeout_ms": 0}, "timeout_ms"),
])
def test_bad_options_are_named(kw, needle):
    with pytest.raises(ValueError, match=needle):
        KvOptions(**kw)


def test_default_keyspace():
    o = KvOptions()
    assert o.key_names() == ["k0", "k1", "k2", "k3", "k4"] and o.values == 5
    assert o.read_fraction + o.cas_fraction == pytest.approx(2 / 3)
