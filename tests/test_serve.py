"""``kraft-chaos serve`` (harness/web/serve.py): the index and its filters, a run's pages, history
paging, path traversal refused, read-only, the default bind, and bad input exiting 3.

Each test starts the server on an ephemeral port against a small store built in tmp_path,
and fetches pages with urllib / http.client (no browser)."""
from __future__ import annotations

import http.client
import json
import os
import re
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from history import store
from harness.cli.main import main
from harness.web.serve import DEFAULT_HOST, make_server
from tests.histories.builder import clean_run

CLEAN = {k: 0 for k in ("lost-write", "duplicate", "phantom", "divergence")}


def _run(root: Path, test: str, stamp: str, valid, anomalies: dict | None = None, seed: int = 7,
         workload: str = "append", history_ops: int = 60, results: bool = True) -> Path:
    run = store.create_run_dir(root, test, stamp)
    h, _ = clean_run(history_ops)
    (run / store.HISTORY).write_text("".join(json.dumps(op) + "\n" for op in h.ops))
    store.write_test_json(run, {"workload": workload, "db": "kraft", "nemesis": ["partition", "kill"],
                                "seed": seed}, seed, f"kraft-chaos run --seed {seed}", "abc123")
    if results:
        counts = {**CLEAN, **(anomalies or {})}
        checkers = {k: {"valid": not n, "anomalies": [{"type": k, "value": 1000 + i} for i in range(n)]}
                    for k, n in counts.items()}
        store.write_json(run / store.RESULTS, {
            "valid": valid, "anomalies": counts, "checkers": checkers,
            "stats": {"counts": {"append": {"ok": 40, "fail": 9, "info": 8}}, "latency_ms": {}}})
    node = run / "nodes" / "n1"
    node.mkdir(parents=True)
    (node / "node.log").write_text("2026-01-01 INFO n1 became leader of epoch 1\n")
    (node / "data").mkdir()
    (node / "data" / "quorum-state").write_text('{"leaderEpoch": 1}')
    return run


@pytest.fixture
def small_store(tmp_path):
    root = tmp_path / "store"
    _run(root, "append-partition+kill", "20260101T100000.000Z", True, seed=11)
    bad = _run(root, "append-partition+kill", "20260102T100000.000Z", False, {"lost-write": 2}, seed=12,
               history_ops=400)
    _run(root, "kv-none", "20260103T100000.000Z", "unknown", seed=13, workload="kv")
    _run(root, "append-none", "20260104T100000.000Z", None, seed=14, results=False)
    store.update_latest(root, bad)
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")           # a symlink out of the store
    os.symlink(tmp_path, root / "escape-dir")
    return root


@pytest.fixture
def server(small_store):
    srv = make_server(small_store, port=0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _base(srv) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}"


