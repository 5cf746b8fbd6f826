"""What the sources read about one interface: its parts (ReadingParts, HostParts) and the
Reading built from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

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
from nicwatch.model.pci import PciePath
from nicwatch.model.rdma import RdmaPort


class ReadingParts(TypedDict, total=False):
    """The fields of a :class:`Reading` the sources fill: the typed hand-off between the
    sources and the collector (``sources.Poll.put`` checks each part against these types; the
    collector builds the Reading from them). A key is absent until a source put it. Every
    field of Reading but the collector's own (device, time, monotonic, netclass, errors) is
    here with the same type, and nothing else (tests/unit/test_model.py)."""

    driver_info: DriverInfo | None
    perm_address: str | None
    stats: StatSet | None
    rings: Rings | None
    channels: Channels | None
    netlink: EthtoolNetlinkInfo | None
    pcie: PciePath | None
    rdma: tuple[RdmaPort, ...]
    dcb_pfc: IeeePfc | None
    dcb_qos: DcbQos | None
    roce_ecn: RoceEcn | None
    devlink_port: DevlinkPort | None
    devlink_health: tuple[DevlinkHealthReporter, ...]
    module: ModuleEeprom | None
    module_read: ModuleReadStatus | None
    sriov: SriovState | None
    devlink_vf_ports: int | None
    mlx5_trust: str | None
    bond: BondMember | None
    queues: NetdevQueues | None
    rxpath: ReceivePath | None
    hwmon: NicHwmon | None
    devlink_info: DevlinkInfo | None
    lldp: LldpPort | None
    dcb_peer: DcbPeer | None



class HostParts(TypedDict, total=False):
    """Host-wide values the sources read in one poll (``sources.Poll.put_host``)."""

    softirq_seconds: tuple[float, ...]  # cumulative softirq seconds per CPU, by CPU number
    rdma_ports: tuple[RdmaPort, ...]  # every RDMA port read, with or without a netdev
    softnet: tuple[SoftnetCpu, ...]  # /proc/net/softnet_stat, every online CPU



@dataclass(frozen=True, slots=True)

class Reading:
    """Everything the sources returned for one interface in one poll, unnormalized."""

    device: str
    time: float  # wall clock, seconds since the epoch
    monotonic: float  # time.monotonic() at the read
    netclass: NetClass
    driver_info: DriverInfo | None = None
    perm_address: str | None = None
    stats: StatSet | None = None
    rings: Rings | None = None
    channels: Channels | None = None
    netlink: EthtoolNetlinkInfo | None = None
    pcie: PciePath | None = None  # the PCI function and every port above it
    rdma: tuple[RdmaPort, ...] = ()  # RDMA ports whose netdev this is
    dcb_pfc: IeeePfc | None = None  # IEEE PFC configuration (dcbnl); None: not reported
    dcb_qos: DcbQos | None = None  # ETS, APP table, trust (dcbnl); None: no DCB support
    roce_ecn: RoceEcn | None = None  # vendor mlx5 ecn/ sysfs tree; None: not there
    devlink_port: DevlinkPort | None = None  # the devlink port whose netdev this is
    devlink_health: tuple[DevlinkHealthReporter, ...] = ()  # reporters of its device and port
    module: ModuleEeprom | None = None  # module EEPROM; None: not read, unsupported or opt-in off
    module_read: ModuleReadStatus | None = None  # module collector state; None: opt-in off
    sriov: SriovState | None = None  # SR-IOV PF and its VFs (--collector.vfs); None: not read
    # pci_vf-flavour devlink ports of its devlink instance (VF representors: the e-switch is
    # in switchdev mode); None: devlink ports not read or no instance for its PCI function
    devlink_vf_ports: int | None = None
    mlx5_trust: str | None = None  # vendor mlx5 qos/trust file ("dscp", "pcp"); None: absent
    bond: BondMember | None = None  # the bond this interface is a member of; None: none
    queues: NetdevQueues | None = None  # netdev generic netlink; None: not read
    rxpath: ReceivePath | None = None  # interrupts, RPS and softnet; None: not read
    hwmon: NicHwmon | None = None  # ASIC temperature sensors (hwmon); None: none
    devlink_info: DevlinkInfo | None = None  # devlink dev info of its instance; None: none
    lldp: LldpPort | None = None  # passive LLDP receiver (--collector.lldp); None: off
    dcb_peer: DcbPeer | None = None  # dcbnl IEEE peer attributes; None: not reported
    errors: tuple[SourceError, ...] = ()
