"""The quorum monitor in the simulator (workloads/monitor.py's samples): every
``interval_ms`` each node is asked DescribeQuorum, recorded as ``describe-quorum`` ops (a
leader's ok body with ``LeaderId``, ``LeaderEpoch``, ``HighWatermark``, ``CurrentVoters``,
``Observers``; a non-leader's ``fail`` valued ``{"LeaderEpoch", "LeaderId"}``), one process
per node, for the leadership checkers (checkers/leadership.py) and the membership checker.
"""
from __future__ import annotations

from kraft.core import errors
from kraft.quorum.client_messages import DescribeQuorumRequest

from .recording import Recording
from .runtime import Runtime

#: the monitor's processes are FIRST_PROCESS + node id (+ 100 after each info)
FIRST_PROCESS = 1000
SAMPLE_TIMEOUT_MS = 2000.0


class Monitor:
    """Samples nodes ``ids`` of ``rt`` every ``interval_ms`` until :meth:`stop`."""

    def __init__(self, rt: Runtime, rec: Recording, ids: list[int], interval_ms: float = 500.0):
        self.rt, self.rec, self.ids, self.interval = rt, rec, ids, interval_ms
        self.process = {i: FIRST_PROCESS + i for i in ids}
        self.waiting: dict = {}
        self.running = True
        for k, i in enumerate(ids):
            rt.at(100.0 + k * interval_ms / len(ids), lambda i=i: self._sample(i))

    def stop(self) -> None:
        self.running = False

    def _sample(self, i: int) -> None:
        if not self.running:
            return
        rt = self.rt
        inv = self.rec.invoke(self.process[i], "describe-quorum", None, f"n{i}")
        token = rt.client_request(i, DescribeQuorumRequest())
        if token is None:
            self.rec.complete(inv, "fail", None, error="connection")
            rt.at(rt.now + self.interval, lambda: self._sample(i))
            return
        self.waiting[token] = inv

        def timeout() -> None:
            if self.waiting.pop(token, None) is not None:
                self.rec.complete(inv, "info", None, error="timeout")
                self.process[i] += 100
                self._sample(i)
        rt.at(rt.now + SAMPLE_TIMEOUT_MS, timeout)

    def on_reply(self, token, msg) -> bool:
        """Take a DescribeQuorum answer; False when ``token`` is not ours."""
        inv = self.waiting.pop(token, None)
        if inv is None:
            return False
        if msg.error_code == errors.NONE:
            self.rec.complete(inv, "ok", {"ErrorCode": 0, "LeaderId": msg.leader_id, "LeaderEpoch": msg.leader_epoch,
                                          "HighWatermark": msg.high_watermark, "CurrentVoters": msg.voters,
                                          "Observers": msg.observers})
        else:
            self.rec.complete(inv, "fail", {"LeaderEpoch": msg.leader_epoch, "LeaderId": msg.leader_id},
                              error=errors.name(msg.error_code))
        i = int(inv["node"][1:])
        self.rt.at(self.rt.now + self.interval, lambda: self._sample(i))
        return True
