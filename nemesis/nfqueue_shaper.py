#!/usr/bin/env python3
"""A userspace packet shaper on an nfnetlink_queue: delay, jitter, reordering, loss.

The fallback for packet faults where the kernel has no ``sch_netem``. An
iptables rule sends the chosen packets to queue N
(``-j NFQUEUE --queue-num N --queue-bypass``); this program binds that queue
and holds each packet's verdict:

* ``loss_pct`` % of the packets get NF_DROP at once;
* ``reorder_pct`` % of the rest get NF_ACCEPT at once (netem's ``reorder``:
  those overtake the delayed ones);
* every other packet gets NF_ACCEPT after ``delay_ms`` plus a uniform jitter
  in [-``jitter_ms``, +``jitter_ms``] (at least 0), so packets reorder
  naturally when the jitter is large against their spacing.

Held packets wait in a heap of (release time, arrival number, packet id).
**Duplication cannot be done**: an NFQUEUE verdict accepts or drops the one
packet the kernel queued (NF_REPEAT re-runs the hook, it does not copy);
duplicating would need the payload and a raw socket to send copies, so
``duplicate`` is not offered.

Standard library only: it runs inside the node containers (Debian's
python3), needs CAP_NET_ADMIN and a kernel with
CONFIG_NETFILTER_NETLINK_QUEUE and the NFQUEUE target. The netlink encoding
follows linux/netlink.h, linux/netfilter/nfnetlink.h and
linux/netfilter/nfnetlink_queue.h. The queue is bound in copy mode META (no
payload is copied), with ``NFQA_CFG_F_FAIL_OPEN`` (a full queue accepts rather
than drops) and ``NFQA_CFG_F_GSO`` (a GSO packet is held whole, as netem
holds it). A receive overrun (ENOBUFS: the kernel dropped queue messages, so
some packet ids never reached us) is repaired with a batch verdict accepting
every id up to the next one seen, so nothing stays queued.

SIGTERM or SIGINT: every held packet is accepted, then anything still queued,
and the program exits 0 after writing one JSON line of counts to stdout. The
pid file (``--pidfile``) is written once the queue is bound (so its presence
means "shaping") and removed at exit. Exit status 2: the queue could not be
bound (message on stderr).

Usage: ``python3 nfqueue_shaper.py --queue 4200 --delay-ms 200 --jitter-ms 100
--loss-pct 0 --seed 7 --pidfile /tmp/kc-shaper.pid``
"""
from __future__ import annotations

import argparse
import errno
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

# -- linux/netlink.h --------------------------------------------------------
AF_NETLINK = 16
NETLINK_NETFILTER = 12
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLMSG_NOOP = 1
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLMSG_OVERRUN = 4
NLA_TYPE_MASK = 0x3FFF          # ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER)
NLMSG_HDR = struct.Struct("=IHHII")     # nlmsg_len, nlmsg_type, nlmsg_flags, nlmsg_seq, nlmsg_pid
NLA_HDR = struct.Struct("=HH")          # nla_len, nla_type
SO_RCVBUFFORCE = 33

# -- linux/netfilter/nfnetlink.h --------------------------------------------
NFNETLINK_V0 = 0
NFNL_SUBSYS_QUEUE = 3
NFGENMSG = struct.Struct(">BBH")        # nfgen_family, version, res_id (big-endian: the queue)

