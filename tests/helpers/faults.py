"""Fault injection shared by the fault, logging, lifecycle and soak tests: the namespace
scenarios (run as a script inside a namespace: ``python faults.py SCENARIO JSON`` prints the
scenario's result as JSON), injected ioctl errors and hangs, daemon process handling, and the
check that no exported counter falls without a recorded reset.

Errnos and the hang are injected around the real reader, because EPERM or a hung driver
cannot be produced on demand by a veth.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from nicwatch.sources.ethtool_ioctl import (
    ETHTOOL_GSTATS,
    EthtoolError,
    EthtoolIoctl,
)

import hostd
from hostd import free_port
from netns import PYTHON, ns_sh
from promtext import parse_exposition, series

HELPERS = str(Path(__file__).resolve().parent)  # importable from a script run anywhere
PAIRS = 3  # nf0a/nf0b ... nf2a/nf2b, 4 queues each
NON_UTF8 = b"nf\xff"  # a name the kernel allows and no Prometheus label can carry
PORT = 10847


# --------------------------------------------------------------------------- helpers


def counters_never_fall_without_reset(scrapes: list[str | dict]) -> int:
    """Assert that across consecutive scrapes (exposition text, or parse_exposition of it)
    every ``nic_*_total`` series only falls when its device's nic_stat_resets_total rose in
    between (also across scrapes where the series was absent), that nic_stat_resets_total
    itself never falls, and that the daemon's own poll counters never fall. Returns the
    number of comparisons made."""
    last: dict[tuple, tuple[float, float]] = {}  # series -> (value, device resets then)
    checked = 0
    for scrape in scrapes:
        m = parse_exposition(scrape) if isinstance(scrape, str) else scrape
        resets: dict[str, float] = {}
        for (name, labels), value in m.items():
            if name == "nic_stat_resets_total":
                dev = dict(labels)["device"]
                resets[dev] = resets.get(dev, 0) + value
        for key, value in m.items():
            name, labels = key
            if name in ("nicwatch_polls_total", "nicwatch_skipped_polls_total"):
                assert value >= last.get(key, (0, 0))[0], key
                last[key] = (value, 0)
                continue
            if not (name.startswith("nic_") and name.endswith("_total")):
                continue
            dev = dict(labels)["device"]
            if key in last:
                checked += 1
                before, resets_before = last[key]
                if name == "nic_stat_resets_total":
                    assert value >= before, f"{key} fell from {before} to {value}"
                elif value < before:
                    assert resets.get(dev, 0) > resets_before, (
                        f"{key} fell from {before} to {value} with no reset recorded")
            last[key] = (value, resets.get(dev, 0))
    return checked


def devices(text: str) -> set[str]:
    return {dict(labels)["device"] for (_, labels) in parse_exposition(text)
            if "device" in dict(labels)}


def errors_of(m: dict, device: str, source: str = "ethtool_ioctl") -> float | None:
    return m.get(series("nicwatch_source_errors_total", device=device, source=source))


def send_frames(ifname: str, count: int) -> None:
    """``count`` raw Ethernet frames out of ``ifname``: they reach only its veth peer."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((ifname, 0))
        frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + b"nicwatch" * 8
        for _ in range(count):
            s.send(frame)


def in_ns(ns: str, scenario: str, script: str = __file__, **kwargs) -> dict:
    """Run ``scenario_<scenario>(**kwargs)`` of ``script`` (a test file ending in
    ``run_scenario(globals())``) inside ``ns``; its JSON result, plus its log lines."""
    r = ns_sh(ns, "env", f"PYTHONPATH={HELPERS}", PYTHON, script, scenario, json.dumps(kwargs),
              check=False)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    out["log"] = [json.loads(line) for line in r.stderr.splitlines()]
    return out


def run_scenario(scope: dict) -> None:
    """Entry point of a test file run as a script: ``SCENARIO JSON-KWARGS`` -> JSON."""
    scenario, kwargs = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(scope[f"scenario_{scenario}"](**kwargs)))


