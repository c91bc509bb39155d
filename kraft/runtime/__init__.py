"""Running the cores on asyncio, over TCP and the disk: the adapters that carry out their effects.

- ``driver.py``: ``AsyncDriver``, which runs any core on the event loop (events, timers, sends);
- ``raft.py``: ``RaftNode``, the KRaft replica: the quorum core's adapter;
- ``peers.py``: how a node reaches the other replicas (their endpoints);
- ``config.py``: a node's configuration (a properties file);
- ``kv_service.py``: the key-value API's entry point on a ``RaftNode``.
"""
