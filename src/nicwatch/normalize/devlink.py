"""Series from the devlink health reporters and the devlink port of an interface
(sources/devlink.py): per reporter, labelled by its device handle, port index ("" for a
device reporter) and name."""

from __future__ import annotations

from nicwatch.model import CounterValue, Reading, SeriesKey

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
