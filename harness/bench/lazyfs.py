"""Throughput of the lazyfs filesystem against a plain directory: ``python -m harness.bench.lazyfs``.

Sequential 4 KiB ``os.write`` calls with an ``fsync`` every 10 writes, into
one file, for ``--mib`` MiB (default 64), on a plain directory of the same
disk and on a lazyfs mount (``clusters.lazyfs.mounts.LazyMounts``), with and
without fsync of the backing files; also a sequential 64 KiB read of the
result. Prints MiB/s and writes/s per setup. Needs FUSE (``make fuse``).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from clusters.lazyfs.mounts import LazyMounts

BLOCK = 4096
SYNC_EVERY = 10


def write_run(path: Path, total: int) -> float:
    """Seconds to write ``total`` bytes in 4 KiB writes, fsync every 10, then fsync and close."""
    buf = os.urandom(BLOCK)
    n = total // BLOCK
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    try:
        for i in range(n):
            os.write(fd, buf)
            if i % SYNC_EVERY == SYNC_EVERY - 1:
                os.fsync(fd)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def read_run(path: Path) -> float:
    """Seconds to read ``path`` sequentially in 64 KiB reads."""
    fd = os.open(path, os.O_RDONLY)
    t0 = time.perf_counter()
    try:
        while os.read(fd, 65536):
            pass
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; print one line per setup."""
    ap = argparse.ArgumentParser(prog="python -m harness.bench.lazyfs", description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="MiB written per setup (default 64)")
    a = ap.parse_args(argv)
    total = a.mib << 20
    rows = []
    with tempfile.TemporaryDirectory(prefix="kc-lazyfs-bench-", dir=os.environ.get("TMPDIR", "/var/tmp")) as d:
        plain = Path(d) / "plain"
        plain.mkdir()
        rows.append(("plain dir", write_run(plain / "f", total), read_run(plain / "f")))
        for backing_fsync in (True, False):
            mounts = LazyMounts(Path(d) / f"lazy-{backing_fsync}", backing_fsync=backing_fsync)
            try:
                mnt = mounts.mount("n1")
                w = write_run(mnt / "f", total)
                r = read_run(mnt / "f")
                label = "lazyfs" + ("" if backing_fsync else " (no backing fsync)")
                rows.append((label, w, r))
            finally:
                mounts.unmount_all()
    n = total // BLOCK
    print(f"{a.mib} MiB as {n} sequential 4 KiB writes, fsync every {SYNC_EVERY}:")
    for label, w, r in rows:
        print(f"  {label:28s} write {a.mib / w:8.1f} MiB/s ({n / w:9.0f} writes/s)   "
              f"read (64 KiB) {a.mib / r:8.1f} MiB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
