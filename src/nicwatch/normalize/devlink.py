"""Series from the devlink health reporters and the devlink port of an interface
(sources/devlink.py): per reporter, labelled by its device handle, port index ("" for a
device reporter) and name; and the firmware versions of its devlink instance (devlink dev
info), with the components flashed but not activated."""

from __future__ import annotations

from nicwatch.metrics import FIRMWARE_INFO, FIRMWARE_PENDING
from nicwatch.model import CounterValue, DevlinkInfo, Reading, SeriesKey
from nicwatch.normalize.drivers import TABLES

STATES = ("healthy", "error", "unknown")


def _labels(handle: str, port: int | None, name: str) -> tuple[tuple[str, str], ...]:
    return (("devlink", handle), ("devlink_port", "" if port is None else str(port)),
            ("reporter", name))


def devlink_counters(reading: Reading) -> dict[SeriesKey, CounterValue]:
    out: dict[SeriesKey, CounterValue] = {}
    for r in reading.devlink_health:
        labels = _labels(r.handle, r.port, r.name)
        out[SeriesKey("nic_devlink_health_errors_total", labels)] = CounterValue(
            r.errors, "devlink")
        out[SeriesKey("nic_devlink_health_recoveries_total", labels)] = CounterValue(
            r.recoveries, "devlink")
    return out


def devlink_gauges(reading: Reading) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    for r in reading.devlink_health:
        labels = _labels(r.handle, r.port, r.name)
        for state in STATES:
            out[SeriesKey("nic_devlink_health_reporter_state", (*labels, ("state", state)))] = (
                float(r.state == state))
        if r.last_dump_time is not None:
            out[SeriesKey("nic_devlink_health_last_dump_timestamp_seconds", labels)] = (
                r.last_dump_time)
        if r.auto_recover is not None:
            out[SeriesKey("nic_devlink_health_auto_recover", labels)] = float(r.auto_recover)
        out[SeriesKey("nic_devlink_health_recoverable", labels)] = float(r.recoverable)
    port = reading.devlink_port
    if port is not None:
        out[SeriesKey("nic_devlink_port_info", (
            ("devlink", port.handle), ("devlink_port", str(port.index)),
            ("flavour", port.flavour or ""),
            ("number", "" if port.number is None else str(port.number)),
            ("split_subport", "" if port.split_subport is None else str(port.split_subport)),
        ))] = 1.0
    return out


# --- devlink dev info: firmware versions ---------------------------------------------------

# Values a driver reports when it could not read a version, not a version: never compared
# (each driver's table says which, DriverTable.devlink_unreadable).
UNREADABLE_VERSIONS: dict[str, frozenset[str]] = {
    driver: t.devlink_unreadable for driver, t in TABLES.items() if t.devlink_unreadable}


def pending_components(info: DevlinkInfo) -> dict[str, tuple[str, str] | None]:
    """component -> (stored, running) where they differ, None where they are equal, for
    every component with both a running and a stored version that the driver could read
    (UNREADABLE_VERSIONS). A stored image that differs from the running one has been
    flashed and not yet activated."""
    running = {v.name: v.value for v in info.versions if v.slot == "running"}
    stored = {v.name: v.value for v in info.versions if v.slot == "stored"}
    unreadable = UNREADABLE_VERSIONS.get(info.driver or "", frozenset())
    out: dict[str, tuple[str, str] | None] = {}
    for name in sorted(running.keys() & stored.keys()):
        if running[name] in unreadable or stored[name] in unreadable:
            continue
        out[name] = None if running[name] == stored[name] else (stored[name], running[name])
    return out


def firmware_gauges(info: DevlinkInfo | None) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    if info is None:
        return out
    for v in info.versions:
        out[SeriesKey(FIRMWARE_INFO.name, (("component", v.name), ("devlink", info.handle),
                                           ("slot", v.slot), ("version", v.value)))] = 1.0
    for name, pending in pending_components(info).items():
        out[SeriesKey(FIRMWARE_PENDING.name, (("component", name),
                                              ("devlink", info.handle)))] = float(
            pending is not None)
    return out
