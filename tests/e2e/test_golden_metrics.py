"""Golden /metrics output of the whole pipeline on fixture sysfs trees, and the PCIe/RDMA
verdicts it carries. Regenerate with `pytest tests/test_golden_metrics.py --update-golden`."""


import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.exporter.render import SelfStats, render
from nicwatch.model import Channels, Rings
from nicwatch.tracker import Tracker

from fixture_dcb import RecordedDcb, roce_reply
from fixture_ethtool import RecordedEthtool
from paths import TESTS
from promtext import parse_exposition, promtool_check, series

HERE = TESTS
SYSFS = HERE / "fixtures" / "sysfs"
ETHTOOL = HERE / "fixtures" / "ethtool"
GOLDEN = HERE / "golden"


def mlx5_port(perm_address: str, rx_ring: int = 8192) -> dict:
    return {"stats": ETHTOOL / "mlx5_core.txt", "driver": "mlx5_core",
            "perm_address": perm_address, "rings": Rings(rx_ring, 8192, 8192, 8192),
            "channels": Channels(None, None, None, 63, None, None, None, 63)}


def collect(scenario: str, ports: dict, interval: int = 5, dcb=None) -> Collector:
    return Collector(SYSFS / scenario, Selection(), ioctl=RecordedEthtool(ports), dcb=dcb,
                     clock=lambda: 1_790_000_000.0,
                     monotonic=iter(range(0, 1000, interval)).__next__)


def exposition(collector: Collector, polls: int = 2) -> str:
    tracker = Tracker()
    for _ in range(polls):
        result = collector.poll()
        tracked = tracker.update(result.samples)
        rdma = tracker.update_rdma(result.rdma)
    stats = SelfStats(polls=polls, last_poll_time=1_790_000_005.0,
                      durations={"read": 0.001, "normalize": 0.002, "track": 0.0, "render": 0.0})
    return render(tracked, stats, rdma=rdma).decode()


CASES = {
    "mlx5-rdma": {"enp33s0f0np0": mlx5_port("b8:3f:d2:a1:5c:2e")},
    "lab-report-cx6-200g": {"enp129s0np0": mlx5_port("b8:3f:d2:00:81:00", rx_ring=1024)},
    "virtio-no-pcie": {},
    # Issue #14: PCIe verdicts that were green or wrong before.
    "cx7-link-unknown": {},
    "gpu-switch-uplink-x8": {"ens3np0": mlx5_port("94:6d:ae:3c:43:00")},
    "qemu-vm-passthrough": {"enp1s0np0": mlx5_port("94:6d:ae:5a:01:00"),
                            "enp2s0np0": mlx5_port("b8:3f:d2:5a:02:00")},
    "bnxt-npar": {},
    # An XL710 on an old kernel: no netlink statistics, 802.3x PAUSE = link XOFF, XON apart.
    "gen3-old-kernel": {"enp25s0": {"stats": ETHTOOL / "i40e.txt", "driver": "i40e",
                                    "perm_address": "3c:fd:fe:00:19:00",
                                    "rings": Rings(4096, 4096, 4096, 4096)}},
    # Issue #19: the RoCE QoS profile (vendor mlx5 ecn/ tree, ToS; dcbnl replies below).
    "mlx5-roce-qos": {"enp33s0f0np0": mlx5_port("b8:3f:d2:a1:5c:2e")},
}
# dcbnl answers (veth has no DCB): replies built to the kernel's layout.
DCB = {"mlx5-roce-qos": RecordedDcb({"enp33s0f0np0": roce_reply("enp33s0f0np0")})}


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_golden_exposition(scenario, request):
    text = exposition(collect(scenario, CASES[scenario], dcb=DCB.get(scenario)))
    text = text.replace(f'python="{__import__("platform").python_version()}"', 'python="X"')
    golden = GOLDEN / f"{scenario}.prom"
    if request.config.getoption("--update-golden"):
        golden.write_text(text)
    assert text == golden.read_text()
    promtool_check(text)


