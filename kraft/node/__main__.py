"""Run a KRaft node: ``python3 -m kraft.node --config FILE``.

SIGTERM is a graceful shutdown (a leader resigns with EndQuorumEpoch first);
SIGKILL is a crash. Exit codes: 0 after a clean shutdown, 2 for a bad config
or data dir, 70 when an invariant breaks (FatalError).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from ..core.states import StateKind
from ..runtime.config import ConfigError, load_config
from ..runtime.raft import TICK_S, RaftNode
from ..storage.meta import MetaError, check_meta
from ..storage.quorum_state import QuorumStateError
from .server import Server

log = logging.getLogger("kraft.node")
#: How long a resigning leader waits for a successor before exiting (s).
RESIGN_GRACE_S = 2.0


async def run(cfg) -> int:
    """Run until SIGTERM/SIGINT; returns the process exit code."""
    meta = check_meta(cfg.data_dir, cfg.node_id, cfg.cluster_id)
    node = RaftNode(cfg, meta)
    await node.start()
    server = Server(node, cfg.listen_host, cfg.listen_port)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        while not stop.is_set() and node.fatal is None:
            node.tick()
            try:
                await asyncio.wait_for(stop.wait(), TICK_S)
            except TimeoutError:
                pass
        if node.fatal is not None:
            log.critical("stopping: %s", node.fatal)
            return 70
        log.info("graceful shutdown (state %s, epoch %d)", node.kind.value, node.epoch)
        if node.kind is StateKind.LEADER:
            node.resign("graceful shutdown")
            epoch = node.epoch
            deadline = loop.time() + RESIGN_GRACE_S
            while loop.time() < deadline and node.epoch == epoch:
                node.tick()
                await asyncio.sleep(TICK_S)
        return 0
    finally:
        await server.close()
        await node.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point; see the module docstring for exit codes."""
    ap = argparse.ArgumentParser(prog="python3 -m kraft.node", description="Run a KRaft node.")
    ap.add_argument("--config", required=True, help="node properties file")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_config(args.config)
        return asyncio.run(run(cfg))
    except (ConfigError, MetaError, QuorumStateError) as e:
        print(f"kraft.node: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"kraft.node: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
