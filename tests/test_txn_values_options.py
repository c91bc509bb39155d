"""The txn workload's value padding (targets/txn_values.py) and its producer options
``--compression`` and ``--value-bytes``: read back to the int, refused when bad (one line,
exit 3, nothing started), recorded in the run's config (test.json) and the repeat command,
and handed to every session."""
from __future__ import annotations

import pytest

from harness.cli import main as cli
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from targets.txn_client import SessionConfig
from targets.txn_values import MAX_VALUE_BYTES, decode_value, encode_value, pad_for
from workloads.txn import TxnOptions
from tests.txn_workload_fakes import FakeKafka, make_wl, run_txn


def test_a_padded_value_is_exactly_its_size_and_reads_back_as_its_int():
    for value, size in [(0, 100), (7, 3), (123456, 1024), (99, 70_000)]:
        text = encode_value(value, size)
        assert len(text.encode()) == size and text.startswith(f"{value}~")
        assert decode_value(text.encode()) == value and decode_value(text) == value
    # padding is a function of the value: two values' pads differ, one value's is stable
    assert pad_for(1, 200) != pad_for(2, 200) and pad_for(1, 200) == pad_for(1, 200)
    assert set(pad_for(5, 5000)) <= set("abcdefghijklmnopqrstuvwxyz")


def test_no_room_for_padding_or_size_0_sends_the_digits_alone():
    assert encode_value(12345, 0) == "12345" and encode_value(12345, 6) == "12345"
    assert encode_value(12345, 7) == "12345~" + pad_for(12345, 1)
    assert decode_value(b"12345") == 12345 and decode_value(b"-4") == -4


def test_a_record_whose_padding_is_not_its_values_reads_back_as_text():
    good = encode_value(42, 64)
    bad = good[:-1] + ("a" if good[-1] != "a" else "b")
    assert decode_value(bad.encode()) == bad                 # changed bytes: a value no op sent
    assert decode_value(b"42~") == "42~" and decode_value(b"x~abc") == "x~abc"
    assert decode_value(encode_value(43, 64).replace("43", "42", 1)) != 42
    assert decode_value(None) is None and decode_value(b"hello") == "hello"


def test_txn_options_refuse_bad_compression_and_value_sizes():
    o = TxnOptions(compression="zstd", value_bytes=4096)
    assert (o.compression, o.value_bytes) == ("zstd", 4096)
    for bad, field in [({"compression": "brotli"}, "compression must be one of none, gzip, snappy, lz4, zstd"),
                       ({"compression": None}, "compression"), ({"value_bytes": -1}, "value_bytes"),
                       ({"value_bytes": MAX_VALUE_BYTES + 1}, "value_bytes"), ({"value_bytes": True}, "value_bytes"),
                       ({"value_bytes": 1.5}, "value_bytes")]:
        with pytest.raises(ValueError, match=field):
            TxnOptions(**bad)
    with pytest.raises(ValueError, match="compression"):
        SessionConfig(("h:1",), "g", compression="LZ4")


@pytest.mark.parametrize("argv, needle", [
    (["--compression", "brotli"], "--compression must be one of none, gzip, snappy, lz4, zstd, got 'brotli'"),
    (["--value-bytes", "-3"], f"--value-bytes must be an integer from 0 to {MAX_VALUE_BYTES}, got '-3'"),
    (["--value-bytes", "many"], "--value-bytes must be an integer"),
    (["--value-bytes", str(MAX_VALUE_BYTES + 1)], "--value-bytes must be an integer"),
])
def test_bad_values_are_one_line_and_exit_3_before_anything_starts(argv, needle, capsys, tmp_path):
    assert cli.main(["run", "--store", str(tmp_path), "--db", "kafka", "--workload", "txn", *argv]) == 3
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


def test_the_options_apply_to_the_txn_workload_alone(capsys, tmp_path):
    assert cli.main(["run", "--store", str(tmp_path), "--db", "kafka", "--workload", "queue",
                     "--compression", "lz4"]) == 3
    err = capsys.readouterr().err.strip()
    assert "--compression does not apply to the queue workload" in err and len(err.splitlines()) == 1


def test_the_options_reach_the_workload_test_json_and_the_repeat_command():
    r = resolve(RunConfig(seed=3, db="kafka", workload="txn", compression="lz4", value_bytes=2048))
    assert (r.workload.options.compression, r.workload.options.value_bytes) == ("lz4", 2048)
    assert {"compression": "lz4", "value_bytes": 2048}.items() <= r.flat.to_dict().items()
    cmd = r.flat.repeat_command()
    assert "--compression lz4" in cmd and "--value-bytes 2048" in cmd
    default = resolve(RunConfig(seed=3, db="kafka", workload="txn"))
    assert (default.workload.options.compression, default.workload.options.value_bytes) == ("none", 0)
    assert "--compression" not in default.flat.repeat_command()


def test_every_session_gets_the_compression_and_value_size(tmp_path):
    kafka = FakeKafka()
    wl, ops = run_txn(tmp_path, kafka, seconds=0.3, compression="gzip", value_bytes=300)
    assert kafka.sessions and {(s.config.compression, s.config.value_bytes) for s in kafka.sessions} == {("gzip", 300)}
    sends = [m for op in ops if op["type"] == "ok" and isinstance(op["value"], list)
             for m in op["value"] if m[0] == "send"]
    assert sends and all(isinstance(m[2][1], int) for m in sends)      # the history keeps the int
    assert make_wl(tmp_path / "w", FakeKafka()).workers()[0].session_config().compression == "none"
