"""kraft: an independent Python implementation of the KRaft metadata quorum.

Standard library only (Python >= 3.11). Implements KIP-595 (Raft for the
metadata quorum), KIP-996 (Pre-Vote) and the directory ids of KIP-853.

The cores decide without I/O (``quorum/``, ``replication/``, with ``core/``, ``rules/`` and
``state_machines/``); ``storage/`` and ``wire/`` are the disk and TCP; ``runtime/`` runs the
cores on asyncio; ``controller/`` and ``broker/`` are the data plane's roles; ``node/`` is the
process (``python3 -m kraft.node``). See ``kraft/README.md`` for the layout and the wire
format, and ``python3 -m kraft --help``.
"""

#: Default TCP port for both the quorum RPCs and the client API.
DEFAULT_PORT = 9093
