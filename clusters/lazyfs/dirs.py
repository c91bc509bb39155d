"""The directory side of the lazyfs filesystem: listing, directory fsync and namespace ops.

A mixin of :class:`clusters.lazyfs.fs.LazyFS` (it uses that class's inode
table, path helpers and attribute builder). Every namespace operation is
applied to the backing directory at once and recorded as pending in
:class:`clusters.lazyfs.namespace.NamespaceLog`; an unlinked or rmdir'ed
inode, and the target a rename replaces, are moved into the backing root's
hidden trash directory rather than deleted, so a crash with lost renames can
put them back. ``fsyncdir`` makes the directory's pending ops durable
(POSIX: creates and renames are durable once their directory is fsynced) and
empties the trash of what they removed.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat as stat_mod

import pyfuse3

from clusters.lazyfs.inodes import ROOT_INODE, TRASH_NAME, TRASH_PARENT
from clusters.lazyfs.namespace import NsOp


def fuse_error(e: OSError) -> pyfuse3.FUSEError:
    """The FUSE reply for a failed backing call: the same errno (EIO when it has none)."""
    return pyfuse3.FUSEError(e.errno or errno.EIO)


_err = fuse_error



def _check_removable(path: str, is_dir: bool, want_dir: bool) -> None:
    """POSIX's checks before ``path`` is removed or replaced: raises FUSEError ENOTDIR when a
    directory is wanted and ``path`` is not one, EISDIR the other way round, ENOTEMPTY for a
    directory that has entries (rmdir, unlink, rename onto an existing name)."""
    if want_dir and not is_dir:
        raise pyfuse3.FUSEError(errno.ENOTDIR)
    if not want_dir and is_dir:
        raise pyfuse3.FUSEError(errno.EISDIR)
    if is_dir and os.listdir(path):
        raise pyfuse3.FUSEError(errno.ENOTEMPTY)

class DirectoryOps:
    """Directory and namespace handlers of :class:`clusters.lazyfs.fs.LazyFS` (a mixin)."""

    def _record(self, kind: str, ino: int, parent: int, name: bytes, **extra) -> NsOp:
        self.touched.update((ino, parent))
        if extra.get("old_parent") is not None:
            self.touched.add(extra["old_parent"])
        return self.ns.record(kind, ino, parent, name, **extra)

    def _to_trash(self, path: bytes, ino: int) -> bytes:
        """Move the backing entry ``path`` (inode ``ino``) into the trash; return its trash name."""
        self._seq += 1
        tname = b"%d-%d" % (self._seq, ino)
        os.rename(path, self.inodes.trash_path(tname))
        self.inodes.move(ino, TRASH_PARENT, tname)
        return tname

    def maybe_purge(self, ino: int, pending_trash: set[bytes] | None = None) -> bool:
        """Delete a trashed inode's backing copy once no handle and no pending op needs it.

        ``pending_trash``: trash names still referenced by pending namespace ops
        (computed when None). Returns True when it was deleted.
        """
        if not self.inodes.in_trash(ino) or ino in self._fds:
            return False
        _, tname = self.inodes.link(ino)
        if pending_trash is None:
            pending_trash = {op.trash for op in self.ns.pending() if op.trash}
        if tname in pending_trash:
            return False
        path = self.inodes.trash_path(tname)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            pass
        self.files.pop(ino, None)
        self.inodes.forget(ino)
        return True

    def durable_ops(self, ops: list[NsOp]) -> None:
        """Namespace ops became durable: their trashed inodes may go now."""
        if not ops:
            return
        pending_trash = {op.trash for op in self.ns.pending() if op.trash}
        for op in ops:
            if op.trash:
                for ino in (op.ino, op.replaced):
                    if ino is not None:
                        self.maybe_purge(ino, pending_trash)

    # --- directories -----------------------------------------------------------------------------

    async def opendir(self, inode, ctx):
        """A handle on directory ``inode`` (for readdir and fsyncdir)."""
        fh = self._next_fh
        self._next_fh += 1
        self._dirs[fh] = (inode, None)
        return fh

    async def readdir(self, fh, start_id, token):
        """List the backing dir (snapshot at offset 0), hiding the trash; offsets: list position + 1."""
        ino, names = self._dirs[fh]
        path = self._path(ino)
        if names is None or start_id == 0:
            try:
                names = sorted(os.listdir(path))
            except OSError as e:
                raise _err(e) from None
            if ino == ROOT_INODE and TRASH_NAME in names:
                names.remove(TRASH_NAME)
            self._dirs[fh] = (ino, names)
        for i in range(start_id, len(names)):
            name = names[i]
            try:
                st = os.lstat(os.path.join(path, name))
            except OSError:
                continue
            attr = self._attr(self.inodes.ino_for(st.st_ino, ino, name), st)
            if not pyfuse3.readdir_reply(token, name, attr, i + 1):
                break

    async def releasedir(self, fh):
        """Forget a directory handle."""
        self._dirs.pop(fh, None)

    async def fsyncdir(self, fh, datasync):
        """fsync of a directory: its pending namespace ops become durable (:meth:`NamespaceLog.sync_dir`)."""
        ino = self._dirs[fh][0]
        self.counters["fsyncdirs"] += 1
        done = self.ns.sync_dir(ino)
        if self.backing_fsync:
            try:
                fd = os.open(self._path(ino), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                raise _err(e) from None
        self.durable_ops(done)

    async def mkdir(self, parent_inode, name, mode, ctx):
        """Create a directory in the backing dir at once; pending until its parent is fsynced."""
        path = self._child(parent_inode, name)
        try:
            os.mkdir(path, stat_mod.S_IMODE(mode))
            self._chown(path, ctx)
            st = os.lstat(path)
        except OSError as e:
            raise _err(e) from None
        ino = self.inodes.ino_for(st.st_ino, parent_inode, name)
        self._record("mkdir", ino, parent_inode, name)
        return self._attr(ino, st)

    def _remove(self, parent_inode: int, name: bytes, want_dir: bool) -> None:
        path = self._child(parent_inode, name)
        try:
            st = os.lstat(path)
            _check_removable(path, stat_mod.S_ISDIR(st.st_mode), want_dir)
            ino = self.inodes.ino_for(st.st_ino, parent_inode, name)
            tname = self._to_trash(path, ino)
        except OSError as e:
            raise _err(e) from None
        self._record("rmdir" if want_dir else "unlink", ino, parent_inode, name, trash=tname)

    async def unlink(self, parent_inode, name, ctx):
        """Remove a file: moved to the trash, pending until its directory is fsynced."""
        self._remove(parent_inode, name, want_dir=False)

    async def rmdir(self, parent_inode, name, ctx):
        """Remove an empty directory: moved to the trash, pending until its parent is fsynced."""
        self._remove(parent_inode, name, want_dir=True)

    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        """rename(2); a replaced target goes to the trash; pending until the destination dir is fsynced.

        RENAME_NOREPLACE is supported, RENAME_EXCHANGE answers EINVAL.
        """
        if flags & pyfuse3.RENAME_EXCHANGE:
            raise pyfuse3.FUSEError(errno.EINVAL)
        src = self._child(parent_inode_old, name_old)
        dst = self._child(parent_inode_new, name_new)
        try:
            st = os.lstat(src)
            try:
                dst_st = os.lstat(dst)
            except FileNotFoundError:
                dst_st = None
            ino = self.inodes.ino_for(st.st_ino, parent_inode_old, name_old)
            tname = replaced = None
            if dst_st is not None:
                if flags & pyfuse3.RENAME_NOREPLACE:
                    raise pyfuse3.FUSEError(errno.EEXIST)
                if dst_st.st_ino == st.st_ino:
                    return
                _check_removable(dst, stat_mod.S_ISDIR(dst_st.st_mode), stat_mod.S_ISDIR(st.st_mode))
                replaced = self.inodes.ino_for(dst_st.st_ino, parent_inode_new, name_new)
                tname = self._to_trash(dst, replaced)
            os.rename(src, dst)
        except OSError as e:
            raise _err(e) from None
        self.inodes.move(ino, parent_inode_new, name_new)
        self._record("rename", ino, parent_inode_new, name_new, old_parent=parent_inode_old,
                     old_name=name_old, trash=tname, replaced=replaced)
        if replaced is not None:
            self.touched.add(replaced)
