"""Signals and lifecycle of `nicwatch serve`: SIGHUP reloads (a bad file keeps the running
configuration), systemd readiness and watchdog notifications, polls that overrun the
interval (skipped and counted, never piled up) and a state directory that cannot be
written (refused at start). SIGTERM within a second is in test_daemon_netns.py."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from nicwatch import daemon as daemon_module
from nicwatch.collect import Collector, Selection
from nicwatch.config import build
from nicwatch.daemon import Daemon

from bad_config import BAD_FILES
from faults import Process, devices, terminate
from hostd import AS_NOBODY, NICWATCH, check_lines, free_port
from paths import SYSFS
from promtext import parse_exposition
from waiting import wait_until


@pytest.mark.netns
def test_sighup_reloads_and_a_bad_file_keeps_the_running_configuration(fault_ns, tmp_path):
    config = tmp_path / "nicwatch.toml"
    config.write_text('[interfaces]\ninclude = "nf0."\n')
    s = Process(f"--state.file={tmp_path / 'state.json'}", f"--config={config}", ns=fault_ns)
    try:
        s.metrics(1)
        assert devices(s.text()) == {"nf0a", "nf0b"}
        config.write_text('[interfaces]\ninclude = "nf[01]a"\n')
        s.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: devices(s.text()) == {"nf0a", "nf1a"}, 5,
                   "SIGHUP applying the new file", 0.05)
        for bad in ('[interfaces]\ninclude = "(nf"\n', "interval = \n"):
            config.write_text(bad)
            s.proc.send_signal(signal.SIGHUP)
            s.wait_polls(3)
            assert devices(s.text()) == {"nf0a", "nf1a"}  # the running configuration
        config.unlink()
        s.proc.send_signal(signal.SIGHUP)
        s.wait_polls(3)
        assert devices(s.text()) == {"nf0a", "nf1a"} and s.proc.poll() is None
    finally:
        err = s.stop()
    logged = check_lines(err.splitlines())
    assert [e["event"] for e in logged if e["event"].startswith("reload")] == [
        "reloaded", "reload_failed", "reload_failed", "reload_failed"]
    failures = [e for e in logged if e["event"] == "reload_failed"]
    assert all(str(config) in e["error"] and e["level"] == "error" for e in failures)
    assert "interfaces.include" in failures[0]["error"] and "TOML" in failures[1]["error"]


def test_systemd_readiness_watchdog_and_stopping(tmp_path):
    """Type=notify: READY=1 once the first poll is served, WATCHDOG=1 after every poll while
    WATCHDOG_USEC is set, STOPPING=1 on the way out."""
    path = str(tmp_path / "notify.sock")
    port = free_port()
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(10)
        env = {**os.environ, "NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000"}
        proc = subprocess.Popen([NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{port}",
                                 "--interval=0.2s", f"--state.file={tmp_path / 'state.json'}"],
                                env=env)
        try:
            assert sock.recv(64) == b"READY=1"
            # Ready means served: the first poll is already on /metrics.
            body = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/metrics"],
                                  capture_output=True, text=True, check=True).stdout
            assert parse_exposition(body)[("nicwatch_polls_total", ())] >= 1
            assert [sock.recv(64) for _ in range(4)] == [b"WATCHDOG=1"] * 4
        finally:
            code = terminate(proc)
        messages = []
        sock.settimeout(0.5)
        try:
            while True:
                messages.append(sock.recv(64))
        except TimeoutError:
            pass
    assert code == 0
    assert messages[-1] == b"STOPPING=1" and set(messages[:-1]) <= {b"WATCHDOG=1"}


class SlowCollector(Collector):
    """The real collector on a fixture tree; each poll first sleeps ``delay`` seconds (a
    driver that takes its time, a loaded host)."""

    def __init__(self) -> None:
        super().__init__(SYSFS / "virtio-no-pcie", Selection())
        self.delay = 0.0
        self.starts: list[tuple[float, float]] = []  # (monotonic start, delay)

    def poll(self):
        self.starts.append((time.monotonic(), self.delay))
        time.sleep(self.delay)
        return super().poll()


def test_polls_slower_than_the_interval_are_skipped_not_piled_up(tmp_path, monkeypatch):
    # No uevent socket: every poll is a scheduled one (the daemon supports running without).
    monkeypatch.setattr(daemon_module, "NetEvents", lambda: (_ for _ in ()).throw(OSError()))
    config = build(None, {"interval": "0.1s", "web.listen_address": "127.0.0.1:0",
                          "state.file": str(tmp_path / "state.json")})
    collector = SlowCollector()
    d = Daemon(config, collector=collector)
    runner = threading.Thread(target=d.run)
    runner.start()
    try:
        for polls, delay in ((3, 0.0), (4, 0.35), (5, 0.0)):
            collector.delay = delay
            target = d.polls + polls
            while d.polls < target:
                time.sleep(0.01)
    finally:
        d.stop_event.set()
        runner.join()
    slow = sum(1 for _, delay in collector.starts if delay)
    # Each slow poll overran three or more 0.1 s slots; they were counted...
    assert d.skipped >= 3 * (slow - 1)
    # ...and not made up for: no poll started less than half an interval after the
    # previous one, so a slow spell is never followed by a burst.
    gaps = [b[0] - a[0] for a, b in zip(collector.starts, collector.starts[1:], strict=False)]
    assert min(gaps) >= 0.05, gaps
    body = d.poll_once().get(False, False).decode()
    assert parse_exposition(body)[("nicwatch_skipped_polls_total", ())] == d.skipped


@pytest.mark.parametrize("case", ["not_writable", "cannot_create", "not_a_directory"])
def test_unwritable_state_directory_is_refused_at_start(reachable_dir, case):
    state_dir = reachable_dir / "state"
    if case == "not_writable":
        state_dir.mkdir()
    elif case == "not_a_directory":
        state_dir.write_text("")
    state = state_dir / "identity.json"
    proc = subprocess.Popen([*AS_NOBODY, NICWATCH, "serve", "--web.listen-address=127.0.0.1:0",
                             f"--state.file={state}"], stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the daemon started with an unwritable state directory: {err}")
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and str(state) in err and "Traceback" not in err


# --------------------------------------------------------------------------- staleness


def _get(port: int, path: str) -> tuple[int, str]:
    r = subprocess.run(["curl", "-s", "-m", "5", "-o", "/dev/stdout", "-w", "\n%{http_code}",
                        f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True,
                       check=False)
    body, _, status = r.stdout.rpartition("\n")
    return int(status or 0), body


STORM = """
import os, signal, sys, time
pid, seconds, limit = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
sent, end = 0, time.monotonic() + seconds
while sent < limit and time.monotonic() < end:
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError:  # the daemon stopped (SIGTERM during the storm)
        break
    sent += 1
