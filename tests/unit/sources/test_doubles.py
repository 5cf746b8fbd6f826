"""Every test double (the benchmarks use simulate's) implements the reader protocol of the
source it stands in for, so it plugs into the same Source as the real reader
(Collector(ioctl=..., netlink=..., dcb=...))."""

import inspect

import pytest

from nicwatch.demo import simulate
from nicwatch.sources.dcbnl import DcbNetlink, DcbReader
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl, IoctlReader
from nicwatch.sources.ethtool_netlink import EthtoolNetlink, NetlinkReader

from fixture_ethtool import ConnectX7Ioctl, RecordedEthtool


def methods(cls) -> set[str]:
    return {n for n, v in inspect.getmembers(cls, callable) if not n.startswith("_")}


@pytest.mark.parametrize("protocol, real, doubles", [
    (IoctlReader, EthtoolIoctl, [simulate.SimulatedEthtool, RecordedEthtool, ConnectX7Ioctl]),
    (NetlinkReader, EthtoolNetlink, [simulate.SimulatedEthtoolNetlink]),
    (DcbReader, DcbNetlink, [simulate.SimulatedDcb]),
])
def test_doubles_have_every_method_of_the_protocol_and_the_real_reader_does_too(protocol, real,
                                                                                 doubles):
    wanted = methods(protocol)
    assert wanted and wanted <= methods(real)
    for double in doubles:
        assert wanted <= methods(double), (double.__name__, wanted - methods(double))
        assert issubclass(double, protocol)
