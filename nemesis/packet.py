"""Packet faults on chosen links: ``tc netem`` delay, jitter, loss, duplication, reordering.

Inside each sending node, an HTB root qdisc keeps ordinary traffic in class
1:1 and sends packets for the chosen destinations (u32 filters on the
destination address) to class 1:2, whose child qdisc is netem. Healing
deletes the root qdisc. The kernel must have ``sch_netem`` and ``sch_htb``;
:func:`netem_available` probes a node.

Where netem is missing (the fault's history value says ``"netem": false``),
a userspace shaper does it instead: :mod:`nemesis.nfqueue_shaper` is copied
to each sender (:data:`SHAPER_PATH`) and run there on an nfnetlink_queue of
the fault's slot; rules in the sender's OUTPUT chain of the slot
(``KC-<slot>-o``) send the packets for each destination to that queue
(``-j NFQUEUE --queue-num N --queue-bypass``: traffic flows if the shaper is
gone). It delays (with jitter: packets reorder), reorders (netem's
``reorder``: that share is sent at once) and drops, but cannot duplicate
(:func:`shaper_params`); the value says ``"shaper": "nfqueue"`` and the
settings applied. Only if the shaper cannot start is loss emulated with
iptables' ``statistic`` match on the receivers (see
:class:`nemesis.partition.Partitioner`), with ``"shaper": false``.
"""
from __future__ import annotations

import json
import random
import shlex
from pathlib import Path

from clusters.remote import ExecResult
from faults.packet import KINDS as PACKET_KINDS
from nemesis.partition import chain, ensure_chain_command
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


