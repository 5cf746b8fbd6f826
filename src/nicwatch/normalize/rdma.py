"""RDMA ports -> RdmaSamples: the IB PortCounters and each driver's hardware counters as
canonical families, driver knowledge as data.

A port's series are its own (``rdma_device``, ``port``; the exporter adds the netdev as
``device`` where the port has one). Families come first from the PortCounters (``counters/``),
then from the driver's table of ``hw_counters``: a driver without PMA counters (efa, mana,
rxe: no ``process_mad``; bnxt_re before it answered PMA MADs) gives its RDMA bytes and
packets from its own counters. A
hardware counter the driver's table does not map stays reachable as
``nic_rdma_hw_stat_total{counter}``, a value that is no counter (mana ``current_rate``) as
``nic_rdma_hw_value{counter}``.

The same counter name does not mean the same thing on every driver: each driver's table says
what its counter counts, from its kernel source (and the vendor's documentation where the
source only names the hardware field), and maps it only to a family with that meaning.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from nicwatch.model import CounterValue, Labels, RdmaPort, RdmaSample, SeriesKey
from nicwatch.normalize.drivers import RDMA_TABLES
from nicwatch.normalize.rules import RdmaDriver

SOURCE = "rdma"
RAW_COUNTER = "nic_rdma_hw_stat_total"
RAW_VALUE = "nic_rdma_hw_value"
WORD = 4.0  # port_xmit_data / port_rcv_data count 4-byte words
# iboe_get_mtu: IB_GRH_BYTES 40 + IB_UDP_BYTES 8 + IB_BTH_BYTES 12 + IB_EXT_XRC_BYTES 4 +
# IB_EXT_ATOMICETH_BYTES 28 + IB_ICRC_BYTES 4
ROCE_HEADERS = 96


@dataclass(frozen=True, slots=True)
class PmaCounter:
    """One IB PortCounters file: its width in ``PORT_PMA_ATTR`` (the data and packet
    counters are 64-bit in the extended table), the family and the raw unit's scale."""

    name: str
    metric: str
    width: int
    meaning: str
    scale: float = 1.0
    extended: bool = False  # 64 bits when the PMA declares IB_PMA_CLASS_CAP_EXT_WIDTH


PMA_EVIDENCE = ("drivers/infiniband/core/sysfs.c PORT_PMA_ATTR / PORT_PMA_ATTR_EXT, "
                "show_pma_counter (IBTA PortCounters / PortCountersExtended)")

