"""pcie: lane rates like the kernel, path ceilings, verdicts for every fixture scenario."""

from __future__ import annotations

import dataclasses

import pytest

from nicwatch.normalize.pcie_verdict import (
    CEILING_BELOW_LINE_RATE,
    HIDDEN_LINK_PARTNER,
    LINK_STATE,
    NO_OWN_LINK,
    SPEED,
    UPSTREAM_LINK_STATE,
    WIDTH,
    Ceiling,
    LinkFault,
    PcieVerdict,
    assess,
    assess_all,
    describe,
    emulated_port,
    group_by_shared_link,
    lane_bytes_per_second,
    line_rate_from_mbps,
    link_bytes_per_second,
    path_ceiling,
    physical_port,
    shared_link,
)
from nicwatch.sources.sysfs_net import read_netclass
from nicwatch.sources.sysfs_pci import (
    PciDevice,
    PcieLink,
    PciePath,
    parse_link_width,
    pci_function_for_netdev,
    read_pcie_path,
)

from paths import SYSFS

GBPS = 1_000_000_000 // 8  # bytes/s per Gb/s


def nics_of(scenario: str) -> dict[str, tuple[PciePath, int | None]]:
    """Every netdev of a fixture tree with its path and line rate, as the daemon would."""
    root = SYSFS / scenario
    nics = {}
    for netdev in sorted(p.name for p in (root / "class/net").iterdir()):
        path = read_pcie_path(root, pci_function_for_netdev(root, netdev))
        speed = int((root / "class/net" / netdev / "speed").read_text())
        nics[netdev] = (path, line_rate_from_mbps(speed))
    return nics


def hop(bdf: str, link: PcieLink | None) -> PciDevice:
    return PciDevice(bdf, 0x15B3, 0x101D, 0x020000, 0, (0,), link, None)


def path_of(*hops: PciDevice, physfn: str | None = None) -> PciePath:
    return PciePath(function=hops[0].bdf, physfn=physfn, hops=hops, problems=())


# --------------------------------------------------------------------------- rates


@pytest.mark.parametrize(
    ("gts", "bytes_per_second"),
    [
        (2.5, 250_000_000),  # 2500 * 8/10 Mb/s
        (5.0, 500_000_000),  # 5000 * 8/10
        (8.0, 984_500_000),  # 8000 * 128/130 = 7876 (integer, as in the kernel)
        (16.0, 1_969_125_000),  # 15753
        (32.0, 3_938_375_000),  # 31507
        (64.0, 8_000_000_000),  # 64000 * 1/1 (flit mode)
        (128.0, 16_000_000_000),  # 128000 * 1/1 (Gen7 flit mode, the 2026 series)
    ],
)
def test_lane_rate_is_the_kernels_speed2mbs_enc(gts: float, bytes_per_second: int) -> None:
    assert lane_bytes_per_second(gts) == bytes_per_second


@pytest.mark.parametrize("gts", [256.0, 3.0, 0.0, 10.0])
def test_lane_rate_unknown_generation(gts: float) -> None:
    assert lane_bytes_per_second(gts) is None


@pytest.mark.parametrize(
    ("gts", "width", "kernel_gbps"),
    [
        # The figures drivers print: "31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s
        # PCIe x4 link" and "capable of 63.008 Gb/s with 8.0 GT/s PCIe x8 link".
        (8.0, 4, "31.504"),
        (8.0, 8, "63.008"),
        (16.0, 8, "126.024"),
        (16.0, 16, "252.048"),
        (32.0, 16, "504.112"),
        (2.5, 1, "2.000"),
    ],
)
def test_link_rate_matches_kernel_probe_messages(gts: float, width: int, kernel_gbps: str) -> None:
    bandwidth = link_bytes_per_second(gts, width)
    assert f"{bandwidth * 8 / 1e9:.3f}" == kernel_gbps


def test_link_rate_unknown_parts() -> None:
    assert link_bytes_per_second(None, 16) is None
    assert link_bytes_per_second(16.0, None) is None


@pytest.mark.parametrize(
    ("mbps", "rate"),
    [(400000, 50 * 10**9), (100000, 12_500_000_000), (-1, None), (0, None), (None, None)],
)
def test_line_rate_from_sysfs_speed(mbps: int | None, rate: int | None) -> None:
    assert line_rate_from_mbps(mbps) == rate


# --------------------------------------------------------------------------- scenarios


