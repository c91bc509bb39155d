"""Packet faults (family ``packet``) on a cluster: ``tc netem`` where the nodes' kernel has
it, else the userspace nfqueue shaper (:mod:`nemesis.nfqueue_shaper`) on each sender, else
loss only, with iptables' ``statistic`` match. The commands are :mod:`nemesis.packet`'s.

A mixin of :class:`nemesis.controller.NemesisController`, which sets ``cluster``, ``rng``,
``partitioner``, ``_lock``, ``_netem`` (None until probed) and ``_shapers`` (``{slot:
(nfqueue, nodes running a shaper)}``), and has ``nodes``, ``hold`` and ``process_targets``:
the packet faults' state on a cluster. :data:`INJECTOR`, the ``packet`` family's, starts and
stops them through it.
"""
from __future__ import annotations

import logging

from clusters.parallel import NodeErrors, on_nodes
from faults.packet import SPEC
from nemesis import packet
from nemesis.faults import EXPLICIT, Fault
from nemesis.injector import Injector
from nemesis.targets import choose_targets

log = logging.getLogger("kraft_chaos.nemesis")


class PacketFaults:
    """Starting and stopping packet faults for a ``NemesisController`` (see the module
    docstring)."""

    def netem_available(self) -> bool:
        """Whether the nodes' kernel has netem (probed once, on the first node)."""
        if self._netem is None:
            res = self.cluster.remote.exec(self.nodes[0], packet.PROBE_COMMAND, check=False)
            self._netem = res.exit_code == 0
            if not self._netem:
                log.warning("this kernel has no netem (sch_netem): packet faults use the nfqueue shaper "
                            "(nemesis/nfqueue_shaper.py) instead (%s)", (res.stderr or res.stdout).strip()[:200])
        return self._netem

    def packet_start(self, fault: Fault) -> dict:
        """Start packet fault ``fault``; return what its start's value gets (DEVELOPERS.md,
        "Nemesis ops"). Raises ``ValueError`` for a bad ``to``, ``NodeErrors``."""
        nodes = self.nodes
        if fault.kind == EXPLICIT:
            senders, _ = self.process_targets(fault)
            kind = str(fault.params.get("effect", "mixed"))
        else:
            mode = self.rng.choice(["one", "minority", "all"])
            senders = choose_targets(mode, nodes, self.rng, None).targets if mode != "all" else nodes
            kind = fault.kind
        p = packet.netem_params(kind, self.rng)
        p.update(packet.given_params(fault.params))       # settings the fault names win
        to = fault.params.get("to")                       # destinations (default: every other node)
        if to is not None and not (isinstance(to, (list, tuple)) and set(to) <= set(nodes)):
            raise ValueError(f"nemesis packet: to must list nodes of {nodes}, got {to!r}")
        out: dict = {"targets": senders, **p, **({"to": list(to)} if to is not None else {})}
        self.hold(fault, senders)
        ips = {n: [self.cluster.ip(d) for d in (to if to is not None else nodes) if d != n] for n in senders}
        if self.netem_available():
            on_nodes(senders, lambda n: self.cluster.remote.exec(n, packet.netem_command(ips[n], p),
                                                                 check=True), what="netem")
            return out
        out["netem"] = False
        applied, missing = packet.shaper_params(p, self.rng)
        error = self._start_shapers(fault.key, senders, applied)
        if error is None:
            out.update(applied, shaper="nfqueue", queue=self._shapers[fault.key][0])
            if missing:
                out["not_applied"] = missing
            on_nodes(senders, lambda n: self.cluster.remote.exec(
                n, packet.queue_rules(fault.key, self._shapers[fault.key][0], ips[n]), check=True),
                what="nfqueue rules")
            return out
        log.warning("packet fault %s: the nfqueue shaper could not start (%s): loss only, with "
                    "iptables' statistic match", fault.key, error)
        applied, missing = packet.fallback_params(p, self.rng)
        out.update(applied, shaper=False, shaper_error=error[:300])
        if missing:
            out["not_applied"] = missing
        g = {n: {s for s in senders if s != n} for n in nodes}
        self.partitioner.apply(g, fault.key, packet.loss_match(applied))
        return out

    def _start_shapers(self, slot: str, senders: list[str], p: dict) -> str | None:
        """Copy the shaper to every sender and start it there on a queue of the slot's own;
        None when it runs everywhere, else the error (the shapers that did start are
        stopped again)."""
        with self._lock:
            used = {q for q, _n in self._shapers.values()}
            queue = next(q for q in range(packet.QUEUE_BASE, packet.QUEUE_BASE + 1000) if q not in used)
            self._shapers[slot] = (queue, list(senders))
        seeds = {n: self.rng.getrandbits(32) for n in senders}

        def start(n: str) -> None:
            self.cluster.remote.put(n, packet.SHAPER_SOURCE, packet.SHAPER_PATH)
            self.cluster.remote.exec(n, packet.shaper_start_command(slot, queue, p, seeds[n]), check=True)

        try:
            on_nodes(senders, start, what="shaper start")
        except NodeErrors as err:
            try:
                self._stop_shapers(slot)
            except NodeErrors as again:      # left recorded: the stop or heal_all tries again
                log.warning("packet fault %s: could not stop the shapers that started: %s", slot, again)
            return "; ".join(f"{n}: {packet.error_text(e)}" for n, e in sorted(err.errors.items()))
        return None

    def _stop_shapers(self, slot: str) -> dict[str, dict]:
        """Stop the slot's shapers (each accepts what it holds, then exits); return their
        counts by node. Raises NodeErrors (the slot's shapers stay recorded for a retry)."""
        with self._lock:
            entry = self._shapers.get(slot)
        if entry is None:
            return {}
        res = on_nodes(entry[1], lambda n: self.cluster.remote.exec(n, packet.shaper_stop_command(slot),
                                                                    check=True), what="shaper stop")
        with self._lock:
            self._shapers.pop(slot, None)
        return {n: packet.shaper_counts(r.stdout) for n, r in res.items()}

    def packet_stop(self, slot: str, targets: list[str]) -> dict[str, dict]:
        """Heal the packet fault of ``slot``: flush its chains (first, so no packet goes to a
        queue being closed), remove netem from ``targets``, stop the slot's shapers; return
        the shapers' counts by node (:meth:`_stop_shapers`). Raises NodeErrors."""
        self.partitioner.heal(slot)
        if self._netem:
            on_nodes(targets, lambda n: self.cluster.remote.exec(n, packet.HEAL_COMMAND, check=True),
                     what="netem heal")
        return self._stop_shapers(slot)


def _start(ctl, fault: Fault, value: dict, waited) -> bool:
    value.update(ctl.packet_start(fault))
    return False


def _stop(ctl, fault: Fault, targets: list[str], out: dict) -> None:
    shaped = ctl.packet_stop(fault.key, targets)
    if shaped:
        out["shaped"] = shaped


INJECTOR = Injector(SPEC, _start, _stop)
