"""pytest plugin (entry point ``pytest11``): the ``kraft_chaos_run`` fixture and the ``docker`` marker.

Usage::

    @pytest.mark.docker
    def test_partitions(kraft_chaos_run):
        results, store_dir = kraft_chaos_run(nodes=3, time_limit=20, nemesis=["partition"])
        assert results["valid"] is True

Runs go to a per-session temporary store unless ``--kraft-chaos-store DIR`` is given.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Adds ``--kraft-chaos-store DIR`` (store root for runs made by the fixture)."""
    parser.addoption("--kraft-chaos-store", default=None,
                     help="store root for kraft_chaos_run (default: a temporary directory)")


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``docker`` marker."""
    config.addinivalue_line("markers", "docker: needs a running Docker engine (starts a real cluster)")


@pytest.fixture
def kraft_chaos_run(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Callable[..., tuple[dict, Path]]:
    """A factory: ``kraft_chaos_run(**config) -> (results, store_dir)``.

    Keyword arguments are :class:`harness.runner.RunConfig` fields; ``seed``
    defaults to 0 so a failing test repeats exactly. No live progress line.
    Raises whatever :func:`harness.runner.run_test` raises.
    """
    from harness.runner import RunConfig, run_test

    root = request.config.getoption("--kraft-chaos-store") or str(tmp_path_factory.mktemp("kraft-chaos-store"))

    def run(**overrides: Any) -> tuple[dict, Path]:
        overrides.setdefault("seed", 0)
        overrides.setdefault("store", root)
        return run_test(RunConfig(**overrides), progress=False)

    return run
