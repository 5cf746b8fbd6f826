"""The RDMA netlink family (``NETLINK_RDMA``, client ``RDMA_NL_NLDEV``): every RDMA port with
its state and netdev from one ``RDMA_NLDEV_CMD_PORT_GET`` dump, and each port's hardware
counters from ``RDMA_NLDEV_CMD_STAT_GET``, sent for all ports in one datagram.

Layouts: ``include/uapi/rdma/rdma_netlink.h`` (message type ``RDMA_NL_GET_TYPE(client, op)``
= ``client << 10 | op``; no family header: the attributes follow the ``nlmsghdr``), filled
by ``drivers/infiniband/core/nldev.c``:

* ``nldev_get_dumpit`` -> ``fill_dev_info``: ``DEV_INDEX``, ``DEV_NAME``, ``PORT_INDEX``
  (here the number of the last port), ``NODE_GUID`` u64, ``DEV_PROTOCOL`` string, ...
* ``nldev_port_get_doit`` -> ``fill_port_info``: ``DEV_INDEX`` u32, ``DEV_NAME`` string,
  ``PORT_INDEX`` u32, for InfiniBand ports also ``CAP_FLAGS``, ``SUBNET_PREFIX``, ``LID``,
  ``SM_LID``, ``LMC``; then ``PORT_STATE`` u8 and ``PORT_PHYS_STATE`` u8 (``enum
  ib_port_state``, ``enum ib_port_phys_state``), and ``NDEV_INDEX`` u32 / ``NDEV_NAME``
  string when the port has a netdev in the caller's network namespace (RoCE, iWARP).
* ``nldev_stat_get_doit`` without ``STAT_RES`` -> ``stat_get_doit_default_counter``: the
  handle, ``PORT_INDEX``, then the ``STAT_HWCOUNTERS`` nest of ``STAT_HWCOUNTER_ENTRY``
  nests, each ``ENTRY_NAME`` string and ``ENTRY_VALUE`` u64: every counter the driver's
  ``get_hw_stats`` filled that is not disabled, the optional counters an operator enabled
  (``rdma statistic set ... optional-counters``; sysfs ``hw_counters/`` never shows those)
  included, each the port's value plus what counters bound to QPs hold
  (``rdma_counter_get_hwstat_value``), as sysfs shows it. The driver's ``get_hw_stats``
  failing fails the whole request with EINVAL.

``RDMA_NLDEV_CMD_STAT_GET`` as a *dump* needs ``STAT_RES`` (QP or MR counters) and answers
EINVAL without it (``nldev_stat_get_dumpit``): the port counters are only had one port per
request, so the requests go out together and the replies are matched by sequence number.
Nothing here sends a ``SET`` command: nicwatch never changes counter configuration.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from types import MappingProxyType

from nicwatch.sources.netlink import (
    NLA_HDR,
    NLA_TYPE_MASK,
    NLM_F_DUMP,
    KernelError,
    NetlinkSocket,
    ParseError,
    Span,
    attribute_index,
    attributes,
    decode_uint,
    nlattr,
    string_attr,
)

NETLINK_RDMA = 20  # include/uapi/linux/netlink.h
RDMA_NL_NLDEV = 5

# enum rdma_nldev_command
RDMA_NLDEV_CMD_GET = 1
RDMA_NLDEV_CMD_PORT_GET = 5
RDMA_NLDEV_CMD_STAT_GET = 17

# enum rdma_nldev_attr ("don't change the order or add anything between, this is ABI!")
RDMA_NLDEV_ATTR_DEV_INDEX = 1
RDMA_NLDEV_ATTR_DEV_NAME = 2
RDMA_NLDEV_ATTR_PORT_INDEX = 3
RDMA_NLDEV_ATTR_CAP_FLAGS = 4
RDMA_NLDEV_ATTR_FW_VERSION = 5
RDMA_NLDEV_ATTR_NODE_GUID = 6
RDMA_NLDEV_ATTR_LID = 9
RDMA_NLDEV_ATTR_PORT_STATE = 12
RDMA_NLDEV_ATTR_PORT_PHYS_STATE = 13
RDMA_NLDEV_ATTR_NDEV_INDEX = 50
RDMA_NLDEV_ATTR_NDEV_NAME = 51
RDMA_NLDEV_ATTR_DEV_PROTOCOL = 67
RDMA_NLDEV_ATTR_STAT_HWCOUNTERS = 80
RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY = 81
RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME = 82
RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE = 83

# enum ib_port_state and enum ib_port_phys_state (include/rdma/ib_verbs.h), named as
# drivers/infiniband/core/sysfs.c state_show() and phys_state_to_str() print them, so a
# port reads the same from netlink as from sysfs.
PORT_STATES = ("NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER")
PHYS_STATES = ("<unknown>", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
               "LinkUp", "LinkErrorRecovery", "Phy Test")

_U32 = struct.Struct("=I")
_U64 = struct.Struct("=Q")  # ENTRY_VALUE: nla_put_u64_64bit


def nldev_type(op: int) -> int:
    """``RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op)``."""
    return (RDMA_NL_NLDEV << 10) + op


@dataclass(frozen=True, slots=True)
class NetlinkPort:
    """One port as ``RDMA_NLDEV_CMD_PORT_GET`` describes it."""

    dev_index: int
    device: str
    port: int
    state: str | None
    phys_state: str | None
    netdev: str | None
    netdev_ifindex: int | None


def state_name(value: int | None) -> str | None:
    if value is None:
        return None
    return PORT_STATES[value] if value < len(PORT_STATES) else "UNKNOWN"


def phys_state_name(value: int | None) -> str | None:
    if value is None:
        return None
    return PHYS_STATES[value] if value < len(PHYS_STATES) else "<unknown>"


def parse_port(reply: bytes) -> NetlinkPort:
    """One ``PORT_GET`` reply; ParseError without the device index, name and port."""
    index = attribute_index(reply, 0, len(reply))
    dev = index.get(RDMA_NLDEV_ATTR_DEV_INDEX)
    name = index.get(RDMA_NLDEV_ATTR_DEV_NAME)
    port = index.get(RDMA_NLDEV_ATTR_PORT_INDEX)
    if dev is None or name is None or port is None:
        raise ParseError("RDMA port reply without DEV_INDEX, DEV_NAME and PORT_INDEX")
    state = index.get(RDMA_NLDEV_ATTR_PORT_STATE)
    phys = index.get(RDMA_NLDEV_ATTR_PORT_PHYS_STATE)
    ndev = index.get(RDMA_NLDEV_ATTR_NDEV_NAME)
    ndev_index = index.get(RDMA_NLDEV_ATTR_NDEV_INDEX)
    return NetlinkPort(
        dev_index=decode_uint(reply, *dev),
        device=string_attr(reply, name),
        port=decode_uint(reply, *port),
        state=state_name(None if state is None else decode_uint(reply, *state)),
        phys_state=phys_state_name(None if phys is None else decode_uint(reply, *phys)),
        netdev=None if ndev is None else string_attr(reply, ndev) or None,
        netdev_ifindex=None if ndev_index is None else decode_uint(reply, *ndev_index),
    )


def parse_hwcounters(reply: bytes) -> dict[str, int]:
    """The counters of one ``STAT_GET`` reply by name, in the reply's order; an empty
    mapping when the reply has no ``STAT_HWCOUNTERS`` nest. One pass with the attribute
    headers unpacked inline (the generic :func:`attributes` walk costs a generator step per
    attribute, and a port has 30-100 entries of three attributes each); the same checks:
    an attribute running past its container, an integer of a width netlink does not use or
    an entry without a name and a value is a ParseError."""
    table: Span | None = None
    for attr_type, start, end in attributes(reply, 0, len(reply)):
        if attr_type == RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
            table = (start, end)
    counters: dict[str, int] = {}
    if table is None:
        return counters
    unpack = NLA_HDR.unpack_from
    pos, end = table
    while pos < end:
        if end - pos < 4:
            raise ParseError(f"{end - pos} trailing bytes after the last attribute")
        length, kind = unpack(reply, pos)
        if length < 4 or pos + length > end:
            raise ParseError(f"attribute {kind & NLA_TYPE_MASK} of length {length} does not "
                             f"fit its {end - pos} bytes")
        if kind & NLA_TYPE_MASK == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY:
            name: str | None = None
            value: int | None = None
            at, stop = pos + 4, pos + length
            while at < stop:
                if stop - at < 4:
                    raise ParseError(f"{stop - at} trailing bytes after the last attribute")
                size, inner = unpack(reply, at)
                if size < 4 or at + size > stop:
                    raise ParseError(f"attribute {inner & NLA_TYPE_MASK} of length {size} "
                                     f"does not fit its {stop - at} bytes")
                inner &= NLA_TYPE_MASK
                if inner == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME:
                    name = reply[at + 4:at + size].rstrip(b"\0").decode("utf-8", "replace")
                elif inner == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE:
                    value = (_U64.unpack_from(reply, at + 4)[0] if size == 12
                             else decode_uint(reply, at + 4, at + size))
                at += (size + 3) & ~3
            if name is None or value is None:
                raise ParseError("RDMA counter entry without a name and a value")
            counters[name] = value
        pos += (length + 3) & ~3
    return counters


@dataclass(frozen=True, slots=True)
class NetlinkDevice:
    """One RDMA device as ``RDMA_NLDEV_CMD_GET`` describes it (``fill_dev_info``: static
    attributes only, no driver query but the firmware version string). ``ports``: the last
    port number (``rdma_end_port``); ports are numbered from 1 (0 only on a switch)."""

    index: int
    name: str
    ports: int
    node_guid: int | None
    protocol: str | None  # "ib", "roce", "iw", "opa", "usnic"


def parse_device(reply: bytes) -> NetlinkDevice:
    index = attribute_index(reply, 0, len(reply))
    dev = index.get(RDMA_NLDEV_ATTR_DEV_INDEX)
    name = index.get(RDMA_NLDEV_ATTR_DEV_NAME)
    ports = index.get(RDMA_NLDEV_ATTR_PORT_INDEX)
    if dev is None or name is None or ports is None:
        raise ParseError("RDMA device reply without DEV_INDEX, DEV_NAME and PORT_INDEX")
    guid = index.get(RDMA_NLDEV_ATTR_NODE_GUID)
    protocol = index.get(RDMA_NLDEV_ATTR_DEV_PROTOCOL)
    return NetlinkDevice(decode_uint(reply, *dev), string_attr(reply, name),
                         decode_uint(reply, *ports),
                         None if guid is None else decode_uint(reply, *guid),
                         None if protocol is None else string_attr(reply, protocol))


@dataclass(frozen=True, slots=True)
class PortAnswer:
    """What one poll's requests for one port got: its ``PORT_GET`` description (or the
    error) and its counters (or the error)."""

    port: NetlinkPort | KernelError
    counters: MappingProxyType[str, int] | KernelError | None  # None: not asked


class RdmaNetlink(NetlinkSocket):
    """A ``NETLINK_RDMA`` socket, reused across polls. Raises OSError at open on a kernel
    without the RDMA netlink family (EPROTONOSUPPORT: no ``ib_core``)."""

    def __init__(self) -> None:
        super().__init__(NETLINK_RDMA)

    def devices(self) -> list[NetlinkDevice]:
        """Every RDMA device of this network namespace (one ``CMD_GET`` dump)."""
        return [parse_device(reply)
                for reply in self.request(nldev_type(RDMA_NLDEV_CMD_GET), NLM_F_DUMP, b"")]

    def read_ports(self, ports: list[tuple[int, int, bool]]) -> list[PortAnswer]:
        """For each (device index, port, counters wanted): ``PORT_GET`` and, when wanted,
        ``STAT_GET``, all in one datagram (``nldev_port_get_dumpit`` needs a device index
        and dumps cannot be batched, so each port is asked with a plain request)."""
        requests: list[tuple[int, bytes]] = []
        for dev, port, counters in ports:
            body = handle_body(dev, port)
            requests.append((nldev_type(RDMA_NLDEV_CMD_PORT_GET), body))
            if counters:
                requests.append((nldev_type(RDMA_NLDEV_CMD_STAT_GET), body))
        answers = iter(self.requests(requests)) if requests else iter(())
        out: list[PortAnswer] = []
        for _dev, _port, counters in ports:
            described = _one(next(answers), "PORT_GET")
            about = described if isinstance(described, KernelError) else parse_port(described)
            stats: MappingProxyType[str, int] | KernelError | None = None
            if counters:
                got = _one(next(answers), "STAT_GET")
                stats = got if isinstance(got, KernelError) else MappingProxyType(
                    parse_hwcounters(got))
            out.append(PortAnswer(about, stats))
        return out


# A pure memo of a bounded key (docs/architecture.md, Caches).
@functools.lru_cache(maxsize=4096)
def handle_body(dev_index: int, port: int) -> bytes:
    """``DEV_INDEX`` and ``PORT_INDEX``: what ``nldev_port_get_doit`` and
    ``stat_get_doit_default_counter`` both need."""
    return (nlattr(RDMA_NLDEV_ATTR_DEV_INDEX, _U32.pack(dev_index))
            + nlattr(RDMA_NLDEV_ATTR_PORT_INDEX, _U32.pack(port)))


def _one(answer: list[bytes] | KernelError, what: str) -> bytes | KernelError:
    if isinstance(answer, KernelError):
        return answer
    if len(answer) != 1:
        raise ParseError(f"{len(answer)} replies to one RDMA {what} request")
    return answer[0]
