"""Records of RDMA ports: attributes, GIDs and counters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nicwatch.model.ethtool import _empty, _empty_names


@dataclass(frozen=True, slots=True)

class RdmaGid:
    """One valid entry of a RoCE port's GID table (``ports/<n>/gids/<index>`` with
    ``gid_attrs/types/<index>`` and ``gid_attrs/ndevs/<index>``): ``gid`` as the kernel prints
    it (``fe80:0000:...``, eight groups of four hex digits), ``type`` ``"RoCE v2"`` or
    ``"IB/RoCE v1"``, ``netdev`` the interface the entry belongs to (a VLAN or macvlan upper
    device of the port's netdev has entries of its own)."""

    index: int
    gid: str
    type: str | None
    netdev: str | None



@dataclass(frozen=True, slots=True)

class RdmaPort:
    """One port of one RDMA device, with or without a netdev (an InfiniBand port has none).

    ``state`` / ``phys_state`` are the names from ``"4: ACTIVE"`` / ``"5: LinkUp"`` (or the
    same names decoded from the RDMA netlink port dump). ``rate_bytes_per_second`` is the
    port rate from ``rate`` in bytes per second. ``netdev`` is the Ethernet (or IPoIB)
    interface of this port, ``pci_function`` the PCI address behind the device.
    ``hw_counters`` maps the driver's counter names to raw values (netlink
    ``RDMA_NLDEV_CMD_STAT_GET`` or ``hw_counters/``, see ``source``); ``counters`` maps the
    IB PortCounters files of ``counters/`` to raw values (``counters["port_xmit_data"]`` is
    in 4-byte words). ``problems`` as in :class:`PciePath`.

    ``source``: where ``hw_counters`` came from this poll, ``"netlink"`` or ``"sysfs"``.
    ``driver``: the RDMA driver whose counter table applies (``mlx5``, ``bnxt_re``,
    ``irdma``, ``efa``, ``mana``, ``ionic``, ``rxe``, ...); None when it could not be told.
    ``skipped``: counters not asked this poll because they failed before and are backed
    off, by name (``hw_counters`` names, ``counters/<name>`` for PMA files, ``stat_get`` for
    a port's whole netlink request) to the reason (an errno name). ``gids``: the valid GID
    table entries (RoCE ports; read on the slow cadence; None: not read). ``netdev_mtu``:
    the netdev's MTU when it has one. ``addresses``: the IP addresses of the netdev
    (``ip -j addr`` spelling; None: not read, as on a fixture tree).
    """

    device: str
    port: int
    link_layer: str | None
    state: str | None
    phys_state: str | None
    rate_bytes_per_second: int | None
    netdev: str | None
    node_guid: str | None
    pci_function: str | None
    hw_counters: Mapping[str, int]
    counters: Mapping[str, int]
    problems: tuple[str, ...]
    default_roce_tos: int | None = None  # rdma_cm configfs; see nicwatch.sources.sysfs_roce
    traffic_class: int | None = None  # vendor mlx5 tc/<port>/traffic_class global value
    source: str = "sysfs"
    driver: str | None = None
    skipped: Mapping[str, str] = field(default_factory=_empty_names)
    gids: tuple[RdmaGid, ...] | None = None
    netdev_mtu: int | None = None
    addresses: tuple[str, ...] | None = None
    # ``counters_ext/`` (pre-4.5 kernels and MLNX_OFED: the 64-bit PortCountersExtended as
    # ``port_rcv_data_64``, ``port_unicast_rcv_packets``, ...) by file name, raw; where a
    # file of it is present its value wins over a 32-bit ``counters/`` one (a 64-bit
    # ``counters/`` file wins over it).
    counters_ext: Mapping[str, int] = field(default_factory=_empty)
    # The HCA's identity (the device's ``board_id``, ``fw_ver`` and ``hca_type`` files, as
    # node_exporter's node_infiniband_info reads them); None: not read or absent.
    board_id: str | None = None
    firmware_version: str | None = None
    hca_type: str | None = None

    @property
    def key(self) -> str:
        """``"mlx5_0/1"``: the port's identity in the tracker and the exposition cache (no
        netdev name contains a ``/``)."""
        return f"{self.device}/{self.port}"
