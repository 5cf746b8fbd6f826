"""The kernel's side of the RDMA netlink family, for hosts without RDMA (this one has no
ib_core): requests are checked and answered with messages in the layout of
include/uapi/rdma/rdma_netlink.h, as drivers/infiniband/core/nldev.c fills them, encoded with
the project's netlink encoder (nicwatch.sources.netlink.nlattr / message) and read back
through the real reply path (split_replies, split_batch, the decoders).

* CMD_GET dump (nldev_get_dumpit -> fill_dev_info): DEV_INDEX u32, DEV_NAME, PORT_INDEX u32
  (the last port), CAP_FLAGS u64, FW_VERSION, NODE_GUID u64, SYS_IMAGE_GUID u64,
  DEV_NODE_TYPE u8, DEV_PROTOCOL; u64s with the zero-length PAD before them where the payload
  would not be 8-byte aligned, as nla_put_u64_64bit does;
* PORT_GET doit (nldev_port_get_doit -> fill_port_info): the handle, PORT_INDEX, for
  InfiniBand CAP_FLAGS, SUBNET_PREFIX, LID, SM_LID, LMC; PORT_STATE u8, PORT_PHYS_STATE u8,
  NDEV_INDEX / NDEV_NAME for a port with a netdev. The kernel answers it with the message
  type of CMD_GET (nlmsg_put(..., RDMA_NLDEV_CMD_GET)), as here;
* STAT_GET doit (stat_get_doit_default_counter): the handle, PORT_INDEX, the STAT_HWCOUNTERS
  nest (NLA_F_NESTED) of ENTRY nests with ENTRY_NAME and ENTRY_VALUE (u64, PAD-aligned). A
  port whose driver fails get_hw_stats gets NLMSG_ERROR -EINVAL, whatever the driver's errno.
"""

from __future__ import annotations

import errno
import struct
from dataclasses import dataclass, field

from nicwatch.sources import rdma_netlink as nl
from nicwatch.sources.netlink import (
    NLA_F_NESTED,
    NLM_F_DUMP,
    NLM_F_MULTI,
    NLMSG_DONE,
    NLMSG_ERROR,
    NLMSGHDR,
    KernelError,
    attribute_index,
    decode_uint,
    message,
    nlattr,
    split_batch,
    split_replies,
)

PAD = 0  # RDMA_NLDEV_ATTR_PAD


@dataclass
class Port:
    state: int = 4  # IB_PORT_ACTIVE
    phys_state: int = 5  # LinkUp
    netdev: str | None = None
    ifindex: int | None = None
    infiniband: bool = False
    counters: dict[str, int] | None = field(default_factory=dict)  # None: get_hw_stats fails
    port_error: int | None = None  # errno of ib_query_port failing (PORT_GET)


@dataclass
class Device:
    index: int
    name: str
    ports: dict[int, Port]
    protocol: str = "roce"
    node_guid: int = 0x0C42A10300654F2E


class _Message:
    """Attributes appended as nla_put_* would, tracking 8-byte alignment for u64s."""

    def __init__(self) -> None:
        self.out = bytearray()

    def put(self, kind: int, payload: bytes) -> None:
        self.out += nlattr(kind, payload)

    def u8(self, kind: int, value: int) -> None:
        self.put(kind, struct.pack("=B", value))

    def u32(self, kind: int, value: int) -> None:
        self.put(kind, struct.pack("=I", value))

    def u64(self, kind: int, value: int) -> None:
        # nla_put_u64_64bit: a zero-length PAD first when the payload (after the 16-byte
        # nlmsghdr and the 4-byte nlattr header) would not be 8-byte aligned
        if (NLMSGHDR.size + len(self.out) + 4) % 8:
            self.put(PAD, b"")
        self.put(kind, struct.pack("=Q", value))

    def string(self, kind: int, value: str) -> None:
        self.put(kind, value.encode() + b"\0")

    def nest(self, kind: int, inner: _Message) -> None:
        self.put(kind | NLA_F_NESTED, bytes(inner.out))


