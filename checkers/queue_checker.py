"""The queue workload's checker: its folds' findings under Jepsen's Kafka anomaly names.

The queue workload (workloads/queue.py: plain sends and polls of partitions, a final
drain) is judged by six folds (in checkers/queue_lost.py, queue_offsets.py, queue_order.py,
queue_phantom.py). :class:`QueueChecker` runs them together and reports what they find by
kind (``by_kind``, which ``check_all_folds`` lists as checkers of their own), named as
Jepsen's Kafka checker (``jepsen.tests.kafka``) names them wherever it has the kind, so that
a queue run and a txn run (checkers/kafka_txn) speak the same names:

============================  ===================================================================
kind                          what it is here (fold, case)
============================  ===================================================================
``unseen``                    an acknowledged send the complete final drain never read (QueueLost)
``lost-write``                an ``unseen`` send at or below an offset the drain read: later
                              records of its partition were read, it was not (QueueLost)
``duplicate``                 one value at two or more (partition, offset) positions (QueueDuplicate)
``inconsistent-offsets``      two or more values at one (partition, offset) (QueueInconsistentOffsets)
``G1a``                       an ok poll read a value whose every send to it ended ``fail``
                              (QueuePhantom, ``send-failed``): an aborted read
``nonmonotonic-poll``         a poll read below the position it began at (``before-from``), or,
                              without one, below where the process's last poll of the partition
                              ended (``backwards``) (QueueNonmonotonicPoll)
``int-nonmonotonic-poll``     within one poll, a record at or before the one before it
                              (QueueNonmonotonicPoll, ``within-poll``)
``phantom``                   not Jepsen's (its checker calls such a history unknown, having no
                              writer for the value): a polled value no send named, or named only
                              for other partitions (QueuePhantom, ``never-sent``, ``wrong-partition``);
                              the same name as the append workload's read of a never-written value
``reordered-send``            not Jepsen's (its ``nonmonotonic-send`` compares one producer's ops
                              only): a send acknowledged before another was invoked, to the same
                              partition, sits at an offset not below the later one's (QueueReordered)
============================  ===================================================================

As in Jepsen, ``lost-write`` is a subset of ``unseen``: a lost send is counted under both. No
kind is allowed (the queue neither subscribes nor transacts): any anomaly makes the verdict
invalid, and unjudged acknowledgements (a partition without a complete drain) unknown. Runs
stored before these names used ``queue-*`` ones: checkers/kind_names.py reads them.
"""
from __future__ import annotations

from .fold import Checker
from .log_safety import combine
from .queue_lost import QueueLost
from .queue_offsets import QueueDuplicate, QueueInconsistentOffsets
from .queue_order import QueueNonmonotonicPoll, QueueReordered
from .queue_phantom import QueuePhantom

#: every kind the queue checker reports, in the order results list them
QUEUE_KINDS = ("G1a", "lost-write", "unseen", "duplicate", "inconsistent-offsets", "nonmonotonic-poll",
               "int-nonmonotonic-poll", "phantom", "reordered-send")
#: QueueNonmonotonicPoll's cases -> kind
POLL_CASES = {"within-poll": "int-nonmonotonic-poll", "before-from": "nonmonotonic-poll",
              "backwards": "nonmonotonic-poll"}
#: QueuePhantom's reasons -> kind
PHANTOM_CASES = {"send-failed": "G1a", "never-sent": "phantom", "wrong-partition": "phantom"}


class QueueChecker(Checker):
    """The queue workload's six folds in one, reported by kind (module docstring).

    Result: ``{"valid", "anomalies": [] (they are under each kind), "by_kind": {kind:
    {"valid", "anomalies", ...}} for every kind of :data:`QUEUE_KINDS`, "acked", "unjudged",
    "compared", "polls", "seeks", "values"}``. Each kind's anomalies are its fold's (see
    there), in its order; those of ``nonmonotonic-poll``, ``int-nonmonotonic-poll``, ``G1a``
    and ``phantom`` keep the fold's case (``case``, ``reason``). ``unseen`` and
    ``lost-write`` also carry ``acked``, ``unjudged`` (and ``unseen`` the ``drains``);
    ``reordered-send`` ``compared``; the poll kinds ``polls`` and ``seeks``; ``duplicate``
    ``values``. ``valid`` of a kind: False with any anomaly; ``unseen`` and ``lost-write``
    are "unknown" without one when some acknowledgement was unjudged. ``nodes`` is unused.
    """

    passes = 2

    def __init__(self) -> None:
        self.folds: dict[str, Checker] = {
            "lost": QueueLost(), "duplicate": QueueDuplicate(), "offsets": QueueInconsistentOffsets(),
            "reordered": QueueReordered(), "polls": QueueNonmonotonicPoll(), "phantom": QueuePhantom()}

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        feeds = []
        for c in self.folds.values():
            if c.passes > pass_no:
                c.begin(pass_no)
                feeds.append(c.feed)
        self._feeds = feeds

    def feed(self, op: dict) -> None:
        for f in self._feeds:
            f(op)

    def result(self, nodes) -> dict:
        """The folds' results by kind (class docstring); ``nodes`` unused."""
        r = {name: c.result(nodes) for name, c in self.folds.items()}
        lost, polls = r["lost"], r["polls"]
        judged = {"acked": lost["acked"], "unjudged": lost["unjudged"]}
        unseen = {**lost}
        lost_writes = [a for a in lost["anomalies"] if a["later_read"]]
        poll_kinds = _split(polls["anomalies"], "case", POLL_CASES)
        phantom_kinds = _split(r["phantom"]["anomalies"], "reason", PHANTOM_CASES)
        poll_extra = {"polls": polls["polls"], "seeks": polls["seeks"]}
        by_kind = {
            "G1a": {"anomalies": phantom_kinds["G1a"]},
            "lost-write": {"anomalies": lost_writes, **judged},
            "unseen": unseen,
            "duplicate": {"anomalies": r["duplicate"]["anomalies"], "values": r["duplicate"]["values"]},
            "inconsistent-offsets": {"anomalies": r["offsets"]["anomalies"]},
            "nonmonotonic-poll": {"anomalies": poll_kinds["nonmonotonic-poll"], **poll_extra},
            "int-nonmonotonic-poll": {"anomalies": poll_kinds["int-nonmonotonic-poll"], **poll_extra},
            "phantom": {"anomalies": phantom_kinds["phantom"]},
            "reordered-send": {"anomalies": r["reordered"]["anomalies"], "compared": r["reordered"]["compared"]},
        }
        for kind, res in by_kind.items():
            if kind in ("unseen", "lost-write"):
                res["valid"] = False if res["anomalies"] else ("unknown" if lost["unjudged"] else True)
            else:
                res["valid"] = not res["anomalies"]
        by_kind = {k: {"valid": by_kind[k].pop("valid"), **by_kind[k]} for k in QUEUE_KINDS}
        return {"valid": combine([res["valid"] for res in by_kind.values()]), "anomalies": [],
                "by_kind": by_kind, **judged, "compared": r["reordered"]["compared"], **poll_extra,
                "values": r["duplicate"]["values"]}


def _split(anomalies: list[dict], field: str, kinds: dict[str, str]) -> dict[str, list]:
    """``anomalies`` by the kind ``kinds[a[field]]`` names, each kind's in their order (every
    kind of ``kinds`` present)."""
    out: dict[str, list] = {k: [] for k in kinds.values()}
    for a in anomalies:
        out[kinds[a[field]]].append(a)
    return out