# -- linux/netfilter/nfnetlink_queue.h --------------------------------------
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQNL_MSG_VERDICT_BATCH = 3
# enum nfqnl_attr_type
NFQA_PACKET_HDR = 1             # struct nfqnl_msg_packet_hdr {__be32 packet_id; __be16 hw_protocol; __u8 hook;} packed
NFQA_VERDICT_HDR = 2            # struct nfqnl_msg_verdict_hdr {__be32 verdict; __be32 id;}
NFQA_PAYLOAD = 10
PACKET_HDR = struct.Struct(">IHB")
VERDICT_HDR = struct.Struct(">II")
# enum nfqnl_attr_config
NFQA_CFG_CMD = 1                # struct nfqnl_msg_config_cmd {__u8 command; __u8 _pad; __be16 pf;}
NFQA_CFG_PARAMS = 2             # struct nfqnl_msg_config_params {__be32 copy_range; __u8 copy_mode;} packed
NFQA_CFG_QUEUE_MAXLEN = 3       # __be32
NFQA_CFG_MASK = 4               # __be32: which flags to change
NFQA_CFG_FLAGS = 5              # __be32
CONFIG_CMD = struct.Struct(">BBH")
CONFIG_PARAMS = struct.Struct(">IB")
BE32 = struct.Struct(">I")
# enum nfqnl_msg_config_cmds
NFQNL_CFG_CMD_BIND = 1
NFQNL_CFG_CMD_UNBIND = 2
# enum nfqnl_config_mode
NFQNL_COPY_NONE = 0
NFQNL_COPY_META = 1
NFQNL_COPY_PACKET = 2
# config flags
NFQA_CFG_F_FAIL_OPEN = 1 << 0
NFQA_CFG_F_GSO = 1 << 2
# linux/netfilter.h verdicts
NF_DROP = 0
NF_ACCEPT = 1

MSG_PACKET = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET
MSG_VERDICT = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_VERDICT
MSG_CONFIG = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_CONFIG
MSG_VERDICT_BATCH = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_VERDICT_BATCH
#: the longest a blocked wait lasts with nothing held (seconds)
IDLE_WAIT_S = 1.0


def align4(n: int) -> int:
    """``n`` rounded up to a multiple of 4 (NLMSG_ALIGN, NLA_ALIGN)."""
    return (n + 3) & ~3


def nla(attr_type: int, payload: bytes) -> bytes:
    """One netlink attribute: header, payload, zero padding to 4 bytes."""
    length = NLA_HDR.size + len(payload)
    return NLA_HDR.pack(length, attr_type) + payload + b"\0" * (align4(length) - length)


def nfnl_message(msg_type: int, flags: int, seq: int, queue: int, attrs: bytes,
                 family: int = socket.AF_UNSPEC) -> bytes:
    """An nfnetlink message: nlmsghdr (pid 0: to the kernel), nfgenmsg (``res_id`` = the
    queue number, big-endian), then the encoded ``attrs``."""
    body = NFGENMSG.pack(family, NFNETLINK_V0, queue) + attrs
    return NLMSG_HDR.pack(NLMSG_HDR.size + len(body), msg_type, flags, seq, 0) + body


def config_bind(queue: int, seq: int = 1, command: int = NFQNL_CFG_CMD_BIND,
                pf: int = socket.AF_INET) -> bytes:
    """NFQNL_MSG_CONFIG with an NFQA_CFG_CMD (bind, or unbind), asking for an ACK."""
    return nfnl_message(MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, seq, queue,
                        nla(NFQA_CFG_CMD, CONFIG_CMD.pack(command, 0, pf)))


def config_params(queue: int, seq: int = 2, copy_mode: int = NFQNL_COPY_META, copy_range: int = 0,
                  maxlen: int | None = None, flags: int | None = None) -> bytes:
    """NFQNL_MSG_CONFIG setting the copy mode (and the queue length and flags), with an ACK."""
    attrs = nla(NFQA_CFG_PARAMS, CONFIG_PARAMS.pack(copy_range, copy_mode))
    if maxlen is not None:
        attrs += nla(NFQA_CFG_QUEUE_MAXLEN, BE32.pack(maxlen))
    if flags is not None:
        attrs += nla(NFQA_CFG_MASK, BE32.pack(flags)) + nla(NFQA_CFG_FLAGS, BE32.pack(flags))
    return nfnl_message(MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, seq, queue, attrs)


def verdict_message(queue: int, packet_id: int, verdict: int, seq: int = 0, batch: bool = False) -> bytes:
    """NFQNL_MSG_VERDICT (or _BATCH: every queued id up to ``packet_id``) without an ACK."""
    return nfnl_message(MSG_VERDICT_BATCH if batch else MSG_VERDICT, NLM_F_REQUEST, seq, queue,
                        nla(NFQA_VERDICT_HDR, VERDICT_HDR.pack(verdict, packet_id)))


