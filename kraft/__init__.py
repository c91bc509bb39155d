"""kraft: an independent Python implementation of the KRaft metadata quorum.

Standard library only (Python >= 3.11). Implements KIP-595 (Raft for the
metadata quorum), KIP-996 (Pre-Vote) and the directory ids of KIP-853. See
``kraft/README.md`` for the wire format and ``python3 -m kraft --help``.
"""

#: Default TCP port for both the quorum RPCs and the client API.
DEFAULT_PORT = 9093
