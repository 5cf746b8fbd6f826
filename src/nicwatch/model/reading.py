"""What the sources read about one interface (a Reading) and about the host (a HostReading),
each part declared once, as a :class:`~nicwatch.model.part.Part` of its record."""

from __future__ import annotations

from nicwatch.model.dcb import DcbPeer, DcbQos, IeeePfc, LldpPort, RoceEcn
from nicwatch.model.device import (
    BondMember,
    DevlinkHealthReporter,
    DevlinkInfo,
    DevlinkPort,
    ModuleEeprom,
    ModuleReadStatus,
    NetClass,
    NetdevQueues,
    NicHwmon,
    ReceivePath,
    SoftnetCpu,
    SourceError,
    SriovState,
)
from nicwatch.model.ethtool import Channels, DriverInfo, EthtoolNetlinkInfo, Rings, StatSet
from nicwatch.model.part import Part, parts_of, record
from nicwatch.model.pci import PciePath
from nicwatch.model.rdma import RdmaPort


@record
class Reading:
    """Everything the sources returned for one interface in one poll, unnormalized.

    The collector's own fields are annotated; every other field is a part the sources fill
    (``Poll.put(device, Reading.<part>, value)``), absent (its default: None or ``()``) until
    a source put it. A frozen dataclass (``nicwatch.model.part.record``)."""

    device: str
    time: float  # wall clock, seconds since the epoch
    monotonic: float  # time.monotonic() at the read
    netclass: NetClass
    driver_info = Part[DriverInfo | None](None)
    perm_address = Part[str | None](None)
    stats = Part[StatSet | None](None)
    rings = Part[Rings | None](None)
    channels = Part[Channels | None](None)
    netlink = Part[EthtoolNetlinkInfo | None](None)
    pcie = Part[PciePath | None](None)  # the PCI function and every port above it
    rdma = Part[tuple[RdmaPort, ...]](())  # RDMA ports whose netdev this is
    dcb_pfc = Part[IeeePfc | None](None)  # IEEE PFC configuration (dcbnl); None: not reported
    dcb_qos = Part[DcbQos | None](None)  # ETS, APP table, trust (dcbnl); None: no DCB support
    roce_ecn = Part[RoceEcn | None](None)  # vendor mlx5 ecn/ sysfs tree; None: not there
    devlink_port = Part[DevlinkPort | None](None)  # the devlink port whose netdev this is
    # reporters of its device and port
    devlink_health = Part[tuple[DevlinkHealthReporter, ...]](())
    # module EEPROM; None: not read, unsupported or opt-in off
    module = Part[ModuleEeprom | None](None)
    module_read = Part[ModuleReadStatus | None](None)  # module collector state; None: opt-in off
    # SR-IOV PF and its VFs (--collector.vfs); None: not read
    sriov = Part[SriovState | None](None)
    # pci_vf-flavour devlink ports of its devlink instance (VF representors: the e-switch is
    # in switchdev mode); None: devlink ports not read or no instance for its PCI function
    devlink_vf_ports = Part[int | None](None)
    mlx5_trust = Part[str | None](None)  # vendor mlx5 qos/trust file ("dscp", "pcp"); None: absent
    bond = Part[BondMember | None](None)  # the bond this interface is a member of; None: none
    queues = Part[NetdevQueues | None](None)  # netdev generic netlink; None: not read
    rxpath = Part[ReceivePath | None](None)  # interrupts, RPS and softnet; None: not read
    hwmon = Part[NicHwmon | None](None)  # ASIC temperature sensors (hwmon); None: none
    devlink_info = Part[DevlinkInfo | None](None)  # devlink dev info of its instance; None: none
    lldp = Part[LldpPort | None](None)  # passive LLDP receiver (--collector.lldp); None: off
    dcb_peer = Part[DcbPeer | None](None)  # dcbnl IEEE peer attributes; None: not reported
    errors: tuple[SourceError, ...] = ()


@record
class HostReading:
    """Host-wide values the sources read in one poll (``Poll.put_host(HostReading.<part>,
    value)``); None: no source put it."""

    # cumulative softirq seconds per CPU, by CPU number
    softirq_seconds = Part[tuple[float, ...] | None](None)
    rdma_ports = Part[tuple[RdmaPort, ...] | None](None)  # every RDMA port read, netdev or not
    softnet = Part[tuple[SoftnetCpu, ...] | None](None)  # /proc/net/softnet_stat, online CPUs


READING_PARTS = parts_of(Reading)  # every part of a Reading, in declaration order
HOST_PARTS = parts_of(HostReading)
