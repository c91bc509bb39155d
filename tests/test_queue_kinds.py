"""The queue workload's checker under Jepsen's anomaly names (checkers/queue_checker.py): which
fold's case becomes which kind, the verdict by kind, and the old names of stored runs
(checkers/kind_names.py)."""

from checkers.fold import ops_of
from checkers.kind_names import OLD_NAMES, current_counts, current_name, current_results
from checkers.queue_checker import QUEUE_KINDS
from checkers.registry import check_all_folds, reported_names
from tests.test_checkers_queue import H, healthy


def kinds_of(ops):
    res = check_all_folds(ops_of(ops), ("queue",))
    return res, {k: n for k, n in res["anomaly_counts"].items() if n}


def test_a_lost_send_below_a_read_offset_is_a_lost_write_and_unseen_a_lost_tail_only_unseen():
    h = H()
    mid = h.send(0, 0, 10, 0)
    h.send(0, 0, 11, 1)
    tail = h.send(0, 1, 12, 0)
    h.drain(0, [(1, 11)], end=2).drain(1, [], end=0)
    res, counts = kinds_of(h.ops)
    assert counts == {"lost-write": 1, "unseen": 2}
    c = res["checkers"]
    assert [a["op"] for a in c["lost-write"]["anomalies"]] == [mid["index"]]
    assert [a["op"] for a in c["unseen"]["anomalies"]] == [mid["index"], tail["index"]]
    assert c["unseen"]["anomalies"][1]["later_read"] is False and c["lost-write"]["acked"] == 3
    assert res["valid"] is False and c["queue"]["valid"] is False


def test_unjudged_acks_make_unseen_and_lost_write_unknown_and_nothing_else():
    h = H()
    h.send(0, 0, 10, 0)
    res, counts = kinds_of(h.ops)
    c = res["checkers"]
    assert counts == {} and res["valid"] == "unknown"
    assert {k for k in QUEUE_KINDS if c[k]["valid"] == "unknown"} == {"unseen", "lost-write"}


def test_a_read_of_a_failed_send_is_g1a_and_of_an_unsent_value_phantom():
    h = H()
    h.send(0, 0, 11, None, type_="fail")
    h.send(0, 1, 12, 0)
    h.poll(1, 0, 0, [(0, 11), (1, 12), (2, 99)])
    h.drain(1, [(0, 12)])
    res, counts = kinds_of(h.ops)
    assert counts == {"G1a": 1, "phantom": 2, "duplicate": 1}       # 12 at offset 1 of 0 and 0 of 1
    c = res["checkers"]
    assert [a["value"] for a in c["G1a"]["anomalies"]] == [11]
    assert {a["reason"] for a in c["phantom"]["anomalies"]} == {"wrong-partition", "never-sent"}


def test_polls_going_back_within_one_poll_are_int_nonmonotonic_and_across_polls_nonmonotonic():
    h = H()
    within = h.poll(1, 0, 0, [(0, 1), (2, 3), (1, 2)])
    before = h.poll(2, 1, 5, [(4, 9), (5, 10)])
    h.poll(3, 2, 0, [(0, 5), (1, 6)])
    h._add("invoke", 3, "poll", {"partition": 2})
    back = h._add("ok", 3, "poll", {"partition": 2, "records": [[1, 6]]})
    res, counts = kinds_of(h.ops)
    c = res["checkers"]
    assert [a["op"] for a in c["int-nonmonotonic-poll"]["anomalies"]] == [within["index"]]
    assert [(a["op"], a["case"]) for a in c["nonmonotonic-poll"]["anomalies"]] == [
        (before["index"], "before-from"), (back["index"], "backwards")]
    assert c["nonmonotonic-poll"]["polls"] == 4


def test_duplicates_inconsistent_offsets_and_reordered_sends_keep_their_counts():
    h = H()
    h.send(0, 0, 10, 0)
    h.send(0, 0, 11, 0)          # acknowledged before, at the same offset: reordered, inconsistent
    h.send(0, 0, 10, 3)          # the value at a second offset: duplicate
    h.drain(0, [(0, 10), (3, 10)], end=4)
    _res, counts = kinds_of(h.ops)
    assert counts["duplicate"] == 1 and counts["inconsistent-offsets"] == 1 and counts["reordered-send"] == 1


