"""The nodes' power-loss disks for a run: lazyfs mounts (``clusters.lazyfs``) holding each
node's durable state, when a family the run plays needs them (``power-loss``: its spec's
``needs_disks``, faults/registry.py; the resolved config's ``nemesis.needs_disks``)."""
from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

from clusters.lazyfs.mounts import LazyMounts, sweep

log = logging.getLogger("kraft_chaos.runner")


class RunDisks:
    """One lazyfs mount per node under a temporary root, bound into each node's container at
    the target's ``disk_dir``. :meth:`close` unmounts them and removes the root; it never
    raises (the containers must be gone first)."""

    def __init__(self, nodes: list[str], disk_dir: str):
        self.root = Path(tempfile.mkdtemp(prefix="kraft-chaos-disks-"))
        # the host never loses power: its own copy of the durable state need not be fsynced
        self.mounts = LazyMounts(self.root, backing_fsync=False)
        try:
            self.mounts.mount_all(nodes)
        except BaseException:
            self.close()
            raise
        self.binds = self.mounts.binds(disk_dir, nodes)
        log.info("power-loss disks: lazyfs on %s for %s (%s)", disk_dir, ", ".join(nodes), self.root)

    def sync_all(self, nodes: list[str]) -> None:
        """Make what the nodes have now durable (the formatted disks: the baseline a power
        loss falls back to at worst)."""
        for n in nodes:
            self.mounts.sync(n)

    def close(self) -> None:
        """Unmount every disk and remove the root."""
        try:
            self.mounts.unmount_all()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def sweep_disks() -> list[str]:
    """Leftovers of runs that crashed: unmount every lazyfs mount, stop the daemons of the
    roots this module makes (``/tmp/kraft-chaos-disks-*``) and remove those roots. Never
    raises; returns what was done, one line each."""
    done = sweep()
    for root in Path(tempfile.gettempdir()).glob("kraft-chaos-disks-*"):
        done += sweep(root)
        shutil.rmtree(root, ignore_errors=True)
        done.append(f"removed {root}")
    return done
