"""DescribeQuorum (targets/kafka/describe_quorum.py) against real Apache Kafka KRaft nodes on
the loopback, cross-checked with Kafka's own ``MetadataQuorumCommand`` (kafka-metadata-quorum).

Two clusters, each started once per module and always killed in the fixture's teardown:
one combined broker+controller formatted ``--standalone`` (KIP-853 dynamic quorum:
DescribeQuorum v2 with directory ids), and three controllers with a static
``controller.quorum.voters`` plus one broker (an observer). Ports are picked free in
19000-19999. Needs Java 17+ and Kafka's jars: ``$KRAFT_CHAOS_KAFKA_LIBS``, else the default
version resolved with Maven into ``~/.cache/kraft-chaos/kafka`` (as ``--db kafka`` does);
skipped, with the reason, otherwise.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from targets.kafka import describe_quorum as dq
from targets.kafka.protocol import FrameDecoder, frame

HOST = "127.0.0.1"
START_TIMEOUT_S = 120.0


def _libs() -> tuple[Path | None, str]:
    """The jar folder to use (``$KRAFT_CHAOS_KAFKA_LIBS``, else Kafka's default version
    resolved into the cache as ``--db kafka`` does), or None and why not."""
    env = os.environ.get("KRAFT_CHAOS_KAFKA_LIBS")
    if env:
        d = Path(env)
        if any(d.glob("kafka-clients-*.jar")) and any(d.glob("kafka_2.13-*.jar")):
            return d, ""
        return None, f"no Kafka jars (kafka-clients-*.jar, kafka_2.13-*.jar) in {env}"
    from targets.errors import TargetError
    from targets.kafka.jars import resolve_jars
    try:
        return resolve_jars(), ""
    except TargetError as e:
        return None, f"Kafka's jars could not be resolved: {e}"


_RESOLVED: list = []


def _jars() -> Path:
    """:func:`_libs`, resolved once, when a test first needs it (skips the test without jars)."""
    if not _RESOLVED:
        _RESOLVED.append(_libs())
    libs, why = _RESOLVED[0]
    if libs is None:
        pytest.skip(why)
    return libs


pytestmark = [
    pytest.mark.kafka,
    pytest.mark.skipif(shutil.which("java") is None, reason="no `java` on PATH (Kafka needs Java 17+)"),
]


def _java(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-cp", f"{_jars()}/*", *args],
                          capture_output=True, text=True, **kw)


def _free_ports(n: int) -> list[int]:
    """``n`` ports in 19000-19999 that nothing listens on right now."""
    out, start = [], random.randrange(19000, 19900)
    for p in [*range(start, 20000), *range(19000, start)]:
        with socket.socket() as s:
            try:
                s.bind((HOST, p))
            except OSError:
                continue
        out.append(p)
        if len(out) == n:
            return out
    pytest.skip(f"fewer than {n} free ports in 19000-19999")


class Cluster:
    """Kafka JVMs started from ``{name: properties}`` in ``root``; :meth:`stop` kills them."""

    def __init__(self, root: Path):
        self.root, self.procs = root, {}

    def start(self, configs: dict[str, str], standalone: bool) -> None:
        cid = _java("kafka.tools.StorageTool", "random-uuid", check=True).stdout.split()[-1]
        formats = {}
        for name, props in configs.items():                # formatted in parallel
            path = self.root / f"{name}.properties"
            path.write_text(props + f"log.dirs={self.root / name}-data\n")
            formats[name] = subprocess.Popen(
                ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{_jars()}/*", "kafka.tools.StorageTool", "format",
                 "--cluster-id", cid, "--config", str(path), *(["--standalone"] if standalone else [])],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, f in formats.items():
            out = f.communicate(timeout=120)[0]
            assert f.returncode == 0, f"format {name} failed: {out}"
        for name in configs:
            log = open(self.root / f"{name}.log", "w")
            self.procs[name] = subprocess.Popen(
                ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{_jars()}/*",
                 "kafka.Kafka", str(self.root / f"{name}.properties")],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.root, start_new_session=True)
            log.close()

    def check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                tail = (self.root / f"{name}.log").read_text()[-3000:]
                pytest.fail(f"Kafka node {name} exited with {p.returncode}:\n{tail}")

    def stop(self) -> None:
        """SIGTERM each JVM started here (by its own process group), SIGKILL after 5 s."""
        for p in self.procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # e.g. a broker's controlled shutdown with no controller left
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)


def _wait_for(cluster: Cluster, ports: list[int], ready) -> dq.QuorumSample:
    deadline, last = time.monotonic() + START_TIMEOUT_S, None
    while time.monotonic() < deadline:
        cluster.check_alive()
        for port in ports:
            try:
                s = dq.describe_quorum(HOST, port, 2.0)
            except dq.KafkaClientError as e:
                last = e
                continue
            if ready(s):
                return s
            last = s
        time.sleep(0.5)
    pytest.fail(f"no ready quorum on {ports} within {START_TIMEOUT_S}s; last: {last}")


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """One combined broker+controller, node 1, formatted --standalone: (broker port, controller port)."""
    broker, ctrl = _free_ports(2)
    cluster = Cluster(tmp_path_factory.mktemp("kafka-single"))
    try:
        cluster.start({"node1": (
            "process.roles=broker,controller\nnode.id=1\n"
            f"listeners=PLAINTEXT://{HOST}:{broker},CONTROLLER://{HOST}:{ctrl}\n"
            f"advertised.listeners=PLAINTEXT://{HOST}:{broker}\ncontroller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"controller.quorum.bootstrap.servers={HOST}:{ctrl}\n"
            "offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n")},
            standalone=True)
        _wait_for(cluster, [ctrl], lambda s: s.high_watermark > 0)
        yield broker, ctrl
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """Controllers 1-3 (static voters) and broker 4: ({id: controller port}, broker port)."""
    *ctrl, broker = _free_ports(4)
    ports = dict(zip((1, 2, 3), ctrl))
    voters = ",".join(f"{i}@{HOST}:{p}" for i, p in ports.items())
    common = (f"controller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\n"
              "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n")
    configs = {f"c{i}": f"process.roles=controller\nnode.id={i}\nlisteners=CONTROLLER://{HOST}:{p}\n" + common
               for i, p in ports.items()}
    configs["b4"] = (f"process.roles=broker\nnode.id=4\nlisteners=PLAINTEXT://{HOST}:{broker}\n"
                     f"advertised.listeners=PLAINTEXT://{HOST}:{broker}\noffsets.topic.replication.factor=1\n"
                     + common)
    cluster = Cluster(tmp_path_factory.mktemp("kafka-three"))
    try:
        cluster.start(configs, standalone=False)
        _wait_for(cluster, ctrl, lambda s: len(s.voters) == 3 and any(o.replica_id == 4 for o in s.observers))
        yield ports, broker
    finally:
        cluster.stop()


def _tool(bootstrap: str, what: str) -> str:
    r = _java("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller", bootstrap,
              "describe", f"--{what}", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _status(bootstrap: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in _tool(bootstrap, "status")
                                                 .splitlines()) if v}


def _replication(bootstrap: str) -> dict[int, dict[str, str]]:
    lines = [line.split() for line in _tool(bootstrap, "replication").splitlines() if line.strip()]
    head = lines[0]
    return {int(row[0]): dict(zip(head, row)) for row in lines[1:]}


def _raw(port: int, version: int, **kw) -> dq.DescribeQuorumResponse:
    """One DescribeQuorum of ``version`` over a fresh socket, no negotiation."""
    with socket.create_connection((HOST, port), 5) as s:
        s.sendall(frame(dq.encode_describe_quorum_request(version, 1, **kw)))
        dec, frames = FrameDecoder(), []
        while not frames:
            frames = dec.feed(s.recv(65536))
    return dq.decode_describe_quorum_response(frames[0], version)


def test_standalone_node_matches_metadata_quorum_tool(single):
    broker, ctrl = single
    before = dq.describe_quorum(HOST, ctrl, 5.0)
    status, repl = _status(f"{HOST}:{ctrl}"), _replication(f"{HOST}:{ctrl}")
    after = dq.describe_quorum(HOST, ctrl, 5.0)
    assert before.version == after.version == 2
    assert (before.leader_id, before.leader_epoch) == (after.leader_id, after.leader_epoch) == (
        int(status["LeaderId"]), int(status["LeaderEpoch"])) == (1, before.leader_epoch)
    assert before.high_watermark <= int(status["HighWatermark"]) <= after.high_watermark
    [voter] = after.voters
    [tool_voter] = json.loads(status["CurrentVoters"])
    assert voter.replica_id == tool_voter["id"] == 1 and voter.directory_id == tool_voter["directoryId"]
    assert repl[1]["DirectoryId"] == voter.directory_id and repl[1]["Status"] == "Leader"
    assert before.voters[0].log_end_offset <= int(repl[1]["LogEndOffset"]) <= voter.log_end_offset
    assert voter.last_fetch_ms > 0 and voter.last_caught_up_ms > 0 and after.observers == ()
    assert after.nodes == {1: (dq.Listener("CONTROLLER", HOST, ctrl),)}
    assert tool_voter["endpoints"] == [f"CONTROLLER://{HOST}:{ctrl}"]
    # a broker listener answers too (forwarded to the active controller)
    assert dq.describe_quorum(HOST, broker, 5.0).leader_id == 1


def test_every_version_and_a_bad_partition(single):
    _, ctrl = single
    v0, v1, v2 = (_raw(ctrl, v).sample() for v in (0, 1, 2))
    assert v0.voters[0].directory_id is None and v0.voters[0].last_fetch_ms == -1 and v0.nodes is None
    assert v1.voters[0].directory_id is None and v1.voters[0].last_fetch_ms > 0 and v1.nodes is None
    assert v2.voters[0].directory_id is not None and v2.nodes
    assert v0.high_watermark <= v1.high_watermark <= v2.high_watermark
    with pytest.raises(dq.KafkaDefiniteError, match="^UNKNOWN_TOPIC_OR_PARTITION") as ei:
        dq.describe_quorum(HOST, ctrl, 5.0, partition=1)
    assert ei.value.error_code == 3


def test_reused_connection_samples(single):
    _, ctrl = single

    async def main():
        c = dq.KafkaQuorumClient(HOST, ctrl, None, timeout_ms=3000)
        try:
            samples = []
            for _ in range(5):
                samples.append(await c.sample())
                await asyncio.sleep(0.25)
            writer, versions = c._writer, dict(c.versions)
            body = await c.describe_quorum()
            assert c._writer is writer                     # one connection throughout
            return samples, versions, body
        finally:
            await c.close()
    samples, versions, body = asyncio.run(main())
    assert versions == {18: 4, 55: 2}
    hws = [s.high_watermark for s in samples]
    assert hws == sorted(hws) and len({s.leader_epoch for s in samples}) == 1
    assert body["LeaderId"] == 1 and body["CurrentVoters"][0]["LogEndOffset"] >= hws[-1]


def test_three_controllers_one_leader_and_lags(three):
    ports, broker = three
    deadline = time.monotonic() + 30
    # a new leader reports -1 for a voter until that voter's first Fetch, and a high watermark
    # of -1 until a majority has fetched past its epoch's first offset: wait for both
    while True:
        answers = {}
        for node, port in ports.items():
            try:
                answers[node] = dq.describe_quorum(HOST, port, 5.0)
            except dq.KafkaDefiniteError as e:
                answers[node] = e
        leaders = {n: a for n, a in answers.items() if isinstance(a, dq.QuorumSample)}
        settled = len(leaders) == 1 and all(0 <= v.log_end_offset for v in next(iter(leaders.values())).voters) \
            and next(iter(leaders.values())).high_watermark > 0
        # and every follower answered (on a loaded machine a controller may not accept a
        # connection within the 5 s timeout for a while: that is no answer yet, not its answer)
        settled = settled and all(getattr(a, "code", None) != "connection" for a in answers.values())
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(leaders) == 1, answers
    [(node, s)] = leaders.items()
    assert s.leader_id == node and s.version == 2
    for n, a in answers.items():
        if n != node:                                      # Kafka names no leader in this error
            assert (a.code, a.error_code, a.leader_id, a.leader_epoch) == ("NOT_LEADER_OR_FOLLOWER", 6, None, None)
    assert sorted(v.replica_id for v in s.voters) == [1, 2, 3]
    assert all(v.directory_id is None for v in s.voters)  # static voters carry no directory id
    assert all(0 <= v.log_end_offset for v in s.voters) and s.high_watermark > 0
    [obs] = [o for o in s.observers if o.replica_id == 4]
    assert obs.directory_id is not None and obs.log_end_offset >= 0
    assert s.nodes == {i: (dq.Listener("CONTROLLER", HOST, p),) for i, p in ports.items()}

    bootstrap = ",".join(f"{HOST}:{p}" for p in ports.values())
    status, repl = _status(bootstrap), _replication(bootstrap)
    after = dq.describe_quorum(HOST, ports[node], 5.0)
    assert (int(status["LeaderId"]), int(status["LeaderEpoch"])) == (s.leader_id, s.leader_epoch)
    assert s.high_watermark <= int(status["HighWatermark"]) <= after.high_watermark
    assert {n: r["Status"] for n, r in repl.items()} == {
        **{i: ("Leader" if i == node else "Follower") for i in ports}, 4: "Observer"}
    assert repl[4]["DirectoryId"] == obs.directory_id
    mine = {r.replica_id: r.log_end_offset for r in (*s.voters, *s.observers)}
    later = {r.replica_id: r.log_end_offset for r in (*after.voters, *after.observers)}
    for n, r in repl.items():
        assert mine[n] <= int(r["LogEndOffset"]) <= later[n]
    # the broker forwards DescribeQuorum to the active controller
    assert dq.describe_quorum(HOST, broker, 5.0).leader_id == node
