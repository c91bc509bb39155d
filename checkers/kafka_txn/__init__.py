"""Jepsen's Kafka workload checker (``jepsen.tests.kafka``), from the history alone.

A history of ``send``, ``poll`` and ``txn`` ops whose values are micro-op lists (mops.py),
with ``assign`` / ``subscribe`` and ``crash`` ops, is read once (collect.py) into each key's
version order (orders.py) and judged for Jepsen's anomaly kinds, by Jepsen's names (kinds.py):
values (values.py), orders of polls and sends (sequences.py), and cycles of the dependency
graph (cycles.py), and for one kind of our own, ``server-error``, by the errors the ops ended
with (server_errors.py); analysis.py gives the verdict, explain.py the sentences, fold.py the checker
as ``check`` runs it (registered as ``kafka-txn``), files.py the reading of history files
(our history.jsonl, Jepsen's history.edn).
"""
from __future__ import annotations

from .analysis import Options, analyse, check_ops
from .fold import TxnChecker, options_of
from .kinds import ALLOWABLE, KINDS, allowed_kinds, parse_forbid

__all__ = ["ALLOWABLE", "KINDS", "Options", "TxnChecker", "allowed_kinds", "analyse", "check_ops", "options_of",
           "parse_forbid"]
