"""The verdict summary ``kraft-chaos run`` and ``check`` print (harness/cli/main.py:format_results):
its stats line names the workload's writes (appends, or the queue workload's sends)."""
from harness.reports.summary import format_results


def results(counts: dict, latency: dict) -> dict:
    return {"valid": True, "anomalies": {}, "checkers": {},
            "stats": {"counts": counts, "latency_ms": latency, "availability": 0.5}}


def test_a_queue_run_reports_its_sends_not_appends():
    text = format_results(results({"send": {"ok": 3000, "fail": 12, "info": 4}, "poll": {"ok": 9}},
                                  {"send": {"p50": 4.0, "p99": 80.0}}))
    assert "stats: sends ok=3000 fail=12 info=4" in text and "send latency p50 4" in text
    assert "appends" not in text


def test_an_append_run_reports_its_appends():
    text = format_results(results({"append": {"ok": 7, "fail": 1, "info": 0}}, {"append": {"p50": 1.0}}))
    assert "stats: appends ok=7 fail=1 info=0" in text
