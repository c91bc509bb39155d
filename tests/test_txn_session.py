"""targets/kafka/txn_session.py with a scripted driver: the positions a session seeks back
to, the offsets it sends to a transaction or commits, the retries of retriable errors
within the op's time, the abort after a commit that requires one, and the outcome of each."""
from __future__ import annotations

import asyncio

import pytest

from targets.kafka.txn_errors import LibraryError
from targets.kafka.txn_session import Positions, Session
from targets.txn_client import SessionConfig, TxnDefiniteError, TxnIndefiniteError

K0, K1 = ("t", 0), ("t", 1)


class ScriptedDriver:
    """Each call pops the next scripted outcome of its name (an exception to raise, or a
    value), or returns the default; every call is logged as ``(name, args)``."""

    def __init__(self, **script):
        self.script = {k: list(v) for k, v in script.items()}
        self.calls: list[tuple[str, tuple]] = []

    async def _next(self, name, default, *args):
        self.calls.append((name, args))
        todo = self.script.get(name)
        if todo:
            x = todo.pop(0)
            if isinstance(x, BaseException):
                raise x
            return x
        return default

    async def open(self):
        return await self._next("open", {"transaction_version": 2})

    def info(self):
        return {"driver": "scripted"}

    async def assign(self, keys, from_beginning):
        return await self._next("assign", None, tuple(keys), from_beginning)

    async def subscribe(self, topics):
        return await self._next("subscribe", None, tuple(topics))

    async def seek(self, offsets):
        return await self._next("seek", None, dict(offsets))

    async def send(self, key, value, timeout_ms):
        return await self._next("send", 0, key, value)

    async def poll(self, wait_ms, max_records):
        return await self._next("poll", [])

    async def begin(self):
        return await self._next("begin", None)

    async def send_offsets(self, offsets, timeout_ms):
        return await self._next("send_offsets", None, dict(offsets))

    async def commit(self, timeout_ms):
        return await self._next("commit", None)

    async def abort(self, timeout_ms):
        return await self._next("abort", None)

    async def commit_offsets(self, offsets, timeout_ms):
        return await self._next("commit_offsets", None, dict(offsets))

    async def close(self):
        return await self._next("close", None)

    def count(self, name):
        return sum(1 for n, _ in self.calls if n == name)


def session(driver, timeout_ms=1000, txn=True):
    return Session(SessionConfig(("h:9092",), "g", "tx" if txn else None, timeout_ms=timeout_ms), driver, "librdkafka")


def run(coro):
    return asyncio.run(coro)


def test_positions_seek_back_to_where_the_op_began():
    p = Positions()
    p.polled([(K0, 0, "a"), (K0, 1, "b")])
    p.mark()                                   # the op begins at K0: 2, K1 never read
    p.polled([(K0, 2, "c"), (K1, 5, "x"), (K1, 6, "y")])
    assert p.seek_targets() == {K0: 2, K1: 5}
    p.seeked_back()
    assert p.next == {K0: 2, K1: 5}
    p.mark()
    assert p.seek_targets() == {K0: 2, K1: 5}  # nothing read since: stay


def test_positions_track_the_transaction_and_what_is_uncommitted():
    p = Positions()
    p.polled([(K0, 3, 1)])
    p.begin()
    p.polled([(K0, 4, 1), (K1, 9, 2), (K0, 7, 3)])
    assert p.txn == {K0: 7, K1: 9}
    assert p.uncommitted == {K0: 7, K1: 9}
    p.committed({K0: 8})
    assert p.uncommitted == {K1: 9}
    p.forget()
    assert p.seek_targets() == {} and p.next == {}


def test_poll_groups_records_by_key_and_send_offsets_sends_highest_plus_one():
    d = ScriptedDriver(poll=[[(K0, 4, 10), (K1, 2, 11), (K0, 5, 12)]])
    s = session(d)

    async def main():
        await s.open()
        await s.begin()
        polled = await s.poll()
        return polled, await s.send_offsets(), s.info()
    polled, offsets, info = run(main())
    assert polled == {K0: [(4, 10), (5, 12)], K1: [(2, 11)]}
    assert offsets == {K0: 6, K1: 3}
    assert ("send_offsets", ({K0: 6, K1: 3},)) in d.calls
    assert info == {"transaction_version": 2, "driver": "scripted"}


def test_send_offsets_with_nothing_polled_sends_nothing():
    d = ScriptedDriver()
    s = session(d)
    assert run(s.send_offsets()) == {} and d.count("send_offsets") == 0


def test_a_retriable_commit_is_retried_not_aborted():
    d = ScriptedDriver(commit=[LibraryError("_TIMED_OUT", retriable=True), LibraryError("_TIMED_OUT", retriable=True)])
    s = session(d)
    run(s.commit())
    assert d.count("commit") == 3 and d.count("abort") == 0


def test_a_commit_still_retriable_when_time_is_up_is_in_doubt():
    d = ScriptedDriver(commit=[LibraryError("_TIMED_OUT", retriable=True)] * 100)
    s = session(d, timeout_ms=350)
    with pytest.raises(TxnIndefiniteError) as e:
        run(s.commit())
    assert e.value.code == "_TIMED_OUT" and e.value.fatal
    assert 2 <= d.count("commit") <= 4 and d.count("abort") == 0


