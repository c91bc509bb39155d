"""In-memory stand-ins for a cluster, its remote and the DB, for unit tests.

:class:`FakeRemote` records every call and answers from a user-supplied
handler; :class:`FakeDB` keeps per-node process state (running / paused);
:class:`NetSim` plays the iptables and tc commands as such a handler, so
tests can ask which packets each node drops (:func:`grudge_of`).
:func:`make_controller` builds a NemesisController on them;
:class:`FakeHistory` and :class:`FakeController` stand in for the history
writer and the controller; :func:`drive` asks a generator on a fake clock.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from clusters.remote import Cluster, ExecResult, Remote, RemoteError


class FakeRemote(Remote):
    """Records ``exec``/``put``/``get`` calls.

    ``calls``: list of ``("exec", node, cmd)``, ``("put", node, remote_path,
    content)`` and ``("get", node, remote_path, local_path)`` tuples.
    ``handler(node, cmd) -> ExecResult | None`` answers execs (None means
    ``ExecResult(0, "", "")``); ``down``: nodes whose every call raises
    :class:`RemoteError`; ``files``: ``{(node, path): text}`` served by ``get``.
    """

    def __init__(self, handler: Callable[[str, object], ExecResult | None] | None = None):
        self.handler = handler
        self.calls: list[tuple] = []
        self.down: set[str] = set()
        self.files: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def execs(self, node: str | None = None) -> list:
        """The commands exec'd (on ``node``, or everywhere), in order."""
        return [c[2] for c in self.calls if c[0] == "exec" and (node is None or c[1] == node)]

    def exec(self, node: str, cmd: Sequence[str] | str, *, check: bool = True,
             detach: bool = False, timeout_s: float | None = 30.0) -> ExecResult:
        with self._lock:
            self.calls.append(("exec", node, cmd))
        if node in self.down:
            raise RemoteError(node, cmd, "node is down")
        result = (self.handler(node, cmd) if self.handler else None) or ExecResult(0, "", "")
        if check and result.exit_code != 0:
            raise RemoteError(node, cmd, f"exit {result.exit_code}", result)
        return result

    def put(self, node: str, local_path: Path, remote_path: str) -> None:
        content = Path(local_path).read_text()
        with self._lock:
            self.calls.append(("put", node, remote_path, content))
        if node in self.down:
            raise RemoteError(node, remote_path, "node is down")

    def get(self, node: str, remote_path: str, local_path: Path) -> None:
        with self._lock:
            self.calls.append(("get", node, remote_path, local_path))
        if (node, remote_path) not in self.files:
            raise RemoteError(node, remote_path, "no such file")
        local_path = Path(local_path)
        local_path.parent.mkdir(parents=True, exist_ok=True)
        local_path.write_text(self.files[(node, remote_path)])


class FakeCluster(Cluster):
    """``n`` nodes ``n1..nN`` with IPs ``10.77.0.11``, ``.12``, ... and a :class:`FakeRemote`."""

    def __init__(self, n: int = 5, remote: FakeRemote | None = None):
        self.nodes = [f"n{i}" for i in range(1, n + 1)]
        self.remote = remote or FakeRemote()

    def setup(self) -> None:
        pass

    def teardown(self) -> None:
        pass

    def ip(self, node: str) -> str:
        return f"10.77.0.{10 + self.nodes.index(node) + 1}"


