"""The lazyfs daemon's control channel: a line protocol over a unix socket, server and client.

Protocol (UTF-8, one request and one reply per line, any number per
connection): a request is ``COMMAND`` or ``COMMAND {json object of
arguments}``; the reply is ``ok {json object}`` or ``error MESSAGE``. The
daemon's commands (``clusters/lazyfs/__main__.py``): ``ping``, ``stats``,
``crash {"torn": bool, "lost_renames": bool, "seed": int}``, ``sync``,
``exit``. The server runs inside the daemon's trio loop, so a command never
interleaves with a FUSE request except where it awaits.
"""
from __future__ import annotations

import json
import os
import socket
from collections.abc import Awaitable, Callable

Handler = Callable[[dict], Awaitable[dict]]
MAX_LINE = 1 << 20


class ControlError(RuntimeError):
    """The daemon answered ``error ...`` (bad command, bad arguments, or the command failed)."""


def parse_request(line: str) -> tuple[str, dict]:
    """``"crash {\\"torn\\": true}"`` -> ``("crash", {"torn": True})``. Raises ``ValueError`` on bad input."""
    line = line.strip()
    if not line:
        raise ValueError("empty request")
    command, _, rest = line.partition(" ")
    args = {}
    if rest.strip():
        try:
            args = json.loads(rest)
        except json.JSONDecodeError as e:
            raise ValueError(f"arguments of {command!r} are not JSON: {e}") from None
        if not isinstance(args, dict):
            raise ValueError(f"arguments of {command!r} must be a JSON object, got {rest.strip()!r}")
    return command, args


async def _answer(commands: dict[str, Handler], line: str) -> str:
    try:
        command, args = parse_request(line)
    except ValueError as e:
        return f"error {e}"
    handler = commands.get(command)
    if handler is None:
        return f"error unknown command {command!r}; commands: {', '.join(sorted(commands))}"
    try:
        result = await handler(args)
    except TypeError as e:
        return f"error bad arguments for {command!r}: {e}"
    except Exception as e:  # noqa: BLE001 - reported to the caller, the daemon goes on
        return f"error {command} failed: {type(e).__name__}: {e}"
    return "ok " + json.dumps(result, sort_keys=True)


async def serve(path: str, commands: dict[str, Handler], *, task_status=None) -> None:
    """Serve ``commands`` (name -> async handler(args dict) -> JSON-able dict) on unix socket ``path``.

    Replaces a stale socket file. Runs until cancelled (under trio); use with
    ``nursery.start`` to learn when it listens. (trio is imported here only, so
    the client side needs nothing beyond the standard library.)
    """
    import trio

    if task_status is None:
        task_status = trio.TASK_STATUS_IGNORED
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(16)
    listener = trio.SocketListener(sock)

    async def conn(stream) -> None:
        """One client connection: requests and replies line by line."""
        buf = b""
        async with stream:
            while True:
                try:
                    chunk = await stream.receive_some(65536)
                except trio.BrokenResourceError:
                    return
                if not chunk:
                    return
                buf += chunk
                if len(buf) > MAX_LINE:
                    await stream.send_all(b"error request line too long\n")
                    return
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    reply = await _answer(commands, line.decode(errors="replace"))
                    try:
                        await stream.send_all(reply.encode() + b"\n")
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        return

    task_status.started()
    await trio.serve_listeners(conn, [listener])


class ControlClient:
    """Blocking client of a daemon's control socket ``path``; one connection per call.

    ``timeout``: seconds for connect and reply (a crash flushes kernel pages
    first, so give it seconds, not milliseconds).
    """

    def __init__(self, path: str | os.PathLike, timeout: float = 30.0):
        self.path = os.fspath(path)
        self.timeout = timeout

    def call(self, command: str, **args) -> dict:
        """Send ``command`` with ``args`` and return the reply's JSON object.

        Raises :class:`ControlError` on an ``error`` reply or a malformed one,
        ``OSError`` (e.g. ``ConnectionRefusedError``, ``FileNotFoundError``,
        ``TimeoutError``) when the daemon cannot be reached.
        """
        if not command or any(c.isspace() for c in command):
            raise ValueError(f"bad command name {command!r}")
        line = command + (" " + json.dumps(args) if args else "") + "\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(self.timeout)
            s.connect(self.path)
            s.sendall(line.encode())
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        text = reply.decode(errors="replace").rstrip("\n")
        status, _, rest = text.partition(" ")
        if status == "ok":
            try:
                return json.loads(rest)
            except json.JSONDecodeError as e:
                raise ControlError(f"malformed reply to {command!r}: {text!r}") from e
        if status == "error":
            raise ControlError(rest)
        raise ControlError(f"malformed reply to {command!r}: {text!r}")
