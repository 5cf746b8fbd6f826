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
from nicwatch.metrics import QUEUE_COUNTER, RAW_COUNTER, RAW_GAUGE
from nicwatch.model import (
    CounterValue,
    NicIdentity,
    Reading,
    Sample,
    SeriesKey,
    StatSet,
)
from nicwatch.snapshot.state import reading_state
from nicwatch.sources.host import HostInfo

FORMAT = "nicwatch-snapshot"
VERSION = 1
COMPRESS_ABOVE = 1 << 20  # default file names get .json.gz above this many bytes of JSON
GZIP_MAGIC = b"\x1f\x8b"

# Raw statistic sources, as keys of InterfaceSnapshot.raw.
ETHTOOL = "ethtool"  # `ethtool -S` (SIOCETHTOOL GSTATS)
NETDEV = "netdev"  # /sys/class/net/<if>/statistics (rtnl_link_stats64)
ETHTOOL_NETLINK = "ethtool_netlink"  # the kernel's standard statistics (STATS_GET etc.)
INFINIBAND = "infiniband"  # infiniband/<rdma device>/<port>/{hw_counters,counters}

# Opt-in families that repeat raw driver statistics; a snapshot keeps the statistics.
_RAW_FAMILIES = frozenset({RAW_COUNTER.name, RAW_GAUGE.name, QUEUE_COUNTER.name})
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
        prefix = f"{INFINIBAND}/{port.device}/{port.port}"
        if port.hw_counters:
            out[f"{prefix}/hw_counters"] = _statset(port.hw_counters)
        if port.counters:
            out[f"{prefix}/counters"] = _statset(port.counters)
    return out

def snapshot_series(sample: Sample) -> tuple[dict[SeriesKey, CounterValue],
                                              dict[SeriesKey, float]]:
    """The counters and gauges of a sample a snapshot keeps: all but the raw families (raw
    statistics are kept whole, by source)."""
    counters, gauges = sample.counters, sample.gauges
    return ({k: v for k, v in counters.items() if k.metric not in _RAW_FAMILIES},
            {k: v for k, v in gauges.items() if k.metric not in _RAW_FAMILIES})


def interface_snapshot(sample: Sample, raw: bool = True,
                       state: Mapping[str, Any] | None = None) -> InterfaceSnapshot:
    """``state``: the reading_state of the sample when the caller has it already."""
    counters, gauges = snapshot_series(sample)
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


def poll_of(samples: Sequence[Sample], time: float, monotonic: float,
            raw: bool = True) -> Poll:
    return Poll(time, monotonic, tuple(interface_snapshot(s, raw) for s in samples))


def build(host: HostInfo, polls: Sequence[Poll], label: str | None = None,
          raw_stats: bool = True, meta: Mapping[str, Any] | None = None) -> Snapshot:
    return Snapshot(host, __version__, label, tuple(polls), raw_stats,
                    MappingProxyType(dict(meta or {})))


