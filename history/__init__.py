"""The test history: Jepsen-style operations, one JSON object per line.

The format every other layer shares (DEVELOPERS.md, "History"). It sits
below ``nemesis/``, ``workloads/``, ``checkers/`` and ``harness/``, and
imports none of them (nor ``kraft/``, the system under test):

- :mod:`history.ops`: the op schema (``OP_TYPES``, ``NEMESIS``,
  :class:`HistoryError`, :func:`op_problem`);
- :mod:`history.writer`: :class:`HistoryWriter`, appending and flushing each op;
- :mod:`history.reader`: :func:`read_history` (whole file) and
  :func:`iter_history` (one op at a time, for large histories);
- :mod:`history.pairing`: :func:`pair_ops`;
- :mod:`history.outcomes`: what a client's error means for an op (``DefiniteError`` is
  ``fail``, ``IndefiniteError`` is ``info``), raised by every target's client;
- :mod:`history.store`: the store's layout on disk (``store/<test>/<timestamp>/``,
  ``nodes/``, ``latest``);
- :mod:`history.node_data`: a stored run's node data in one shape whatever the target
  (:class:`NodeData`), read by the target's :class:`NodeDataReader`.
"""
from .ops import COMPLETION_TYPES, NEMESIS, OP_TYPES, HistoryError, op_problem
from .pairing import pair_ops
from .reader import iter_history, parse_line, read_history
from .writer import HistoryWriter

__all__ = ["COMPLETION_TYPES", "NEMESIS", "OP_TYPES", "HistoryError", "HistoryWriter",
           "iter_history", "op_problem", "pair_ops", "parse_line", "read_history"]
