"""Pending namespace operations (create, mkdir, unlink, rmdir, rename) until a directory fsync.

Pure bookkeeping, no I/O. The FUSE layer applies every namespace operation to
the backing directory at once and records it here; a crash with lost renames
undoes the still-pending ones newest first (``clusters/lazyfs/power.py``).

Durability rule (POSIX: a new or changed directory entry is durable once the
directory holding it is fsynced): an operation becomes durable when the
directory its resulting name lives in is fsynced; for unlink and rmdir, the
directory the name was removed from; for a rename, the destination directory
(an fsync of only the source directory does not make a cross-directory
rename durable). When an operation becomes durable so do the earlier pending
ones on the same inode (its create, its earlier renames): the inode's current
entry cannot outlive the operations that made it. A file fsync never makes a
namespace operation durable.
"""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("create", "mkdir", "unlink", "rmdir", "rename")


@dataclass(frozen=True)
class NsOp:
    """One namespace operation as applied to the backing directory.

    ``kind``: one of :data:`KINDS`. ``ino``: the inode named (the created,
    removed or renamed one; our FUSE inode numbers). ``parent``/``name``: the
    directory inode and entry name (bytes) it created or removed, or a rename's
    destination. ``old_parent``/``old_name``: a rename's source. ``trash``: the
    name under the backing root's trash directory where a removed inode (unlink,
    rmdir) or the target a rename replaced was moved, so an undo can bring it
    back; None when nothing was moved there. ``replaced``: the inode a rename
    replaced, or None. ``seq``: global order.
    """
    seq: int
    kind: str
    ino: int
    parent: int
    name: bytes
    old_parent: int | None = None
    old_name: bytes | None = None
    trash: bytes | None = None
    replaced: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown namespace op kind {self.kind!r}; kinds are {KINDS}")
        if self.kind == "rename" and (self.old_parent is None or self.old_name is None):
            raise ValueError("a rename needs old_parent and old_name")

    def describe(self) -> dict:
        """JSON-able summary (names decoded with surrogateescape)."""
        d = {"seq": self.seq, "kind": self.kind, "ino": self.ino, "parent": self.parent,
             "name": self.name.decode(errors="surrogateescape")}
        if self.kind == "rename":
            d["old_parent"] = self.old_parent
            d["old_name"] = self.old_name.decode(errors="surrogateescape")
        return d


class NamespaceLog:
    """The namespace operations not yet made durable by a directory fsync, oldest first."""

    def __init__(self) -> None:
        self._ops: list[NsOp] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._ops)

    def record(self, kind: str, ino: int, parent: int, name: bytes, **extra) -> NsOp:
        """Append a pending operation (fields as :class:`NsOp`) and return it. Raises ``ValueError`` on a bad op."""
        self._seq += 1
        op = NsOp(seq=self._seq, kind=kind, ino=ino, parent=parent, name=name, **extra)
        self._ops.append(op)
        return op

    def pending(self) -> list[NsOp]:
        """The pending operations, oldest first (a copy)."""
        return list(self._ops)

    def pending_in(self, dir_ino: int) -> int:
        """How many pending operations a fsync of ``dir_ino`` would make durable directly."""
        return sum(1 for op in self._ops if op.parent == dir_ino)

    def sync_dir(self, dir_ino: int) -> list[NsOp]:
        """An fsync of directory ``dir_ino``: remove and return the operations it makes durable, oldest first."""
        durable_idx: set[int] = set()
        inos: set[int] = set()
        for k in range(len(self._ops) - 1, -1, -1):
            op = self._ops[k]
            if op.parent == dir_ino or op.ino in inos:
                durable_idx.add(k)
                inos.add(op.ino)
        if not durable_idx:
            return []
        done = [op for k, op in enumerate(self._ops) if k in durable_idx]
        self._ops = [op for k, op in enumerate(self._ops) if k not in durable_idx]
        return done

    def sync_all(self) -> list[NsOp]:
        """Everything durable (a ``sync(2)``): remove and return all pending operations, oldest first."""
        done, self._ops = self._ops, []
        return done
