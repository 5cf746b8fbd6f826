"""Gauges and identity that come straight from a Reading's configuration fields."""

from __future__ import annotations

from nicwatch.model import NicIdentity, Reading, SeriesKey
from nicwatch.metrics import CANONICAL_COUNTERS


def identity_of(reading: Reading, driver: str | None) -> NicIdentity:
    nc, di = reading.netclass, reading.driver_info
    return NicIdentity(
        device=reading.device,
        ifindex=nc.ifindex,
        driver=driver,
        driver_version=di.version if di else None,
        firmware_version=di.firmware_version if di else None,
        pci_address=nc.pci_address,
        perm_address=reading.perm_address,
        address=nc.address,
    )


# Keys that are the same for every interface and poll, built once.
_SUPPORTED_KEYS = tuple((name, SeriesKey("nic_stat_supported", (("counter", name),)))
                        for name in CANONICAL_COUNTERS)


def _put(out: dict, metric: str, value, labels=()) -> None:
    if value is not None:
        out[SeriesKey(metric, tuple(labels))] = float(value)


def reading_gauges(reading: Reading, driver: str | None,
                   supported: frozenset[str]) -> dict[SeriesKey, float]:
    nc, di = reading.netclass, reading.driver_info
    out: dict[SeriesKey, float] = {}
    info = (("driver", driver or ""), ("driver_version", di.version if di else ""),
            ("firmware_version", di.firmware_version if di else ""),
            ("mac", nc.address or ""), ("pci_address", nc.pci_address or ""),
            ("perm_mac", reading.perm_address or ""),
            ("rdma_device", ",".join(sorted({p.device for p in reading.rdma}))))
    _put(out, "nic_info", 1, info)
    if nc.operstate is not None:
        _put(out, "nic_link_up", nc.operstate == "up")
    _put(out, "nic_carrier", nc.carrier)
    _put(out, "nic_mtu_bytes", nc.mtu)
    if nc.speed_mbps is not None:
        _put(out, "nic_link_speed_bytes_per_second", nc.speed_mbps * 125_000)
    if nc.duplex in ("full", "half"):
        _put(out, "nic_link_full_duplex", nc.duplex == "full")
    rings = (reading.netlink and reading.netlink.rings) or reading.rings
    if rings:
        for ring in ("rx", "tx"):
            _put(out, "nic_ring_descriptors", getattr(rings, ring), (("ring", ring),))
            _put(out, "nic_ring_max_descriptors", getattr(rings, f"{ring}_max"), (("ring", ring),))
    channels = (reading.netlink and reading.netlink.channels) or reading.channels
    if channels:
        for kind in ("rx", "tx", "other", "combined"):
            _put(out, "nic_channels", getattr(channels, kind), (("type", kind),))
            _put(out, "nic_channels_max", getattr(channels, f"{kind}_max"), (("type", kind),))
    fec = reading.netlink.fec if reading.netlink else None
    if fec:
        _put(out, "nic_fec_mode_info", 1, (("active", fec.active or ""),
                                           ("configured", ",".join(fec.configured))))
    if reading.dcb_pfc is not None:
        for priority in range(8):
            _put(out, "nic_pfc_enabled", priority in reading.dcb_pfc.enabled,
                 (("priority", str(priority)),))
    pause = reading.netlink.pause if reading.netlink else None
    if pause:
        _put(out, "nic_pause_autoneg", pause.autoneg)
        _put(out, "nic_pause_enabled", pause.rx, (("direction", "rx"),))
        _put(out, "nic_pause_enabled", pause.tx, (("direction", "tx"),))
    for name, key in _SUPPORTED_KEYS:
        out[key] = float(name in supported)
    return out
