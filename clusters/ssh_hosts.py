"""The SSH backend's hosts file (``--cluster ssh --hosts hosts.toml``): which machines the nodes
run on and how to reach them.

Format (TOML; every key but ``host`` optional, ``[defaults]`` applies to every host)::

    [defaults]
    user = "admin"                      # login user (default "root")
    port = 22                           # sshd port, 1..65535
    key_file = "~/.ssh/kraft_chaos"     # private key (~ expanded; relative to this file);
                                        # absent: the ssh agent and ~/.ssh/id_* keys
    sudo = true                         # run node commands through `sudo -n` (needs root otherwise)
    known_hosts = "~/.ssh/known_hosts"  # the host keys trusted (default ~/.ssh/known_hosts)
    host_key_policy = "reject"          # reject (default): an unknown host key is an error;
                                        # accept-new: trust it and append it to known_hosts
                                        # (a changed key is always an error)
    run_dir = "/tmp/kraft-chaos"        # absolute; a run's files go to <run_dir>/<run id>/<node>
    python = "python3"                  # the nodes' interpreter (>= 3.11)
    connect_timeout_s = 10              # seconds to reach sshd and authenticate

    [[hosts]]
    host = "10.0.0.11"                  # name or address sshd is reached at
    address = "10.0.0.11"               # optional: IPv4 the nodes and the harness use
                                        # (default: host, resolved)

Node ``ni`` runs on the i-th ``[[hosts]]`` entry. A bad file raises :class:`HostsFileError`
(a ``ValueError``: exit 3) naming the file, the line and, for a host, its entry.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import os
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Any

#: directories a run dir may not be in: the nodes see them as overlays whose layers live in it
OVERLAID = ("/etc", "/var", "/opt")
POLICIES = ("reject", "accept-new")
KEYS = ("host", "address", "port", "user", "key_file", "sudo", "known_hosts", "host_key_policy",
        "run_dir", "python", "connect_timeout_s")


class HostsFileError(ValueError):
    """The hosts file is missing or malformed; the message names the file, line, host and key
    (exit 3)."""


@dataclasses.dataclass(frozen=True)
class HostSpec:
    """How to reach one host and where its node's files go.

    ``host``: sshd's name or address; ``address``: the IPv4 the nodes and the harness use (None:
    ``host`` resolved at connect time); ``port``; ``user``; ``key_file``: absolute path or None
    (agent and default keys); ``sudo``; ``known_hosts``: absolute path; ``host_key_policy``:
    ``reject`` or ``accept-new``; ``run_dir``: absolute POSIX path on the host; ``python``: the
    interpreter's name or path on the host; ``connect_timeout_s``: seconds; ``line``: the line of
    its ``[[hosts]]`` header in ``source``.
    """

    host: str
    address: str | None = None
    port: int = 22
    user: str = "root"
    key_file: str | None = None
    sudo: bool = False
    known_hosts: str = "~/.ssh/known_hosts"
    host_key_policy: str = "reject"
    run_dir: str = "/tmp/kraft-chaos"
    python: str = "python3"
    connect_timeout_s: float = 10.0
    line: int = 0
    source: str = ""

    @property
    def label(self) -> str:
        """``user@host:port``, how messages name the host."""
        return f"{self.user}@{self.host}:{self.port}"


def _key_lines(text: str) -> dict[tuple[str, int, str], int]:
    """``{(table, index, key): line}`` of every ``key = ...`` line: table ``""`` (top level),
    ``"defaults"`` or ``"hosts"`` (``index`` the 0-based ``[[hosts]]`` entry, -1 elsewhere);
    ``(table, index, "")`` is the table header's line."""
    out: dict[tuple[str, int, str], int] = {}
    table, index, n_hosts = "", -1, 0
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        head = re.fullmatch(r"(\[\[?)\s*([\w.\"'-]+)\s*\]\]?", line)
        if head:
            table = head.group(2).strip("\"'")
            index = -1
            if head.group(1) == "[[" and table == "hosts":
                index, n_hosts = n_hosts, n_hosts + 1
            out.setdefault((table, index, ""), i)
            continue
        m = re.match(r"[\"']?([\w-]+)[\"']?\s*=", line)
        if m:
            out.setdefault((table, index, m.group(1)), i)
    return out


