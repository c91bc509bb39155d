"""Tests for the history package: writer, reader validation, pairing."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest

from history import HistoryError, HistoryWriter, pair_ops, read_history


def test_writer_assigns_dense_indices_monotonic_times_and_flushes(tmp_path):
    path = tmp_path / "h" / "history.jsonl"
    w = HistoryWriter(path)
    inv = w.invoke(0, "append", 7, node="n1")
    # flushed before close: a crash now keeps the op
    assert json.loads(path.read_text().splitlines()[0]) == inv
    ok = w.complete(inv, "ok", {"value": 7, "offset": 1, "epoch": 1})
    w.append("invoke", "nemesis", "start-kill", {"kind": "one", "targets": ["n2"]})
    w.close()
    ops = read_history(path)
    assert [o["index"] for o in ops] == [0, 1, 2]
    assert ops[0]["time"] <= ops[1]["time"] <= ops[2]["time"]
    assert ok["process"] == 0 and ok["f"] == "append" and ok["node"] == "n1" and ok["type"] == "ok"
    assert ops[1] == ok
    assert "node" not in ops[2] and ops[2]["process"] == "nemesis"


def test_writer_complete_carries_error_and_extra(tmp_path):
    with HistoryWriter(tmp_path / "h.jsonl") as w:
        inv = w.invoke(3, "read", {"from": 0}, node="n2")
        done = w.complete(inv, "info", inv["value"], error="timeout", attempt=2)
    assert done["error"] == "timeout" and done["attempt"] == 2 and done["node"] == "n2"
    assert read_history(tmp_path / "h.jsonl")[1]["attempt"] == 2


@pytest.mark.parametrize("kwargs, msg", [
    ({"type": "done", "process": 0, "f": "read"}, "'type' must be one of"),
    ({"type": "ok", "process": "p1", "f": "read"}, "'process' must be an int or 'nemesis'"),
    ({"type": "ok", "process": True, "f": "read"}, "'process'"),
    ({"type": "ok", "process": 0, "f": 5}, "'f' must be a string"),
])
def test_writer_rejects_malformed_ops(tmp_path, kwargs, msg):
    with HistoryWriter(tmp_path / "h.jsonl") as w:
        with pytest.raises(HistoryError, match=msg):
            w.append(value=None, **kwargs)
        # nothing written, index not consumed
        assert w.invoke(0, "read", None)["index"] == 0


def test_writer_complete_rejects_bad_type_and_non_invoke(tmp_path):
    with HistoryWriter(tmp_path / "h.jsonl") as w:
        inv = w.invoke(0, "append", 1)
        with pytest.raises(HistoryError, match="completion type"):
            w.complete(inv, "invoke", 1)
        ok = w.complete(inv, "ok", {"value": 1, "offset": 0, "epoch": 1})
        with pytest.raises(HistoryError, match="needs an invoke"):
            w.complete(ok, "ok", None)


def test_writer_after_close_raises(tmp_path):
    w = HistoryWriter(tmp_path / "h.jsonl")
    w.close()
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.invoke(0, "read", None)


def test_writer_is_thread_safe(tmp_path):
    path = tmp_path / "h.jsonl"
    w = HistoryWriter(path)

    def worker(p):
        for i in range(200):
            inv = w.invoke(p, "append", p * 1000 + i)
            w.complete(inv, "ok", {"value": p * 1000 + i, "offset": 0, "epoch": 1})

    threads = [threading.Thread(target=worker, args=(p,)) for p in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    ops = read_history(path)          # validates dense indices in file order
    assert len(ops) == 8 * 200 * 2
    times = [o["time"] for o in ops]
    assert times == sorted(times)
    pairs = pair_ops(ops)
    assert len(pairs) == 1600 and all(c is not None for _, c in pairs)


def test_writer_from_asyncio_tasks(tmp_path):
    path = tmp_path / "h.jsonl"

    async def main():
        w = HistoryWriter(path)

        async def client(p):
            inv = w.invoke(p, "read", None)
            await asyncio.sleep(0.001 * (3 - p))
            w.complete(inv, "ok", None)

        await asyncio.gather(*(client(p) for p in range(3)))
        w.close()

    asyncio.run(main())
    ops = read_history(path)
    assert [o["type"] for o in ops[:3]] == ["invoke"] * 3
    # completions in reverse process order (longer sleeps first)
    assert [o["process"] for o in ops[3:]] == [2, 1, 0]


def _write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines))


def _op(i, **kw):
    o = {"index": i, "time": i * 10, "type": "invoke", "process": 0, "f": "read", "value": None}
    o.update(kw)
    return json.dumps(o)


def test_read_history_truncated_line_names_file_and_line(tmp_path):
    path = tmp_path / "history.jsonl"
    lines = [_op(0), _op(1, type="ok"), _op(2)[:17]]
    path.write_text("\n".join(lines))       # crash mid-write: no trailing newline
    with pytest.raises(HistoryError, match=r"^history\.jsonl:3: truncated or invalid JSON"):
        read_history(path)


def test_read_history_skips_blank_lines_and_counts_them(tmp_path):
    path = tmp_path / "history.jsonl"
    _write_lines(path, [_op(0), "", _op(1, type="ok"), "  ", _op(2, process="x")])
    with pytest.raises(HistoryError, match=r"history\.jsonl:5: 'process' must be an int"):
        read_history(path)
    _write_lines(path, [_op(0), "", _op(1, type="ok")])
    assert len(read_history(path)) == 2


@pytest.mark.parametrize("line, msg", [
    ('[1, 2]', "expected a JSON object, got list"),
    (json.dumps({"index": 0, "time": 0, "type": "ok", "process": 0}), "missing field 'f'"),
    (_op(0, time=1.5), "'time' must be an int"),
    (_op(0, index="0"), "'index' must be a non-negative int"),
    (_op(0, type="begin"), "'type' must be one of"),
    (_op(0, f=None), "'f' must be a string"),
    (_op(0, node=3), "'node' must be a string"),
    (_op(1), "index 1 out of sequence \\(expected 0"),
])
def test_read_history_validates_fields(tmp_path, line, msg):
    path = tmp_path / "h.jsonl"
    _write_lines(path, [line])
    with pytest.raises(HistoryError, match="h.jsonl:1: " + msg):
        read_history(path)


def test_read_history_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_history(tmp_path / "nope.jsonl")


def _ops(*specs):
    """specs: (type, process, f)."""
    return [{"index": i, "time": i, "type": t, "process": p, "f": f, "value": None}
            for i, (t, p, f) in enumerate(specs)]


def test_pair_ops_pairs_by_process_with_nemesis_interleaved():
    ops = _ops(("invoke", 0, "append"), ("invoke", "nemesis", "start-kill"), ("invoke", 1, "read"),
               ("info", "nemesis", "start-kill"), ("ok", 1, "read"), ("info", 0, "append"),
               ("invoke", 2, "append"), ("invoke", 1, "read"), ("fail", 1, "read"))
    pairs = pair_ops(ops)
    got = [(i["index"], c["index"] if c else None) for i, c in pairs]
    assert got == [(0, 5), (1, 3), (2, 4), (6, None), (7, 8)]


def test_pair_ops_rejects_overlap_orphan_and_mismatched_f():
    with pytest.raises(HistoryError, match="op 1: process 0 invokes while op 0"):
        pair_ops(_ops(("invoke", 0, "read"), ("invoke", 0, "read")))
    with pytest.raises(HistoryError, match="op 0: ok for process 3 with no invoke"):
        pair_ops(_ops(("ok", 3, "read")))
    with pytest.raises(HistoryError, match="op 1: completion f 'append'"):
        pair_ops(_ops(("invoke", 0, "read"), ("ok", 0, "append")))