PMA: tuple[PmaCounter, ...] = (
    PmaCounter("symbol_error", "nic_rdma_symbol_errors_total", 16,
               "minor link errors detected on one or more physical lanes"),
    PmaCounter("link_error_recovery", "nic_rdma_link_error_recoveries_total", 8,
               "times the port training state machine completed the link error recovery "
               "process"),
    PmaCounter("link_downed", "nic_rdma_link_downed_total", 8,
               "times the link error recovery process failed and the link went down"),
    PmaCounter("port_rcv_errors", "nic_rdma_rx_errors_total", 16,
               "packets received with an error (local physical errors, malformed packets, "
               "buffer overruns)"),
    PmaCounter("port_rcv_remote_physical_errors", "nic_rdma_rx_remote_physical_errors_total",
               16, "packets received marked bad (EBP) by an upstream link"),
    PmaCounter("port_rcv_switch_relay_errors", "nic_rdma_rx_switch_relay_errors_total", 16,
               "packets a switch port could not relay"),
    PmaCounter("port_xmit_discards", "nic_rdma_tx_discards_total", 16,
               "outbound packets discarded (port down or congested)"),
    PmaCounter("port_xmit_constraint_errors", "nic_rdma_tx_constraint_errors_total", 8,
               "outbound packets not sent for a partition or raw constraint"),
    PmaCounter("port_rcv_constraint_errors", "nic_rdma_rx_constraint_errors_total", 8,
               "inbound packets discarded for a partition or raw constraint"),
    PmaCounter("local_link_integrity_errors", "nic_rdma_local_link_integrity_errors_total", 4,
               "times the local physical errors exceeded the LocalPhyErrors threshold"),
    PmaCounter("excessive_buffer_overrun_errors",
               "nic_rdma_excessive_buffer_overrun_errors_total", 4,
               "times consecutive flow-control update periods had a buffer overrun"),
    PmaCounter("VL15_dropped", "nic_rdma_vl15_dropped_total", 16,
               "subnet management packets (VL15) dropped for lack of buffers"),
    PmaCounter("port_xmit_wait", "nic_rdma_tx_wait_ticks_total", 32,
               "ticks the port had data to send but could not (no credits, arbitration): "
               "congestion backpressure"),
    PmaCounter("port_xmit_data", "nic_rdma_tx_bytes_total", 32,
               "data octets sent, divided by 4 (the file counts 4-byte words)", WORD, True),
    PmaCounter("port_rcv_data", "nic_rdma_rx_bytes_total", 32,
               "data octets received, divided by 4 (4-byte words)", WORD, True),
    PmaCounter("port_xmit_packets", "nic_rdma_tx_packets_total", 32, "packets sent", 1.0, True),
    PmaCounter("port_rcv_packets", "nic_rdma_rx_packets_total", 32, "packets received", 1.0,
               True),
    PmaCounter("unicast_xmit_packets", "nic_rdma_tx_unicast_packets_total", 64,
               "unicast packets sent (PortCountersExtended only)"),
    PmaCounter("unicast_rcv_packets", "nic_rdma_rx_unicast_packets_total", 64,
               "unicast packets received"),
    PmaCounter("multicast_xmit_packets", "nic_rdma_tx_multicast_packets_total", 64,
               "multicast packets sent"),
    PmaCounter("multicast_rcv_packets", "nic_rdma_rx_multicast_packets_total", 64,
               "multicast packets received"),
)
PMA_BY_NAME: Mapping[str, PmaCounter] = MappingProxyType({c.name: c for c in PMA})
# Files only the extended table (pma_attrs_ext) has: their presence says the data and
# packet counters are the 64-bit PortCountersExtended ones.
EXTENDED_ONLY = frozenset({"unicast_xmit_packets", "unicast_rcv_packets",
                           "multicast_xmit_packets", "multicast_rcv_packets"})
# The separate 64-bit directory counters_ext/ (kernels before 4.5 and MLNX_OFED, as
# prometheus/procfs documents it): its file -> the counters/ file it supersedes. Its values
# are 64 bits (no saturation) and win over the 32-bit ones of counters/; where counters/ is
# the 64-bit extended table already (unicast/multicast files, or a value of 2^32 or more),
# counters/ wins and the counters_ext/ file stays raw (node_exporter's tree has a ConnectX-3
# port with counters/port_rcv_packets 6,825,908,347 and counters_ext/port_rcv_packets_64 0).
EXT_EVIDENCE = ("counters_ext/ (pre-4.5 kernels, MLNX_OFED; prometheus/procfs "
                "sysfs/class_infiniband.go parseInfiniBandCounters)")
COUNTERS_EXT: Mapping[str, str] = MappingProxyType({
    "port_xmit_data_64": "port_xmit_data",
    "port_rcv_data_64": "port_rcv_data",
    "port_xmit_packets_64": "port_xmit_packets",
    "port_rcv_packets_64": "port_rcv_packets",
    "port_unicast_xmit_packets": "unicast_xmit_packets",
    "port_unicast_rcv_packets": "unicast_rcv_packets",
    "port_multicast_xmit_packets": "multicast_xmit_packets",
    "port_multicast_rcv_packets": "multicast_rcv_packets",
})


