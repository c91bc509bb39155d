"""What the two cores (kraft/quorum/, kraft/replication/) and their runtimes share, all without I/O.

- ``events.py``: the contract: events in, effects out (etcd-io/raft's ``Step``/``Ready``);
- ``states.py``: the replica states and the election state persisted in quorum-state;
- ``timers.py``: deadline timers, the mixin both cores keep their timers with;
- ``unsafe.py``: the unsafe switches, as the one policy object the cores consult;
- ``records.py``: a log record and its on-disk encoding (with a CRC);
- ``record_log.py``: a log's records in memory, with its epoch cache and durable end;
- ``errors.py``: Kafka's error codes, which every answer carries;
- ``rpc.py``: refusals (``Refused``, ``InvalidRequest``) and request-field checks.
"""
