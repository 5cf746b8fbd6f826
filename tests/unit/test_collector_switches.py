"""Every source and consumer can be turned off node_exporter's way: ``--[no-]collector.NAME``
and ``--collector.disable-defaults``. A source turned off is never read and a consumer turned
off never fed; either shows as off (nicwatch_collector_enabled 0, the "watching" line), not
as a silently green daemon. The switches older than these (ethtool-netlink, module, vfs,
receive-path) keep working as before."""

from __future__ import annotations

import pytest

from nicwatch.cli.common import given_flags
from nicwatch.cli.main import parser
from nicwatch.collect import Collector, Selection, readers
from nicwatch.config import COLLECTORS, build
from nicwatch.consumers.registry import NAMED
from nicwatch.daemon import Daemon, watching
from nicwatch.sources import SourceOptions
from nicwatch.sources.registry import ROOTED, SOURCES, open_sources
from nicwatch.values import ConfigError

from fixture_ethtool import RecordedEthtool
from paths import ETHTOOL, SYSFS
from promtext import parse_exposition, series

DEVICE = "enp33s0f0np0"
PORTS = {DEVICE: {"driver": "mlx5_core", "perm_address": "0c:42:a1:00:00:01",
                  "stats": str(ETHTOOL / "mlx5_core.txt")}}


def flags(*argv: str) -> dict[str, str]:
    """The settings ``nicwatch serve ARGV`` gives, as the CLI hands them to config.build."""
    return given_flags(parser().parse_args(["serve", *argv]))


def test_every_source_and_consumer_has_exactly_one_switch():
    sources = [name for c in COLLECTORS for name in c.sources]
    consumers = [name for c in COLLECTORS for name in c.consumers]
    assert sorted(sources) == sorted(s.name for s in SOURCES)
    assert sorted(consumers) == sorted(NAMED)
    assert len({c.name for c in COLLECTORS}) == len(COLLECTORS)


def test_no_collector_and_disable_defaults_parse_as_node_exporter_does(tmp_path):
    config = build(None, flags("--no-collector.dcb", "--collector.module"))
    assert "dcbnl" in config.disabled_sources and "module" not in config.disabled_sources
    only = build(None, flags("--collector.disable-defaults", "--collector.ethtool-ioctl"))
    assert only.disabled_sources == {s.name for s in SOURCES} - {"ethtool_ioctl"}
    assert only.disabled_consumers == set(NAMED)
    # the switches that predate these: their flags and their meaning unchanged
    older = build(None, flags("--collector.receive-path=false", "--collector.vfs",
                              "--collector.ethtool-netlink=false"))
    assert {"netdev_genl", "rxpath", "ethtool_netlink"} <= older.disabled_sources
    assert "sriov" not in older.disabled_sources
    assert not older.collector_receive_path and older.collector_vfs
    assert build(None, {}).disabled_sources == {"module", "sriov", "lldp"}
    # off by default, as before
    assert build(None, {}).disabled_consumers == frozenset()
    # a TOML file turns them off as well, and disable-defaults spares what it names
    toml = tmp_path / "n.toml"
    toml.write_text("[collector]\ndisable_defaults = true\nincidents = true\nhwmon = true\n")
    from_file = build(str(toml), {})
    assert from_file.disabled_consumers == set(NAMED) - {"incidents"}
    assert "sysfs_hwmon" not in from_file.disabled_sources
    with pytest.raises(ConfigError, match=r"collector\.dcb"):
        build(None, {"collector.dcb": "maybe"})


def test_a_disabled_source_is_never_opened(tmp_path):
    options = SourceOptions(sysfs=str(SYSFS / "mlx5-rdma"), procfs=str(tmp_path))
    names = [r.name for r in ROOTED]
    opened = [s.name for s in open_sources(SourceOptions(
        options.sysfs, options.procfs, ethtool_netlink=False, receive_path=False,
        disabled=frozenset(s.name for s in SOURCES) - {"sysfs_hwmon", "rdma"}))]
    assert opened == ["rdma", "sysfs_hwmon"]
    assert "sysfs_hwmon" in names


