"""Errors raised by the targets (the systems under test other than our own quorum)."""
from __future__ import annotations


class TargetError(RuntimeError):
    """A target could not be fetched, configured, formatted or started.

    The message names what failed (the version and missing artifact, the node
    and its log tail, or the tool that is missing) and, where there is one,
    what to do about it.
    """
