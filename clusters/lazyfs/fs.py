"""The lazyfs FUSE filesystem (pyfuse3 Operations) over a backing directory.

What it implements: a passthrough filesystem whose file data goes into a
lazyfs-style page cache (:class:`clusters.lazyfs.cache.FileCache`, per inode)
and reaches the backing directory only on ``fsync``/``fdatasync`` of that file
(POSIX: ``close`` is not a sync, so ``flush`` and ``release`` persist
nothing). Namespace operations (create, mkdir, unlink, rmdir, rename) are
applied to the backing directory at once and stay pending
(:class:`clusters.lazyfs.namespace.NamespaceLog`) until an fsync of the
directory; removed inodes are kept in a hidden trash directory of the backing
root until then. ``clusters/lazyfs/power.py`` drops the unsynced state on a
crash.

Not modelled: metadata durability of chmod/chown/utimes (applied to the
backing file at once), the mtime of cached writes (the backing file's mtime
until a sync), hard links, symlinks, device nodes, xattrs, fallocate
(pyfuse3 has no fallocate handler; the kernel answers EOPNOTSUPP).

Kernel page cache: data is not ``direct_io`` (shared writable ``mmap``
needs the page cache); the kernel's writeback cache is off, so every
``write(2)`` reaches :meth:`LazyFS.write` at once, and dirty ``mmap`` pages
reach it on ``msync``/close or when the crash invalidates them.
"""
from __future__ import annotations

import errno
import logging
import os
import shutil
import stat as stat_mod

import pyfuse3

from clusters.lazyfs.cache import FileCache
from clusters.lazyfs.dirs import DirectoryOps
from clusters.lazyfs.dirs import fuse_error as _err
from clusters.lazyfs.inodes import ROOT_INODE, TRASH_NAME, InodeTable
from clusters.lazyfs.namespace import NamespaceLog

log = logging.getLogger(__name__)


