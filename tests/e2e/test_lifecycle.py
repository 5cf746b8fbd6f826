"""Signals and lifecycle of `nicwatch serve`: SIGHUP reloads (a bad file keeps the running
configuration), systemd readiness and watchdog notifications, polls that overrun the
interval (skipped and counted, never piled up) and a state directory that cannot be
written (refused at start). SIGTERM within a second is in test_daemon_netns.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time

import pytest
from faults import Process, devices, terminate
from hostd import AS_NOBODY, NICWATCH, check_lines, free_port
from paths import SYSFS
from promtext import parse_exposition

from nicwatch import daemon as daemon_module
from nicwatch.collect import Collector, Selection
from nicwatch.config import build
from nicwatch.daemon import Daemon



@pytest.mark.netns
def test_sighup_reloads_and_a_bad_file_keeps_the_running_configuration(fault_ns, tmp_path):  # noqa: F811
    config = tmp_path / "nicwatch.toml"
    config.write_text('[interfaces]\ninclude = "nf0."\n')
    s = Process(f"--state.file={tmp_path / 'state.json'}", f"--config={config}", ns=fault_ns)
    try:
        s.metrics(1)
        assert devices(s.text()) == {"nf0a", "nf0b"}
        config.write_text('[interfaces]\ninclude = "nf[01]a"\n')
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while devices(s.text()) != {"nf0a", "nf1a"}:
            assert time.monotonic() < deadline, "SIGHUP did not apply the new file"
            time.sleep(0.05)
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
    gaps = [b[0] - a[0] for a, b in zip(collector.starts, collector.starts[1:])]
    assert min(gaps) >= 0.05, gaps
    body = d.poll_once().get(False, False).decode()
    assert parse_exposition(body)[("nicwatch_skipped_polls_total", ())] == d.skipped


@pytest.mark.parametrize("case", ["not_writable", "cannot_create", "not_a_directory"])
def test_unwritable_state_directory_is_refused_at_start(reachable_dir, case):  # noqa: F811
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