def parse_attrs(data: bytes, offset: int, end: int) -> dict[int, bytes]:
    """``{attribute type: payload}`` of the attributes in ``data[offset:end]``."""
    attrs: dict[int, bytes] = {}
    while offset + NLA_HDR.size <= end:
        length, attr_type = NLA_HDR.unpack_from(data, offset)
        if length < NLA_HDR.size or offset + length > end:
            break
        attrs[attr_type & NLA_TYPE_MASK] = bytes(data[offset + NLA_HDR.size:offset + length])
        offset += align4(length)
    return attrs


def parse_messages(data: bytes) -> list[tuple]:
    """The netlink messages in one datagram, each as a tuple:

    ``("packet", queue, packet_id, attrs)`` for an NFQNL_MSG_PACKET,
    ``("error", errno_value, seq)`` for an NLMSG_ERROR (0: an ACK; the error is
    positive, e.g. errno.EBUSY), ``("other", type, seq)`` for anything else.
    A truncated trailing message is ignored.
    """
    out: list[tuple] = []
    offset = 0
    while offset + NLMSG_HDR.size <= len(data):
        length, msg_type, _flags, seq, _pid = NLMSG_HDR.unpack_from(data, offset)
        if length < NLMSG_HDR.size or offset + length > len(data):
            break
        body = offset + NLMSG_HDR.size
        if msg_type == NLMSG_ERROR and length >= NLMSG_HDR.size + 4:
            (err,) = struct.unpack_from("=i", data, body)
            orig_seq = NLMSG_HDR.unpack_from(data, body + 4)[3] if length >= NLMSG_HDR.size + 4 + 16 else seq
            out.append(("error", -err, orig_seq))
        elif msg_type == MSG_PACKET and length >= NLMSG_HDR.size + NFGENMSG.size:
            _family, _version, queue = NFGENMSG.unpack_from(data, body)
            attrs = parse_attrs(data, body + NFGENMSG.size, offset + length)
            hdr = attrs.get(NFQA_PACKET_HDR)
            if hdr is not None and len(hdr) >= PACKET_HDR.size:
                out.append(("packet", queue, PACKET_HDR.unpack_from(hdr)[0], attrs))
        else:
            out.append(("other", msg_type, seq))
        offset += align4(length)
    return out


class Schedule:
    """When each packet's verdict is given; no I/O, the clock is the caller's (seconds).

    ``admit(packet_id, now)`` returns NF_DROP (lost), NF_ACCEPT (released at
    once: no delay, or chosen for reordering) or None (held: see :meth:`due`).
    Random draws per packet, from ``rng``, in this order: loss (when
    ``loss_pct``), reorder (when ``reorder_pct``), jitter (when ``jitter_ms``).
    """

    def __init__(self, delay_ms: float = 0.0, jitter_ms: float = 0.0, loss_pct: float = 0.0,
                 reorder_pct: float = 0.0, rng: random.Random | None = None):
        self.delay_ms, self.jitter_ms = float(delay_ms), float(jitter_ms)
        self.loss_pct, self.reorder_pct = float(loss_pct), float(reorder_pct)
        self.rng = rng or random.Random()
        self._heap: list[tuple[float, int, int]] = []
        self._arrivals = 0
        self.counts = {"packets": 0, "accepted": 0, "dropped": 0, "delayed": 0, "max_held": 0}

    def __len__(self) -> int:
        return len(self._heap)

    def admit(self, packet_id: int, now: float) -> int | None:
        """Decide what happens to a packet that arrived at ``now``."""
        self.counts["packets"] += 1
        if self.loss_pct and self.rng.random() * 100.0 < self.loss_pct:
            self.counts["dropped"] += 1
            return NF_DROP
        if self.reorder_pct and self.rng.random() * 100.0 < self.reorder_pct:
            self.counts["accepted"] += 1
            return NF_ACCEPT
        delay = self.delay_ms
        if self.jitter_ms:
            delay += self.rng.uniform(-self.jitter_ms, self.jitter_ms)
        if delay <= 0:
            self.counts["accepted"] += 1
            return NF_ACCEPT
        self._arrivals += 1
        heapq.heappush(self._heap, (now + delay / 1000.0, self._arrivals, packet_id))
        self.counts["delayed"] += 1
        self.counts["max_held"] = max(self.counts["max_held"], len(self._heap))
        return None

    def next_release(self) -> float | None:
        """When the earliest held packet is due (None: nothing held)."""
        return self._heap[0][0] if self._heap else None

    def due(self, now: float) -> list[int]:
        """Pop the ids of the held packets due at ``now``, in release order."""
        out = []
        while self._heap and self._heap[0][0] <= now:
            out.append(heapq.heappop(self._heap)[2])
        self.counts["accepted"] += len(out)
        return out

    def release_upto(self, packet_id: int) -> list[int]:
        """Forget the held packets with ids up to ``packet_id`` (a batch verdict accepted
        them); returns their ids."""
        gone = [e[2] for e in self._heap if e[2] <= packet_id]
        if gone:
            self._heap = [e for e in self._heap if e[2] > packet_id]
            heapq.heapify(self._heap)
            self.counts["accepted"] += len(gone)
        return gone

    def drain(self) -> list[int]:
        """Pop every held packet's id, in release order (at exit)."""
        out = [e[2] for e in sorted(self._heap)]
        self._heap = []
        self.counts["accepted"] += len(out)
        return out


