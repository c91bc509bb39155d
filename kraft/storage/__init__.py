"""What a node keeps on disk, and how it reads it back (kraft/README.md, "Data dir").

- ``log.py``: the log: segment files of CRC'd records, a torn tail cut on open;
- ``segments.py``: the segment files' names;
- ``durable.py``: durable writes (temp file, fsync, rename, directory fsync);
- ``meta.py``: ``meta.properties``, a data dir's node, cluster and directory ids;
- ``quorum_state.py``: the ``quorum-state`` file (the election state);
- ``bootstrap.py``: ``format``, kraft.version and the bootstrap voter set;
- ``recovery.py``: what a quorum node restarts from, a pure function of its disk's contents;
- ``partition.py``: a broker's partition replica: its log and high-watermark checkpoint;
- ``logreader.py``: reads a data dir offline without changing it (for the checkers).
"""