def test_cx7_gen5_healthy() -> None:
    verdicts = assess_all(nics_of("cx7-gen5-healthy"))
    assert verdicts == {
        "eth2": PcieVerdict(
            function="0000:41:00.0",
            pcie=True,
            ceiling=Ceiling(63_014_000_000, "0000:40:01.1", 32.0, 16, ()),
            line_rate_bytes_per_second=50_000_000_000,
            expected_width=16,
            expected_speed_gts=32.0,
            reasons=(),
            slot_limits=(),
        )
    }
    verdict = verdicts["eth2"]
    assert not verdict.degraded and not verdict.slot_limited
    assert verdict.headroom_ratio == pytest.approx(504.112 / 400)


@pytest.mark.parametrize(
    ("scenario", "expected_width", "reasons", "slot_limits"),
    [
        ("cx6-dual-gen4x8-width", 16, (WIDTH, CEILING_BELOW_LINE_RATE), ()),
        ("cx6-dual-slot-x8", 8, (CEILING_BELOW_LINE_RATE,), (WIDTH,)),
    ],
)
def test_cx6_dual_port(
    scenario: str, expected_width: int, reasons: tuple[str, ...], slot_limits: tuple[str, ...]
) -> None:
    verdicts = assess_all(nics_of(scenario))
    gen4_x8 = Ceiling(15_753_000_000, "0000:00:03.1", 16.0, 8, ())
    assert verdicts == {
        netdev: PcieVerdict(
            function=function,
            pcie=True,
            ceiling=gen4_x8,
            line_rate_bytes_per_second=2 * 100 * GBPS,
            expected_width=expected_width,
            expected_speed_gts=16.0,
            reasons=reasons,
            slot_limits=slot_limits,
            faults=(LinkFault(WIDTH, 0, function, 8, 16),) if WIDTH in reasons else (),
        )
        for netdev, function in (("ens1f0np0", "0000:01:00.0"), ("ens1f1np1", "0000:01:00.1"))
    }
    assert all(v.degraded for v in verdicts.values())
    assert all(v.slot_limited == bool(slot_limits) for v in verdicts.values())
    assert verdicts["ens1f0np0"].headroom_ratio == pytest.approx(126.024 / 200)


def test_one_port_of_the_dual_card_alone_fits_but_the_pair_does_not() -> None:
    path, rate = nics_of("cx6-dual-slot-x8")["ens1f0np0"]
    assert assess(path, [rate]).reasons == ()
    assert assess(path, [rate, rate]).reasons == (CEILING_BELOW_LINE_RATE,)


def test_gen3_old_kernel_behind_switch() -> None:
    verdicts = assess_all(nics_of("gen3-old-kernel"))
    assert verdicts == {
        "enp25s0": PcieVerdict(
            function="0000:19:00.0",
            pcie=True,
            # endpoint and downstream port tie at 8 GT/s x8: the upstream one is named,
            # like the kernel's "limited by ... at 0000:18:08.0".
            ceiling=Ceiling(7_876_000_000, "0000:18:08.0", 8.0, 8, ()),
            line_rate_bytes_per_second=40 * GBPS,
            expected_width=8,
            expected_speed_gts=8.0,  # the switch's "Unknown speed" max does not count
            reasons=(),
            slot_limits=(),
        )
    }


def test_virtio_is_not_pcie() -> None:
    assert assess_all(nics_of("virtio-no-pcie")) == {
        "eth0": PcieVerdict(
            function="0000:00:03.0",
            pcie=False,
            ceiling=None,
            line_rate_bytes_per_second=None,
            expected_width=None,
            expected_speed_gts=None,
            reasons=(),
            slot_limits=(),
        )
    }


def test_mlx5_rdma_host_is_healthy() -> None:
    verdict = assess_all(nics_of("mlx5-rdma"))["enp33s0f0np0"]
    assert verdict.ceiling == Ceiling(31_506_000_000, "0000:20:03.1", 16.0, 16, ())
    assert verdict.line_rate_bytes_per_second == 100 * GBPS
    assert not verdict.degraded and not verdict.slot_limited


def test_lab_report_200g_card_at_gen4_x8_is_flagged() -> None:
    verdict = assess_all(nics_of("lab-report-cx6-200g"))["enp129s0np0"]
    assert verdict == PcieVerdict(
        function="0000:81:00.0",
        pcie=True,
        ceiling=Ceiling(15_753_000_000, "0000:80:03.1", 16.0, 8, ()),
        line_rate_bytes_per_second=200 * GBPS,
        expected_width=8,
        expected_speed_gts=16.0,
        reasons=(CEILING_BELOW_LINE_RATE,),
        slot_limits=(WIDTH,),
    )
    assert verdict.degraded
    # The lab measured ~114 Gb/s: the encoded ceiling less TLP overhead (~90 %).
    assert 0.88 < 114 / (verdict.ceiling.bytes_per_second * 8 / 1e9) < 0.92


