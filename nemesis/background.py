"""Faults that keep acting while they hold: flapping partitions and rolling restarts.

Each runs in a thread of its own between its start and stop ops, so the
nemesis can start other faults meanwhile. Every random choice comes from the
``random.Random`` given, drawn in the thread in a fixed order.
"""
from __future__ import annotations

import logging
import random
import threading
from typing import Callable

from nemesis.grudge import Grudge
from nemesis.partition import Partitioner
from nemesis.process_db import ProcessDB

log = logging.getLogger("kraft_chaos.nemesis")


class Background:
    """A loop in a thread until :meth:`stop`; errors are logged and kept in ``errors``."""

    def __init__(self, name: str):
        self.name = name
        self.errors: list[str] = []
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def _main(self) -> None:
        try:
            self.loop(self._halt)
        except Exception as e:  # noqa: BLE001 - recorded with the stop op
            log.error("%s failed: %r", self.name, e)
            self.errors.append(f"{type(e).__name__}: {e}")
        finally:
            self.finish()

    def loop(self, halt: threading.Event) -> None:
        """The work; return when ``halt`` is set."""
        raise NotImplementedError

    def finish(self) -> None:
        """Leave things healed (runs in the thread when the loop ends)."""

    def stop(self, timeout_s: float = 60.0) -> None:
        """Ask the loop to end and wait for it (and its :meth:`finish`)."""
        self._halt.set()
        self._thread.join(timeout_s)

    def outcome(self) -> dict:
        """What the stop op's value gets, once stopped: ``errors`` (when there were any)."""
        return {"errors": self.errors} if self.errors else {}


class Flapper(Background):
    """Cut with a fresh ``grudge()`` for ``period_s``, heal for ``period_s``, again and again.

    Rules live in fault slot ``slot``'s chain. ``cuts`` counts the cuts made.
    """

    def __init__(self, partitioner: Partitioner, grudge: Callable[[], Grudge], period_s: float,
                 slot: str = "flap"):
        super().__init__(f"flap-{slot}")
        self.partitioner, self.grudge, self.period_s, self.slot = partitioner, grudge, period_s, slot
        self.cuts = 0

    def loop(self, halt: threading.Event) -> None:
        while not halt.is_set():
            self.partitioner.apply(self.grudge(), self.slot)
            self.cuts += 1
            if halt.wait(self.period_s):
                return
            self.partitioner.heal(self.slot)
            halt.wait(self.period_s)

    def finish(self) -> None:
        self.partitioner.heal(self.slot)

    def outcome(self) -> dict:
        """The base's, and ``cuts``: how many cuts it made."""
        return {**super().outcome(), "cuts": self.cuts}


class RollingRestart(Background):
    """SIGKILL and restart ``nodes`` one at a time, ``gap_s`` apart, round after round.

    Each node is started again before the next is killed. ``restarted``
    lists the nodes in the order they went down.
    """

    def __init__(self, db: ProcessDB, nodes: list[str], gap_s: float, rng: random.Random,
                 slot: str = "rolling"):
        super().__init__(f"rolling-{slot}")
        self.db, self.nodes, self.gap_s, self.rng = db, list(nodes), gap_s, rng
        self.restarted: list[str] = []

    def loop(self, halt: threading.Event) -> None:
        while not halt.is_set():
            order = list(self.nodes)
            self.rng.shuffle(order)
            for node in order:
                if halt.is_set():
                    return
                self.db.kill(node)
                self.restarted.append(node)
                self.db.start(node)
                if halt.wait(self.gap_s):
                    return

    def finish(self) -> None:
        for node in self.nodes:
            try:
                self.db.start(node)
            except Exception as e:  # noqa: BLE001 - heal_all retries
                self.errors.append(f"{node}: {e}")
