"""Tests for checkers/linearizability/html.py (linearizability.html)."""
import copy
import html
import json
import math
import re
from html.parser import HTMLParser

import pytest

from checkers.linearizability.html import HTML_NAME, render_html, stuck_sentence, write_html

MS = 1_000_000
DATA_RE = re.compile(r'<script type="application/json" id="lin-data">(.*?)</script>', re.S)


def stale_read() -> dict:
    """Two processes: write(1) completes, then a read returns nil (stale) and cannot be placed."""
    ops = [
        {"id": 0, "process": 0, "call": 0, "return": 1 * MS, "desc": "read() -> nil", "index": 0},
        {"id": 1, "process": 1, "call": 1 * MS, "return": 3 * MS, "desc": "write(1)", "index": 2},
        {"id": 2, "process": 0, "call": 5 * MS, "return": 6 * MS, "desc": "read() -> nil", "index": 6},
        {"id": 3, "process": 1, "call": 7 * MS, "return": None, "desc": "write(2)", "index": 8},
    ]
    part = {"key": "x", "valid": False, "initial_state": "nil", "ops": ops,
            "linearizations": [[{"id": 0, "state": "nil"}, {"id": 1, "state": "1"}]],
            "largest": {"0": 0, "1": 0},
            "stuck": {"id": 2, "desc": "read() -> nil", "process": 0, "state": "1",
                      "needs": "value = nil", "after": 2}}
    ok = {"key": "y", "valid": True, "initial_state": "nil",
          "ops": [{"id": 0, "process": 0, "call": 2 * MS, "return": 4 * MS, "desc": "write(7)", "index": 1}],
          "linearizations": [[{"id": 0, "state": "7"}]], "largest": {"0": 0}, "stuck": None}
    return {"model": "register", "valid": False, "time_unit": "ns", "partitions": [part, ok]}


def embedded(page: str) -> dict:
    [blob] = DATA_RE.findall(page)
    return json.loads(blob)