# --------------------------------------------------------------------------- grouping


def test_dual_port_functions_share_the_root_port_link() -> None:
    paths = {name: path for name, (path, _) in nics_of("cx6-dual-gen4x8-width").items()}
    assert group_by_shared_link(paths) == {"0000:00:03.1": ("ens1f0np0", "ens1f1np1")}


def test_grouping_leaves_out_non_pcie_and_keys_bridgeless_functions_by_device() -> None:
    bare = PcieLink(16.0, 8, 16.0, 8)
    paths = {
        "virtio": nics_of("virtio-no-pcie")["eth0"][0],
        "p0": path_of(hop("0000:a2:00.0", bare)),
        "p1": path_of(hop("0000:a2:00.1", bare)),
        "other": path_of(hop("0000:a3:00.0", bare)),
    }
    assert shared_link(paths["virtio"]) is None
    assert group_by_shared_link(paths) == {"0000:a2:00": ("p0", "p1"), "0000:a3:00": ("other",)}


def test_vf_line_rate_is_not_added_to_its_pf_link() -> None:
    port = hop("0000:00:03.1", PcieLink(16.0, 16, 16.0, 16))
    pf = path_of(hop("0000:01:00.0", PcieLink(16.0, 16, 16.0, 16)), port)
    vf = PciePath("0000:01:00.2", "0000:01:00.0", pf.hops, ())
    verdicts = assess_all({"pf": (pf, 100 * GBPS), "vf": (vf, 100 * GBPS)})
    assert verdicts["pf"].line_rate_bytes_per_second == 100 * GBPS
    assert verdicts["vf"].line_rate_bytes_per_second == 100 * GBPS
    assert verdicts["vf"].function == "0000:01:00.2"


# --------------------------------------------------------------------------- synthetic paths


def test_speed_trained_down() -> None:
    path = path_of(
        hop("0000:01:00.0", PcieLink(8.0, 16, 16.0, 16)),
        hop("0000:00:01.1", PcieLink(8.0, 16, 16.0, 16)),
    )
    verdict = assess(path, [100 * GBPS])
    assert verdict.reasons == (SPEED,)
    assert verdict.expected_speed_gts == 16.0
    assert verdict.ceiling == Ceiling(15_752_000_000, "0000:00:01.1", 8.0, 16, ())


def test_gen5_card_on_gen4_port_is_slot_limited_not_degraded() -> None:
    path = path_of(
        hop("0000:01:00.0", PcieLink(16.0, 16, 32.0, 16)),
        hop("0000:00:01.1", PcieLink(16.0, 16, 16.0, 16)),
    )
    verdict = assess(path, [200 * GBPS])
    assert verdict.reasons == ()
    assert verdict.slot_limits == (SPEED,)
    assert verdict.expected_speed_gts == 16.0


def test_link_down_judges_nothing() -> None:
    path = path_of(
        hop("0000:01:00.0", PcieLink(None, None, 16.0, 16)),
        hop("0000:00:01.1", PcieLink(2.5, None, 16.0, 16)),
    )
    verdict = assess(path, [100 * GBPS])
    assert verdict.ceiling is None
    assert verdict.reasons == ()
    assert verdict.headroom_ratio is None
    # ... but says so: a link nicwatch cannot read is never "ok".
    assert verdict.unknown == (LINK_STATE, UPSTREAM_LINK_STATE)
    assert verdict.state == "unknown"


def test_unknown_hop_makes_the_ceiling_an_upper_bound() -> None:
    path = path_of(
        hop("0000:19:00.0", PcieLink(8.0, 8, 8.0, 8)),
        hop("0000:18:08.0", PcieLink(None, 8, None, 8)),
        hop("0000:17:00.0", None),  # a conventional bridge without link attributes
        hop("0000:16:00.0", PcieLink(8.0, 16, 8.0, 16)),
    )
    assert path_ceiling(path) == Ceiling(7_876_000_000, "0000:19:00.0", 8.0, 8, ("0000:18:08.0",))


