"""The simulator's event loop: nodes running cores (kraft/quorum/, kraft/replication/) in
virtual time, carrying out their effects (kraft/core/events.py) on a :class:`sim.network.Network`
and :class:`sim.disk.SimDisk` s, and the node faults: kill, power loss, pause, wall-clock
jump, wipe.

Time is ms of virtual time (``Runtime.now``). Events sit in one heap ordered by (time,
scheduling order), so a schedule is a pure function of its seed. Requests between nodes
follow the runtime contract of kraft/core/events.py: each Send is answered by exactly one
Replied (the response, or None when it timed out: lost, cut, its target down or paused).
What a node's core is, how it is rebuilt from its disk, and how a node that runs more than
one core (a controller beside its quorum core, a broker's lifecycle beside its replication
core) hands each event to the right one is the node's own (:class:`SimNode` subclasses in
sim/quorum_nodes.py, sim/controller_nodes.py and sim/broker_nodes.py).
"""
from __future__ import annotations

import collections
import heapq
import random
from typing import Callable

from kraft.core.events import (CheckpointHighWatermark, FatalError, PersistElection, Received, Replied, Reply,
                               Send, SetTimer, StateChanged, SyncDone, SyncLog, TimerFired, TruncateLog, WriteLog)

from .disk import SimDisk
from .network import Network

#: heap entry codes
CORE, SYNC, REPLY, TIMEOUT, CLIENT, ACTION = range(6)
_heappush, _heappop = heapq.heappush, heapq.heappop
#: how many recent steps the trace keeps (printed when an invariant breaks)
TRACE_LEN = 60


class SimNode:
    """One node: ``id``, ``name``, its ``disk``, its ``core`` (None while down), ``life``
    (bumped at every stop, so events for an earlier life are dropped), ``paused`` with the
    events ``held`` meanwhile, and ``wall_offset_ms`` (a clock jump: the wall clock only;
    the cores' timers run on the monotonic clock)."""

    def __init__(self, node_id: int, name: str, disk: SimDisk):
        self.id, self.name, self.disk = node_id, name, disk
        self.core = None
        self.life = 0
        self.paused = False
        self.held: list = []
        self.wall_offset_ms = 0.0
        self.fatal: str | None = None

    def build(self, rt: "Runtime"):
        """A new core from what the disk holds; returns ``(core, start effects)``."""
        raise NotImplementedError

    def step(self, event) -> list:
        """Hand ``event`` to the node's core; returns the effects. A node that runs more than
        one core overrides it."""
        return self.core.step(event)


