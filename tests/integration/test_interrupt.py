"""Ctrl-C (SIGINT) and SIGTERM during a run: exit 130, history kept, nothing left behind;
on each backend (``backend`` fixture: docker, netns, ssh)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.integration.conftest import harness_run_id


@pytest.mark.parametrize("sig,seed", [(signal.SIGINT, 9191001), (signal.SIGTERM, 9191002)])
def test_interrupted_run_tears_down(backend, tmp_path, sig, seed):
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--cluster", backend.name, "--nodes", "3",
         "--time-limit", "60", "--nemesis", "partition", "--nemesis-interval", "1",
         *backend.args, "--store", str(store), "--seed", str(seed)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        history = run_id = None
        while time.monotonic() < deadline:
            hs = list(store.glob("*/*/history.jsonl"))
            if hs:
                run_id = harness_run_id(hs[0].parent, seed)
                if sum(1 for _ in hs[0].open()) > 50 and backend.live_nodes(run_id):
                    history = hs[0]
                    break
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.5)
        assert history is not None, "the run never got going"
        assert backend.live_nodes(run_id) == 3
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert backend.leftovers(run_id) == []
    # the history written so far is intact, every line parses
    lines = history.read_text().splitlines()
    assert len(lines) > 50 and all(json.loads(line)["index"] == i for i, line in enumerate(lines))


def test_failed_run_tears_down(backend, tmp_path):
    """A run whose nodes cannot start (an unknown unsafe switch reaches their
    config) fails with a clear DBError naming the node's complaint, and
    leaves nothing behind."""
    from targets.kraft_db import DBError
    from harness.config.resolved import resolve
    from harness.config.run import RunConfig
    from harness.run.runner import run_test

    seed = 9191003
    with pytest.raises(DBError, match="unknown unsafe switch bogus"):
        run_test(resolve(RunConfig(seed=seed, nodes=3, time_limit=5, store=str(tmp_path), **backend.config,
                                   unsafe=["bogus"], cluster=backend.name)), progress=False)
    run_dir = next(tmp_path.glob("*/*"))
    assert backend.leftovers(harness_run_id(run_dir, seed)) == []
