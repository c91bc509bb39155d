"""The nfqueue shaper (nemesis/nfqueue_shaper.py): netlink encoding, its schedule on a fake
clock, and its loop on a socket pair standing in for the kernel."""
import errno
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from nemesis import nfqueue_shaper as nq

little_endian = pytest.mark.skipif(sys.byteorder != "little", reason="netlink headers are host-endian")


def packet_message(queue: int, packet_id: int, seq: int = 0, extra: bytes = b"") -> bytes:
    """An NFQNL_MSG_PACKET as the kernel sends it, built by hand (host-endian nlmsghdr and
    nlattr headers, big-endian nfgenmsg res_id and packet header)."""
    hdr_attr = struct.pack("=HH", 4 + 7, 1) + struct.pack(">IHB", packet_id, 0x0800, 3) + b"\0"   # hook 3: OUTPUT
    ct = struct.pack("=HH", 4 + 4, 0x8000 | 11) + struct.pack("=HH", 4, 1)      # nested NFQA_CT, masked
    outdev = struct.pack("=HH", 8, 6) + struct.pack(">I", 17)                  # NFQA_IFINDEX_OUTDEV
    body = struct.pack(">BBH", socket.AF_INET, 0, queue) + hdr_attr + ct + outdev + extra
    return struct.pack("=IHHII", 16 + len(body), 0x0300, 0, seq, 0) + body


def ack_message(seq: int, error: int = 0) -> bytes:
    orig = struct.pack("=IHHII", 28, 0x0302, 5, seq, 0)
    return struct.pack("=IHHII", 16 + 4 + 16, 2, 0, seq, 1234) + struct.pack("=i", error) + orig


# -- encoding -------------------------------------------------------------------

@little_endian
def test_verdict_message_bytes_exact():
    msg = nq.verdict_message(4200, 77, nq.NF_ACCEPT)
    assert msg == bytes.fromhex(
        "20000000" "0103" "0100" "00000000" "00000000"     # nlmsghdr: len 32, type 0x0301, NLM_F_REQUEST
        "00" "00" "1068"                                   # nfgenmsg: AF_UNSPEC, v0, res_id 4200 big-endian
        "0c00" "0200" "00000001" "0000004d")               # NFQA_VERDICT_HDR: NF_ACCEPT, id 77
    drop = nq.verdict_message(1, 0x01020304, nq.NF_DROP, seq=9)
    assert drop[4:6] == b"\x01\x03" and drop[8:12] == b"\x09\0\0\0" and drop[18:20] == b"\x00\x01"
    assert drop[-8:] == bytes.fromhex("00000000" "01020304")
    batch = nq.verdict_message(5, 10, nq.NF_ACCEPT, batch=True)
    assert batch[4:6] == b"\x03\x03" and len(batch) == 32     # NFQNL_MSG_VERDICT_BATCH


@little_endian
def test_config_bind_bytes_exact():
    assert nq.config_bind(4200, seq=1) == bytes.fromhex(
        "1c000000" "0203" "0500" "01000000" "00000000"     # len 28, NFQNL_MSG_CONFIG, REQUEST|ACK, seq 1
        "00" "00" "1068"
        "0800" "0100" "01" "00" "0002")                    # NFQA_CFG_CMD: BIND, pad, pf AF_INET big-endian
    unbind = nq.config_bind(7, seq=3, command=nq.NFQNL_CFG_CMD_UNBIND)
    assert unbind[-4:] == b"\x02\x00\x00\x02" and unbind[18:20] == b"\x00\x07"


