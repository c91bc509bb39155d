"""Kafka error names and codes used on the wire (KIP-595, "Error codes").

Responses carry ``ErrorCode`` as the Kafka numeric code; :func:`name` maps it
back. Only the codes this implementation returns are listed.
"""

NONE = 0
UNKNOWN_SERVER_ERROR = -1
#: Data plane (docs/data-plane.md): broker RPC errors.
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
INVALID_REQUIRED_ACKS = 21
UNSUPPORTED_VERSION = 35
#: Data plane: controller RPC errors (CreateTopics, BrokerRegistration,
#: BrokerHeartbeat, AlterPartition; kraft/controller/service.py).
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
STALE_BROKER_EPOCH = 77
INVALID_UPDATE_VERSION = 95
BROKER_ID_NOT_REGISTERED = 102
INELIGIBLE_REPLICA = 107
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
INCONSISTENT_VOTER_SET = 94
INCONSISTENT_CLUSTER_ID = 104
INVALID_VOTER_KEY = 125
DUPLICATE_VOTER = 126
VOTER_NOT_FOUND = 127

_NAMES = {v: k for k, v in dict(globals()).items() if k.isupper() and isinstance(v, int)}


def name(code: int) -> str:
    """The Kafka error name for ``code`` (e.g. 74 -> "FENCED_LEADER_EPOCH")."""
    return _NAMES.get(code, f"UNKNOWN_ERROR_{code}")