class Process:
    """`nicwatch serve` on 127.0.0.1:``port``, optionally inside ``ns`` or behind a prefix
    (setpriv, strace), stderr kept."""

    def __init__(self, *flags: str, prefix: tuple = (), ns: str | None = None,
                 env: dict | None = None) -> None:
        self.ns = ns
        self.port = PORT if ns else free_port()
        self.stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by stop())
        argv = [*prefix, hostd.NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{self.port}",
                "--interval=0.2s", *flags]
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv] if ns else argv,
                                     stderr=self.stderr, env=env)

    def get(self, path: str = "/metrics", *curl: str) -> subprocess.CompletedProcess:
        argv = ["curl", "-s", "-o", "/dev/stdout", "-w", "\n%{http_code}", *curl,
                f"http://127.0.0.1:{self.port}{path}"]
        return ns_sh(self.ns, *argv, check=False) if self.ns else subprocess.run(
            argv, capture_output=True, text=True, check=False)

    def text(self) -> str | None:
        """The exposition, or None while there is none to serve."""
        body, _, status = self.get().stdout.rpartition("\n")
        return body if status == "200" else None

    def metrics(self, polls: int = 2) -> dict:
        """The parsed exposition once at least ``polls`` polls are done."""
        deadline = time.monotonic() + 10
        while True:
            body = self.text()
            if body and parse_exposition(body)[("nicwatch_polls_total", ())] >= polls:
                return parse_exposition(body)
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log()
            time.sleep(0.05)

    def wait_polls(self, n: int) -> dict:
        """The parsed exposition after ``n`` more polls."""
        return self.metrics(self.metrics(1)[("nicwatch_polls_total", ())] + n)

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()

    @property
    def daemon_pid(self) -> int:
        """The daemon's PID: setpriv and `ip netns exec` exec it, strace forks it."""
        if self.proc.args[0] != "strace":
            return self.proc.pid
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        return int(children.split()[0])

    def stop(self) -> str:
        """SIGTERM to the daemon; its exit status must be 0."""
        code = terminate(self.proc, self.daemon_pid if self.proc.poll() is None else None)
        log = self.log()
        self.stderr.close()
        assert code == 0, log
        return log


def terminate(proc: subprocess.Popen, pid: int | None = None) -> int:
    """SIGTERM to ``pid`` (default: the process itself) and its exit status; killed if it
    is still running 5 s later, so a failing test leaves no daemon behind."""
    try:
        if proc.poll() is None:
            os.kill(pid or proc.pid, signal.SIGTERM)
        return proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()



# --------------------------------------------------------------------------- in-namespace


class FaultyIoctl(EthtoolIoctl):
    """The real SIOCETHTOOL reader; ``faults[(ifname, command)]`` makes that call fail with
    an errno, ``hangs[(ifname, command)]`` makes it take that many seconds first."""

    def __init__(self) -> None:
        super().__init__()
        self.faults: dict[tuple[str, int], int] = {}
        self.hangs: dict[tuple[str, int], float] = {}
        self.hang_started = threading.Event()
        self.hung: list[tuple[float, float]] = []  # (start, end) wall clock of each hang

    def _call(self, ifname, buf) -> None:
        key = (ifname, struct.unpack_from("=I", buf, 0)[0])
        if key in self.hangs:
            start = time.time()
            self.hang_started.set()
            time.sleep(self.hangs[key])
            self.hung.append((start, time.time()))
        if key in self.faults:
            raise EthtoolError(self.faults[key], f"{ifname}: {os.strerror(self.faults[key])}")
        super()._call(ifname, buf)


class VanishingIoctl(EthtoolIoctl):
    """Deletes ``victim`` right after the kernel answered its GSTRINGS, so the GSTATS that
    follows meets a deleted interface."""

    def __init__(self, victim: str) -> None:
        super().__init__()
        self.victim = victim
        self.fired = False

    def stat_names(self, ifname: str, count: int) -> tuple[str, ...]:
        names = super().stat_names(ifname, count)
        if ifname == self.victim and not self.fired:
            self.fired = True
            subprocess.run(["ip", "link", "del", ifname], check=True)
        return names


