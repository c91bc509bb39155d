"""DescribeQuorum (api key 55) against Apache Kafka's KRaft controllers, standard library only.

Implements, from Apache Kafka's message schemas in
``clients/src/main/resources/common/message/``:

* ``DescribeQuorumRequest.json`` / ``DescribeQuorumResponse.json`` versions
  0-2 (KIP-595 v0; KIP-836 v1 adds LastFetchTimestamp/LastCaughtUpTimestamp;
  KIP-853 v2 adds ErrorMessage, ReplicaDirectoryId and the voters' Nodes with
  their listeners): the messages, their types and errors are
  :mod:`targets.kafka.describe_quorum_messages`'s (re-exported here).
* ApiVersions (:mod:`targets.kafka.protocol`, v4 first, falling back to
  the version an UNSUPPORTED_VERSION answer offers) once per connection, to
  pick the highest DescribeQuorum version both sides support, within the versions the
  release's controllers serve (``dq_versions``: :attr:`targets.kafka.releases.Release.describe_quorum`,
  v0-v1 before 3.9, v0-v2 from 3.9).

:class:`KafkaQuorumClient` keeps one connection for repeated samples (the
shape of ``kraft.wire.client.KraftClient.describe_quorum`` so the quorum monitor
can use it); :func:`describe_quorum` is a blocking one-shot. Both ask about
``__cluster_metadata`` partition 0. Only the active controller answers; the
others say NOT_LEADER_OR_FOLLOWER without naming a leader (Kafka's
``DescribeQuorumResponse.singletonErrorResponse``).
"""
from __future__ import annotations

import asyncio
import itertools
import socket
from typing import Callable, Generator

from .describe_quorum_messages import (  # noqa: F401 - the messages' types and errors re-exported
    DESCRIBE_QUORUM, DESCRIBE_QUORUM_VERSIONS, METADATA_PARTITION, METADATA_TOPIC, DescribeQuorumResponse,
    KafkaClientError, KafkaDefiniteError, KafkaIndefiniteError, Listener, PartitionQuorum, QuorumSample,
    ReplicaState, decode_describe_quorum_response, encode_describe_quorum_request)
from .protocol import (API_VERSIONS, API_VERSIONS_VERSIONS, NONE, UNSUPPORTED_VERSION, FrameDecoder,
                       KafkaProtocolError, decode_api_versions_response, encode_api_versions_request,
                       error_name, frame, read_frame)


def pick_version(ours: tuple[int, int], theirs: tuple[int, int] | None, api: str) -> int:
    """The highest version in both inclusive ranges; :class:`KafkaDefiniteError`
    UNSUPPORTED_VERSION when they do not overlap or ``theirs`` is None (not offered)."""
    if theirs is None or max(ours[0], theirs[0]) > min(ours[1], theirs[1]):
        raise KafkaDefiniteError("UNSUPPORTED_VERSION", f"{api}: we speak {ours[0]}-{ours[1]}, "
                                 f"the node offers {theirs or 'nothing'}", UNSUPPORTED_VERSION)
    return min(ours[1], theirs[1])


#: A conversation step: yields an unframed request payload, receives the response payload.
_Steps = Generator[bytes, bytes, QuorumSample]


