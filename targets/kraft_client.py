"""The kraft target's client: ``kraft.wire.client.KraftClient`` with its errors mapped onto the
history's vocabulary (history/outcomes.py), as a Jepsen client maps a system's errors
onto ``:fail`` and ``:info``.

``kraft/`` is deployed to the nodes on its own, so its client keeps errors of its own
(``kraft.wire.client.DefiniteError``, ``IndefiniteError``); every caller above the system under
test gets a :class:`KraftClient` from here, whose requests raise
:class:`history.outcomes.DefiniteError` or :class:`history.outcomes.IndefiniteError` with
the same code, message and leader hint.
"""
from __future__ import annotations

import functools
from typing import Any

from history.outcomes import ClientError, DefiniteError, IndefiniteError
from kraft.wire import client as kclient

#: the requests of ``kraft.wire.client.KraftClient`` (each a coroutine) whose errors are mapped
REQUESTS = ("request", "append", "read", "put", "cas", "get", "describe_quorum", "add_voter",
            "remove_voter", "update_voter")


def translate(err: kclient.ClientError) -> ClientError:
    """``err`` (a ``kraft.wire.client.ClientError``) as the history's error of the same kind:
    definite stays definite, anything else is indefinite; code, message and leader hint kept."""
    cls = DefiniteError if isinstance(err, kclient.DefiniteError) else IndefiniteError
    text = str(err)
    prefix = f"{err.code}: "
    return cls(err.code, text[len(prefix):] if text.startswith(prefix) else "",
               err.leader_id, err.leader_epoch)


class KraftClient:
    """A connection to one kraft node (``kraft.wire.client.KraftClient``, looked up when made, so
    tests can replace it), whose requests raise :mod:`history.outcomes` errors.
    ``timeout_ms`` bounds each request (ms)."""

    def __init__(self, host: str, port: int, cluster_id: str, timeout_ms: int = 3000):
        self.inner = kclient.KraftClient(host, port, cluster_id, timeout_ms=timeout_ms)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in REQUESTS:
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await attr(*args, **kwargs)
            except kclient.ClientError as e:
                raise translate(e) from e
        return call

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        await self.inner.close()


def kraft_client(host: str, port: int, cluster_id: str, timeout_ms: int) -> KraftClient:
    """The kraft target's client factory, ``(host, port, cluster_id, timeout_ms) -> client``."""
    return KraftClient(host, port, cluster_id, timeout_ms=timeout_ms)