print(sent)
"""


def test_sighup_storm_keeps_polling_and_sigterm_still_stops_within_a_second(tmp_path):
    """Thousands of SIGHUPs from another process: the loop keeps polling on its schedule
    (a signal is no poll), /readyz stays ready, and SIGTERM during the storm ends it fast.
    The handler once took a lock the interrupted code held: the loop hung, still serving
    the last poll as if healthy, and ignored SIGTERM."""
    config = tmp_path / "nicwatch.toml"
    config.write_text('interval = "0.2s"\n')
    port = free_port()
    proc = subprocess.Popen([NICWATCH, "serve", f"--config={config}",
                             f"--web.listen-address=127.0.0.1:{port}",
                             f"--path.sysfs={SYSFS / 'virtio-no-pcie'}",
                             f"--state.file={tmp_path / 'state.json'}", "--log.level=warning"],
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: _get(port, "/readyz")[0] == 200, 10, "/readyz 200", 0.05, proc)

        def polls() -> float:
            return parse_exposition(_get(port, "/metrics")[1])[("nicwatch_polls_total", ())]

        storm = subprocess.Popen([sys.executable, "-c", STORM, str(proc.pid), "4", "5000000"],
                                 stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(0.5)  # well into the storm
            before, start = polls(), time.monotonic()
            time.sleep(1.5)
            during = polls()
            assert storm.poll() is None, "the storm ended before the check"
            # 0.2 s interval: ~7 polls in 1.5 s; neither hung nor one poll per signal. With
            # flag-setting handlers the storm interrupted the loop so often that 1-6 polls
            # completed in 2 s and SIGTERM took up to 2.2 s (a CI run failed on it); blocked
            # and taken by one thread (daemon.SignalThread) the schedule holds.
            assert 5 <= during - before <= 1.5 / 0.2 + 3, (before, during)
            assert _get(port, "/readyz")[0] == 200
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)  # during the storm
            assert proc.wait(timeout=5) == 0
            assert time.monotonic() - t0 < 1.0
        finally:
            storm.kill()
            storm.wait()
        assert time.monotonic() - start < 10
    finally:
        terminate(proc)
    err = proc.stderr.read()
    assert "Traceback" not in err, err
    # CPython's unraisable "Signal 1 ignored due to race condition", once seen at a stop
    assert "Exception ignored" not in err and "race condition" not in err, err


class HangingCollector(SlowCollector):
    """The real collector on a fixture tree; while ``hang`` is set, a poll blocks until it
    is cleared (a source stuck in the kernel, a deadlocked consumer)."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = threading.Event()
        self.hanging = threading.Event()
        self.release = threading.Event()

    def poll(self):
        if self.hang.is_set():
            self.hanging.set()
            self.release.wait(30)
            self.hanging.clear()
        return super().poll()


