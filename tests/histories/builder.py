"""Build small histories by hand, in the format of DEVELOPERS.md ("History").

``H`` assigns dense indices and times 1 ms apart; ``data``/``lc`` build
read records.
"""
from __future__ import annotations

VOTERS = [1, 2, 3]


def data(offset: int, epoch: int, value: int) -> list:
    """A data record ``[offset, epoch, "data", value]``."""
    return [offset, epoch, "data", value]


def lc(offset: int, epoch: int, leader: int) -> list:
    """A LeaderChange record naming ``leader`` (int id)."""
    return [offset, epoch, "LeaderChange",
            {"LeaderId": leader, "Voters": VOTERS, "GrantingVoters": [leader]}]


class H:
    """A history under construction: ``ops`` is the list of op dicts."""

    def __init__(self, step_ms: int = 1):
        self.ops: list[dict] = []
        self.t = 0
        self.step_ns = step_ms * 1_000_000

    def op(self, type, process, f, value, node=None, error=None, at_ms=None) -> dict:
        """Append a raw op; ``at_ms`` sets its time (ms), else 1 step after the last."""
        self.t = at_ms * 1_000_000 if at_ms is not None else self.t + self.step_ns
        o = {"index": len(self.ops), "time": self.t, "type": type, "process": process,
             "f": f, "value": value}
        if node is not None:
            o["node"] = node
        if error is not None:
            o["error"] = error
        self.ops.append(o)
        return o

    def invoke(self, process, f, value, node=None, **kw) -> dict:
        return self.op("invoke", process, f, value, node=node, **kw)

    def complete(self, inv, type, value, error=None, **kw) -> dict:
        return self.op(type, inv["process"], inv["f"], value, node=inv.get("node"), error=error, **kw)

    def append(self, process, v, offset=None, epoch=1, type="ok", node="n1", error=None):
        """Invoke and complete an append of ``v``; ok needs ``offset``. Returns (invoke, completion)."""
        inv = self.invoke(process, "append", v, node=node)
        if type == "ok":
            comp = self.complete(inv, "ok", {"value": v, "offset": offset, "epoch": epoch})
        else:
            err = error or ("NOT_LEADER_OR_FOLLOWER" if type == "fail" else "timeout")
            comp = self.complete(inv, type, v, error=err)
        return inv, comp

    def read_value(self, records, frm=0, hw=None, lin=True, final=False) -> dict:
        hw = frm + len(records) if hw is None else hw
        return {"from": frm, "linearizable": lin, "final": final, "high_watermark": hw,
                "records": records}

    def read(self, process, records, frm=0, hw=None, lin=True, final=False, node="n1",
             type="ok"):
        """Invoke and complete a read returning ``records``. Returns (invoke, completion)."""
        inv = self.invoke(process, "read", {"from": frm, "linearizable": lin, "final": final},
                          node=node)
        if type == "ok":
            comp = self.complete(inv, "ok", self.read_value(records, frm, hw, lin, final))
        else:
            comp = self.complete(inv, type, inv["value"], error="timeout")
        return inv, comp

    def dq(self, process, node, leader, epoch, type="ok"):
        """Invoke and complete a describe-quorum sent to ``node``."""
        inv = self.invoke(process, "describe-quorum", None, node=node)
        if type == "ok":
            body = {"LeaderId": leader, "LeaderEpoch": epoch, "HighWatermark": 0,
                    "CurrentVoters": [], "Observers": []}
            comp = self.complete(inv, "ok", body)
        else:
            comp = self.complete(inv, "fail", None, error="NOT_LEADER_OR_FOLLOWER")
        return inv, comp

    def nemesis(self, f, value=None):
        """A nemesis invoke + info pair with ``f``."""
        inv = self.invoke("nemesis", f, value)
        return inv, self.complete(inv, "info", value)


def clean_run(n: int = 20, nodes=("n1", "n2", "n3"), read_window: int | None = None) -> tuple[H, list]:
    """A correct run: n1 leads epoch 1 (LeaderChange at 0) then n2 leads epoch 2;
    appends interleaved with fail/info, reads, describe-quorum, a partition,
    then the final linearizable read and final per-node reads.

    Reads cover the whole log, or its last ``read_window`` offsets.
    Returns (history builder, final committed records).
    """
    h = H()
    log = [lc(0, 1, 1)]
    h.nemesis("start-partition", {"kind": "isolate-one", "targets": ["n3"],
                                  "grudge": {"n3": ["n1", "n2"]}})
    proc = 0
    for i in range(n):
        epoch = 1 if i < n // 2 else 2
        if i == n // 2:
            log.append(lc(len(log), 2, 2))
            h.nemesis("stop-partition", None)
        leader = "n1" if epoch == 1 else "n2"
        v = 1000 + i
        if i % 7 == 3:
            h.append(proc, v, type="fail", node="n3")
        elif i % 7 == 5:
            h.append(proc, v, type="info", node=leader)   # timed out; not in the log
            proc += 1                                      # info: fresh process
        else:
            h.append(proc, v, offset=len(log), epoch=epoch, node=leader)
            log.append(data(len(log), epoch, v))
        if i % 4 == 0:
            frm = 0 if read_window is None else max(0, len(log) - read_window)
            h.read(proc, log[frm:], frm=frm, node=leader)
            h.dq(proc, leader, int(leader[1:]), epoch)
    h.read(proc, list(log), final=True, node="n2")
    for node in nodes:
        h.read(proc, list(log), lin=False, final=True, node=node)
    return h, log
