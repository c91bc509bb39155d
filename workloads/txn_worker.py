"""How the ``txn`` workload's ops are sent: one transactional session per worker process.

A :class:`TxnWorker` holds one ``targets.txn_client.TxnSession`` (a producer and a consumer)
for its current process, opened on the process's first op and closed when the process ends
(an ``info`` op or a ``crash``: the interpreter gives the thread a fresh process, which opens
a fresh session). Each thread has its own ``transactional.id`` (a new session fences the old
one, aborting its open transaction at once) and its own consumer group.

**A data op** (``send``/``poll``/``txn``, value: micro-ops) with transactions: ``mark``,
``begin``, the micro-ops in order (``txn_delay_ms`` apart; without a delay, consecutive
sends are handed to the producer together and then awaited), then either ``abort`` (an op
generated with ``"abort": true``: ``fail``, error ``aborted-on-purpose``) or
``send_offsets`` (what it polled, with the consumer's group metadata) and ``commit``. Without
transactions: the micro-ops, then the polled offsets committed to the group (a failed
offset commit is logged, not recorded: the op's reads happened).

**Outcomes** (:func:`failed_outcome`): ``ok`` when the commit returned. A micro-op's error
inside a transaction aborts it: ``fail`` when the abort returned, ``info`` when it raised or
the session is fatally broken. A commit's own error is as the session raised it (definite:
aborted; indefinite: in doubt). Without transactions: ``fail`` only for a definite error
before any send was acknowledged. After ``fail`` the consumer seeks back to where the op
began; after ``info`` (and any fatal error) the session is closed. A completion's value is
the micro-ops done (``["send", k, [offset, v]]``, ``["poll", {k: [[offset, v], ...]}]``),
followed on ``fail``/``info`` by those not reached as invoked; when the consumer's group
assigned or revoked keys during the op (a subscription's rebalance), it carries
``rebalance_log``, Jepsen's ``:rebalance-log``.
"""
from __future__ import annotations

import asyncio
import logging
import random

from history import outcomes
from targets.txn_client import SessionConfig, TxnSession

from .recorder import Outcome, record
from .worker import ClientWorker

log = logging.getLogger(__name__)

#: the error of a transaction aborted on purpose
ABORTED_ON_PURPOSE = "aborted-on-purpose"


