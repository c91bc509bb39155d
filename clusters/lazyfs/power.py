"""Power loss and full sync on a running :class:`clusters.lazyfs.fs.LazyFS`.

:func:`crash` is the lazyfs fault: the kernel's cached pages of the guest's
files are flushed into our page cache (they too are unsynced), then every
unsynced byte is dropped, optionally after persisting a torn prefix of the
newest unsynced write, and the pending namespace operations are either kept
(as if the directory had been synced) or undone newest first ("lost
renames"). Finally the kernel forgets its cached entries, attributes and
pages of every touched inode, so the next reader sees a freshly booted disk.
The guest process must already be dead (killed) when :func:`crash` runs.
"""
from __future__ import annotations

import errno
import logging
import os
import random
import shutil

import pyfuse3
import trio

from clusters.lazyfs.fs import LazyFS
from clusters.lazyfs.inodes import TRASH_PARENT
from clusters.lazyfs.namespace import NsOp

log = logging.getLogger(__name__)


def _rel(fs: LazyFS, path: bytes) -> str:
    return os.path.relpath(path, fs.root).decode(errors="surrogateescape")


async def _invalidate(fs: LazyFS, inodes, entries=()) -> None:
    """Make the kernel forget ``entries`` ((parent, name) pairs) and the data and attrs of ``inodes``.

    Run in a worker thread: invalidating an inode with dirty mmap pages makes
    the kernel write them back through this very filesystem first.
    """
    def run() -> None:
        """The blocking notify calls (in a worker thread)."""
        for parent, name in entries:
            try:
                pyfuse3.invalidate_entry(parent, name)
            except OSError as e:
                if e.errno not in (errno.ENOENT, errno.ENOTDIR):
                    log.warning("invalidate_entry(%s, %r): %s", parent, name, e)
        for ino in inodes:
            try:
                pyfuse3.invalidate_inode(ino, False)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    log.warning("invalidate_inode(%s): %s", ino, e)
    await trio.to_thread.run_sync(run)


def _apply_torn(fs: LazyFS, rng: random.Random) -> dict | None:
    """Persist a random strict prefix of the newest unsynced write; its summary or None."""
    newest = None
    for ino, fc in fs.files.items():
        if fc.last_write is not None and (newest is None or fc.last_write[0] > newest[1].last_write[0]):
            newest = (ino, fc)
    if newest is None:
        return None
    ino, fc = newest
    tw = fc.torn(rng)
    if tw is None:
        return None
    path = fs.inodes.path(ino)
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.pwrite(fd, tw.data, tw.offset)
        if fs.backing_fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return {"path": _rel(fs, path), "offset": tw.offset, "length": tw.length, "kept": tw.kept}


