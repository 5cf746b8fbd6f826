"""rdma_netlink: the RDMA netlink family's device dump and per-port PORT_GET / STAT_GET,
against replies in the kernel's layout (fixture_rdma), and the batch exchange for real on
NETLINK_ROUTE (this kernel has no NETLINK_RDMA)."""

from __future__ import annotations

import errno
import socket
import struct

import pytest
from fixture_rdma import Device, KernelRdma, Port

from nicwatch.sources import rdma_netlink as nl
from nicwatch.sources.netlink import (
    NETLINK_ROUTE,
    KernelError,
    NetlinkSocket,
    ParseError,
    attribute_index,
    attributes,
    decode_uint,
    nlattr,
    string_attr,
)

MLX5_COUNTERS = {"rx_write_requests": 9912733, "out_of_buffer": 22817, "np_cnp_sent": 184467,
                 "rp_cnp_handled": 210554, "cc_rx_ce_pkts": 1 << 40}


def host() -> KernelRdma:
    return KernelRdma(
        Device(1, "mlx5_0", {1: Port(netdev="enp33s0f0np0", ifindex=4,
                                     counters=dict(MLX5_COUNTERS))}),
        Device(3, "mlx5_1", {1: Port(state=1, phys_state=3, infiniband=True, counters=None)},
               protocol="ib"),
    )


def test_the_device_dump_lists_every_device_with_its_ports() -> None:
    devices = host().devices()
    assert [(d.index, d.name, d.ports, d.protocol) for d in devices] == [
        (1, "mlx5_0", 1, "roce"), (3, "mlx5_1", 1, "ib")]
    assert devices[0].node_guid == 0x0C42A10300654F2E


def test_ports_and_counters_come_in_one_batch_and_one_failure_stays_its_own() -> None:
    kernel = host()
    answers = kernel.read_ports([(1, 1, True), (3, 1, True)])
    first, second = answers
    assert isinstance(first.port, nl.NetlinkPort)
    assert (first.port.device, first.port.state, first.port.phys_state, first.port.netdev,
            first.port.netdev_ifindex) == ("mlx5_0", "ACTIVE", "LinkUp", "enp33s0f0np0", 4)
    assert dict(first.counters) == MLX5_COUNTERS  # a u64 above 2**32 included
    assert isinstance(second.port, nl.NetlinkPort)
    assert (second.port.state, second.port.phys_state, second.port.netdev) == (
        "DOWN", "Disabled", None)
    assert isinstance(second.counters, KernelError) and second.counters.errno == errno.EINVAL
    assert kernel.requests_seen == [(nl.RDMA_NLDEV_CMD_PORT_GET, 1, 1),
                                    (nl.RDMA_NLDEV_CMD_STAT_GET, 1, 1),
                                    (nl.RDMA_NLDEV_CMD_PORT_GET, 3, 1),
                                    (nl.RDMA_NLDEV_CMD_STAT_GET, 3, 1)]


def test_counters_not_wanted_are_not_asked() -> None:
    kernel = host()
    (answer,) = kernel.read_ports([(1, 1, False)])
    assert answer.counters is None
    assert [r[0] for r in kernel.requests_seen] == [nl.RDMA_NLDEV_CMD_PORT_GET]


def test_port_state_names_match_sysfs() -> None:
    # drivers/infiniband/core/sysfs.c state_show / phys_state_to_str
    assert [nl.state_name(i) for i in range(7)] == [
        "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", "UNKNOWN"]
    assert nl.phys_state_name(5) == "LinkUp" and nl.phys_state_name(9) == "<unknown>"


def test_an_entry_without_a_value_is_a_parse_error() -> None:
    entry = nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, b"out_of_buffer\0")
    table = nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, entry)
    reply = nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, table)
    with pytest.raises(ParseError):
        nl.parse_hwcounters(reply)


def _generic_hwcounters(reply: bytes) -> dict[str, int]:
    """The counters by the generic attribute walk, to hold the one-pass parser to."""
    (table,) = [(s, e) for t, s, e in attributes(reply, 0, len(reply))
                if t == nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS]
    out = {}
    for _t, s, e in attributes(reply, *table):
        entry = attribute_index(reply, s, e)
        out[string_attr(reply, entry[nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME])] = \
            decode_uint(reply, *entry[nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE])
    return out


def test_the_one_pass_counter_parser_agrees_with_the_attribute_walk() -> None:
    """On the kernel's layout (PAD before the u64 where needed, NLA_F_NESTED on the
    nests); an attribute inside the table that runs past its container, trailing bytes and
    an integer of no netlink width are ParseErrors, never a wrong value."""
    kernel = host()
    reply = kernel.stat_info(kernel.devices_table[0], 1)
    assert nl.parse_hwcounters(reply) == _generic_hwcounters(reply) == MLX5_COUNTERS
    (start, end) = next((s, e) for t, s, e in attributes(reply, 0, len(reply))
                        if t == nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)
    headers = [start]  # every attribute header inside the table, entries and their parts
    for _t, s, e in attributes(reply, start, end):
        headers += [s - 4, *(a - 4 for _k, a, _b in attributes(reply, s, e))]
    for at in sorted(set(headers)):
        longer = bytearray(reply)
        struct.pack_into("=H", longer, at, 0xFFF0)  # runs past its container
        with pytest.raises(ParseError):
            nl.parse_hwcounters(bytes(longer))
        struct.pack_into("=H", longer, at, 2)  # shorter than its header
        with pytest.raises(ParseError):
            nl.parse_hwcounters(bytes(longer))
    table = reply[start:end]
    for tail in (b"\0\0", nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)[:2]):
        with pytest.raises(ParseError):
            nl.parse_hwcounters(nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, table + tail))
    bad_width = nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, nlattr(
        nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
        nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, b"x\0")
        + nlattr(nl.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, b"\1\2\3")))
    with pytest.raises(ParseError):
        nl.parse_hwcounters(bad_width)


def test_a_port_reply_without_its_handle_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        nl.parse_port(nlattr(nl.RDMA_NLDEV_ATTR_PORT_INDEX, struct.pack("=I", 1)))


def test_this_kernel_without_ib_core_refuses_the_family() -> None:
    """The daemon's fallback case, for real: no RDMA netlink, EPROTONOSUPPORT at open."""
    try:
        sock = nl.RdmaNetlink()
    except OSError as e:
        assert e.errno == errno.EPROTONOSUPPORT
    else:  # a kernel with ib_core: the device dump must at least work
        with sock:
            assert isinstance(sock.devices(), list)


def test_a_batch_of_plain_requests_for_real() -> None:
    """NetlinkSocket.requests on a real kernel (rtnetlink RTM_GETLINK doits): the requests
    go out in one datagram, each answer is matched by sequence number, and a request the
    kernel refuses (no such ifindex) does not fail the other."""
    ifinfo = struct.Struct("=BxHiII")
    with NetlinkSocket(NETLINK_ROUTE) as sock:
        lo = socket.if_nametoindex("lo")
        answers = sock.requests([(18, ifinfo.pack(0, 0, lo, 0, 0)),
                                 (18, ifinfo.pack(0, 0, 0x7FFFFFF0, 0, 0)),
                                 (18, ifinfo.pack(0, 0, lo, 0, 0))])
    assert len(answers) == 3
    assert isinstance(answers[0], list) and len(answers[0]) == 1
    assert isinstance(answers[1], KernelError) and answers[1].errno == errno.ENODEV
    assert isinstance(answers[2], list) and answers[2][0][4:8] == answers[0][0][4:8]