class FakeDB:
    """In-memory node processes implementing ``nemesis.process_db.ProcessDB``.

    ``running`` and ``paused`` are sets of node names; ``calls`` records
    ``(method, node)``; nodes in ``down`` raise :class:`RemoteError`.
    """

    def __init__(self, nodes: Sequence[str]):
        self.nodes = list(nodes)
        self.running: set[str] = set(nodes)
        self.paused: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.down: set[str] = set()
        self._lock = threading.Lock()

    def quorum_nodes(self) -> list[str]:
        """Every node is a quorum node (no brokers)."""
        return list(self.nodes)

    def _call(self, method: str, node: str) -> None:
        with self._lock:
            self.calls.append((method, node))
        if node in self.down:
            raise RemoteError(node, method, "node is down")

    def start(self, node: str) -> bool:
        self._call("start", node)
        if node in self.running:
            return False
        self.running.add(node)
        return True

    def kill(self, node: str) -> bool:
        self._call("kill", node)
        was = node in self.running
        self.running.discard(node)
        self.paused.discard(node)
        return was

    def pause(self, node: str) -> bool:
        self._call("pause", node)
        if node not in self.running:
            return False
        self.paused.add(node)
        return True

    def resume(self, node: str) -> bool:
        self._call("resume", node)
        if node not in self.running:
            return False
        self.paused.discard(node)
        return True

    def is_running(self, node: str) -> bool:
        self._call("is_running", node)
        return node in self.running


class NetSim:
    """Plays the iptables and tc commands the nemesis sends, as a :class:`FakeRemote` handler.

    Per node: iptables ``chains`` (``{chain: [(source ip, match text), ...]}``,
    ``INPUT`` holding jumps as ``("-j", chain)``) and the netem ``qdisc``
    (``(netem args, {destination ips})`` or None). ``netem``: whether the
    kernel has netem (the probe's exit code). A rule appended to a chain that
    does not exist fails with exit 1, as iptables does.
    """

    def __init__(self, netem: bool = True):
        self.netem = netem
        self.chains: dict[str, dict[str, list[tuple[str, str]]]] = {}
        self.qdisc: dict[str, tuple[str, set[str]] | None] = {}
        self.probes = 0
        self._lock = threading.Lock()

    def __call__(self, node: str, cmd) -> ExecResult | None:
        from nemesis import packet
        from nemesis.partition import HEAL_ALL_COMMAND
        with self._lock:
            chains = self.chains.setdefault(node, {"INPUT": [], "OUTPUT": []})
            if cmd == packet.PROBE_COMMAND:
                self.probes += 1
                return None if self.netem else ExecResult(2, "", 'Error: Specified qdisc kind is unknown.')
            if cmd == HEAL_ALL_COMMAND:
                for rules in chains.values():
                    rules.clear()
                return None
            for part in cmd.split(" && "):
                if not self._step(node, chains, part.strip()):
                    return ExecResult(1, "", f"cannot run {part!r}")
        return None

    def _step(self, node: str, chains: dict, part: str) -> bool:
        from nemesis import packet
        words = part.strip("{}; ").split()
        bare = part.lstrip("{ ")
        if bare.startswith("iptables -w -N "):
            chains.setdefault(words[3], [])
        elif bare.startswith(("iptables -w -C INPUT -j ", "iptables -w -C OUTPUT -j ")):
            jump = ("-j", words[5])
            if jump not in chains[words[3]]:
                chains[words[3]].insert(0, jump)
        elif part.startswith("iptables -w -A "):
            # INPUT chains drop by source (-s), OUTPUT chains (KC-<slot>-o) by destination (-d)
            want = "-d" if words[3].endswith("-o") else "-s"
            if words[3] not in chains or words[4] != want or words[-2:] != ["-j", "DROP"]:
                return False
            chains[words[3]].append((words[5], " ".join(words[6:-2])))
        elif bare.startswith("iptables -w -F "):
            chains.get(words[3], []).clear()
        elif part == packet.HEAL_COMMAND or part == f"tc qdisc del dev {packet.DEVICE} root 2>/dev/null || true":
            self.qdisc[node] = None
        elif part.startswith("tc qdisc add") and " netem " in part:
            self.qdisc[node] = (part.split(" netem ", 1)[1], set())
        elif part.startswith("tc filter add"):
            assert words[words.index("dst") + 2] == "flowid" and words[-1] == "1:2", part
            self.qdisc[node][1].add(words[words.index("dst") + 1].removesuffix("/32"))
        elif part.startswith(("tc qdisc add", "tc class add")):
            pass
        else:
            raise AssertionError(f"NetSim: unexpected command {part!r}")
        return True

    def rules(self, node: str) -> list[tuple[str, str, str]]:
        """The DROP rules in effect on ``node``: ``(chain, source ip, match)`` for every chain
        INPUT jumps to."""
        chains = self.chains.get(node, {})
        return [(c, src, match) for kind, c in chains.get("INPUT", []) if kind == "-j"
                for src, match in chains.get(c, [])]

    def drops(self, node: str, chain: str | None = None) -> set[str]:
        """The source ips ``node`` drops (in ``chain`` only, when given)."""
        return {src for c, src, _m in self.rules(node) if chain is None or c == chain}

    def out_rules(self, node: str) -> list[tuple[str, str, str]]:
        """The DROP rules on ``node``'s way out: ``(chain, destination ip, match)`` for every
        chain OUTPUT jumps to."""
        chains = self.chains.get(node, {})
        return [(c, dst, match) for kind, c in chains.get("OUTPUT", []) if kind == "-j"
                for dst, match in chains.get(c, [])]


