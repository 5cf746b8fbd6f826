"""A source that raises fails only itself: every other source's parts are served, the source
is marked down (nicwatch_source_up 0) with its duration, and the failure is logged once when it
starts and once when it ends. A fixture tree shaped like the kernel's (mlx5-rdma) and the
recorded mlx5 ioctl answers."""

from __future__ import annotations

from typing import ClassVar

from structlog.testing import capture_logs

from nicwatch.collect import Collector, Selection, readers
from nicwatch.config import build
from nicwatch.daemon import Daemon
from nicwatch.sources import PartError, Poll, SourceOptions
from nicwatch.sources.registry import ROOTED

from fixture_ethtool import RecordedEthtool
from paths import ETHTOOL, SYSFS
from promtext import parse_exposition, series

DEVICE = "enp33s0f0np0"
PORTS = {DEVICE: {"driver": "mlx5_core", "perm_address": "0c:42:a1:00:00:01",
                  "stats": str(ETHTOOL / "mlx5_core.txt")}}


class Raising:
    """A source with a bug: raises while ``failing``; otherwise puts nothing."""

    name = "broken"
    fills: ClassVar[frozenset[str]] = frozenset({"roce_ecn"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, error: Exception) -> None:
        self.error: Exception | None = error
        self.reads = 0

    def read(self, poll: Poll) -> None:
        self.reads += 1
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        pass


class Misspelt(Raising):
    """A source that puts a part no Reading has (a typo the type checker also refuses)."""

    name = "misspelt"

    def read(self, poll: Poll) -> None:
        for nc in poll.each():
            poll.put(nc.name, "rocee_ecn", None)  # type: ignore[arg-type]  # the typo tested


def collector(*first: object) -> Collector:
    """The fixture collector with ``first`` ahead of the ioctl source and the rooted ones."""
    options = SourceOptions(sysfs=str(SYSFS / "mlx5-rdma"))
    return Collector(SYSFS / "mlx5-rdma", Selection(include=".*"), sources=[
        *first, *readers(ioctl=RecordedEthtool(PORTS)),  # type: ignore[list-item]
        *(registered.open(options) for registered in ROOTED)])


def test_a_raising_source_leaves_every_other_source_served():
    broken = Raising(RuntimeError("a bug in a parser"))
    result = collector(broken).poll()
    runs = {run.source: run for run in result.sources}
    assert runs["broken"].up is False and broken.reads == 1
    assert all(run.up for name, run in runs.items() if name != "broken")
    assert list(runs) == ["broken", "ethtool_ioctl", "sysfs_pci", "rdma",
                          "sysfs_roce_ecn", "sysfs_bonding", "sysfs_hwmon", "host", "rxpath"]
    assert all(run.seconds >= 0 for run in runs.values())
    errors = [(d, e.source, e.kind, e.message) for d, e in result.errors if e.source == "broken"]
    assert errors == [("", "broken", "RuntimeError", "a bug in a parser")]
    sample = next(s for s in result.samples if s.identity.device == DEVICE)
    assert sample.raw_stats is not None  # ethtool_ioctl, after the broken source
    assert sample.pcie is not None and sample.reading.rdma  # sysfs_pci, sysfs_infiniband
    assert sample.counter("nic_rx_out_of_buffer_drops_total") is not None
    assert result.host.softirq_seconds


def test_an_os_error_of_a_source_is_its_errno():
    result = collector(Raising(OSError(24, "Too many open files"))).poll()
    assert [(e.kind, e.message) for d, e in result.errors if e.source == "broken"] == [
        ("EMFILE", "[Errno 24] Too many open files")]


def test_a_misspelt_part_fails_the_source_that_put_it():
    result = collector(Misspelt(RuntimeError())).poll()
    [(device, error)] = [(d, e) for d, e in result.errors if e.source == "misspelt"]
    assert device == "" and error.kind == "PartError" and "'rocee_ecn'" in error.message
    assert {run.source: run.up for run in result.sources}["misspelt"] is False
    sample = next(s for s in result.samples if s.identity.device == DEVICE)
    assert sample.raw_stats is not None and sample.pcie is not None


def test_poll_put_refuses_a_part_no_reading_has():
    poll = Poll([])
    try:
        poll.put("eth0", "stat", None)  # type: ignore[arg-type]  # the refusal tested
    except PartError as e:
        assert "'stat' is not a Reading part" in str(e)
    else:
        raise AssertionError("a misspelt part was accepted")


def test_the_daemon_marks_the_source_down_and_logs_it_once(tmp_path):
    broken = Raising(RuntimeError("a bug in a parser"))
    config = build(None, {"state.file": str(tmp_path / "state.json")})
    daemon = Daemon(config, collector=collector(broken))
    with capture_logs() as logs:
        for _ in range(3):
            text = daemon.poll_once().get(False, False).decode()
        broken.error = None
        recovered = daemon.poll_once().get(False, False).decode()
        daemon.poll_once()
    m = parse_exposition(text)
    assert m[series("nicwatch_source_up", source="broken")] == 0
    assert m[series("nicwatch_source_up", source="ethtool_ioctl")] == 1
    assert m[series("nicwatch_source_up", source="sysfs_pci")] == 1
    assert m[series("nicwatch_source_duration_seconds", source="broken")] >= 0
    assert m[series("nicwatch_source_errors_total", device="", source="broken")] == 3
    assert m[series("nic_rx_out_of_buffer_drops_total", device=DEVICE)] >= 0  # still served
    assert parse_exposition(recovered)[series("nicwatch_source_up", source="broken")] == 1
    # (the traceback, source_raised, is at debug: filtered out when the suite ran with info)
    mine = [(e["event"], e["log_level"]) for e in logs
            if e.get("source") == "broken" and e["log_level"] != "debug"]
    assert mine == [("source_failed", "warning"), ("source_recovered", "info")]
