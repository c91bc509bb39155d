"""``kraft-chaos serve [STORE]``: a read-only results browser for a store (issue 15, section 3).

Standard library only (``http.server.ThreadingHTTPServer``). Pages are in
harness/web/pages.py, what is read from the store in harness/web/store_view.py.

Security: it binds 127.0.0.1 unless ``--host`` says otherwise, and then answers only
requests whose ``Host`` is a loopback name (a DNS-rebinding page cannot read the store);
it serves only files under the store (a ``..`` or ``.`` segment, an absolute path, a
backslash or a symlink out of the store is a 404, however it is encoded); it only reads
(GET and HEAD; any other method is 405), and pages it makes (a timeline, the
latency-quantiles plot of a run that has none) are kept in memory, never written. Every
response says ``nosniff``; HTML from the store (linearizability.html) is served sandboxed.

Exit codes: 0 stopped by Ctrl-C, 3 bad input (STORE missing or not a folder, the port in
use, a host that cannot be bound).
"""
from __future__ import annotations

import argparse
import errno
import io
import ipaddress
import json
import logging
import shutil
import socket
import sys
import tempfile
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from harness.reports.plot_data import PlotData
from harness.reports.timeline import TimelineData, render_timeline
from harness.web import pages
from harness.web.store_view import StoreView, resolve_under, summarize
from history import iter_history, store

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
#: History lines per page by default, and at most.
PAGE_SIZE, MAX_PAGE_SIZE = 200, 5000
TEXT_SUFFIXES = {".log", ".txt", ".json", ".jsonl", ".toml", ".properties", ".md", ".csv", ".edn", ".xml"}
CONTENT_TYPES = {".png": "image/png", ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}
#: Sent with every page we render; store HTML files get ``sandbox allow-scripts`` as well.
CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'self'"

log = logging.getLogger("kraft_chaos.serve")


class ServeError(Exception):
    """The server cannot start (the message says why); ``kraft-chaos serve`` exits 3."""


class _NotFound(Exception):
    pass