def test_config_params_attributes():
    msg = nq.config_params(4201, seq=2, maxlen=10000, flags=nq.NFQA_CFG_F_FAIL_OPEN | nq.NFQA_CFG_F_GSO)
    length, mtype, flags, seq, pid = struct.unpack_from("=IHHII", msg)
    assert (length, mtype, flags, seq, pid) == (len(msg), 0x0302, nq.NLM_F_REQUEST | nq.NLM_F_ACK, 2, 0)
    assert struct.unpack_from(">BBH", msg, 16) == (0, 0, 4201)
    assert len(msg) % 4 == 0
    # NFQA_CFG_PARAMS is a packed 5-byte struct: nla_len 9, padded to 12
    assert struct.unpack_from("=HH", msg, 20) == (9, nq.NFQA_CFG_PARAMS) and msg[29:32] == b"\0\0\0"
    attrs = nq.parse_attrs(msg, 20, len(msg))
    assert attrs == {nq.NFQA_CFG_PARAMS: struct.pack(">IB", 0, nq.NFQNL_COPY_META),
                     nq.NFQA_CFG_QUEUE_MAXLEN: struct.pack(">I", 10000),
                     nq.NFQA_CFG_MASK: struct.pack(">I", 5), nq.NFQA_CFG_FLAGS: struct.pack(">I", 5)}
    assert set(nq.parse_attrs(nq.config_params(1), 20, 32)) == {nq.NFQA_CFG_PARAMS}


def test_nla_pads_to_four_bytes():
    assert nq.nla(7, b"abc") == struct.pack("=HH", 7, 7) + b"abc" + b"\0"
    assert nq.nla(7, b"abcd") == struct.pack("=HH", 8, 7) + b"abcd"
    assert nq.nla(7, b"") == struct.pack("=HH", 4, 7)


def test_parse_packet_messages_built_by_hand():
    payload = struct.pack("=HH", 4 + 5, nq.NFQA_PAYLOAD) + b"\x45abcd" + b"\0\0\0"
    data = packet_message(4200, 41) + packet_message(4200, 42, extra=payload) + ack_message(2, -16) + ack_message(3)
    msgs = nq.parse_messages(data)
    assert [m[:3] for m in msgs] == [("packet", 4200, 41), ("packet", 4200, 42),
                                     ("error", errno.EBUSY, 2), ("error", 0, 3)]
    attrs = msgs[0][3]
    assert attrs[nq.NFQA_PACKET_HDR] == struct.pack(">IHB", 41, 0x0800, 3)
    assert 11 in attrs                                   # NLA_F_NESTED masked off the type
    assert struct.unpack(">I", attrs[6]) == (17,)
    assert msgs[1][3][nq.NFQA_PAYLOAD] == b"\x45abcd"


def test_parse_ignores_truncated_and_unknown_messages():
    whole = packet_message(1, 5)
    assert nq.parse_messages(whole[:-3]) == []           # nlmsg_len beyond the datagram
    assert nq.parse_messages(whole + b"\x01\x02") == nq.parse_messages(whole)
    done = struct.pack("=IHHII", 16, nq.NLMSG_DONE, 0, 8, 0)
    assert nq.parse_messages(done + whole)[0] == ("other", nq.NLMSG_DONE, 8)
    no_hdr = struct.pack("=IHHII", 20, 0x0300, 0, 0, 0) + struct.pack(">BBH", 2, 0, 1)
    assert nq.parse_messages(no_hdr) == []               # a packet message without NFQA_PACKET_HDR
    assert nq.parse_messages(b"") == []


# -- the schedule, on a fake clock ---------------------------------------------------

def test_delay_releases_in_arrival_order_when_due():
    s = nq.Schedule(delay_ms=100)
    for i in range(5):
        assert s.admit(i + 1, now=i * 0.010) is None
    assert len(s) == 5 and s.next_release() == pytest.approx(0.100)
    assert s.due(0.0999) == []
    assert s.due(0.100) == [1]
    assert s.due(0.125) == [2, 3]
    assert s.next_release() == pytest.approx(0.130)
    assert s.due(10.0) == [4, 5] and s.next_release() is None
    assert s.counts == {"packets": 5, "accepted": 5, "dropped": 0, "delayed": 5, "max_held": 5}


