"""The lazyfs page-cache model and pending namespace ops (pure, no FUSE)."""
from __future__ import annotations

import random

import pytest

from clusters.lazyfs.cache import Extents, FileCache
from clusters.lazyfs.inodes import ROOT_INODE, TRASH_NAME, TRASH_PARENT, InodeTable
from clusters.lazyfs.namespace import NamespaceLog, NsOp


def model_apply(buf: bytearray, off: int, data: bytes) -> None:
    if len(buf) < off + len(data):
        buf.extend(b"\0" * (off + len(data) - len(buf)))
    buf[off:off + len(data)] = data


def check_invariants(ext: Extents) -> None:
    for k in range(len(ext) - 1):
        assert ext.starts[k] + len(ext.datas[k]) < ext.starts[k + 1], "overlapping or touching extents"
    assert all(len(d) > 0 for d in ext.datas)


def test_extents_random_against_model():
    rng = random.Random(7)
    for _ in range(300):
        ext, model, written = Extents(), bytearray(), set()
        for _ in range(rng.randint(1, 25)):
            off, n = rng.randint(0, 200), rng.randint(1, 40)
            data = bytes(rng.randrange(1, 256) for _ in range(n))
            ext.write(off, data)
            model_apply(model, off, data)
            written.update(range(off, off + n))
            check_invariants(ext)
        out = bytearray(len(model))
        ext.overlay(0, out)
        for i in range(len(model)):
            assert out[i] == (model[i] if i in written else 0)
        assert ext.nbytes() == len(written)


def test_extents_sequential_append_is_one_extent():
    ext = Extents()
    for i in range(100):
        ext.write(i * 4096, b"x" * 4096)
    assert len(ext) == 1 and ext.nbytes() == 409600


def test_extents_truncate_and_overlay_window():
    ext = Extents()
    ext.write(10, b"abcdef")
    ext.write(30, b"XYZ")
    ext.truncate(13)
    assert ext.items() == [(10, b"abc")]
    out = bytearray(b"......")
    ext.overlay(8, out)
    assert bytes(out) == b"..abc."
    with pytest.raises(ValueError):
        ext.write(-1, b"x")


def test_filecache_read_merges_dirty_over_backing():
    disk = b"0123456789"
    fc = FileCache(durable_size=len(disk))
    pread = lambda o, n: disk[o:o + n]  # noqa: E731
    fc.write(2, b"ab", seq=1)
    fc.write(12, b"Z", seq=2)
    assert fc.size == 13
    assert fc.read(0, 100, pread) == b"01ab456789\0\0Z"
    assert fc.dirty and fc.dirty_bytes() == 3


def test_filecache_truncate_hides_backing_bytes():
    disk = b"0123456789"
    fc = FileCache(durable_size=len(disk))
    pread = lambda o, n: disk[o:o + n]  # noqa: E731
    fc.truncate(4)
    fc.truncate(8)                      # extend: bytes 4..8 must read as zeros, not "4567"
    assert fc.read(0, 100, pread) == b"0123\0\0\0\0"
    plan = fc.sync_plan()
    assert plan.cut_to == 4 and plan.writes == [] and plan.size == 8
    fc.mark_synced()
    assert not fc.dirty and fc.durable_size == 8


def test_filecache_sync_plan_and_torn_prefix():
    fc = FileCache(durable_size=0)
    fc.write(0, b"hello", seq=1)
    fc.write(5, b"world!", seq=2)
    plan = fc.sync_plan()
    assert plan.cut_to is None and plan.writes == [(0, b"helloworld!")] and plan.size == 11
    tw = fc.torn(random.Random(3))
    assert tw.offset == 5 and tw.length == 6 and 1 <= tw.kept <= 5 and tw.data == b"world!"[:tw.kept]
    assert fc.torn(random.Random(3)) == tw          # seeded
    fc.mark_synced()
    assert fc.torn(random.Random(3)) is None
    fc.write(0, b"x", seq=3)
    assert fc.torn(random.Random(3)) is None        # a 1-byte write has no strict prefix


def test_namespace_sync_dir_rules():
    ns = NamespaceLog()
    ns.record("mkdir", 10, ROOT_INODE, b"d")
    ns.record("create", 11, 10, b"x.tmp")
    ns.record("rename", 11, 12, b"x", old_parent=10, old_name=b"x.tmp")   # into dir 12
    ns.record("create", 13, 10, b"y")
    # fsync of dir 12 makes the rename durable, and the create of the same inode with it
    done = ns.sync_dir(12)
    assert [(op.kind, op.ino) for op in done] == [("create", 11), ("rename", 11)]
    assert [(op.kind, op.ino) for op in ns.pending()] == [("mkdir", 10), ("create", 13)]
    assert ns.pending_in(10) == 1
    assert [op.ino for op in ns.sync_dir(10)] == [13]
    assert [op.ino for op in ns.sync_all()] == [10]
    assert len(ns) == 0


def test_namespace_bad_ops():
    with pytest.raises(ValueError):
        NsOp(seq=1, kind="link", ino=1, parent=1, name=b"a")
    with pytest.raises(ValueError):
        NsOp(seq=1, kind="rename", ino=1, parent=1, name=b"a")


def test_inode_table_paths_follow_renames():
    t = InodeTable(b"/b", 100)
    d = t.ino_for(200, ROOT_INODE, b"d")
    f = t.ino_for(300, d, b"f")
    assert t.path(f) == b"/b/d/f"
    t.move(d, ROOT_INODE, b"e")
    assert t.path(f) == b"/b/e/f"
    t.move(f, TRASH_PARENT, b"7-3")
    assert t.in_trash(f) and t.path(f) == b"/b/" + TRASH_NAME + b"/7-3"
    assert t.ino_for(300, d, b"g") == f and not t.in_trash(f)
    t.forget(f)
    assert f not in t and t.known(300) is None
    with pytest.raises(KeyError):
        t.path(f)
