"""History readers: each format's semantics, and bad input named by file and line."""
from __future__ import annotations

import json

import pytest

from checkers.linearizability import check_file
from checkers.linearizability.formats import FormatError, model_for, read_file
from checkers.linearizability.operation import UNKNOWN


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


JEPSEN_LOG = """INFO  jepsen.util - 0\t:invoke\t:write\t1
INFO  jepsen.util - 0\t:ok\t:write\t1
INFO  jepsen.util - 1\t:invoke\t:cas\t[1 2]
INFO  jepsen.util - 1\t:fail\t:cas\t[1 2]
INFO  jepsen.util - 2\t:invoke\t:read\tnil
INFO  jepsen.util - 2\t:fail\t:read\t:timed-out
INFO  jepsen.util - 3\t:invoke\t:write\t4
INFO  jepsen.util - 3\t:info\t:write\t:timed-out
INFO  jepsen.util - 4\t:invoke\t:read\tnil
INFO  jepsen.util - 4\t:ok\t:read\t1
"""


def test_jepsen_log_follows_porcupines_parser(tmp_path):
    p = write(tmp_path, "h.log", JEPSEN_LOG)
    ops = read_file(p, "jepsen-log", model_for("jepsen-log", None)).ops
    by_proc = {o.process: o for o in ops}
    assert by_proc[1].output is False and by_proc[1].ret is not None  # :fail :cas = cas ran, compare failed
    assert by_proc[2].output is UNKNOWN and by_proc[2].ret is not None  # timed-out read closes, unknown
    assert by_proc[3].ret is None  # :info leaves it open to +infinity
    assert by_proc[4].output == 1 and by_proc[0].input == 1
    # the failed cas [1 2] saw something other than 1 while the register held 1: not linearizable
    assert check_file(p, fmt="jepsen-log")["valid"] is False


def test_jepsen_log_bad_line_named(tmp_path):
    p = write(tmp_path, "h.log", JEPSEN_LOG.replace("4\t:ok\t:read\t1", "4\t:ok\t:read\t[oops"))
    with pytest.raises(FormatError, match=r"h\.log:10: cannot read value"):
        read_file(p, "jepsen-log", model_for("jepsen-log", None))
    p = write(tmp_path, "g.log", JEPSEN_LOG + "garbage\n")
    with pytest.raises(FormatError, match=r"g\.log:11: not a Jepsen op line"):
        read_file(p, "jepsen-log", model_for("jepsen-log", None))


def test_kv_log_bad_line_named(tmp_path):
    p = write(tmp_path, "c.txt", '{:process 0, :type :invoke, :f :get, :key "1", :value nil}\n'
                                 '{:process 0, :type :ok, :f :get, :key "1", :value ""}\n'
                                 '{:process 0, :type :invoke, :f :frob, :key "1", :value nil}\n')
    with pytest.raises(FormatError, match=r"c\.txt:3: not a kv op map"):
        read_file(p, "kv-log", model_for("kv-log", None))


KNOSSOS_BAD = """; Value is 0, pending crashed read by process 6
[{:process 4, :type :invoke, :f :write, :value 2}
 {:process 4, :type :ok, :f :write, :value 2}
 {:process 6, :type :invoke, :f :read, :value nil}
 {:process 9, :type :invoke, :f :write, :value 0}
 {:process 9, :type :ok, :f :write, :value 0}
 {:process 20, :type :invoke, :f :write, :value 1}
 ; two concurrent reads of values nobody wrote
 {:process 22  :type :invoke, :f :read, :value 3}
 {:process 21, :type :invoke, :f :read, :value 2}
 {:process 21, :type :ok, :f :read, :value 2}
 {:process 22, :type :ok, :f :read, :value 3}]
"""


def test_edn_vector_with_comments_and_jepsen_rules(tmp_path):
    p = write(tmp_path, "history.edn", KNOSSOS_BAD)
    paired = read_file(p, "edn", model_for("edn", "cas-register"))
    assert paired.crashed == 2  # process 6's read and process 20's write never complete
    assert {o.line for o in paired.ops} == {2, 4, 5, 7, 9, 10}
    r = check_file(p, model="cas-register")
    assert r["valid"] is False and r["anomalies"][0]["op"]["desc"].startswith("read() -> ")


