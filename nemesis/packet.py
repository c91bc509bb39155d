"""Packet faults on chosen links: ``tc netem`` delay, jitter, loss, duplication, reordering.

Inside each sending node, an HTB root qdisc keeps ordinary traffic in class
1:1 and sends packets for the chosen destinations (u32 filters on the
destination address) to class 1:2, whose child qdisc is netem. Healing
deletes the root qdisc. The kernel must have ``sch_netem`` and ``sch_htb``;
:func:`netem_available` probes a node. Where netem is missing, only loss can
be had, with iptables' ``statistic`` match on the receivers (see
:class:`nemesis.partition.Partitioner`); the fault's history value then says
``"netem": false``.
"""
from __future__ import annotations

import random
import shlex

#: packet fault kinds
PACKET_KINDS = ("delay", "loss", "duplicate", "reorder", "mixed")
#: the interface every node sends on
DEVICE = "eth0"
#: sh: remove every qdisc of ours (idempotent)
HEAL_COMMAND = f"tc qdisc del dev {DEVICE} root 2>/dev/null || true"
#: sh: does this kernel have netem? (tried on the loopback device, removed at once)
PROBE_COMMAND = "tc qdisc add dev lo root netem delay 1ms && tc qdisc del dev lo root"


def netem_params(kind: str, rng: random.Random) -> dict:
    """Random netem settings for ``kind``: ``{"delay_ms", "jitter_ms", "loss_pct",
    "duplicate_pct", "reorder_pct"}`` (zeros where the kind does not use them).

    delay: 50..300 ms with half that as jitter; loss: 5..30 %; duplicate:
    5..30 %; reorder: 25..50 % of packets sent at once, the rest 20..60 ms
    late; mixed: some of each. Raises ValueError for an unknown kind.
    """
    p = {"delay_ms": 0, "jitter_ms": 0, "loss_pct": 0, "duplicate_pct": 0, "reorder_pct": 0}
    if kind == "delay":
        d = rng.randint(50, 300)
        p.update(delay_ms=d, jitter_ms=d // 2)
    elif kind == "loss":
        p.update(loss_pct=rng.randint(5, 30))
    elif kind == "duplicate":
        p.update(duplicate_pct=rng.randint(5, 30))
    elif kind == "reorder":
        p.update(delay_ms=rng.randint(20, 60), reorder_pct=rng.randint(25, 50))
    elif kind == "mixed":
        d = rng.randint(20, 150)
        p.update(delay_ms=d, jitter_ms=d // 2, loss_pct=rng.randint(2, 15),
                 duplicate_pct=rng.randint(2, 15), reorder_pct=rng.randint(10, 30))
    else:
        raise ValueError(f"unknown packet kind {kind!r}: choose from {', '.join(PACKET_KINDS)}")
    return p


def netem_args(p: dict) -> str:
    """The ``netem`` arguments for settings ``p`` (see :func:`netem_params`)."""
    args = []
    if p["delay_ms"]:
        args.append(f"delay {p['delay_ms']}ms" + (f" {p['jitter_ms']}ms" if p["jitter_ms"] else ""))
    if p["loss_pct"]:
        args.append(f"loss {p['loss_pct']}%")
    if p["duplicate_pct"]:
        args.append(f"duplicate {p['duplicate_pct']}%")
    if p["reorder_pct"] and p["delay_ms"]:
        args.append(f"reorder {p['reorder_pct']}%")
    return " ".join(args) or "delay 0ms"


def netem_command(dest_ips: list[str], p: dict) -> str:
    """sh, run on a sender: netem ``p`` on packets to ``dest_ips``, other traffic untouched."""
    dev = DEVICE
    cmds = [HEAL_COMMAND,
            f"tc qdisc add dev {dev} root handle 1: htb default 1",
            f"tc class add dev {dev} parent 1: classid 1:1 htb rate 10gbit",
            f"tc class add dev {dev} parent 1: classid 1:2 htb rate 10gbit",
            f"tc qdisc add dev {dev} parent 1:2 handle 20: netem {netem_args(p)}"]
    cmds += [f"tc filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip dst "
             f"{shlex.quote(ip)}/32 flowid 1:2" for ip in sorted(dest_ips)]
    return " && ".join(cmds)


def loss_match(p: dict) -> str:
    """The iptables match that drops ``p["loss_pct"]`` % of packets at random (the fallback
    when netem is missing)."""
    return f"-m statistic --mode random --probability {p['loss_pct'] / 100:.2f}"
