"""timeline.html (harness/reports/timeline.py and timeline_assets/timeline.js): the compact data of a
100k-op history, lenient pairing, the page, the report step writing it, and the JS run under
node against a stub DOM (skipped without node; there is no browser here)."""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from itertools import accumulate
from pathlib import Path

import pytest

from harness.reports.timeline import (TIMELINE_NAME, TYPES, TimelineData, render_timeline,
                                   write_timeline)

ASSETS = Path(__file__).parent.parent / "harness" / "reports" / "timeline_assets"
STUB = Path(__file__).with_name("timeline_dom_stub.js")


def synthetic(n_ops: int, processes: int = 20, seed: int = 1) -> list[dict]:
    """About ``n_ops`` client ops (invoke + completion each) by ``processes`` concurrent workers,
    an info op retiring its process for a fresh one (as Jepsen does), and a kill fault every
    2000 ops; times in ns, 0.1-3 ms apart."""
    rng = random.Random(seed)
    ops, t = [], 0
    free = list(range(processes))
    busy: dict[int, int] = {}
    next_proc, done, nem = processes, 0, 0

    def emit(typ, proc, f, value, **kw):
        ops.append({"index": len(ops), "time": t, "type": typ, "process": proc, "f": f, "value": value, **kw})
    while done < n_ops:
        t += rng.randint(100_000, 3_000_000)
        if done // 2000 > nem:
            nem += 1
            f = "start-kill" if nem % 2 else "stop-kill"
            emit("invoke", "nemesis", f, None)
            emit("info", "nemesis", f, {"targets": ["n2"]})
        if free and (not busy or rng.random() < 0.5):
            p = free.pop(rng.randrange(len(free)))
            busy[p] = len(ops)
            emit("invoke", p, rng.choice(["append", "append", "read"]), done, node=f"n{p % 5 + 1}")
        else:
            p = rng.choice(list(busy))
            inv = ops[busy.pop(p)]
            typ = rng.choices(["ok", "fail", "info"], [90, 7, 3])[0]
            emit(typ, p, inv["f"], inv["value"], **({"error": "timeout"} if typ != "ok" else {}))
            done += 1
            if typ == "info":
                p, next_proc = next_proc, next_proc + 1
            free.append(p)
    return ops


def test_100k_ops_give_compact_columns_of_one_length():
    ops = synthetic(100_000)
    doc = TimelineData.of(iter(ops)).doc()
    n = doc["n"]
    assert n == sum(1 for o in ops if o["type"] == "invoke") > 100_000   # one bar per invoke, open ones too
    assert doc["dropped"] == doc["unpaired"] == 0
    for col in ("lane", "ds", "dur", "type", "f", "node", "di", "dc", "desc"):
        assert len(doc[col]) == n, col
    assert doc["lanes"][0] == "nemesis" and doc["lanes"][1:21] == [str(p) for p in range(20)]
    assert len(doc["lanes"]) == 1 + len({o["process"] for o in ops if o["process"] != "nemesis"})
    starts = list(accumulate(doc["ds"]))
    assert all(d >= 0 for d in doc["ds"]) and all(d >= 0 for d in doc["dur"])   # sorted by invoke
    assert starts[0] == ops[0]["time"] // 1000 and max(s + d for s, d in zip(starts, doc["dur"])) <= doc["end"]
    assert sorted(accumulate(doc["di"])) == sorted(o["index"] for o in ops if o["type"] == "invoke")
    assert {doc["types"][t] for t in doc["type"]} <= set(TYPES) and set(doc["fs"]) >= {"append", "read"}
    assert len(doc["faults"]) >= 20 and all(f[0] == "kill" and f[1] <= f[2] for f in doc["faults"])
    page = render_timeline(doc, "t")
    assert len(page) < 60 * n                                         # compact: < 60 bytes an op
    assert '<canvas id="tl-canvas">' in page and page.count("<script") == 2
    embedded = re.search(r'id="tl-data">(.*?)</script>', page, re.S)[1]
    assert json.loads(embedded) == doc


