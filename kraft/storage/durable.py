"""Durable file writes: temp file, fsync, rename, directory fsync (KIP-595, quorum-state), and
directories whose creation survives a power loss."""
from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """fsync the directory ``path`` so a rename or create in it is durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably. Raises OSError."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def make_dirs(path: Path) -> None:
    """``mkdir -p path``, durably: every directory it creates is fsynced into its parent
    (a directory entry, like a renamed file, is on disk only once its parent is fsynced).
    Raises OSError."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir(exist_ok=True)
        fsync_dir(d.parent)