def sim_cluster(n: int = 5, netem: bool = True) -> tuple[FakeCluster, NetSim]:
    """A :class:`FakeCluster` whose remote is played by a :class:`NetSim`."""
    sim = NetSim(netem)
    return FakeCluster(n, FakeRemote(sim)), sim


def make_controller(n: int = 5, leader=None, seed: int = 1, netem: bool = True, nodes=None,
                    clock: "FakeClock | None" = None, leader_wait_s: float = 0.0):
    """``(cluster, sim, db, controller)``: a NemesisController on a simulated cluster.

    ``leader``: a node name, None, or a callable giving the leader. ``nodes``: the nodes
    faults may touch (default all). ``leader_wait_s``: how long a fault that needs a leader
    waits for one (default 0: a single look), on ``clock`` (a :class:`FakeClock`; default
    the real one).
    """
    import random

    from nemesis.controller import NemesisController
    cluster, sim = sim_cluster(n, netem)
    db = FakeDB(cluster.nodes)
    find = leader if callable(leader) else (lambda: leader)
    timing = {"clock": clock.now, "sleep": clock.sleep} if clock is not None else {}
    return cluster, sim, db, NemesisController(cluster, db, find, random.Random(seed), nodes,
                                               leader_wait_s=leader_wait_s, **timing)


class FakeClock:
    """A monotonic clock that only :meth:`sleep` moves (s); ``slept`` lists every sleep."""

    def __init__(self, t: float = 0.0):
        self.t, self.slept = t, []

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def grudge_of(cluster: FakeCluster, sim: NetSim, chain: str | None = None) -> dict[str, set[str]]:
    """What the rules in effect amount to: ``{node: {nodes it drops packets from}}`` (a
    sender's OUTPUT rule counts as its receiver dropping it; ``chain``: the INPUT chain, or
    its ``-o`` OUTPUT twin, to look at)."""
    by_ip = {cluster.ip(n): n for n in cluster.nodes}
    out = {n: {by_ip[ip] for ip in sim.drops(n, chain)} for n in cluster.nodes}
    for sender in cluster.nodes:
        for c, dst, _m in sim.out_rules(sender):
            if chain is None or c == f"{chain}-o":
                out[by_ip[dst]].add(sender)
    return out


class FakeHistory:
    """An in-memory ``HistoryWriter``: ``ops`` in order, each with ``index``, thread-safe."""

    def __init__(self):
        self.ops: list[dict] = []
        self._lock = threading.Lock()

    def _add(self, op: dict) -> dict:
        with self._lock:
            op["index"] = len(self.ops)
            self.ops.append(op)
        return op

    def invoke(self, process, f, value, node=None, **extra):
        op = {"type": "invoke", "process": process, "f": f, "value": value, **extra}
        if node is not None:
            op["node"] = node
        return self._add(op)

    def complete(self, invoke_op, type, value, error=None, **extra):
        op = {"type": type, "process": invoke_op["process"], "f": invoke_op["f"], "value": value, **extra}
        if invoke_op.get("node") is not None:
            op["node"] = invoke_op["node"]
        if error is not None:
            op["error"] = error
        return self._add(op)