def given_params(params: dict) -> dict:
    """The settings a fault names itself (scenario files: ``value = { kind = "nodes", targets =
    [...], effect = "delay", delay_ms = 200, jitter_ms = 0 }``), as ints; they replace the
    drawn ones. Raises ValueError for a negative or non-numeric one, or a share over 100 %."""
    out = {}
    for k in ("delay_ms", "jitter_ms", "loss_pct", "duplicate_pct", "reorder_pct"):
        if k in params:
            v = params[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or (k.endswith("_pct") and v > 100):
                raise ValueError(f"packet fault: {k} must be a number >= 0{' and <= 100' if k.endswith('_pct') else ''}, "
                                 f"got {v!r}")
            out[k] = int(v)
    return out


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


# -- the userspace shaper (no netem) ---------------------------------------------

#: the shaper program, as copied to the nodes (standard library only)
SHAPER_SOURCE = Path(__file__).with_name("nfqueue_shaper.py")
#: where it is copied on each sender
SHAPER_PATH = "/tmp/kc-shaper.py"
#: the first nfnetlink_queue number of ours; each active packet slot holds one
QUEUE_BASE = 4200
#: how long a start waits for the shaper to bind its queue (tenths of a second)
SHAPER_START_TENTHS = 50
#: how long a stop waits for the shaper to release its packets and exit (tenths of a second)
SHAPER_STOP_TENTHS = 30
#: the shaper's settings (what it applies; duplication it cannot do)
SHAPER_KEYS = ("delay_ms", "jitter_ms", "loss_pct", "reorder_pct")
#: sh: end every shaper on a node (heal_all). The pattern ``[k]c-shaper`` matches the shapers'
#: command lines (``/tmp/kc-shaper.py``) but not this command's own shell, which names no
#: ``kc-shaper`` literally (the pid files too are globbed with ``[k]``).
SHAPER_KILL_ALL_COMMAND = (
    f"pkill -TERM -f '[k]c-shaper' ; i=0; while pgrep -f '[k]c-shaper' >/dev/null "
    f"&& [ $i -lt {SHAPER_STOP_TENTHS} ]; do i=$((i+1)); sleep 0.1; done; "
    f"pkill -KILL -f '[k]c-shaper' ; rm -f /tmp/[k]c-shaper-*.pid ; true")


def shaper_files(slot: str) -> tuple[str, str]:
    """(pid file, log file) of the shaper of fault slot ``slot`` on a node."""
    chain(slot)                         # a slot fit for a chain name is fit for a file name
    return f"/tmp/kc-shaper-{slot}.pid", f"/tmp/kc-shaper-{slot}.log"


def shaper_params(p: dict, rng: random.Random) -> tuple[dict, dict]:
    """(applied, not applied) settings of netem settings ``p`` (see :func:`netem_params`) for
    the shaper: delay, jitter, loss and reorder as asked, ``duplicate_pct`` 0 (an NFQUEUE
    verdict cannot copy a packet; the asked value goes to ``not applied``). A fault left
    with nothing to do (duplication only) drops 5..30 % instead, drawn from ``rng``.
    """
    applied = {**p, "duplicate_pct": 0}
    missing = {"duplicate_pct": p["duplicate_pct"]} if p.get("duplicate_pct") else {}
    if not any(applied[k] for k in SHAPER_KEYS):
        applied["loss_pct"] = rng.randint(5, 30)
    return applied, missing


def fallback_params(p: dict, rng: random.Random) -> tuple[dict, dict]:
    """(applied, not applied) settings of ``p`` for iptables' statistic match: loss only
    (5..30 % drawn from ``rng`` when ``p`` has none); every other setting is 0 and listed
    in ``not applied``."""
    applied = {k: 0 for k in p}
    applied["loss_pct"] = p["loss_pct"] or rng.randint(5, 30)
    return applied, {k: v for k, v in p.items() if k != "loss_pct" and v}


def shaper_start_command(slot: str, queue: int, p: dict, seed: int) -> str:
    """sh, run on a sender: start the shaper of ``slot`` on ``queue`` with settings ``p``,
    detached (nohup, its output in the slot's log file), and wait until it has bound the
    queue (its pid file appears). Exits 1 with the shaper's log on stderr if it died or did
    not bind within :data:`SHAPER_START_TENTHS` tenths of a second."""
    pid, logf = shaper_files(slot)
    args = " ".join(f"--{k.replace('_', '-')} {p[k]}" for k in SHAPER_KEYS)
    return (f"rm -f {pid} ; nohup python3 {SHAPER_PATH} --queue {int(queue)} {args} --seed {int(seed)} "
            f"--pidfile {pid} </dev/null >{logf} 2>&1 & "
            f"s=$! ; i=0 ; while [ ! -s {pid} ] ; do "
            f"if ! kill -0 $s 2>/dev/null || [ $i -ge {SHAPER_START_TENTHS} ] ; then "
            f"kill -KILL $s 2>/dev/null ; cat {logf} >&2 ; exit 1 ; fi ; i=$((i+1)) ; sleep 0.1 ; done")


def shaper_stop_command(slot: str) -> str:
    """sh, run on a sender: SIGTERM the slot's shaper (it accepts every held packet and
    exits), SIGKILL it after :data:`SHAPER_STOP_TENTHS` tenths of a second; print the last
    line of its log (its counts, one JSON object). Does nothing when none runs."""
    pid, logf = shaper_files(slot)
    return (f"if [ -s {pid} ] ; then p=$(cat {pid}) ; kill -TERM $p 2>/dev/null ; i=0 ; "
            f"while kill -0 $p 2>/dev/null && [ $i -lt {SHAPER_STOP_TENTHS} ] ; do i=$((i+1)) ; sleep 0.1 ; done ; "
            f"kill -KILL $p 2>/dev/null ; fi ; rm -f {pid} ; tail -n 1 {logf} 2>/dev/null ; true")


def queue_rules(slot: str, queue: int, dest_ips: list[str]) -> str:
    """sh, run on a sender: its packets to ``dest_ips`` go to ``queue``, in the slot's OUTPUT
    chain (created and jumped to if missing)."""
    c = chain(slot, outgoing=True)
    return " && ".join([ensure_chain_command(slot, outgoing=True)]
                       + [f"iptables -w -A {c} -d {shlex.quote(ip)} -j NFQUEUE --queue-num {int(queue)} "
                          f"--queue-bypass" for ip in sorted(dest_ips)])


def shaper_counts(stdout: str) -> dict:
    """The shaper's counts from :func:`shaper_stop_command`'s output (its last JSON line),
    or ``{"log": last line}`` when it printed none (``{}`` when nothing)."""
    lines = [ln for ln in (stdout or "").strip().splitlines() if ln.strip()]
    if not lines:
        return {}
    try:
        counts = json.loads(lines[-1])
    except ValueError:
        return {"log": lines[-1][-300:]}
    return counts if isinstance(counts, dict) else {"log": lines[-1][-300:]}


def error_text(err: BaseException) -> str:
    """A node's error in short (for a fault's value): a failed command's stderr (its last
    line), else the error's text; at most 200 characters."""
    result = getattr(err, "result", None)
    text = (result.stderr or result.stdout).strip() if isinstance(result, ExecResult) else ""
    return (text.splitlines()[-1] if text else str(err))[-200:]