def _undo(fs: LazyFS, op: NsOp, entries: list) -> str | None:
    """Undo one namespace op on the backing directory; an error text when it could not be."""
    ino_tab = fs.inodes
    try:
        if op.kind in ("create", "mkdir"):
            path = ino_tab.child_path(op.parent, op.name)
            st = os.lstat(path)
            if ino_tab.known(st.st_ino) != op.ino:
                return "the name now holds another inode"
            if op.kind == "mkdir":
                shutil.rmtree(path)
            else:
                os.unlink(path)
            fs.files.pop(op.ino, None)
            entries.append((op.parent, op.name))
        elif op.kind in ("unlink", "rmdir"):
            path = ino_tab.child_path(op.parent, op.name)
            if os.path.lexists(path):
                return "the name is taken again"
            os.rename(ino_tab.trash_path(op.trash), path)
            ino_tab.move(op.ino, op.parent, op.name)
            entries.append((op.parent, op.name))
        else:
            cur = ino_tab.child_path(op.parent, op.name)
            back = ino_tab.child_path(op.old_parent, op.old_name)
            if os.path.lexists(back):
                return "the old name is taken again"
            os.rename(cur, back)
            ino_tab.move(op.ino, op.old_parent, op.old_name)
            entries.extend([(op.parent, op.name), (op.old_parent, op.old_name)])
            if op.trash is not None:
                os.rename(ino_tab.trash_path(op.trash), cur)
                ino_tab.move(op.replaced, op.parent, op.name)
    except (OSError, KeyError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def power_cut(fs: LazyFS, *, torn: bool = False, lost_renames: bool = False,
              seed: int | None = None) -> dict:
    """Drop all unsynced state of ``fs`` (the synchronous part of :func:`crash`, no kernel calls).

    Returns ``{"dropped_bytes", "reverted_files": [paths], "torn": {path,
    offset, length, kept} | None, "namespace_undone": [op summaries],
    "namespace_kept": int, "undo_errors": [...], "seed"}``.
    """
    return _power_cut(fs, torn, lost_renames, seed)[0]


def _power_cut(fs: LazyFS, torn: bool, lost_renames: bool, seed: int | None) -> tuple[dict, list]:
    """:func:`power_cut` plus the directory entries ``(parent, name)`` the kernel must forget."""
    if seed is None:
        seed = random.randrange(2 ** 31)
    rng = random.Random(seed)
    out: dict = {"seed": seed, "torn": None}
    if torn:
        out["torn"] = _apply_torn(fs, rng)
    reverted, dropped = [], 0
    for ino, fc in fs.files.items():
        if fc.dirty:
            dropped += fc.dirty_bytes()
            try:
                reverted.append(_rel(fs, fs.inodes.path(ino)))
            except KeyError:
                reverted.append(f"<inode {ino}>")
    fs.files.clear()
    out["dropped_bytes"] = dropped
    out["reverted_files"] = sorted(reverted)
    entries: list = []
    undone, errors = [], []
    if lost_renames:
        ops = fs.ns.sync_all()
        for op in reversed(ops):
            err = _undo(fs, op, entries)
            (errors if err else undone).append(dict(op.describe(), **({"error": err} if err else {})))
        for op in ops:   # created inodes whose create was undone are gone
            if op.kind in ("create", "mkdir") and op.ino in fs.inodes and not _reachable(fs, op.ino):
                fs.inodes.forget(op.ino)
        out["namespace_kept"] = 0
    else:
        ops = fs.ns.sync_all()
        out["namespace_kept"] = len(ops)
    out["namespace_undone"] = undone
    out["undo_errors"] = errors
    # every removal is now final: empty the trash of what no open handle needs
    for ino in list(_trashed(fs)):
        fs.maybe_purge(ino, set())
    return out, entries


def _reachable(fs: LazyFS, ino: int) -> bool:
    try:
        return os.path.lexists(fs.inodes.path(ino))
    except KeyError:
        return False


def _trashed(fs: LazyFS):
    for ino in list(fs.touched):
        if ino in fs.inodes and fs.inodes.link(ino)[0] == TRASH_PARENT:
            yield ino


async def crash(fs: LazyFS, *, torn: bool = False, lost_renames: bool = False,
                seed: int | None = None) -> dict:
    """The power-loss fault (lazyfs): flush kernel pages into the cache, :func:`power_cut`, invalidate.

    Returns :func:`power_cut`'s summary. The caller has killed the guest first.
    """
    touched = sorted(fs.touched)
    await _invalidate(fs, touched)
    out, entries = _power_cut(fs, torn, lost_renames, seed)
    fs.touched.clear()
    await _invalidate(fs, touched, entries)
    return out


def sync_all(fs: LazyFS) -> dict:
    """``sync(2)``: every file's cached data and every pending namespace op becomes durable.

    Returns ``{"synced_files": n, "synced_bytes": n, "namespace_synced": n}``.
    """
    inos = [ino for ino, fc in fs.files.items() if fc.dirty]
    n = 0
    for ino in inos:
        n += fs.sync_file(ino)
    ops = fs.ns.sync_all()
    fs.durable_ops(ops)
    return {"synced_files": len(inos), "synced_bytes": n, "namespace_synced": len(ops)}