def _daemon(tmp_path, *argv: str) -> tuple[Daemon, dict[str, int]]:
    """The fixture collector (mlx5-rdma: an mlx5 port with an RDMA device and a PCIe path),
    each source's reads counted."""
    options = SourceOptions(sysfs=str(SYSFS / "mlx5-rdma"))
    collector = Collector(SYSFS / "mlx5-rdma", Selection(include=".*"), sources=[
        *readers(ioctl=RecordedEthtool(PORTS)),
        *(registered.open(options) for registered in ROOTED)])
    reads: dict[str, int] = {}
    for source in collector.sources:
        def counted(poll, _read=source.read, _name=source.name):
            reads[_name] = reads.get(_name, 0) + 1
            _read(poll)
        source.read = counted  # type: ignore[method-assign]  # instrumentation only
    config = build(None, {"state.file": str(tmp_path / "state.json"), **flags(*argv)})
    return Daemon(config, collector=collector), reads


def test_a_disabled_source_is_not_read_and_shows_as_off(tmp_path):
    on, on_reads = _daemon(tmp_path)
    off, off_reads = _daemon(tmp_path, "--no-collector.rdma", "--no-collector.diagnosis")
    for _ in range(2):
        served = parse_exposition(on.poll_once().get(False, False).decode())
        body = off.poll_once().get(False, False).decode()
    text = parse_exposition(body)
    assert on_reads["rdma"] == 2 and "rdma" not in off_reads
    assert off_reads["ethtool_ioctl"] == 2 and off_reads["sysfs_pci"] == 2
    assert text[series("nicwatch_collector_enabled", collector="rdma")] == 0
    assert text[series("nicwatch_collector_enabled", collector="diagnosis")] == 0
    assert text[series("nicwatch_collector_enabled", collector="pci")] == 1
    assert served[series("nicwatch_collector_enabled", collector="rdma")] == 1
    assert series("nicwatch_source_up", source="rdma") in served
    assert series("nicwatch_source_up", source="rdma") not in text
    assert any(k[0].startswith("nic_rdma_") for k in served)
    assert not any(k[0].startswith("nic_rdma_") for k in text)
    assert not any(k[0].startswith("nic_diagnosis") for k in text)
    assert text[series("nic_rx_out_of_buffer_drops_total", device=DEVICE)] >= 0
    result = off.collector.poll()
    line = watching(off.config, off.collector, result)
    assert line["not_read"]["rdma"] == "off (--no-collector.rdma)"
    assert not any(type(c).__name__ == "Diagnosis" for c in off.consumers)


def test_the_statistics_alone_serve_without_any_consumer(tmp_path):
    daemon, reads = _daemon(tmp_path, "--collector.disable-defaults",
                            "--collector.ethtool-ioctl")
    assert daemon.consumers == [] and daemon.recorder is None
    for _ in range(2):
        text = parse_exposition(daemon.poll_once().get(True, False).decode())
    assert reads == {"ethtool_ioctl": 2}
    assert text[series("nic_rx_out_of_buffer_drops_total", device=DEVICE)] >= 0
    enabled = {dict(k[1])["collector"]: v for k, v in text.items()
               if k[0] == "nicwatch_collector_enabled"}
    assert enabled == {c.name: float(c.name == "ethtool-ioctl") for c in COLLECTORS}


def test_a_source_turned_off_in_a_collector_built_elsewhere_is_closed_and_dropped(tmp_path):
    """The demo and benchmarks hand the daemon a collector of their own: a source the
    configuration turns off is closed (a module source's thread ends) and never read."""
    closed: list[str] = []

    class Handle:
        name = "module"
        fills: frozenset[str] = frozenset({"module"})
        needs: frozenset[str] = frozenset()

        def read(self, poll):
            raise AssertionError("a source turned off was read")

        def close(self):
            closed.append(self.name)

    collector = Collector(SYSFS / "mlx5-rdma", Selection(include=".*"),
                          sources=[*readers(ioctl=RecordedEthtool(PORTS)), Handle()])
    config = build(None, {"state.file": str(tmp_path / "s.json")})  # module: off by default
    daemon = Daemon(config, collector=collector)
    assert closed == ["module"] and [s.name for s in daemon.collector.sources] == [
        "ethtool_ioctl"]
    daemon.poll_once()


@pytest.mark.parametrize("command", ["show", "snapshot", "record", "check"])
def test_the_commands_that_poll_take_the_source_switches(command):
    argv = [command, "--no-collector.dcb", "--collector.disable-defaults", "--collector.pci"]
    if command == "record":
        argv += ["-o", "out", "--", "true"]
    got = given_flags(parser().parse_args(argv))
    assert {k: got[k] for k in ("collector.dcb", "collector.disable_defaults",
                                "collector.pci")} == {
        "collector.dcb": "false", "collector.disable_defaults": "true", "collector.pci": "true"}
