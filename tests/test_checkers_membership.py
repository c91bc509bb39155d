"""The membership checker (checkers/membership.py) on hand-made histories: committed voter
sets from the final log's VotersRecords, DescribeQuorum samples against them, one change at
a time; and when it runs (checkers/registry.py)."""
from checkers.fold import CheckContext, run_checkers
from checkers.membership import Membership, wanted
from checkers.registry import check_all_folds
from harness.run.check import run_target


def voters_rec(offset, epoch, keys):
    return [offset, epoch, "KRaftVoters", {"Version": 0, "Voters": [
        {"VoterId": i, "VoterDirectoryId": d, "Endpoints": []} for i, d in keys]}]


A = [(1, "a"), (2, "b"), (3, "c")]
B = [(1, "a"), (2, "b")]                 # 3 removed
C = [(1, "a"), (2, "b"), (3, "c2")]      # 3 added back with a new directory id


class H:
    def __init__(self):
        self.ops, self.t = [], 0

    def add(self, **op):
        op.setdefault("process", 0)
        self.t += 1000
        self.ops.append({"index": len(self.ops), "time": self.t, **op})

    def sample(self, epoch, hw, keys, node="n1"):
        body = {"LeaderId": 1, "LeaderEpoch": epoch, "HighWatermark": hw,
                "CurrentVoters": [{"ReplicaId": i, "ReplicaDirectoryId": d, "LogEndOffset": hw} for i, d in keys],
                "Observers": []}
        self.add(type="invoke", f="describe-quorum", value=None, node=node, process=9)
        self.add(type="ok", f="describe-quorum", value=body, node=node, process=9)

    def nemesis(self, f, value):
        self.add(type="invoke", f=f, value={"kind": value["kind"]}, process="nemesis")
        self.add(type="info", f=f, value=value, process="nemesis")

    def final(self, records, hw):
        v = {"from": 0, "linearizable": True, "final": True}
        self.add(type="invoke", f="read", value=v, process=1)
        self.add(type="ok", f="read", value={**v, "high_watermark": hw, "records": records}, process=1)


def check(h):
    return run_checkers(lambda: iter(h.ops), {"membership": Membership()})["membership"]


def good_history():
    h = H()
    h.sample(1, 3, A)
    h.nemesis("start-membership", {"kind": "remove", "targets": ["n3"]})
    h.sample(1, 10, B)            # the removal appended at 10, not yet committed: pending
    h.sample(1, 12, B)
    h.nemesis("stop-membership", {"kind": "remove", "targets": ["n3"]})
    h.sample(1, 20, C)            # the add at 20, pending
    h.sample(1, 25, C)
    h.final([[0, 1, "LeaderChange", {"LeaderId": 1}], voters_rec(1, 1, A), [2, 1, "data", 7],
             voters_rec(10, 1, B), voters_rec(20, 1, C), [21, 1, "data", 8]], 26)
    return h


def test_a_clean_remove_and_add_back_is_valid():
    r = check(good_history())
    assert r["valid"] is True and r["anomalies"] == [], r
    assert r["voter_sets"] == 3 and r["membership_ops"] == 2


def test_a_sample_with_a_voter_set_never_committed_fails():
    h = good_history()
    h.sample(1, 25, [(1, "a"), (4, "x"), (5, "y")])       # two voters the log never had
    r = check(h)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert a["type"] == "uncommitted-voter-set" and a["op"] == h.ops[-1]["index"]
    assert a["voters"] == [[1, "a"], [4, "x"], [5, "y"]] and a["committed_then"] == [[1, "a"], [2, "b"], [3, "c2"]]


def test_a_pending_change_later_truncated_is_not_an_anomaly():
    h = good_history()
    h.sample(2, 26, [(1, "a"), (2, "b")])    # a removal appended past the high watermark, then lost
    assert check(h)["valid"] is True


def test_two_voters_added_in_one_step_fail():
    h = H()
    h.sample(1, 3, A)
    h.final([voters_rec(1, 1, A), voters_rec(5, 1, [*A, (4, "d"), (5, "e")])], 6)
    r = check(h)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert a["type"] == "multi-voter-change" and a["added"] == [[4, "d"], [5, "e"]] and a["removed"] == []


def test_a_swap_of_directory_ids_in_one_record_fails():
    h = H()
    h.final([voters_rec(1, 1, A), voters_rec(5, 1, C)], 6)
    (a,) = check(h)["anomalies"]
    assert a["type"] == "multi-voter-change" and a["removed"] == [[3, "c"]] and a["added"] == [[3, "c2"]]


def test_a_change_appended_before_the_previous_one_committed_fails():
    h = H()
    h.sample(1, 3, A)
    h.sample(1, 9, C)        # epoch 1's leader shows C while the removal at 10 is not committed
    h.final([voters_rec(1, 1, A), voters_rec(10, 1, B), voters_rec(12, 1, C)], 13)
    r = check(h)
    assert [a["type"] for a in r["anomalies"]] == ["overlapping-changes"]
    assert r["anomalies"][0]["offset"] == 12 and r["anomalies"][0]["previous_offset"] == 10


def test_not_applicable_without_voter_records_or_membership_ops():
    h = H()
    h.sample(1, 3, [(1, None), (2, None), (3, None)])
    h.final([[0, 1, "LeaderChange", {"LeaderId": 1}]], 1)
    r = check(h)
    assert r["valid"] is True and r["applicable"] is False


def test_membership_ops_without_a_final_log_are_unknown():
    h = H()
    h.nemesis("start-membership", {"kind": "remove", "targets": ["n3"]})
    assert check(h)["valid"] == "unknown"


def test_it_runs_for_membership_runs_and_kraft_version_1():
    assert wanted({"nemesis": ["membership:remove+replace"], "kraft_version": 1})
    assert wanted({"nemesis": ["kill"], "kraft_version": 1})
    # kraft.version unset: the target's default, which the caller gives (harness.run.check)
    kafka, kraft = {"nemesis": [], "db": "kafka", "kraft_version": None}, {"nemesis": ["kill"], "db": "kraft"}
    assert wanted(kafka, run_target(kafka).default_kraft_version)
    assert not wanted(kafka)                  # a target's default not known: not called for
    assert not wanted(kafka | {"kraft_version": 0}, run_target(kafka).default_kraft_version)
    assert not wanted(kraft, run_target(kraft).default_kraft_version)
    assert wanted({"scenario": [{"nemesis": "start-membership"}], "kraft_version": 1})
    assert not wanted({"nemesis": ["kill"], "kraft_version": 0})
    h = good_history()
    on = check_all_folds(lambda: iter(h.ops), ["election-safety"], None,
                         CheckContext(config={"nemesis": ["membership"], "kraft_version": 1}))
    off = check_all_folds(lambda: iter(h.ops), ["election-safety"], None, CheckContext(config={"kraft_version": 0}))
    assert "membership" in on["checkers"] and on["checkers"]["membership"]["valid"] is True
    assert "membership" not in off["checkers"]
    by_default = check_all_folds(lambda: iter(h.ops), ["election-safety"], None,
                                 CheckContext(config=kafka, target=run_target(kafka)))
    assert "membership" in by_default["checkers"]


def test_kafka_spelling_of_voters_records():
    from checkers.membership import record_set
    kafka = {"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": "LEHdrgCog3KcYvXVzjKIiQ", "endpoints": []},
                                      {"voterId": 2, "voterDirectoryId": "8qQargIuZAN7KLBATgTStg"}]}
    assert record_set(kafka) == {(1, "LEHdrgCog3KcYvXVzjKIiQ"), (2, "8qQargIuZAN7KLBATgTStg")}