def _conversation(versions: dict[int, int], next_cid: Callable[[], int], client_id: str | None,
                  topic: str, partition: int, ours: tuple[int, int] = DESCRIBE_QUORUM_VERSIONS) -> _Steps:
    """Sans-IO: negotiate (unless ``versions`` already holds DescribeQuorum's) and sample.
    Fills ``versions`` {api key: version} on success of ApiVersions. ``ours``: the
    DescribeQuorum versions to choose from (within :data:`DESCRIBE_QUORUM_VERSIONS`)."""
    if DESCRIBE_QUORUM not in versions:
        av = API_VERSIONS_VERSIONS[1]
        for attempt in range(2):
            cid = next_cid()
            resp = decode_api_versions_response((yield encode_api_versions_request(av, cid, client_id)), av)
            _same_cid(cid, resp.correlation_id, "ApiVersions")
            if resp.error_code == UNSUPPORTED_VERSION and attempt == 0:
                av = pick_version(API_VERSIONS_VERSIONS, resp.api_keys.get(API_VERSIONS), "ApiVersions")
                continue
            if resp.error_code != NONE:
                raise KafkaDefiniteError(error_name(resp.error_code), f"ApiVersions v{av}", resp.error_code)
            break
        dq = pick_version(ours, resp.api_keys.get(DESCRIBE_QUORUM), "DescribeQuorum")
        versions.update({API_VERSIONS: av, DESCRIBE_QUORUM: dq})
    v, cid = versions[DESCRIBE_QUORUM], next_cid()
    resp = decode_describe_quorum_response((yield encode_describe_quorum_request(v, cid, client_id, topic,
                                                                                 partition)), v)
    _same_cid(cid, resp.correlation_id, "DescribeQuorum")
    return resp.sample(topic, partition)


def _step(steps: _Steps, response: bytes | None) -> tuple[bytes | None, QuorumSample | None]:
    """Feed ``response`` to the conversation: (next request, None) or (None, the sample)."""
    try:
        return steps.send(response), None
    except StopIteration as done:
        return None, done.value


def _same_cid(sent: int, got: int, api: str) -> None:
    if sent != got:
        raise KafkaProtocolError(f"{api} response has correlation id {got}, expected {sent}")


class KafkaQuorumClient:
    """A reusable connection to one Kafka controller (or broker) for DescribeQuorum samples.

    Constructed as ``kraft.wire.client.KraftClient`` is, ``(host, port, cluster_id,
    timeout_ms)`` (``cluster_id`` unused: DescribeQuorum carries none), so it
    fits ``workloads.clients.ClientFactory``. The connection opens lazily,
    negotiates versions with ApiVersions once per connection (``versions``:
    {18: v, 55: v}); it is kept after an error-code answer and dropped after a
    timeout, I/O or protocol failure or a cancellation. ``timeout_ms`` bounds
    each sample, connect included (ms). One request in flight at a time. ``dq_versions``:
    the DescribeQuorum versions the release serves (:func:`speakable`).
    """

    def __init__(self, host: str, port: int, cluster_id: str | None = None, timeout_ms: int = 3000,
                 client_id: str = "kraft-chaos", topic: str = METADATA_TOPIC,
                 partition: int = METADATA_PARTITION, dq_versions: tuple[int, int] = DESCRIBE_QUORUM_VERSIONS):
        self.dq_versions = speakable(dq_versions)
        self.host, self.port, self.cluster_id = host, port, cluster_id
        self.timeout_s, self.client_id = timeout_ms / 1000.0, client_id
        self.topic, self.partition = topic, partition
        self.versions: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    def _drop(self) -> asyncio.StreamWriter | None:
        w, self._reader, self._writer, self.versions = self._writer, None, None, {}
        if w is not None:
            w.close()
        return w

    async def close(self) -> None:
        """Close the connection (idempotent); the next sample reconnects and renegotiates."""
        w = self._drop()
        if w is not None:
            try:
                await w.wait_closed()
            except (OSError, asyncio.CancelledError):
                pass

    async def sample(self) -> QuorumSample:
        """One DescribeQuorum of ``topic``/``partition``. Raises :class:`KafkaDefiniteError`
        (an error code, e.g. NOT_LEADER_OR_FOLLOWER from a non-leader; or no
        connection) or :class:`KafkaIndefiniteError` (timeout, lost connection, protocol)."""
        where, sent = f"{self.host}:{self.port}", False
        steps = _conversation(self.versions, lambda: next(self._ids), self.client_id, self.topic, self.partition,
                              self.dq_versions)
        try:
            async with asyncio.timeout(self.timeout_s):
                if self._writer is None:
                    self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
                req, done = _step(steps, None)
                while req is not None:
                    sent = True
                    self._writer.write(frame(req))
                    await self._writer.drain()
                    req, done = _step(steps, await read_frame(self._reader))
                return done
        except KafkaDefiniteError:
            raise                       # the node answered: the connection stays usable
        except asyncio.CancelledError:
            self._drop()                # an answer may still come: the stream is out of step
            raise
        except (KafkaProtocolError, OSError) as e:        # TimeoutError is an OSError
            await self.close()
            raise _failure(e, sent, where, self.timeout_s) from e

    async def describe_quorum(self) -> dict:
        """:meth:`sample` as a response body dict (:meth:`QuorumSample.to_body`), the
        shape ``KraftClient.describe_quorum`` returns; raises as :meth:`sample`."""
        return (await self.sample()).to_body()


