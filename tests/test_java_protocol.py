"""The Java client's line protocol (targets/kafka/java_protocol.py) and its JVM handling
(targets/kafka/txn_java.py's ``Jvm``): requests and answers as lines, errors as the
library's flags; a stand-in program (Python) that answers out of order, errs, hangs and
dies; and the real program (built against the default release's kafka-clients) without a
broker."""
from __future__ import annotations

import asyncio
import json
import shutil
import sys
import textwrap

import pytest

from targets.kafka.java_protocol import (ProtocolError, keys_arg, library_error, offsets_arg, parse_answer,
                                         records_of, request_line)
from targets.kafka.queue_client import decode_value
from targets.kafka.txn_errors import CRASHED, LibraryError
from targets.kafka.txn_java import Jvm


def test_request_lines():
    line = request_line(7, "send", "s1", topic="t", partition=2, value="5", timeout_ms=100)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"id": 7, "op": "send", "session": "s1", "topic": "t", "partition": 2,
                                "value": "5", "timeout_ms": 100}
    assert json.loads(request_line(1, "hello")) == {"id": 1, "op": "hello"}
    with pytest.raises(ValueError, match="unknown op"):
        request_line(1, "flush", "s")
    assert keys_arg([("t", 0), ("u", 3)]) == [["t", 0], ["u", 3]]
    assert offsets_arg({("t", 0): 9}) == [["t", 0, 9]]


def test_answers_and_their_errors():
    ok = parse_answer(b'{"id": 3, "ok": true, "result": {"offset": 12}}\n')
    assert ok.ok and ok.id == 3 and ok.result == {"offset": 12}
    bad = parse_answer(json.dumps({"id": 4, "ok": False, "error": {
        "class": "org.apache.kafka.common.KafkaException", "message": "Cannot execute transactional method",
        "causes": ["org.apache.kafka.common.errors.TimeoutException"], "retriable": False, "abortable": True,
        "fatal": False, "sync": False, "protocol": False, "txn_state": "ABORTABLE_ERROR"}}))
    err = library_error(bad.error)
    assert isinstance(err, LibraryError)
    assert (err.code, err.exception, err.abortable, err.retriable, err.fatal, err.local) == \
        ("KafkaException", "org.apache.kafka.common.KafkaException", True, False, False, False)
    assert "ABORTABLE_ERROR" in err.message
    sync = library_error({"class": "java.lang.IllegalStateException", "message": "closed", "sync": True})
    assert sync.local and sync.code == "IllegalStateException"
    refused = library_error({"class": "TxnClient$ProtocolError", "message": "no open session s", "protocol": True})
    assert refused.code == "ProtocolError"
    for line in (b"not json", b'{"id": "x", "ok": true}', b'{"id": 1, "ok": false, "error": {}}',
                 b'{"id": 1, "ok": true, "result": []}', b"[1, 2]"):
        with pytest.raises(ProtocolError):
            parse_answer(line)


def test_records_decode_values():
    rows = {"records": [["t", 0, 5, "17"], ["t", 1, 2, "x"]]}
    assert records_of(rows, decode_value) == [(("t", 0), 5, 17), (("t", 1), 2, "x")]
    with pytest.raises(ProtocolError):
        records_of({"records": [["t", 0, 5]]}, decode_value)


#: a stand-in for the JVM: answers hello; send after a delay given by its value (out of
#: order); commit with a retriable error; abort never; begin by dying mid-op
FAKE = textwrap.dedent("""
    import json, sys, threading, time, os
    lock = threading.Lock()
    def answer(obj):
        with lock:
            sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        req = json.loads(line); i, op = req["id"], req["op"]
        if op == "hello":
            answer({"id": i, "ok": True, "result": {"kafka_clients": "fake", "pid": os.getpid()}})
        elif op == "send":
            def later(i=i, v=req["value"]):
                time.sleep(int(v) / 1000); answer({"id": i, "ok": True, "result": {"offset": int(v)}})
            threading.Thread(target=later).start()
        elif op == "commit":
            answer({"id": i, "ok": False, "error": {"class": "org.apache.kafka.common.errors.TimeoutException",
                    "message": "Timeout expired after 1000ms", "retriable": True}})
        elif op == "abort":
            pass
        elif op == "begin":
            os._exit(3)
        elif op == "exit":
            answer({"id": i, "ok": True, "result": {}}); break
""")


