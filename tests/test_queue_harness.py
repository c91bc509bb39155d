"""The queue workload's plumbing: ``--brokers`` and the workload-option flags from the CLI to
RunConfig and the workload's options, node counts and roles of ``--db kraft --brokers B``
(broker config, format, client and fault nodes), the targets' queue client factories
reaching the workload through ``Topology.from_db``. No cluster is made."""
from __future__ import annotations

import shlex

import pytest

from harness.cli.main import build_parser, main
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.cli.workload_flags import config_kwargs
from harness.config.options import resolve_brokers, workload_options
from targets.kafka.db import KafkaDB, node_count
from targets.kraft_db import KraftDB
from targets.registry import target_spec
from workloads.queue import QueueOptions
from workloads.registry import workload_spec
from workloads.topology import Topology


class FakeCluster:
    def __init__(self, n: int):
        self.nodes = [f"n{i}" for i in range(1, n + 1)]

    def ip(self, node: str) -> str:
        return f"10.77.9.{self.nodes.index(node) + 2}"


def _run_args(*argv: str):
    return build_parser().parse_args(["run", *argv])


def test_flags_reach_the_run_config_and_its_repeat_command():
    args = _run_args("--workload", "queue", "--brokers", "4", "--acks", "all", "--min-insync-replicas", "1",
                     "--unclean-leader-election", "--partitions", "5", "--replication-factor", "2")
    cfg = RunConfig(seed=1, workload="queue", **config_kwargs(args))
    assert cfg.brokers == 4
    assert cfg.workload_options() == {"partitions": 5, "replication_factor": 2, "acks": -1,
                                      "min_insync_replicas": 1, "unclean_leader_election": True}
    cmd = shlex.split(cfg.repeat_command())
    again = RunConfig(seed=1, workload="queue", **config_kwargs(build_parser().parse_args(cmd[1:])))
    assert again.workload_options() == cfg.workload_options() and again.brokers == 4
    assert _run_args("--unclean-leader-election", "false").unclean_leader_election is False
    assert _run_args("--acks", "0").acks == 0 and _run_args().acks is None


@pytest.mark.parametrize("argv,flag", [(["--acks", "2"], "--acks"), (["--brokers", "-1"], "--brokers"),
                                       (["--min-insync-replicas", "0"], "--min-insync-replicas"),
                                       (["--unclean-leader-election", "maybe"], "--unclean-leader-election")])
def test_bad_flags_exit_3_naming_the_flag(argv, flag, capsys):
    assert main(["run", *argv]) == 3
    assert flag in capsys.readouterr().err


def test_workload_options_are_checked_and_built():
    cfg = RunConfig(seed=1, workload="queue", acks=1, min_insync_replicas=1, partitions=2)
    o = workload_options(cfg, QueueOptions, "queue")
    assert (o.acks, o.min_insync_replicas, o.partitions, o.concurrency) == (1, 1, 2, cfg.concurrency)
    from workloads.append import AppendWorkload
    with pytest.raises(ValueError, match="--acks does not apply to the append workload"):
        workload_options(RunConfig(seed=1, acks=1), AppendWorkload.options_class, "append")
    with pytest.raises(ValueError, match="min_insync_replicas"):
        workload_options(RunConfig(seed=1, workload="queue", min_insync_replicas=4), QueueOptions, "queue")


def test_the_queue_workload_gets_3_brokers_on_kraft_unless_told():
    queue, kraft, kafka = workload_spec("queue"), target_spec("kraft"), target_spec("kafka")
    assert resolve_brokers(RunConfig(seed=1, workload="queue"), queue, kraft) == 3
    assert resolve_brokers(RunConfig(seed=1, workload="queue", brokers=2), queue, kraft) == 2
    with pytest.raises(ValueError, match="--brokers"):
        resolve_brokers(RunConfig(seed=1, workload="queue", brokers=0), queue, kraft)
    # kafka has its own brokers; append needs none
    assert resolve_brokers(RunConfig(seed=1, workload="queue", db="kafka"), queue, kafka) is None
    assert resolve_brokers(RunConfig(seed=1), workload_spec("append"), kraft) is None
    # the resolved run: the flat record and the target's settings agree on the node count
    for fields, want in ((dict(workload="queue"), 3), (dict(workload="queue", db="kafka"), None),
                         (dict(), None)):
        run = resolve(RunConfig(seed=1, **fields))
        assert run.flat.brokers == run.target.settings.brokers == want
        assert run.target.spec.node_count(run.target.settings) == run.flat.nodes + (0 if fields == {} else 3)


@pytest.mark.parametrize("workload, db, given, want", [
    ("queue", "kraft", None, "all"), ("queue", "kafka", None, "all"), ("queue", "kraft", "quorum", "quorum"),
    ("queue", "kraft", "clients", "clients"), ("append", "kraft", None, "quorum"), ("kv", "kraft", None, "quorum"),
    ("metadata", "kafka", None, "quorum"), ("append", "kraft", "all", "all"),
])
def test_faults_reach_the_brokers_by_default_under_the_queue_workload(workload, db, given, want):
    run = resolve(RunConfig(seed=1, workload=workload, db=db, nemesis_targets=given))
    assert run.nemesis.targets == run.flat.nemesis_targets == want
    assert f"--nemesis-targets {want}" in run.flat.repeat_command()