class Handler(BaseHTTPRequestHandler):
    """One request. ``server.view`` is the :class:`StoreView`; ``server.check_host`` whether the
    Host header must be a loopback name."""

    server_version = "kraft-chaos-serve"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args) -> None:
        log.info("%s %s", self.address_string(), fmt % args)

    # -- methods -----------------------------------------------------------
    def do_GET(self) -> None:
        self._handle(head=False)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def _refuse_method(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, pages.error_page(405, "this server only reads").encode(),
                   "text/html; charset=utf-8", extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method

    # -- plumbing ----------------------------------------------------------
    def _send(self, status: int, body: bytes | None, ctype: str, head: bool = False,
              extra: dict | None = None, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if body is not None else length or 0))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body is not None and not head:
            self.wfile.write(body)

    def _html(self, text: str, head: bool, status: int = 200, sandbox: bool = False) -> None:
        csp = CSP + ("; sandbox allow-scripts" if sandbox else "")
        self._send(status, text.encode("utf-8"), "text/html; charset=utf-8", head,
                   {"Content-Security-Policy": csp})

    def _handle(self, head: bool) -> None:
        if self.server.check_host and not _loopback_host(self.headers.get("Host", "")):
            self._html(pages.error_page(403, "this server answers only to localhost"), head, 403)
            return
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        raw = parts.path
        kind, _, rest = raw.lstrip("/").partition("/")
        try:
            rel = unquote(rest, errors="strict")
        except UnicodeDecodeError:
            rel = "\x00"
        try:
            if raw == "/favicon.ico":          # browsers ask on every page: no icon, and no 404 logged
                self.send_response(HTTPStatus.NO_CONTENT)      # 204: no Content-Length (RFC 9110)
                self.send_header("Cache-Control", "max-age=86400")
                self.end_headers()
                return
            if raw == "/":
                self._html(pages.index_page(self.server.view.runs(), query.get("verdict") or None,
                                            query.get("test") or None), head)
            elif kind in _ROUTES and raw.startswith(f"/{kind}/"):
                _ROUTES[kind](self, rel, query, head)
            else:
                raise _NotFound()
        except _NotFound:
            self._html(pages.error_page(404, "not found"), head, 404)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:   # a page that fails says why, and the server goes on
            log.exception("serving %s", self.path)
            self._html(pages.error_page(500, f"{type(e).__name__}: {e}"), head, 500)

    # -- routes ------------------------------------------------------------
    def _run(self, rel: str) -> Path:
        run_dir = self.server.view.run_dir(rel.strip("/"))
        if run_dir is None:
            raise _NotFound()
        return run_dir

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.server.view.root).as_posix()

    def route_run(self, rel: str, query: dict, head: bool) -> None:
        view = self.server.view
        run_dir = self._run(rel)
        summary = summarize(view.root, run_dir)
        results = _json_or_none(run_dir / store.RESULTS)
        lin = _lin_html(view.root, run_dir, results)
        self._html(pages.run_page(view.root, run_dir, summary, results if isinstance(results, dict) else None,
                                  _json_or_none(run_dir / store.TEST_JSON), lin), head)

    def route_results(self, rel: str, query: dict, head: bool) -> None:
        run_dir = self._run(rel)
        path = run_dir / store.RESULTS
        if not path.is_file():
            raise _NotFound()
        results = json.loads(path.read_text(encoding="utf-8"))
        rel = self._rel(run_dir)
        self._html(pages.results_page(rel, results, pages.url("file", f"{rel}/{store.RESULTS}")), head)

    def route_history(self, rel: str, query: dict, head: bool) -> None:
        run_dir = self._run(rel)
        path = run_dir / store.HISTORY
        if not path.is_file():
            raise _NotFound()
        size = min(max(_int(query.get("size"), PAGE_SIZE), 1), MAX_PAGE_SIZE)
        page_no = max(_int(query.get("page"), 0), 0)
        if query.get("index") not in (None, ""):
            page_no = max(_int(query.get("index"), 0), 0) // size
        lines, total = self.server.view.history_page(path, page_no, size)
        self._html(pages.history_page(self._rel(run_dir), lines, page_no, size, total), head)

    def route_timeline(self, rel: str, query: dict, head: bool) -> None:
        run_dir = self._run(rel)
        history = run_dir / store.HISTORY
        stored = run_dir / "timeline.html"
        if stored.is_file() and (not history.is_file() or stored.stat().st_mtime >= history.stat().st_mtime):
            self._html(stored.read_text(encoding="utf-8"), head)
            return
        if not history.is_file():
            raise _NotFound()

        def make() -> bytes:
            return render_timeline(TimelineData.of(iter_history(history)),
                                   f"timeline: {self._rel(run_dir)}").encode("utf-8")
        body = self.server.view.cache.get("timeline", str(history), [history], make)
        self._send(200, body, "text/html; charset=utf-8", head, {"Content-Security-Policy": CSP})

    def route_quantiles(self, rel: str, query: dict, head: bool) -> None:
        run_dir = self._run(rel)
        history = run_dir / store.HISTORY
        if not history.is_file():
            raise _NotFound()

        def make() -> bytes:


            from harness.reports.plots import draw_latency_quantiles      # deferred: matplotlib
            with tempfile.TemporaryDirectory() as tmp:   # matplotlib writes a file; not in the store
                out = Path(tmp) / "q.png"
                draw_latency_quantiles(PlotData.of(iter_history(history)), out)
                return out.read_bytes()
        self._send(200, self.server.view.cache.get("quantiles", str(history), [history], make), "image/png", head)

    def route_browse(self, rel: str, query: dict, head: bool) -> None:
        folder = resolve_under(self.server.view.root, rel)
        if folder is None or not folder.is_dir():
            raise _NotFound()
        self._html(pages.dir_page(self.server.view.root, folder), head)

    def route_file(self, rel: str, query: dict, head: bool) -> None:
        path = resolve_under(self.server.view.root, rel)
        if path is None or not path.is_file():
            raise _NotFound()
        ctype, extra = _content_type(path), {}
        if ctype.startswith("text/html") or ctype.startswith("image/svg"):
            extra["Content-Security-Policy"] = CSP + "; sandbox allow-scripts"
        with open(path, "rb") as fh:
            size = fh.seek(0, io.SEEK_END)
            fh.seek(0)
            self._send(200, None, ctype, head, extra, length=size)
            if not head:
                shutil.copyfileobj(fh, self.wfile, 1 << 16)