# Each RDMA driver's hw_counters table lives with the driver tables (normalize/drivers/).
DRIVERS: Mapping[str, RdmaDriver] = RDMA_TABLES
MLX5, BNXT_RE, IRDMA, EFA, MANA, RXE = (RDMA_TABLES[k] for k in (
    "mlx5", "bnxt_re", "irdma", "efa", "mana", "rxe"))
# Drivers whose counters nicwatch has not mapped yet: every counter raw.
UNMAPPED_NOTE = ("ionic, hns, qedr, erdma, siw and mlx4: their counters are exported raw "
                 "(`nic_rdma_hw_stat_total`).")


# --------------------------------------------------------------------------- normalize


def pma_width(counter: PmaCounter, names: Mapping[str, int], value: int) -> int:
    """The width of a PortCounters value: 64 for the data and packet counters of the
    extended table (told by its unicast/multicast files, or by a value no 32-bit counter
    holds)."""
    if counter.extended and (EXTENDED_ONLY & names.keys() or value >= 1 << 32):
        return 64
    return counter.width


def _wide(port: RdmaPort, name: str) -> bool:
    """Whether ``counters/<name>`` is there in 64 bits (the extended table: its
    unicast/multicast files, or a value no 32-bit counter holds)."""
    value = port.counters.get(name)
    return value is not None and pma_width(PMA_BY_NAME[name], port.counters, value) == 64


def port_labels(port: RdmaPort) -> Labels:
    return (("port", str(port.port)), ("rdma_device", port.device))


def rdma_counters(port: RdmaPort) -> dict[SeriesKey, CounterValue]:
    """The port's counter series: PortCounters first, then its driver's table, the rest raw."""
    base = port_labels(port)
    out: dict[SeriesKey, CounterValue] = {}
    families: set[str] = set()
    for name, value in port.counters_ext.items():
        known = COUNTERS_EXT.get(name)
        if known is None or _wide(port, known):
            # unknown, or counters/ has the same counter in 64 bits already: it stays raw
            out[SeriesKey(RAW_COUNTER, (("counter", f"counters_ext/{name}"),) + base)] = \
                CounterValue(value, SOURCE)
            continue
        extended = PMA_BY_NAME[known]
        out[SeriesKey(extended.metric, base)] = CounterValue(value, SOURCE, 64, extended.scale)
        families.add(extended.metric)
    for name, value in port.counters.items():
        pma = PMA_BY_NAME.get(name)
        if pma is not None and pma.metric in families:
            continue  # counters_ext/ has it in 64 bits, counters/ in 32
        if pma is None:
            out[SeriesKey(RAW_COUNTER, (("counter", f"counters/{name}"),) + base)] = \
                CounterValue(value, SOURCE)
            continue
        width = pma_width(pma, port.counters, value)
        out[SeriesKey(pma.metric, base)] = CounterValue(value, SOURCE, width, pma.scale,
                                                        saturates=width < 64)
        families.add(pma.metric)
    driver = DRIVERS.get(port.driver or "")
    for name, value in port.hw_counters.items():
        entry = driver.get(name) if driver is not None else None
        if entry is not None and entry.value:
            continue
        if entry is None or entry.metric is None or entry.metric in families:
            out[SeriesKey(RAW_COUNTER, (("counter", name),) + base)] = CounterValue(value, SOURCE)
            continue
        out[SeriesKey(entry.metric, base)] = CounterValue(value, SOURCE, entry.width)
        families.add(entry.metric)
    return out


def iboe_mtu(netdev_mtu: int) -> int | None:
    """The RoCE active MTU the kernel derives from a netdev MTU (``iboe_get_mtu``,
    include/rdma/ib_addr.h: the MTU less 96 bytes of GRH, UDP, BTH, XRC, AtomicETH and ICRC
    headers, rounded down to an IB MTU of 256..4096); None below 256."""
    room = netdev_mtu - ROCE_HEADERS
    for mtu in (4096, 2048, 1024, 512, 256):
        if room >= mtu:
            return mtu
    return None


