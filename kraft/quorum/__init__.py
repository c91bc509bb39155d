"""The quorum core: a KRaft replica without I/O (kraft/quorum/core.py), its shared state
(kraft/quorum/state.py), timer keys, messages and configuration. See kraft/README.md
("The cores") for how to drive one."""
from ..core.events import FatalError
from .config import QuorumConfig
from .core import QuorumCore
from .state import QuorumState
from .timer_keys import TimerKey

__all__ = ["FatalError", "QuorumConfig", "QuorumCore", "QuorumState", "TimerKey"]
