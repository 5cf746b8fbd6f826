"""Both ends of a link on the real kernel: two namespaces joined by a veth pair, each running
its own `nicwatch serve --collector.lldp`, an LLDP agent written here (a raw AF_PACKET sender:
nicwatch never transmits) announcing each end with its 802.1Qaz DCBX TLVs. Each daemon sees
the other end as its neighbour, with the identity the other daemon exports as its own; a
host's own LLDPDUs are not its neighbour; hostile frames and a 10 s flood at the rate one
sender reaches on a veth leave the daemon's memory bounded and its polls on time."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldp_sender import send
from netns import VethPair, make_veth_pair, ns_sh
from promtext import parse_exposition
from waiting import wait_until

pytestmark = pytest.mark.netns
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
PORT = 10848

def mac_of(ns: str, dev: str) -> str:
    return ns_sh(ns, "cat", f"/sys/class/net/{dev}/address").stdout.strip()


class Daemon:
    def __init__(self, ns: str, dev: str, state: Path) -> None:
        self.ns = ns
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, NICWATCH, "serve",
             f"--web.listen-address=127.0.0.1:{PORT}", "--interval=0.2s",
             f"--state.file={state}", f"--interfaces.include={dev}", "--collector.lldp"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: self.get(check=False).returncode == 0, 15, "the daemon", 0.05,
                   self.proc)

    def get(self, check: bool = True) -> subprocess.CompletedProcess:
        return ns_sh(self.ns, "curl", "-sf", f"http://127.0.0.1:{PORT}/metrics", check=check)

    def series(self) -> dict:
        return parse_exposition(self.get().stdout)

    def rss_kib(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))

    def cpu_seconds(self) -> float:
        """User and system CPU of the daemon, all its threads (/proc/PID/stat)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=10)
        return err


@pytest.fixture
def fabric(tmp_path: Path) -> Iterator[tuple[VethPair, Daemon, Daemon]]:
    pair = make_veth_pair(subnet=4)
    daemons: list[Daemon] = []
    try:
        daemons.append(Daemon(pair.ns_a, pair.a, tmp_path / "a.json"))
        daemons.append(Daemon(pair.ns_b, pair.b, tmp_path / "b.json"))
        yield pair, daemons[0], daemons[1]
    finally:
        for d in daemons:
            if d.proc.poll() is None:
                d.stop()
        pair.delete()


def find(series: dict, name: str, **labels: str) -> list[tuple[tuple, float]]:
    return [(k[1], v) for k, v in series.items() if k[0] == name
            and all(dict(k[1]).get(n) == want for n, want in labels.items())]


def labels_of(series: dict, name: str, **labels: str) -> dict[str, str]:
    (found,) = find(series, name, **labels)
    return dict(found[0])


def test_each_end_sees_the_other_and_the_identities_join(fabric) -> None:
    pair, a, b = fabric
    mac_a, mac_b = mac_of(pair.ns_a, pair.a), mac_of(pair.ns_b, pair.b)
    # each namespace's LLDP agent announces its own end (here: the test's sender)
    send(pair.ns_a, dev=pair.a, mac=mac_a, name="host-a", addr=pair.addr_a, pfc=[3], roce=3)
    send(pair.ns_b, dev=pair.b, mac=mac_b, name="host-b", addr=pair.addr_b, pfc=[3, 4], roce=4)
    wait_until(lambda: find(a.series(), "nic_lldp_neighbor_info"), 10, "a's neighbour")
    wait_until(lambda: find(b.series(), "nic_lldp_neighbor_info"), 10, "b's neighbour")
    sa, sb = a.series(), b.series()
    neighbour_of_a = labels_of(sa, "nic_lldp_neighbor_info", device=pair.a)
    assert neighbour_of_a["system_name"] == "host-b"
    assert neighbour_of_a["management_address"] == pair.addr_b
    # the join the fabric rules make: a's neighbour is b's own identity, and the reverse
    local_b = labels_of(sb, "nic_lldp_local_info", device=pair.b)
    local_a = labels_of(sa, "nic_lldp_local_info", device=pair.a)
    assert (neighbour_of_a["chassis_id"], neighbour_of_a["port_id"]) == (
        local_b["chassis_id"], local_b["port_id"]) == (mac_b, mac_b)
    neighbour_of_b = labels_of(sb, "nic_lldp_neighbor_info", device=pair.b)
    assert (neighbour_of_b["chassis_id"], neighbour_of_b["port_id"]) == (
        local_a["chassis_id"], local_a["port_id"]) == (mac_a, mac_a)
    # a's own LLDPDU (sent from a, PACKET_OUTGOING) is not a's neighbour: one neighbour each
    assert len(find(sa, "nic_lldp_neighbor_info")) == len(find(sb, "nic_lldp_neighbor_info")) == 1
    peer = {dict(lb)["priority"]: v for lb, v in find(sa, "nic_lldp_peer_pfc_enabled",
                                                       source="lldp")}
    assert [p for p in "01234567" if peer[p]] == ["3", "4"]
    assert find(sa, "nic_lldp_peer_roce_priority", source="lldp")[0][1] == 4
    assert find(sa, "nic_lldp_receive_state", state="ok")[0][1] == 1
    assert find(sa, "nic_lldp_frames_total")[0][1] == 1
    # a veth has no DCB: no host-side PFC, so no mismatch verdict
    assert find(sa, "nic_lldp_peer_dcbx_mismatch") == []


