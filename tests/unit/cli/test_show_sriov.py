"""`nicwatch show`: the SR-IOV table (VF counts per PF and the VF that dropped most)."""

from __future__ import annotations

from fixture_sriov import Vf, fixture_text, newlink, prom_vf_stats

from nicwatch.cli.show import format_table
from nicwatch.model import NetClass, Reading, SriovState
from nicwatch.normalize import normalize
from nicwatch.sources.sriov import parse_vf_link


def sample(name: str, sriov: SriovState | None):
    nc = NetClass(name, 5, None, "up", 1500, 25000, "full", True, None, None, None, None,
                  None, "ice")
    return normalize(Reading(name, 0, 0, nc, sriov=sriov))


def e810(device: str) -> SriovState:
    stats = prom_vf_stats(fixture_text("ice-e810-node-exporter-3544.prom"))[device]
    vfs = [Vf(n, stats=s) for n, s in sorted(stats.items())]
    _n, _i, num, parsed = parse_vf_link(newlink(device, vfs))
    return SriovState(len(vfs), 64, num, parsed)


def test_vf_counts_and_worst_vf_per_pf_only_for_sriov_pfs():
    out = format_table([sample("eno12399np0", e810("eno12399np0")),
                        sample("enp24s0f0np0", e810("enp24s0f0np0")),
                        sample("eth0", None),
                        sample("eth1", SriovState(8, 64, 0, ()))])
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("DEVICE") and "VFS ENABLED/TOTAL" in line)
    rows = [line.split("  ") for line in lines[head + 1:]]
    rows = [[c.strip() for c in r if c.strip()] for r in rows]
    # vf 1 and vf 2 both dropped 5787: the lower number is named.
    assert rows == [["eno12399np0", "3/64", "3", "vf 1: 5.8k"],
                    ["enp24s0f0np0", "3/64", "3", "vf 0: 0"],
                    ["eth1", "8/64", "0", "-"]]


def test_narrow_output_keeps_the_sriov_line():
    out = format_table([sample("eno12399np0", e810("eno12399np0"))], width=60)
    assert "    sriov  vfs enabled/total 3/64" in out and "vf 1: 5.8k" in out
