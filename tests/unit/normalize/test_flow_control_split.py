"""XOFF (the pause) and XON (its release) are counted apart where the driver counts them apart
(issue #38 item 4): one pause episode, one XOFF and one XON, is one pause, not two. Real dumps
(tests/fixtures/published, the lab's e1000e) with one episode's counters raised."""

from __future__ import annotations

import pytest

from nicwatch.model import SeriesKey
from nicwatch.normalize import RawOptions, normalize_driver_stats
from nicwatch.pasted.ethtool_text import parse

from paths import ETHTOOL, FIXTURES

PUBLISHED = FIXTURES / "published" / "ethtool-S"

# driver, dump, {raw name: value}, {canonical series: value}
CASES = [
    ("ixgbe", PUBLISHED / "ixgbe-82599-github-note.txt",
     {"rx_flow_control_xoff": 7, "rx_flow_control_xon": 7, "rx_pb_3_pxoff": 5,
      "rx_pb_3_pxon": 5, "tx_pb_3_pxoff": 2, "tx_pb_3_pxon": 2},
     {("nic_rx_pause_frames_total", ()): 7, ("nic_rx_pause_xon_frames_total", ()): 7,
      ("nic_rx_pfc_tc_frames_total", (("tc", "3"),)): 5,
      ("nic_rx_pfc_tc_xon_frames_total", (("tc", "3"),)): 5,
      ("nic_tx_pfc_tc_frames_total", (("tc", "3"),)): 2}),
    ("i40e", PUBLISHED / "i40e-ethq-tests-v2.3.2k.txt",
     {"port.link_xoff_rx": 7, "port.link_xon_rx": 7, "port.rx_priority_3_xoff_rx": 5,
      "port.rx_priority_3_xon_rx": 5},
     {("nic_rx_pause_frames_total", ()): 7, ("nic_rx_pause_xon_frames_total", ()): 7,
      ("nic_rx_pfc_frames_total", (("priority", "3"),)): 5,
      ("nic_rx_pfc_xon_frames_total", (("priority", "3"),)): 5}),
    ("ice", PUBLISHED / "ice-e810-ethq-tests.txt",
     {"link_xoff_rx.nic": 7, "link_xon_rx.nic": 7, "rx_priority_3_xoff.nic": 5,
      "rx_priority_3_xon.nic": 5, "tx_priority_3_xoff.nic": 3, "tx_priority_3_xon.nic": 3},
     {("nic_rx_pause_frames_total", ()): 7, ("nic_rx_pause_xon_frames_total", ()): 7,
      ("nic_rx_pfc_frames_total", (("priority", "3"),)): 5,
      ("nic_rx_pfc_xon_frames_total", (("priority", "3"),)): 5,
      ("nic_tx_pfc_frames_total", (("priority", "3"),)): 3}),
    ("e1000e", ETHTOOL / "e1000e.txt",
     {"rx_flow_control_xoff": 7, "rx_flow_control_xon": 7},
     {("nic_rx_pause_frames_total", ()): 7, ("nic_rx_pause_xon_frames_total", ()): 7}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_pause_episode_counts_once(case: tuple[str, object, dict[str, int],
                                                   dict[tuple[str, tuple[tuple[str, str], ...]],
                                                        int]]) -> None:
    driver, path, raised, expected = case
    stats = parse(path.read_text())  # type: ignore[attr-defined]
    values = list(stats.values)
    for name, value in raised.items():
        values[stats.names.index(name)] = value
    counters, _ = normalize_driver_stats(driver, stats.names, tuple(values), RawOptions())
    for (metric, labels), value in expected.items():
        assert counters[SeriesKey(metric, labels)].raw == value, metric


def test_be2net_pfc_and_queue_packets_are_mapped() -> None:
    """be2net counts PFC only in total and has no port frame counter: its PFC totals feed the
    PFC families (priority="all") and its queues' packets the port frame family, the
    denominator its host receive bottleneck needs (item 2, 5)."""
    stats = parse((PUBLISHED / "be2net-emulex-ethq-issue7.txt").read_text())
    counters, _ = normalize_driver_stats("be2net", stats.names, stats.values, RawOptions())
    pkts = sum(v for n, v in zip(stats.names, stats.values, strict=True)
               if n.startswith("rxq") and n.endswith(": rx_pkts"))
    assert pkts > 0
    assert counters[SeriesKey("nic_phy_rx_packets_total")].raw == pkts
    assert SeriesKey("nic_rx_pfc_frames_total", (("priority", "all"),)) in counters
    assert SeriesKey("nic_tx_pfc_frames_total", (("priority", "all"),)) in counters


@pytest.mark.parametrize(("driver", "path", "names"), [
    ("mlx5_core", PUBLISHED / "mlx5_core-cx4lx-ethq-issue8.txt", ("rx_packets_phy",)),
    ("bnxt_en", PUBLISHED / "bnxt_en-ethq-tests-cloudflare.txt", ("rx_total_frames",)),
    ("ixgbe", PUBLISHED / "ixgbe-82599-github-note.txt", ("rx_pkts_nic",)),
    ("ice", PUBLISHED / "ice-e810-ethq-tests.txt",
     ("rx_unicast.nic", "rx_multicast.nic", "rx_broadcast.nic")),
    ("i40e", PUBLISHED / "i40e-ethq-tests-v2.3.2k.txt",
     ("port.rx_unicast", "port.rx_multicast", "port.rx_broadcast")),
])
def test_every_port_frame_counter_is_mapped(driver: str, path: object,
                                            names: tuple[str, ...]) -> None:
    """The port's frame counter of each driver feeds nic_phy_rx_packets_total (item 1)."""
    stats = parse(path.read_text())  # type: ignore[attr-defined]
    counters, _ = normalize_driver_stats(driver, stats.names, stats.values, RawOptions())
    want = sum(stats.values[stats.names.index(n)] for n in names)
    assert want > 0
    assert counters[SeriesKey("nic_phy_rx_packets_total")].raw == want
