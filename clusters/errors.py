"""Errors raised by the cluster backends."""
from __future__ import annotations


class ClusterError(RuntimeError):
    """A cluster, its network, its image or the container engine could not be set up.

    The message names what failed and, where there is one, what to do about it
    (e.g. run ``scripts/ensure-docker.sh``, pass ``--subnet``, run
    ``kraft-chaos teardown``). The harness maps it to exit code 4.
    """