def test_jitter_bounds_reorders_and_is_seeded():
    def release_times(seed):
        s = nq.Schedule(delay_ms=100, jitter_ms=50, rng=random.Random(seed))
        for i in range(200):
            s.admit(i, now=i * 0.001)                   # 1 ms apart: a jitter of 50 ms reorders
        out, t = [], 0.0
        while s.next_release() is not None:
            t = s.next_release()
            out += [(pid, t) for pid in s.due(t)]
        return out
    a = release_times(3)
    assert a == release_times(3) and a != release_times(4)
    for pid, t in a:
        assert pid * 0.001 + 0.050 - 1e-9 <= t <= pid * 0.001 + 0.150 + 1e-9
    order = [pid for pid, _t in a]
    assert sorted(order) == list(range(200)) and order != list(range(200))
    delays = [t - pid * 0.001 for pid, t in a]
    assert min(delays) < 0.060 and max(delays) > 0.140


def test_jitter_larger_than_delay_releases_some_at_once():
    s = nq.Schedule(delay_ms=10, jitter_ms=50, rng=random.Random(1))
    verdicts = [s.admit(i, 0.0) for i in range(100)]
    assert 10 < verdicts.count(nq.NF_ACCEPT) < 90 and nq.NF_DROP not in verdicts
    assert len(s) == verdicts.count(None)
    assert all(t <= 0.060 for t in [s.next_release()])


def test_loss_is_seeded_and_about_the_asked_share():
    def run(seed):
        s = nq.Schedule(delay_ms=20, loss_pct=20, rng=random.Random(seed))
        return [s.admit(i, 0.0) for i in range(5000)], s
    v, s = run(7)
    assert v == run(7)[0]
    drops = v.count(nq.NF_DROP)
    assert 900 < drops < 1100 and s.counts["dropped"] == drops
    assert v.count(None) == 5000 - drops == len(s)      # the rest is held for the delay
    assert sorted(s.drain()) == [i for i, x in enumerate(v) if x is None]


def test_loss_only_and_reorder_accept_at_once():
    s = nq.Schedule(loss_pct=50, rng=random.Random(2))
    v = [s.admit(i, 0.0) for i in range(1000)]
    assert set(v) == {nq.NF_DROP, nq.NF_ACCEPT} and len(s) == 0
    r = nq.Schedule(delay_ms=40, reorder_pct=30, rng=random.Random(2))
    v = [r.admit(i, 0.0) for i in range(1000)]
    assert 250 < v.count(nq.NF_ACCEPT) < 350 and v.count(None) == len(r) and nq.NF_DROP not in v
    assert r.next_release() == pytest.approx(0.040)


def test_drain_and_release_upto():
    s = nq.Schedule(delay_ms=100, jitter_ms=90, rng=random.Random(5))
    for i in range(1, 11):
        s.admit(i, 0.0)
    assert sorted(s.release_upto(4)) == [1, 2, 3, 4] and len(s) == 6
    drained = s.drain()
    assert sorted(drained) == [5, 6, 7, 8, 9, 10] and len(s) == 0 and s.drain() == []
    assert s.counts["accepted"] == 10


# -- the loop, with a socket pair as the kernel ---------------------------------------

class FlakySock:
    """A socket that raises ENOBUFS on its ``fail_at``-th receive (a netlink overrun)."""

    def __init__(self, sock, fail_at):
        self.sock, self.fail_at, self.recvs = sock, fail_at, 0

    def fileno(self):
        return self.sock.fileno()

    def send(self, data):
        return self.sock.send(data)

    def recv(self, n, flags=0):
        self.recvs += 1
        if self.recvs == self.fail_at:
            raise OSError(errno.ENOBUFS, "No buffer space available")
        return self.sock.recv(n, flags)

    def close(self):
        self.sock.close()


def verdicts_from(kernel) -> list[tuple[int, int, int]]:
    """Every verdict message waiting on ``kernel``: ``(message type, verdict, id)``."""
    out = []
    kernel.setblocking(False)
    try:
        while True:
            data = kernel.recv(65536)
            mtype = struct.unpack_from("=IHHII", data)[1]
            attrs = nq.parse_attrs(data, 20, len(data))
            if nq.NFQA_VERDICT_HDR in attrs:
                out.append((mtype, *struct.unpack(">II", attrs[nq.NFQA_VERDICT_HDR])))
            else:
                out.append((mtype, -1, -1))
    except BlockingIOError:
        pass
    return out


