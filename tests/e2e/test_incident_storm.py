"""Incident capture under storms and bad input, against the real kernel: `nicwatch serve` in a
namespace of the test's own with veth pairs.

* a storm of links going down at once: incidents capped, the overflow merged and counted,
  the poll age and the resident size bounded, SIGTERM within a second in the middle of it;
* names that read alike (``hx#1``, ``hx,1``) get an incident each;
* a link that flaps between polls is counted from the kernel's carrier counter;
* a regex that a backtracking engine takes forever on leaves the daemon answering;
* a capture directory with a NUL, in /proc or that is a file: refused at start (exit 2),
  and on SIGHUP the running configuration stays."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from netns import namespace_with, ns_sh, sh
from promtext import parse_exposition, series

pytestmark = pytest.mark.netns
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
PORT = 9853
EVIL = "(?:(?:[a-z0-9]*)*)*Z"


class Served:
    def __init__(self, ns: str, tmp: Path, config: str, *flags: str) -> None:
        self.ns = ns
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        self.config = tmp / "nicwatch.toml"
        self.config.write_text(config)
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, NICWATCH, "serve", f"--config={self.config}",
             f"--web.listen-address=127.0.0.1:{PORT}", f"--state.file={tmp / 'state.json'}",
             "--log.level=info", *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        try:
            while self.get("/readyz")[0] != 200:
                assert self.proc.poll() is None, self.proc.communicate()
                assert time.monotonic() < deadline, "daemon did not become ready"
                time.sleep(0.05)
        except BaseException:
            self.proc.kill()  # never left running when the test fails here
            self.proc.wait()
            raise

    def get(self, path: str) -> tuple[int, str]:
        r = ns_sh(self.ns, "curl", "-s", "-m", "5", "-o", "/dev/stdout", "-w",
                  "\n%{http_code}", f"http://127.0.0.1:{PORT}{path}", check=False)
        body, _, status = r.stdout.rpartition("\n")
        return int(status or 0), body

    def metrics(self) -> dict:
        status, body = self.get("/metrics")
        assert status == 200, status
        return parse_exposition(body)

    def rss(self) -> int:
        return psutil.Process(self.proc.pid).memory_info().rss

    def stop(self) -> tuple[float, str]:
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=20)
        return time.monotonic() - start, err


def listed(directory: Path) -> list[dict]:
    out = subprocess.run([NICWATCH, "incidents", "--dir", str(directory), "--json"],
                         capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def events(err: str) -> list[dict]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


PAIRS = 100  # 200 interfaces; 50 peers down at once take 100 links down
STORM_CONFIG = """
[capture]
directory = "{dir}"
before = "2s"
after = "2s"
max_open = 8
max_per_trigger = 4
per_trigger_window = "10m"

