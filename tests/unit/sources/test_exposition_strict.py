"""Every exposition nicwatch serves passes strict parsers, in every collector combination.

Text 0.0.4 goes through prometheus_client's parser and `promtool check metrics` (lint
included); OpenMetrics 1.0 through prometheus_client's OpenMetrics parser, which rejects a
family declared twice, a sample outside its family, a missing `# EOF`. Each combination
renders the whole pipeline over fixture sysfs trees (ConnectX ports fed from recorded
`ethtool -S` text, and netlink replies built in the kernel's byte layout and decoded by the
real reader); the same check runs against a real veth in tests/test_daemon_netns.py.
"""

import itertools

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from test_ethtool_netlink import nest, nlattr, u32, u64

from nicwatch.collect import Collector, Selection
from nicwatch.exporter.render import SelfStats, render
from nicwatch.model import Channels, Rings
from nicwatch.normalize import NormalizeOptions, RawOptions
from nicwatch.sources import ethtool_netlink as en
from nicwatch.tracker import Tracker

from fixture_ethtool import RecordedEthtool
from paths import ETHTOOL, SYSFS
from promtext import check_strict


class ReplayedNetlink(en.EthtoolNetlink):
    """The real reader (decode_dump, the parts, the merge) over replies recorded in the
    kernel's layout instead of a socket: PAUSE_GET with stats and STATS_GET (eth-phy,
    eth-mac) for each ifindex; the other dumps are empty."""

    def __init__(self, ifindexes: dict[int, str]) -> None:
        self.ifindexes = ifindexes

    def _dump(self, request):
        replies = []
        for ifindex, name in self.ifindexes.items():
            head = nest(request.header, u32(1, ifindex), nlattr(2, name.encode() + b"\0"))
            if request.name == "PAUSE_GET":
                replies.append(head + nlattr(en.ETHTOOL_A_PAUSE_AUTONEG, b"\0")
                               + nlattr(en.ETHTOOL_A_PAUSE_RX, b"\0")
                               + nlattr(en.ETHTOOL_A_PAUSE_TX, b"\0")
                               + nest(en.ETHTOOL_A_PAUSE_STATS,
                                      u64(en.ETHTOOL_A_PAUSE_STAT_TX_FRAMES, 8330117),
                                      u64(en.ETHTOOL_A_PAUSE_STAT_RX_FRAMES, 1204)))
            elif request.name == "STATS_GET":
                phy = nest(en.ETHTOOL_A_STATS_GRP, u32(en.ETHTOOL_A_STATS_GRP_ID, 0),
                           nest(en.ETHTOOL_A_STATS_GRP_STAT, u64(0, 11)))
                replies.append(head + phy)
        return replies

    def close(self) -> None:
        pass


def mlx5_port(perm: str) -> dict:
    return {"stats": ETHTOOL / "mlx5_core.txt", "driver": "mlx5_core", "perm_address": perm,
            "rings": Rings(8192, 8192, 8192, 8192),
            "channels": Channels(None, None, None, 63, None, None, None, 63)}


SCENARIOS = {
    "mlx5-rdma": {"enp33s0f0np0": mlx5_port("b8:3f:d2:a1:5c:2e")},
    "lab-report-host": {f"ens{i}np0": mlx5_port(f"b8:3f:d2:00:00:0{i}") for i in range(1, 5)},
    "virtio-no-pcie": {},
}
RAW = {"off": RawOptions(),
       "on": RawOptions(enabled=True),
       "per-queue": RawOptions(per_queue=("rxN_buff_alloc_err", "txN_packets")),
       "on+per-queue": RawOptions(enabled=True, per_queue=("rxN_buff_alloc_err",
                                                           "ptp_cqN_abort_abs_diff_ns"))}
COMBOS = list(itertools.product(sorted(SCENARIOS), sorted(RAW), (False, True)))


def ifindexes(scenario: str) -> dict[int, str]:
    net = SYSFS / scenario / "class" / "net"
    return {int((net / dev / "ifindex").read_text()): dev for dev in SCENARIOS[scenario]}


def expositions(scenario: str, raw: str, netlink: bool) -> tuple[str, str]:
    collector = Collector(SYSFS / scenario, Selection(), NormalizeOptions(RAW[raw]),
                          ioctl=RecordedEthtool(SCENARIOS[scenario]),
                          netlink=ReplayedNetlink(ifindexes(scenario)) if netlink else None,
                          clock=lambda: 1_790_000_000.0,
                          monotonic=iter(range(0, 1000, 5)).__next__)
    tracker = Tracker()
    for _ in range(2):
        tracked = tracker.update(collector.poll().samples)
    stats = SelfStats(polls=2, last_poll_time=1_790_000_005.0, durations={"read": 0.001},
                      source_errors={("ethtool_netlink", "eth0"): 1})
    return (render(tracked, stats).decode(), render(tracked, stats, openmetrics=True).decode())


@pytest.mark.parametrize("scenario,raw,netlink", COMBOS)
def test_every_format_passes_strict_parsers(scenario, raw, netlink):
    text, openmetrics = expositions(scenario, raw, netlink)
    check_strict(text, openmetrics)
    raw_on = RAW[raw].enabled
    if SCENARIOS[scenario]:
        assert ("nic_driver_stat_total{" in text) == raw_on
        # mlx5's PCIe stall percentages are gauges: never a counter, never summed.
        assert ('nic_driver_stat_value{device="enp33s0f0np0",stat="outbound_pci_stalled_rd"}'
                in text or scenario != "mlx5-rdma" or not raw_on)
        assert 'stat="outbound_pci_stalled_rd"' not in "".join(
            line for line in text.splitlines(True) if line.startswith("nic_driver_stat_total"))
        assert ("nic_queue_stat_total{" in text) == bool(RAW[raw].per_queue)
        # The netlink pause statistic of mlx5 is the PAUSE MAC Control family.
        assert ("nic_tx_pause_frames_total{" in text) is False


def test_a_family_declared_twice_is_caught():
    """The check itself: the exposition of #13 item 9 (a counter and a gauge both named
    nic_driver_stat in OpenMetrics) fails it."""
    bad = ("# HELP nic_driver_stat x\n# TYPE nic_driver_stat counter\n"
           'nic_driver_stat_total{stat="a"} 1\n'
           "# HELP nic_driver_stat y\n# TYPE nic_driver_stat gauge\n"
           'nic_driver_stat{stat="b"} 1\n# EOF\n')
    with pytest.raises(ValueError):
        list(parse_om(bad))