def _running_daemon(tmp_path, monkeypatch, collector):
    """A Daemon polling ``collector`` every 0.2 s on a free loopback port, on its own thread,
    with no uevents and its systemd notifications recorded as (monotonic time, message)."""
    monkeypatch.setattr(daemon_module, "NetEvents", lambda: (_ for _ in ()).throw(OSError()))
    monkeypatch.setenv("WATCHDOG_USEC", "2000000")
    notified: list[tuple[float, str]] = []
    monkeypatch.setattr(daemon_module, "_sd_notify",
                        lambda m: notified.append((time.monotonic(), m)))
    port = free_port()
    config = build(None, {"interval": "0.2s", "web.listen_address": f"127.0.0.1:{port}",
                          "state.file": str(tmp_path / "state.json")})
    d = Daemon(config, collector=collector)
    runner = threading.Thread(target=d.run)
    runner.start()
    return d, collector, port, notified, runner


def test_hung_poller_fails_readyz_and_its_age_rises_on_every_scrape(tmp_path, monkeypatch):
    d, collector, port, notified, runner = _running_daemon(tmp_path, monkeypatch,
                                                           HangingCollector())

    def age() -> float:
        status, body = _get(port, "/metrics")
        assert status == 200  # the last poll stays served...
        return parse_exposition(body)[("nicwatch_last_poll_age_seconds", ())]

    try:
        while d.polls < 3:
            time.sleep(0.01)
        assert _get(port, "/readyz") == (200, "ready\n")
        assert age() < 0.2 + 0.1
        collector.hang.set()
        assert collector.hanging.wait(5)
        hung_at = time.monotonic()
        # ...with its age, computed at each scrape, rising from within one interval.
        time.sleep(0.2)
        ages = []
        for _ in range(3):
            ages.append(age())
            time.sleep(0.15)
        assert ages[0] >= 0.2 and ages[0] < ages[1] < ages[2], ages
        # /readyz fails after 3 intervals (at least 1 s) without a completed poll.
        while _get(port, "/readyz")[0] == 200:
            assert time.monotonic() - hung_at < 1.0 + 0.5, "/readyz still ready"
            time.sleep(0.05)
        status, body = _get(port, "/readyz")
        assert status == 503 and body.startswith("stale: last poll completed"), body
        assert age() > 1.0
        polls = d.polls
        collector.hang.clear()
        released_at = time.monotonic()
        collector.release.set()
        wait_until(lambda: _get(port, "/readyz")[0] == 200, 5, "/readyz recovering", 0.05)
        assert d.polls > polls and age() < 0.3
    finally:
        collector.release.set()
        d.stop_event.set()
        runner.join(5)
    # The watchdog was fed before and after the hang, never while it hung (the loop is
    # stuck in the poll: nothing feeds it).
    fed = [t for t, m in notified if m == "WATCHDOG=1"]
    assert [t for t in fed if t < hung_at] and [t for t in fed if t > released_at]
    assert not [t for t in fed if hung_at < t < released_at]


