"""The active controller (KIP-631): the data plane's controller role on a controller node.

- ``core.py``: ``ControllerCore``, without I/O: registrations, heartbeats and fencing,
  partition elections, AlterPartition, CreateTopics, written to the metadata log one batch
  at a time (see kraft/README.md, "The cores");
- ``partition_election.py``: its decisions as pure functions of the metadata image
  (replica assignment, leader election, fencing, AlterPartition validation);
- ``messages.py``: its requests, responses, events and effects; ``codec.py``: their wire form;
- ``quorum_link.py``: how a node links the controller core to its quorum core;
- ``service.py``: ``ControllerService``, the asyncio adapter (kraft/node/server.py starts it).
"""
from .core import ControllerConfig, ControllerCore

__all__ = ["ControllerConfig", "ControllerCore"]
