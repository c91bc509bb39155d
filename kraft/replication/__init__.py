"""The brokers' partition replication without I/O (kraft/replication/core.py): leader,
follower, ISR, high watermark, truncation and produce acknowledgement. See
kraft/README.md ("The cores")."""
from .core import BrokerConfig, BrokerCore
from .replica import ReplicaState

__all__ = ["BrokerConfig", "BrokerCore", "ReplicaState"]
