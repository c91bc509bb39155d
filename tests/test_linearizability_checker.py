"""The checker's verdicts, limits and explanations (issue 3, section 1)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from checkers.linearizability import check_history
from checkers.linearizability.checker import check_operations
from checkers.linearizability.formats.kv_log import read_kv_log
from checkers.linearizability.models import make_model
from checkers.linearizability.operation import UNKNOWN, Operation

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "porcupine"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"porcupine's test data not at {DATA}")


def op(p, f, inp, out, call, ret, key=None):
    return Operation(p, f, inp, out, call, ret, key=key)


def stale_read_history() -> list[dict]:
    """write(1) completes, then a read on another process returns nil: a stale read."""
    h = [("invoke", 0, "write", ["x", 1]), ("ok", 0, "write", ["x", 1]),
         ("invoke", 1, "read", ["x", None]), ("ok", 1, "read", ["x", None])]
    return [{"index": i, "time": 1000 * (i + 1), "type": t, "process": p, "f": f, "value": v}
            for i, (t, p, f, v) in enumerate(h)]


def test_calls_sort_before_returns_at_equal_times():
    m = make_model("register")
    # the read is called at the instant the write returns: they overlap, so it may see nil
    ops = [op(0, "write", 1, None, 0, 5), op(1, "read", None, None, 5, 6)]
    assert check_operations(m, ops).valid is True
    ops = [op(0, "write", 1, None, 0, 5), op(1, "read", None, None, 6, 7)]
    assert check_operations(m, ops).valid is False


def test_crashed_op_may_or_may_not_take_effect():
    m = make_model("register")
    crashed_write = op(0, "write", 1, None, 0, None)
    assert check_operations(m, [crashed_write, op(1, "read", None, 1, 10, 11)]).valid is True
    assert check_operations(m, [crashed_write, op(1, "read", None, None, 10, 11)]).valid is True
    # but once seen it stays: a later read of nil is stale
    assert check_operations(m, [crashed_write, op(1, "read", None, 1, 10, 11),
                                op(2, "read", None, None, 12, 13)]).valid is False
    # a crashed acquire need not have happened (porcupine would force it in at the end)
    mutex = make_model("mutex")
    assert check_operations(mutex, [op(0, "acquire", None, None, 0, 1),
                                    op(1, "acquire", None, UNKNOWN, 2, None)]).valid is True


def test_stale_read_is_explained_and_drawn(tmp_path):
    r = check_history(stale_read_history(), model="register", by_key=True, out_dir=tmp_path)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert a["key"] == "x" and a["linearized_prefix"] == 1
    assert a["op"]["desc"] == "read('x') -> nil" and a["op"]["index"] == 2
    assert a["state"] == "1" and a["needs"] == "value = nil"
    html = Path(r["html"]).read_text()
    data = json.loads(re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S).group(1)
                      .replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u0026", "&"))
    (part,) = data["partitions"]
    assert part["stuck"]["desc"] == "read('x') -> nil"
    assert part["linearizations"][0] == [{"id": 0, "state": "1"}]
    json.dumps(r)  # results.json-ready


def test_valid_history_writes_no_html(tmp_path):
    h = stale_read_history()
    h[3]["value"] = ["x", 1]
    r = check_history(h, out_dir=tmp_path)
    assert r["valid"] is True and "html" not in r and not (tmp_path / "linearizability.html").exists()


@needs_data
def test_timeout_gives_unknown():
    ops = read_kv_log(DATA / "kv" / "c50-ok.txt")
    r = check_operations(make_model("kv", initial=""), ops, partitioned=False, timeout_s=0.2)
    assert r.valid == "unknown" and "timed out" in r.reason


@needs_data
def test_memory_bound_gives_unknown_not_a_crash():
    ops = read_kv_log(DATA / "kv" / "c50-ok.txt")
    r = check_operations(make_model("kv", initial=""), ops, partitioned=False, memory_bound=16 << 20)
    assert r.valid == "unknown" and "memory bound" in r.reason


@needs_data
def test_partitions_interleave_so_a_quick_illegal_key_is_found():
    """c50-bad: keys 0, 5, 7 and 9 have searches that run for seconds and gigabytes;
    key 3 is illegal after a few thousand steps. Searched one after another,
    largest first, this would not finish; interleaved it stops at key 3."""
    m = make_model("kv", initial="")
    ops = [o for o in read_kv_log(DATA / "kv" / "c50-bad.txt") if o.key in ("0", "3", "9")]
    r = check_operations(m, ops, timeout_s=30, memory_bound=2 << 30)
    assert r.valid is False and r.explanations[0]["key"] == "3"
    steps = {p["key"]: p["steps"] for p in r.partitions}
    assert steps["3"] < 20_000 and steps["0"] < 200_000


def test_model_errors_name_the_op():
    m = make_model("register")
    with pytest.raises(ValueError, match="model 'register' has no function 'frob'"):
        check_operations(m, [op(0, "frob", None, None, 0, 1)])


def append_history(final_read_records, lost=False) -> list[dict]:
    """An append-workload history: a LeaderChange at offset 0, appends 10 (offset 1) and
    11 (crashed), a linearizable read of [0, 3), and a node's final non-linearizable read."""
    lc = [0, 1, "LeaderChange", {"LeaderId": 1}]
    read = {"from": 0, "linearizable": True, "final": False}
    h = [("invoke", 0, "append", 10), ("ok", 0, "append", {"value": 10, "offset": 1, "epoch": 1}),
         ("invoke", 1, "append", 11), ("info", 1, "append", 11),
         ("invoke", 2, "read", read),
         ("ok", 2, "read", {**read, "high_watermark": 3,
                            "records": [lc, [1, 1, "data", 10]] + ([] if lost else [[2, 1, "data", 11]])}),
         ("invoke", 3, "read", {"from": 0, "linearizable": False, "final": True}),
         ("ok", 3, "read", {"from": 0, "linearizable": False, "final": True, "high_watermark": 1,
                            "records": final_read_records})]
    return [{"index": i, "time": 10 * (i + 1), "type": t, "process": p, "f": f, "value": v}
            for i, (t, p, f, v) in enumerate(h)]


def test_log_model_on_an_append_history():
    lc = [0, 1, "LeaderChange", {"LeaderId": 1}]
    # the LeaderChange record is an append nobody issued; the crashed append of 11 shows up
    # at offset 2; a lagging node's final (non-linearizable) read of a shorter prefix is fine
    r = check_history(append_history([lc]), model="log", by_key=False)
    assert r["valid"] is True
    # an acknowledged append at offset 1 missing from a later linearizable read
    h = append_history([lc])
    h[5]["value"]["records"] = [lc, [1, 1, "data", 99]]
    h[5]["value"]["high_watermark"] = 2
    r = check_history(h, model="log", by_key=False)
    assert r["valid"] is False and r["anomalies"][0]["op"]["desc"].startswith(("read(0)", "append(10)"))
