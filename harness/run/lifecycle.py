"""What one run holds and how it always ends (:func:`harness.run.runner.run_test`).

:class:`RunLifecycle` keeps what the run has made so far (the engine connection, the
cluster, the DB, the nemesis controller, the power-loss disks, the history, the workload),
runs its blocking calls in threads, turns SIGINT and SIGTERM into a clean cancel that
surfaces as :class:`Interrupted` (exit 130), and in any case cleans up: waits for the
blocking calls in flight, heals (with ``keep_cluster``), stops and collects the nodes
unless done, and tears the cluster down (unless ``keep_cluster``), each step best effort.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import signal
import threading
from pathlib import Path
from typing import Any, Callable

from harness.config.resolved import ResolvedConfig
from history import store

log = logging.getLogger("kraft_chaos.runner")


class Interrupted(Exception):
    """The run was interrupted (SIGINT or SIGTERM); the cluster was torn down. Exit code 130."""


class RunLifecycle:
    """One run's state, so cleanup knows what exists; the run itself is the subclass's
    ``_body()`` (a coroutine returning the results), which :meth:`main` runs."""

    def __init__(self, config: ResolvedConfig, run_dir: Path, progress: bool | None):
        self.config, self.run_dir, self.progress = config, run_dir, progress
        self.run_id = f"{run_dir.name}-{config.seed}"
        self.engine = None
        self.cluster = None
        self.db = None
        self.controller = None
        self.disks = None
        self.history = None
        self.workload = None
        self.collected = False
        self.interrupted = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[asyncio.Future] = []
        # the run's own threads for its set-up, collection and teardown: never the event
        # loop's shared executor, which a client library's hung calls may fill
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="kraft-chaos-run")

    # -- plumbing ---------------------------------------------------------

    async def _blocking(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run blocking ``fn`` in one of the run's own threads. If we are cancelled meanwhile, the
        thread's future is remembered so cleanup waits for it before tearing down."""
        fut = asyncio.get_running_loop().run_in_executor(self._executor, lambda: fn(*args, **kwargs))
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            self._pending.append(fut)
            raise

    def _on_sigint(self, task: asyncio.Task) -> None:
        if self.interrupted:
            log.warning("interrupt again: still cleaning up (tearing down the cluster), please wait; "
                        "to force, kill -9 this process and run `kraft-chaos teardown`")
            return
        self.interrupted = True
        log.warning("interrupted: stopping the test and tearing down the cluster")
        task.cancel()

    async def main(self) -> dict:
        """Run the test and always clean up; SIGINT/SIGTERM cancel it (raises Interrupted)."""
        loop = self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        on_main = threading.current_thread() is threading.main_thread()
        if on_main:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self._on_sigint, task)
        try:
            try:
                return await self._body()
            except asyncio.CancelledError:
                if self.interrupted:
                    raise Interrupted("interrupted by SIGINT or SIGTERM") from None
                raise
            finally:
                await self._cleanup()
        finally:
            self._executor.shutdown(wait=False)
            if on_main:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)

    # -- the end ----------------------------------------------------------

    async def _collect(self, nodes: list[str]) -> None:
        for node in nodes:
            dest = store.nodes_dir(self.run_dir) / node
            try:
                await self._blocking(self.db.collect, node, dest)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.error("could not collect %s: %s", node, e)
        self.collected = True

    async def _cleanup(self) -> None:
        """Wait for in-flight blocking calls, heal, collect (best effort), tear down."""
        for fut in self._pending:
            try:
                await fut
            except BaseException:
                pass
        if self.workload is not None:
            try:
                await self.workload.close()
            except BaseException as e:
                log.error("could not close the workload's clients: %r", e)
        if self.history is not None:
            self.history.close()
        if self.controller is not None and self.config.cluster.keep:
            await self._best_effort("heal", self.controller.heal_all)
        if self.db is not None and not self.collected:
            await self._best_effort("stop nodes", self.db.teardown)
            try:
                await self._collect(list(self.cluster.nodes))
            except BaseException as e:
                log.error("collecting node data failed: %r", e)
        if self.cluster is not None:
            if self.config.cluster.keep:
                log.info("keeping cluster %s (remove it with `kraft-chaos teardown`)", self.run_id)
            else:
                await self._best_effort("tear down the cluster", self.cluster.teardown)
        if self.disks is not None and not self.config.cluster.keep:
            await self._best_effort("unmount the power-loss disks", self.disks.close)
        if self.engine is not None:
            await self._best_effort("close the engine connection", self.engine.close)

    async def _best_effort(self, what: str, fn: Callable) -> None:
        try:
            await self._blocking(fn)
        except BaseException as e:
            log.error("could not %s: %r", what, e)
