"""The append workload's history against an in-process fake cluster (no Docker).

The fake: one leader holds the log; other nodes answer NOT_LEADER_OR_FOLLOWER
with a leader hint (or none); "dead" nodes time out (IndefiniteError).
``kraft.wire.client.KraftClient`` is monkeypatched, so this also checks the
workload builds its clients through it.
"""
from __future__ import annotations

import asyncio

import pytest

from history import HistoryWriter, pair_ops, read_history
from kraft.wire import client as kclient
from workloads.append import AppendOptions, AppendWorkload, final_reads

from .workload_fakes import NODES, drive, install_fake_client, topology



class FakeCluster:
    """A toy quorum: ``leader`` appends to ``log``; ``dead`` nodes time out."""

    def __init__(self, leader: str = "n2", hint: bool = True):
        self.leader = leader
        self.epoch = 3
        self.hint = hint
        self.dead: set[str] = set()
        self.log: list[list] = [[0, 1, "LeaderChange", {"LeaderId": 2, "Voters": [1, 2, 3],
                                                      "GrantingVoters": [1, 2]}]]
        self.requests: list[tuple[str, str]] = []
        self.clients: list["FakeClient"] = []

    def node_of(self, host: str) -> str:
        return host.split(".")[-1]

    def check(self, node: str, leader_only: bool = True) -> None:
        if node in self.dead:
            raise kclient.IndefiniteError("timeout", f"{node} does not answer")
        if leader_only and node != self.leader:
            lid = int(self.leader[1:]) if self.hint else None
            raise kclient.DefiniteError("NOT_LEADER_OR_FOLLOWER", "", lid, self.epoch if self.hint else None)


class FakeClient:
    """Stands in for kraft.wire.client.KraftClient; records each request."""

    cluster: FakeCluster

    def __init__(self, host: str, port: int, cluster_id: str, timeout_ms: int = 3000):
        assert cluster_id == "cid"
        self.node = self.cluster.node_of(host)
        self.in_flight = False
        self.closed = False
        self.cluster.clients.append(self)

    async def _enter(self, what: str) -> None:
        assert not self.in_flight, "two requests in flight on one client"
        self.in_flight = True
        self.cluster.requests.append((what, self.node))
        await asyncio.sleep(0.001)
        self.in_flight = False

    async def append(self, value):
        await self._enter("append")
        self.cluster.check(self.node)
        off = len(self.cluster.log)
        self.cluster.log.append([off, self.cluster.epoch, "data", value])
        return off, self.cluster.epoch

    async def read(self, from_offset=0, max_records=None, linearizable=True):
        await self._enter("read")
        self.cluster.check(self.node, leader_only=linearizable)
        return {"high_watermark": len(self.cluster.log), "records": self.cluster.log[from_offset:]}

    async def describe_quorum(self):
        await self._enter("describe-quorum")
        self.cluster.check(self.node)
        return {"LeaderId": int(self.leader_id()), "LeaderEpoch": self.cluster.epoch,
                "HighWatermark": len(self.cluster.log), "CurrentVoters": [], "Observers": []}

    def leader_id(self) -> int:
        return int(self.cluster.leader[1:])

    async def close(self):
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    return install_fake_client(monkeypatch, FakeClient, FakeCluster())


def run_workload(tmp_path, seed=7, duration_s=0.6, during=None, **opts):
    """Run the workload for ``duration_s``; ``during(cluster)`` runs halfway. Returns the history."""
    path = tmp_path / "history.jsonl"
    hist = HistoryWriter(path)
    options = AppendOptions(**{"concurrency": 3, "rate": 150, "monitor_interval_ms": 100,
                               "timeout_ms": 500, **opts})
    wl = AppendWorkload(topology(), "cid", hist, seed, options)
    final = drive(wl, duration_s, during,
                  after=lambda: final_reads(wl, FakeClient.cluster.leader, timeout_s=2,
                                            node_timeout_s=0.3, retry_delay_s=0.05))
    hist.close()
    return read_history(path), wl, final


def client_ops(history, f=None):
    return [op for op in history if f is None or op["f"] == f]


def test_append_ok_values_match_the_log_and_values_are_unique(tmp_path, fake):
    history, wl, final = run_workload(tmp_path)
    oks = [op for op in history if op["f"] == "append" and op["type"] == "ok"]
    assert len(oks) > 20
    for op in oks:
        v = op["value"]
        assert set(v) == {"value", "offset", "epoch"}
        assert fake.log[v["offset"]] == [v["offset"], v["epoch"], "data", v["value"]]
        assert op["node"] == "n2"
    invoked = [op["value"] for op in history if op["f"] == "append" and op["type"] == "invoke"]
    assert len(invoked) == len(set(invoked))
    assert all(isinstance(v, int) for v in invoked)
    # every op names its node; invokes and completions pair up per process
    assert all(op.get("node") in NODES for op in history)
    pairs = pair_ops(history)
    assert all(comp is not None for _, comp in pairs)
    assert wl.tally.totals()["ok"] == sum(1 for op in history
                                          if op["type"] == "ok" and op["f"] in ("append", "read"))


def test_definite_fail_keeps_process_and_follows_leader_hint(tmp_path, fake):
    history, _, _ = run_workload(tmp_path, read_any_node=0.0)
    fails = [op for op in history if op["type"] == "fail" and op["f"] in ("append", "read")]
    assert fails, "workers start on random nodes, so some must hit a follower"
    for op in fails:
        assert op["error"] == "NOT_LEADER_OR_FOLLOWER"
        assert op["node"] != "n2"
        nxt = next((o for o in history if o["index"] > op["index"] and o["process"] == op["process"]
                    and o["type"] == "invoke"), None)
        if nxt is not None:   # same process goes on, to the hinted leader
            assert nxt["node"] == "n2"
    # a failed append keeps its invoke value
    for op in fails:
        if op["f"] == "append":
            inv = next(o for o in history if o["process"] == op["process"] and o["type"] == "invoke"
                       and o["index"] < op["index"] and o["f"] == "append")
            assert op["value"] == inv["value"]


