"""Our FUSE inode numbers for the files of the backing directory, and their current paths.

Each backing file or directory gets a stable FUSE inode number (assigned on
first sight, keyed by its backing ``st_ino``), remembered with its current
link ``(parent inode, name)``; a path is composed by walking up the links, so
a directory rename moves its whole subtree without touching the children.
Hard links are not supported (one link per inode). Inodes removed by an
unlink or rmdir live on under the hidden trash directory of the backing root
(:data:`TRASH_NAME`, link parent :data:`TRASH_PARENT`) until the removal is
durable, so a crash can undo it.
"""
from __future__ import annotations

import os

ROOT_INODE = 1
TRASH_PARENT = -1
TRASH_NAME = b".kraft-chaos-lazyfs-trash"


class InodeTable:
    """FUSE inode <-> backing inode and link, for one backing directory ``root`` (bytes path).

    ``root_backing_ino`` is the backing root's ``st_ino``; it becomes
    :data:`ROOT_INODE`. Lookups of unknown inodes raise ``KeyError``.
    """

    def __init__(self, root: bytes, root_backing_ino: int):
        self.root = root
        self.trash_dir = os.path.join(root, TRASH_NAME)
        self._by_backing: dict[int, int] = {root_backing_ino: ROOT_INODE}
        self._backing_of: dict[int, int] = {ROOT_INODE: root_backing_ino}
        self._link: dict[int, tuple[int, bytes]] = {ROOT_INODE: (0, b"")}
        self._next = ROOT_INODE + 1

    def __contains__(self, ino: int) -> bool:
        return ino in self._link

    def ino_for(self, backing_ino: int, parent: int, name: bytes) -> int:
        """The FUSE inode of backing inode ``backing_ino``, now linked as ``name`` in ``parent``."""
        ino = self._by_backing.get(backing_ino)
        if ino is None:
            ino = self._next
            self._next += 1
            self._by_backing[backing_ino] = ino
            self._backing_of[ino] = backing_ino
        if ino != ROOT_INODE:
            self._link[ino] = (parent, name)
        return ino

    def known(self, backing_ino: int) -> int | None:
        """The FUSE inode already assigned to ``backing_ino``, or None."""
        return self._by_backing.get(backing_ino)

    def move(self, ino: int, parent: int, name: bytes) -> None:
        """Record that ``ino`` is now linked as ``name`` in ``parent`` (a rename, or into/out of the trash)."""
        if ino not in self._link:
            raise KeyError(ino)
        self._link[ino] = (parent, name)

    def link(self, ino: int) -> tuple[int, bytes]:
        """``(parent inode, name)`` of ``ino``. Raises ``KeyError`` if unknown."""
        return self._link[ino]

    def in_trash(self, ino: int) -> bool:
        """True when ``ino`` was removed (unlink/rmdir/replaced by a rename) and sits in the trash."""
        link = self._link.get(ino)
        return link is not None and link[0] == TRASH_PARENT

    def forget(self, ino: int) -> None:
        """Drop ``ino`` (its backing file is gone). Unknown inodes are ignored."""
        if ino == ROOT_INODE:
            return
        self._link.pop(ino, None)
        backing = self._backing_of.pop(ino, None)
        if backing is not None and self._by_backing.get(backing) == ino:
            del self._by_backing[backing]

    def path(self, ino: int) -> bytes:
        """Absolute backing path of ``ino``. Raises ``KeyError`` if it or an ancestor is unknown."""
        parts = []
        while ino != ROOT_INODE:
            parent, name = self._link[ino]
            parts.append(name)
            if parent == TRASH_PARENT:
                parts.append(TRASH_NAME)
                break
            ino = parent
        parts.append(self.root)
        return os.path.join(*reversed(parts))

    def child_path(self, parent: int, name: bytes) -> bytes:
        """Absolute backing path of entry ``name`` in directory ``parent``. Raises ``KeyError``."""
        return os.path.join(self.path(parent), name)

    def trash_path(self, name: bytes) -> bytes:
        """Absolute backing path of trash entry ``name``."""
        return os.path.join(self.trash_dir, name)
