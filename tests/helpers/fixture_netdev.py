"""The kernel's side of the netdev generic netlink family, for queue, NAPI and qstats layouts
veth cannot give (this kernel's veth has no qstats, no queue -> NAPI links and no NAPI irq).

Replies are built byte for byte from Documentation/netlink/specs/netdev.yaml and
net/core/netdev-genl.c (6.18): a dump's messages carry no NLM_F_MULTI (genlmsg_iput puts no
flags), the NLMSG_DONE does; u32 attributes are 4 bytes, ``uint`` ones (qstats, NAPI
gro-flush-timeout) 4 bytes when the value fits and 8 otherwise (nla_put_uint); a queue reply
has id, type, napi-id (when linked) and ifindex; a NAPI reply id, ifindex, irq (when set),
pid (threaded) and the IRQ-deferral settings; a qstats reply ifindex (and queue-type,
queue-id per queue) and only the statistics the driver filled (netdev_stat_put skips the
NETDEV_STAT_NOT_SET ones). They are read through the real reply path (split_replies).
"""

from __future__ import annotations

import errno
import struct
from dataclasses import dataclass, field

from nicwatch.model import QSTATS
from nicwatch.sources import netdev_genl as ng
from nicwatch.sources.netlink import (
    GENLMSGHDR,
    NLM_F_DUMP,
    NLM_F_MULTI,
    NLMSG_DONE,
    NLMSG_ERROR,
    NLMSGHDR,
    attribute_index,
    decode_uint,
    nlattr,
    split_replies,
)

FAMILY_ID = 0x1A
NUMBERS = {name: attr for attr, name in QSTATS.items()}


def u32(attr: int, value: int) -> bytes:
    return nlattr(attr, struct.pack("=I", value))


def uint(attr: int, value: int) -> bytes:
    return nlattr(attr, struct.pack("=I" if value < 1 << 32 else "=Q", value))


@dataclass
class Device:
    """One netdev as the family sees it. ``queues``: (kind, id, napi id or None);
    ``napis``: (id, irq or None, pid or None); ``queue_stats``: (kind, id) -> statistics;
    ``base``: what the driver keeps for queues gone since (added to the device scope)."""

    ifindex: int
    name: str = ""
    up: bool = True
    queues: list[tuple[str, int, int | None]] = field(default_factory=list)
    napis: list[tuple[int, int | None, int | None]] = field(default_factory=list)
    queue_stats: dict[tuple[str, int], dict[str, int]] | None = None
    base: dict[str, int] = field(default_factory=dict)


def queue_message(d: Device, kind: str, qid: int, napi: int | None) -> bytes:
    body = u32(ng.A_QUEUE_ID, qid) + u32(ng.A_QUEUE_TYPE, 0 if kind == "rx" else 1)
    if napi is not None:
        body += u32(ng.A_QUEUE_NAPI_ID, napi)
    return body + u32(ng.A_QUEUE_IFINDEX, d.ifindex)


def napi_message(d: Device, nid: int, irq: int | None, pid: int | None) -> bytes:
    body = u32(ng.A_NAPI_ID, nid) + u32(ng.A_NAPI_IFINDEX, d.ifindex)
    if irq is not None:
        body += u32(ng.A_NAPI_IRQ, irq)
    if pid is not None:
        body += u32(ng.A_NAPI_PID, pid)
    # defer-hard-irqs (5), gro-flush-timeout (6), irq-suspend-timeout (7): the defaults
    return body + u32(5, 0) + uint(6, 0) + uint(7, 0)


def stats_body(stats: dict[str, int]) -> bytes:
    return b"".join(uint(NUMBERS[name], value) for name, value in
                    sorted(stats.items(), key=lambda kv: NUMBERS[kv[0]]))


