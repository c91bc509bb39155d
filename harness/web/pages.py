"""The HTML pages of ``kraft-chaos serve`` (harness/web/serve.py routes to them).

Every function returns one page as a string; everything taken from the store (names, values,
log lines) is HTML-escaped here. URLs (:func:`url`): ``/run/<rel>`` a run, ``/results/<rel>``
its results.json, ``/history/<rel>?page=N`` its history, ``/timeline/<rel>`` its timeline,
``/quantiles/<rel>`` its latency-quantiles plot drawn on demand, ``/browse/<path>`` a folder,
``/file/<path>`` a file as it is; ``<rel>`` is a path under the store.
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote, urlencode

from checkers.kind_names import current_results
from harness.reports.summary import format_results
from harness.web.store_view import VERDICTS, RunSummary
from history import store

VERDICT_COLOURS = {"valid": "#2E7D32", "invalid": "#C62828", "unknown": "#EF6C00",
                   "incomplete": "#757575"}
TYPE_COLOURS = {"ok": "#1565C0", "fail": "#AD1457", "info": "#E65100", "invoke": "#555"}
#: Longest JSON shown inline for one results.json field (the rest is in the raw file).
FIELD_CHARS = 20_000
#: Anomalies shown per checker on the results page.
ANOMALIES_SHOWN = 50
#: Longest value shown per history row.
VALUE_CHARS = 300

_CSS = """
body{font:14px system-ui,sans-serif;margin:0;color:#222}
header{background:#263238;color:#fff;padding:8px 16px}header a{color:#fff}
main{padding:12px 16px}table{border-collapse:collapse}td,th{padding:3px 8px;text-align:left;
border-bottom:1px solid #eee;vertical-align:top}th{background:#fafafa}
.badge{color:#fff;border-radius:3px;padding:1px 6px;font-size:12px}
pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:40em}code,pre,.mono{font-family:ui-monospace,monospace;font-size:12px}
img{max-width:100%;border:1px solid #ddd;margin:4px 0}form{margin:8px 0}
.muted{color:#777}.pager a,.pager span{margin-right:10px}details{margin:6px 0}
"""


def esc(x: Any) -> str:
    """``x`` as text, HTML-escaped (quotes too)."""
    return html.escape(str(x), quote=True)


def url(kind: str, rel: str = "", **query: Any) -> str:
    """``/<kind>/<rel>`` with ``rel`` percent-encoded and the non-None ``query`` appended."""
    q = {k: v for k, v in query.items() if v is not None}
    return f"/{kind}/{quote(rel, safe='/')}" + (f"?{urlencode(q)}" if q else "")


def badge(verdict: str) -> str:
    colour = VERDICT_COLOURS.get(verdict, "#757575")
    return f'<span class="badge" style="background:{colour}">{esc(verdict)}</span>'


def page(title: str, body: str, crumbs: Iterable[tuple[str, str | None]] = ()) -> str:
    """A whole page: a header with the breadcrumbs (label, href or None), then ``body``."""
    trail = " / ".join(f'<a href="{esc(h)}">{esc(t)}</a>' if h else esc(t)
                       for t, h in [("runs", "/"), *crumbs])
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{_CSS}</style></head><body><header>{trail}</header><main>{body}</main></body></html>")


def error_page(status: int, message: str) -> str:
    return page(f"{status}", f"<h2>{status}</h2><p>{esc(message)}</p>")


def _crumbs(rel: str, last: str | None = None) -> list[tuple[str, str | None]]:
    out = [(rel, url("run", rel) if last else None)]
    return out + ([(last, None)] if last else [])


def index_page(runs: list[RunSummary], verdict: str | None, test: str | None) -> str:
    """The list of runs (already newest first), filtered by ``verdict`` and ``test`` (None: all),
    with the filter form and the counts per verdict."""
    tests = sorted({r.test for r in runs})
    shown = [r for r in runs if (not verdict or r.verdict == verdict) and (not test or r.test == test)]
    counts = {v: sum(1 for r in runs if r.verdict == v) for v in VERDICTS}

    def options(values: list[str], chosen: str | None) -> str:
        return '<option value="">all</option>' + "".join(
            f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>' for v in values)
    form = (f'<form method="get" action="/">verdict <select name="verdict">{options(list(VERDICTS), verdict)}'
            f'</select> test <select name="test">{options(tests, test)}</select> '
            f'<button type="submit">filter</button> <a href="/">clear</a></form>')
    summary = ", ".join(f"{n} {badge(v)}" for v, n in counts.items() if n)
    rows = []
    for r in shown:
        anomalies = ", ".join(f"{esc(k)} {esc(n)}" for k, n in r.anomalies.items()) or '<span class="muted">none</span>'
        what = " ".join(esc(x) for x in (r.db, r.workload) if x)
        rows.append(
            f'<tr class="run" data-verdict="{esc(r.verdict)}" data-test="{esc(r.test)}">'
            f'<td><a href="{esc(url("run", r.rel))}">{esc(r.test)}</a></td>'
            f'<td class="mono">{esc(r.when.strftime("%Y-%m-%d %H:%M:%S"))}Z</td>'
            f"<td>{badge(r.verdict)}</td><td>{anomalies}</td><td class=\"mono\">{esc(r.seed)}</td>"
            f'<td class="muted">{what}</td></tr>')
    table = ("<table><tr><th>test</th><th>date (UTC)</th><th>verdict</th><th>anomalies</th>"
             f"<th>seed</th><th>target</th></tr>{''.join(rows)}</table>") if rows else "<p>No runs match.</p>"
    body = (f"<h2>Runs</h2><p>{len(runs)} run(s): {summary or 'none'}; {len(shown)} shown. "
            f'<a href="/browse/">browse the store</a></p>{form}{table}')
    return page("kraft-chaos runs", body)


def _files_list(root: Path, folder: Path) -> str:
    """Links to the files of ``folder`` (a run's node folder), and its subfolders to browse."""
    items = []
    for p in sorted(folder.iterdir(), key=lambda p: p.name):
        if p.name.startswith("."):
            continue
        rel = p.relative_to(root).as_posix()
        if p.is_dir():
            items.append(f'<a href="{esc(url("browse", rel))}">{esc(p.name)}/</a>')
        else:
            items.append(f'<a href="{esc(url("file", rel))}">{esc(p.name)}</a>')
    return " · ".join(items) or '<span class="muted">empty</span>'


def run_page(root: Path, run_dir: Path, summary: RunSummary, results: dict | None,
             test: dict | None, lin_html: str | None) -> str:
    """A run: verdict and summary, links to its pages and files, its plots, its nodes' files.
    ``lin_html``: the store path of its linearizability.html, if it has one."""
    rel = summary.rel
    links = [f'<a href="{esc(url("results", rel))}">results</a>',
             f'<a href="{esc(url("history", rel))}">history (paged)</a>',
             f'<a href="{esc(url("timeline", rel))}">timeline</a>']
    if lin_html:
        links.append(f'<a href="{esc(url("file", lin_html))}">linearizability</a>')
    files = [p for p in sorted(run_dir.iterdir()) if p.is_file() and not p.name.startswith(".")]
    raw = " · ".join(f'<a href="{esc(url("file", p.relative_to(root).as_posix()))}">{esc(p.name)}</a>'
                     for p in files)
    parts = [f"<h2>{esc(summary.test)} {badge(summary.verdict)}</h2>",
             f'<p class="mono">{esc(rel)} · {esc(summary.when.isoformat())}</p>',
             f"<p>{' · '.join(links)}</p><p>files: {raw}</p>"]
    if test:
        parts.append(f"<p>seed <code>{esc(test.get('seed'))}</code> · commit <code>{esc(test.get('commit'))}</code></p>"
                     f"<pre>{esc(test.get('command') or '')}</pre>")
    if summary.error:
        parts.append(f'<p style="color:#C62828">{esc(summary.error)}</p>')
    if results:
        parts.append(f"<h3>Summary</h3><pre>{esc(format_results(results))}</pre>")
    pngs = [p for p in files if p.suffix == ".png"]
    imgs = [f'<figure><img alt="{esc(p.name)}" src="{esc(url("file", p.relative_to(root).as_posix()))}">'
            f"<figcaption>{esc(p.name)}</figcaption></figure>" for p in pngs]
    if not any(p.name == "latency-quantiles.png" for p in pngs) and (run_dir / store.HISTORY).is_file():
        imgs.append(f'<figure><img alt="latency-quantiles" loading="lazy" src="{esc(url("quantiles", rel))}">'
                    "<figcaption>latency-quantiles (drawn now; not in the run's folder)</figcaption></figure>")
    if imgs:
        parts.append("<h3>Plots</h3>" + "".join(imgs))
    nodes = store.nodes_dir(run_dir)
    if nodes.is_dir():
        rows = [f"<tr><th>{esc(n.name)}</th><td>{_files_list(root, n)}</td></tr>"
                for n in sorted(nodes.iterdir()) if n.is_dir()]
        parts.append("<h3>Nodes</h3>" + (f"<table>{''.join(rows)}</table>" if rows else "<p>none collected</p>"))
    if test and isinstance(test.get("config"), dict):
        parts.append(f"<details><summary>config</summary><pre>{esc(json.dumps(test['config'], indent=2))}</pre></details>")
    return page(f"{summary.test} {summary.verdict}", "".join(parts), _crumbs(rel))


def _json_block(value: Any, raw_href: str) -> str:
    text = json.dumps(value, indent=2, default=str)
    if len(text) > FIELD_CHARS:
        text = text[:FIELD_CHARS] + f"\n… {len(text) - FIELD_CHARS:,} more characters"
        return f'<pre>{esc(text)}</pre><p><a href="{esc(raw_href)}">the whole results.json</a></p>'
    return f"<pre>{esc(text)}</pre>"


def results_page(rel: str, results: Any, raw_href: str) -> str:
    """results.json readably: the verdict, a table of checkers, then each checker's anomalies
    (the first :data:`ANOMALIES_SHOWN`) and other fields, then the stats. Checkers and counts
    go by today's names (an older run's ``queue-*`` ones as checkers/kind_names.py says)."""
    if not isinstance(results, dict):
        return page("results", f"<p>results.json is not an object.</p>{_json_block(results, raw_href)}",
                    _crumbs(rel, "results"))
    results = current_results(results)
    verdict = {True: "valid", False: "invalid"}.get(results.get("valid"), "unknown")
    checkers = results.get("checkers") if isinstance(results.get("checkers"), dict) else {}
    counts = results.get("anomalies") if isinstance(results.get("anomalies"), dict) else {}
    rows = []
    for name in sorted(set(checkers) | set(counts)):
        r = checkers.get(name) if isinstance(checkers.get(name), dict) else {}
        v = {True: "valid", False: "invalid"}.get(r.get("valid"), "unknown")
        rows.append(f'<tr><td><a href="#c-{esc(name)}">{esc(name)}</a></td><td>{badge(v)}</td>'
                    f"<td>{esc(counts.get(name, ''))}</td></tr>")
    parts = [f"<h2>results {badge(verdict)}</h2>",
             f'<p><a href="{esc(raw_href)}">results.json as it is</a></p>',
             f"<table><tr><th>checker</th><th>verdict</th><th>anomalies</th></tr>{''.join(rows)}</table>"]
    for name in sorted(checkers):
        r = checkers[name]
        if not isinstance(r, dict):
            parts.append(f'<h3 id="c-{esc(name)}">{esc(name)}</h3>{_json_block(r, raw_href)}')
            continue
        anomalies = r.get("anomalies") if isinstance(r.get("anomalies"), list) else []
        body = [f'<h3 id="c-{esc(name)}">{esc(name)} {badge({True: "valid", False: "invalid"}.get(r.get("valid"), "unknown"))}</h3>']
        if anomalies:
            more = f" (first {ANOMALIES_SHOWN} of {len(anomalies)})" if len(anomalies) > ANOMALIES_SHOWN else ""
            body.append(f"<p>{len(anomalies)} anomal{'y' if len(anomalies) == 1 else 'ies'}{more}</p>")
            body.append(_json_block(anomalies[:ANOMALIES_SHOWN], raw_href))
        rest = {k: v for k, v in r.items() if k not in ("valid", "anomalies")}
        if rest:
            body.append(f"<details{' open' if not anomalies else ''}><summary>details</summary>"
                        f"{_json_block(rest, raw_href)}</details>")
        parts.append("".join(body))
    if "stats" in results:
        parts.append(f"<h3>stats</h3>{_json_block(results['stats'], raw_href)}")
    if results.get("faults"):        # which faults landed (checkers/fault_report.py)
        parts.append(f"<h3>faults</h3>{_json_block(results['faults'], raw_href)}")
    return page(f"results {verdict}", "".join(parts), _crumbs(rel, "results"))


def _history_row(lineno: int, line: str) -> str:
    try:
        op = json.loads(line)
    except ValueError:
        op = None
    if not isinstance(op, dict):
        return f'<tr><td>{lineno}</td><td colspan="7" class="mono">{esc(line[:VALUE_CHARS])}</td></tr>'
    value = json.dumps(op.get("value"), default=str)
    if len(value) > VALUE_CHARS:
        value = value[:VALUE_CHARS] + "…"
    t = op.get("time")
    when = f"{t / 1e9:.6f}" if isinstance(t, (int, float)) else esc(t)
    typ = str(op.get("type"))
    return (f'<tr id="i{esc(op.get("index"))}"><td>{esc(op.get("index"))}</td><td class="mono">{when}</td>'
            f'<td style="color:{TYPE_COLOURS.get(typ, "#222")}">{esc(typ)}</td><td>{esc(op.get("process"))}</td>'
            f'<td>{esc(op.get("f"))}</td><td>{esc(op.get("node") or "")}</td>'
            f'<td class="mono">{esc(value)}</td><td>{esc(op.get("error") or "")}</td></tr>')


def history_page(rel: str, lines: list[str], page_no: int, size: int, total: int) -> str:
    """One page of history.jsonl (``page_no`` 0-based, ``size`` lines a page, ``total`` lines)."""
    pages = max(1, -(-total // size))
    first = page_no * size

    def link(p: int, label: str) -> str:
        if p < 0 or p >= pages or p == page_no:
            return f'<span class="muted">{esc(label)}</span>'
        return f'<a href="{esc(url("history", rel, page=p, size=size))}">{esc(label)}</a>'
    pager = (f'<p class="pager">{link(0, "« first")}{link(page_no - 1, "‹ previous")}'
             f"<span>page {page_no + 1} of {pages} (lines {first + 1 if lines else 0}–{first + len(lines)} "
             f"of {total:,})</span>{link(page_no + 1, 'next ›')}{link(pages - 1, 'last »')}</p>")
    jump = (f'<form method="get" action="{esc(url("history", rel))}">go to op index '
            f'<input name="index" type="number" min="0" size="8"><input type="hidden" name="size" value="{size}">'
            f' <button type="submit">go</button></form>')
    rows = "".join(_history_row(first + i, line) for i, line in enumerate(lines))
    table = ("<table><tr><th>index</th><th>time (s)</th><th>type</th><th>process</th><th>f</th>"
             f"<th>node</th><th>value</th><th>error</th></tr>{rows}</table>")
    return page(f"history {rel}", f"<h2>history</h2>{jump}{pager}{table}{pager}", _crumbs(rel, "history"))


def dir_page(root: Path, folder: Path) -> str:
    """A folder under the store: its subfolders (browse) and files (raw), with sizes."""
    rel = folder.relative_to(root).as_posix() if folder != root else ""
    rows = []
    if folder != root:
        rows.append(f'<tr><td><a href="{esc(url("browse", Path(rel).parent.as_posix().lstrip(".")))}">..</a></td><td></td></tr>')
    for p in sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name)):
        if p.name.startswith("."):
            continue
        prel = p.relative_to(root).as_posix()
        if p.is_dir():
            rows.append(f'<tr><td><a href="{esc(url("browse", prel))}">{esc(p.name)}/</a></td><td></td></tr>')
        else:
            try:
                size = f"{p.stat().st_size:,}"
            except OSError:
                size = "?"
            rows.append(f'<tr><td><a href="{esc(url("file", prel))}">{esc(p.name)}</a></td>'
                        f'<td class="mono">{size}</td></tr>')
    return page(f"/{rel}", f"<h2>/{esc(rel)}</h2><table>{''.join(rows)}</table>", [("store", "/browse/"), (rel, None)])