def test_sigterm_stops_a_long_poll_between_interfaces(tmp_path):
    """A poll of thousands of interfaces takes seconds; SIGTERM must not wait for it. 5,000
    interfaces (links to one copy of a real virtio interface directory, as /sys/class/net
    links to the device tree) make a poll of seconds on this machine (2,000 took 0.9 s once
    the poll got faster, too short to tell waiting from not waiting)."""
    net = tmp_path / "sysfs" / "class" / "net"
    net.mkdir(parents=True)
    shutil.copytree(SYSFS / "virtio-no-pcie" / "class" / "net" / "eth0", tmp_path / "eth0",
                    symlinks=True, ignore=shutil.ignore_patterns("device", "subsystem"))
    for i in range(5000):
        (net / f"nw{i}").symlink_to(tmp_path / "eth0")
    port = free_port()
    proc = subprocess.Popen([NICWATCH, "serve", "--interval=1s",
                             f"--web.listen-address=127.0.0.1:{port}",
                             f"--path.sysfs={tmp_path / 'sysfs'}", "--interfaces.include=nw.*",
                             f"--state.file={tmp_path / 'state.json'}", "--log.level=warning"])
    try:
        wait_until(lambda: _get(port, "/readyz")[0] == 200, 60, "/readyz 200", 0.1, proc)
        m = parse_exposition(_get(port, "/metrics")[1])
        poll = sum(v for (name, _), v in m.items() if name == "nicwatch_poll_duration_seconds")
        # Each poll takes longer than the 1 s interval: the next one is running now.
        assert poll > 1.0, poll
        time.sleep(0.3)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        # Within a second on an idle machine (0.2-0.5 s measured); the bound leaves room for
        # a loaded one, and is far below the poll it would otherwise have waited for.
        assert time.monotonic() - t0 < min(1.5, poll / 2)
    finally:
        terminate(proc)


def test_sighup_with_hostile_files_keeps_the_running_configuration(tmp_path):
    """Each file the issue found killing the daemon on SIGHUP (NaN, infinity, a byte that is
    not UTF-8, nesting without end, an interval out of bounds) is refused: the daemon polls
    on at its interval and logs one reload_failed naming the reason."""
    config = tmp_path / "nicwatch.toml"
    config.write_text('interval = "0.2s"\n')
    port = free_port()
    log = tmp_path / "stderr"
    with open(log, "w") as stderr:
        proc = subprocess.Popen([NICWATCH, "serve", f"--config={config}",
                                 f"--web.listen-address=127.0.0.1:{port}",
                                 f"--path.sysfs={SYSFS / 'virtio-no-pcie'}",
                                 f"--state.file={tmp_path / 'state.json'}"], stderr=stderr)

    def metrics() -> dict:
        return parse_exposition(_get(port, "/metrics")[1])

    try:
        wait_until(lambda: _get(port, "/readyz")[0] == 200, 10, "/readyz 200", 0.05, proc)
        for case in ("nan", "inf", "huge_int", "below", "not_utf8", "nested", "too_large"):
            config.write_bytes(BAD_FILES[case][0])
            before = metrics()[("nicwatch_polls_total", ())]
            proc.send_signal(signal.SIGHUP)
            wait_until(lambda: metrics()[("nicwatch_polls_total", ())] >= before + 3,  # noqa: B023
                       5, f"three polls after {case}", 0.05, proc)
            assert metrics()[("nicwatch_poll_interval_seconds", ())] == 0.2, case
            assert _get(port, "/readyz")[0] == 200
    finally:
        assert terminate(proc) == 0
    events = check_lines(log.read_text().splitlines())
    failed = [e for e in events if e["event"].startswith("reload")]
    assert [e["event"] for e in failed] == ["reload_failed"] * 7
    for e, case in zip(failed, ("nan", "inf", "huge_int", "below", "not_utf8", "nested",
                                "too_large"), strict=False):
        assert BAD_FILES[case][1] in e["error"] and str(config) in e["error"], (case, e)


class FailingCollector(SlowCollector):
    """The real collector on a fixture tree; while ``fail`` is set every poll raises (out
    of file descriptors, say): the loop runs on, but no poll completes."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = False

    def poll(self):
        if self.fail:
            raise OSError(24, "Too many open files")
        return super().poll()


def test_watchdog_is_fed_only_while_the_data_is_fresh(tmp_path, monkeypatch):
    """A loop that keeps running while every poll fails is alive but stale: systemd must
    restart it, so WATCHDOG=1 stops once the data is older than 3 intervals (1 s here)."""
    d, collector, port, notified, runner = _running_daemon(tmp_path, monkeypatch,
                                                           FailingCollector())
    try:
        while d.polls < 3:
            time.sleep(0.01)
        failing_at = time.monotonic()
        collector.fail = True
        time.sleep(2.0)
        assert _get(port, "/readyz")[0] == 503
        collector.fail = False
        recovered_at = time.monotonic()
        deadline = recovered_at + 5
        while _get(port, "/readyz")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        d.stop_event.set()
        runner.join(5)
    fed = [t for t, m in notified if m == "WATCHDOG=1"]
    # Fed on while the data was younger than 1 s (the last good poll plus a second)...
    assert [t for t in fed if failing_at < t < failing_at + 0.6]
    # ...then not at all until polls completed again.
    assert not [t for t in fed if failing_at + 1.3 < t < recovered_at]
    assert [t for t in fed if t > recovered_at]