def check_nemesis_pairs(ops: list[dict]) -> list[tuple[dict, dict]]:
    """Assert the nemesis ops are invoke/info pairs with the same ``f``, one in flight at a
    time; return the pairs."""
    nem = [o for o in ops if o["process"] == "nemesis"]
    assert len(nem) % 2 == 0, nem
    pairs = list(zip(nem[::2], nem[1::2]))
    for inv, done in pairs:
        assert inv["type"] == "invoke" and done["type"] == "info", (inv, done)
        assert inv["f"] == done["f"]
    return pairs


class FakeController:
    """Stands in for a NemesisController: start and stop sleep ``start_s`` / ``stop_s`` in
    their thread and target ``["n1"]``; ``fail_start`` makes starts raise (the fault then
    stays held, as a NodeErrors would leave it). ``calls``: ``(start|stop, family)``;
    ``max_in_flight``: the most calls running at once."""

    def __init__(self, start_s: float = 0.0, stop_s: float = 0.0, fail_start: bool = False):
        self.start_s, self.stop_s, self.fail_start = start_s, stop_s, fail_start
        self.calls: list[tuple[str, str]] = []
        self.threads: set[str] = set()
        self.in_flight = self.max_in_flight = 0
        self.slots: dict = {}
        self._lock = threading.Lock()

    def _call(self, what: str, fault, delay_s: float) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.threads.add(threading.current_thread().name)
        time.sleep(delay_s)
        with self._lock:
            self.in_flight -= 1
            self.calls.append((what, fault.name))

    def start(self, fault) -> dict:
        self._call("start", fault, self.start_s)
        self.slots[fault.key] = fault
        if self.fail_start:
            raise RuntimeError("n2: iptables missing")
        return {"kind": fault.kind, "targets": ["n1"]}

    def stop(self, fault) -> dict:
        self._call("stop", fault, self.stop_s)
        held = self.slots.pop(fault.key, None)
        return {"kind": fault.kind, "targets": ["n1"] if held else []}

    @property
    def active(self) -> dict:
        return {k: ["n1"] for k in self.slots}

    def active_faults(self) -> list:
        return list(self.slots.values())


def drive(gen, until: float, view=None, thread="nemesis", seed: int = 0,
          complete=None) -> list[tuple[float, dict]]:
    """Ask ``gen`` as ``thread`` on a fake clock from 0 until ``until`` s: each op completes at
    once (``complete(op)`` gives the completion, default an info with the op's value) and is
    passed to ``update``; on a Wait the clock jumps to its ``until`` (which must be ahead).
    ``view``: a value, or a callable of the time giving it. Returns ``[(time, op)]``."""
    import random

    from generator import Context, Wait
    rng, t, out = random.Random(seed), 0.0, []
    while t < until:
        ctx = Context(t, thread, thread, rng, view(t) if callable(view) else view)
        a = gen.op(ctx)
        if a is None:
            break
        if isinstance(a, Wait):
            assert a.until > t, f"Wait({a.until}) at {t} is not ahead"
            t = a.until
            continue
        out.append((t, a))
        done = complete(a) if complete else {"type": "info", "f": a["f"], "value": a.get("value")}
        gen.update(ctx, a, done)
    return out


