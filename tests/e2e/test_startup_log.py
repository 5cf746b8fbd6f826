"""Start-up says what is watched (issue #42 item 2): `nicwatch serve`, run as a user runs it,
logs one "watching" line after its first poll naming the selected interfaces, the RDMA
ports, the sources it reads, those it does not (off by a flag, or unavailable and why) and
those whose reads failed (errno and why: capability, driver, kernel)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hostd import check_lines, free_port
from paths import SYSFS

NICWATCH = [sys.executable, "-m", "nicwatch"]


def served_log(tmp_path: Path, *flags: str) -> list[dict]:
    """The JSON log of `nicwatch serve` until its "watching" line (then stopped)."""
    log = tmp_path / "stderr"
    with open(log, "w") as stderr:
        proc = subprocess.Popen(
            [*NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{free_port()}",
             "--interval=0.2s", "--log.format=json", f"--state.file={tmp_path / 'state.json'}",
             *flags], stderr=stderr)
    try:
        deadline = time.monotonic() + 30
        while '"watching"' not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    return check_lines(log.read_text().splitlines())


def test_the_first_poll_says_what_is_watched(tmp_path: Path) -> None:
    """The mlx5 RDMA fixture host (its interfaces are not in this network namespace, so the
    socket sources read none of them: a failing read, named), ethtool netlink turned off."""
    events = served_log(tmp_path, f"--path.sysfs={SYSFS / 'mlx5-rdma'}",
                        "--interfaces.include=.*", "--collector.ethtool-netlink=false")
    (watching,) = [e for e in events if e["event"] == "watching"]
    assert watching["level"] == "info"
    assert watching["interfaces"] == sorted(p.name for p in
                                            (SYSFS / "mlx5-rdma/class/net").iterdir())
    assert watching["rdma"] and all("/" in port for port in watching["rdma"])
    assert sorted(watching["rdma"]) == sorted(
        f"{dev.name}/{port.name}" for dev in (SYSFS / "mlx5-rdma/class/infiniband").iterdir()
        for port in (dev / "ports").iterdir())
    assert "ethtool_ioctl" in watching["sources"] and "rdma" in watching["sources"]
    assert watching["not_read"]["ethtool_netlink"] == "off (--collector.ethtool-netlink=false)"
    assert watching["not_read"]["module"] == "off (--collector.module not given)"
    assert watching["not_read"]["sriov"] == "off (--collector.vfs not given)"
    assert set(watching["not_read"]).isdisjoint(watching["sources"])
    assert watching["failing"]["netns"].startswith("mismatch on 1 device"), watching
    # one line, after the first poll only
    serving = next(i for i, e in enumerate(events) if e["event"] == "serving")
    assert events.index(watching) > serving
