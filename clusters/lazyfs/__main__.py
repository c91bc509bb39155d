"""The lazyfs daemon: ``python -m clusters.lazyfs BACKING MOUNTPOINT --control SOCKET [--log FILE]``.

Mounts :class:`clusters.lazyfs.fs.LazyFS` over BACKING at MOUNTPOINT
(fsname ``--fsname``, default ``kraft-chaos-lazyfs``, type
``fuse.kraft-chaos-lazyfs``, ``allow_other`` so containers that bind-mount
it can use it) and serves the control commands (``clusters/lazyfs/control.py``)
on SOCKET. Runs in the foreground until unmounted (``fusermount3 -u``), the
``exit`` command, SIGTERM or SIGINT; then unmounts and exits 0. Exits 2 on bad
arguments, 1 when the mount fails.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

import pyfuse3
import trio

from clusters.lazyfs import power
from clusters.lazyfs.control import serve
from clusters.lazyfs.fs import LazyFS

FSNAME = "kraft-chaos-lazyfs"
log = logging.getLogger("clusters.lazyfs")


def _bool(args: dict, key: str) -> bool:
    v = args.get(key, False)
    if not isinstance(v, bool):
        raise TypeError(f"{key} must be true or false, got {v!r}")
    return v


def commands(fs: LazyFS) -> dict:
    """The control commands of a daemon serving ``fs``: name -> async handler(args) -> dict."""
    async def ping(args):
        """``{"pid", "backing"}``."""
        return {"pid": os.getpid(), "backing": os.fsdecode(fs.root)}

    async def stats(args):
        """:meth:`LazyFS.stats`."""
        return fs.stats()

    async def crash(args):
        """:func:`power.crash`: ``torn``, ``lost_renames`` (bools), ``seed`` (int); TypeError otherwise."""
        unknown = set(args) - {"torn", "lost_renames", "seed"}
        if unknown:
            raise TypeError(f"unknown argument(s) {sorted(unknown)}; crash takes torn, lost_renames, seed")
        seed = args.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        out = await power.crash(fs, torn=_bool(args, "torn"), lost_renames=_bool(args, "lost_renames"),
                                seed=seed)
        log.info("crash %s -> %s", args, out)
        return out

    async def sync(args):
        """:func:`power.sync_all`."""
        return power.sync_all(fs)

    async def exit_(args):
        """Unmount and exit the daemon."""
        pyfuse3.terminate()
        return {"exiting": True}

    return {"ping": ping, "stats": stats, "crash": crash, "sync": sync, "exit": exit_}


async def _run(fs: LazyFS, control: str) -> None:
    async with trio.open_nursery() as nursery:
        async def fuse_main():
            """The FUSE request loop; its end (unmounted) ends the daemon."""
            await pyfuse3.main()
            nursery.cancel_scope.cancel()

        async def on_signals():
            """SIGTERM/SIGINT: leave the request loop, which unmounts."""
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    log.info("signal %s: unmounting", signum)
                    pyfuse3.terminate()
                    return

        await nursery.start(serve, control, commands(fs))
        nursery.start_soon(fuse_main)
        nursery.start_soon(on_signals)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, mount, serve until unmounted; the process exit code."""
    p = argparse.ArgumentParser(prog="python -m clusters.lazyfs", description=__doc__.split("\n")[0])
    p.add_argument("backing", help="directory holding the durable state")
    p.add_argument("mountpoint", help="empty directory to mount on")
    p.add_argument("--control", required=True, help="unix socket path for the control commands")
    p.add_argument("--log", help="log file (default: stderr)")
    p.add_argument("--fsname", default=FSNAME, help=f"mount source name (default {FSNAME}); "
                   "sweeps find mounts whose source starts with kraft-chaos-lazyfs")
    p.add_argument("--no-backing-fsync", action="store_true",
                   help="do not fsync the backing files when the guest syncs (faster; the host keeps power)")
    p.add_argument("--debug", action="store_true", help="log every FUSE request (pyfuse3 debug)")
    a = p.parse_args(argv)
    logging.basicConfig(filename=a.log, level=logging.DEBUG if a.debug else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not a.fsname.startswith(FSNAME):
        p.error(f"--fsname must start with {FSNAME}")
    fs = LazyFS(a.backing, backing_fsync=not a.no_backing_fsync)
    options = set(pyfuse3.default_options)
    options |= {f"fsname={a.fsname}", f"subtype={FSNAME}", "allow_other"}
    if a.debug:
        options.add("debug")
    try:
        pyfuse3.init(fs, a.mountpoint, options)
    except Exception as e:  # noqa: BLE001 - reported and turned into an exit code
        log.error("mounting %s on %s failed: %s", a.backing, a.mountpoint, e)
        print(f"lazyfs: mounting {a.backing} on {a.mountpoint} failed: {e}", file=sys.stderr)
        return 1
    log.info("mounted %s on %s (control %s, pid %d)", a.backing, a.mountpoint, a.control, os.getpid())
    try:
        trio.run(_run, fs, a.control)
    finally:
        pyfuse3.close(unmount=True)
        try:
            os.unlink(a.control)
        except OSError:
            pass
        log.info("unmounted %s", a.mountpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