class ShaperSim(NetSim):
    """A :class:`NetSim` that also plays the nfqueue shaper's commands (kernels without netem).

    ``shaper``: whether a shaper can start (False: its start exits 1, as where the queue
    cannot be bound). ``shapers``: ``{node: {slot: {"queue", "args", "seed"}}}`` running now;
    NFQUEUE rules live in ``queued`` (``{node: {chain: [(destination ip, queue)]}}``),
    flushed with their chain. ``started``: every shaper start, ``(node, slot, queue)``.
    """

    def __init__(self, netem: bool = False, shaper: bool = True):
        super().__init__(netem)
        self.shaper = shaper
        self.shapers: dict[str, dict[str, dict]] = {}
        self.queued: dict[str, dict[str, list[tuple[str, int]]]] = {}
        self.started: list[tuple[str, str, int]] = []

    def __call__(self, node: str, cmd) -> ExecResult | None:
        import json
        import re

        from nemesis import packet
        from nemesis.partition import HEAL_ALL_COMMAND
        if cmd == packet.SHAPER_KILL_ALL_COMMAND:
            with self._lock:
                self.shapers.pop(node, None)
            return None
        if isinstance(cmd, str) and cmd.startswith("rm -f /tmp/kc-shaper-") and " nohup python3 " in cmd:
            m = re.search(r"--queue (\d+) --delay-ms (\S+) --jitter-ms (\S+) --loss-pct (\S+) "
                          r"--reorder-pct (\S+) --seed (\d+) --pidfile /tmp/kc-shaper-([\w-]+)\.pid ", cmd)
            assert m and packet.SHAPER_PATH in cmd, cmd
            queue, slot = int(m.group(1)), m.group(7)
            with self._lock:
                running = self.shapers.setdefault(node, {})
                if not self.shaper:
                    return ExecResult(1, "", f"nfqueue_shaper: bind queue (queue {queue}): Operation not permitted")
                if slot in running or queue in {s["queue"] for s in running.values()}:
                    return ExecResult(1, "", f"nfqueue_shaper: bind queue (queue {queue}): Device or resource busy")
                args = dict(zip(packet.SHAPER_KEYS, (float(m.group(i)) for i in range(2, 6))))
                running[slot] = {"queue": queue, "args": args, "seed": int(m.group(6))}
                self.started.append((node, slot, queue))
            return None
        if isinstance(cmd, str) and cmd.startswith("if [ -s /tmp/kc-shaper-"):
            slot = re.match(r"if \[ -s /tmp/kc-shaper-([\w-]+)\.pid \]", cmd).group(1)
            with self._lock:
                gone = self.shapers.get(node, {}).pop(slot, None)
            if gone is None:
                return None
            return ExecResult(0, json.dumps({"queue": gone["queue"], "packets": 3, "accepted": 3,
                                             "dropped": 0}) + "\n", "")
        if cmd == HEAL_ALL_COMMAND:
            with self._lock:
                self.queued.pop(node, None)
        return super().__call__(node, cmd)

    def _step(self, node: str, chains: dict, part: str) -> bool:
        words = part.strip("{}; ").split()
        bare = part.lstrip("{ ")
        if part.startswith("iptables -w -A ") and " -j NFQUEUE " in part:
            if (words[3] not in chains or not words[3].endswith("-o") or words[4] != "-d"
                    or words[6:9] != ["-j", "NFQUEUE", "--queue-num"] or words[10:] != ["--queue-bypass"]):
                return False
            self.queued.setdefault(node, {}).setdefault(words[3], []).append((words[5], int(words[9])))
            return True
        if bare.startswith("iptables -w -F "):
            self.queued.get(node, {}).pop(words[3], None)
        return super()._step(node, chains, part)

    def queue_rules(self, node: str) -> list[tuple[str, str, int]]:
        """The NFQUEUE rules in effect on ``node``'s way out: ``(chain, destination ip, queue)``
        for every chain OUTPUT jumps to."""
        chains = self.chains.get(node, {})
        return [(c, dst, q) for kind, c in chains.get("OUTPUT", []) if kind == "-j"
                for dst, q in self.queued.get(node, {}).get(c, [])]


def shaper_controller(n: int = 5, leader=None, seed: int = 1, shaper: bool = True):
    """``(cluster, sim, db, controller)`` as :func:`make_controller`, on a kernel without
    netem played by a :class:`ShaperSim` (``shaper``: whether the shaper can start)."""
    import random

    from nemesis.controller import NemesisController
    sim = ShaperSim(netem=False, shaper=shaper)
    cluster = FakeCluster(n, FakeRemote(sim))
    db = FakeDB(cluster.nodes)
    find = leader if callable(leader) else (lambda: leader)
    return cluster, sim, db, NemesisController(cluster, db, find, random.Random(seed))
