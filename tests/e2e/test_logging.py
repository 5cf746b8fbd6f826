"""Logging: structlog JSON lines on stderr, one event per state change (a source starts
failing, fails differently, recovers), never one per poll, so a persistent fault cannot
flood the journal."""

from __future__ import annotations

import errno
import shutil
import socket
import subprocess
import time
from collections import Counter

import pytest

from nicwatch.sources.ethtool_ioctl import ETHTOOL_GSTATS

from faults import FAULTS, in_ns, terminate
from hostd import NICWATCH, check_lines, free_port
from paths import SYSFS
from promtext import parse_exposition, series


@pytest.mark.netns
def test_one_event_per_state_change(fault_ns):
    """nf0a's statistics fail with EPERM for 10 polls, then with EIO for 5, then recover;
    nf1a's driver info fails all 25 polls."""
    eperm = [["nf0a", ETHTOOL_GSTATS, errno.EPERM]]
    eio = [["nf0a", ETHTOOL_GSTATS, errno.EIO]]
    lasting = [list(f[:3]) for f in FAULTS if f[0] == "nf1a"]
    schedule = [[3, lasting], [10, eperm + lasting], [5, eio + lasting], [7, lasting]]
    got = in_ns(fault_ns, "faults", schedule=schedule)
    events = got["log"]
    assert len(got["polls"]) == 25
    changes = [(e["event"], e["device"], e.get("error")) for e in events
               if e["event"].startswith("source_") and e["source"] == "ethtool_ioctl"]
    assert changes == [("source_failed", "nf1a", "ENODEV"), ("source_failed", "nf0a", "EPERM"),
                       ("source_failed", "nf0a", "EIO"), ("source_recovered", "nf0a", None)]
    assert {e["level"] for e in events if e["event"] == "source_failed"} == {"warning"}
    # Nothing else is logged per poll.
    per_event = Counter(e["event"] for e in events)
    assert max(per_event.values()) <= 3, per_event
    last = parse_exposition(got["polls"][-1])
    assert last[series("nicwatch_source_errors_total", device="nf1a", source="ethtool_ioctl")] == 25


def test_persistent_faults_of_the_running_daemon_are_logged_once(tmp_path):
    """The real daemon on a fixture tree with a damaged PCI attribute, whose interfaces do
    not exist in this kernel (so the tree and this network namespace disagree, and the socket
    sources are not asked: sources.netns): 50 polls at 100 ms log what the first polls did
    and nothing more."""
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    (root / "devices/pci0000:20/0000:20:03.1/0000:21:00.0/current_link_width").write_text("x99\n")
    port = free_port()
    log = tmp_path / "stderr"
    with open(log, "w") as stderr:
        proc = subprocess.Popen(
            [NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{port}", "--interval=0.1s",
             f"--path.sysfs={root}", "--interfaces.include=.*", "--collector.ethtool-netlink=false",
             f"--state.file={tmp_path / 'state.json'}"], stderr=stderr)

    def polls() -> float:
        r = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/metrics"],
                           capture_output=True, text=True, check=False)
        return parse_exposition(r.stdout).get(("nicwatch_polls_total", ()), 0) if r.stdout else 0

    try:
        counts = []
        for target in (10, 50):
            deadline = time.monotonic() + 20
            while polls() < target:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            counts.append(len(log.read_text().splitlines()))
    finally:
        terminate(proc)
    assert counts[0] == counts[1], log.read_text()
    events = check_lines(log.read_text().splitlines())
    failed = Counter((e["device"], e["source"]) for e in events if e["event"] == "source_failed")
    assert failed[("", "netns")] == 1
    assert failed[("enp33s0f0np0", "sysfs_pci")] == 1
    assert max(failed.values()) == 1


def test_fd_exhaustion_is_survived_and_logged_once(tmp_path):
    """Out of file descriptors (a connection flood against a low RLIMIT_NOFILE): the
    listener retries every 0.1 s and polls fail to open files. One event when each starts
    failing and one when it recovers (the listener: once accepts have worked for a second,
    since at the edge of the limit it alternates); the daemon lives on."""
    port = free_port()
    log = tmp_path / "stderr"
    with open(log, "w") as stderr:
        proc = subprocess.Popen(
            ["prlimit", "--nofile=48:48", NICWATCH, "serve",
             f"--web.listen-address=127.0.0.1:{port}",
             "--interval=0.5s", f"--state.file={tmp_path / 'state.json'}"], stderr=stderr)

    def get(path: str) -> str | None:
        r = subprocess.run(["curl", "-sf", "-m", "2", f"http://127.0.0.1:{port}{path}"],
                           capture_output=True, text=True, check=False)
        return r.stdout if r.returncode == 0 else None

    clients: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 10
        while get("/readyz") is None:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
        time.sleep(2)  # twenty accept retries, four polls
        for c in clients:
            c.close()
        deadline = time.monotonic() + 10
        polls = None
        while (body := get("/metrics")) is None or polls is None or \
                parse_exposition(body)[("nicwatch_polls_total", ())] < polls + 2:
            assert proc.poll() is None and time.monotonic() < deadline, "no recovery"
            if body is not None and polls is None:
                polls = parse_exposition(body)[("nicwatch_polls_total", ())]
            time.sleep(0.1)
        time.sleep(1.2)  # accepts count as recovered once they have worked for a second
        assert get("/healthz") == "ok\n"
    finally:
        for c in clients:
            c.close()
        code = terminate(proc)
    assert code == 0, log.read_text()
    events = Counter(e["event"] for e in check_lines(log.read_text().splitlines()))
    assert events["accept_failed"] == events["accept_recovered"] == 1, events
    assert events["poll_failed"] == events["poll_recovered"] <= 4, events  # per poll at most
