"""The active controller (KIP-631): the data plane's controller role on a controller node.

- ``service.py``: ``ControllerService``: CreateTopics, BrokerRegistration, BrokerHeartbeat
  and AlterPartition, written to the metadata log;
- ``partition_election.py``: its decisions as pure functions of the metadata image
  (replica assignment, leader election, fencing, AlterPartition validation).
"""
