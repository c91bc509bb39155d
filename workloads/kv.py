"""The ``kv`` workload: concurrent registers, Jepsen's independent-key register test.

C workers (``concurrency``) share a target total rate (ops/s) and issue
random ``read``, ``write`` and ``cas`` ops over a small fixed keyspace: keys
are the strings ``"k0"`` .. ``"k{keys-1}"`` (5 by default), values random
ints ``0`` .. ``values-1`` (5 by default). Every key starts null (never
written). Reads are linearizable gets (kraft/runtime/kv_service.py) sent to the
believed leader, or with probability ``read_any_node`` to a random node (a
correct non-leader refuses them, a stale leader cannot confirm its
leadership); writes and cas go to the believed leader. Which op next is
:class:`KvGenerator`; how it is sent, :class:`KvClient`. Pacing, leader
following, roaming clients and fresh process ids after ``info`` are those of
the append workload (workloads/worker.py).

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

from generator import Context, Generator
from history import outcomes

from .base import ClientOptions, ClientWorkload
from .recorder import Outcome, record
from .worker import ClientWorker

#: The history's ``f`` of the kv client ops.
CLIENT_FS = ("read", "write", "cas")
#: ``error`` of a cas whose compare failed (a definite ``fail``: it changed nothing).
CAS_MISMATCH = "cas-mismatch"


class CasMismatch(outcomes.DefiniteError):
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


class KvGenerator(Generator):
    """Which op next: a read, cas or write (``read_fraction``, ``cas_fraction``, the rest)
    of a random key, with random values."""

    def __init__(self, options: KvOptions):
        self.options, self.keys = options, options.key_names()

    def op(self, ctx: Context) -> dict:
        o, rng = self.options, ctx.rng
        key = rng.choice(self.keys)
        r = rng.random()
        if r < o.read_fraction:
            return {"f": "read", "value": [key, None]}
        if r < o.read_fraction + o.cas_fraction:
            return {"f": "cas", "value": [key, [rng.randrange(o.values), rng.randrange(o.values)]]}
        return {"f": "write", "value": [key, rng.randrange(o.values)]}


class KvClient(ClientWorker):
    """How the kv workload's ops are sent (see :class:`KvWorkload`)."""

    ops = {"read": "read", "write": "write", "cas": "cas"}

    async def read(self, op: dict, process: int) -> Outcome:
        """A linearizable get of the key from the believed leader or (with probability
        ``read_any_node``) a random node, which then does not change the leader belief."""
        key = op["value"][0]
        anywhere = self.rng.random() < self.wl.options.read_any_node
        node = self.node_for(anywhere)
        out = await record(self.wl.history, self.wl.tally, process, "read", [key, None], node,
                           lambda: self.clients.get(node).get(key),
                           lambda r: [key, r["value"]],
                           lambda r: {"applied_offset": r["applied_offset"]})
        self.after(out, follow=not anywhere)
        return out

    async def write(self, op: dict, process: int) -> Outcome:
        """Put the value into the key through the believed leader."""
        key, value = op["value"]
        node = self.node_for()
        out = await record(self.wl.history, self.wl.tally, process, "write", [key, value], node,
                           lambda: self.clients.get(node).put(key, value),
                           lambda r: [key, value], _offset_epoch)
        self.after(out)
        return out

    async def cas(self, op: dict, process: int) -> Outcome:
        """Compare-and-set the key from ``old`` to ``new`` through the believed leader;
        a failed compare is a ``fail`` with error ``cas-mismatch``."""
        key, (old, new) = op["value"]
        node = self.node_for()

        async def request():
            r = await self.clients.get(node).cas(key, old, new)
            if not r["succeeded"]:
                raise CasMismatch(r)
            return r

        out = await record(self.wl.history, self.wl.tally, process, "cas", [key, [old, new]], node,
                           request, lambda r: [key, [old, new]], _offset_epoch)
        if not isinstance(out.error, CasMismatch):   # the leader answered: keep believing in it
            self.after(out)
        return out


class KvWorkload(ClientWorkload):
    """Reads, writes and cas on a few keys.

    Arguments as :class:`workloads.base.ClientWorkload`; the ops come from
    :class:`KvGenerator` and are sent by :class:`KvClient`. ``tally`` counts
    outcomes for progress; ``keys`` is the keyspace.
    """

    name = "kv"
    options_class = KvOptions
    client_fs = CLIENT_FS
    worker_class = KvClient

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.keys = self.options.key_names()

    def generator(self) -> KvGenerator:
        return KvGenerator(self.options)


def _offset_epoch(result: dict) -> dict:
    return {"offset": result["offset"], "epoch": result["epoch"]}