def test_a_healthy_history_shows_no_kind_and_the_kinds_follow_the_checker():
    res, counts = kinds_of(healthy())
    assert counts == {} and res["valid"] is True
    assert list(res["checkers"]) == reported_names(["queue"]) == ["queue", *QUEUE_KINDS]


def test_old_names_read_as_todays():
    assert current_name("queue-lost") == "unseen" and current_name("lost-write") == "lost-write"
    assert set(OLD_NAMES.values()) <= set(QUEUE_KINDS)
    assert current_counts({"queue-lost": 4, "unseen": 1, "queue-phantom": 2, "x": "n/a"}) == {
        "unseen": 5, "phantom": 2, "x": "n/a"}
    old = {"valid": False, "anomalies": {"queue-lost": 3}, "checkers": {"queue-lost": {"valid": False}}}
    new = current_results(old)
    assert new["anomalies"] == {"unseen": 3} and new["checkers"] == {"unseen": {"valid": False}}
    assert old["anomalies"] == {"queue-lost": 3}                 # a copy: the document is untouched
    assert current_results(None) is None and current_results({"valid": True}) == {"valid": True}


# -- stored results with the old names, as each reader reads them -------------------------------

OLD_RESULTS = {"valid": False, "anomalies": {"queue-lost": 3, "queue-reordered": 0, "crashed-node": 1},
               "checkers": {"queue-lost": {"valid": False, "anomalies": [{"op": 7}, {"op": 9}, {"op": 12}]},
                            "queue-reordered": {"valid": True, "anomalies": []},
                            "crashed-node": {"valid": False, "anomalies": [{"op": 30}]}}}


def test_catalogue_scoring_reads_old_names_against_todays_declared_kinds():
    from harness.catalogue.detection import anomaly_kinds, first_anomaly_s
    assert anomaly_kinds(OLD_RESULTS, ("lost-write", "unseen", "inconsistent-offsets")) == ["unseen"]
    assert anomaly_kinds(OLD_RESULTS, ("queue-lost",)) == ["unseen"]
    assert anomaly_kinds(OLD_RESULTS) == ["unseen", "crashed-node"]
    history = [{"index": i, "time": i * 10**9} for i in range(40)]
    assert first_anomaly_s(OLD_RESULTS, history, ("unseen",)) == 7.0


def test_the_summary_the_web_ui_and_bugs_tables_show_old_runs_by_todays_names(tmp_path):
    import json
    from harness.bugs.report import format_kafka_table, kafka_markdown_rows
    from harness.reports.summary import format_results
    from harness.web.pages import results_page
    from harness.web.store_view import summarize
    text = format_results(OLD_RESULTS)
    assert "  unseen: 3" in text and "queue-lost" not in text
    run = tmp_path / "queue-x" / "20250101T000000.000Z"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(OLD_RESULTS))
    assert summarize(tmp_path, run).anomalies == {"unseen": 3, "crashed-node": 1}
    page = results_page("queue-x/20250101T000000.000Z", OLD_RESULTS, "/raw")
    assert 'id="c-unseen"' in page and "queue-lost" not in page
    side = {"version": "4.0.2", "kraft_version": 0, "runs": 1, "detected": 1, "false_alarms": 0,
            "median_detect_s": 0.2, "errors": 0, "all_kinds": {"queue-lost": 1, "queue-inconsistent-offsets": 1}}
    doc = {"db": "kafka", "bugs": [{"jira": "KAFKA-15332", "class": "c", "schedule": "kafka-elr",
                                    "kinds_declared": ["queue-lost", "queue-inconsistent-offsets"],
                                    "affected": side, "fixed": {**side, "detected": 0, "all_kinds": {}}}]}
    row, = kafka_markdown_rows(doc)
    assert "| unseen, inconsistent-offsets |" in row and "unseen 1, inconsistent-offsets 1 / -" in row
    assert "queue-" not in format_kafka_table(doc)