def test_edn_one_map_per_line_fail_is_dropped(tmp_path):
    lines = ['{:type :invoke, :f :write, :value 1, :process 0, :time 10, :index 0}',
             '{:type :ok, :f :write, :value 1, :process 0, :time 20, :index 1}',
             '{:type :invoke, :f :cas, :value [2 3], :process 1, :time 30, :index 2}',
             '{:type :fail, :f :cas, :value [2 3], :process 1, :time 40, :index 3}',
             '{:type :invoke, :f :read, :value nil, :process 2, :time 50, :index 4}',
             '{:type :ok, :f :read, :value 1, :process 2, :time 60, :index 5}',
             '{:type :info, :f :start, :value nil, :process :nemesis, :time 70, :index 6}']
    p = write(tmp_path, "history.edn", "\n".join(lines) + "\n")
    paired = read_file(p, "edn", model_for("edn", None))
    assert paired.failed == 1 and paired.timed and paired.ignored == {"start": 1}
    assert [(o.f, o.call, o.ret) for o in paired.ops] == [("write", 10, 20), ("read", 50, 60)]
    assert check_file(p)["valid"] is True


@pytest.mark.parametrize("text, line, message", [
    ('{:type :invoke, :f :read, :value nil, :process 0}\n{:type :ok, :f :read :value\n', 2, "never closes"),
    ('{:type :invoke, :f :read, :value nil, :process 0}\nhello\n', 2, "expected an op map"),
    ('{:type :invoke, :f :read, :value nil, :process 0}\n{:type :ok, :f :read, :value 1 :process}\n', 2, "invalid EDN"),
    ('{:type :ok, :f :read, :value 1, :process 0}\n', 1, "no open invoke"),
])
def test_edn_bad_input_named(tmp_path, text, line, message):
    p = write(tmp_path, "history.edn", text)
    with pytest.raises(FormatError, match=rf"history\.edn:{line}: .*{message}"):
        read_file(p, "edn", model_for("edn", None))


def test_jsonl_kv_ops_by_key(tmp_path):
    ops = [
        {"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "write", "value": ["k1", 1]},
        {"index": 1, "time": 2, "type": "ok", "process": 0, "f": "write", "value": ["k1", 1]},
        {"index": 2, "time": 3, "type": "invoke", "process": 1, "f": "cas", "value": ["k2", [0, 1]]},
        {"index": 3, "time": 4, "type": "fail", "process": 1, "f": "cas", "value": ["k2", [0, 1]], "error": "cas-mismatch"},
        {"index": 4, "time": 5, "type": "invoke", "process": 2, "f": "read", "value": ["k1", None]},
        {"index": 5, "time": 6, "type": "ok", "process": 2, "f": "read", "value": ["k1", None]},
    ]
    p = write(tmp_path, "history.jsonl", "".join(json.dumps(o) + "\n" for o in ops))
    r = check_file(p, model="kv", out_dir=tmp_path)
    # the read of k1 saw nil after the write of 1 completed: a stale read
    assert r["valid"] is False and r["illegal_partitions"] == ["k1"]
    assert r["failed_ops_dropped"] == 1
    assert r["anomalies"][0]["needs"] == "value = nil"
    assert (tmp_path / "linearizability.html").is_file()


def test_unknown_format_and_model_are_named(tmp_path):
    p = write(tmp_path, "h.csv", "x")
    with pytest.raises(ValueError, match="cannot tell the format.*--format"):
        check_file(p)
    with pytest.raises(ValueError, match="unknown model 'nope': choose from"):
        check_file(write(tmp_path, "h.edn", ""), model="nope")


def test_edn_knossos_op_vectors(tmp_path):
    """knossos' oldest histories: [process type f value] (and an error after), one per line."""
    p = write(tmp_path, "old.edn", "[1 :invoke :write 3]\n[1 :ok :write 3]\n[2 :invoke :read nil]\n"
                                   "[3 :invoke :read nil]\n[3 :fail :read nil :conn-lost]\n[2 :ok :read 4]\n")
    paired = read_file(p, "edn", model_for("edn", "cas-register"))
    assert paired.failed == 1 and [o.f for o in paired.ops] == ["write", "read"]
    assert check_file(p, model="cas-register")["valid"] is False  # read 4, but only 3 was written
