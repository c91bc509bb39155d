"""The on-disk store of test runs: ``store/<test>/<timestamp>/`` (DEVELOPERS.md, "Store").

A run directory holds ``test.json``, ``history.jsonl``, ``results.json``,
``harness.log`` and ``nodes/<node>/``. ``store/latest`` is a relative
symlink to the newest run, replaced atomically.

It sits beside the history format, below everything that writes or reads runs (the
runner, ``check``, the Spark analysis in checkers/spark/, ``serve``), and imports none of them.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
from pathlib import Path
from typing import Any

DEFAULT_ROOT = Path("store")

TEST_JSON = "test.json"
HISTORY = "history.jsonl"
RESULTS = "results.json"
HARNESS_LOG = "harness.log"
NODES = "nodes"
LATEST = "latest"

_SAFE = re.compile(r"[^A-Za-z0-9_.+-]+")


class StoreError(ValueError):
    """A store path is missing or not a run directory (message names the path)."""


def timestamp(now: _dt.datetime | None = None) -> str:
    """A UTC timestamp usable in paths and container names, e.g. ``20250101T120000.123Z``."""
    now = (now or _dt.datetime.now(_dt.timezone.utc)).astimezone(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S.") + f"{now.microsecond // 1000:03d}Z"


def test_name(workload: str, nemeses: list[str] | tuple[str, ...]) -> str:
    """The store's test folder name, e.g. ``append-partition+kill`` (``append-none``)."""
    name = f"{workload}-{'+'.join(nemeses) if nemeses else 'none'}"
    return _SAFE.sub("_", name)


def create_run_dir(root: Path | str, test: str, stamp: str | None = None) -> Path:
    """Create and return ``root/<test>/<stamp>/`` (with ``nodes/``).

    ``stamp`` defaults to :func:`timestamp`; an existing directory gets a
    ``-1``, ``-2``... suffix rather than being reused.
    """
    if not test or _SAFE.search(test) or test in (".", "..", LATEST):
        raise StoreError(f"bad test name {test!r}: use letters, digits, '_', '.', '+', '-'")
    stamp = stamp or timestamp()
    base = Path(root) / test
    base.mkdir(parents=True, exist_ok=True)
    run, i = base / stamp, 0
    while True:
        try:
            run.mkdir()
            break
        except FileExistsError:
            i += 1
            run = base / f"{stamp}-{i}"
    (run / NODES).mkdir()
    return run


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically (temp file + rename)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def write_test_json(run_dir: Path, config: dict, seed: int, command: str,
                    commit: str | None = None) -> Path:
    """Write ``test.json``: ``{"config": ..., "seed": seed, "command": repeat command, "commit": commit}``.

    ``commit`` is the code's git commit (``harness.run.code_version.code_commit``:
    a hash, ``-dirty`` when tracked files were modified) or None when unknown.
    """
    path = Path(run_dir) / TEST_JSON
    write_json(path, {"config": config, "seed": seed, "command": command, "commit": commit})
    return path


def add_to_test_json(run_dir: Path, **fields: Any) -> Path:
    """Add ``fields`` to the run's ``test.json`` (e.g. ``client``: what a workload's client
    was, known once it ran). Raises OSError, ValueError when there is none to read."""
    path = Path(run_dir) / TEST_JSON
    doc = json.loads(path.read_text())
    doc.update(fields)
    write_json(path, doc)
    return path


def update_latest(root: Path | str, run_dir: Path) -> Path:
    """Point ``root/latest`` at ``run_dir`` (relative link, atomic replace). Returns the link."""
    root = Path(root)
    link = root / LATEST
    target = os.path.relpath(Path(run_dir).resolve(), root.resolve())
    tmp = root / f".{LATEST}.{os.getpid()}.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)
    return link


def resolve_run_dir(path: Path | str) -> Path:
    """The run directory for ``path``: a run dir itself, or a store root / link with ``latest``.

    Raises :class:`StoreError` when ``path`` does not exist or holds no
    ``history.jsonl``.
    """
    p = Path(path)
    if not p.exists():
        raise StoreError(f"{p}: no such directory")
    if not (p / HISTORY).is_file() and (p / LATEST).exists():
        p = p / LATEST
    p = p.resolve()
    if not (p / HISTORY).is_file():
        raise StoreError(f"{p}: not a run directory (no {HISTORY})")
    return p


def history_path(run_dir: Path) -> Path:
    """``<run>/history.jsonl``."""
    return Path(run_dir) / HISTORY


def results_path(run_dir: Path) -> Path:
    """``<run>/results.json``."""
    return Path(run_dir) / RESULTS


def nodes_dir(run_dir: Path) -> Path:
    """``<run>/nodes`` (one folder per node)."""
    return Path(run_dir) / NODES


def harness_log_path(run_dir: Path) -> Path:
    """``<run>/harness.log``."""
    return Path(run_dir) / HARNESS_LOG


def read_test_json(run_dir: Path) -> dict | None:
    """The run's ``test.json`` contents, or None when absent."""
    p = Path(run_dir) / TEST_JSON
    return json.loads(p.read_text()) if p.is_file() else None


def read_json(path: Path) -> Any:
    """The JSON document at ``path``. Raises OSError, ValueError."""
    return json.loads(Path(path).read_text())
