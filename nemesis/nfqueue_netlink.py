"""The netlink messages of an nfnetlink_queue, standard library only: the constants of
linux/netlink.h, linux/netfilter/nfnetlink.h and linux/netfilter/nfnetlink_queue.h, the
encoders of the config and verdict messages and the decoder of what the kernel sends.

The packet shaper (:mod:`nemesis.nfqueue_shaper`) speaks them; like it, this module runs
inside the node containers (Debian's python3), copied beside it
(:data:`nemesis.packet.NETLINK_PATH`), so it imports nothing but the standard library.
Headers are host-endian (nlmsghdr, nlattr); the nfnetlink parts big-endian.
"""
from __future__ import annotations

import socket
import struct

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