def _daemon(ioctl: EthtoolIoctl, **flags: str):
    """The daemon's own wiring (build_collector, Daemon) with ``ioctl`` swapped in."""
    import tempfile

    from nicwatch import log
    from nicwatch.config import build
    from nicwatch.daemon import Daemon, build_collector
    log.configure("info", "json")
    config = build(None, {"interfaces.include": "nf.*", "collector.raw": "true",
                          "state.file": f"{tempfile.mkdtemp()}/state.json", **flags})
    from nicwatch.sources.ethtool_ioctl import EthtoolIoctlSource
    collector = build_collector(config)
    for i, source in enumerate(collector.sources):
        if isinstance(source, EthtoolIoctlSource):
            source.close()
            collector.sources[i] = EthtoolIoctlSource(ioctl)
    return Daemon(config, collector=collector)


def _poll(daemon) -> str:
    return daemon.poll_once().get(False, False).decode()


def scenario_vanish_mid_poll() -> dict:
    ioctl = VanishingIoctl("nf0a")
    daemon = _daemon(ioctl)
    polls = [_poll(daemon), _poll(daemon)]
    return {"fired": ioctl.fired, "polls": polls}


def scenario_faults(schedule: list) -> dict:
    """Polls under a schedule of [polls, faults] steps, faults being [ifname, command,
    errno] triples; frames are sent on every interface before each poll, so counters move."""
    ioctl = FaultyIoctl()
    daemon = _daemon(ioctl)
    polls = []
    for count, faults in schedule:
        ioctl.faults = {(dev, cmd): err for dev, cmd, err in faults}
        for _ in range(count):
            for n in range(PAIRS):
                send_frames(f"nf{n}a", 10)
            polls.append(_poll(daemon))
    return {"polls": polls}


def scenario_hang(seconds: float) -> dict:
    """The daemon's loop at a 0.1 s interval; one GSTATS of nf0a takes ``seconds``."""
    ioctl = FaultyIoctl()
    daemon = _daemon(ioctl, **{"interval": "0.1s", "web.listen_address": f"127.0.0.1:{PORT}"})
    runner = threading.Thread(target=daemon.run)
    runner.start()

    def scrape() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=5) as r:
            return r.read().decode()

    try:
        while daemon.polls < 3:
            time.sleep(0.02)
        before = scrape()
        ioctl.hangs[("nf0a", ETHTOOL_GSTATS)] = seconds
        ioctl.hang_started.wait()
        time.sleep(seconds / 2)
        during = scrape()
        scraped_during_hang = not ioctl.hung  # the hung call had not returned yet
        while not ioctl.hung:
            time.sleep(0.02)
        del ioctl.hangs[("nf0a", ETHTOOL_GSTATS)]
        target = daemon.polls + 3
        while daemon.polls < target:
            time.sleep(0.02)
        after = scrape()
    finally:
        daemon.stop_event.set()
        runner.join()
    return {"before": before, "during": during, "after": after,
            "scraped_during_hang": scraped_during_hang, "hung": ioctl.hung}


def scenario_generations() -> dict:
    """Generations of nf0a while nf1a's stat set changes, and after nf0a is forgotten."""
    e = EthtoolIoctl()
    first = e.statistics("nf0a").generation
    other = e.statistics("nf1a").generation
    subprocess.run(["ethtool", "-L", "nf1a", "rx", "2", "tx", "2"], check=True)
    other_changed = e.statistics("nf1a").generation
    unchanged = e.statistics("nf0a").generation
    e.forget("nf0a")
    returned = e.statistics("nf0a").generation
    return {"first": first, "other": other, "other_changed": other_changed,
            "unchanged": unchanged, "returned": returned}


def scenario_send(ifname: str, count: int) -> dict:
    send_frames(ifname, count)
    return {}


# (interface, ioctl, errno, counted as an error): EPERM from the statistics, ENODEV from the
# statistics (the call every poll makes, so where a vanished device shows first: the rest is
# skipped), EOPNOTSUPP (unsupported, not an error).
FAULTS = [("nf0a", ETHTOOL_GSTATS, errno.EPERM, True), ("nf1a", ETHTOOL_GSTATS, errno.ENODEV, True),
          ("nf2a", ETHTOOL_GSTATS, errno.EOPNOTSUPP, False)]


if __name__ == "__main__":
    run_scenario(globals())
