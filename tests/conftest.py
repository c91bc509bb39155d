"""Shared pytest configuration: the ``docker`` marker for tests that need a Docker engine."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "docker: needs a running Docker engine (skipped when none answers)")