class KernelRdma(nl.RdmaNetlink):
    """RdmaNetlink whose socket is this double (no socket is opened). ``requests`` records
    every request: (command, device index or None, port or None)."""

    def __init__(self, *devices: Device) -> None:
        self._seq = 0
        self.devices_table = list(devices)
        self.requests_seen: list[tuple[int, int | None, int | None]] = []
        self.dump_fails: int | None = None  # errno the device dump answers
        self.closed = False

    def close(self) -> None:
        self.closed = True

    # -- the kernel's replies ----------------------------------------------------------

    def _device(self, index: int) -> Device | None:
        return next((d for d in self.devices_table if d.index == index), None)

    @staticmethod
    def _handle(m: _Message, device: Device) -> None:
        m.u32(nl.RDMA_NLDEV_ATTR_DEV_INDEX, device.index)
        m.string(nl.RDMA_NLDEV_ATTR_DEV_NAME, device.name)

    def dev_info(self, device: Device) -> bytes:
        m = _Message()
        self._handle(m, device)
        m.u32(nl.RDMA_NLDEV_ATTR_PORT_INDEX, max(device.ports))
        m.u64(nl.RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1C)
        m.string(nl.RDMA_NLDEV_ATTR_FW_VERSION, "28.39.1002")
        m.u64(nl.RDMA_NLDEV_ATTR_NODE_GUID, device.node_guid)
        m.u64(7, device.node_guid)  # SYS_IMAGE_GUID
        m.u8(14, 1)  # DEV_NODE_TYPE: RDMA_NODE_IB_CA
        m.string(nl.RDMA_NLDEV_ATTR_DEV_PROTOCOL, device.protocol)
        return bytes(m.out)

    def port_info(self, device: Device, number: int) -> bytes:
        port = device.ports[number]
        m = _Message()
        self._handle(m, device)
        m.u32(nl.RDMA_NLDEV_ATTR_PORT_INDEX, number)
        if port.infiniband:
            m.u64(nl.RDMA_NLDEV_ATTR_CAP_FLAGS, 0x2651E84A)
            m.u64(8, 0xFE80000000000000)  # SUBNET_PREFIX
            m.u32(nl.RDMA_NLDEV_ATTR_LID, 7)
            m.u32(10, 1)  # SM_LID
            m.u8(11, 0)  # LMC
        m.u8(nl.RDMA_NLDEV_ATTR_PORT_STATE, port.state)
        m.u8(nl.RDMA_NLDEV_ATTR_PORT_PHYS_STATE, port.phys_state)
        if port.netdev is not None:
            m.u32(nl.RDMA_NLDEV_ATTR_NDEV_INDEX, port.ifindex or 0)
            m.string(nl.RDMA_NLDEV_ATTR_NDEV_NAME, port.netdev)
        return bytes(m.out)

    def stat_info(self, device: Device, number: int) -> bytes:
        m = _Message()
        self._handle(m, device)
        m.u32(nl.RDMA_NLDEV_ATTR_PORT_INDEX, number)
        table = _Message()
        for name, value in (device.ports[number].counters or {}).items():
            entry = _Message()
            entry.string(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name)
            entry.out += b""
            entry.u64(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value)
            table.nest(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, entry)
        m.nest(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, table)
        return bytes(m.out)

    # -- the socket ----------------------------------------------------------------------

    def _exchange(self, data: bytes, seq: int) -> list[bytes]:
        """The device dump (the one dump nicwatch sends)."""
        _len, msg_type, flags, msg_seq, _pid = NLMSGHDR.unpack_from(data)
        assert msg_type == nl.nldev_type(nl.RDMA_NLDEV_CMD_GET), msg_type
        assert flags & NLM_F_DUMP == NLM_F_DUMP and msg_seq == seq
        self.requests_seen.append((nl.RDMA_NLDEV_CMD_GET, None, None))
        out = bytearray()
        if self.dump_fails is not None:
            out += message(NLMSG_DONE, NLM_F_MULTI, seq, struct.pack("=i", -self.dump_fails))
        else:
            for device in self.devices_table:
                out += message(msg_type, NLM_F_MULTI, seq, self.dev_info(device))
            out += message(NLMSG_DONE, NLM_F_MULTI, seq, struct.pack("=i", 0))
        replies, done = split_replies(bytes(out), seq)
        assert done
        return replies

    def _exchange_batch(self, data: bytes, first: int,
                        count: int) -> dict[int, list[bytes] | KernelError]:
        out = bytearray()
        pos, seen = 0, 0
        while pos < len(data):
            length, msg_type, flags, seq, _pid = NLMSGHDR.unpack_from(data, pos)
            body = data[pos + NLMSGHDR.size:pos + length]
            pos += (length + 3) & ~3
            seen += 1
            assert not flags & NLM_F_DUMP, "a batched request must be plain (no dump)"
            index = attribute_index(body, 0, len(body))
            dev = decode_uint(body, *index[nl.RDMA_NLDEV_ATTR_DEV_INDEX])
            port = decode_uint(body, *index[nl.RDMA_NLDEV_ATTR_PORT_INDEX])
            cmd = msg_type - (nl.RDMA_NL_NLDEV << 10)
            self.requests_seen.append((cmd, dev, port))
            device = self._device(dev)
            if device is None or port not in device.ports:
                out += _error(seq, errno.EINVAL)
            elif cmd == nl.RDMA_NLDEV_CMD_PORT_GET:
                if device.ports[port].port_error is not None:
                    out += _error(seq, device.ports[port].port_error or 0)
                else:  # nldev_port_get_doit answers with the CMD_GET type
                    out += message(nl.nldev_type(nl.RDMA_NLDEV_CMD_GET), 0, seq,
                                   self.port_info(device, port))
            elif cmd == nl.RDMA_NLDEV_CMD_STAT_GET:
                if device.ports[port].counters is None:
                    out += _error(seq, errno.EINVAL)  # get_hw_stats < 0 -> -EINVAL
                else:
                    out += message(msg_type, 0, seq, self.stat_info(device, port))
            else:
                raise AssertionError(f"RDMA command {cmd} is not a read nicwatch sends")
        assert seen == count
        results: dict[int, list[bytes] | KernelError] = {}
        split_batch(bytes(out), first, count, 0, False, {}, results)
        assert len(results) == count
        return results


def _error(seq: int, code: int) -> bytes:
    """NLMSG_ERROR: the error, then the request's header (netlink_ack)."""
    return message(NLMSG_ERROR, 0, seq, struct.pack("=i", -code) + NLMSGHDR.pack(16, 0, 0, seq, 0))
