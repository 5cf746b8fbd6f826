"""Snapshot records and how they are built from Samples: the interfaces of one poll, the
polls of one document, and the raw statistics kept by source. The file format is
docs/snapshots.md; encoding is snapshot.codec, the validating decoder snapshot.decode, the
diff snapshot.diff."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from nicwatch import __version__
from nicwatch.metrics import QUEUE_COUNTER, RAW_COUNTER, RAW_GAUGE, RDMA_RAW_COUNTER
from nicwatch.model import (
    CounterValue,
    NicIdentity,
    RdmaPort,
    RdmaSample,
    Reading,
    Sample,
    SeriesKey,
    StatSet,
)
from nicwatch.snapshot.statekey import RDMA_COUNTER_FIELDS, jsonable, reading_state
from nicwatch.sources.host import HostInfo

FORMAT = "nicwatch-snapshot"
VERSION = 1
COMPRESS_ABOVE = 1 << 20  # default file names get .json.gz above this many bytes of JSON
GZIP_MAGIC = b"\x1f\x8b"

# Raw statistic sources, as keys of InterfaceSnapshot.raw.
ETHTOOL = "ethtool"  # `ethtool -S` (SIOCETHTOOL GSTATS)
NETDEV = "netdev"  # /sys/class/net/<if>/statistics (rtnl_link_stats64)
ETHTOOL_NETLINK = "ethtool_netlink"  # the kernel's standard statistics (STATS_GET etc.)
INFINIBAND = "infiniband"  # infiniband/<rdma device>/<port>/{hw_counters,counters,counters_ext}

# Opt-in families that repeat raw driver statistics; a snapshot keeps the statistics.
# (the RDMA one repeats hw_counters/ and counters/, kept whole as INFINIBAND stat sets).
_RAW_FAMILIES = frozenset({RAW_COUNTER.name, RAW_GAUGE.name, QUEUE_COUNTER.name,
                           RDMA_RAW_COUNTER.name})
# NicIdentity fields a snapshot stores besides the device name
IDENTITY_FIELDS = tuple(f.name for f in dataclasses.fields(NicIdentity) if f.name != "device")


class SnapshotError(Exception):
    """A snapshot file that cannot be read or written; the message names the file."""


class DiffError(Exception):
    """Two snapshots whose counters cannot be subtracted (different boots, wrong order)."""


def _empty() -> Mapping[str, int]:
    return MappingProxyType({})


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class InterfaceSnapshot:
    """One interface in one poll.

    ``counters``: the canonical counters as read (raw value, source, width, scale).
    ``raw``: statistic sets by source (:data:`ETHTOOL`, :data:`NETDEV`, ...); empty when
    the document was written without raw statistics. ``state``: configuration and link
    state as JSON values (link, driver, rings, channels, pause, FEC, PCIe path and
    verdict, RDMA ports, source errors), kept for the record.
    """

    identity: NicIdentity
    time: float  # wall clock of the reading
    monotonic: float  # CLOCK_MONOTONIC of the reading; comparable within one boot
    counters: Mapping[SeriesKey, CounterValue]
    gauges: Mapping[SeriesKey, float]
    raw: Mapping[str, StatSet]
    state: Mapping[str, Any]

    @property
    def device(self) -> str:
        return self.identity.device


@dataclass(frozen=True, slots=True)
class Poll:
    """Every selected interface at one poll; ``time``/``monotonic``: when it was taken."""

    time: float
    monotonic: float
    interfaces: tuple[InterfaceSnapshot, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A document: one poll (a snapshot) or many (a series or a history dump).

    ``raw_stats`` False means raw statistics were not recorded (not that there were none).
    ``meta`` is free-form context, e.g. the command a ``record`` wrapped.
    """

    host: HostInfo
    nicwatch_version: str
    label: str | None
    polls: tuple[Poll, ...]
    raw_stats: bool = True
    meta: Mapping[str, Any] = field(default_factory=_empty)

# --------------------------------------------------------------------------- building

LABEL_MAX = 200


def check_label(label: str) -> str:
    """A label as given, if it is at most LABEL_MAX printable characters."""
    if len(label) > LABEL_MAX or not label.isprintable():
        raise ValueError(f"label: expected at most {LABEL_MAX} printable characters, got "
                         f"{label[:40]!r}{'...' if len(label) > 40 else ''}")
    return label




def _statset(values: Mapping[str, int]) -> StatSet:
    return StatSet(tuple(values), tuple(values.values()), 0)


def raw_stat_sets(reading: Reading) -> dict[str, StatSet]:
    """Every raw statistic the sources returned, by source."""
    out: dict[str, StatSet] = {}
    if reading.stats is not None:
        out[ETHTOOL] = reading.stats
    if reading.netclass.stats:
        out[NETDEV] = _statset(reading.netclass.stats)
    if reading.netlink is not None and reading.netlink.std_stats:
        out[ETHTOOL_NETLINK] = _statset(reading.netlink.std_stats)
    for port in reading.rdma:
        out.update(_rdma_stat_sets(port))
    return out