_ROUTES = {"run": Handler.route_run, "results": Handler.route_results, "history": Handler.route_history,
           "timeline": Handler.route_timeline, "quantiles": Handler.route_quantiles,
           "browse": Handler.route_browse, "file": Handler.route_file}


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text not in (None, "") else default
    except ValueError:
        return default


def _json_or_none(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None


def _lin_html(root: Path, run_dir: Path, results) -> str | None:
    """The store path of the run's linearizability.html: in the run's folder, or where its
    results.json says, if that is under the store."""
    candidates = [run_dir / "linearizability.html"]
    lin = ((results or {}).get("checkers") or {}).get("linearizability") if isinstance(results, dict) else None
    if isinstance(lin, dict) and isinstance(lin.get("html"), str):
        p = Path(lin["html"])
        candidates.append(p if p.is_absolute() else Path.cwd() / p)
    for p in candidates:
        try:
            real = p.resolve()
        except OSError:
            continue
        if real.is_file() and (real == root or root in real.parents):
            return real.relative_to(root).as_posix()
    return None


def _content_type(path: Path) -> str:
    """The Content-Type of a store file: its suffix's, text/plain for text, else bytes."""
    suffix = path.suffix.lower()
    if suffix in CONTENT_TYPES:
        return CONTENT_TYPES[suffix]
    if suffix in TEXT_SUFFIXES:
        return "text/plain; charset=utf-8"
    with open(path, "rb") as fh:
        head = fh.read(4096)
    try:
        head.decode("utf-8")
        text = b"\x00" not in head
    except UnicodeDecodeError:
        text = False
    return "text/plain; charset=utf-8" if text else "application/octet-stream"


def _loopback_host(host_header: str) -> bool:
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[: host.find("]") + 1]
    elif host.count(":") == 1:
        host = host.split(":")[0]
    return host in _LOOPBACK_NAMES


class StoreServer(ThreadingHTTPServer):
    """The HTTP server of one store; ``view`` is its :class:`StoreView`."""

    daemon_threads = True

    def __init__(self, addr: tuple[str, int], view: StoreView) -> None:
        self.view = view
        self.check_host = _is_loopback(addr[0])
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, Handler)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(root: Path | str, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> StoreServer:
    """A server for the store at ``root`` bound to ``host``:``port`` (0: any free port; the bound
    one is ``server.server_address[1]``). Not started: call ``serve_forever``. Raises
    :class:`ServeError` when ``root`` is not a folder, the port is in use, or ``host`` cannot
    be bound."""
    root = Path(root)
    if not root.exists():
        raise ServeError(f"{root}: no such store (run a test first, or name a store folder)")
    if not root.is_dir():
        raise ServeError(f"{root}: not a folder")
    try:
        return StoreServer((host, port), StoreView(root))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise ServeError(f"port {port} on {host} is in use (choose another with --port)") from None
        if e.errno == errno.EACCES:
            raise ServeError(f"not allowed to bind port {port} on {host} (ports below 1024 need root)") from None
        raise ServeError(f"cannot bind {host}:{port}: {e.strerror or e}") from None


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--port must be an integer, got {text!r}") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"--port must be in 0..65535, got {v}")
    return v


def add_parser(sub) -> None:
    """Add ``serve`` to the ``kraft-chaos`` subcommands."""
    s = sub.add_parser("serve", help="browse a store's runs in a web browser (read-only)")
    s.add_argument("store_root", metavar="STORE", nargs="?", default=str(store.DEFAULT_ROOT),
                   help="the store folder (default ./store)")
    s.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to bind (default {DEFAULT_HOST}: this machine only)")
    s.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free one)")


def cmd_serve(args: argparse.Namespace) -> int:
    """``kraft-chaos serve``: serve until Ctrl-C (exit 0); 3 when it cannot start."""
    try:
        server = make_server(args.store_root, args.host, args.port)
    except ServeError as e:
        print(f"kraft-chaos serve: {e}", file=sys.stderr)
        return 3
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serving {server.view.root} at http://{shown}:{port}/ (read-only; Ctrl-C to stop)", flush=True)
    if not server.check_host:
        print(f"note: bound to {host}: anyone who can reach this address can read the store", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
