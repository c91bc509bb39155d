"""Shared fixtures: one local[2] SparkSession for the whole session (UI off), started
only by the tests that ask for it; the commands' default lock file, the session's own.

A SIGTERM to the test process (``timeout``, CI cancelling a job) ends the session as Ctrl-C
does: pytest then runs every fixture's teardown (clusters, namespaces, sshd hosts) before it
exits, where the default SIGTERM would kill it with all of them left behind."""
from __future__ import annotations

import signal

import pytest


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    signal.signal(signal.SIGTERM, _interrupt)


@pytest.fixture(autouse=True)
def _sigterm_interrupts():
    """Again before every test: a test's event loop removing its own handler (asyncio's
    ``remove_signal_handler``) puts SIGTERM back to its default."""
    signal.signal(signal.SIGTERM, _interrupt)


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession, UI disabled, shared by every Spark test; stopped at the end."""
    from checkers.spark.session import spark_session

    session = spark_session("local[2]", app="kraft-chaos tests", shuffle_partitions=4, driver_memory="2g")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _a_default_lock_of_the_tests_own(tmp_path_factory, monkeypatch):
    """The commands' default ``--lock`` (harness/config/values.py ``DEFAULT_LOCK``, read when a
    parser is built) is a file of this test session's, never the machine's: a real run holding
    the machine's lock cannot stall a unit test, and no test writes under /run/lock."""
    from harness.config import values
    monkeypatch.setattr(values, "DEFAULT_LOCK", str(tmp_path_factory.getbasetemp() / "kraft-chaos.lock"))
