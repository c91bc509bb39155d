"""``linearizability.html``: one standalone page that shows a linearizability explanation.

The page is drawn the way porcupine's visualization draws it: one horizontal
lane per process, each op a bar from its call to its return (an op open to
+infinity runs to the right edge, fading, labelled "crashed"), one block per
partition. The shown (partial) linearization numbers its ops in order and
colours them green; the op that cannot be placed is red; other ops are grey.
Hovering an op shows its times and the model state before and after it;
clicking one selects the longest linearization that contains it.

The explanation is embedded untouched as JSON in a
``<script type="application/json">`` tag; the CSS and the vanilla JS come
from ``html_assets/`` and are inlined, so the file needs nothing else (no
network). The summary sentences are rendered here, so they read without JS.

Explanation shape (produced by the checker)::

    {"model": str, "valid": true | false | "unknown", "time_unit": "ns" | "event",
     "partitions": [{"key": str | number | null (any JSON), "valid": ..., "initial_state": str,
                     "ops": [{"id": int, "process": int | str, "call": number,
                              "return": number | null, "desc": str, "index": int | null}],
                     "linearizations": [[{"id": int, "state": str}, ...], ...],
                     "largest": {"<op id>": index into linearizations},
                     "stuck": null | {"id", "desc", "process", "state", "needs", "after"}}]}

``call`` / ``return`` are ns since the test started (``time_unit`` "ns") or
event positions ("event"). Each linearization lists ops in order with the
model state right after each; ``stuck.after`` is the length of the prefix
that could be linearized before the stuck op.
"""
from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path
from typing import Any

#: File name the checker writes next to ``results.json``.
HTML_NAME = "linearizability.html"
VERDICTS = (True, False, "unknown")
TIME_UNITS = ("ns", "event")
_ASSETS = Path(__file__).with_name("html_assets")
#: Characters that must not appear raw inside an inline <script> (JSON escapes keep the value).
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                   "\u2028": "\\u2028", "\u2029": "\\u2029"}


