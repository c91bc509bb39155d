"""Which faults landed (checkers/fault_report.py): per family and kind, attempted, happened,
skipped and failed with why, from the nemesis ops alone; on hand-made histories and on the
frozen nemesis ops of a real run (tests/data/faults/: the default schedule plus wipe and
membership at kraft.version 1, seed 1, before faults waited for a leader)."""
import json
from pathlib import Path

from checkers.fault_report import FaultReport, check_fault_report, classify, kind_label, reason_text
from checkers.registry import check_all_folds
from harness.reports.summary import fault_lines
from tests.histories.builder import H

FROZEN = Path(__file__).parent / "data" / "faults" / "kv1-default-wipe-membership-nemesis.jsonl"
NO_LEADER = "no quorum node answered DescribeQuorum as leader (3 rounds)"


def frozen() -> list[dict]:
    return [json.loads(line) for line in FROZEN.read_text().splitlines()]


def test_the_frozen_run_shows_why_membership_and_wipes_did_not_land():
    r = check_fault_report(frozen())
    m = r["kinds"]["membership"]
    assert m["remove"] == {"attempted": 2, "happened": 0, "skipped": 0, "failed": 2, "skipped_why": {},
                           "failed_why": {NO_LEADER: 1, "REQUEST_TIMED_OUT (outcome unknown)": 1}}
    assert m["remove-leader"]["attempted"] == 2 and m["remove-leader"]["happened"] == 1
    assert m["replace"] == {"attempted": 5, "happened": 0, "skipped": 2, "failed": 3,
                            "skipped_why": {"no node to change": 2}, "failed_why": {NO_LEADER: 3}}
    w = r["kinds"]["wipe"]
    assert w["minority"]["skipped"] == 5 and w["minority"]["happened"] == 0
    assert w["minority"]["skipped_why"] == {f"no leader to count live voter keys ({NO_LEADER})": 5}
    assert w["leader"] == {"attempted": 1, "happened": 1, "skipped": 0, "failed": 0, "skipped_why": {},
                           "failed_why": {}}
    assert r["totals"]["membership"] == {"attempted": 9, "happened": 1, "skipped": 2, "failed": 6}
    assert r["totals"]["wipe"] == {"attempted": 7, "happened": 1, "skipped": 6, "failed": 0}
    assert r["wiped_nodes"]["wiped"] == 1 and r["wiped_nodes"]["skipped"] == 11
    assert r["changes"]["remove"]["ok"] == 1 and r["changes"]["remove"]["info"] == 1
    assert r["changes"]["add"]["ok"] == 1 and r["changes"]["replace"]["skipped"] == 2
    # the other families all landed; leader-aimed ones often found no leader and hit anyone
    assert r["totals"]["partition"] == {"attempted": 27, "happened": 27, "skipped": 0, "failed": 0}
    assert r["kinds"]["kill"]["leader"]["leader_unknown"] == 5
    starts = sum(1 for op in frozen() if op["type"] == "invoke" and op["f"].startswith("start-"))
    assert sum(t["attempted"] for t in r["totals"].values()) == starts


