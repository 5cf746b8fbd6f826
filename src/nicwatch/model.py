"""Records that flow between the stages: sources -> Reading -> normalize -> Sample -> tracker.

Everything here is immutable. ``None`` always means "the kernel or driver did not say",
never zero (see docs/architecture.md, "absent is not zero").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # records of the sysfs PCI and infiniband sources
    from nicwatch.pcie import PcieVerdict
    from nicwatch.sources.dcbnl import IeeePfc
    from nicwatch.sources.sysfs_infiniband import RdmaPort
    from nicwatch.sources.sysfs_pci import PciePath


def _empty() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class DriverInfo:
    """ETHTOOL_GDRVINFO."""

    driver: str
    version: str
    firmware_version: str
    bus_info: str
    n_stats: int


@dataclass(frozen=True, slots=True)
class StatSet:
    """Driver statistics as `ethtool -S` shows them, in kernel order.

    ``generation`` identifies the name list (one number per distinct list), so it changes
    whenever the set grows, shrinks or is renamed, and consumers can tell a changed set
    from new values.
    """

    names: tuple[str, ...]
    values: tuple[int, ...]
    generation: int

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self.names, self.values))


@dataclass(frozen=True, slots=True)
class Rings:
    """Descriptor ring sizes (RINGS_GET / ETHTOOL_GRINGPARAM). ``None``: not reported."""

    rx: int | None
    tx: int | None
    rx_max: int | None
    tx_max: int | None


@dataclass(frozen=True, slots=True)
class Channels:
    """Channel counts (CHANNELS_GET / ETHTOOL_GCHANNELS). ``None``: not reported."""

    rx: int | None
    tx: int | None
    other: int | None
    combined: int | None
    rx_max: int | None
    tx_max: int | None
    other_max: int | None
    combined_max: int | None


@dataclass(frozen=True, slots=True)
class PauseParams:
    """802.3x PAUSE configuration (PAUSE_GET)."""

    autoneg: bool
    rx: bool
    tx: bool


@dataclass(frozen=True, slots=True)
class FecParams:
    """FEC configuration (FEC_GET): configured mode names and the active one."""

    configured: tuple[str, ...]
    active: str | None
    auto: bool | None


@dataclass(frozen=True, slots=True)
class EthtoolNetlinkInfo:
    """What the ethtool generic-netlink dumps said about one interface.

    ``std_stats`` holds the kernel's driver-independent statistics under stable keys:
    ``pause.rx_frames``, ``pause.tx_frames``, ``fec.corrected_blocks`` (total) and
    ``fec.corrected_blocks.lane<N>``, ``fec.uncorrectable_blocks[.lane<N>]``,
    ``fec.corrected_bits[.lane<N>]``, ``eth-phy.<Name>``, ``eth-mac.<Name>``,
    ``eth-ctrl.<Name>``, ``rmon.<name>``. A key is present only when the driver filled it.
    """

    pause: PauseParams | None = None
    fec: FecParams | None = None
    rings: Rings | None = None
    channels: Channels | None = None
    std_stats: Mapping[str, int] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class NetClass:
    """/sys/class/net/<device>: link state, kernel stats and the device behind it."""

    name: str
    ifindex: int | None
    address: str | None
    operstate: str | None
    mtu: int | None
    speed_mbps: int | None
    duplex: str | None
    carrier: bool | None
    carrier_changes: int | None
    carrier_up_count: int | None
    carrier_down_count: int | None
    device_path: str | None  # realpath of the `device` link, relative to the sysfs root
    pci_address: str | None  # the PCI function at or above device_path
    driver: str | None  # basename of device/driver (walking up from a virtio child)
    stats: Mapping[str, int] = field(default_factory=_empty)  # statistics/* (rtnl_link_stats64 fields)


@dataclass(frozen=True, slots=True)
class IeeeEts:
    """``struct ieee_ets`` of one port (dcbnl ``DCB_ATTR_IEEE_ETS``), the operational part.

    ``prio_tc[p]``: the traffic class of priority ``p``. ``tc_tx_bw[t]``: percent of the
    bandwidth ETS gives traffic class ``t``. ``tc_tsa[t]``: its transmission selection
    algorithm, one of ``strict``, ``cbs``, ``ets``, ``vendor`` or the number for others.
    ``willing``: the port accepts the peer's configuration (DCBX). ``ets_cap``: how many
    traffic classes the port supports.
    """

    willing: bool
    ets_cap: int
    prio_tc: tuple[int, ...]
    tc_tx_bw: tuple[int, ...]
    tc_tsa: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DcbApp:
    """One ``struct dcb_app`` of the DCB application table: traffic matching ``protocol``
    under ``selector`` (5: DSCP, 1: EtherType, 2-4: ports, 255: PCP) gets ``priority``."""

    selector: int
    priority: int
    protocol: int


@dataclass(frozen=True, slots=True)
class DcbQos:
    """The QoS part of a dcbnl IEEE_GET reply (besides PFC).

    ``ets``: None when the driver sent no ETS. ``apps``: the application table (the kernel
    always sends it, possibly empty). ``apptrust``: the selectors the port trusts, in order,
    from ``DCB_ATTR_DCB_APP_TRUST_TABLE`` (Linux 6.3+, drivers with ``dcbnl_getapptrust``);
    None when not reported.
    """

    ets: IeeeEts | None
    apps: tuple[DcbApp, ...]
    apptrust: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class RoceEcn:
    """The vendor mlx5 driver's ``/sys/class/net/<if>/ecn/`` tree (DCQCN).

    ``rp_enabled[p]`` / ``np_enabled[p]``: ECN enabled on priority ``p`` at the reaction
    point (``roce_rp/enable/<p>``) and notification point (``roce_np/enable/<p>``); None
    where the file is absent or unreadable. ``cnp_dscp`` / ``cnp_802p_prio``: DSCP and
    802.1p priority of the CNPs the port sends (``roce_np/``).
    """

    rp_enabled: tuple[bool | None, ...]
    np_enabled: tuple[bool | None, ...]
    cnp_dscp: int | None
    cnp_802p_prio: int | None


@dataclass(frozen=True, slots=True)
class SourceError:
    """A source that failed for one interface in one poll. ``kind`` is stable (an errno
    name such as ``ENODEV``, or ``parse``); ``message`` is for people."""

    source: str
    kind: str
    message: str


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
    pcie_verdict: PcieVerdict | None = None  # derived across all NICs sharing a link
    rdma: tuple[RdmaPort, ...] = ()  # RDMA ports whose netdev this is
    dcb_pfc: IeeePfc | None = None  # IEEE PFC configuration (dcbnl); None: not reported
    dcb_qos: DcbQos | None = None  # ETS, APP table, trust (dcbnl); None: no DCB support
    roce_ecn: RoceEcn | None = None  # vendor mlx5 ecn/ sysfs tree; None: not there
    errors: tuple[SourceError, ...] = ()


Labels = tuple[tuple[str, str], ...]


def scaled(raw: float, scale: float) -> float:
    """``raw`` in base units. Divides for sub-unit scales so that 1834567 us reads 1.834567 s,
    not 1.8345669999999998."""
    if scale < 1:
        return raw / round(1 / scale)
    return raw * scale


class SeriesKey(NamedTuple):
    """One time series of one interface: metric family name plus sorted extra labels
    (the ``device`` label is implicit). A named tuple, so that hashing, equality and
    order (by metric, then labels) run in C: keys are hashed and compared on every series
    of every poll (tracker, history, render)."""

    metric: str
    labels: Labels = ()


@dataclass(frozen=True, slots=True)
class CounterValue:
    """A cumulative counter as read: raw integer in the source's unit.

    ``width`` is the hardware width (32 or 64 bits) used for wrap extension; ``scale``
    converts the raw unit to the exported base unit (e.g. 1e-6 for microseconds).
    """

    raw: int
    source: str
    width: int = 64
    scale: float = 1.0

    @property
    def value(self) -> float:
        return scaled(self.raw, self.scale)


@dataclass(frozen=True, slots=True)
class NicIdentity:
    """Who a NIC is. The PCI function and permanent MAC identify it; the name is a label."""

    device: str
    ifindex: int | None
    driver: str | None
    driver_version: str | None
    firmware_version: str | None
    pci_address: str | None
    perm_address: str | None
    address: str | None


@dataclass(frozen=True, slots=True)
class Sample:
    """One interface after normalization: canonical counters and gauges for one poll."""

    identity: NicIdentity
    time: float
    monotonic: float
    counters: Mapping[SeriesKey, CounterValue]
    gauges: Mapping[SeriesKey, float]
    supported: frozenset[str]  # canonical counter families this interface provides
    stats_generation: int | None  # StatSet.generation, to detect a changed stat set
    reading: Reading = field(repr=False, compare=False)
