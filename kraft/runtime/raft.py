"""The KRaft replica as an asyncio node: a thin adapter over the quorum core.

:class:`kraft.quorum.QuorumCore` decides everything (KIP-595, KIP-996, KIP-853; see
kraft/quorum/); :class:`RaftNode` carries out its effects (kraft/core/events.py): it sends
requests over TCP (kraft/wire/client.py; one connection per request, and one kept open for
a follower's Fetches), answers requests the server hands it (kraft/node/server.py), arms
timers on the event loop, writes the disk log (kraft/storage/log.py, which shares its records
in memory with the core), fsyncs it and feeds ``SyncDone`` back, and writes
quorum-state (kraft/storage/quorum_state.py) before anything that follows. The wire format
(kraft/wire/quorum_codec.py) and the on-disk format (kraft/storage/) are the adapter's: the
core sees neither. What a start recovers from the data dir is decided by
kraft/storage/recovery.py, as in the simulator.

Besides, every ``TICK_S`` :meth:`tick` writes the advisory ``high-watermark``
checkpoint and, under ``no-fsync``, hands the log's buffer to the OS every second.
"""
from __future__ import annotations

import logging
import random
import time

from ..core import errors
from ..core.events import (PersistElection, Replied, Send, StateChanged, SyncDone, SyncLog, TruncateLog,
                           WriteLog)
from ..core.record_log import RecordLog
from ..core.records import DATA, check_payload
from ..core.rpc import InvalidRequest, Refused  # re-exported (server, kv_service, tests)
from ..core.unsafe import Unsafe
from ..quorum import FatalError, QuorumConfig, QuorumCore
from ..quorum.client_messages import ProposeRequest, ReadIndexRequest
from ..quorum.messages import FetchRequest
from ..rules.voter_set import VoterSet
from ..storage.bootstrap import read_bootstrap
from ..storage.log import Log, LogScan
from ..storage.meta import Meta
from ..storage.quorum_state import read_state, write_state
from ..storage.recovery import DiskContents, recover, start_quorum
from ..wire import api
from ..wire.client import ClientError, KraftClient
from ..wire.quorum_codec import decode_request, decode_response, encode_request, encode_response
from .config import NodeConfig
from .driver import AsyncDriver
from .peers import AddressBook, NoRoute

log = logging.getLogger("kraft.raft")

TICK_S = 0.01
HW_CHECKPOINT_INTERVAL_S = 0.2
NO_FSYNC_WRITE_INTERVAL_S = 1.0

__all__ = ["FatalError", "InvalidRequest", "RaftNode", "Refused", "TICK_S"]


def quorum_config(cfg: NodeConfig, directory_id: str | None) -> QuorumConfig:
    """The core's settings from a node config."""
    return QuorumConfig(
        node_id=cfg.node_id, directory_id=directory_id, election_timeout_ms=cfg.election_timeout_ms,
        fetch_timeout_ms=cfg.fetch_timeout_ms, request_timeout_ms=cfg.request_timeout_ms,
        fetch_max_wait_ms=cfg.fetch_max_wait_ms, fetch_max_records=cfg.fetch_max_records,
        election_backoff_max_ms=cfg.election_backoff_max_ms, retry_backoff_ms=cfg.retry_backoff_ms,
        pre_vote=cfg.pre_vote, check_quorum=cfg.check_quorum, bootstrap_servers=tuple(cfg.bootstrap_servers),
        unsafe=Unsafe.of(cfg.unsafe))


def disk_contents(cfg: NodeConfig, meta: Meta, scan: LogScan) -> DiskContents:
    """What a start finds in ``cfg.data_dir`` (kraft/storage/recovery.py): the log as ``scan``
    read it, quorum-state, the bootstrap checkpoint, ``meta``'s directory id and the configured
    voters. Raises OSError, QuorumStateError or MetaError (a malformed file)."""
    return DiskContents(scan.records, scan.torn_bytes, read_state(cfg.data_dir), read_bootstrap(cfg.data_dir),
                        meta.directory_id, VoterSet.from_static(cfg.voters))


