"""API keys (Kafka's, from KIP-595/KIP-853) and this project's client API keys."""

#: Data plane broker RPCs (docs/data-plane.md; Kafka's keys, and ours for the
#: two kinds of Fetch, which here share a port with the quorum's Fetch).
PRODUCE = 0
LIST_OFFSETS = 2
METADATA = 3
OFFSET_FOR_LEADER_EPOCH = 23
CONSUMER_FETCH = 1100
REPLICA_FETCH = 1101
#: Data plane controller RPCs (kraft/controller/service.py; Kafka's keys).
CREATE_TOPICS = 19
ALTER_PARTITION = 56
BROKER_REGISTRATION = 62
BROKER_HEARTBEAT = 63
FETCH = 1
VOTE = 52
BEGIN_QUORUM_EPOCH = 53
END_QUORUM_EPOCH = 54
DESCRIBE_QUORUM = 55
#: KIP-853 voter changes (kraft.version 1; kraft/rules/membership.py).
ADD_RAFT_VOTER = 80
REMOVE_RAFT_VOTER = 81
UPDATE_RAFT_VOTER = 82

#: Client API (not Kafka's; see kraft/README.md): append one value, read the log,
#: and the key-value state machine (kraft/state_machines/kv.py): put or cas, linearizable get.
APPEND = 1000
READ = 1001
KV_WRITE = 1002
KV_GET = 1003

NAMES = {FETCH: "Fetch", VOTE: "Vote", BEGIN_QUORUM_EPOCH: "BeginQuorumEpoch",
         END_QUORUM_EPOCH: "EndQuorumEpoch", DESCRIBE_QUORUM: "DescribeQuorum",
         ADD_RAFT_VOTER: "AddRaftVoter", REMOVE_RAFT_VOTER: "RemoveRaftVoter",
         UPDATE_RAFT_VOTER: "UpdateRaftVoter",
         APPEND: "Append", READ: "Read",
         KV_WRITE: "KvWrite", KV_GET: "KvGet",
         PRODUCE: "Produce", LIST_OFFSETS: "ListOffsets", METADATA: "Metadata",
         OFFSET_FOR_LEADER_EPOCH: "OffsetForLeaderEpoch", CONSUMER_FETCH: "ConsumerFetch",
         REPLICA_FETCH: "ReplicaFetch",
         CREATE_TOPICS: "CreateTopics", ALTER_PARTITION: "AlterPartition",
         BROKER_REGISTRATION: "BrokerRegistration", BROKER_HEARTBEAT: "BrokerHeartbeat"}
