"""targets/kafka/txn_librdkafka.py: a librdkafka call that hangs past its session's timeouts is
abandoned as a fatal ``_TIMED_OUT`` (so the session is replaced and the op is ``info``), and
it holds only the session's own threads: the event loop's shared executor, which the
nemesis and every other blocking call of the run use, stays free.

A real run hung this way: six ``send_offsets_to_transaction`` calls never returned, filled
the shared executor (6 threads on 2 cores), and the nemesis and the teardown waited for ever.
"""
from __future__ import annotations

import asyncio
import threading

import pytest

from targets.kafka import txn_librdkafka
from targets.kafka.txn_errors import LibraryError
from targets.txn_client import SessionConfig


def test_a_hung_call_is_abandoned_and_the_shared_executor_stays_free(monkeypatch):
    monkeypatch.setattr(txn_librdkafka, "HANG_GRACE_S", 0.2)
    release = threading.Event()

    def hang():
        release.wait(30)
        return "late"

    async def main():
        cfg = SessionConfig(("b1:9092",), "g", "t", timeout_ms=100, transaction_timeout_ms=100,
                            session_timeout_ms=100)
        drivers = [txn_librdkafka.RdkafkaDriver(cfg) for _ in range(8)]    # more than the shared pool
        results = await asyncio.gather(*(d._blocking(hang) for d in drivers), return_exceptions=True)
        # meanwhile-hung threads are the drivers' own: the shared executor still answers at once
        shared = await asyncio.wait_for(asyncio.to_thread(lambda: "free"), 2.0)
        assert await drivers[0]._blocking(lambda: 41 + 1) == 42    # its second thread still works
        return results, shared, drivers

    try:
        results, shared, drivers = asyncio.run(main())
    finally:
        release.set()
    assert shared == "free"
    assert len(results) == 8
    for r in results:
        assert isinstance(r, LibraryError) and r.code == "_TIMED_OUT" and r.fatal and r.timeout, r
    for d in drivers:
        d._executor.shutdown(wait=True)


def test_a_call_that_returns_in_time_gives_its_value_and_library_errors_pass_through():
    cfg = SessionConfig(("b1:9092",), "g", "t")
    d = txn_librdkafka.RdkafkaDriver(cfg)

    def refused():
        raise LibraryError("INVALID_TXN_STATE", "no", fatal=True)

    async def main():
        assert await d._blocking(lambda x: x * 2, 21) == 42
        with pytest.raises(LibraryError, match="INVALID_TXN_STATE"):
            await d._blocking(refused)

    asyncio.run(main())
    d._executor.shutdown(wait=True)
