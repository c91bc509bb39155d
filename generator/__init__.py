"""Jepsen-style generators (which op next) and their interpreter (who sends it, when).

Below ``nemesis/`` and ``workloads/``, which both build on it: a workload's
client ops and the nemesis's fault schedule are generators, and
:class:`generator.interpreter.Interpreter` runs them together.
"""
from .core import (Any, Context, Cycle, Fn, Generator, Limit, Mix, Once, OnThreads, Seq, Sleep,
                   Stagger, TimeLimit, Wait, WaitFor, clients, nemesis)
from .interpreter import Interpreter, Worker

__all__ = ["Any", "Context", "Cycle", "Fn", "Generator", "Interpreter", "Limit", "Mix", "Once",
           "OnThreads", "Seq", "Sleep", "Stagger", "TimeLimit", "Wait", "WaitFor", "Worker",
           "clients", "nemesis"]
