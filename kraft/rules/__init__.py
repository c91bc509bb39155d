"""The protocol's rules as pure functions and bookkeeping, each unit-tested alone; the cores
(kraft/quorum/, kraft/replication/) apply them.

The quorum's (KIP-595, KIP-996, KIP-853):

- ``voting.py``: which votes and pre-votes to grant;
- ``high_watermark.py``: the leader's high watermark (the majority position);
- ``replicas.py``: the leader's view of every replica that fetches from it;
- ``voter_set.py``: voter sets, and the voter set as of each offset of the log;
- ``membership.py``: the rules of AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter.

The brokers' (Kafka's replication design, KIP-101, KIP-966):

- ``isr.py``: the partition leader's in-sync replicas and high watermark;
- ``produce.py``: when a Produce may be appended and how it is answered;
- ``truncation.py``: where a new follower truncates its partition log.
"""
