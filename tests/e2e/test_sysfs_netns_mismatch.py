"""`--path.sysfs` over a tree that is not the network namespace nicwatch runs in: the kernel
socket sources (ethtool netlink and ioctl, dcbnl, devlink, netdev genl) must not attach this
namespace's values to the tree's interfaces. For real: a namespace the test creates with a
veth of 8 queues, and a copy of a fixture tree whose port has the veth's ifindex under
another name (what a container of its own namespace sees in the host's /sys). nicwatch says
so once (show: a warning line; serve: one log warning and nicwatch_source_errors_total
{source="netns"}) and shows none of the veth's channels on the fixture port; the same tree
with the port named as the veth matches by ifindex and name, and its channels are read."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netns import ns_sh
from paths import REPO
from promtext import parse_exposition

pytestmark = pytest.mark.netns
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
FIXTURE = REPO / "tests" / "fixtures" / "sysfs" / "lab-report-cx6-200g"
PORT = "enp129s0np0"  # the fixture's one port (ifindex 5 in the fixture)


def ifindex(ns: str, dev: str) -> int:
    return int(json.loads(ns_sh(ns, "ip", "-j", "link", "show", dev).stdout)[0]["ifindex"])


def tree(tmp_path: Path, index: int, name: str = PORT) -> Path:
    """The fixture copied, its port given ``index`` (and renamed to ``name``)."""
    root = tmp_path / f"sysfs-{name}"
    shutil.copytree(FIXTURE, root, symlinks=True)
    link = root / "class" / "net" / PORT
    device_dir = link.resolve()
    (device_dir / "ifindex").write_text(f"{index}\n")
    if name != PORT:
        target = os.readlink(link)
        device_dir.rename(device_dir.with_name(name))
        link.unlink()
        (root / "class" / "net" / name).symlink_to(target.rsplit("/", 1)[0] + "/" + name)
    return root


def show(ns: str, root: Path) -> tuple[dict, str]:
    r = ns_sh(ns, NICWATCH, "show", f"--path.sysfs={root}", "--json", check=False)
    assert r.returncode == 0, r.stderr
    (sample,) = json.loads(r.stdout)
    return sample, r.stderr


def channels(sample: dict) -> dict[str, float]:
    return {g["labels"]["type"]: g["value"] for g in sample["gauges"]
            if g["metric"] == "nic_channels"}


def test_show_leaves_another_namespaces_values_out_and_says_so(veth_pair_mq, tmp_path):
    ns, veth = veth_pair_mq.ns_a, veth_pair_mq.a
    index = ifindex(ns, veth)
    # Control: the tree's port has the veth's name and ifindex, so it is the veth as far as
    # the sockets can tell: its 8 channels are read (the assertion below can fail).
    same, err = show(ns, tree(tmp_path, index, name=veth))
    assert channels(same) == {"rx": 8, "tx": 8} and "warning" not in err, err
    # The fixture port with the veth's ifindex under its own name: nothing of the veth.
    sample, err = show(ns, tree(tmp_path, index))
    assert sample["device"] == PORT and sample["identity"]["ifindex"] == index
    assert channels(sample) == {}
    kernel_sources = {"ethtool_netlink", "ethtool_ioctl", "dcbnl", "devlink", "netdev_genl"}
    assert not [c for c in sample["counters"] if c.get("source") in kernel_sources]
    assert sample["errors"] == []  # not read, so no ENODEV per source either
    assert sample["identity"]["driver"] == "mlx5_core"  # the tree's own values stay
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nicwatch show: warning: --path.sysfs "), err
    assert f"{PORT} (ifindex {index} under " in lines[0] and f"{veth} has ifindex {index} here" \
        in lines[0]


def test_serve_warns_once_and_counts_the_mismatch(veth_pair_mq, tmp_path):
    ns = veth_pair_mq.ns_a
    root = tree(tmp_path, ifindex(ns, veth_pair_mq.a))
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, NICWATCH, "serve", "--web.listen-address=127.0.0.1:10847",
         "--interval=0.2s", f"--state.file={tmp_path / 'state.json'}", f"--path.sysfs={root}",
         "--log.format=json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        polls = 0.0
        while polls < 5:
            assert proc.poll() is None and time.monotonic() < deadline, "no 5 polls"
            r = ns_sh(ns, "curl", "-sf", "http://127.0.0.1:10847/metrics", check=False)
            if r.returncode == 0:
                series = parse_exposition(r.stdout)
                polls = series.get(("nicwatch_polls_total", ()), 0.0)
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, log = proc.communicate(timeout=10)
    mismatch = series[("nicwatch_source_errors_total", (("device", ""), ("source", "netns")))]
    assert mismatch >= 5
    assert not [key for key in series if key[0] == "nic_channels"]
    assert ("nic_info" in {key[0] for key in series})  # the tree's port is still served
    # the start-up "watching" line names the failing source too; the warning is the
    # source_failed event
    warnings = [e for e in map(json.loads, log.splitlines()) if e.get("source") == "netns"]
    assert len(warnings) == 1 and warnings[0]["level"] == "warning", log
    assert warnings[0]["error"] == "mismatch" and PORT in warnings[0]["message"]
