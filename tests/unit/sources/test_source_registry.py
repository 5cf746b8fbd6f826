"""The one list of sources: every entry opens a Source, and a collector over all of them reads
a fixture tree (the kernel sources find no such interface there, and say so per interface)."""

from nicwatch.collect import Collector, Selection
from nicwatch.normalize.lldp import decode_frame
from nicwatch.sources import Source, SourceOptions
from nicwatch.sources.devlink import DevlinkNetlink, DevlinkUnavailable
from nicwatch.sources.registry import SOURCES, open_sources

from paths import SYSFS


def _kernel_lacks_devlink() -> bool:
    """The one registered source a kernel may lack (CONFIG_NET_DEVLINK=n) opens as None."""
    try:
        DevlinkNetlink().close()
    except DevlinkUnavailable:
        return True
    return False


def test_every_registered_source_implements_the_contract():
    sources = open_sources(SourceOptions(sysfs=str(SYSFS / "mlx5-rdma"), module=True,
                                         vfs=True, lldp=True,
                                         lldp_decode=decode_frame))  # all opt-ins on
    try:
        names = [s.name for s in sources]
        assert len(sources) == len(SOURCES) - _kernel_lacks_devlink()
        assert len(set(names)) == len(names)
        for source in sources:
            assert all(callable(getattr(source, m, None)) for m in ("read", "close")), source
        assert names.index("ethtool_netlink") < names.index("ethtool_ioctl")  # ioctl fills gaps
    finally:
        for source in sources:
            source.close()


def test_ethtool_netlink_is_left_out_when_switched_off():
    sources = open_sources(SourceOptions(ethtool_netlink=False))
    try:
        assert "ethtool_netlink" not in {s.name for s in sources}
    finally:
        for source in sources:
            source.close()


def test_the_module_collector_is_opt_in():
    sources = open_sources(SourceOptions())
    try:
        assert "module" not in {s.name for s in sources}
    finally:
        for source in sources:
            source.close()


def test_a_collector_over_the_registry_reads_every_source_once_per_poll():
    root = SYSFS / "mlx5-rdma"
    collector = Collector(root, Selection(include=".*"), sources=open_sources(
        SourceOptions(sysfs=str(root))))
    try:
        result = collector.poll()
    finally:
        collector.close()
    assert result.samples, "the fixture has interfaces"
    sample = result.samples[0]
    assert sample.pcie is not None and sample.pcie_verdict is not None  # sysfs_pci, derived
    assert sample.reading.rdma  # sysfs_infiniband
    assert result.host.softirq_seconds  # host
    # the fixture's interfaces do not exist in this namespace: the ioctl source says so
    assert {e.source for dev, e in result.errors if dev == sample.identity.device} >= {
        "ethtool_ioctl"}


def test_source_protocol_is_what_the_collector_calls():
    assert {"read", "close"} <= set(dir(Source))
