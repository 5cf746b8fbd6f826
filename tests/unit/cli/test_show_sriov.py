"""`nicwatch show`: the SR-IOV table (VF counts per PF and the VF that dropped most)."""

from __future__ import annotations

from nicwatch.cli.show import format_table
from nicwatch.model import NetClass, Reading, SriovState
from nicwatch.normalize import normalize
from nicwatch.sources.sriov import parse_vf_link

from fixture_sriov import Vf, fixture_text, newlink, prom_vf_stats


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
    head = next(i for i, line in enumerate(lines)
                if line.startswith("DEVICE") and "VFS ENABLED/TOTAL" in line)
    rows = [line.split("  ") for line in lines[head + 1:]]
    rows = [[c.strip() for c in r if c.strip()] for r in rows]
    # vf 1 and vf 2 both dropped 5787: the lower number is named.
    assert rows == [["eno12399np0", "3/64", "3", "vf 1: 5.8k"],
                    ["enp24s0f0np0", "3/64", "3", "vf 0: 0"],
                    ["eth1", "8/64", "0", "-"]]


def test_narrow_output_keeps_the_sriov_line():
    out = format_table([sample("eno12399np0", e810("eno12399np0"))], width=60)
    assert "    sriov  vfs enabled/total 3/64" in out and "vf 1: 5.8k" in out


def test_the_command_with_collector_vfs_on_a_fixture_tree():
    """`nicwatch show --collector.vfs` end to end: the flag, the source, the table; and the
    TOML key does the same. Without it, no SR-IOV table."""
    import os
    import subprocess
    from pathlib import Path

    from hostd import NICWATCH
    tree = Path(__file__).resolve().parents[2] / "fixtures" / "sysfs" / "cx7-sriov"

    def show(*flags: str) -> str:
        env = {**os.environ, "COLUMNS": "80"}
        r = subprocess.run([NICWATCH, "show", "--collector.ethtool-netlink=false",
                            f"--path.sysfs={tree}", *flags], capture_output=True, text=True,
                           timeout=60, env=env)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        return r.stdout

    out = show("--collector.vfs")
    assert "vfs enabled/total 4/16" in out and "reported -" in out, out
    assert max(map(len, out.splitlines())) <= 80
    assert "vfs enabled/total" not in show()


def test_snapshot_with_collector_vfs_saves_the_vf_counts(tmp_path):
    import subprocess
    from pathlib import Path

    from nicwatch.snapshot import files as S

    from hostd import NICWATCH
    tree = Path(__file__).resolve().parents[2] / "fixtures" / "sysfs" / "cx7-sriov"
    out = tmp_path / "a.json"
    r = subprocess.run([NICWATCH, "snapshot", "--collector.ethtool-netlink=false",
                        f"--path.sysfs={tree}", "--collector.vfs", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    iface = S.load(out).polls[0].interfaces[0]
    got = {dict(k.labels)["state"]: v for k, v in iface.gauges.items()
           if k.metric == "nic_sriov_vfs"}
    assert got == {"enabled": 4.0, "total": 16.0}