def start_loop(queue, schedule, sock):
    shaper = nq.Shaper(queue, schedule)
    shaper.sock = sock
    r, w = os.pipe()
    t = threading.Thread(target=shaper.run, args=(r,), daemon=True)
    t.start()
    return shaper, t, w


def test_loop_survives_a_burst_and_answers_each_packet_once():
    kernel, mine = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    kernel.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sched = nq.Schedule(delay_ms=30, jitter_ms=20, loss_pct=10, rng=random.Random(1))
    shaper, t, w = start_loop(9, sched, mine)
    t0 = time.monotonic()
    for i in range(1, 1001):                 # 1000 packets in a few ms
        kernel.send(packet_message(9, i))
    kernel.send(packet_message(8, 5000))     # another queue's: ignored
    deadline = time.monotonic() + 5
    got: list = []
    while len(got) < 1000 and time.monotonic() < deadline:
        time.sleep(0.02)
        got += verdicts_from(kernel)
    os.write(w, b"x")
    t.join(5)
    assert not t.is_alive() and time.monotonic() - t0 < 5
    assert sorted(pid for _m, _v, pid in got) == list(range(1, 1001))
    assert {m for m, _v, _p in got} == {nq.MSG_VERDICT}
    dropped = sum(1 for _m, v, _p in got if v == nq.NF_DROP)
    assert dropped == sched.counts["dropped"] and 50 < dropped < 150
    assert sched.counts["packets"] == 1000 and len(sched) == 0
    shaper.close()


def test_close_accepts_every_held_packet_then_batches_and_unbinds():
    kernel, mine = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    sched = nq.Schedule(delay_ms=60_000)     # held a minute: only the close lets them go
    shaper, t, w = start_loop(3, sched, mine)
    for i in range(1, 51):
        kernel.send(packet_message(3, i))
    deadline = time.monotonic() + 5
    while sched.counts["packets"] < 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert verdicts_from(kernel) == [] and len(sched) == 50
    os.write(w, b"x")
    t.join(5)
    kernel.send(packet_message(3, 51))       # arrived during the shutdown: accepted at once
    shaper.close()
    got = verdicts_from(kernel)
    assert [p for m, v, p in got if m == nq.MSG_VERDICT and v == nq.NF_ACCEPT] == list(range(1, 52))
    assert got[-2] == (nq.MSG_VERDICT_BATCH, nq.NF_ACCEPT, 51)
    assert got[-1][0] == nq.MSG_CONFIG                # the unbind
    assert shaper.sock is None


def test_an_overrun_accepts_everything_up_to_the_next_packet():
    kernel, mine = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    sched = nq.Schedule(delay_ms=60_000)
    flaky = FlakySock(mine, fail_at=10 ** 9)
    shaper, t, w = start_loop(4, sched, flaky)
    for i in (1, 2, 3):
        kernel.send(packet_message(4, i))
    deadline = time.monotonic() + 5
    while sched.counts["packets"] < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    flaky.fail_at = flaky.recvs + 1              # the next read overflows: ids 4..6 "lost"
    kernel.send(packet_message(4, 7))
    while sched.counts["packets"] < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.write(w, b"x")
    t.join(5)
    got = verdicts_from(kernel)
    assert got == [(nq.MSG_VERDICT_BATCH, nq.NF_ACCEPT, 6)]
    assert shaper.stats["overruns"] == 1 and shaper.stats["batch_released"] == 3 and len(sched) == 1
    shaper.close()


def test_the_program_is_standalone_and_documents_no_duplication():
    src = open(nq.__file__).read()
    imports = {ln.split()[1].split(".")[0] for ln in src.splitlines() if ln.startswith(("import ", "from "))}
    assert imports <= {"__future__", "argparse", "errno", "heapq", "json", "os", "random", "select",
                       "signal", "socket", "struct", "sys", "time"}
    assert "Duplication cannot be done" in nq.__doc__
    out = subprocess.run([sys.executable, nq.__file__, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "--queue" in out.stdout and "--jitter-ms" in out.stdout