def test_hostile_frames_and_a_flood_leave_memory_bounded_and_polls_on_time(fabric) -> None:
    pair, a, _ = fabric
    mac_b = mac_of(pair.ns_b, pair.b)
    head = "0180c200000e" + mac_b.replace(":", "") + "88cc"
    hostile = [
        head + "0207040200000000010405056574683006",  # TTL TLV cut short
        head + "0207040200000000010405056574683006020078" + "fe05" + "0080c20b88",  # PFC 5 B
        head + "02ff04020000000001",  # a length past the frame
        head + "0405056574683002070402000000000106020078",  # Port ID first
        head + "0207040200000000010405056574683006020078" + "0aff" + "41" * 300,  # oversized
    ]
    send(pair.ns_b, dev=pair.b, mac=mac_b, name="host-b", addr=pair.addr_b, pfc=[3], roce=3,
         raw=hostile)
    wait_until(lambda: find(a.series(), "nic_lldp_malformed_frames_total", device=pair.a)
               and find(a.series(), "nic_lldp_malformed_frames_total")[0][1] == 5, 10,
               "five malformed frames counted")
    assert len(find(a.series(), "nic_lldp_neighbor_info")) == 1  # the good one still there
    time.sleep(1)
    cpu_idle = a.cpu_seconds()  # the daemon's CPU over 5 s without a flood, to compare
    time.sleep(5)
    cpu_idle = (a.cpu_seconds() - cpu_idle) / 5
    before = a.series()
    rss_before = a.rss_kib()
    cpu_before = a.cpu_seconds()
    polls_before = find(before, "nicwatch_polls_total")[0][1]
    skipped_before = sum(v for _, v in find(before, "nicwatch_skipped_polls_total"))
    # 10,000 distinct chassis ids, then the same flood for 10 s
    start = time.monotonic()
    sent = send(pair.ns_b, dev=pair.b, mac=mac_b, name="host-b", addr=pair.addr_b, pfc=[3],
                roce=3, distinct=10_000, flood=10)
    elapsed = time.monotonic() - start
    cpu_flood = (a.cpu_seconds() - cpu_before) / elapsed
    after = a.series()
    rss_after = a.rss_kib()
    polls = find(after, "nicwatch_polls_total")[0][1] - polls_before
    skipped = sum(v for _, v in find(after, "nicwatch_skipped_polls_total")) - skipped_before
    frames = (find(after, "nic_lldp_frames_total")[0][1]
              - find(before, "nic_lldp_frames_total")[0][1])
    dropped = find(after, "nic_lldp_dropped_frames_total")[0][1]
    print(f"flood: {sent} frames in {elapsed:.1f} s ({sent / elapsed:,.0f}/s); parsed {frames}, "
          f"dropped {dropped}; RSS {rss_before} -> {rss_after} KiB; {polls} polls, "
          f"{skipped} skipped; daemon CPU {cpu_idle:.3f} s/s idle, {cpu_flood:.3f} s/s "
          "flooded")
    assert sent > 100_000
    # parsing is rate-limited: 5 a second, bursts of 10 (plus the scrape's slack)
    assert frames <= 10 + 5 * (elapsed + 2)
    assert len(find(after, "nic_lldp_neighbor_info")) <= 8
    assert dropped > sent / 2  # the kernel dropped what was not read, and counted it
    assert rss_after - rss_before < 8 * 1024, (rss_before, rss_after)
    # the flood costs the receiver little: a port out of tokens is not read (the kernel
    # drops); the whole daemon, polling every 0.2 s, stays under a fifth of a core
    assert cpu_flood < 0.2, (cpu_idle, cpu_flood)
    # the poll (every 0.2 s) kept its schedule: no skipped polls, at least 3/4 of them ran
    assert skipped == 0 and polls >= 0.75 * elapsed / 0.2, (polls, elapsed)
    (duration,) = find(after, "nicwatch_source_duration_seconds", source="lldp")
    assert duration[1] < 0.005  # a copy under a lock, not a read