def test_an_abortable_commit_aborts_and_fails_when_the_abort_completed():
    d = ScriptedDriver(commit=[LibraryError("_INCONSISTENT", "a send failed", abortable=True)])
    s = session(d)
    with pytest.raises(TxnDefiniteError) as e:
        run(s.commit())
    assert e.value.code == "_INCONSISTENT" and e.value.abortable and "aborted" in str(e.value)
    assert d.count("abort") == 1 and not s.in_txn


def test_an_abortable_commit_whose_abort_fails_is_info():
    d = ScriptedDriver(commit=[LibraryError("KafkaException", abortable=True)],
                       abort=[LibraryError("TimeoutException", retriable=True)] * 100)
    s = session(d, timeout_ms=300)
    with pytest.raises(TxnIndefiniteError) as e:
        run(s.commit())
    assert e.value.code == "KafkaException" and e.value.fatal and "the abort failed" in str(e.value)
    assert d.count("abort") >= 2


def test_a_fatal_commit_is_info_and_not_aborted():
    d = ScriptedDriver(commit=[LibraryError("ProducerFencedException", fatal=True, abortable=True)])
    with pytest.raises(TxnIndefiniteError) as e:
        run(session(d).commit())
    assert e.value.fatal and d.count("abort") == 0 and d.count("commit") == 1


def test_abort_returns_only_when_it_completed():
    d = ScriptedDriver(abort=[LibraryError("_TIMED_OUT", retriable=True)])
    s = session(d)
    run(s.abort())
    assert d.count("abort") == 2
    d = ScriptedDriver(abort=[LibraryError("_FATAL", fatal=True)])
    with pytest.raises(TxnIndefiniteError):
        run(session(d).abort())


def test_a_send_in_a_transaction_is_abortable():
    d = ScriptedDriver(send=[LibraryError("_MSG_TIMED_OUT"), LibraryError("_MSG_TIMED_OUT")])
    s = session(d)
    with pytest.raises(TxnIndefiniteError) as e:
        run(s.send(K0, 1))
    assert not e.value.abortable

    async def in_txn():
        await s.begin()
        await s.send(K0, 2)
    with pytest.raises(TxnIndefiniteError) as e:
        run(in_txn())
    assert e.value.abortable


def test_seek_back_asks_the_driver_for_the_ops_start():
    d = ScriptedDriver(poll=[[(K0, 0, 1), (K0, 1, 2)], [(K0, 2, 3), (K1, 7, 4)]])
    s = session(d, txn=False)

    async def main():
        await s.poll()
        s.mark()
        await s.poll()
        await s.seek_back()
        await s.seek_back()       # nothing read since: the same place
    run(main())
    seeks = [a[0] for n, a in d.calls if n == "seek"]
    assert seeks == [{K0: 2, K1: 7}, {K0: 2, K1: 7}]


def test_commit_offsets_commits_what_was_polled_once():
    d = ScriptedDriver(poll=[[(K0, 3, 1), (K1, 8, 2)]],
                       commit_offsets=[LibraryError("REQUEST_TIMED_OUT", retriable=True)])
    s = session(d, txn=False)

    async def main():
        await s.poll()
        return await s.commit_offsets(), await s.commit_offsets()
    first, second = run(main())
    assert first == {K0: 4, K1: 9} and second == {}
    assert d.count("commit_offsets") == 2          # the retriable error was retried


def test_a_failed_ops_reads_are_not_committed_after_seeking_back():
    d = ScriptedDriver(poll=[[(K0, 0, 1)], [(K0, 1, 2)]])
    s = session(d, txn=False)

    async def main():
        await s.poll()
        s.mark()
        await s.poll()                # the op then fails
        await s.seek_back()
        return await s.commit_offsets()
    assert run(main()) == {K0: 1}


def test_assign_and_subscribe_forget_positions_and_errors_are_definite():
    d = ScriptedDriver(poll=[[(K0, 0, 1)]], subscribe=[LibraryError("_INVALID_ARG", "bad topic")])
    s = session(d, txn=False)

    async def main():
        await s.poll()
        await s.assign([K0, K1], from_beginning=True)
        assert s.positions.next == {}
        with pytest.raises(TxnDefiniteError):
            await s.subscribe([("t", 0), ("u", 1)])
        await s.subscribe([("t", 0), ("u", 1)])
    run(main())
    assert ("assign", ((K0, K1), True)) in d.calls
    assert [a for n, a in d.calls if n == "subscribe"] == [(("t", "u"),), (("t", "u"),)]
    assert s.subscribed


def test_open_retries_and_close_never_raises():
    d = ScriptedDriver(open=[LibraryError("_TIMED_OUT", retriable=True), {"transaction_version": 0}],
                       close=[RuntimeError("boom")])
    s = session(d)
    assert run(s.open())["transaction_version"] == 0
    run(s.close())
    d = ScriptedDriver(open=[LibraryError("_FATAL", fatal=True)])
    with pytest.raises(TxnIndefiniteError) as e:
        run(session(d).open())
    assert e.value.fatal


def test_session_config_checks_its_fields():
    with pytest.raises(ValueError, match="bootstrap"):
        SessionConfig((), "g")
    with pytest.raises(ValueError, match="group_id"):
        SessionConfig(("h:1",), "")
    with pytest.raises(ValueError, match="timeout_ms"):
        SessionConfig(("h:1",), "g", timeout_ms=0)
    with pytest.raises(ValueError, match="transactional_id"):
        SessionConfig(("h:1",), "g", transactional_id="")
    assert SessionConfig(("h:1",), "g", "x").transactional and not SessionConfig(("h:1",), "g").transactional