def test_the_cli_leaves_the_queue_default_to_the_workload_and_keeps_quorum_on_request():
    assert _run_args("--workload", "queue").nemesis_targets is None
    assert _run_args("--workload", "queue", "--nemesis-targets", "quorum").nemesis_targets == "quorum"
    assert workload_spec("queue").nemesis_targets == "all" and workload_spec("append").nemesis_targets == "quorum"
    with pytest.raises(ValueError, match="unknown nemesis targets 'brokers'"):
        resolve(RunConfig(seed=1, workload="queue", nemesis_targets="brokers"))


def test_a_queue_run_faults_the_controllers_and_the_brokers():
    db = KraftDB(FakeCluster(8), "c1", seed=1, brokers=3)
    run = resolve(RunConfig(seed=1, workload="queue"))
    assert db.fault_nodes(run.nemesis.targets) == [f"n{i}" for i in range(1, 9)]


def test_kafka_broker_counts():
    assert node_count("dedicated", 3) == 6 and node_count("dedicated", 3, 5) == 8
    assert node_count("combined", 3) == 3
    with pytest.raises(ValueError, match="--brokers needs --kafka-topology dedicated"):
        node_count("combined", 3, 2)
    with pytest.raises(ValueError, match="--brokers"):
        node_count("dedicated", 3, 0)


def test_kraft_db_with_brokers_roles_config_and_format():
    db = KraftDB(FakeCluster(5), "cid", 7, brokers=2)
    assert db.quorum_nodes() == ["n1", "n2", "n3"] and db.brokers() == ["n4", "n5"]
    assert db.client_nodes() == ["n4", "n5"] and db.fault_nodes("clients") == ["n4", "n5"]
    assert db.fault_nodes("quorum") == ["n1", "n2", "n3"] and len(db.fault_nodes("all")) == 5
    assert db.voters() == "1@10.77.9.2:9093,2@10.77.9.3:9093,3@10.77.9.4:9093"
    broker = dict(line.split("=", 1) for line in db.config_text("n4").splitlines())
    assert broker["process.roles"] == "broker" and broker["node.id"] == "4"
    assert broker["controller.quorum.voters"] == db.voters()
    assert broker["controller.quorum.bootstrap.servers"] == "10.77.9.2:9093,10.77.9.3:9093,10.77.9.4:9093"
    controller = dict(line.split("=", 1) for line in db.config_text("n1").splitlines())
    assert "process.roles" not in controller and "controller.quorum.bootstrap.servers" not in controller
    v1 = KraftDB(FakeCluster(4), "cid", 7, brokers=1, kraft_version=1)
    assert v1.initial_controllers().count("@") == 3
    assert "controller.quorum.voters" not in v1.config_text("n4")
    cmds = []

    class Remote:
        def exec(self, node, script, **kw):
            cmds.append((node, script))
    v1.cluster.remote = Remote()
    v1.format("n4")
    v1.format("n1")
    assert "--no-initial-controllers" in cmds[0][1] and "--initial-controllers=" in cmds[1][1]
    with pytest.raises(ValueError, match="at least one controller"):
        KraftDB(FakeCluster(3), "cid", 7, brokers=3)
    assert KraftDB(FakeCluster(3), "cid", 7).client_nodes() == ["n1", "n2", "n3"]


def test_the_targets_hand_their_queue_client_to_the_workload():
    db = KraftDB(FakeCluster(5), "cid", 7, brokers=2)
    top = Topology.from_db(db)
    assert top.bootstrap == ("10.77.9.5:9093", "10.77.9.6:9093") and top.nodes == ("n1", "n2", "n3")
    client = top.queue_client_factory(top.bootstrap, QueueOptions(acks=1, timeout_ms=1234))
    assert type(client).__name__ == "KraftQueueClient"
    assert (client.cluster_id, client.acks, client.timeout_ms) == ("cid", 1, 1234)
    kafka = KafkaDB(FakeCluster(6), "cidcidcidcidcidcidcidA", 7, n_controllers=3)
    top = Topology.from_db(kafka)
    client = top.queue_client_factory(top.bootstrap, QueueOptions(acks=0, idempotence=False))
    assert type(client).__name__ == "KafkaQueueClient" and client.acks == "0"
    assert client.bootstrap == "10.77.9.5:9092,10.77.9.6:9092,10.77.9.7:9092"


def test_a_scenario_run_table_may_set_brokers_and_workload_options():
    from harness.config.run import run_table
    from harness.config.scenario import RUN_FIELDS
    assert {"brokers", "acks", "min_insync_replicas", "unclean_leader_election"} <= set(RUN_FIELDS)
    t = run_table(RunConfig(seed=3, workload="queue", db="kafka", acks=-1, min_insync_replicas=1,
                            unclean_leader_election=True))
    assert t["min_insync_replicas"] == 1 and t["unclean_leader_election"] is True and "brokers" not in t


def test_kraft_wait_for_brokers_asks_the_brokers_metadata():
    import asyncio

    from targets.kraft_roles import _brokers_listed
    from tests.queue_fakes import FakeBrokers

    async def main():
        async with FakeBrokers(3) as fb:
            eps = [("127.0.0.1", fb.ports[b]) for b in fb.ids]
            assert await _brokers_listed(eps, "c1", {1, 2, 3}, 2.0)
            assert not await _brokers_listed(eps, "c1", {1, 2, 3, 9}, 0.3)   # broker 9 never shows
    asyncio.run(main())
    assert KraftDB(FakeCluster(3), "cid", 7).wait_for_brokers(0.1)          # no brokers: at once