class Runtime:
    """Nodes by id, the network, the heap. ``fsync_ms``: how long an fsync takes;
    ``on_step(node, core, effects)`` is called after every step (the invariants);
    ``on_client(token, msg)`` gets the replies to client requests."""

    def __init__(self, seed: int, fsync_ms: float = 1.0, latency_ms: float = 1.0):
        self.seed = seed
        self.now = 0.0
        self.net = Network(random.Random(seed * 7 + 1), latency_ms)
        self.disk_rng = random.Random(seed * 7 + 2)
        self.fsync_ms = fsync_ms
        self.nodes: dict[int, SimNode] = {}
        self.heap: list = []
        self._seq = 0
        self._tokens = 0
        self.pending: dict = {}          # token -> [src, src life, to, request, gen]
        self.events = 0
        self.trace: collections.deque = collections.deque(maxlen=TRACE_LEN)
        self.notes: list = []            # every note (faults, voter changes), whole
        self.on_step: Callable = lambda node, core, effects: None
        self.on_client: Callable = lambda token, msg: None
        self.on_start: Callable = lambda node: None

    # -- scheduling ----------------------------------------------------------------------
    def push(self, t: float, code: int, node: int, life: int, a=None, b=None) -> None:
        self._seq = seq = self._seq + 1
        _heappush(self.heap, (t, seq, code, node, life, a, b))

    def at(self, t: float, fn: Callable[[], None]) -> None:
        """Run ``fn()`` at virtual time ``t`` (ms)."""
        self.push(t, ACTION, 0, 0, fn)

    def note(self, text: str) -> None:
        """Put a line in the trace and in :attr:`notes` (faults, voter changes)."""
        self.trace.append((self.now, 0, text))
        self.notes.append((self.now, 0, text))

    # -- nodes ---------------------------------------------------------------------------
    def add(self, node: SimNode) -> None:
        self.nodes[node.id] = node

    def start(self, node_id: int) -> None:
        """Start (or restart) a node from its disk."""
        n = self.nodes[node_id]
        if n.core is not None:
            return
        n.disk.recover()
        n.paused, n.held, n.fatal = False, [], None
        n.core, effects = n.build(self)
        self.on_start(n)
        self._carry_out(n, effects)

    def stop(self, node_id: int, power_loss: bool = False, torn: bool = False) -> int:
        """Kill a node (SIGKILL: its page cache survives) or, with ``power_loss``, cut its
        power (what was not fsynced is lost; ``torn``: the newest write may survive in part).
        Returns the records lost."""
        n = self.nodes[node_id]
        if n.core is None:
            return 0
        n.core = None
        n.life += 1
        n.paused, n.held = False, []
        lost = n.disk.crash(self.disk_rng if torn else None) if power_loss else 0
        for log in n.disk.logs.values():
            log.syncs.clear()
        return lost

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the node's events wait until :meth:`resume`."""
        n = self.nodes[node_id]
        if n.core is not None:
            n.paused = True

    def resume(self, node_id: int) -> None:
        """SIGCONT: the node takes what waited, in order, now."""
        n = self.nodes[node_id]
        if not n.paused:
            return
        n.paused = False
        held, n.held = n.held, []
        for entry in held:
            self.push(self.now, *entry[2:])

    def wall_clock(self, node: SimNode) -> Callable[[], int]:
        """Node ``node``'s wall clock (ms), jumped by its ``wall_offset_ms``."""
        return lambda: int(self.now + node.wall_offset_ms)

    def up(self, node_id: int) -> bool:
        n = self.nodes.get(node_id)
        return n is not None and n.core is not None

    # -- requests from outside (clients, the admin) ---------------------------------------
    def client_request(self, node_id: int, msg) -> object | None:
        """Send client request ``msg`` to ``node_id``; returns its token (the reply comes to
        ``on_client``), or None when the node is down (connection refused)."""
        n = self.nodes.get(node_id)
        if n is None or n.core is None:
            return None
        self._tokens += 1
        token = ("c", self._tokens)
        self.push(self.now + self.net.latency, CORE, node_id, n.life, Received(token, msg))
        return token

    # -- the loop ------------------------------------------------------------------------
    def run_until(self, t: float) -> None:
        """Handle every event due by ``t`` (ms), in order."""
        heap, nodes, pop, pending = self.heap, self.nodes, _heappop, self.pending
        trace, carry_out = self.trace.append, self._carry_out
        while heap:
            entry = heap[0]
            if entry[0] > t:
                break
            pop(heap)
            when, _, code, nid, life, a, b = entry
            self.now = when
            if code == ACTION:
                a()
                continue
            n = nodes[nid]
            if life != n.life or n.core is None:
                continue
            if n.paused:
                n.held.append(entry)
                continue
            if code == CORE:
                event = a
            elif code == REPLY:
                p = pending.pop(a, None)
                if p is None:
                    continue                    # it timed out already
                event = Replied(p[2], p[3], b, p[4])
            elif code == TIMEOUT:
                p = pending.pop(a, None)
                if p is None:
                    continue
                event = Replied(p[2], p[3], None, p[4])
            elif code == SYNC:
                n.disk.log(b).synced()
                event = SyncDone(a, b)
            else:
                continue
            # the step: node n's core takes the event; its effects are carried out, then checked
            self.events += 1
            trace((when, nid, event))
            try:
                effects = n.step(event)
            except FatalError as e:           # the node stops, as the adapters do
                self._fatal(n, e)
                continue
            carry_out(n, effects)
            self.on_step(n, n.core, effects)
        if self.now < t:
            self.now = t

    def _fatal(self, n: SimNode, e: FatalError) -> None:
        n.fatal = str(e)
        self.trace.append((self.now, n.id, f"FATAL {e}"))
        self.stop(n.id)

    def _carry_out(self, n: SimNode, effects: list) -> None:
        disk, life, now, nid = n.disk, n.life, self.now, n.id
        for e in effects:
            t = type(e)
            if t is Send:
                self._send(n, e)
            elif t is Reply:
                self._reply(n, e)
            elif t is SetTimer:
                self._seq = seq = self._seq + 1         # self.push, inlined
                _heappush(self.heap, (e.at, seq, CORE, nid, life, TimerFired(e.key, e.at), None))
            elif t is WriteLog:
                disk.log(e.log).write(e.records)
            elif t is SyncLog:
                disk.log(e.log).sync(e.end)
                self.push(now + self.fsync_ms, SYNC, nid, life, e.end, e.log)
            elif t is TruncateLog:
                disk.log(e.log).truncate(e.offset)
            elif t is PersistElection:
                disk.election = e.state
            elif t is CheckpointHighWatermark:
                disk.hw[e.log] = e.hw
            elif t is StateChanged:
                pass

    def _send(self, n: SimNode, e: Send) -> None:
        self._tokens = token = self._tokens + 1
        src, life, now, msg, heap = n.id, n.life, self.now, e.msg, self.heap
        self.pending[token] = [src, life, e.to, msg, e.gen]
        wait = getattr(msg, "max_wait_ms", 0) or 0
        self._seq = seq = self._seq + 1                 # self.push, inlined (here and below)
        _heappush(heap, (now + n.core.cfg.request_timeout_ms + wait, seq, TIMEOUT, src, life, token, None))
        dst = self.nodes.get(e.to)
        if dst is None or dst.core is None:
            return                              # refused: the timeout answers
        delay, copy = self.net.fate(src, e.to)
        if delay is not None:
            self._seq = seq = seq + 1
            _heappush(heap, (now + delay, seq, CORE, e.to, dst.life, Received(token, msg), None))
        if copy is not None:
            self._seq = seq = self._seq + 1
            _heappush(heap, (now + copy, seq, CORE, e.to, dst.life, Received(("dup", token), msg), None))

    def _reply(self, n: SimNode, e: Reply) -> None:
        token = e.token
        if type(token) is tuple:
            if token[0] == "c":
                self.push(self.now + self.net.latency, ACTION, 0, 0, self._client_reply(token, e.msg))
                return
            token = token[1]                    # the duplicate's answer
        p = self.pending.get(token)
        if p is None:
            return
        delay, copy = self.net.fate(n.id, p[0])
        if delay is not None:
            self.push(self.now + delay, REPLY, p[0], p[1], token, e.msg)

    def _client_reply(self, token, msg) -> Callable[[], None]:
        return lambda: self.on_client(token, msg)


class AwaitsReplies:
    """A simulated requester (the admin, the data plane's CreateTopics): ``waiting`` maps the
    token of each request it sent to the callback that takes its reply."""

    def __init__(self) -> None:
        self.waiting: dict = {}

    def on_reply(self, token, msg) -> bool:
        """Take the reply to one of its requests; False when ``token`` is not its own."""
        cb = self.waiting.pop(token, None)
        if cb is None:
            return False
        cb(msg)
        return True
