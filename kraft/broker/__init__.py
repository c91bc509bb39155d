"""The broker role (``process.roles=broker``): the data plane's partition replicas on a node.

- ``service.py``: ``BrokerService``, the adapter over the replication core
  (kraft/replication/), driven by the metadata the controllers commit;
- ``controller_channel.py``: how a broker reaches the active controller.
"""
