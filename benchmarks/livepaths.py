"""The simulated ConnectX host read through the paths the daemon takes on a live ``/sys``.

The simulation (nicwatch.demo.simulate) writes its host as a sysfs tree under a temporary
root, and the daemon reads a tree that is not the live ``/sys`` as files: every
``statistics/*`` file of every interface, every RDMA counter file, each opened every poll.
On a live host it does not: one rtnetlink ``RTM_GETLINK`` dump lists the interfaces with
their counters, the RDMA hardware counters come through RDMA netlink (one batch for every
port) and the remaining RDMA files are kept open and re-read with ``pread``. So that the
simulated host costs what such a host costs, its pipeline benchmark reads it through:

* ``ReplayLinks``: the collector's rtnetlink link lister. Each interface's RTM_NEWLINK
  payload is built once, in the kernel's layout, from a real payload of this machine's own
  kernel (the first interface of the benchmark's namespace dump: its attributes, in the
  order ``rtnl_fill_ifinfo()`` emits them) with the simulated interface's name, index, flags,
  address, MTU, operstate, carrier and counters put in; every poll parses every payload with
  nicwatch's own ``parse_link``, as a dump's replies are parsed. The socket's two system
  calls per poll are not in it.
* ``live_rdma``: the RDMA source with benchmarks/rdma.py's ``ReplayRdma`` (replies in the
  rdma_netlink.h layout, built once, replayed with each request's sequence numbers) and
  ``keep_open``, as the daemon opens it on the live ``/sys``;
* the PCIe source with ``keep_open`` (its AER and power-state files), as on the live ``/sys``
  (the tree's files are not replaced while measured, so a kept-open file reads them).

Speed and duplex stay the sysfs files (two per interface and poll; the daemon's
LINKMODES_GET dump is cheaper), an upper bound.
"""

from __future__ import annotations

import struct
from pathlib import Path

from rdma import ReplayRdma, devices

from nicwatch.demo.simulate import Simulation
from nicwatch.sources import sysfs_net
from nicwatch.sources.netlink import NLA_HDR, NLA_TYPE_MASK
from nicwatch.sources.rdma import RdmaSource
from nicwatch.sources.rtnetlink import (
    IFF_UP,
    IFINFOMSG,
    IFLA_ADDRESS,
    IFLA_CARRIER,
    IFLA_CARRIER_CHANGES,
    IFLA_CARRIER_DOWN_COUNT,
    IFLA_CARRIER_UP_COUNT,
    IFLA_IFNAME,
    IFLA_MTU,
    IFLA_OPERSTATE,
    IFLA_STATS64,
    OPERSTATES,
    STATS64_FIELDS,
    Link,
    RtNetlink,
    parse_link,
)


def kernel_template() -> list[tuple[int, bytes]]:
    """The attributes of one real RTM_NEWLINK payload of this kernel, in order: the
    first interface of this namespace's dump that is not the loopback, else the loopback."""
    with RtNetlink() as rt:
        payloads = rt.payloads()
    chosen = next((p for p in payloads if parse_link(p) and parse_link(p).name != "lo"),
                  payloads[0])
    attrs, pos = [], IFINFOMSG.size
    while pos < len(chosen):
        length, kind = NLA_HDR.unpack_from(chosen, pos)
        attrs.append((kind, chosen[pos + 4:pos + length]))
        pos += (length + 3) & ~3
    return attrs


def _nla(kind: int, value: bytes) -> bytes:
    return NLA_HDR.pack(4 + len(value), kind) + value + b"\0" * (-len(value) % 4)


def newlink(template: list[tuple[int, bytes]], nc: sysfs_net.NetClass) -> bytes:
    """``nc`` (read from the simulation's tree) as the kernel would send it: the template's
    attributes in their order, the ones parse_link reads replaced with ``nc``'s values."""
    up = nc.operstate not in (None, "down")
    stats = struct.pack(f"={len(STATS64_FIELDS) + 1}Q",
                        *(nc.stats.get(name, 0) for name in STATS64_FIELDS), 0)
    mine = {
        IFLA_IFNAME: nc.name.encode() + b"\0",
        IFLA_ADDRESS: bytes.fromhex((nc.address or "00:00:00:00:00:00").replace(":", "")),
        IFLA_MTU: struct.pack("=I", nc.mtu or 1500),
        IFLA_OPERSTATE: bytes([OPERSTATES.index(nc.operstate or "unknown")]),
        IFLA_STATS64: stats,
        IFLA_CARRIER: bytes([1 if nc.carrier else 0]),
        IFLA_CARRIER_CHANGES: struct.pack("=I", nc.carrier_changes or 0),
        IFLA_CARRIER_UP_COUNT: struct.pack("=I", nc.carrier_up_count or 0),
        IFLA_CARRIER_DOWN_COUNT: struct.pack("=I", nc.carrier_down_count or 0),
    }
    body = b"".join(_nla(kind, mine.get(kind & NLA_TYPE_MASK, value))
                    for kind, value in template)
    missing = [k for k in mine if k not in {kind & NLA_TYPE_MASK for kind, _ in template}]
    body += b"".join(_nla(k, mine[k]) for k in missing)
    return IFINFOMSG.pack(0, 1, nc.ifindex, IFF_UP if up else 0, 0) + body


class ReplayLinks:
    """The collector's LinkLister for a simulated tree: payloads built once, parsed every
    poll."""

    def __init__(self, root: str | Path) -> None:
        template = kernel_template()
        self.payloads = [newlink(template, sysfs_net.read_netclass(root, name))
                         for name in sysfs_net.list_interfaces(root)]

    def links(self) -> dict[str, Link]:
        out = {}
        for payload in self.payloads:
            link = parse_link(payload)
            if link is not None:
                out[link.name] = link
        return out

    def close(self) -> None:
        """No socket to close."""


def live_rdma(simulation: Simulation, root: str, refresh: float) -> RdmaSource:
    """The RDMA source as the daemon opens it on the live /sys (netlink, files kept open)."""
    return RdmaSource(root, ReplayRdma(*devices(simulation, Path(root))), refresh=refresh,
                      keep_open=True)