[[capture.trigger]]
event = "link_down"
"""


def test_a_link_down_storm_is_capped_merged_counted_and_bounded(tmp_path: Path) -> None:
    """The issue: 1,000 links down at once with one link_down trigger took 0.39 -> 3.6 GB in
    72 s, the poll age to 73 s, and SIGTERM was ignored for 20 s (one full onset snapshot per
    incident, built on the poll thread). Here 100 links go down in one poll: 4 incidents
    open (max_per_trigger), the other 96 firings are merged and counted, the daemon's
    resident size stays under twice its size before, no poll is late by seconds, and
    SIGTERM in the middle of it stops it within a second. Two interfaces whose names read
    alike (`hx#1`, `hx,1`) get an incident and a directory each (they once shared one)."""
    batch = "".join(f"link add st{i}a type veth peer name st{i}b\nlink set st{i}a up\n"
                    f"link set st{i}b up\n" for i in range(PAIRS))
    directory = tmp_path / "incidents"
    with namespace_with("nwst", batch) as ns:
        # `#` starts a comment in an `ip -batch`: these two one by one
        sh("ip", "-n", ns, "link", "add", "hx#1", "type", "veth", "peer", "name", "hx,1")
        for dev in ("hx#1", "hx,1"):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        s = Served(ns, tmp_path, STORM_CONFIG.format(dir=directory), "--interval=0.5s",
                   "--interfaces.include=st.*|hx.*")
        try:
            time.sleep(1.5)
            idle = s.rss()
            # names that read alike: hx#1 admin down, its peer hx,1 loses its carrier
            sh("ip", "-n", ns, "link", "set", "hx#1", "down")
            deadline = time.monotonic() + 10
            while len(listed(directory)) < 2:
                assert time.monotonic() < deadline, listed(directory)
                time.sleep(0.1)
            assert {i["device"] for i in listed(directory)} == {"hx#1", "hx,1"}
            assert len({p.name for p in directory.iterdir()}) == 2
            # the storm: 50 peers down at once, 100 links down
            down = "".join(f"link set st{i}b down\n" for i in range(0, PAIRS, 2))
            subprocess.run(["ip", "-n", ns, "-batch", "-"], input=down, text=True, check=True)
            ages, peak = [], idle
            deadline = time.monotonic() + 20
            while True:
                m = s.metrics()
                ages.append(m[series("nicwatch_last_poll_age_seconds")])
                peak = max(peak, s.rss())
                opened = m[series("nic_incidents_total", trigger="link_down")]
                merged = m[series("nicwatch_incidents_merged_total", trigger="link_down")]
                if opened + merged >= 102:
                    break
                assert time.monotonic() < deadline, (opened, merged)
                time.sleep(0.1)
            assert (opened, merged) == (4, 98)  # 2 before the storm, 2 in it, the rest merged
            # No thread takes the daemon's signals but the signal thread (daemon.SignalThread):
            # every thread blocks SIGHUP, SIGINT and SIGTERM, the main one included, and the
            # kernel opens them only to the one thread waiting in sigwaitinfo for them.
            mask = (1 << (signal.SIGHUP - 1)) | (1 << (signal.SIGINT - 1)) | (
                1 << (signal.SIGTERM - 1))
            tasks = {int(t.name): t for t in Path(f"/proc/{s.proc.pid}/task").iterdir()}
            assert len(tasks) >= 4
            open_to = []
            for tid, task in tasks.items():
                blocked = int(next(line.split()[1] for line in (task / "status").read_text()
                                   .splitlines() if line.startswith("SigBlk:")), 16)
                if blocked & mask != mask:
                    open_to.append((tid, hex(blocked)))
            assert len(open_to) == 1 and open_to[0][0] != s.proc.pid, open_to
            # The writer catches up while polls go on: each merge is written into its
            # incident while it is open (a CI run lost all 98 when only the stop's 0.15 s,
            # paced, was left to write them).
            deadline, samples = time.monotonic() + 20, 0
            while True:
                m = s.metrics()
                ages.append(m[series("nicwatch_last_poll_age_seconds")])
                peak = max(peak, s.rss())
                samples += 1
                if samples >= 10 and m[series("nicwatch_incident_writes_pending")] == 0:
                    break
                assert time.monotonic() < deadline, m[series("nicwatch_incident_writes_pending")]
                time.sleep(0.1)
            assert max(ages) < 3.0, ages  # was 73 s
            assert peak < 2 * idle, (idle, peak)
            assert sum(i["merged"] for i in listed(directory)) == 98  # written while open
        finally:
            seconds, err = s.stop()
    assert seconds < 1.0, seconds  # SIGTERM while the storm's incidents are open
    items = listed(directory)
    assert len(items) == 4 and len({i["id"] for i in items}) == 4
    assert sum(i["merged"] for i in items) == 98
    assert not [e for e in events(err) if e["level"] == "error"], err[-2000:]
    assert "Traceback" not in err


def test_a_link_flapping_between_polls_is_counted_by_the_kernels_carrier_counter(
        tmp_path: Path) -> None:
    """The issue: 10 flaps at 2 Hz raised carrier_down_count by 10 while nic_link_up read 1
    in 64 of 67 polls. The flaps here all fall between two polls (1 s apart): one incident,
    with the 10 carrier losses counted."""
    directory = tmp_path / "incidents"
    config = STORM_CONFIG.format(dir=directory).replace('after = "2s"', 'after = "1.5s"')
    with namespace_with("nwfl", "link add fl0 type veth peer name fl1\nlink set fl0 up\n"
                                "link set fl1 up\n") as ns:
        s = Served(ns, tmp_path, config, "--interval=1s", "--interfaces.include=fl0")
        try:
            time.sleep(1.2)
            flaps = "".join("link set fl1 down\nlink set fl1 up\n" for _ in range(10))
            subprocess.run(["ip", "-n", ns, "-batch", "-"], input=flaps, text=True, check=True)
            deadline = time.monotonic() + 15
            while not (items := listed(directory)) or items[0]["open"]:
                assert time.monotonic() < deadline, items
                time.sleep(0.1)
            downs = s.metrics()[series("nic_carrier_down_events_total", device="fl0")]
        finally:
            s.stop()
    (item,) = items
    assert item["device"] == "fl0" and item["events"] == 10 and downs >= 10


def test_a_catastrophic_regex_leaves_the_daemon_answering(tmp_path: Path) -> None:
    """The issue: `(?:(?:[a-z0-9]*)*)*Z` as a trigger's device and in --interfaces.include
    pinned a core; /healthz and /readyz stopped answering and SIGTERM was ignored. Every user
    regex is RE2 now: linear in the name."""
    name = "a" * 15  # the longest interface name
    directory = tmp_path / "incidents"
    config = STORM_CONFIG.format(dir=directory) + f'device = "{EVIL}"\n'
    with namespace_with("nwrx", f"link add {name} type veth peer name b{name[:14]}\n"
                                f"link set {name} up\n") as ns:
        s = Served(ns, tmp_path, config, "--interval=0.2s", f"--interfaces.include={EVIL}|.*")
        try:
            for _ in range(10):
                start = time.monotonic()
                assert s.get("/healthz")[0] == 200
                assert time.monotonic() - start < 1.0
                time.sleep(0.05)
            # and polls go on (within a deadline: at load 6 the ten probes above can take
            # less time than five 0.2 s polls of a daemon that answers them all)
            deadline = time.monotonic() + 15
            while s.metrics()[series("nicwatch_polls_total")] < 5:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            seconds, err = s.stop()
    assert seconds < 1.0 and "Traceback" not in err


@pytest.mark.parametrize("directory, why", [
    ('"/tmp/in\\u0000cidents"', "NUL"),
    ('"/proc/self"', "kernel file system"),
    ("FILE", "not a directory"),
])
def test_a_bad_capture_directory_is_refused_at_start_and_on_sighup(
        tmp_path: Path, directory: str, why: str) -> None:
    """The issue: a NUL in [capture] directory was a traceback (exit 1) at start, and on
    SIGHUP it took the daemon down. Every path of the configuration is checked when it is
    read, before anything is applied."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    bad = STORM_CONFIG.replace('"{dir}"', directory.replace("FILE", f'"{afile}"'))
    config = tmp_path / "bad.toml"
    config.write_text(bad)
    r = subprocess.run([NICWATCH, "serve", f"--config={config}",
                        f"--state.file={tmp_path / 'state.json'}",
                        f"--web.listen-address=127.0.0.1:{PORT}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "capture.directory" in r.stderr and why in r.stderr
    good = STORM_CONFIG.format(dir=tmp_path / "incidents")
    with namespace_with("nwcd", "link add cd0 type veth peer name cd1\n") as ns:
        s = Served(ns, tmp_path, good, "--interval=0.2s", "--interfaces.include=cd.*")
        try:
            s.config.write_text(bad)
            s.proc.send_signal(signal.SIGHUP)
            time.sleep(1.0)
            assert s.proc.poll() is None and s.get("/healthz")[0] == 200
        finally:
            _, err = s.stop()
    failed = [e for e in events(err) if e["event"] == "reload_failed"]
    assert len(failed) == 1 and why in failed[0]["error"], err[-2000:]