def speakable(served: tuple[int, int]) -> tuple[int, int]:
    """The DescribeQuorum versions to ask a release's controllers for: ``served`` (what they
    serve) within :data:`DESCRIBE_QUORUM_VERSIONS`. Raises ``ValueError`` when they do not
    overlap."""
    lo, hi = max(served[0], DESCRIBE_QUORUM_VERSIONS[0]), min(served[1], DESCRIBE_QUORUM_VERSIONS[1])
    if lo > hi:
        raise ValueError(f"DescribeQuorum v{served[0]}-v{served[1]} is outside the client's "
                         f"v{DESCRIBE_QUORUM_VERSIONS[0]}-v{DESCRIBE_QUORUM_VERSIONS[1]}")
    return lo, hi


def describe_quorum(host: str, port: int, timeout_s: float = 3.0, client_id: str = "kraft-chaos",
                    topic: str = METADATA_TOPIC, partition: int = METADATA_PARTITION,
                    dq_versions: tuple[int, int] = DESCRIBE_QUORUM_VERSIONS) -> QuorumSample:
    """Blocking one-shot: connect to ``host:port``, negotiate with ApiVersions, send
    DescribeQuorum (a version of ``dq_versions``, see :func:`speakable`) and return the
    :class:`QuorumSample`. ``timeout_s`` (s) bounds each socket operation. Raises as
    :meth:`KafkaQuorumClient.sample`."""
    where, sent, ids = f"{host}:{port}", False, itertools.count(1)
    steps = _conversation({}, lambda: next(ids), client_id, topic, partition, speakable(dq_versions))
    dec = FrameDecoder()
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            req, done = _step(steps, None)
            while req is not None:
                sent = True
                s.sendall(frame(req))
                frames: list[bytes] = []
                while not frames:
                    chunk = s.recv(65536)
                    if not chunk and dec.pending():
                        raise KafkaProtocolError(f"truncated frame: connection closed after "
                                                 f"{dec.pending()} bytes")
                    if not chunk:
                        raise ConnectionResetError("connection closed by the peer")
                    frames = dec.feed(chunk)
                req, done = _step(steps, frames[0])
            return done
    except (KafkaProtocolError, OSError) as e:            # socket.timeout is an OSError
        raise _failure(e, sent, where, timeout_s) from e


def _failure(e: Exception, sent: bool, where: str, timeout_s: float) -> KafkaClientError:
    """The client error for a protocol or I/O failure; ``sent``: whether a request may have left."""
    if isinstance(e, KafkaProtocolError):
        return KafkaIndefiniteError("protocol", f"{where}: {e}")
    detail = str(e) if str(e) and str(e) != "timed out" else f"no answer within {timeout_s:g}s"
    if not sent:
        return KafkaDefiniteError("connection", f"{where}: {detail}; nothing was sent")
    return KafkaIndefiniteError("timeout" if isinstance(e, TimeoutError) else "connection", f"{where}: {detail}")
