"""The ``server-error`` kind: data ops that ended with an error a healthy broker never returns
for valid input, read from the ops' errors alone.

This is not one of Jepsen's anomaly names (Jepsen's checker reads the log, not the errors):
it is a class of errors. The workload only ever sends valid records (digits, padded with
letters, ``targets/txn_values.py``), so a broker that answers one of
:data:`SERVER_ERRORS` failed inside, whatever the client does next:

- ``INVALID_RECORD`` (87) and ``CORRUPT_MESSAGE`` (2): the broker judged a valid record
  invalid or corrupt. Always an error.
- ``UNKNOWN_SERVER_ERROR`` (-1): an exception the broker did not expect. An error when the op
  completed before any fault began (the history's first nemesis ``start-*`` op): a healthy,
  undisturbed cluster throws none. After a fault began it is reported but *excused*: some
  releases answer it while a coordinator or a partition moves (for instance a client commit
  at the producer epoch's limit), which is a bug of its own, not one this kind can tell.
  ``--forbid server-error`` counts excused ones as errors too.

An op's error is its ``kafka_error`` (the broker's code by Kafka's name, which our clients
record, ``workloads/txn_worker.py``), else its ``error``, read with :data:`ALIASES` (librdkafka's
older names, the Java exceptions' simple class names, Jepsen's keywords such as
``:unknown-server-error``). Each anomaly names the op by history index, its process, the keys
it sent to (none for a poll) and the error.
"""
from __future__ import annotations

from typing import Any

from .mops import MopError, norm_key

#: the errors of this kind, by Kafka's protocol name, each with what it says
SERVER_ERRORS: dict[str, str] = {
    "INVALID_RECORD": "the broker judged a valid record invalid",
    "CORRUPT_MESSAGE": "the broker judged a valid record corrupt",
    "UNKNOWN_SERVER_ERROR": "the broker failed with an exception it did not expect",
}
#: errors of this kind that are an error whatever the faults
ALWAYS_ERRORS = frozenset({"INVALID_RECORD", "CORRUPT_MESSAGE"})
#: other spellings of :data:`SERVER_ERRORS`: librdkafka's names, the Java exceptions' simple
#: class names (an ``error`` field of a history without ``kafka_error``)
ALIASES: dict[str, str] = {
    "UNKNOWN": "UNKNOWN_SERVER_ERROR", "INVALID_MSG": "CORRUPT_MESSAGE",
    "InvalidRecordException": "INVALID_RECORD", "CorruptRecordException": "CORRUPT_MESSAGE",
    "UnknownServerException": "UNKNOWN_SERVER_ERROR",
}


def error_name(error: Any) -> str | None:
    """The :data:`SERVER_ERRORS` name an op's ``error`` (or ``kafka_error``) field spells, or
    None: a name, an alias, a Jepsen keyword (``unknown-server-error``, upper-cased with
    ``_``), or a list/tuple whose first item is one (Jepsen's ``[:kind details]``)."""
    if isinstance(error, (list, tuple)) and error:
        error = error[0]
    if not isinstance(error, str) or not error:
        return None
    name = error.lstrip(":")
    name = ALIASES.get(name, name)
    if name in SERVER_ERRORS:
        return name
    name = name.upper().replace("-", "_")
    name = ALIASES.get(name, name)
    return name if name in SERVER_ERRORS else None


def op_error(op: dict) -> str | None:
    """The :data:`SERVER_ERRORS` name of a completed op's ``kafka_error`` when it has one (the
    broker's own word), else of its ``error``; None when that is not one."""
    given = op.get("kafka_error")
    return error_name(given if given else op.get("error"))


def sent_keys(value: Any) -> list[str]:
    """The keys a micro-op list sends to, sorted, each once; [] for anything else."""
    keys = set()
    if isinstance(value, (list, tuple)):
        for m in value:
            if isinstance(m, (list, tuple)) and len(m) >= 2 and m[0] == "send":
                try:
                    keys.add(norm_key(m[1]))
                except MopError:
                    continue
    return sorted(keys)


class ServerErrors:
    """Fed each data op's completion (:meth:`completed`) and each nemesis op (:meth:`nemesis`)
    in history order; ``found`` holds the anomalies (module docstring)."""

    def __init__(self) -> None:
        self.found: list[dict] = []
        self.first_fault: int | None = None

    def nemesis(self, op: dict) -> None:
        """A nemesis op: the first ``start-*`` invoke or completion marks when faults began."""
        if self.first_fault is None and str(op.get("f", "")).startswith("start"):
            self.first_fault = op.get("index")

    def completed(self, op: dict, invoke_value: Any) -> None:
        """A data op's ``fail`` or ``info`` completion (``ok`` ones are skipped), with its
        invoke's value (for the keys when the completion has none)."""
        if op.get("type") == "ok":
            return
        name = op_error(op)
        if name is None:
            return
        value = op.get("value")
        keys = sent_keys(value if isinstance(value, (list, tuple)) else invoke_value)
        excused = name not in ALWAYS_ERRORS and self.first_fault is not None
        self.found.append(_anomaly(op, name, keys, excused, self.first_fault))


def _anomaly(op: dict, name: str, keys: list[str], excused: bool, first_fault: int | None) -> dict:
    index, process = op.get("index"), op.get("process")
    who = f"op {index} ({op.get('type')} {op.get('f')}, process {process})"
    where = f" sending to {', '.join(keys)}" if keys else ""
    why = (f"; excused: a fault began at op {first_fault}, and some releases answer it under faults"
           if excused else
           ("" if name in ALWAYS_ERRORS else "; no fault had begun"))
    text = f"{who} ended with the broker's {name}{where}: {SERVER_ERRORS[name]}, which a healthy broker never " \
           f"answers to the valid records the workload sends{why}"
    out = {"kind": "server-error", "explanation": text, "op": index, "process": process, "f": op.get("f"),
           "type": op.get("type"), "keys": keys, "error": name, "excused": excused}
    raw = op.get("kafka_error") or op.get("error")
    if isinstance(raw, str) and raw != name:
        out["reported"] = raw
    return out
