"""The typed state on the Sample (model.NicState, normalize/state.py) is what the gauges say:
for every interface of every sysfs fixture tree, of the simulated demo host (rings, channels,
FEC, pause, lanes from its ethtool netlink answers) and of a real module dump, decoding the
state gauges back gives the state, so consumers reading the state read what is exported.
Which source's rings and channels win is decided in one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from nicwatch import metrics
from nicwatch.collect import Collector, Selection
from nicwatch.demo.simulate import (
    SimulatedDcb,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    Simulation,
    demo_ports,
)
from nicwatch.model import (
    Channels,
    EthtoolNetlinkInfo,
    ModuleReadStatus,
    NetClass,
    NicState,
    Reading,
    Rings,
    Sample,
)
from nicwatch.normalize import normalize
from nicwatch.normalize import pcie_verdict as pcie
from nicwatch.normalize.state import channels_of, rings_of
from nicwatch.sources import sysfs_net
from nicwatch.sources.sysfs_pci import read_pcie_path

from fixture_module import fixture_eeprom
from paths import SYSFS


def _gauge(sample: Sample, family: metrics.Family, **labels: str) -> float | None:
    return sample.gauge(family.name, **labels)


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _bool(value: float | None) -> bool | None:
    return None if value is None else bool(value)


def from_gauges(s: Sample) -> dict[str, object]:
    """The state fields as the gauges tell them."""
    speed = _gauge(s, metrics.LINK_SPEED_BYTES_PER_SECOND)
    out: dict[str, object] = {
        "up": _bool(_gauge(s, metrics.LINK_UP)),
        "carrier": _bool(_gauge(s, metrics.CARRIER)),
        "mtu": _int(_gauge(s, metrics.MTU_BYTES)),
        "speed_mbps": None if speed is None else round(speed / 125_000),
        "full_duplex": _bool(_gauge(s, metrics.LINK_FULL_DUPLEX)),
        "lanes": _int(_gauge(s, metrics.LINK_LANES)),
        "rings": {f: _int(_gauge(s, metrics.RING_DESCRIPTORS if not f.endswith("_max")
                                 else metrics.RING_MAX_DESCRIPTORS, ring=f.removesuffix("_max")))
                  for f in ("rx", "tx", "rx_max", "tx_max")},
        "channels": {f: _int(_gauge(s, metrics.CHANNELS if not f.endswith("_max")
                                    else metrics.CHANNELS_MAX, type=f.removesuffix("_max")))
                     for f in ("rx", "tx", "other", "combined", "rx_max", "tx_max",
                               "other_max", "combined_max")},
        "pause": {f: _bool(_gauge(s, metrics.PAUSE_ENABLED, direction=f)) for f in ("rx", "tx")}
        | {"autoneg": _bool(_gauge(s, metrics.PAUSE_AUTONEG))},
        "fec_active": next((dict(k.labels)["active"] or None for k in s.gauges
                            if k.metric == metrics.FEC_MODE_INFO.name), None),
        "pcie": {kind: (_gauge(s, metrics.PCIE_LINK_SPEED_GTS, **hop0 | {"kind": kind}),
                        _int(_gauge(s, metrics.PCIE_LINK_WIDTH, **hop0 | {"kind": kind})))
                 for kind in ("current", "max")
                 for hop0 in [{"hop": "0", "pci_address": _hop0_bdf(s)}]},
        "module_state": next((dict(k.labels)["state"] for k, v in s.gauges.items()
                              if k.metric == metrics.MODULE_READ_STATE.name and v), None),
        "module_read_at": _gauge(s, metrics.MODULE_READ_TIMESTAMP_SECONDS),
        "module_temperature": _gauge(s, metrics.MODULE_TEMPERATURE_CELSIUS),
        "module_high_warning": _gauge(s, metrics.MODULE_TEMPERATURE_THRESHOLD_CELSIUS,
                                      level="high_warning"),
    }
    return out


def _hop0_bdf(s: Sample) -> str:
    return next((dict(k.labels)["pci_address"] for k in s.gauges
                 if k.metric in (metrics.PCIE_LINK_WIDTH.name, metrics.PCIE_LINK_SPEED_GTS.name)
                 and ("hop", "0") in k.labels), "")


def as_told(state: NicState) -> dict[str, object]:
    """The same fields read from the typed state."""
    rings, ch, pause, link, mod = (state.rings, state.channels, state.pause, state.pcie_link,
                                   state.module)
    return {
        "up": state.up, "carrier": state.carrier, "mtu": state.mtu,
        "speed_mbps": state.speed_mbps, "full_duplex": state.full_duplex, "lanes": state.lanes,
        "rings": {f: getattr(rings, f) if rings else None
                  for f in ("rx", "tx", "rx_max", "tx_max")},
        "channels": {f: getattr(ch, f) if ch else None
                     for f in ("rx", "tx", "other", "combined", "rx_max", "tx_max",
                               "other_max", "combined_max")},
        "pause": {f: getattr(pause, f) if pause else None for f in ("rx", "tx", "autoneg")},
        "fec_active": (state.fec.active or None) if state.fec else None,
        "pcie": {"current": (link.current_speed_gts, link.current_width) if link else (None, None),
                 "max": (link.max_speed_gts, link.max_width) if link else (None, None)},
        "module_state": mod.read_state if mod else None,
        "module_read_at": mod.read_at if mod else None,
        "module_temperature": mod.temperature_celsius if mod else None,
        "module_high_warning": mod.temperature_high_warning_celsius if mod else None,
    }


def fixture_tree_samples(root: Path) -> list[Sample]:
    netclasses = {n: sysfs_net.read_netclass(root, n) for n in sysfs_net.list_interfaces(root)}
    paths = {n: read_pcie_path(root, nc.pci_address) for n, nc in netclasses.items()
             if nc.pci_address}
    verdicts = pcie.assess_all({n: (paths[n], pcie.line_rate_from_mbps(netclasses[n].speed_mbps))
                                for n in paths})
    return [normalize(Reading(name, 1.0, 1.0, nc, pcie=paths.get(name)),
                      pcie_verdict=verdicts.get(name)) for name, nc in netclasses.items()]


TREES = sorted(p for p in SYSFS.iterdir() if (p / "class" / "net").is_dir())


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_the_state_is_what_the_gauges_say_on_every_fixture_tree(tree: Path):
    samples = fixture_tree_samples(tree)
    assert samples
    for s in samples:
        assert as_told(s.state) == from_gauges(s), s.identity.device


def test_the_state_is_what_the_gauges_say_on_the_simulated_host(tmp_path: Path):
    sim = Simulation(demo_ports(4), seed=7)
    sim.write_sysfs(tmp_path)
    collector = Collector(tmp_path, Selection("enp.*"), ioctl=SimulatedEthtool(sim),
                          netlink=SimulatedEthtoolNetlink(sim), dcb=SimulatedDcb(sim))
    samples = collector.poll().samples
    assert len(samples) == 4
    for s in samples:
        told = as_told(s.state)
        assert told == from_gauges(s), s.identity.device
        # what the simulation sets is there: rings, channels, FEC, pause, PCIe
        assert told["rings"]["rx"] and told["channels"]["combined"] and told["fec_active"]
        assert told["pause"]["rx"] is not None and told["pcie"]["current"][1]


# Real dumps of each memory map: SFF-8636 (QSFP28), SFF-8472 (SFP), CMIS (800G OSFP).
DUMPS = ("qsfp28-fs-ir4-go-ethtool.txt", "sfp-oem-10g-lr-go-ethtool.txt",
         "osfp-800g-dr8-juniper.txt")
STATUSES = (None, ModuleReadStatus("ok", 990.0, {}), ModuleReadStatus("failed", 995.0, {"EIO": 1}))


@pytest.mark.parametrize("dump", (None, *DUMPS))
@pytest.mark.parametrize("status", STATUSES, ids=lambda s: s.state if s else "none")
def test_the_module_state_is_what_the_gauges_say(dump: str | None,
                                                 status: ModuleReadStatus | None):
    nc = NetClass("eth0", 2, *[None] * 12)
    module = fixture_eeprom(dump) if dump else None
    s = normalize(Reading("eth0", 1000.0, 1000.0, nc, module=module, module_read=status))
    assert as_told(s.state) == from_gauges(s)
    if module is not None:
        assert s.state.module is not None and s.state.module.temperature_celsius is not None


def test_netlink_rings_and_channels_win_over_the_ioctl_in_one_place():
    nc = NetClass("eth0", 2, *[None] * 12)
    ioctl_rings, netlink_rings = Rings(512, 512, 4096, 4096), Rings(1024, 1024, 8192, 8192)
    ioctl_ch = Channels(None, None, None, 4, None, None, None, 8)
    netlink_ch = Channels(None, None, None, 16, None, None, None, 63)
    both = Reading("eth0", 0, 0, nc, rings=ioctl_rings, channels=ioctl_ch,
                   netlink=EthtoolNetlinkInfo(rings=netlink_rings, channels=netlink_ch))
    assert rings_of(both) is netlink_rings and channels_of(both) is netlink_ch
    only_ioctl = Reading("eth0", 0, 0, nc, rings=ioctl_rings, channels=ioctl_ch,
                         netlink=EthtoolNetlinkInfo())  # netlink answered without rings
    assert rings_of(only_ioctl) is ioctl_rings and channels_of(only_ioctl) is ioctl_ch
    sample = normalize(both)
    assert sample.state.rings is netlink_rings
    assert sample.gauge(metrics.RING_DESCRIPTORS.name, ring="rx") == 1024
