"""The container image, built for real and run the way the DaemonSet runs it.

`deploy/container/build --debootstrap` builds the image with buildah from what this machine
reaches (Debian packages and PyPI; no container registry): a debootstrap base (kept in the
local image store once made), Debian's Python, nicwatch's wheels. No OCI runtime works
inside the container this suite runs in (no usable cgroups), so the test runs the image's
root file system as a runtime would for the DaemonSet's pod: in a network namespace (the
pod's host network is a test veth here), read-only, with /sys mounted read-only at
/host/sys, the ConfigMap's file at /etc/nicwatch, an emptyDir for the state, the image's
environment, as the image's user, with the DaemonSet's command and arguments. Then it
scrapes /metrics and /readyz from the other end of the veth."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from netns import make_veth_pair, ns_sh
from paths import REPO
from promtext import parse_exposition, series

KUBERNETES = REPO / "deploy" / "kubernetes"
NOBODY = 65534


def manifest(kind: str) -> dict:
    return next(doc for path in sorted(KUBERNETES.glob("*.yaml"))
                for doc in yaml.safe_load_all(path.read_text()) if doc and doc["kind"] == kind)


def buildah(*args: str) -> str:
    return subprocess.run(["buildah", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


IMAGE = "localhost/nicwatch:test"


def image_id(name: str) -> str | None:
    r = subprocess.run(["buildah", "inspect", "--type", "image", "--format", "{{.FromImageID}}",
                        name], capture_output=True, text=True, check=False)
    return r.stdout.strip() if r.returncode == 0 else None


@pytest.fixture(scope="module")
def image() -> str:
    """The image, rebuilt; its Debian layers stay cached between runs (buildah --layers) as
    long as the last test image is kept, so only the previous one is removed."""
    previous = image_id(IMAGE)
    r = subprocess.run([str(REPO / "deploy/container/build"), "--debootstrap", IMAGE],
                       capture_output=True, text=True, check=False, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == IMAGE
    if previous and previous != image_id(IMAGE):
        subprocess.run(["buildah", "rmi", previous], capture_output=True, check=False)
    return IMAGE


@pytest.mark.slow
def test_image_runs_the_daemonset_command(image: str, tmp_path: Path) -> None:
    config = json.loads(buildah("inspect", "--type", "image", image))["OCIv1"]["config"]
    assert config["User"] == f"{NOBODY}:{NOBODY}" and config["Entrypoint"] == ["nicwatch"]
    pod = manifest("DaemonSet")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    (configmap_file,) = manifest("ConfigMap")["data"].items()
    configdir = tmp_path / "config"
    configdir.mkdir()
    (configdir / configmap_file[0]).write_text(configmap_file[1])
    configdir.chmod(0o755)
    (configdir / configmap_file[0]).chmod(0o644)

    ctr = buildah("from", image)
    pair = make_veth_pair(subnet=60)
    daemon = None
    try:
        root = Path(buildah("mount", ctr))
        for path in (*mounts.values(), "/proc", "/dev"):
            (root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
        # The DaemonSet's command and arguments, HOST_IP being the node's address (here the
        # veth's), plus one flag: the default selection skips veths.
        argv = [*container["command"], *(a.replace("$(HOST_IP)", pair.addr_a)
                                         for a in container["args"]),
                f"--interfaces.include=^{pair.a}$", "--interval=1s"]
        env = [*config["Env"], f"HOST_IP={pair.addr_a}"]
        script = "\n".join([
            "set -e",
            f"r={shlex.quote(str(root))}",
            'mount --bind "$r" "$r"',
            'mount -o remount,bind,ro "$r"',  # readOnlyRootFilesystem
            f'mount --bind /sys "$r{mounts["sys"]}"',
            f'mount -o remount,bind,ro "$r{mounts["sys"]}"',
            f'mount --bind {shlex.quote(str(configdir))} "$r{mounts["config"]}"',
            f'mount -t tmpfs -o uid={NOBODY},gid={NOBODY},mode=0700 state "$r{mounts["state"]}"',
            'mount -t proc proc "$r/proc"',
            'mount --rbind /dev "$r/dev"',
            f'exec chroot --userspec={NOBODY}:{NOBODY} --groups={NOBODY} "$r" '
            + shlex.join(["/usr/bin/env", "-i", *env, *argv]),
        ])
        daemon = subprocess.Popen(["ip", "netns", "exec", pair.ns_a, "unshare", "--mount",
                                   "--propagation", "private", "sh", "-c", script],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = f"http://{pair.addr_a}:10847"
        body, deadline = "", time.monotonic() + 30
        while (time.monotonic() < deadline and daemon.poll() is None
               and "nicwatch_polls_total 2" not in body):
            time.sleep(0.3)
            body = ns_sh(pair.ns_b, "curl", "-sf", f"{url}/metrics", check=False).stdout
        ready = ns_sh(pair.ns_b, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                      f"{url}/readyz", check=False).stdout
        status = Path(f"/proc/{daemon.pid}/status").read_text() if daemon.poll() is None else ""
    finally:
        if daemon is not None:
            daemon.terminate()
            _, err = daemon.communicate(timeout=15)
        pair.delete()
        subprocess.run(["buildah", "rm", ctr], capture_output=True, check=False)
    assert daemon.returncode == 0, err
    assert ready == "200"
    # sh, unshare, ip netns exec and chroot exec in place: the pid is nicwatch's.
    assert re.search(rf"^Uid:\s+{NOBODY}\s+{NOBODY}\s+{NOBODY}\s+{NOBODY}$", status, re.M)
    assert re.search(r"^CapEff:\s+0+$", status, re.MULTILINE)
    metrics = parse_exposition(body)
    (info,) = [dict(labels) for name, labels in metrics if name == "nic_info"]
    assert (info["device"], info["driver"]) == (pair.a, "veth")
    assert metrics[series("nic_link_up", device=pair.a)] == 1  # /host/sys
    assert metrics[series("nic_channels", device=pair.a, type="rx")] == 1  # ethtool netlink
    assert not [k for k in metrics if k[0] == "nicwatch_source_errors_total"], err
    assert shutil.which("buildah")
