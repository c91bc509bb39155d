"""The line protocol of the Java client program (``java_client/TxnClient.java``), without
I/O: requests as lines, answers read back, errors as
:class:`targets.kafka.txn_errors.LibraryError`.

One JSON object per line each way::

    request  {"id": N, "op": OP, "session": S, ...arguments}
    answer   {"id": N, "ok": true, "result": {...}}
             {"id": N, "ok": false, "error": {"class", "message", "causes", "retriable",
              "abortable", "fatal", "sync", "protocol", "txn_state", "kafka_error"}}

Answers come in any order (sessions run side by side in the JVM) and are matched by id.
Keys travel as ``[topic, partition]``, offsets as ``[topic, partition, offset]``, records as
``[topic, partition, offset, value]`` with the value as text.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Sequence

from targets.kafka.txn_errors import LibraryError
from targets.txn_client import Key

#: every op the program answers
OPS = frozenset({"hello", "open", "info", "assign", "subscribe", "send", "poll", "seek", "begin", "send_offsets",
                 "commit", "abort", "commit_offsets", "close", "exit"})


class ProtocolError(ValueError):
    """A line that is not an answer of the protocol."""


@dataclasses.dataclass(frozen=True)
class Answer:
    """One answer: ``id``; ``result`` (a dict) when ``ok``, else ``error`` (a dict)."""

    id: int
    ok: bool
    result: dict
    error: dict


def request_line(request_id: int, op: str, session: str | None = None, **args: Any) -> bytes:
    """The request as one line (UTF-8, ending in a newline). Raises ``ValueError`` for an op
    the program does not know."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; known: {sorted(OPS)}")
    body = {"id": request_id, "op": op, **({"session": session} if session is not None else {}), **args}
    return (json.dumps(body, separators=(",", ":")) + "\n").encode()


def parse_answer(line: bytes | str) -> Answer:
    """An answer line read back. Raises :class:`ProtocolError` for anything else."""
    try:
        body = json.loads(line)
    except ValueError as e:
        raise ProtocolError(f"not JSON: {line[:200]!r}: {e}") from None
    if not isinstance(body, dict) or not isinstance(body.get("id"), int) or not isinstance(body.get("ok"), bool):
        raise ProtocolError(f"not an answer: {line[:200]!r}")
    if body["ok"]:
        result = body.get("result", {})
        if not isinstance(result, dict):
            raise ProtocolError(f"result is not an object: {line[:200]!r}")
        return Answer(body["id"], True, result, {})
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("class"), str):
        raise ProtocolError(f"error without a class: {line[:200]!r}")
    return Answer(body["id"], False, {}, error)


def library_error(error: Mapping[str, Any]) -> LibraryError:
    """An answer's ``error`` as a :class:`LibraryError`: ``code`` the exception's simple
    class name (``ProtocolError`` for a request the program refused), the flags as the
    program read them, ``local`` when a send threw before returning its future, and
    ``kafka_error`` Kafka's protocol name of the error when the program found one (null: none)."""
    cls = str(error.get("class", "UnknownError"))
    simple = "ProtocolError" if error.get("protocol") else cls.rpartition(".")[2].replace("$", ".")
    message = str(error.get("message", ""))
    if error.get("txn_state"):
        message = f"{message} [transaction manager {error['txn_state']}]"
    kafka_error = error.get("kafka_error")
    return LibraryError(simple, message, retriable=bool(error.get("retriable")),
                        abortable=bool(error.get("abortable")), fatal=bool(error.get("fatal")),
                        exception=cls, local=bool(error.get("sync")),
                        kafka_error=kafka_error if isinstance(kafka_error, str) and kafka_error else None)


def keys_arg(keys: Sequence[Key]) -> list[list]:
    """Keys as the protocol sends them: ``[[topic, partition], ...]``."""
    return [[t, p] for t, p in keys]


def offsets_arg(offsets: Mapping[Key, int]) -> list[list]:
    """``{key: offset}`` as ``[[topic, partition, offset], ...]``."""
    return [[t, p, o] for (t, p), o in offsets.items()]


def records_of(result: Mapping[str, Any], decode) -> list[tuple[Key, int, object]]:
    """A poll's ``records`` as ``[((topic, partition), offset, decode(value text)), ...]``.
    Raises :class:`ProtocolError` for a malformed row."""
    out = []
    for row in result.get("records", []):
        if not isinstance(row, list) or len(row) != 4:
            raise ProtocolError(f"bad record row {row!r}")
        topic, partition, offset, value = row
        out.append(((topic, int(partition)), int(offset), decode(value.encode() if isinstance(value, str) else value)))
    return out
