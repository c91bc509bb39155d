"""The state machines the committed log feeds, pure (no I/O): every node applies its committed
records to them, in offset order.

- ``kv.py``: the replicated key-value registers (put, cas, get);
- ``metadata_image.py``: the cluster metadata image (brokers, topics, partitions), folded
  from Metadata records;
- ``metadata_replay.py``: replays the committed Metadata records of a log into that image.
"""