class LazyFS(DirectoryOps, pyfuse3.Operations):
    """pyfuse3 Operations of the lazyfs filesystem over the backing directory ``backing``.

    ``backing_fsync``: call ``fsync`` on the backing file/directory when the
    guest syncs (the host does not lose power in this model, so False only
    saves time). ``timeout``: the kernel's entry and attribute cache timeout
    (seconds). Raises ``OSError`` when ``backing`` is not a directory.
    Counters in :attr:`counters` (writes, bytes_written, reads, fsyncs,
    fsyncdirs, synced_bytes).
    """

    enable_writeback_cache = False

    def __init__(self, backing, *, backing_fsync: bool = True, timeout: float = 1.0):
        super().__init__()
        self.root = os.fsencode(os.path.abspath(backing))
        st = os.stat(self.root)
        if not stat_mod.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "backing is not a directory", backing)
        self.inodes = InodeTable(self.root, st.st_ino)
        shutil.rmtree(self.inodes.trash_dir, ignore_errors=True)  # a previous daemon's durable removals
        os.mkdir(self.inodes.trash_dir, 0o700)
        self.backing_fsync = backing_fsync
        self.timeout = timeout
        self.files: dict[int, FileCache] = {}      # inode -> page cache (only while touched)
        self.ns = NamespaceLog()
        self.touched: set[int] = set()              # inodes the kernel may cache data or attrs of
        self._handles: dict[int, int] = {}          # file handle -> inode
        self._fds: dict[int, list[int]] = {}        # inode -> [backing fd, open handles]
        self._dirs: dict[int, tuple[int, list[bytes] | None]] = {}   # dir handle -> (inode, listing)
        self._next_fh = 1
        self._seq = 0
        self.counters = dict(writes=0, bytes_written=0, reads=0, fsyncs=0, fsyncdirs=0,
                             synced_bytes=0)

    # --- helpers -----------------------------------------------------------------------------

    def _path(self, ino: int) -> bytes:
        try:
            return self.inodes.path(ino)
        except KeyError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None

    def _child(self, parent: int, name: bytes) -> bytes:
        if parent == ROOT_INODE and name == TRASH_NAME:
            raise pyfuse3.FUSEError(errno.EACCES)
        return os.path.join(self._path(parent), name)

    def _attr(self, ino: int, st: os.stat_result) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino = ino
        a.generation = 0
        a.entry_timeout = self.timeout
        a.attr_timeout = self.timeout
        a.st_mode = st.st_mode
        a.st_nlink = st.st_nlink
        a.st_uid = st.st_uid
        a.st_gid = st.st_gid
        a.st_rdev = st.st_rdev
        fc = self.files.get(ino)
        if fc is None:
            a.st_size = st.st_size
            a.st_blocks = st.st_blocks
        else:
            a.st_size = fc.size
            a.st_blocks = (fc.size + 511) // 512
        a.st_blksize = 4096
        a.st_atime_ns = st.st_atime_ns
        a.st_mtime_ns = st.st_mtime_ns
        a.st_ctime_ns = st.st_ctime_ns
        return a

    def _stat(self, ino: int) -> os.stat_result:
        entry = self._fds.get(ino)
        try:
            return os.fstat(entry[0]) if entry else os.lstat(self._path(ino))
        except OSError as e:
            raise _err(e) from None

    def _cache(self, ino: int) -> FileCache:
        fc = self.files.get(ino)
        if fc is None:
            fc = self.files[ino] = FileCache(durable_size=self._stat(ino).st_size)
        return fc

    def _new_fh(self, ino: int) -> int:
        fh = self._next_fh
        self._next_fh += 1
        self._handles[fh] = ino
        return fh

    def _acquire_fd(self, ino: int, fd: int | None = None) -> int:
        entry = self._fds.get(ino)
        if entry is None:
            if fd is None:
                path = self._path(ino)
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
                except OSError as e:
                    if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                        raise _err(e) from None
                    try:
                        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                    except OSError as e2:
                        raise _err(e2) from None
            entry = self._fds[ino] = [fd, 0]
        elif fd is not None:
            os.close(fd)
        entry[1] += 1
        return entry[0]

    def _chown(self, path: bytes, ctx: pyfuse3.RequestContext) -> None:
        if ctx.uid != os.geteuid() or ctx.gid != os.getegid():
            os.lchown(path, ctx.uid, ctx.gid)

    def sync_file(self, ino: int) -> int:
        """Make ``ino``'s cached data durable (POSIX fsync): apply its :class:`SyncPlan`. Returns bytes written."""
        fc = self.files.get(ino)
        if fc is None or not fc.dirty:
            return 0
        entry = self._fds.get(ino)
        fd = entry[0] if entry else os.open(self._path(ino), os.O_WRONLY | os.O_CLOEXEC)
        try:
            plan = fc.sync_plan()
            if plan.cut_to is not None:
                os.ftruncate(fd, plan.cut_to)
            n = 0
            for off, data in plan.writes:
                view = memoryview(data)
                while view:
                    k = os.pwrite(fd, view, off)
                    view, off, n = view[k:], off + k, n + k
            if os.fstat(fd).st_size != plan.size:
                os.ftruncate(fd, plan.size)
            if self.backing_fsync:
                os.fsync(fd)
        finally:
            if not entry:
                os.close(fd)
        fc.mark_synced()
        del self.files[ino]
        self.counters["synced_bytes"] += n
        return n

    # --- attributes and lookup -----------------------------------------------------------------

    async def lookup(self, parent_inode, name, ctx):
        """Entry ``name`` of ``parent_inode`` (FUSE lookup): its attributes; ENOENT if absent or the trash."""
        if parent_inode == ROOT_INODE and name == TRASH_NAME:
            raise pyfuse3.FUSEError(errno.ENOENT)
        path = os.path.join(self._path(parent_inode), name)
        try:
            st = os.lstat(path)
        except OSError as e:
            raise _err(e) from None
        return self._attr(self.inodes.ino_for(st.st_ino, parent_inode, name), st)

    async def getattr(self, inode, ctx):
        """Attributes of ``inode``; a cached file reports its logical size (cache), not the backing one."""
        return self._attr(inode, self._stat(inode))

    async def setattr(self, inode, attr, fields, fh, ctx):
        """truncate (cached, durable at the next fsync); chmod/chown/utimes (on the backing file at once)."""
        path = self._path(inode)
        try:
            if fields.update_size:
                self._cache(inode).truncate(attr.st_size)
                self.touched.add(inode)
            if fields.update_mode:
                os.chmod(path, stat_mod.S_IMODE(attr.st_mode))
            if fields.update_uid or fields.update_gid:
                os.lchown(path, attr.st_uid if fields.update_uid else -1,
                          attr.st_gid if fields.update_gid else -1)
            if fields.update_atime or fields.update_mtime:
                st = os.lstat(path)
                os.utime(path, ns=(attr.st_atime_ns if fields.update_atime else st.st_atime_ns,
                                   attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns),
                         follow_symlinks=False)
        except OSError as e:
            raise _err(e) from None
        except ValueError:
            raise pyfuse3.FUSEError(errno.EINVAL) from None
        return self._attr(inode, self._stat(inode))

    async def access(self, inode, mode, ctx):
        """Always allowed: the kernel checks permissions itself (``default_permissions``)."""
        return True

    async def statfs(self, ctx):
        """The backing filesystem's statvfs."""
        s = os.statvfs(self.root)
        out = pyfuse3.StatvfsData()
        for f in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                  "f_ffree", "f_favail", "f_namemax"):
            setattr(out, f, getattr(s, f))
        return out

    # --- files ---------------------------------------------------------------------------------

    async def open(self, inode, flags, ctx):
        """Open ``inode``: one shared backing fd per inode; O_TRUNC is a cached truncate to 0."""
        self._acquire_fd(inode)
        if flags & os.O_TRUNC:
            self._cache(inode).truncate(0)
        self.touched.add(inode)
        return pyfuse3.FileInfo(fh=self._new_fh(inode))

    async def create(self, parent_inode, name, mode, flags, ctx):
        """Create and open a file: the entry exists in the backing dir at once, pending until a dir fsync."""
        path = self._child(parent_inode, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         stat_mod.S_IMODE(mode))
            created = True
        except FileExistsError:
            if flags & os.O_EXCL:
                raise pyfuse3.FUSEError(errno.EEXIST) from None
            fd, created = os.open(path, os.O_RDWR | os.O_CLOEXEC), False
        except OSError as e:
            raise _err(e) from None
        try:
            if created:
                self._chown(path, ctx)
            st = os.fstat(fd)
        except OSError as e:
            os.close(fd)
            raise _err(e) from None
        ino = self.inodes.ino_for(st.st_ino, parent_inode, name)
        self._acquire_fd(ino, fd)
        if created:
            self._record("create", ino, parent_inode, name)
        elif flags & os.O_TRUNC:
            self._cache(ino).truncate(0)
        self.touched.add(ino)
        return pyfuse3.FileInfo(fh=self._new_fh(ino)), self._attr(ino, st)

    async def read(self, fh, off, size):
        """Up to ``size`` bytes at ``off``: dirty cached bytes merged over the backing file."""
        ino = self._handles[fh]
        fd = self._fds[ino][0]
        self.counters["reads"] += 1
        fc = self.files.get(ino)
        try:
            if fc is None:
                return os.pread(fd, size, off)
            return fc.read(off, size, lambda o, n: os.pread(fd, n, o))
        except OSError as e:
            raise _err(e) from None

    async def write(self, fh, off, buf):
        """Record ``buf`` at ``off`` in the page cache (not durable until fsync); returns len(buf)."""
        ino = self._handles[fh]
        fc = self.files.get(ino) or self._cache(ino)
        self._seq += 1
        fc.write(off, buf, self._seq)
        c = self.counters
        c["writes"] += 1
        c["bytes_written"] += len(buf)
        self.touched.add(ino)
        return len(buf)

    async def flush(self, fh):
        """close(2) of a descriptor: not a sync, persists nothing (POSIX)."""
        return None   # close(2) is not fsync(2): nothing becomes durable

    async def release(self, fh):
        """Last close of a handle: drop it; the cache stays (like the page cache); purge a trashed inode."""
        ino = self._handles.pop(fh, None)
        entry = self._fds.get(ino)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self._fds[ino]
            os.close(entry[0])
            self.maybe_purge(ino)

    async def fsync(self, fh, datasync):
        """fsync/fdatasync of a file: its cached data and size reach the backing file (:meth:`sync_file`)."""
        self.counters["fsyncs"] += 1
        try:
            self.sync_file(self._handles[fh])
        except OSError as e:
            raise _err(e) from None

    # --- whole-filesystem views ------------------------------------------------------------------

    def stats(self) -> dict:
        """Counters plus the unsynced state: dirty files and bytes, pending namespace ops."""
        dirty = [fc for fc in self.files.values() if fc.dirty]
        return dict(self.counters, dirty_files=len(dirty),
                    dirty_bytes=sum(fc.dirty_bytes() for fc in dirty),
                    pending_namespace_ops=len(self.ns), open_files=len(self._fds))
