"""lazyfs: a FUSE filesystem that loses what was not fsynced, for the power-loss fault.

Modules: ``cache`` (per-file page cache model), ``namespace`` (pending
namespace ops), ``inodes`` (inode table), ``fs`` (the pyfuse3 Operations),
``power`` (crash and sync), ``control`` (unix-socket line protocol),
``__main__`` (the daemon), ``mounts`` (host-side manager: one daemon per node).
Only ``mounts`` and ``control`` are imported by the harness; they do not need
pyfuse3, which only the daemon process loads.
"""
