"""Shared fixtures: one local[2] SparkSession for the whole session (UI off), started
only by the tests that ask for it."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession, UI disabled, shared by every Spark test; stopped at the end."""
    from checkers.spark.session import spark_session

    session = spark_session("local[2]", app="kraft-chaos tests", shuffle_partitions=4, driver_memory="2g")
    yield session
    session.stop()