def load_hosts(path: str | Path) -> list[HostSpec]:
    """The hosts of the file at ``path``, in order (at least one).

    Paths in it are expanded (``~``) and made absolute (relative to the file's folder).
    Raises :class:`HostsFileError` for a missing or unreadable file, bad TOML, a missing
    ``[[hosts]]``, an unknown key, a value of the wrong type or range, a ``key_file`` that does
    not exist, a run dir that is not absolute or lies under /etc, /var or /opt, or two entries
    with the same host and port.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise HostsFileError(f"hosts file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise HostsFileError(f"hosts file {path} cannot be read: {e}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise HostsFileError(f"{path}: not valid TOML: {e}") from None
    lines = _key_lines(text)

    def fail(table: str, index: int, key: str, problem: str) -> HostsFileError:
        line = lines.get((table, index, key)) or lines.get((table, index, "")) or 1
        where = {"": "", "defaults": "[defaults] "}.get(table, f"[[hosts]] entry {index + 1} ")
        return HostsFileError(f"{path}:{line}: {where}{key!r}: {problem}" if key
                              else f"{path}:{line}: {where.strip() or 'file'}: {problem}")

    for key in doc:
        if key not in ("defaults", "hosts"):
            raise fail("", -1, key, "unknown top-level key (expected [defaults] and [[hosts]])")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise fail("", -1, "defaults", "must be a table ([defaults])")
    entries = doc.get("hosts")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise HostsFileError(f"{path}:1: no hosts: add one [[hosts]] table per host, with host = \"...\"")
    if "host" in defaults or "address" in defaults:
        raise fail("defaults", -1, "host" if "host" in defaults else "address", "belongs in a [[hosts]] entry")
    base = _fields(defaults, lambda k, p: fail("defaults", -1, k, p), path.parent)
    specs = []
    for i, entry in enumerate(entries):
        own = _fields(entry, lambda k, p, i=i: fail("hosts", i, k, p), path.parent)
        if "host" not in own:
            raise fail("hosts", i, "", "has no host = \"...\"")
        specs.append(HostSpec(**{**base, **own}, line=lines.get(("hosts", i, ""), 1), source=str(path)))
    seen: dict[tuple[str, int], int] = {}
    for i, s in enumerate(specs):
        if (s.host, s.port) in seen:
            raise fail("hosts", i, "host", f"{s.host}:{s.port} is also entry {seen[(s.host, s.port)] + 1}; "
                                           "each node needs a host of its own")
        seen[(s.host, s.port)] = i
    return specs


def _fields(table: dict[str, Any], fail, folder: Path) -> dict[str, Any]:
    """The checked values of one table (``[defaults]`` or a ``[[hosts]]`` entry); ``fail(key,
    problem)`` makes the error."""
    out: dict[str, Any] = {}
    for key, v in table.items():
        if key not in KEYS:
            raise fail(key, f"unknown key; the keys are {', '.join(KEYS)}")
        if key in ("host", "user", "python"):
            if not isinstance(v, str) or not v.strip() or any(c.isspace() for c in v):
                raise fail(key, f"must be a non-empty string without spaces, got {v!r}")
        elif key == "address":
            try:
                v = str(ipaddress.IPv4Address(v))
            except (ValueError, TypeError):
                raise fail(key, f"must be an IPv4 address, got {v!r}") from None
        elif key == "port":
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 65535:
                raise fail(key, f"must be an integer in 1..65535, got {v!r}")
        elif key == "sudo":
            if not isinstance(v, bool):
                raise fail(key, f"must be true or false, got {v!r}")
        elif key == "connect_timeout_s":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise fail(key, f"must be a positive number of seconds, got {v!r}")
            v = float(v)
        elif key == "host_key_policy":
            if v not in POLICIES:
                raise fail(key, f"must be one of {', '.join(POLICIES)}, got {v!r}")
        elif key in ("key_file", "known_hosts"):
            if not isinstance(v, str) or not v:
                raise fail(key, f"must be a path, got {v!r}")
            v = str((folder / os.path.expanduser(v)).absolute())
            if key == "key_file" and not Path(v).is_file():
                raise fail(key, f"the key file {v} does not exist")
        elif key == "run_dir":
            if not isinstance(v, str) or not v.startswith("/") or posixpath.normpath(v) == "/":
                raise fail(key, f"must be an absolute path other than /, got {v!r}")
            v = posixpath.normpath(v)
            if any(v == d or v.startswith(d + "/") for d in OVERLAID):
                raise fail(key, f"{v} is under {', '.join(OVERLAID)}, which the nodes see as overlays "
                                "whose layers live in the run dir; choose another folder (e.g. /tmp/kraft-chaos)")
        out[key] = v
    return out


def expand_known_hosts(spec: HostSpec) -> str:
    """``spec.known_hosts`` with ``~`` expanded (the default is ``~/.ssh/known_hosts``)."""
    return os.path.expanduser(spec.known_hosts)
