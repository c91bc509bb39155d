"""``kraft-chaos run --workload txn``'s configuration: the flags, what is refused before anything
starts (one line, exit 3), the repeat command, and what reaches the Kafka DB."""
from __future__ import annotations

import pytest

from harness.cli import main as cli
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from targets.kafka import txn_clients
from targets.kafka.db import KafkaDB
from targets.kafka.settings import KafkaSettings
from targets.kafka.target import prepare
from workloads.registry import workload_checkers, workload_spec


@pytest.mark.parametrize("argv, needle", [
    (["--db", "kraft", "--workload", "txn"], "our brokers do not have"),
    (["--db", "kafka", "--workload", "txn", "--kafka-version", "3.9.2", "--transaction-version", "2"],
     "transaction.version feature (KIP-890 part 2) exists from Kafka 4.0"),
    (["--db", "kafka", "--workload", "txn", "--transaction-version", "3"], "has no transaction.version 3"),
    (["--db", "kafka", "--workload", "queue", "--client", "java"], "--client applies to the txn workload"),
    (["--db", "kafka", "--workload", "metadata", "--txn-delay", "5"], "--txn-delay does not apply"),
    (["--db", "kafka", "--workload", "txn", "--client", "jvm"], "invalid choice: 'jvm'"),
])
def test_bad_txn_input_is_one_line_and_exit_3(argv, needle, capsys, tmp_path):
    assert cli.main(["run", "--store", str(tmp_path), *argv]) == 3
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.iterdir())             # nothing started, nothing stored


def test_a_java_client_whose_jar_does_not_resolve_is_refused_by_prepare(monkeypatch):
    def prepare_java(version, _log):
        from targets.errors import TargetError
        raise TargetError(f"could not find org.apache.kafka:kafka-clients:jar:{version}\nmore")
    monkeypatch.setitem(txn_clients.CLIENTS, "java",
                        txn_clients.ClientSpec("java", txn_clients._java, prepare_java, "java"))
    with pytest.raises(ValueError) as e:
        prepare(KafkaSettings(seed=1, nodes=3, client="java"))
    assert str(e.value) == "--client java with Kafka 4.4.0: could not find org.apache.kafka:kafka-clients:jar:4.4.0"
    with pytest.raises(ValueError, match="--client java with Kafka"):
        resolve(RunConfig(seed=1, db="kafka", workload="txn", client="java"))


def test_the_txn_spec_names_jepsens_checker_and_runs_on_kafka_alone():
    spec = workload_spec("txn")
    assert spec.dbs == ("kafka",) and spec.checkers[0] == "kafka-txn"
    assert workload_checkers("txn") == spec.checkers
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        workload_checkers("nope")


def test_txn_flags_reach_the_options_the_repeat_command_and_the_db():
    r = resolve(RunConfig(seed=4, db="kafka", workload="txn", client="librdkafka", transaction_version=2,
                          txn_delay_ms=25, transactions=False))
    o = r.workload.options
    assert (o.txn_delay_ms, o.transactions) == (25, False)
    cmd = r.flat.repeat_command()
    for flag in ("--client librdkafka", "--transaction-version 2", "--txn-delay 25", "--transactions false",
                 "--workload txn", "--nemesis-targets all"):
        assert flag in cmd
    assert r.target.settings.client == "librdkafka" and r.target.settings.transaction_version == 2

    class Cluster:
        nodes = ["n1", "n2", "n3", "n4"]

        def ip(self, node):
            return f"10.0.0.{node[1:]}"
    db = KafkaDB.for_run(Cluster(), "cid", r.target.settings.__class__(**{**r.target.settings.__dict__,
                                                                            "nodes": 1}))
    assert "--feature" in db.format_argv("n1") and "transaction.version=2" in db.format_argv("n2")
    assert db.txn_client == "librdkafka"
    assert db.txn_client_factory().name == "librdkafka"


def test_the_default_run_has_no_transaction_feature_and_the_default_client():
    r = resolve(RunConfig(seed=4, db="kafka", workload="txn"))
    assert r.target.settings.client is None and "--client" not in r.flat.repeat_command()

    class Cluster:
        nodes = ["n1", "n2"]

        def ip(self, node):
            return f"10.0.0.{node[1:]}"
    db = KafkaDB.for_run(Cluster(), "cid", KafkaSettings(seed=1, nodes=1))
    assert "--feature" not in db.format_argv("n1")
    assert db.txn_client_factory().name == txn_clients.DEFAULT_CLIENT