def test_lab_report_card_is_flagged_with_the_right_reason():
    m = parse_exposition(exposition(collect("lab-report-cx6-200g", CASES["lab-report-cx6-200g"])))
    dev = "enp129s0np0"
    assert m[series("nic_pcie_degraded", device=dev, reason="ceiling_below_line_rate")] == 1
    assert m[series("nic_pcie_degraded", device=dev, reason="width")] == 0  # the slot is x8
    assert m[series("nic_pcie_slot_limited", device=dev, limit="width")] == 1
    assert m[series("nic_pcie_bandwidth_ceiling_bytes_per_second", device=dev)] == 15_753_000_000
    assert m[series("nic_pcie_shared_line_rate_bytes_per_second", device=dev)] == 25_000_000_000
    assert m[series("nic_pcie_link_width", device=dev, hop="0", kind="current",
                    pci_address="0000:81:00.0")] == 8
    assert m[series("nic_ring_descriptors", device=dev, ring="rx")] == 1024


def test_dual_port_card_trained_narrow_is_a_width_fault_on_both_ports():
    ports = {"ens1f0np0": mlx5_port("b8:3f:d2:00:01:00"),
             "ens1f1np1": mlx5_port("b8:3f:d2:00:01:01")}
    m = parse_exposition(exposition(collect("cx6-dual-gen4x8-width", ports)))
    for dev in ports:
        assert m[series("nic_pcie_degraded", device=dev, reason="width")] == 1
        assert m[series("nic_pcie_degraded", device=dev, reason="ceiling_below_line_rate")] == 1
        # Both 100G ports share one link: 2 x 12.5 GB/s against a 15.75 GB/s ceiling.
        assert m[series("nic_pcie_shared_line_rate_bytes_per_second", device=dev)] == 25e9


def test_rdma_counters_join_their_netdev():
    m = parse_exposition(exposition(collect("mlx5-rdma", CASES["mlx5-rdma"])))
    labels = {"device": "enp33s0f0np0", "rdma_device": "mlx5_0", "port": "1"}
    assert m[series("nic_rdma_cnp_sent_total", **labels)] == 184467
    assert m[series("nic_rdma_tx_bytes_total", **labels)] == 104857600000 * 4
    # hw_counters out_of_buffer (Q counter), rnr_nak_retry_err, rp_cnp_ignored.
    assert m[series("nic_rdma_out_of_buffer_drops_total", **labels)] == 22817
    assert m[series("nic_rdma_rnr_nak_retry_errors_total", **labels)] == 2
    assert m[series("nic_rdma_cnp_ignored_total", **labels)] == 41
    info = [k for k in m if k[0] == "nic_info"]
    assert dict(info[0][1])["rdma_device"] == "mlx5_0"


def test_intel_pause_counts_xoff_and_xon_apart_and_pfc_per_priority():
    m = parse_exposition(exposition(collect("gen3-old-kernel", CASES["gen3-old-kernel"])))
    dev = "enp25s0"
    # XOFF (the pause) and XON (its release) apart (issue #38): port.link_xoff_rx 61,
    # port.link_xon_rx 50; port.link_xoff_tx 62, port.link_xon_tx 52.
    assert m[series("nic_rx_pause_frames_total", device=dev)] == 61
    assert m[series("nic_rx_pause_xon_frames_total", device=dev)] == 50
    assert m[series("nic_tx_pause_frames_total", device=dev)] == 62
    assert m[series("nic_tx_pause_xon_frames_total", device=dev)] == 52
    assert m[series("nic_tx_pfc_frames_total", device=dev, priority="3")] == 1400
    assert series("nic_rx_pause_ctrl_frames_total", device=dev) not in m


def test_virtio_has_no_pcie_series_and_no_error():
    text = exposition(collect("virtio-no-pcie", {}))
    assert "nic_pcie_" not in text.replace("# HELP nic_pcie", "").replace("# TYPE nic_pcie", "")
    m = parse_exposition(text)
    assert m[series("nic_info", device="eth0", driver="virtio_net", driver_version="",
                    firmware_version="",
                    mac=dict(next(k for k in m if k[0] == "nic_info")[1])["mac"],
                    pci_address="0000:00:03.0", perm_mac="", rdma_device="")] == 1


def test_unknown_nic_link_is_visible_not_green():
    m = parse_exposition(exposition(collect("cx7-link-unknown", {})))
    assert m[series("nic_pcie_verdict_unknown", device="eth2", reason="link_state")] == 1
    assert m[series("nic_pcie_verdict_unknown", device="eth2", reason="upstream_link_state")] == 1
    assert all(m[series("nic_pcie_degraded", device="eth2", reason=r)] == 0
               for r in ("width", "speed", "ceiling_below_line_rate"))
    assert not [k for k in m if k[0] == "nic_pcie_bandwidth_ceiling_bytes_per_second"]
    # 63 lanes (an all-ones read) is not exported as a width.
    assert not [k for k in m if k[0] == "nic_pcie_link_width" and dict(k[1])["hop"] == "0"]