def fake_jvm(tmp_path) -> Jvm:
    script = tmp_path / "fake_jvm.py"
    script.write_text(FAKE)
    return Jvm([sys.executable, str(script)])


def test_jvm_matches_answers_out_of_order_and_reads_errors(tmp_path):
    async def main():
        jvm = fake_jvm(tmp_path)
        hello = await jvm.start()
        slow = asyncio.create_task(jvm.request("send", "s", wait_s=5, value="300"))
        fast = asyncio.create_task(jvm.request("send", "s", wait_s=5, value="10"))
        assert (await fast)["offset"] == 10 and not slow.done()
        assert (await slow)["offset"] == 300
        with pytest.raises(LibraryError) as e:
            await jvm.request("commit", "s", wait_s=5)
        assert e.value.retriable and e.value.code == "TimeoutException"
        with pytest.raises(LibraryError) as e:
            await jvm.request("abort", "s", wait_s=0.3)        # no answer: given up, not a death
        assert e.value.code == "TimeoutException" and not e.value.crashed and jvm.alive
        await jvm.stop()
        return hello, jvm.start_ms
    hello, start_ms = asyncio.run(main())
    assert hello["kafka_clients"] == "fake" and start_ms > 0


def test_jvm_death_fails_the_ops_in_flight_and_after(tmp_path):
    async def main():
        jvm = fake_jvm(tmp_path)
        await jvm.start()
        pending = asyncio.create_task(jvm.request("send", "s", wait_s=10, value="5000"))
        await asyncio.sleep(0.1)
        with pytest.raises(LibraryError) as died:
            await jvm.request("begin", "s", wait_s=10)         # the program exits mid-op
        with pytest.raises(LibraryError) as inflight:
            await pending
        with pytest.raises(LibraryError) as later:
            await jvm.request("send", "s", wait_s=10, value="1")
        await jvm.stop()
        return died.value, inflight.value, later.value, jvm.alive
    died, inflight, later, alive = asyncio.run(main())
    assert not alive
    for e in (died, inflight, later):
        assert e.crashed and e.code == CRASHED
    assert "exit 3" in str(died)


@pytest.mark.kafka
@pytest.mark.skipif(shutil.which("java") is None or shutil.which("mvn") is None, reason="needs java, javac and mvn")
def test_the_real_program_without_a_broker():
    """The program built for the default release: it tells its version, refuses an unknown
    session, and a send to no broker times out as the library says (after timeout_ms)."""
    from targets.kafka.java_build import ensure_java_client
    from targets.kafka.releases import DEFAULT_VERSION

    build = ensure_java_client(DEFAULT_VERSION)

    async def main():
        jvm = Jvm(build.argv())
        hello = await jvm.start()
        try:
            with pytest.raises(LibraryError) as unknown:
                await jvm.request("poll", "nobody", wait_s=10, wait_ms=10)
            await jvm.request("open", "s", wait_s=30, bootstrap="127.0.0.1:1", transactional_id=None,
                              group_id="g", timeout_ms=1500, transaction_timeout_ms=10000, max_poll_records=10,
                              session_timeout_ms=10000)
            await jvm.request("assign", "s", wait_s=10, partitions=[["t", 0]], from_beginning=True)
            polled = await jvm.request("poll", "s", wait_s=10, wait_ms=50)
            with pytest.raises(LibraryError) as timed_out:
                await jvm.request("send", "s", wait_s=10, topic="t", partition=0, value="1", timeout_ms=1500)
            closed = await jvm.request("close", "s", wait_s=10, timeout_ms=2000)
            with pytest.raises(LibraryError) as gone:
                await jvm.request("begin", "s", wait_s=10)
            return hello, unknown.value, polled, timed_out.value, closed, gone.value
        finally:
            await jvm.stop()
    hello, unknown, polled, timed_out, closed, gone = asyncio.run(main())
    assert hello["kafka_clients"] == DEFAULT_VERSION and hello["java"]
    assert unknown.code == "ProtocolError" and "no open session" in unknown.message
    assert polled == {"records": []}
    assert timed_out.code == "TimeoutException" and timed_out.retriable and not timed_out.local
    assert timed_out.exception == "org.apache.kafka.common.errors.TimeoutException"
    assert closed["closed"] is True
    assert gone.code == "ProtocolError"