def test_narrower_upstream_link_limits_the_path() -> None:
    path = path_of(
        hop("0000:03:00.0", PcieLink(16.0, 16, 16.0, 16)),
        hop("0000:02:01.0", PcieLink(16.0, 16, 16.0, 16)),
        hop("0000:01:00.0", PcieLink(16.0, 4, 16.0, 16)),
        hop("0000:00:01.1", PcieLink(16.0, 4, 16.0, 16)),
    )
    verdict = assess(path, [100 * GBPS])
    assert verdict.ceiling == Ceiling(7_876_500_000, "0000:00:01.1", 16.0, 4, ())
    # The NIC's own link is fine, but the switch uplink trained x4 where both of its ends
    # (upstream port and root port) can do x16: a width fault of that hop.
    assert verdict.reasons == (WIDTH, CEILING_BELOW_LINE_RATE)
    assert verdict.faults == (LinkFault(WIDTH, 2, "0000:01:00.0", 4, 16),)


def test_switch_uplink_limited_by_the_root_port_is_no_fault() -> None:
    path = path_of(
        hop("0000:03:00.0", PcieLink(16.0, 16, 16.0, 16)),
        hop("0000:02:01.0", PcieLink(16.0, 16, 16.0, 16)),
        hop("0000:01:00.0", PcieLink(16.0, 8, 16.0, 16)),
        hop("0000:00:01.1", PcieLink(16.0, 8, 16.0, 8)),  # the root port is x8
    )
    verdict = assess(path, [100 * GBPS])
    assert verdict.faults == () and verdict.reasons == ()


def test_unknown_line_rates_are_skipped() -> None:
    path, _ = nics_of("cx6-dual-slot-x8")["ens1f0np0"]
    assert assess(path, [None, None]).line_rate_bytes_per_second is None
    assert assess(path, [None, None]).reasons == ()
    assert assess(path, []).reasons == ()


# --------------------------------------------------------------------------- issue #14 scenarios


def test_nic_link_unknown_is_never_ok() -> None:
    """The ConnectX-7 answers no config read (D3cold): LNKSTA and LNKCAP read as all ones,
    so sysfs says "Unknown" and 63 lanes; the root port's link is down (width 0)."""
    nics = nics_of("cx7-link-unknown")
    path, _ = nics["eth2"]
    assert path.hops[0].power_state == "D3cold"
    assert path.hops[0].link == PcieLink(None, None, 32.0, None)  # 63 lanes: not a width
    verdict = assess_all(nics)["eth2"]
    assert verdict.ceiling is None
    assert verdict.reasons == ()
    assert verdict.unknown == (LINK_STATE, UPSTREAM_LINK_STATE)
    assert verdict.state == "unknown"
    assert describe(verdict, path) == ("UNKNOWN: link_state, upstream_link_state "
                                       "(power state D3cold)")


def test_switch_uplink_trained_x8_is_a_width_fault_of_that_hop() -> None:
    """GPU-server shape: a Gen5 x16 ConnectX-7 behind a PCIe switch whose uplink trained x8
    while the switch upstream port and the root port both do x16."""
    nics = nics_of("gpu-switch-uplink-x8")
    path, _ = nics["ens3np0"]
    verdict = assess_all(nics)["ens3np0"]
    assert verdict.faults == (LinkFault(WIDTH, 2, "0000:41:00.0", 8, 16),)
    assert verdict.reasons == (WIDTH, CEILING_BELOW_LINE_RATE)
    assert verdict.slot_limits == ()  # the NIC's own slot is fine
    assert verdict.ceiling == Ceiling(31_507_000_000, "0000:40:01.1", 32.0, 8, ())
    assert describe(verdict, path) == ("DEGRADED: width (x8 of x16 at 0000:41:00.0), "
                                       "ceiling_below_line_rate")


def test_emulated_root_port_is_not_a_ceiling() -> None:
    """A QEMU q35 guest: passthrough NICs behind pcie-root-port (1b36:000c) that claims
    2.5 GT/s x1. Counted, that port would cap a 400G card at 2 Gb/s."""
    nics = nics_of("qemu-vm-passthrough")
    verdicts = assess_all(nics)
    cx7 = verdicts["enp1s0np0"]
    assert cx7.emulated_hops == ("0000:00:02.0",)
    assert cx7.ceiling == Ceiling(63_014_000_000, "0000:01:00.0", 32.0, 16, ())
    assert cx7.reasons == () and cx7.slot_limits == () and cx7.unknown == ()
    assert cx7.expected_width == 16 and cx7.state == "ok"
    # The second card trained x8 of its x16: the host's slot is out of sight, so neither a
    # fault nor a slot limit, but not "ok" either.
    cx6 = verdicts["enp2s0np0"]
    assert cx6.reasons == () and cx6.slot_limits == ()
    assert cx6.unknown == (HIDDEN_LINK_PARTNER,)
    assert cx6.ceiling.bytes_per_second == 15_753_000_000


