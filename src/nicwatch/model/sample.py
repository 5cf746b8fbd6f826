"""What normalize makes of a Reading: series keys and values, the typed NicState, the
Sample, the RdmaSample (both :class:`Counted` things) and a consumer's ExtraFamily."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple, Protocol

from nicwatch.model.device import NetClass, SourceError
from nicwatch.model.ethtool import Channels, FecParams, PauseParams, Rings, StatSet
from nicwatch.model.pci import PcieLink, PciePath, PcieVerdict
from nicwatch.model.rdma import RdmaPort
from nicwatch.model.reading import Reading

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



class CounterValue(NamedTuple):
    """A cumulative counter as read: raw integer in the source's unit.

    ``width`` is the hardware width (32 or 64 bits) used for wrap extension; ``scale``
    converts the raw unit to the exported base unit (e.g. 1e-6 for microseconds).
    ``saturates``: the counter stops at ``2**width - 1`` instead of wrapping (the IB PMA
    PortCounters of ``counters/``): at that value it is saturated, its increase since then
    unknown; a fall is a reset (someone cleared it), never a wrap.

    A named tuple, as SeriesKey: one is made for every counter series that moved, every
    poll (thousands on a host of ConnectX ports), and a named tuple is made in C, four
    times faster than a frozen dataclass.
    """

    raw: int
    source: str
    width: int = 64
    scale: float = 1.0
    saturates: bool = False

    @property
    def saturated(self) -> bool:
        return self.saturates and self.raw >= (1 << self.width) - 1

    @property
    def value(self) -> float:
        return scaled(self.raw, self.scale)



class Counted(Protocol):
    """A counted thing of one poll (an interface, an RDMA port; a VF or a queue pair would be
    one more): what the tracker and the exporter read of it, so that one path tracks and
    renders every kind. A new kind is a new sample type with these members."""

    # Whether its wrap-safe interval is exported: its own labels tell it apart from every
    # other thing's (an interface's device; an RDMA port's netdev is its interface's)
    reports_wrap_safety: ClassVar[bool]

    @property
    def key(self) -> str:
        """Who it is among the things of its kind, poll after poll (tracker state, render
        blocks)."""

    @property
    def own_labels(self) -> Labels:
        """The labels in front of each of its series' own."""

    @property
    def reset_labels(self) -> Labels:
        """The labels of its series of resets (by reason), in front of ``reason``."""

    @property
    def incarnation(self) -> tuple[int | None, str | None]:
        """Ifindex and driver: either one changed under the same key is a new thing (a
        reset); None: not known, no evidence."""

    @property
    def stats_generation(self) -> int | None:
        """The driver statistic set's generation: a change is a reset; None: not known."""

    @property
    def monotonic(self) -> float: ...

    @property
    def counters(self) -> Mapping[SeriesKey, CounterValue]: ...

    @property
    def gauges(self) -> Mapping[SeriesKey, float]: ...

    def line_rate(self, gauge: SeriesKey) -> float | None:
        """Bytes/s its link carries now (None or 0: unknown). ``gauge``: the key of the
        line-rate gauge (the model names no family)."""



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

class ModuleState:
    """A port's pluggable module as normalize resolved it from the decoded EEPROM and the
    collector's read status. None: not read, not reported or not decoded."""

    read_state: str | None = None  # a MODULE_STATES name; "corrupt": checksums fail
    read_at: float | None = None  # wall clock of the EEPROM shown
    temperature_celsius: float | None = None
    temperature_high_warning_celsius: float | None = None



@dataclass(frozen=True, slots=True)

