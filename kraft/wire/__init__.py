"""What travels over TCP (kraft/README.md, "Wire format").

- ``frames.py``: length-prefixed JSON frames;
- ``api.py``: the API keys (Kafka's, and the client API's own);
- ``quorum_codec.py``: request and response bodies to the quorum's messages and back;
- ``broker_codec.py``: the same for the brokers' replication RPCs;
- ``client.py``: ``KraftClient``, a client for a node, whose errors say whether a request
  certainly had no effect.
"""