def gid_for_address(address: str) -> str:
    """The GID a RoCE v2 entry has for an IP address (``roce_gid_mgmt.c``: IPv4 as the
    IPv4-mapped IPv6 address ``::ffff:a.b.c.d``), printed as sysfs prints GIDs."""
    ip = ipaddress.ip_address(address.split("%")[0])
    packed = (ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed).packed
              if ip.version == 4 else ip.packed)
    hexed = packed.hex()
    return ":".join(hexed[i:i + 4] for i in range(0, 32, 4))


def roce_v2_gids(port: RdmaPort) -> set[str]:
    """The RoCE v2 GIDs of the port's own netdev."""
    return {g.gid for g in port.gids or () if g.type == "RoCE v2"
            and (g.netdev is None or g.netdev == port.netdev)}


def addresses_without_gid(port: RdmaPort) -> tuple[str, ...] | None:
    """The netdev's IP addresses no RoCE v2 GID carries; None when unknown (no addresses
    read, no GID table)."""
    if port.addresses is None or port.gids is None:
        return None
    gids = roce_v2_gids(port)
    return tuple(a for a in port.addresses if gid_for_address(a) not in gids)


def rdma_gauges(port: RdmaPort, counters: Mapping[SeriesKey, CounterValue]) -> dict[SeriesKey,
                                                                                    float]:
    base = port_labels(port)
    out: dict[SeriesKey, float] = {}
    info = (("driver", port.driver or ""), ("link_layer", port.link_layer or ""),
            ("node_guid", port.node_guid or ""), ("pci_address", port.pci_function or ""),
            ("phys_state", port.phys_state or ""), ("state", port.state or ""))
    out[SeriesKey("nic_rdma_port_info", info + base)] = 1.0
    if port.board_id is not None or port.firmware_version is not None \
            or port.hca_type is not None:
        hca = (("board_id", port.board_id or ""),
               ("firmware_version", port.firmware_version or ""),
               ("hca_type", port.hca_type or ""))
        out[SeriesKey("nic_rdma_info", hca + base)] = 1.0
    if port.state is not None:
        out[SeriesKey("nic_rdma_port_active", base)] = float(port.state == "ACTIVE")
    if port.rate_bytes_per_second is not None:
        out[SeriesKey("nic_rdma_port_rate_bytes_per_second", base)] = float(
            port.rate_bytes_per_second)
    if port.default_roce_tos is not None:
        out[SeriesKey("nic_rdma_default_roce_tos", base)] = float(port.default_roce_tos)
    if port.traffic_class is not None:
        out[SeriesKey("nic_rdma_traffic_class", base)] = float(port.traffic_class)
    for key, cv in counters.items():
        if cv.saturated:
            name = next(p.name for p in PMA if p.metric == key.metric)
            out[SeriesKey("nic_rdma_portcounters_saturated", (("counter", name),) + base)] = 1.0
    driver = DRIVERS.get(port.driver or "")
    if driver is not None:
        for name, value in port.hw_counters.items():
            entry = driver.get(name)
            if entry is not None and entry.value:
                out[SeriesKey(RAW_VALUE, (("counter", name),) + base)] = float(value)
    if port.link_layer == "Ethernet":
        if port.netdev_mtu is not None:
            mtu = iboe_mtu(port.netdev_mtu)
            if mtu is not None:
                out[SeriesKey("nic_rdma_active_mtu_bytes", base)] = float(mtu)
        if port.gids is not None:
            out[SeriesKey("nic_rdma_roce_v2_gids", base)] = float(len(roce_v2_gids(port)))
        missing = addresses_without_gid(port)
        if missing is not None:
            out[SeriesKey("nic_rdma_addresses_without_roce_v2_gid", base)] = float(len(missing))
    return out


def normalize_rdma(port: RdmaPort, time: float, monotonic: float) -> RdmaSample:
    counters = rdma_counters(port)
    return RdmaSample(port, time, monotonic, counters, rdma_gauges(port, counters))