def test_every_outcome_by_hand():
    h = H()
    i = h.invoke("nemesis", "start-membership", {"kind": "remove"})
    h.complete(i, "info", {"kind": "remove", "targets": ["n2"], "leader_wait": {"waited_s": 3.5, "leader": True},
                           "changes": [{"op": "remove", "node": "n2", "outcome": "info", "error": "REQUEST_TIMED_OUT",
                                        "voter_now": False}]})
    i = h.invoke("nemesis", "stop-membership", {"kind": "remove"})
    h.complete(i, "info", {"kind": "remove", "targets": ["n2"], "changes": [
        {"op": "add", "node": "n2", "outcome": "ok", "attempts": 2}]})
    i = h.invoke("nemesis", "start-membership", {"kind": "remove-leader"})
    h.complete(i, "info", {"kind": "remove-leader", "targets": [], "changes": [],
                           "leader_wait": {"waited_s": 35.0, "leader": False}, "skipped": "no leader within 5 s"})
    i = h.invoke("nemesis", "start-membership", {"kind": "nodes", "slot": "wipe-replace", "targets": ["n3"],
                                                 "action": "replace"})
    h.complete(i, "info", {"kind": "nodes", "targets": ["n3"], "changes": [
        {"op": "remove", "node": "n3", "outcome": "fail", "error": "VOTER_NOT_FOUND"},
        {"op": "add", "node": "n3", "skipped": "not caught up within 20 s"}]})
    i = h.invoke("nemesis", "start-kill", {"kind": "leader"})
    h.complete(i, "info", {"kind": "leader", "targets": ["n4"], "leader_unknown": True,
                           "leader_wait": {"waited_s": 5.0, "leader": False}})
    i = h.invoke("nemesis", "start-partition", {"kind": "nodes", "slot": "lag", "targets": ["n1"]})
    h.complete(i, "info", {"kind": "nodes", "slot": "lag", "targets": ["n1"], "grudge": {}})
    i = h.invoke("nemesis", "stop-partition", {"kind": "nodes", "slot": "lag"})
    h.complete(i, "info", {"kind": "nodes", "slot": "lag"}, error="n1: iptables: exit 4")
    i = h.invoke("nemesis", "start-wipe", {"kind": "one"})
    h.complete(i, "info", {"kind": "one"}, error="n2: rm: exit 1")
    h.invoke("nemesis", "start-pause", {"kind": "one"})          # the run ended before it completed
    r = check_fault_report(h.ops)
    m = r["kinds"]["membership"]
    assert m["remove"]["happened"] == 1 and m["remove"]["waited"] == {"n": 1, "mean_s": 3.5, "max_s": 3.5,
                                                                       "no_leader": 0}
    assert m["remove-leader"] == {"attempted": 1, "happened": 0, "skipped": 1, "failed": 0,
                                  "skipped_why": {"no leader within 5 s": 1}, "failed_why": {},
                                  "waited": {"n": 1, "mean_s": 35.0, "max_s": 35.0, "no_leader": 1}}
    assert m["nodes:replace"]["failed_why"] == {"VOTER_NOT_FOUND": 1}
    assert r["changes"]["remove"]["confirmed"] == 1 and r["changes"]["remove"]["fail"] == 1
    assert r["changes"]["add"]["ok"] == 1 and r["changes"]["add"]["skipped_why"] == {"not caught up within 20 s": 1}
    assert r["kinds"]["kill"]["leader"]["leader_unknown"] == 1 and r["kinds"]["kill"]["leader"]["happened"] == 1
    assert r["kinds"]["partition"]["nodes@lag"]["happened"] == 1
    assert r["kinds"]["wipe"]["one"]["failed_why"] == {"n2: rm: exit 1": 1}
    assert r["kinds"]["pause"]["one"]["failed_why"] == {"the start never completed (the run ended)": 1}
    assert r["stop_errors"] == {"partition": 1}
    lines = fault_lines(r)
    assert lines[0].startswith("faults (attempted/happened/skipped/failed): kill 1/1/0/0, membership 3/1/1/1")
    assert any("membership:remove-leader 1/0/1/0: skipped: no leader within 5 s x1" in ln for ln in lines)
    assert "  voter changes: add ok 1 skipped 1; remove confirmed 1 fail 1" in lines


def test_client_ops_and_the_heal_are_not_faults():
    h = H()
    h.append(0, 1, offset=0)
    i = h.invoke("nemesis", "heal", {"kind": "all"})
    h.complete(i, "info", {"kind": "all", "held": [], "restarted": []})
    assert check_fault_report(h.ops) == {"valid": True, "kinds": {}, "totals": {}}
    assert fault_lines({"kinds": {}, "totals": {}}) == []


def test_kind_labels_and_reasons():
    assert kind_label("kill", {"kind": "nodes", "slot": "elect"}) == "nodes@elect"
    assert kind_label("kill", {"kind": "nodes"}) == "nodes"
    assert kind_label("membership", {"kind": "nodes", "action": "add"}) == "nodes:add"
    assert kind_label("partition", {"kind": "bridge", "slot": "partition2"}) == "bridge"
    assert reason_text("a\n  b") == "a b" and len(reason_text("x" * 500)) == 160
    assert classify("wipe", {"value": {"kind": "one", "targets": [], "wiped": {}}}) == ("skipped", ["no target"])


def test_every_check_reports_it_beside_the_stats():
    ops = frozen()
    raw = check_all_folds(lambda: iter(ops), ["crashed-node"])
    assert raw["faults"] == {k: v for k, v in check_fault_report(ops).items() if k != "valid"}
    assert "faults" not in raw["checkers"] and raw["valid"] is True


def test_streamed_in_pieces_gives_the_same_report():
    ops = frozen()
    a, b = FaultReport(), check_fault_report(ops)
    for op in ops:
        a.feed(op)
    assert a.result(None) == b