def get(srv, path: str) -> tuple[int, str, dict]:
    try:
        with urllib.request.urlopen(_base(srv) + path, timeout=30) as r:
            return r.status, r.read().decode("utf-8", "replace"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace"), dict(e.headers)


def raw(srv, method: str, path: str, host: str | None = None) -> tuple[int, bytes]:
    """A request sent exactly as written (http.client does not normalise ``..``)."""
    c = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=30)
    headers = {"Host": host} if host else {}
    c.request(method, path, headers=headers)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def rows(page: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr class="run" data-verdict="([^"]+)" data-test="([^"]+)"', page)


def test_index_lists_every_run_with_its_verdict_newest_first(server):
    status, page, headers = get(server, "/")
    assert status == 200 and headers["X-Content-Type-Options"] == "nosniff"
    assert rows(page) == [("incomplete", "append-none"), ("unknown", "kv-none"),
                          ("invalid", "append-partition+kill"), ("valid", "append-partition+kill")]
    assert "lost-write 2" in page and "2026-01-02 10:00:00Z" in page
    assert ">12<" in page and ">13<" in page                          # seeds
    assert page.count('class="badge"') >= 4


def test_index_filters_by_verdict_and_test(server):
    assert rows(get(server, "/?verdict=invalid")[1]) == [("invalid", "append-partition+kill")]
    by_test = rows(get(server, "/?test=" + quote("append-partition+kill"))[1])
    assert by_test == [("invalid", "append-partition+kill"), ("valid", "append-partition+kill")]
    assert rows(get(server, "/?verdict=valid&test=kv-none")[1]) == []
    assert rows(get(server, "/?verdict=&test=")[1]).__len__() == 4        # empty = all


def test_run_page_links_its_pages_plots_and_node_logs(server, small_store):
    rel = "append-partition+kill/20260102T100000.000Z"
    status, page, _ = get(server, "/run/" + quote(rel))
    assert status == 200
    for link in ("/results/", "/history/", "/timeline/", "nodes/n1/node.log", "/browse/"):
        assert link in page
    assert "lost-write: 2" in page                                    # the CLI's summary
    status, log, headers = get(server, "/file/" + quote(rel) + "/nodes/n1/node.log")
    assert status == 200 and "became leader" in log and headers["Content-Type"].startswith("text/plain")
    assert get(server, "/run/latest")[0] == 200                       # a symlink inside the store
    assert get(server, "/run/no-such-run")[0] == 404
    assert get(server, "/run/append-partition%2Bkill")[0] == 404      # a test folder, not a run


def test_results_page_renders_checkers_and_anomalies(server):
    status, page, _ = get(server, "/results/" + quote("append-partition+kill/20260102T100000.000Z"))
    assert status == 200
    assert 'id="c-lost-write"' in page and "2 anomalies" in page and "1001" in page
    assert "results.json as it is" in page
    assert get(server, "/results/append-none/20260104T100000.000Z")[0] == 404   # no results.json


def _indices(page: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr id="i(\d+)"', page)]


def test_history_is_paged(server, small_store):
    rel = quote("append-partition+kill/20260102T100000.000Z")
    total = sum(1 for _ in open(small_store / "append-partition+kill/20260102T100000.000Z/history.jsonl"))
    status, page, _ = get(server, f"/history/{rel}?size=10&page=2")
    assert status == 200 and _indices(page) == list(range(20, 30))
    assert f"of {total:,})" in page and "page 3 of" in page
    assert _indices(get(server, f"/history/{rel}?size=10&index=57")[1]) == list(range(50, 60))
    last = (total - 1) // 10
    assert _indices(get(server, f"/history/{rel}?size=10&page={last}")[1]) == list(range(last * 10, total))
    assert _indices(get(server, f"/history/{rel}?size=10&page={last + 5}")[1]) == []
    assert len(_indices(get(server, f"/history/{rel}?size=nonsense")[1])) == 200   # the default size
    assert len(_indices(get(server, f"/history/{rel}")[1])) == 200


@pytest.mark.parametrize("path", [
    "/file/../secret.txt", "/file/%2e%2e/secret.txt", "/file/%2E%2E%2Fsecret.txt", "/file/..%2fsecret.txt",
    "/file/append-none/../../secret.txt", "/file/%2Ftmp", "/file//etc/passwd", "/file/escape.txt",
    "/file/escape-dir/secret.txt", "/browse/escape-dir", "/browse/..", "/browse/%2e%2e",
    "/run/..", "/history/../store", "/timeline/%2e%2e", "/file/.%2e/secret.txt", "/../secret.txt",
    "/file/%00", "/file/..%5csecret.txt", "/file/%C0%AE%C0%AE/secret.txt",
])
def test_paths_out_of_the_store_are_404(server, path):
    status, body = raw(server, "GET", path)
    assert status == 404, path
    assert b"TOP SECRET" not in body


def test_only_reads(server, small_store):
    def snapshot():
        return sorted((str(p), p.stat().st_mtime_ns, p.stat().st_size)
                      for p in small_store.rglob("*") if not p.is_symlink())
    before = snapshot()
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert raw(server, method, "/file/append-none/20260104T100000.000Z/test.json")[0] == 405
    rel = quote("append-partition+kill/20260101T100000.000Z")
    for path in ("/", f"/run/{rel}", f"/results/{rel}", f"/history/{rel}", f"/timeline/{rel}",
                 f"/quantiles/{rel}", "/browse/"):
        assert get(server, path)[0] == 200, path
    assert snapshot() == before                                       # no timeline.html, no png written


def test_timeline_and_quantiles_are_drawn_on_demand(server):
    rel = quote("append-partition+kill/20260102T100000.000Z")
    status, page, headers = get(server, f"/timeline/{rel}")
    assert status == 200 and '<canvas id="tl-canvas">' in page and 'id="tl-data"' in page
    data = json.loads(re.search(r'<script type="application/json" id="tl-data">(.*?)</script>', page, re.S)[1])
    assert data["n"] > 100 and data["faults"] and data["lanes"][0] == "nemesis"
    assert "sandbox" not in headers.get("Content-Security-Policy", "")
    png = urllib.request.urlopen(_base(server) + f"/quantiles/{rel}", timeout=60)
    assert png.headers["Content-Type"] == "image/png" and png.read()[:8] == b"\x89PNG\r\n\x1a\n"


def test_store_html_is_sandboxed_and_binary_is_bytes(server, small_store):
    run = small_store / "append-partition+kill/20260102T100000.000Z"
    (run / "linearizability.html").write_text("<html><script>1</script></html>")
    (run / "nodes/n1/data/00000.log").write_bytes(b"\x00\x01\x02binary")
    rel = quote("append-partition+kill/20260102T100000.000Z")
    assert "/linearizability.html" in get(server, f"/run/{rel}")[1]
    _, _, headers = get(server, f"/file/{rel}/linearizability.html")
    assert "sandbox" in headers["Content-Security-Policy"]
    _, _, headers = get(server, f"/file/{rel}/nodes/n1/data/00000.log")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"     # .log is text by its suffix
    (run / "nodes/n1/data/segment").write_bytes(b"\x00\x01\x02binary")
    assert get(server, f"/file/{rel}/nodes/n1/data/segment")[2]["Content-Type"] == "application/octet-stream"


def test_default_bind_is_loopback_and_other_hosts_are_refused(small_store, server):
    srv = make_server(small_store, port=0)
    try:
        assert DEFAULT_HOST == "127.0.0.1" and srv.server_address[0] == "127.0.0.1"
    finally:
        srv.server_close()
    from harness.cli.main import build_parser
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.store_root) == ("127.0.0.1", "store")
    assert raw(server, "GET", "/", host="evil.example")[0] == 403      # DNS rebinding
    assert raw(server, "GET", "/", host=f"localhost:{server.server_address[1]}")[0] == 200


def test_bad_input_exits_3(tmp_path, capsys, small_store):
    assert main(["serve", str(tmp_path / "missing")]) == 3
    assert "no such store" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["serve", str(tmp_path / "file")]) == 3
    assert main(["serve", str(small_store), "--port", "70000"]) == 3
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        assert main(["serve", str(small_store), "--port", str(busy.getsockname()[1])]) == 3
        assert "in use" in capsys.readouterr().err
    finally:
        busy.close()
