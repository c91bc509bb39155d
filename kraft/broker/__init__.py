"""The broker role (``process.roles=broker``): the data plane's partition replicas on a node.

- ``lifecycle.py``: ``BrokerLifecycle``, without I/O: registration and heartbeats with the
  active controller, and the committed image turned into the replication core's commands;
- ``service.py``: ``BrokerService``, the adapter over the replication core
  (kraft/replication/) and the lifecycle core;
- ``controller_channel.py``: how a broker reaches the active controller.
"""