def test_switch_uplink_fault_and_vm_ports_on_metrics():
    m = parse_exposition(exposition(collect("gpu-switch-uplink-x8",
                                            CASES["gpu-switch-uplink-x8"])))
    assert m[series("nic_pcie_degraded", device="ens3np0", reason="width")] == 1
    assert m[series("nic_pcie_slot_limited", device="ens3np0", limit="width")] == 0
    vm = parse_exposition(exposition(collect("qemu-vm-passthrough",
                                             CASES["qemu-vm-passthrough"])))
    for dev in ("enp1s0np0", "enp2s0np0"):
        assert vm[series("nic_pcie_emulated_ports", device=dev)] == 1
        assert vm[series("nic_pcie_degraded", device=dev, reason="ceiling_below_line_rate")] == 0
    assert vm[series("nic_pcie_verdict_unknown", device="enp2s0np0",
                     reason="hidden_link_partner")] == 1
    ceiling = series("nic_pcie_bandwidth_ceiling_bytes_per_second", device="enp1s0np0")
    assert vm[ceiling] == 63_014_000_000


def test_npar_partitions_share_line_rate_per_physical_port():
    m = parse_exposition(exposition(collect("bnxt-npar", {})))
    rates = {v for k, v in m.items() if k[0] == "nic_pcie_shared_line_rate_bytes_per_second"}
    assert rates == {25e9}  # 2 x 100 Gb/s, not 8 x 100
    assert not any(v for k, v in m.items() if k[0] == "nic_pcie_degraded")


def test_golden_400g_polled_every_10s_says_its_32bit_counters_are_ambiguous(request):
    """mlx5's rx_out_of_buffer is 32-bit: at 400 Gb/s of 64-byte frames it can pass 2^32
    in 7.2 s, so polls 10 s apart cannot count its wraps; /metrics says so."""
    text = exposition(collect("gpu-switch-uplink-x8", CASES["gpu-switch-uplink-x8"], 10))
    text = text.replace(f'python="{__import__("platform").python_version()}"', 'python="X"')
    golden = GOLDEN / "gpu-switch-uplink-x8-10s.prom"
    if request.config.getoption("--update-golden"):
        golden.write_text(text)
    assert text == golden.read_text()
    m = parse_exposition(text)
    assert m[series("nic_stat_wrap_ambiguous", device="ens3np0")] == 1
    assert round(m[series("nic_stat_wrap_safe_interval_seconds", device="ens3np0")], 3) == 7.216
    five = parse_exposition(exposition(collect("gpu-switch-uplink-x8",
                                               CASES["gpu-switch-uplink-x8"])))
    assert five[series("nic_stat_wrap_ambiguous", device="ens3np0")] == 0


def test_plain_rate_gauges_are_opt_in_and_peaks_always_served():
    """The plain poll-to-poll rates repeat what rate() computes from the counters, so they are
    served only with --collector.rates; the peak gauges (bursts shorter than a scrape) always."""
    collector = collect("mlx5-rdma", CASES["mlx5-rdma"])
    tracker = Tracker()
    for _ in range(2):
        tracked = tracker.update(collector.poll().samples)
    stats = SelfStats(polls=2, last_poll_time=1_790_000_005.0)
    default = parse_exposition(render(tracked, stats).decode())
    opted = parse_exposition(render(tracked, stats, rates=True).decode())
    plain = {k for k in opted
             if k[0].endswith("_per_second") and not k[0].endswith("_peak_per_second")
             and k[0].startswith("nic_") and "_total" not in k[0]
             and k[0] not in ("nic_link_speed_bytes_per_second",
                              "nic_pcie_bandwidth_ceiling_bytes_per_second",
                              "nic_pcie_shared_line_rate_bytes_per_second")}
    assert ("nic_phy_rx_bytes_per_second", (("device", "enp33s0f0np0"),)) in plain
    assert not plain & default.keys()
    peaks = {k for k in default if k[0].endswith("_peak_per_second")}
    assert peaks and peaks <= opted.keys()
    assert len(opted) - len(default) == len(plain)