def render_html(explanation: dict) -> str:
    """The page for ``explanation`` (shape in the module docstring), as one HTML string.

    Raises ``ValueError`` naming the first missing or bad field (for example
    ``partitions[0].linearizations[1][3].id``) when the explanation is malformed,
    or when it is not JSON-able.
    """
    _validate(explanation)
    try:
        data = json.dumps(explanation, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise ValueError(f"explanation: not JSON-able: {e}") from None
    for ch, esc in _SCRIPT_ESCAPES.items():
        data = data.replace(ch, esc)
    css = (_ASSETS / "visualize.css").read_text(encoding="utf-8")
    js = (_ASSETS / "visualize.js").read_text(encoding="utf-8")
    verdict = _verdict_word(explanation["valid"])
    title = f"Linearizability: {explanation['model']}: {verdict}"
    return _PAGE.format(
        title=_esc(title), css=css, js=js, data=data,
        summary=_summary(explanation), legend=_LEGEND)


def write_html(explanation: dict, path: Path) -> Path:
    """Render ``explanation`` and write it to ``path`` atomically (temp file + rename).

    ``path`` is the HTML file; when it is an existing directory the file is
    ``path / "linearizability.html"``. Returns the file written. Raises
    ``ValueError`` as :func:`render_html` does (nothing is written then) and
    ``OSError`` when the file cannot be written.
    """
    path = Path(path)
    if path.is_dir():
        path = path / HTML_NAME
    text = render_html(explanation)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def stuck_sentence(partition: dict) -> str | None:
    """The summary sentence for a partition's stuck op (plain text), or None when none.

    "partition key=k3: after 14 linearized ops (state: 2), op #37 read() -> 5
    by process 4 cannot be placed: it needs value = 5", where #37 is the op's
    history index (``op id=5`` when the index is unknown).
    """
    stuck = partition.get("stuck")
    if not stuck:
        return None
    op = next((o for o in partition["ops"] if o["id"] == stuck["id"]), {})
    name = f"op #{op['index']}" if op.get("index") is not None else f"op id={stuck['id']}"
    desc = stuck.get("desc") if stuck.get("desc") is not None else op.get("desc", "")
    process = stuck.get("process") if stuck.get("process") is not None else op.get("process")
    text = (f"{_partition_name(partition['key'])}: after {stuck['after']} linearized "
            f"op{'' if stuck['after'] == 1 else 's'} (state: {_show(stuck.get('state'))}), "
            f"{name} {desc} by process {process} cannot be placed")
    needs = stuck.get("needs")
    return text + (f": it needs {_show(needs)}" if needs not in (None, "") else "")


# --- validation -------------------------------------------------------------


def _fail(field: str, why: str) -> None:
    raise ValueError(f"linearizability explanation: {field}: {why}")


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _need(obj: dict, key: str, where: str) -> Any:
    if key not in obj:
        _fail(f"{where}.{key}" if where else key, "missing")
    return obj[key]


def _validate(ex: Any) -> None:
    if not isinstance(ex, dict):
        _fail("explanation", f"expected a dict, got {type(ex).__name__}")
    _need(ex, "model", "")
    if _need(ex, "valid", "") not in VERDICTS:
        _fail("valid", f"expected true, false or \"unknown\", got {ex['valid']!r}")
    if _need(ex, "time_unit", "") not in TIME_UNITS:
        _fail("time_unit", f"expected one of {TIME_UNITS}, got {ex['time_unit']!r}")
    parts = _need(ex, "partitions", "")
    if not isinstance(parts, list):
        _fail("partitions", "expected a list")
    for i, p in enumerate(parts):
        _validate_partition(p, f"partitions[{i}]")


def _validate_partition(p: Any, where: str) -> None:
    if not isinstance(p, dict):
        _fail(where, "expected a dict")
    _need(p, "key", where)  # any JSON value; null when the history is not partitioned
    if _need(p, "valid", where) not in VERDICTS:
        _fail(f"{where}.valid", f"expected true, false or \"unknown\", got {p['valid']!r}")
    _need(p, "initial_state", where)
    ops = _need(p, "ops", where)
    if not isinstance(ops, list):
        _fail(f"{where}.ops", "expected a list")
    ids: set = set()
    for j, op in enumerate(ops):
        w = f"{where}.ops[{j}]"
        if not isinstance(op, dict):
            _fail(w, "expected a dict")
        if not _is_int(_need(op, "id", w)):
            _fail(f"{w}.id", f"expected an int, got {op['id']!r}")
        if op["id"] in ids:
            _fail(f"{w}.id", f"duplicate op id {op['id']}")
        ids.add(op["id"])
        if isinstance(_need(op, "process", w), (dict, list)) or op["process"] is None:
            _fail(f"{w}.process", f"expected an int or a string, got {op['process']!r}")
        if not _is_num(_need(op, "call", w)):
            _fail(f"{w}.call", f"expected a finite number, got {op['call']!r}")
        ret = _need(op, "return", w)
        if ret is not None and (not _is_num(ret) or ret < op["call"]):
            _fail(f"{w}.return", f"expected null or a number >= call ({op['call']}), got {ret!r}")
        if not isinstance(_need(op, "desc", w), str):
            _fail(f"{w}.desc", f"expected a string, got {op['desc']!r}")
        if op.get("index") is not None and not _is_int(op["index"]):
            _fail(f"{w}.index", f"expected an int or null, got {op['index']!r}")
    lins = _need(p, "linearizations", where)
    if not isinstance(lins, list):
        _fail(f"{where}.linearizations", "expected a list")
    members: list[set] = []
    for k, lin in enumerate(lins):
        w = f"{where}.linearizations[{k}]"
        if not isinstance(lin, list):
            _fail(w, "expected a list")
        seen: set = set()
        for n, step in enumerate(lin):
            if not isinstance(step, dict):
                _fail(f"{w}[{n}]", "expected a dict")
            if not _is_int(_need(step, "id", f"{w}[{n}]")) or step["id"] not in ids:
                _fail(f"{w}[{n}].id", f"op {step['id']!r} is not in {where}.ops")
            if step["id"] in seen:
                _fail(f"{w}[{n}].id", f"op {step['id']} appears twice")
            seen.add(step["id"])
            _need(step, "state", f"{w}[{n}]")
        members.append(seen)
    largest = _need(p, "largest", where)
    if not isinstance(largest, dict):
        _fail(f"{where}.largest", "expected a dict")
    for op_id, k in largest.items():
        w = f"{where}.largest[{op_id!r}]"
        try:
            oid = int(op_id)
        except (TypeError, ValueError):
            _fail(w, "key is not an op id")
        if oid not in ids:
            _fail(w, f"op {op_id} is not in {where}.ops")
        if not _is_int(k) or not 0 <= k < len(lins):
            _fail(w, f"expected an index into {where}.linearizations (0..{len(lins) - 1}), got {k!r}")
        if oid not in members[k]:
            _fail(w, f"linearization {k} does not contain op {op_id}")
    stuck = _need(p, "stuck", where)
    if stuck is not None:
        w = f"{where}.stuck"
        if not isinstance(stuck, dict):
            _fail(w, "expected a dict or null")
        if not _is_int(_need(stuck, "id", w)) or stuck["id"] not in ids:
            _fail(f"{w}.id", f"op {stuck['id']!r} is not in {where}.ops")
        after = _need(stuck, "after", w)
        if not _is_int(after) or after < 0:
            _fail(f"{w}.after", f"expected an int >= 0, got {after!r}")


# --- static HTML ------------------------------------------------------------


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _show(x: Any) -> str:
    """A state or a value as text: strings as they are, anything else as JSON."""
    if isinstance(x, str):
        return x
    try:
        return json.dumps(x, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(x)


def _verdict_word(v: Any) -> str:
    return {True: "valid", False: "INVALID"}.get(v, "unknown") if v in VERDICTS else "unknown"


def _verdict_class(v: Any) -> str:
    return {True: "ok", False: "bad"}.get(v, "unk") if v in VERDICTS else "unk"


def _partition_name(key: Any) -> str:
    return "whole history" if key is None else f"partition key={_show(key)}"


def _summary(ex: dict) -> str:
    parts = ex["partitions"]
    counts = {v: sum(1 for p in parts if p["valid"] is v) for v in (True, False)}
    unknown = len(parts) - counts[True] - counts[False]
    n_ops = sum(len(p["ops"]) for p in parts)
    unit = "ns since the test started" if ex["time_unit"] == "ns" else "event positions"
    lines = [
        f'<div class="verdict {_verdict_class(ex["valid"])}">{_esc(_verdict_word(ex["valid"]))}</div>',
        '<div class="facts">',
        f'<div><b>model</b> {_esc(_show(ex["model"]))}</div>',
        f'<div><b>partitions</b> {len(parts)}: {counts[True]} valid, {counts[False]} invalid, '
        f'{unknown} unknown &middot; <b>ops</b> {n_ops} &middot; <b>times</b> {_esc(unit)}</div>',
        '</div>',
    ]
    items = []
    for i, p in enumerate(parts):
        sentence = stuck_sentence(p)
        if sentence is not None:
            items.append(f'<li class="bad"><a href="#part-{i}" data-part="{i}" data-op="{_esc(p["stuck"]["id"])}">'
                         f'{_esc(sentence)}</a></li>')
        elif p["valid"] is False:
            items.append(f'<li class="bad"><a href="#part-{i}">{_esc(_partition_name(p["key"]))}: '
                         f'not linearizable</a></li>')
        elif p["valid"] not in (True, False):
            items.append(f'<li class="unk"><a href="#part-{i}">{_esc(_partition_name(p["key"]))}: '
                         f'unknown (the search did not finish)</a></li>')
    if items:
        lines.append('<ul class="problems">' + "".join(items) + "</ul>")
    return "\n".join(lines)


_LEGEND = """<div class="legend">
<span><i class="sw lin"></i>in the shown linearization (badge = position)</span>
<span><i class="sw stuck"></i>cannot be placed</span>
<span><i class="sw other"></i>not in the shown linearization</span>
<span><i class="sw crashed"></i>crashed (open to +&infin;)</span>
<span class="hint">hover: details &middot; click an op: longest linearization containing it &middot;
click the background: back to the longest &middot; ctrl+wheel or the slider: zoom</span>
</div>"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{css}
</style>
</head>
<body>
<header id="top">
<h1>{title}</h1>
<section class="summary">
{summary}
</section>
{legend}
<div class="toolbar" id="toolbar" hidden>
<label>zoom <input type="range" id="zoom" min="0" max="1000" value="0"></label>
<button type="button" id="fit">fit</button>
<label>x axis <select id="scale"><option value="time">real time</option>
<option value="order">event order (gaps removed)</option></select></label>
<span id="zoom-label"></span>
</div>
</header>
<main id="partitions"><noscript>The timeline needs JavaScript; the summary above does not.</noscript></main>
<div id="tooltip" role="tooltip" hidden></div>
<script type="application/json" id="lin-data">{data}</script>
<script>
{js}
</script>
</body>
</html>
"""
