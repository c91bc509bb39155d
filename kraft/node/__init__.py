"""A kraft node process: ``python3 -m kraft.node --config FILE``.

- ``__main__.py``: starts the node, handles SIGTERM (a graceful shutdown) and sets the exit code;
- ``server.py``: the TCP server: one port for the quorum RPCs, the client API and the
  controller's or the broker's RPCs.
"""