class NicState:
    """One interface's link, configuration, PCIe and module state, resolved once in normalize
    from every source that reports it (nicwatch.normalize.state: ethtool netlink rings and
    channels win over the ioctl's). The state gauges are rendered from it, and consumers and
    views read it instead of decoding gauges. None: not reported."""

    up: bool | None = None  # operstate "up"; None: no operstate
    carrier: bool | None = None
    mtu: int | None = None
    speed_mbps: int | None = None
    full_duplex: bool | None = None  # None: duplex unknown
    lanes: int | None = None  # lanes of the link mode (LINKMODES_GET)
    rings: Rings | None = None
    channels: Channels | None = None
    fec: FecParams | None = None
    pause: PauseParams | None = None
    pcie_link: PcieLink | None = None  # the NIC function's own link (hop 0 of its path)
    module: ModuleState | None = None



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
    reading: Reading = field(repr=False, compare=False)  # the raw record; use the lookups below
    pcie_verdict: PcieVerdict | None = None  # derived after reading, across NICs sharing a link
    state: NicState = NicState()  # resolved in normalize; read this, not the gauges

    reports_wrap_safety: ClassVar[bool] = True

    # What it is as a Counted thing

    @property
    def key(self) -> str:
        return self.identity.device

    @property
    def own_labels(self) -> Labels:
        return (("device", self.identity.device),)

    @property
    def reset_labels(self) -> Labels:
        return (("device", self.identity.device),)

    @property
    def incarnation(self) -> tuple[int | None, str | None]:
        return self.identity.ifindex, self.identity.driver

    def line_rate(self, gauge: SeriesKey) -> float | None:
        return self.gauges.get(gauge)

    # Lookups for consumers and views, so none reaches into the raw reading.

    @property
    def netclass(self) -> NetClass:
        """Link state and netdev attributes (sysfs)."""
        return self.reading.netclass

    @property
    def pcie(self) -> PciePath | None:
        """The PCI function and every port above it; None: not a PCI device."""
        return self.reading.pcie

    @property
    def local_cpus(self) -> tuple[int, ...] | None:
        """CPUs local to the NIC's PCI function (its local_cpulist)."""
        path = self.reading.pcie
        return path.hops[0].local_cpus if path and path.hops else None

    @property
    def rdma_ports(self) -> tuple[RdmaPort, ...]:
        """The RDMA ports whose netdev this interface is (their own series are in
        RdmaSamples)."""
        return self.reading.rdma

    @property
    def rx_cpus(self) -> tuple[int, ...]:
        """CPUs serving the NIC's receive path: its interrupts' effective affinity and its
        RPS CPUs (those whose softnet lines its receive path reading holds)."""
        rx = self.reading.rxpath
        return tuple(row.cpu for row in rx.softnet) if rx is not None else ()

    @property
    def raw_stats(self) -> StatSet | None:
        """The driver's `ethtool -S` statistics as read."""
        return self.reading.stats

    @property
    def errors(self) -> tuple[SourceError, ...]:
        """Sources that failed for this interface in this poll."""
        return self.reading.errors

    def counter(self, metric: str) -> float | None:
        """A counter family summed over its labels (base units); None: absent."""
        values = [cv.value for k, cv in self.counters.items() if k.metric == metric]
        return sum(values) if values else None

    def gauge(self, metric: str, **labels: str) -> float | None:
        """The gauge series of ``metric`` with exactly ``labels``; None: absent."""
        want = tuple(sorted(labels.items()))
        return next((v for k, v in self.gauges.items() if k.metric == metric and k.labels == want),
                    None)



@dataclass(frozen=True, slots=True)

class RdmaSample:
    """One RDMA port after normalization: its canonical counters and gauges, keyed by series
    whose labels include ``rdma_device`` and ``port`` (the netdev, where the port has one,
    is the ``device`` label the exporter adds). ``port`` is the raw record."""

    port: RdmaPort
    time: float
    monotonic: float
    counters: Mapping[SeriesKey, CounterValue]
    gauges: Mapping[SeriesKey, float]

    # no series of its own for the wrap-safe interval: its netdev's would be its interface's
    reports_wrap_safety: ClassVar[bool] = False

    @property
    def key(self) -> str:
        return self.port.key  # "mlx5_0/1": no netdev name has a "/"

    @property
    def netdev(self) -> str | None:
        return self.port.netdev

    @property
    def own_labels(self) -> Labels:
        netdev = self.port.netdev
        return (("device", netdev),) if netdev is not None else ()

    @property
    def reset_labels(self) -> Labels:
        port = self.port
        return self.own_labels + (("port", str(port.port)), ("rdma_device", port.device))

    @property
    def incarnation(self) -> tuple[int | None, str | None]:
        return None, None  # no replacement evidence: a port is its device and number

    @property
    def stats_generation(self) -> int | None:
        return None  # its counter set is read by name, no generation

    def line_rate(self, gauge: SeriesKey) -> float | None:
        rate = self.port.rate_bytes_per_second
        return float(rate) if rate else None



@dataclass(frozen=True, slots=True)

class ExtraFamily:
    """A family from a consumer other than the tracker (expectations, identity, CPU load)."""

    name: str
    type: str
    help: str
    series: tuple[tuple[tuple[tuple[str, str], ...], float], ...]
