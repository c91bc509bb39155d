"""``kraft-chaos check`` on Kafka-workload histories: Jepsen's history.edn and our history.jsonl
files go to Jepsen's Kafka checker (harness/cli/check_kafka.py), a stored run whose test.json
names workload ``txn`` gets it too, and a history of ops the chosen model does not know is never
called valid (it was: "linearizable, 0 ops", exit 0)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as cli
from history import store
from history.writer import HistoryWriter
from tests.test_checkers_kafka_txn import G0_HISTORY

HERE = Path(__file__).parent / "histories"


def check(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(["check", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_jepsen_kafka_history_edn_is_checked_by_jepsen_s_checker(tmp_path, capsys):
    code, out, _ = check(capsys, HERE / "jepsen-kafka-valid.edn", "--out", tmp_path / "o")
    assert code == 0
    assert "jepsen-kafka-valid.edn: VALID (Jepsen's Kafka workload checker: 5 ops, 8 micro-ops, 2 keys" in out
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["valid"] is True and doc["format"] == "edn" and doc["anomalies"]["G1a"] == 0


def test_g1a_in_jepsen_s_format_exits_1_naming_the_ops(tmp_path, capsys):
    code, out, _ = check(capsys, HERE / "jepsen-kafka-g1a.edn", "--out", tmp_path / "o")
    assert code == 1
    assert "INVALID" in out and "  G1a: 1\n" in out
    assert ("op 3 (ok poll, process 1) polled 2 from key 7 at offset 0, which op 1 (fail send, process 0) sent"
            in out)
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["anomalies"]["G1a"] == 1 and doc["checkers"]["G1a"]["anomalies"][0]["writer"] == 1


def test_a_vector_of_op_maps_with_keyword_keys_and_values(tmp_path, capsys):
    # Jepsen's own lost-write test, in its keywords: the same names as Jepsen reports
    code, out, _ = check(capsys, HERE / "jepsen-kafka-lost.edn", "--out", tmp_path / "o")
    assert code == 1
    assert "  lost-write: 2\n" in out and "  unseen: 1\n" in out and "  int-send-skip: 1 (allowed)\n" in out
    assert "op 1 (ok send, process 0) sent a to key x at offset 0, and no ok poll read it, though op 7" in out


def test_our_jsonl_with_micro_ops_is_routed_too_and_takes_the_flags(tmp_path, capsys):
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(op) + "\n" for op in G0_HISTORY))
    assert check(capsys, p, "--out", tmp_path / "a")[0] == 0            # no ww edges: nothing
    code, out, _ = check(capsys, p, "--out", tmp_path / "b", "--ww-deps")
    assert code == 0 and "  G0: 1 (allowed)" in out                     # found, allowed
    code, out, _ = check(capsys, p, "--out", tmp_path / "c", "--ww-deps", "--forbid", "G0")
    assert code == 1 and "INVALID" in out


def test_a_bad_forbid_kind_is_bad_input(tmp_path, capsys):
    code, _out, err = check(capsys, HERE / "jepsen-kafka-g1a.edn", "--forbid", "G1a", "--out", tmp_path / "o")
    assert code == 3 and "--forbid G1a: never allowed" in err


def test_a_kafka_history_with_a_malformed_op_is_bad_input_naming_the_line(tmp_path, capsys):
    p = tmp_path / "bad.edn"
    p.write_text((HERE / "jepsen-kafka-g1a.edn").read_text() + "{:index 4, :process 1, :f :poll}\n")
    code, _out, err = check(capsys, p, "--out", tmp_path / "o")
    assert code == 3 and "bad.edn:5: op has no :type" in err
    assert not (tmp_path / "o" / "results.json").exists()


def test_asking_the_register_model_for_a_kafka_history_is_unknown_naming_the_functions(tmp_path, capsys):
    code, out, _ = check(capsys, HERE / "jepsen-kafka-g1a.edn", "--model", "register", "--out", tmp_path / "o")
    assert code == 2
    assert "unknown (register model, 0 ops" in out
    assert "the history holds ops of functions the register model does not know: poll (2), send (2)" in out


def test_a_register_history_with_other_functions_is_unknown_not_linearizable(tmp_path, capsys):
    p = tmp_path / "h.edn"
    p.write_text("{:process 0, :type :invoke, :f :write, :value 1}\n{:process 0, :type :ok, :f :write, :value 1}\n"
                 "{:process 1, :type :invoke, :f :transfer, :value 5}\n{:process 1, :type :ok, :f :transfer, :value 5}\n"
                 "{:process :nemesis, :type :info, :f :start, :value nil}\n")
    code, out, _ = check(capsys, p, "--out", tmp_path / "o")
    assert code == 2 and "does not know: transfer (2)" in out
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["valid"] == "unknown" and doc["checkers"]["linearizability"]["unknown_functions"] == {"transfer": 2}


def test_our_kv_history_s_monitor_samples_are_not_unknown_functions(tmp_path, capsys):
    p = tmp_path / "kv.jsonl"
    h = HistoryWriter(p)
    dq = h.invoke(9, "describe-quorum", None, node="n1")
    h.complete(dq, "ok", {"LeaderId": 1})
    w = h.invoke(0, "write", ["x", 1])
    h.complete(w, "ok", ["x", 1])
    h.close()
    code, out, _ = check(capsys, p, "--out", tmp_path / "o")
    assert code == 0 and "linearizable" in out


def txn_run(root: Path, history: list[dict]) -> Path:
    run = store.create_run_dir(root, "txn-none", "20250101T000000.000Z")
    (run / "history.jsonl").write_text("".join(json.dumps(op) + "\n" for op in history))
    store.write_test_json(run, {"workload": "txn"}, 1, "kraft-chaos run --workload txn --seed 1")
    return run


def test_a_stored_txn_run_is_checked_with_jepsen_s_kinds(tmp_path, capsys):
    from tests.test_checkers_kafka_txn import op_pair, reindex
    h = reindex(op_pair(0, 0, "send", [["send", "x", "a"], ["send", "x", "c"]],
                        [["send", "x", [0, "a"]], ["send", "x", [2, "c"]]])
                + op_pair(0, 1, "send", [["send", "x", "b"]], [["send", "x", [1, "b"]]])
                + op_pair(0, 9, "poll", [["poll"]], [["poll", {"x": [[0, "a"], [1, "b"], [2, "c"]]}]]))
    run = txn_run(tmp_path / "store", h)
    code, out, _ = check(capsys, run)
    assert code == 0
    results = json.loads(store.results_path(run).read_text())
    assert results["valid"] is True and results["anomalies"]["int-send-skip"] == 1
    assert "int-send-skip: 1 (allowed)" in out
    assert "op 1 (ok send, process 0) sent a then c to key x" in out
    code, out, _ = check(capsys, run, "--forbid", "int-send-skip")
    assert code == 1 and json.loads(store.results_path(run).read_text())["valid"] is False