def test_emulated_ids_come_from_qemu_and_vmware() -> None:
    def port(vendor: int, device: int) -> PciDevice:
        return PciDevice("0000:00:02.0", vendor, device, 0x060400, None, None,
                         PcieLink(2.5, 1, 2.5, 1), None)
    assert emulated_port(port(0x1B36, 0x000C)) == "QEMU PCIe root port"
    assert emulated_port(port(0x15AD, 0x07A0)) == "VMware PCIe root port"
    assert emulated_port(port(0x1022, 0x14AB)) is None  # AMD Genoa root port: real
    assert emulated_port(port(0x8086, 0x3420)) is None  # QEMU ioh3420 borrows a real id


def test_npar_partitions_count_their_physical_port_once() -> None:
    """BCM57508 2x100G in NPAR: eight PCI functions (four partitions per port) each report
    the port's 100 Gb/s. Summed per function that is 800 Gb/s on a 252 Gb/s Gen4 x16 link;
    per physical port (phys_port_id) it is 200 Gb/s."""
    root = SYSFS / "bnxt-npar"
    nics = nics_of("bnxt-npar")
    ports = {}
    for name in nics:
        net = read_netclass(root, name)
        ports[name] = physical_port(net.phys_port_id, net.pci_address, net.dev_port)
    assert len(set(ports.values())) == 2
    verdicts = assess_all(nics, ports)
    assert {v.line_rate_bytes_per_second for v in verdicts.values()} == {200 * GBPS}
    assert all(v.state == "ok" for v in verdicts.values())
    # Without the physical port identity every function counts: the old false alarm.
    assert assess_all(nics)["ens2f0np0"].reasons == (CEILING_BELOW_LINE_RATE,)


def test_physical_port_falls_back_to_function_and_dev_port() -> None:
    assert physical_port(None, "0000:01:00.0", 1) != physical_port(None, "0000:01:00.0", 0)
    assert physical_port("aa01", "0000:01:00.0", 0) == physical_port("aa01", "0000:01:00.1", 0)
    assert physical_port(None, None, None) is None


@pytest.mark.parametrize(
    ("gts", "width", "gbps"),
    [
        (64.0, 16, "1024.000"),  # Gen6 x16 for an 800G ConnectX-8: 64000 * 1/1 per lane
        (64.0, 8, "512.000"),
        (128.0, 16, "2048.000"),  # Gen7
    ],
)
def test_flit_mode_rates(gts: float, width: int, gbps: str) -> None:
    assert f"{link_bytes_per_second(gts, width) * 8 / 1e9:.3f}" == gbps


def test_gen6_x8_cannot_carry_800g_but_x16_can() -> None:
    def gen6(width: int) -> PciePath:
        return path_of(hop("0000:01:00.0", PcieLink(64.0, width, 64.0, width)),
                       hop("0000:00:01.1", PcieLink(64.0, width, 64.0, width)))
    assert assess(gen6(16), [800 * GBPS]).reasons == ()
    assert assess(gen6(8), [800 * GBPS]).reasons == (CEILING_BELOW_LINE_RATE,)


def test_all_ones_width_is_unknown_not_63_lanes() -> None:
    assert parse_link_width("63") is None
    assert parse_link_width("0") is None
    assert parse_link_width("32") == 32


def test_vf_in_a_guest_has_no_link_of_its_own() -> None:
    """An SR-IOV VF passed to a VM (Azure accelerated networking, vfio): no physfn in the
    guest and its link registers are reserved, so all four attributes read "Unknown" / 0.
    That is not a link down: the verdict says the link is not its own, not link_state."""
    vf = PciDevice("6f3c:00:02.0", 0x15B3, 0x101E, 0x020000, None, (0,),
                   PcieLink(None, None, None, None), None, "D0")
    verdict = assess(path_of(vf), [100 * GBPS])
    assert verdict.unknown == (NO_OWN_LINK,) and verdict.reasons == ()
    # The same registers in D3cold are a device that does not answer.
    off = dataclasses.replace(vf, power_state="D3cold")
    assert assess(path_of(off), [100 * GBPS]).unknown == (LINK_STATE,)