def test_pairing_is_lenient_and_open_ops_run_to_the_end():
    ops = [{"index": 0, "time": 1_000, "type": "ok", "process": 3, "f": "read", "value": None},
           {"index": 1, "time": 2_000, "type": "invoke", "process": 0, "f": "append", "value": 1},
           {"index": 2, "time": 5_000, "type": "invoke", "process": 0, "f": "append", "value": 2},
           {"index": 3, "time": 9_000, "type": "invoke", "process": 1, "f": "read", "value": None},
           {"index": 4, "time": 20_000, "type": "fail", "process": 1, "f": "read", "value": None,
            "error": "NOT_LEADER"}]
    doc = TimelineData.of(ops).doc()
    assert doc["unpaired"] == 1 and doc["n"] == 3
    types = [doc["types"][t] for t in doc["type"]]
    assert types == ["open", "open", "fail"]
    assert doc["dc"] == [-1, -1, 1] and doc["dur"][0] == 3 and doc["dur"][1] == 15   # to the next invoke / end
    assert doc["desc"][2] == "error=NOT_LEADER" and doc["desc"][0] == "1"


def test_descriptions_are_cut_and_script_safe(tmp_path):
    long = {"x": "</script><b>" * 40}
    ops = [{"index": 0, "time": 0, "type": "invoke", "process": 0, "f": "w", "value": long},
           {"index": 1, "time": 5, "type": "ok", "process": 0, "f": "w", "value": long}]
    data = TimelineData.of(ops, max_ops=1)
    assert len(data.desc[0]) <= 80
    path = write_timeline(data, tmp_path, title="<i>t</i>")
    assert path == tmp_path / TIMELINE_NAME
    page = path.read_text()
    assert page.count("</script>") == 2 and "&lt;i&gt;t&lt;/i&gt;" in page
    more = TimelineData.of(ops + [{"index": 2, "time": 6, "type": "invoke", "process": 1, "f": "w", "value": 1},
                                  {"index": 3, "time": 7, "type": "ok", "process": 1, "f": "w", "value": 1}],
                           max_ops=1)
    assert more.doc()["dropped"] == 1 and "left out" in render_timeline(more)


def test_the_report_step_writes_the_timeline_and_the_quantiles(tmp_path):
    from history import store
    from harness.run.check import check_run_dir
    from tests.histories.builder import clean_run
    run = store.create_run_dir(tmp_path, "append-partition", "20260101T000000.000Z")
    h, _ = clean_run(80)
    (run / store.HISTORY).write_text("".join(json.dumps(o) + "\n" for o in h.ops))
    store.write_test_json(run, {"workload": "append"}, 1, "kraft-chaos run --seed 1")
    check_run_dir(run)
    assert (run / "latency-quantiles.png").read_bytes()[:4] == b"\x89PNG"
    page = (run / TIMELINE_NAME).read_text()
    assert "tl-data" in page and '"faults":[["partition"' in page


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def _node(data: dict, tmp_path: Path, *args) -> dict:
    (tmp_path / "d.json").write_text(json.dumps(data))
    out = subprocess.run(["node", str(STUB), str(ASSETS / "timeline.js"), str(tmp_path / "d.json"), *map(str, args)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@needs_node
def test_js_draws_and_hovering_an_op_shows_it(tmp_path):
    ops = synthetic(400, processes=5)
    doc = TimelineData.of(ops).doc()
    starts = list(accumulate(doc["ds"]))
    i = max(range(doc["n"]), key=lambda k: doc["dur"][k])           # the longest op: easy to hit
    t1 = max(doc["end"] * 1.01, 1000)                                 # the view after "fit"
    x = 84 + (starts[i] + doc["dur"][i] / 2) / t1 * (1200 - 84)
    y = 24 + (doc["lane"][i] + 0.5) * 18
    out = _node(doc, tmp_path, x, y)
    assert out["rects_fit"] > 100 and out["tip_hidden"] is False and out["hover"] == i
    assert f"process {doc['lanes'][doc['lane'][i]]}" in out["tip"] and doc["fs"][doc["f"][i]] in out["tip"]
    assert out["view"]["t0"] == 0                                     # "Home" fits again


@needs_node
def test_js_draws_100k_ops_culling_to_the_view(tmp_path):
    doc = TimelineData.of(synthetic(100_000)).doc()
    out = _node(doc, tmp_path)
    # the whole run in 1116 px: merged bars, far fewer rectangles than ops
    assert 0 < out["rects_fit"] < doc["n"] / 2