class RaftNode:
    """One KRaft replica. Create, then ``await start()``; ``await close()`` at the end.

    ``cfg`` is the node config, ``meta`` its data dir identity. Raises
    OSError / QuorumStateError from :meth:`start` when the data dir is bad. ``core``
    is the :class:`QuorumCore`; the state it holds is readable here too (``kind``,
    ``epoch``, ``hw``, ``log``, ...). ``fatal`` is set when an invariant broke.
    """

    def __init__(self, cfg: NodeConfig, meta: Meta):
        self._cfg, self.meta = cfg, meta
        self.id, self.cluster_id = cfg.node_id, meta.cluster_id
        self.listen = (cfg.listen_host, cfg.listen_port)
        self.log = Log(cfg.data_dir / "log", segment_bytes=cfg.segment_bytes, fsync="no-fsync" not in cfg.unsafe,
                       index=RecordLog())
        #: The QuorumCore, built by :meth:`start` from what the data dir holds (None before).
        self.core: QuorumCore | None = None
        self.driver: AsyncDriver | None = None
        self.peers = AddressBook(lambda: self.core.voters)
        #: Called with every :class:`kraft.core.events.StateChanged` (tests, tools).
        self.state_listeners: list = []
        self.stopping = False
        self._fetch_client: tuple[tuple, KraftClient] | None = None
        self._last_hw_checkpoint = (-1, 0.0)
        self._last_buffer_write = 0.0

    # -- the core's state, for the server, the data plane and tests -----------------------------
    @property
    def cfg(self) -> NodeConfig:
        """The node config; setting it gives the core the new settings at once."""
        return self._cfg

    @cfg.setter
    def cfg(self, cfg: NodeConfig) -> None:
        self._cfg = cfg
        if self.core is not None:
            self.core.reconfigure(quorum_config(cfg, self.meta.directory_id))

    election = property(lambda self: self.core.state.election, doc="The ElectionState (quorum-state).")
    kind = property(lambda self: self.core.state.kind, doc="The StateKind.")
    hw = property(lambda self: self.core.state.hw, doc="The high watermark.")
    epoch = property(lambda self: self.core.epoch, doc="The current epoch.")
    leader_id = property(lambda self: self.core.leader_id, doc="The leader of the epoch, -1 if unknown.")
    voters = property(lambda self: self.core.voters, doc="The voter set in effect (KIP-853).")
    key = property(lambda self: self.core.state.key, doc="This replica's (id, directory id).")
    is_voter = property(lambda self: self.core.is_voter, doc="True iff this replica is a voter.")
    majority = property(lambda self: self.core.majority, doc="The current voter set's majority.")
    voter_history = property(lambda self: self.core.state.history, doc="The voter sets by offset (KIP-853).")
    kv = property(lambda self: self.core.state.kv, doc="The kv state machine (kraft/state_machines/kv.py).")
    metadata = property(lambda self: self.core.state.metadata, doc="The metadata replay (kraft/state_machines/metadata_replay.py).")
    replicas = property(lambda self: self.core.state.replicas, doc="The leader's replica progress.")

    @property
    def fatal(self) -> FatalError | None:
        """The FatalError that stopped the core, or None."""
        return self.driver.fatal if self.driver is not None else None

    def leader_epoch_committed(self) -> bool:
        """True iff this node leads and its epoch's first record is committed (KIP-595)."""
        return self.core.leader_epoch_committed()

    def endpoint(self, node_id: int) -> tuple[str, int] | None:
        """(host, port) of ``node_id``: from the voter set, else as learned; None if unknown."""
        return self.peers.endpoint(node_id)

    def leader_endpoints(self) -> list[dict]:
        """``NodeEndpoints`` for a response: the leader this node knows, or ``[]``."""
        return self.peers.leader_endpoints(self.core.leader_id, self.id, self.listen)

    def _peer(self, node_id: int, timeout_ms: int) -> KraftClient | NoRoute:
        """A fresh client to ``node_id`` (``timeout_ms`` per request); a :class:`NoRoute` whose
        requests fail as DefiniteError "connection" when its endpoint is unknown."""
        ep = self.endpoint(node_id)
        return KraftClient(*ep, self.cluster_id, timeout_ms=timeout_ms) if ep else NoRoute(node_id)

    # -- start-up and shutdown ------------------------------------------------------------------
    async def start(self) -> None:
        """Read the data dir, recover from it (kraft/storage/recovery.py: the torn tail cut,
        quorum-state, the bootstrap voters, the directory id), build the core and start it.
        Raises OSError, MetaError (a malformed bootstrap checkpoint) or QuorumStateError."""
        cfg = self.cfg
        scan = self.log.scan()
        recovered = recover(disk_contents(cfg, self.meta, scan), Unsafe.of(cfg.unsafe))
        self.log.open(scan, cut_torn_tail=recovered.cut_torn_tail)
        if self.log.recovered_bytes:
            log.warning("recovery cut %d bytes of torn log tail", self.log.recovered_bytes)
        election = recovered.election
        log.info("starting node %d directory %s epoch %d leader %d voted %d log end offset %d",
                 self.id, recovered.directory_id, election.epoch, election.leader_id, election.voted_id,
                 self.log.end_offset)
        self.core, effects = start_quorum(recovered, quorum_config(cfg, recovered.directory_id),
                                          clock=lambda: time.monotonic() * 1000.0, rng=random.Random(cfg.seed),
                                          wall_clock=lambda: int(time.time() * 1000), log=self.log.index)
        self.driver = AsyncDriver(self.core, self._send, self._carry_out)
        self.driver.run(effects)
        self.driver.drain()

    async def close(self) -> None:
        """Answer pending requests, cancel timers and tasks, flush and close the log."""
        self.stopping = True
        if self.driver is not None:
            self.core.state.stopping = True
            if self.fatal is None:
                self.driver.call(self.core.fail_pending, "node shutting down")
            self.driver.close()
        if self._fetch_client is not None:
            await self._fetch_client[1].close()
        try:
            self.log.flush()
        finally:
            self.log.close()

    # -- carrying out the core's effects (kraft/runtime/driver.py does replies, timers and sends) ---------
    def _carry_out(self, e) -> list:
        t = type(e)
        if t is WriteLog:
            self.log.write(e.records)
        elif t is SyncLog:
            self.log.flush()
            return [SyncDone(e.end)]
        elif t is TruncateLog:
            self.log.truncate_to(e.offset)
        elif t is PersistElection:
            write_state(self.cfg.data_dir, e.state)
        elif t is StateChanged:
            el = e.election
            log.info("state %s -> %s epoch=%d leader=%d voted=%d", e.old.value, e.kind.value, el.epoch,
                     el.leader_id, el.voted_id)
            for f in self.state_listeners:
                f(e)
        return []

    # -- the network ---------------------------------------------------------------------------------
    def _client(self, e: Send) -> tuple[object, bool]:
        """The client to send ``e`` on, and whether to close it after."""
        timeout = self.cfg.request_timeout_ms
        if isinstance(e.to, tuple):                        # a bootstrap server
            return KraftClient(e.to[0], e.to[1], self.cluster_id, timeout_ms=timeout), True
        if type(e.msg) is FetchRequest and e.msg.max_wait_ms > 0:   # a follower's Fetches: one connection
            key = (e.to, e.gen)
            if self._fetch_client is None or self._fetch_client[0] != key:
                if self._fetch_client is not None:
                    self.driver.spawn(self._fetch_client[1].close())
                self._fetch_client = (key, self._peer(e.to, self.cfg.fetch_max_wait_ms + timeout))
            return self._fetch_client[1], False
        return self._peer(e.to, timeout), True

    async def _send(self, e: Send) -> None:
        api_key, body = encode_request(e.msg, self.listen)
        client, close = self._client(e)
        msg = None
        try:
            resp = await client.request(api_key, body)
            self.peers.learn(resp)
            msg = decode_response(e.msg, resp)
        except ClientError as err:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s to %s failed: %s", api.NAMES[api_key], e.to, err)
        except (ValueError, KeyError, TypeError) as err:
            log.warning("malformed %s response from %s: %s", api.NAMES[api_key], e.to, err)
        finally:
            if close:
                await client.close()
        if not self.stopping:
            self.driver.feed(Replied(e.to, e.msg, msg, e.gen))

    async def ask(self, msg):
        """Hand request ``msg`` (a kraft/quorum message) to the core; returns its response."""
        return await self.driver.ask(msg)

    async def request(self, api_key: int, body: dict) -> dict:
        """Serve one request body of the quorum's APIs; returns the response body. Raises
        InvalidRequest for a bad field."""
        msg = decode_request(api_key, body)
        if api_key == api.BEGIN_QUORUM_EPOCH:
            self.peers.learn_leader(msg.leader_id, body.get("LeaderEndpoint"))
        return encode_response(await self.ask(msg), self.listen)

    async def handle_fetch(self, body: dict) -> dict:
        """KIP-595 Fetch (leader side), long-polled up to MaxWaitMs."""
        return await self.request(api.FETCH, body)

    async def handle_vote(self, body: dict) -> dict:
        """KIP-595 Vote / KIP-996 Pre-Vote."""
        return await self.request(api.VOTE, body)

    async def handle_append(self, body: dict) -> dict:
        """Append (client API): answered once committed."""
        return await self.request(api.APPEND, body)

    # -- in-process API (controller, tests) ---------------------------------------------------------
    async def propose(self, rtype: str, payloads: list, timeout_ms: int | None = None) -> tuple[int, int]:
        """Leader only: append one ``rtype`` record per payload (one batch) and wait up to
        ``timeout_ms`` (default request.timeout.ms) until the last is committed and applied;
        returns ``(first offset, epoch)``. Raises :class:`Refused` NOT_LEADER_OR_FOLLOWER
        (definite: nothing appended) or REQUEST_TIMED_OUT (appended, commit unknown), and
        InvalidRequest for an oversized payload."""
        if self.stopping:
            raise Refused(errors.NOT_LEADER_OR_FOLLOWER)
        for p in payloads:
            try:
                check_payload(p)
            except ValueError as e:
                raise InvalidRequest(str(e)) from None
        resp = await self.ask(ProposeRequest(rtype, list(payloads), True, timeout_ms))
        if resp.error_code != errors.NONE:
            raise Refused(resp.error_code, resp.message)
        return resp.offset, resp.epoch

    async def append_and_commit(self, payload, rtype: str = DATA, timeout_ms: int | None = None) -> tuple[int, int]:
        """Leader only: append one ``rtype`` record (default data) holding ``payload`` and wait
        until committed; returns ``(offset, epoch)``. Raises as :meth:`propose`."""
        return await self.propose(rtype, [payload], timeout_ms)

    async def read_index(self, timeout_s: float | None = None) -> int:
        """Leader only: confirm leadership with a majority (read-index, Raft §6.4); returns the
        read index (the high watermark then). Raises :class:`Refused` NOT_LEADER_OR_FOLLOWER
        or REQUEST_TIMED_OUT (not confirmed within ``timeout_s``, default request.timeout.ms).
        With ``no-read-index`` any node returns its own high watermark at once."""
        if self.stopping:
            raise Refused(errors.NOT_LEADER_OR_FOLLOWER)
        resp = await self.ask(ReadIndexRequest(None if timeout_s is None else max(0.0, timeout_s) * 1000.0))
        if resp.error_code != errors.NONE:
            raise Refused(resp.error_code, resp.message)
        return resp.index

    def become_leader(self) -> None:
        """Persist leadership of the current epoch and announce it (see the core)."""
        self.driver.call(self.core.become_leader)

    def resign(self, reason: str) -> None:
        """Leader -> Resigned: send EndQuorumEpoch to the voters."""
        self.driver.call(self.core.resign, reason)

    def observe(self, epoch: int, leader_id: int) -> bool:
        """React to a leader and epoch seen in a message; True if the state changed."""
        return self.driver.call(self.core.observe, epoch, leader_id)

    def flush_now(self) -> None:
        """fsync the log now (rather than after the append linger)."""
        self.driver.call(self.core.flush_now)

    def apply_fetch_response(self, body: dict) -> bool:
        """Apply one Fetch response body as a follower would; True to fetch again at once."""
        resp = decode_response(FetchRequest(self.id, None, 0, 0, 0, 0, 0), body)
        return self.driver.call(self.core.handle_fetch_response, resp)

    # -- background --------------------------------------------------------------------------------
    def tick(self) -> None:
        """Background duties: the advisory ``high-watermark`` checkpoint (every 200 ms when it
        changed) and, under ``no-fsync``, the buffer handed to the OS every second."""
        now = time.monotonic()
        if not self.log.fsync and now - self._last_buffer_write > NO_FSYNC_WRITE_INTERVAL_S:
            self._last_buffer_write = now
            self.log.write_out_buffer()
        last_hw, last_t = self._last_hw_checkpoint
        hw = self.core.state.hw
        if hw != last_hw and now - last_t > HW_CHECKPOINT_INTERVAL_S:
            self._last_hw_checkpoint = (hw, now)
            try:
                (self.cfg.data_dir / "high-watermark").write_text(str(hw))
            except OSError as e:
                log.warning("cannot write high-watermark checkpoint: %s", e)