def test_indefinite_error_gives_a_new_process(tmp_path, fake):
    def kill_leader():
        fake.dead.add("n2")

    history, _, _ = run_workload(tmp_path, during=kill_leader, duration_s=1.6)
    infos = [op for op in history if op["type"] == "info" and op["f"] in ("append", "read")]
    assert infos
    for op in infos:
        assert op["error"] == "timeout"
        later = [o for o in history if o["index"] > op["index"] and o["process"] == op["process"]]
        assert later == [], f"process {op['process']} issued ops after an info"
    worker_pids = {op["process"] for op in history if op["f"] in ("append", "read")}
    assert len(worker_pids) > 3  # concurrency 3, plus fresh ids after infos


def test_no_hint_tries_another_node(tmp_path, fake):
    fake.hint = False
    history, _, _ = run_workload(tmp_path, read_any_node=0.0)
    fails = [op for op in history if op["type"] == "fail" and op["f"] == "append"]
    assert fails
    for op in fails:
        nxt = next((o for o in history if o["index"] > op["index"] and o["process"] == op["process"]
                    and o["type"] == "invoke"), None)
        if nxt is not None:
            assert nxt["node"] != op["node"]


def test_reads_to_any_node_do_not_move_the_leader_belief(tmp_path, fake):
    fake.hint = False     # a followed failure without a hint would move the worker elsewhere
    history, _, _ = run_workload(tmp_path, read_fraction=0.5, read_any_node=1.0)
    reads = [op for op in history if op["f"] == "read" and op["type"] == "invoke"
             and op["value"]["final"] is False]
    assert {op["node"] for op in reads} == set(NODES)
    appends = [op for op in history if op["f"] == "append" and op["type"] == "invoke"]
    checked = False
    for op in history:
        if op["f"] == "read" and op["type"] == "fail" and op["value"]["final"] is False:
            before = [a for a in appends if a["process"] == op["process"] and a["index"] < op["index"]]
            after = [a for a in appends if a["process"] == op["process"] and a["index"] > op["index"]]
            if not (before and after):
                continue
            done = next(o for o in history if o["process"] == op["process"]
                        and o["index"] > before[-1]["index"])
            if done["type"] == "ok":    # the failed read changed nothing: same node as before it
                assert after[0]["node"] == before[-1]["node"]
                checked = True
    assert checked, "no failed read between two appends of one process"



def test_reads_shape_and_window(tmp_path, fake):
    history, _, final = run_workload(tmp_path, read_fraction=0.5, read_window=5)
    reads = [op for op in history if op["f"] == "read" and op["type"] == "ok"
             and op["value"]["final"] is False]
    assert reads
    for op in reads:
        v = op["value"]
        assert v["linearizable"] is True
        assert set(v) == {"from", "linearizable", "final", "high_watermark", "records"}
        assert [r[0] for r in v["records"]] == list(range(v["from"], v["high_watermark"]))
    assert any(op["value"]["from"] > 0 for op in reads), "from must trail the high watermark"
    # from = max(0, last seen high watermark - window): never more than window below what
    # that process has seen, and never negative
    assert all(op["value"]["from"] >= 0 for op in reads)


def test_final_reads_and_monitor(tmp_path, fake):
    history, _, final = run_workload(tmp_path)
    lin = final["linearizable"]
    assert lin["from"] == 0 and lin["final"] is True and lin["linearizable"] is True
    assert lin["high_watermark"] == len(fake.log)
    final_ops = [op for op in history if op["f"] == "read" and op["type"] == "ok"
                 and op["value"]["final"]]
    assert {op["node"] for op in final_ops if not op["value"]["linearizable"]} == set(NODES)
    dq = [op for op in history if op["f"] == "describe-quorum"]
    assert {op["node"] for op in dq} == set(NODES)
    for op in dq:
        if op["type"] == "invoke":
            assert op["value"] is None
        elif op["node"] == "n2":
            assert op["type"] == "ok" and op["value"]["LeaderId"] == 2
        else:
            assert op["type"] == "fail" and op["error"] == "NOT_LEADER_OR_FOLLOWER"
    # monitors have their own processes, never shared with workers
    assert not ({op["process"] for op in dq}
                & {op["process"] for op in history if op["f"] != "describe-quorum"})
    assert all(c.closed for c in fake.clients)


def test_final_read_follows_hint_when_leader_guess_is_wrong(tmp_path, fake):
    path = tmp_path / "h.jsonl"
    hist = HistoryWriter(path)
    wl = AppendWorkload(topology(), "cid", hist, 1, AppendOptions())
    out = asyncio.run(final_reads(wl, "n1", timeout_s=2, node_timeout_s=0.2, retry_delay_s=0.01))
    hist.close()
    ops = [op for op in read_history(path) if op["value"] and op["f"] == "read"
           and op.get("value", {}).get("linearizable")]
    assert [op["node"] for op in ops if op["type"] != "invoke"][:2] == ["n1", "n2"]
    assert out["linearizable"]["high_watermark"] == 1


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="concurrency"):
        AppendOptions(concurrency=0)
    with pytest.raises(ValueError, match="rate"):
        AppendOptions(rate=0)
    with pytest.raises(ValueError, match="read_fraction"):
        AppendOptions(read_fraction=1.5)