class KernelNetdev(ng.NetdevGenl):
    """NetdevGenl whose socket is the kernel: each dump request is checked (family, DUMP
    flags, command) and answered in the kernel's layout. ``commands``: those this kernel
    knows (6.8: no qstats; 6.3: neither queues nor NAPIs)."""

    def __init__(self, devices: list[Device], commands: tuple[int, ...] = (10, 11, 12)) -> None:
        self._seq, self._family = 0, FAMILY_ID  # no socket
        self.unsupported: set[int] = set()
        self.devices = devices
        self.commands = commands
        self.requests: list[tuple[int, int | None]] = []  # (command, scope)
        self.closed = False

    def _exchange(self, data: bytes, seq: int) -> list[bytes]:
        _len, family, flags, msg_seq, _pid = NLMSGHDR.unpack_from(data)
        assert family == FAMILY_ID and flags & NLM_F_DUMP == NLM_F_DUMP and msg_seq == seq
        cmd = data[NLMSGHDR.size]
        attrs = data[NLMSGHDR.size + GENLMSGHDR.size:]
        index = attribute_index(attrs, 0, len(attrs))
        scope = decode_uint(attrs, *index[ng.A_QSTATS_SCOPE]) if ng.A_QSTATS_SCOPE in index \
            else None
        self.requests.append((cmd, scope))
        if cmd not in self.commands:  # genl_family_rcv_msg: no such op
            out = NLMSGHDR.pack(NLMSGHDR.size + 4 + len(data), NLMSG_ERROR, 0, seq, 0)
            out += struct.pack("=i", -errno.EOPNOTSUPP) + data
            split_replies(out, seq, GENLMSGHDR.size, strip=True, dump=True)
            raise AssertionError("split_replies must raise")
        payloads = []
        for d in self.devices:
            if cmd == ng.CMD_QUEUE_GET and d.up:
                ordered = [q for q in d.queues if q[0] == "rx"] + \
                          [q for q in d.queues if q[0] == "tx"]
                payloads += [queue_message(d, *q) for q in ordered]
            elif cmd == ng.CMD_NAPI_GET:
                payloads += [napi_message(d, *n) for n in d.napis]
            elif cmd == ng.CMD_QSTATS_GET and d.queue_stats is not None:
                if scope == ng.QSTATS_SCOPE_QUEUE:
                    for (kind, qid), stats in sorted(d.queue_stats.items()):
                        payloads.append(u32(ng.A_QSTATS_IFINDEX, d.ifindex)
                                        + u32(ng.A_QSTATS_QUEUE_TYPE, 0 if kind == "rx" else 1)
                                        + u32(ng.A_QSTATS_QUEUE_ID, qid) + stats_body(stats))
                else:
                    total = dict(d.base)
                    for stats in d.queue_stats.values():
                        for name, value in stats.items():
                            total[name] = total.get(name, 0) + value
                    payloads.append(u32(ng.A_QSTATS_IFINDEX, d.ifindex) + stats_body(total))
        out = bytearray()
        for body in payloads:
            msg = GENLMSGHDR.pack(cmd, 1, 0) + body
            out += NLMSGHDR.pack(NLMSGHDR.size + len(msg), FAMILY_ID, 0, seq, 0) + msg
            out += bytes(-len(out) % 4)
        out += NLMSGHDR.pack(NLMSGHDR.size + 4, NLMSG_DONE, NLM_F_MULTI, seq, 0) + bytes(4)
        replies, done = split_replies(bytes(out), seq, GENLMSGHDR.size, strip=True, dump=True)
        assert done
        return replies

    def interface_name(self, ifindex: int) -> str | None:
        return next((d.name for d in self.devices if d.ifindex == ifindex), None)

    def close(self) -> None:
        self.closed = True


def mlx5_device(ifindex: int, channels: int, first_irq: int, first_napi: int = 8192,
                rx_packets: list[int] | None = None, name: str = "ens1f0np0") -> Device:
    """A ConnectX port on 6.10+: queue -> NAPI -> irq linked (en_main.c
    mlx5e_open_channel: netif_napi_set_irq, netif_queue_set_napi) and qstats per queue as
    mlx5e_get_queue_stats_rx/tx fill them (rx packets, bytes, alloc-fail; tx packets,
    bytes, stop, wake). Channel i's completion vector is irq ``first_irq + 1 + i`` (after
    the async vector), as in fixture_rxpath.mlx5_nic."""
    packets = rx_packets or [0] * channels
    d = Device(ifindex, name, queue_stats={})
    for ch in range(channels):
        napi = first_napi + ch
        d.queues += [("rx", ch, napi), ("tx", ch, napi)]
        d.napis.append((napi, first_irq + 1 + ch, None))
        assert d.queue_stats is not None
        d.queue_stats[("rx", ch)] = {"rx-packets": packets[ch], "rx-bytes": packets[ch] * 1500,
                                     "rx-alloc-fail": 0}
        d.queue_stats[("tx", ch)] = {"tx-packets": 10 * ch, "tx-bytes": 1000 * ch,
                                     "tx-stop": 0, "tx-wake": 0}
    d.base = {"rx-packets": 0, "rx-bytes": 0, "rx-alloc-fail": 3, "tx-packets": 0,
              "tx-bytes": 0, "tx-stop": 1, "tx-wake": 1}
    return d
