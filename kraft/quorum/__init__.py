"""The quorum core: a KRaft replica without I/O (kraft/quorum/core.py), its messages and
configuration. See kraft/README.md ("The cores") for how to drive one."""
from ..core.events import FatalError
from .config import QuorumConfig
from .core import QuorumCore

__all__ = ["FatalError", "QuorumConfig", "QuorumCore"]
