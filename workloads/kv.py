"""The ``kv`` workload: concurrent registers, Jepsen's independent-key register test.

C workers (``concurrency``) share a target total rate (ops/s) and issue
random ``read``, ``write`` and ``cas`` ops over a small fixed keyspace: keys
are the strings ``"k0"`` .. ``"k{keys-1}"`` (5 by default), values random
ints ``0`` .. ``values-1`` (5 by default). Every key starts null (never
written). Reads are linearizable gets (kraft/kv_service.py) sent to the
believed leader, or with probability ``read_any_node`` to a random node (a
correct non-leader refuses them, a stale leader cannot confirm its
leadership); writes and cas go to the believed leader. Pacing, leader
following and fresh process ids after ``info`` are those of the append
workload (workloads/worker.py).

History shapes (DEVELOPERS.md, "Client ops (workloads/kv)"), each op also
carrying ``node``::

    read   invoke [k, null]        ok [k, v]  (v null = never written; extra "applied_offset")
    write  invoke [k, v]           ok [k, v]  (extra "offset", "epoch")
    cas    invoke [k, [old, new]]  ok the same (extra "offset", "epoch");
           a compare that failed is "fail" with error "cas-mismatch"

``fail`` and ``info`` ops keep the invoke value and name the ``error``.
A :class:`workloads.monitor.QuorumMonitor` samples DescribeQuorum alongside.
"""
from __future__ import annotations

import dataclasses

from kraft import client as kclient

from .base import ClientOptions, ClientWorkload
from .recorder import Outcome, record
from .worker import PacedWorker

#: The history's ``f`` of the kv client ops.
CLIENT_FS = ("read", "write", "cas")
#: ``error`` of a cas whose compare failed (a definite ``fail``: it changed nothing).
CAS_MISMATCH = "cas-mismatch"


class CasMismatch(kclient.DefiniteError):
    """A cas was applied but its expected value did not match: recorded as ``fail``."""

    def __init__(self, result: dict):
        super().__init__(CAS_MISMATCH, f"offset {result['offset']}: current value "
                                       f"{result.get('previous')!r}")


@dataclasses.dataclass(frozen=True)
class KvOptions(ClientOptions):
    """Knobs of the kv workload: those of :class:`workloads.base.ClientOptions`, and

    ``keys``: number of keys, ``"k0"``.. (>= 1). ``values``: values are ints
    in ``[0, values)`` (>= 1). ``read_fraction`` / ``cas_fraction``:
    probability an op is a read / a cas (each in [0, 1], summing to <= 1;
    the rest are writes; a third each by default). Raises ``ValueError``
    naming the bad field.
    """

    keys: int = 5
    values: int = 5
    read_fraction: float = 1 / 3
    cas_fraction: float = 1 / 3

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_counts("keys", "values")
        self.check_fractions("read_fraction", "cas_fraction")
        if self.read_fraction + self.cas_fraction > 1 + 1e-9:
            raise ValueError(f"read_fraction + cas_fraction must be <= 1, got "
                             f"{self.read_fraction!r} + {self.cas_fraction!r}")

    def key_names(self) -> list[str]:
        """The keyspace: ``["k0", "k1", ...]``."""
        return [f"k{i}" for i in range(self.keys)]


class _Worker(PacedWorker):
    """One client thread of the kv workload (see :class:`KvWorkload`)."""

    async def step(self) -> None:
        """One op on a random key: read, cas or write (``read_fraction``, ``cas_fraction``)."""
        o = self.wl.options
        key = self.rng.choice(self.wl.keys)
        r = self.rng.random()
        if r < o.read_fraction:
            await self.read(key)
        elif r < o.read_fraction + o.cas_fraction:
            await self.cas(key, self.rng.randrange(o.values), self.rng.randrange(o.values))
        else:
            await self.write(key, self.rng.randrange(o.values))

    async def read(self, key: str) -> Outcome:
        """A linearizable get of ``key`` from the believed leader or (with
        probability ``read_any_node``) a random node, which then does not
        change the leader belief."""
        anywhere = self.rng.random() < self.wl.options.read_any_node
        node = self.rng.choice(self.nodes) if anywhere else self.target
        out = await record(self.wl.history, self.wl.tally, self.process, "read", [key, None], node,
                           lambda: self.clients.get(node).get(key),
                           lambda r: [key, r["value"]],
                           lambda r: {"applied_offset": r["applied_offset"]})
        self.after(out, follow=not anywhere)
        return out

    async def write(self, key: str, value: int) -> Outcome:
        """Put ``value`` into ``key`` through the believed leader."""
        node = self.target
        out = await record(self.wl.history, self.wl.tally, self.process, "write", [key, value], node,
                           lambda: self.clients.get(node).put(key, value),
                           lambda r: [key, value], _offset_epoch)
        self.after(out)
        return out

    async def cas(self, key: str, old: int, new: int) -> Outcome:
        """Compare-and-set ``key`` from ``old`` to ``new`` through the believed leader;
        a failed compare is a ``fail`` with error ``cas-mismatch``."""
        node = self.target

        async def request():
            r = await self.clients.get(node).cas(key, old, new)
            if not r["succeeded"]:
                raise CasMismatch(r)
            return r

        out = await record(self.wl.history, self.wl.tally, self.process, "cas", [key, [old, new]], node,
                           request, lambda r: [key, [old, new]], _offset_epoch)
        if not isinstance(out.error, CasMismatch):   # the leader answered: keep believing in it
            self.after(out)
        return out


class KvWorkload(ClientWorkload):
    """Drives the cluster with reads, writes and cas until a stop event is set.

    Arguments as :class:`workloads.base.ClientWorkload`; worker i uses
    ``Random(f"{seed}:kv:worker:{i}")``. ``tally`` counts outcomes for
    progress; ``keys`` is the keyspace.
    """

    name = "kv"
    options_class = KvOptions
    client_fs = CLIENT_FS
    worker_class = _Worker

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.keys = self.options.key_names()


def _offset_epoch(result: dict) -> dict:
    return {"offset": result["offset"], "epoch": result["epoch"]}