def _rdma_stat_sets(port: RdmaPort) -> dict[str, StatSet]:
    prefix = f"{INFINIBAND}/{port.device}/{port.port}"
    out: dict[str, StatSet] = {}
    for group, values in (("hw_counters", port.hw_counters), ("counters", port.counters),
                          ("counters_ext", port.counters_ext)):
        if values:
            out[f"{prefix}/{group}"] = _statset(values)
    return out


def snapshot_series(sample: Sample, rdma: Sequence[RdmaSample] = ()
                    ) -> tuple[dict[SeriesKey, CounterValue], dict[SeriesKey, float]]:
    """The counters and gauges of a sample a snapshot keeps, with those of the RDMA ports
    ``rdma`` whose netdev it is (their series carry ``rdma_device`` and ``port``): all but
    the raw families (raw statistics are kept whole, by source)."""
    counters = {k: v for k, v in sample.counters.items() if k.metric not in _RAW_FAMILIES}
    gauges = {k: v for k, v in sample.gauges.items() if k.metric not in _RAW_FAMILIES}
    for port in rdma:
        counters.update((k, v) for k, v in port.counters.items()
                        if k.metric not in _RAW_FAMILIES)
        gauges.update((k, v) for k, v in port.gauges.items() if k.metric not in _RAW_FAMILIES)
    return counters, gauges


def interface_snapshot(sample: Sample, raw: bool = True,
                       state: Mapping[str, Any] | None = None,
                       rdma: Sequence[RdmaSample] = ()) -> InterfaceSnapshot:
    """``state``: the reading_state of the sample when the caller has it already; ``rdma``:
    the RDMA ports whose netdev it is."""
    counters, gauges = snapshot_series(sample, rdma)
    return InterfaceSnapshot(
        identity=sample.identity,
        time=sample.time,
        monotonic=sample.monotonic,
        counters=MappingProxyType(counters),
        gauges=MappingProxyType(gauges),
        raw=MappingProxyType(raw_stat_sets(sample.reading) if raw else {}),
        state=MappingProxyType(reading_state(sample.reading, sample.pcie_verdict)
                               if state is None else state),
    )


def rdma_port_snapshot(port: RdmaSample, raw: bool = True) -> InterfaceSnapshot:
    """The record of an RDMA port that has no record of a netdev to join (an InfiniBand
    port): named by its ``rdma_device/port`` key (no interface name has a ``/``), its
    series, its raw counter files (:data:`INFINIBAND` stat sets) and its state."""
    record = port.port
    identity = NicIdentity(port.key, None, record.driver, None, None, record.pci_function,
                           None, None)
    counters, gauges = snapshot_series_of_ports([port])
    return InterfaceSnapshot(
        identity=identity, time=port.time, monotonic=port.monotonic,
        counters=MappingProxyType(counters), gauges=MappingProxyType(gauges),
        raw=MappingProxyType(_rdma_stat_sets(record) if raw else {}),
        state=MappingProxyType({"rdma": [jsonable(record, RDMA_COUNTER_FIELDS)]}))


def snapshot_series_of_ports(rdma: Sequence[RdmaSample]
                             ) -> tuple[dict[SeriesKey, CounterValue], dict[SeriesKey, float]]:
    counters: dict[SeriesKey, CounterValue] = {}
    gauges: dict[SeriesKey, float] = {}
    for port in rdma:
        counters.update((k, v) for k, v in port.counters.items()
                        if k.metric not in _RAW_FAMILIES)
        gauges.update((k, v) for k, v in port.gauges.items() if k.metric not in _RAW_FAMILIES)
    return counters, gauges


def poll_of(samples: Sequence[Sample], time: float, monotonic: float,
            raw: bool = True, rdma: Sequence[RdmaSample] = ()) -> Poll:
    """The interfaces of one poll; each RDMA port of ``rdma`` with a netdev joins its
    netdev's record (none when the interface selection left the netdev out), and a port
    without a netdev (an InfiniBand port) has a record of its own
    (:func:`rdma_port_snapshot`), after the interfaces."""
    by_netdev: dict[str, list[RdmaSample]] = {}
    own: list[RdmaSample] = []
    for port in rdma:
        if port.netdev is not None:
            by_netdev.setdefault(port.netdev, []).append(port)
        else:
            own.append(port)
    return Poll(time, monotonic, (
        *(interface_snapshot(s, raw, rdma=by_netdev.get(s.identity.device, ()))
          for s in samples),
        *(rdma_port_snapshot(port, raw) for port in own)))


def build(host: HostInfo, polls: Sequence[Poll], label: str | None = None,
          raw_stats: bool = True, meta: Mapping[str, Any] | None = None) -> Snapshot:
    return Snapshot(host, __version__, label, tuple(polls), raw_stats,
                    MappingProxyType(dict(meta or {})))