class Tags(HTMLParser):
    """Every start tag of a page."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def tags(page: str) -> set[str]:
    p = Tags()
    p.feed(page)
    return set(p.tags)


def test_embedded_json_round_trips():
    ex = stale_read()
    page = render_html(ex)
    assert embedded(page) == ex
    assert page.startswith("<!DOCTYPE html>")
    # one standalone file: CSS and JS inline, nothing fetched
    assert "<link" not in page and " src=" not in page and "http://" not in page.replace(
        "http://www.w3.org/2000/svg", "")
    assert "<style>" in page and "getElementById('lin-data')" in page


def test_hostile_strings_are_escaped_everywhere():
    evil = "</script><img src=x onerror=alert(1)>\"'&<marquee>"
    ex = stale_read()
    ex["model"] = evil
    part = ex["partitions"][0]
    part["key"] = evil
    part["initial_state"] = evil
    for op in part["ops"]:
        op["desc"] = evil + op["desc"]
    part["ops"][1]["process"] = evil
    part["linearizations"][0][1]["state"] = "</SCRIPT >" + evil
    part["stuck"].update(desc=evil, state=evil, needs=evil, process=evil)
    page = render_html(ex)
    assert "<img" not in page and "<marquee" not in page
    assert page.lower().count("</script") == 2  # the data tag's and the code tag's own
    assert page.lower().count("<script") == 2
    # only the page's own elements: nothing from the history became markup
    assert tags(page) <= {"html", "head", "meta", "title", "style", "body", "header", "h1", "section",
                          "div", "b", "ul", "li", "a", "span", "i", "label", "input", "button",
                          "select", "option", "main", "noscript", "script"}
    assert embedded(page) == ex  # escaped, yet the same values come back
    # the summary shows the text, escaped
    assert html.escape(stuck_sentence(part)) in page


def test_stuck_sentence_in_the_summary():
    ex = stale_read()
    sentence = ("partition key=x: after 2 linearized ops (state: 1), op #6 read() -> nil by process 0 "
                "cannot be placed: it needs value = nil")
    assert stuck_sentence(ex["partitions"][0]) == sentence
    page = render_html(ex)
    assert html.escape(sentence) in page
    assert stuck_sentence(ex["partitions"][1]) is None  # the valid partition
    assert '<div class="verdict bad">INVALID</div>' in page
    assert "<b>model</b> register" in page
    assert "2: 1 valid, 1 invalid, 0 unknown" in page


def test_stuck_sentence_shapes():
    part = {"key": "k3", "ops": [{"id": 5, "process": 4, "index": 37, "desc": "read() -> 5"}],
            "stuck": {"id": 5, "desc": "read() -> 5", "process": 4, "state": "2", "needs": "value = 5",
                      "after": 14}}
    assert stuck_sentence(part) == ("partition key=k3: after 14 linearized ops (state: 2), op #37 read() -> 5 "
                                    "by process 4 cannot be placed: it needs value = 5")
    part["key"], part["ops"][0]["index"], part["stuck"]["after"], part["stuck"]["needs"] = None, None, 1, None
    assert stuck_sentence(part) == ("whole history: after 1 linearized op (state: 2), op id=5 read() -> 5 "
                                    "by process 4 cannot be placed")
    part["key"] = 3
    assert stuck_sentence(part).startswith("partition key=3: ")


def test_unknown_partition_and_event_times():
    ex = stale_read()
    ex["valid"] = "unknown"
    ex["time_unit"] = "event"
    ex["partitions"][1].update(valid="unknown", linearizations=[], largest={})
    page = render_html(ex)
    assert '<div class="verdict unk">unknown</div>' in page
    assert "partition key=y: unknown (the search did not finish)" in page
    assert "event positions" in page
    assert embedded(page) == ex


def test_many_ops_render():
    ops = [{"id": i, "process": i % 7, "call": i * 10, "return": i * 10 + 25, "desc": f"write({i})",
            "index": i} for i in range(600)]
    lin = [{"id": i, "state": str(i)} for i in range(600)]
    ex = {"model": "register", "valid": True, "time_unit": "event",
          "partitions": [{"key": None, "valid": True, "initial_state": "nil", "ops": ops,
                          "linearizations": [lin], "largest": {str(i): 0 for i in range(600)},
                          "stuck": None}]}
    page = render_html(ex)
    assert embedded(page) == ex
    assert '<div class="verdict ok">valid</div>' in page


def _bad(path: str, value, *, delete: bool = False):
    """A stale_read() explanation with the field at ``path`` (dotted, ints index lists) set or deleted."""
    ex = copy.deepcopy(stale_read())
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]
    obj = ex
    for k in parents:
        obj = obj[k]
    if delete:
        del obj[last]
    else:
        obj[last] = value
    return ex


@pytest.mark.parametrize("ex, field", [
    (_bad("partitions", None, delete=True), "partitions: missing"),
    (_bad("model", None, delete=True), "model: missing"),
    (_bad("valid", "maybe"), "valid"),
    (_bad("time_unit", "s"), "time_unit"),
    (_bad("partitions.0.ops.1.desc", None, delete=True), "partitions[0].ops[1].desc: missing"),
    (_bad("partitions.0.ops.1.id", 0), "partitions[0].ops[1].id: duplicate"),
    (_bad("partitions.0.ops.1.call", math.nan), "partitions[0].ops[1].call"),
    (_bad("partitions.0.ops.1.return", 1), "partitions[0].ops[1].return"),
    (_bad("partitions.0.linearizations.0.1.id", 99), "partitions[0].linearizations[0][1].id: op 99 is not"),
    (_bad("partitions.0.linearizations.0.1.state", None, delete=True),
     "partitions[0].linearizations[0][1].state: missing"),
    (_bad("partitions.0.largest", {"0": 3}), "partitions[0].largest['0']"),
    (_bad("partitions.0.largest", {"2": 0}), "partitions[0].largest['2']: linearization 0 does not contain"),
    (_bad("partitions.0.largest", {"42": 0}), "partitions[0].largest['42']: op 42 is not"),
    (_bad("partitions.0.stuck.id", 42), "partitions[0].stuck.id: op 42 is not"),
    (_bad("partitions.0.stuck.after", None, delete=True), "partitions[0].stuck.after: missing"),
    (_bad("partitions.1.initial_state", None, delete=True), "partitions[1].initial_state: missing"),
    (_bad("partitions.1.stuck", None, delete=True), "partitions[1].stuck: missing"),
    ([], "explanation: expected a dict"),
])
def test_malformed_explanation_names_the_field(ex, field):
    with pytest.raises(ValueError) as e:
        render_html(ex)
    assert field in str(e.value)


def test_not_json_able_is_a_value_error():
    ex = stale_read()
    ex["partitions"][0]["initial_state"] = {1, 2}
    with pytest.raises(ValueError, match="not JSON-able"):
        render_html(ex)


def test_write_html_writes_atomically(tmp_path):
    ex = stale_read()
    out = write_html(ex, tmp_path / "lin.html")
    assert out == tmp_path / "lin.html"
    assert out.read_text(encoding="utf-8") == render_html(ex)
    assert [p.name for p in tmp_path.iterdir()] == ["lin.html"]  # no temp file left
    # a directory gets linearizability.html; an existing file is replaced
    assert write_html(ex, tmp_path) == tmp_path / HTML_NAME
    ex["model"] = "cas-register"
    write_html(ex, tmp_path / HTML_NAME)
    assert embedded((tmp_path / HTML_NAME).read_text(encoding="utf-8"))["model"] == "cas-register"


def test_write_html_writes_nothing_for_a_bad_explanation(tmp_path):
    ex = stale_read()
    del ex["partitions"][0]["ops"][0]["call"]
    with pytest.raises(ValueError, match=re.escape("partitions[0].ops[0].call")):
        write_html(ex, tmp_path / "lin.html")
    assert list(tmp_path.iterdir()) == []