class QueueError(RuntimeError):
    """The queue could not be bound or configured."""


class Shaper:
    """Binds queue ``queue`` on a netlink socket and gives verdicts by ``schedule``."""

    def __init__(self, queue: int, schedule: Schedule, maxlen: int = 10000, clock=time.monotonic):
        self.queue, self.schedule, self.maxlen, self.clock = queue, schedule, maxlen, clock
        self.sock: socket.socket | None = None
        self.stats = {"overruns": 0, "errors": 0, "batch_released": 0}
        self._overrun = False
        self._max_id: int | None = None
        self._seq = 100

    # -- setup and teardown -----------------------------------------------------

    def open(self) -> None:
        """Open the socket, bind the queue, set copy mode META; raises QueueError."""
        try:
            sock = socket.socket(AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        except OSError as err:
            raise QueueError(f"cannot open a NETLINK_NETFILTER socket: {err}") from err
        self.sock = sock
        try:
            sock.bind((0, 0))
            for opt in (SO_RCVBUFFORCE, socket.SO_RCVBUF):
                try:
                    sock.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
                    break
                except OSError:
                    continue
        except OSError as err:
            raise QueueError(f"cannot bind the netlink socket: {err}") from err
        self._request(config_bind(self.queue, seq=1), "bind queue")
        self._request(config_params(self.queue, seq=2, copy_mode=NFQNL_COPY_META, maxlen=self.maxlen,
                                    flags=NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO), "configure queue")

    def _request(self, msg: bytes, what: str) -> None:
        seq = NLMSG_HDR.unpack_from(msg)[3]
        try:
            self.sock.send(msg)
            deadline = time.monotonic() + 5.0
            while True:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                for m in parse_messages(self.sock.recv(65536)):
                    if m[0] == "error" and m[2] == seq:
                        if m[1]:
                            raise QueueError(f"{what} (queue {self.queue}): {os.strerror(m[1])}")
                        return
        except socket.timeout:
            raise QueueError(f"{what} (queue {self.queue}): no answer from the kernel") from None
        except OSError as err:
            raise QueueError(f"{what} (queue {self.queue}): {err}") from err
        finally:
            self.sock.settimeout(None)

    def close(self) -> None:
        """Accept every held and queued packet, unbind, close the socket."""
        if self.sock is None:
            return
        for pid in self.schedule.drain():
            self._verdict(pid, NF_ACCEPT)
        try:
            self._read(drain=True)                   # whatever arrived meanwhile: accept it
        except OSError:
            self.stats["errors"] += 1
        for pid in self.schedule.drain():
            self._verdict(pid, NF_ACCEPT)
        if self._max_id is not None:
            self._send(verdict_message(self.queue, self._max_id, NF_ACCEPT, batch=True))
        try:
            self.sock.send(config_bind(self.queue, seq=3, command=NFQNL_CFG_CMD_UNBIND))
        except OSError:
            pass
        self.sock.close()
        self.sock = None

    # -- the loop ---------------------------------------------------------------

    def _send(self, msg: bytes) -> None:
        try:
            self.sock.send(msg)
        except OSError:
            self.stats["errors"] += 1

    def _verdict(self, packet_id: int, verdict: int) -> None:
        self._send(verdict_message(self.queue, packet_id, verdict))

    def _read(self, drain: bool = False) -> None:
        """Read every message waiting on the socket (without blocking) and act on it;
        ``drain``: accept every packet at once (shutting down)."""
        while True:
            try:
                data = self.sock.recv(65536, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:
                if err.errno == errno.ENOBUFS:      # the kernel dropped messages: ids we never saw
                    self.stats["overruns"] += 1
                    self._overrun = True
                    continue
                raise
            now = self.clock()
            for m in parse_messages(data):
                if m[0] == "error":
                    if m[1]:
                        self.stats["errors"] += 1
                    continue
                if m[0] != "packet" or m[1] != self.queue:
                    continue
                pid = m[2]
                if self._overrun:                  # accept everything up to here, seen or not
                    self._overrun = False
                    if pid > 0:
                        self._send(verdict_message(self.queue, pid - 1, NF_ACCEPT, batch=True))
                        self.stats["batch_released"] += len(self.schedule.release_upto(pid - 1))
                self._max_id = pid if self._max_id is None else max(self._max_id, pid)
                v = NF_ACCEPT if drain else self.schedule.admit(pid, now)
                if v is not None:
                    self._verdict(pid, v)

    def run(self, stop_fd: int, should_stop=lambda: False) -> None:
        """Serve the queue until ``stop_fd`` is readable or ``should_stop()``."""
        while not should_stop():
            nxt = self.schedule.next_release()
            timeout = IDLE_WAIT_S if nxt is None else min(IDLE_WAIT_S, max(0.0, nxt - self.clock()))
            try:
                ready, _, _ = select.select([self.sock, stop_fd], [], [], timeout)
            except InterruptedError:
                ready = []
            if stop_fd in ready or should_stop():
                return
            if self.sock in ready:
                self._read()
            for pid in self.schedule.due(self.clock()):
                self._verdict(pid, NF_ACCEPT)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="NFQUEUE packet shaper: delay, jitter, reorder, loss "
                                             "(no duplication)")
    ap.add_argument("--queue", type=int, required=True, help="nfnetlink_queue number (0..65535)")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--jitter-ms", type=float, default=0.0, help="uniform in [-jitter, +jitter]")
    ap.add_argument("--loss-pct", type=float, default=0.0)
    ap.add_argument("--reorder-pct", type=float, default=0.0, help="%% of packets sent at once, undelayed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--maxlen", type=int, default=10000, help="kernel queue length")
    ap.add_argument("--pidfile", help="written once the queue is bound, removed at exit")
    args = ap.parse_args(argv)

    stopping = []
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.append(1))

    sched = Schedule(args.delay_ms, args.jitter_ms, args.loss_pct, args.reorder_pct,
                     random.Random(args.seed))
    shaper = Shaper(args.queue, sched, args.maxlen)
    try:
        shaper.open()
    except QueueError as err:
        print(f"nfqueue_shaper: {err}", file=sys.stderr)
        return 2
    try:
        if args.pidfile:
            tmp = f"{args.pidfile}.tmp"
            with open(tmp, "w") as f:
                f.write(f"{os.getpid()}\n")
            os.replace(tmp, args.pidfile)
        print(f"nfqueue_shaper: queue {args.queue} bound: delay {args.delay_ms} ms, jitter "
              f"{args.jitter_ms} ms, loss {args.loss_pct} %, reorder {args.reorder_pct} %", file=sys.stderr,
              flush=True)
        shaper.run(rfd, lambda: bool(stopping))
    finally:
        shaper.close()
        if args.pidfile:
            try:
                os.unlink(args.pidfile)
            except FileNotFoundError:
                pass
        print(json.dumps({"queue": args.queue, **sched.counts, **shaper.stats}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