def key_of(name: str) -> tuple[str, int]:
    """``"t0-1"`` -> ``("t0", 1)``; ``ValueError`` for a name that is not ``topic-int``."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        raise ValueError(f"key {name!r} is not of the form TOPIC-PARTITION")
    return topic, int(part)


def key_name(key: tuple[str, int]) -> str:
    """``("t0", 1)`` -> ``"t0-1"``."""
    return f"{key[0]}-{key[1]}"


def polled_value(polled: dict) -> dict[str, list[list]]:
    """A session's poll, ``{(topic, partition): [(offset, value), ...]}``, as the history's
    ``{"t0-1": [[offset, value], ...]}``."""
    return {key_name(k): [[o, v] for o, v in recs] for k, recs in polled.items()}


def failed_outcome(err: BaseException, *, transactional: bool, aborted: bool | None, sent: bool) -> str:
    """``fail`` or ``info`` for an op that raised ``err``.

    ``aborted``: in a transaction, whether the abort that followed returned (None: no abort
    was tried, e.g. the commit's own error, which the session already mapped). ``sent``:
    without transactions, whether a send of the op was acknowledged before the error."""
    if transactional:
        if aborted is not None:
            return "fail" if aborted else "info"
        return "fail" if isinstance(err, outcomes.DefiniteError) else "info"
    if sent:
        return "info"
    return "fail" if isinstance(err, outcomes.DefiniteError) else "info"


def rebalanced(session) -> list[str]:
    """The keys the session's consumer group moved since the last call (``TxnSession.
    rebalanced``), as the history names them; [] without a session."""
    take = getattr(session, "rebalanced", None)
    return [key_name(k) for k in take()] if take is not None else []


def rebalance_log(keys: list[str]) -> dict:
    """The completion's extra field for keys the group moved during the op: Jepsen's
    ``:rebalance-log`` (``{"rebalance_log": [{"keys": [...]}]}``; the checker exempts them
    from its internal poll checks), or nothing."""
    return {"rebalance_log": [{"keys": keys}]} if keys else {}


def kafka_error(err: BaseException) -> dict:
    """The completion's extra field for an error a broker answered: ``{"kafka_error": NAME}``
    (Kafka's protocol name, e.g. ``INVALID_RECORD``; ``targets.txn_client.TxnErrorInfo``),
    or nothing."""
    name = getattr(err, "kafka_error", None)
    return {"kafka_error": name} if isinstance(name, str) and name else {}


def error_code(err: BaseException) -> str:
    """The history's ``error`` of ``err``: its client code, else its class and message."""
    code = getattr(err, "code", None)
    return code if isinstance(code, str) and code else f"{type(err).__name__}: {err}"


class TxnWorker(ClientWorker):
    """The ``txn`` workload's client for worker thread ``index`` (module docstring)."""

    ops = {"send": "data", "poll": "data", "txn": "data", "assign": "assignment",
           "subscribe": "assignment", "crash": "crash"}

    def __init__(self, wl, index: int, roaming: bool = False):
        self.wl, self.index, self.roaming = wl, index, roaming
        self.rng = random.Random(f"{wl.seed}:{wl.name}:worker:{index}")
        self.bootstrap = wl.bootstrap_for(index)
        self.node = self.bootstrap[0].rpartition(":")[0]
        self.session: TxnSession | None = None
        self.process: int | None = None
        self.keys: list[str] = wl.options.keys()
        self.subscribed = False

    # -- the session ---------------------------------------------------------------------------
    def session_config(self) -> SessionConfig:
        """This thread's session settings (its own transactional.id and group)."""
        o, base = self.wl.options, self.wl.group_id()
        return SessionConfig(self.bootstrap, group_id=f"{base}-w{self.index}",
                             transactional_id=f"{base}-w{self.index}" if o.transactions else None,
                             timeout_ms=o.timeout_ms, transaction_timeout_ms=o.transaction_timeout_ms,
                             poll_ms=o.poll_ms, max_poll_records=o.max_poll_records,
                             compression=o.compression, value_bytes=o.value_bytes)

    async def _session(self, process: int) -> TxnSession:
        """The session of ``process``: a fresh one (opened, its consumer on this thread's keys)
        when the process changed or the last one was closed. Raises the session's errors."""
        if process != self.process:
            await self.close()
            self.process = process
        if self.session is None:
            session = self.session = self.wl.factory.session(self.session_config())
            try:
                info = await session.open()
                self.wl.sessions_opened += 1
                self.wl.transaction_versions.add(info.get("transaction_version"))
                keys = [key_of(k) for k in self.keys]
                await (session.subscribe(keys) if self.subscribed else session.assign(keys))
            except BaseException:       # half made: the next op opens a fresh one
                await self.close()
                raise
        return self.session

    async def close(self) -> None:
        """Close the session (a crash: nothing flushed); never raises."""
        session, self.session = self.session, None
        if session is not None:
            await session.close()

    # -- ops -----------------------------------------------------------------------------------
    async def crash(self, op: dict, process: int) -> Outcome:
        """Close the producer and consumer; ``info`` (the process is replaced)."""
        inv = self.wl.history.invoke(process, "crash", None, node=self.node)
        await self.close()
        out = Outcome("info", op=self.wl.history.complete(inv, "info", None, error="crash"))
        self.wl.tally.add("crash", "info")
        return out

    async def assignment(self, op: dict, process: int) -> Outcome:
        """``assign``/``subscribe`` the keys of ``op["value"]`` (replacing the consumer's)."""
        f, keys = op["f"], list(op["value"])

        async def request():
            session = await self._session(process)
            parsed = [key_of(k) for k in keys]
            await (session.subscribe(parsed) if f == "subscribe" else session.assign(parsed))
            return keys

        out = await record(self.wl.history, None, process, f, keys, self.node, request, lambda r: r)
        if out.type != "fail":
            self.keys, self.subscribed = keys, f == "subscribe"
        await self._after(out)
        return out

    async def _mop(self, session: TxnSession, mop: list) -> list:
        if mop[0] == "send":
            k, v = mop[1], mop[2]
            offset = await session.send(key_of(k), v)
            return ["send", k, [offset if isinstance(offset, int) and offset >= 0 else None, v]]
        if mop[0] == "poll":
            return ["poll", polled_value(await session.poll())]
        raise ValueError(f"unknown micro-op {mop!r}")

    async def data(self, op: dict, process: int) -> Outcome:
        """One data op (module docstring), recorded as invoke and completion."""
        wl, mops, f = self.wl, list(op["value"]), op["f"]
        txn, delay = wl.options.transactions, wl.options.txn_delay_ms / 1000.0
        hist = wl.history
        inv = hist.invoke(process, f, mops, node=self.node)
        done: list[list] = []
        session = None
        in_txn = False
        try:
            session = await self._session(process)
            session.mark()
            rebalanced(session)                  # before the op: not its own
            if txn:
                await session.begin()
                in_txn = True
            if txn and not delay:
                await self._pipelined(session, mops, done)
            else:
                for i, mop in enumerate(mops):
                    if i and delay:
                        await asyncio.sleep(delay)
                    done.append(await self._mop(session, mop))
            if txn and op.get("abort"):
                in_txn = False
                await session.abort()
                raise outcomes.DefiniteError(ABORTED_ON_PURPOSE, "the transaction was aborted on purpose")
            if txn:
                await session.send_offsets()
                in_txn = False
                await session.commit()
            elif any(m[0] == "poll" for m in mops):
                await self._commit_offsets(session)
        except asyncio.CancelledError:
            hist.complete(inv, "info", done + mops[len(done):], error="interrupted")
            wl.tally.add(f, "info")
            await self.close()
            raise
        except Exception as e:      # the session's errors, or a client bug (info)
            moved = rebalanced(session)
            aborted = await self._abort(session, e) if in_txn else None
            if isinstance(e, outcomes.ClientError) or aborted is not None:
                t = failed_outcome(e, transactional=txn, aborted=aborted,
                                   sent=any(m[0] == "send" and m[2][0] is not None for m in done))
            else:
                log.exception("unexpected error from %s", f)
                t = "info"
            out = Outcome(t, error=e, op=hist.complete(inv, t, done + mops[len(done):], error=error_code(e),
                                                       **kafka_error(e), **rebalance_log(moved)))
            wl.tally.add(f, t)
            await self._after(out)
            return out
        for m in done:
            if m[0] == "send":
                wl.acknowledged(m[1], m[2][0])
        out = Outcome("ok", result=done, op=hist.complete(inv, "ok", done, **rebalance_log(rebalanced(session))))
        wl.tally.add(f, "ok")
        return out

    async def _pipelined(self, session: TxnSession, mops: list, done: list) -> None:
        """The micro-ops in order into ``done``, consecutive sends handed to the producer
        together (in order: one partition's records keep their order under idempotence) and
        then awaited, as a transaction's sends need not wait for each other; raises the first
        error, the micro-ops before it done."""
        i = 0
        while i < len(mops):
            j = i
            while j < len(mops) and mops[j][0] == "send":
                j += 1
            if j - i < 2:
                done.append(await self._mop(session, mops[i]))
                i += 1
                continue
            results = await asyncio.gather(*(self._mop(session, m) for m in mops[i:j]), return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException):
                    raise r
                done.append(r)
            i = j

    async def _abort(self, session: TxnSession | None, err: BaseException) -> bool:
        """Abort the open transaction after ``err``; True when the abort returned."""
        if session is None or getattr(err, "fatal", False):
            return False
        try:
            await session.abort()
            return True
        except Exception as e:      # noqa: BLE001 - any error: the abort is in doubt
            log.debug("abort after %r failed: %r", err, e)
            return False

    async def _commit_offsets(self, session: TxnSession) -> None:
        try:
            await session.commit_offsets()
        except Exception as e:      # noqa: BLE001 - the reads happened; the next op reads on
            log.debug("offset commit failed: %r", e)

    async def _after(self, out: Outcome) -> None:
        """After an op that did not succeed: close the session after ``info`` or a fatal
        error; else seek the consumer back to where the op began."""
        if out.type == "ok" or self.session is None:
            return
        if out.type == "info" or getattr(out.error, "fatal", False):
            await self.close()
            return
        try:
            await self.session.seek_back()
        except Exception as e:      # noqa: BLE001 - a session that cannot seek is replaced
            log.debug("seek back failed: %r; closing the session", e)
            await self.close()