def show(ns: str, dev: str, *prefix: str) -> subprocess.CompletedProcess:
    return ns_sh(ns, "env", "COLUMNS=500", *prefix, NICWATCH, "show",
                 f"--interfaces.include={dev}", "--collector.lldp", check=False)


def test_show_says_whether_it_can_listen(tmp_path: Path) -> None:
    pair = make_veth_pair(subnet=5)
    try:
        r = show(pair.ns_a, pair.a)
        assert r.returncode == 0, r.stderr
        row = next(line for line in r.stdout.splitlines() if line.startswith(pair.a)
                   and "LLDP agents" in line)
        assert row.split()[1] == "ok"
        # without CAP_NET_RAW: a state in show and in the metric, never a traceback or error
        r = show(pair.ns_a, pair.a, "setpriv", "--bounding-set", "-net_raw", "--inh-caps",
                 "-net_raw")
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert any(line.startswith(pair.a) and "not_permitted (no CAP_NET_RAW)" in line
                   for line in r.stdout.splitlines()), r.stdout
    finally:
        pair.delete()


@pytest.mark.skipif(not Path("/usr/sbin/lldpd").exists(), reason="Debian's lldpd not installed")
def test_a_real_lldp_agent_on_each_end(fabric, tmp_path: Path) -> None:
    """Debian's lldpd (it sends no DCBX TLVs) announcing each end: each daemon's neighbour is
    what the other daemon exports as its own identity (lldpd's defaults: chassis and port id
    the MAC), a host's own lldpd is not its neighbour, and lldpd's shutdown LLDPDU (TTL 0)
    removes the neighbour at once."""
    pair, a, b = fabric
    for d in (a, b):  # lldpd sends at start, then every 30 s: be listening first
        wait_until(lambda d=d: find(d.series(), "nic_lldp_receive_state", state="ok")[0][1] == 1,
                   10, "the receiver's socket")
    # lldpd's unprivileged half must reach its control socket: not under pytest's 0700 tree
    sockets = Path(tempfile.mkdtemp(prefix="nicwatch-lldpd-"))
    sockets.chmod(0o755)
    agents = [subprocess.Popen(["ip", "netns", "exec", ns, "/usr/sbin/lldpd", "-d", "-I", dev,
                                "-u", str(sockets / f"{dev}.socket")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
              for ns, dev in ((pair.ns_a, pair.a), (pair.ns_b, pair.b))]
    try:
        wait_until(lambda: find(a.series(), "nic_lldp_neighbor_info")
                   and find(b.series(), "nic_lldp_neighbor_info"), 20, "both neighbours")
        sa, sb = a.series(), b.series()
        for here, there, peer_dev in ((sa, sb, pair.b), (sb, sa, pair.a)):
            (neighbour,) = [dict(lb) for lb, _ in find(here, "nic_lldp_neighbor_info")]
            local = labels_of(there, "nic_lldp_local_info", device=peer_dev)
            assert (neighbour["chassis_id"], neighbour["port_id"]) == (
                local["chassis_id"], local["port_id"])
            assert neighbour["port_description"] == peer_dev  # lldpd: the interface name
            assert neighbour["chassis_id_subtype"] == neighbour["port_id_subtype"] == "mac"
    finally:
        for agent in agents:
            agent.terminate()
            agent.communicate(timeout=10)
        shutil.rmtree(sockets, ignore_errors=True)
    wait_until(lambda: not find(a.series(), "nic_lldp_neighbor_info"), 5,
               "lldpd's shutdown LLDPDU removing the neighbour")
