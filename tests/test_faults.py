"""Faults real hosts have: interfaces that vanish mid-poll, move to another namespace or are
replaced under the same name (a driver reload), ioctls that fail or hang, names that are not
UTF-8. The poll carries on for every other interface, the fault shows in the self-metrics,
nothing crashes and no exported counter goes backwards without nic_stat_resets_total moving.

Kernel objects are real: veth pairs in a namespace each test creates. Scenarios that need
the poll in-process (a veth deleted between GSTRINGS and GSTATS, injected errnos and a hang)
run this file as a script inside the namespace: ``python test_faults.py SCENARIO JSON``
prints the scenario's result as JSON. Errnos and the hang are injected around the real
reader, because EPERM or a hung driver cannot be produced on demand by a veth.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
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

import pytest
from hostd import NICWATCH, free_port
from hypothesis import given, settings
from hypothesis import strategies as st
from netns import PYTHON, ns_sh, sh
from promtext import parse_exposition, promtool_check, series

from nicwatch.model import (
    CounterValue,
    NetClass,
    NicIdentity,
    Reading,
    Sample,
    SeriesKey,
)
from nicwatch.sources.ethtool_ioctl import (
    ETHTOOL_GDRVINFO,
    ETHTOOL_GSTATS,
    EthtoolError,
    EthtoolIoctl,
)
from nicwatch.tracker import COUNTER_DECREASE, INTERFACE_REPLACED, Tracker

PAIRS = 3  # nf0a/nf0b ... nf2a/nf2b, 4 queues each
NON_UTF8 = b"nf\xff"  # a name the kernel allows and no Prometheus label can carry
PORT = 9847


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


@pytest.fixture
def fault_ns():
    """A namespace with PAIRS veth pairs (both ends inside, 4 queues, up) and a pair whose
    one end has a name that is not UTF-8."""
    ns = f"nwf-{secrets.token_hex(3)}"
    sh("ip", "netns", "add", ns)
    try:
        batch = "".join(f"link add nf{i}a numtxqueues 4 numrxqueues 4 type veth peer name nf{i}b "
                        f"numtxqueues 4 numrxqueues 4\nlink set nf{i}a up\nlink set nf{i}b up\n"
                        for i in range(PAIRS))
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input=batch, text=True, check=True,
                       capture_output=True)
        subprocess.run([b"ip", b"-n", ns.encode(), b"link", b"add", NON_UTF8, b"type", b"veth",
                        b"peer", b"name", b"nf9b"], check=True, capture_output=True)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield ns
    finally:
        sh("ip", "netns", "del", ns, check=False)


def in_ns(ns: str, scenario: str, script: str = __file__, **kwargs) -> dict:
    """Run ``scenario_<scenario>(**kwargs)`` of ``script`` (a test file ending in
    ``run_scenario(globals())``) inside ``ns``; its JSON result, plus its log lines."""
    r = ns_sh(ns, PYTHON, script, scenario, json.dumps(kwargs), check=False)
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
        argv = [*prefix, NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{self.port}",
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
    collector = build_collector(config)
    collector.ioctl.close()
    collector.ioctl = ioctl
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


# --------------------------------------------------------------------------- tests: kernel

netns = pytest.mark.netns


@netns
def test_interface_deleted_between_gstrings_and_gstats(fault_ns):
    got = in_ns(fault_ns, "vanish_mid_poll")
    assert got["fired"]
    first, second = (parse_exposition(p) for p in got["polls"])
    # The poll that met the deleted interface counted it and carried on with every other.
    assert errors_of(first, "nf0a") == 1
    for dev in ("nf1a", "nf1b", "nf2a", "nf2b"):
        assert series("nic_driver_stat_value", device=dev, stat="peer_ifindex") in first, dev
        assert errors_of(first, dev) is None
    # The next poll: nothing of the pair is left, not even its error count.
    assert not devices(got["polls"][1]) & {"nf0a", "nf0b"}
    assert {"nf1a", "nf1b", "nf2a", "nf2b", "nf9b"} <= devices(got["polls"][1])
    assert second[("nicwatch_interfaces", ())] == first[("nicwatch_interfaces", ())] - 2
    failed = [e for e in got["log"] if e["event"] == "source_failed"]
    assert {(e["device"], e["error"]) for e in failed} >= {("nf0a", "ENODEV")}
    for text in got["polls"]:
        promtool_check(text)


# (interface, ioctl, errno, counted as an error): EPERM from the statistics, ENODEV from the
# first call (driver info: the rest is skipped), EOPNOTSUPP (unsupported, not an error).
FAULTS = [("nf0a", ETHTOOL_GSTATS, errno.EPERM, True), ("nf1a", ETHTOOL_GDRVINFO, errno.ENODEV, True),
          ("nf2a", ETHTOOL_GSTATS, errno.EOPNOTSUPP, False)]


@netns
def test_failing_ioctls_are_counted_and_spare_everything_else(fault_ns):
    faults = [f[:3] for f in FAULTS]
    got = in_ns(fault_ns, "faults", schedule=[[2, []], [3, faults], [2, []]])
    polls = [parse_exposition(p) for p in got["polls"]]
    for i, m in enumerate(polls):
        faulty = 2 <= i < 5
        # Kernel netdev counters of every interface, the faulty ones included, every poll.
        for n in range(PAIRS):
            for dev in (f"nf{n}a", f"nf{n}b"):
                assert series("nic_tx_packets_total", device=dev) in m, (i, dev)
            assert series("nic_driver_stat_value", device=f"nf{n}b", stat="peer_ifindex") in m
        for dev, _, _, counted in FAULTS:
            # The failed part is absent, never 0, and comes back.
            assert (series("nic_driver_stat_value", device=dev, stat="peer_ifindex") in m) is not faulty
            expected = (min(max(i - 1, 0), 3) or None) if counted else None
            assert errors_of(m, dev) == expected, (i, dev, errors_of(m, dev))
        # A failure is not a counter reset, nor a replaced interface.
        assert not any(k[0] == "nic_stat_resets_total" for k in m), i
    assert counters_never_fall_without_reset(got["polls"]) > 100
    assert polls[-1][series("nic_tx_packets_total", device="nf0a")] >= 70
    promtool_check(got["polls"][3])


@netns
def test_hung_ioctl_delays_the_poll_but_not_the_scrapes(fault_ns):
    got = in_ns(fault_ns, "hang", seconds=1.0)
    (start, end), = got["hung"]
    assert got["scraped_during_hang"]  # /metrics answered while the kernel call hung
    before, during, after = (parse_exposition(got[k]) for k in ("before", "during", "after"))
    stamp = ("nicwatch_last_poll_timestamp_seconds", ())
    polls = ("nicwatch_polls_total", ())
    # During the hang the endpoint serves the last completed poll: its timestamp predates
    # the hang, which is how staleness shows (alert on time() - that timestamp).
    assert before[stamp] <= during[stamp] <= start
    # Afterwards the slots the poll overran are counted, not made up for.
    assert after[stamp] > end and after[polls] > during[polls]
    assert after[("nicwatch_skipped_polls_total", ())] >= 5
    for dev in ("nf0a", "nf0b", "nf1a", "nf2b"):
        assert series("nic_driver_stat_value", device=dev, stat="peer_ifindex") in after
    assert counters_never_fall_without_reset([got["before"], got["during"], got["after"]]) > 0


@netns
def test_stat_set_generation_is_per_interface(fault_ns):
    got = in_ns(fault_ns, "generations")
    assert got["other_changed"] != got["other"]
    # Another interface's channel change is not a change of nf0a's set, and nf0a keeps its
    # generation when it comes back with the same names (moved away and back).
    assert got["unchanged"] == got["first"] == got["returned"]


@pytest.fixture
def served_faults(fault_ns, tmp_path):
    s = Process(f"--state.file={tmp_path / 'state.json'}", "--interfaces.include=nf.*",
                "--collector.raw", ns=fault_ns)
    try:
        s.metrics(1)
        yield s, fault_ns
    finally:
        s.stop()


def wait_until(s, predicate, what: str, scrapes: list, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        text = s.text()
        scrapes.append(text)
        m = parse_exposition(text)
        if predicate(m):
            return m
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@netns
def test_daemon_follows_moves_and_replacements_and_skips_odd_names(served_faults):
    s, ns = served_faults
    other = f"nwf-{secrets.token_hex(3)}"
    sh("ip", "netns", "add", other)
    scrapes: list[str] = []
    try:
        # The interface whose name is not UTF-8 is skipped; its peer and the rest are served.
        names = devices(s.text())
        assert names == {f"nf{n}{end}" for n in range(PAIRS) for end in "ab"} | {"nf9b"}

        in_ns(ns, "send", ifname="nf1a", count=50)
        in_ns(ns, "send", ifname="nf2a", count=50)
        m = wait_until(s, lambda m: m.get(series("nic_tx_packets_total", device="nf2a"), 0) >= 50,
                       "traffic not seen", scrapes)
        moved_tx = m[series("nic_tx_packets_total", device="nf1a")]
        old_tx = m[series("nic_tx_packets_total", device="nf2a")]

        # Moved to another namespace: its series go; moved back: they continue, no reset.
        sh("ip", "-n", ns, "link", "set", "nf1a", "netns", other)
        wait_until(s, lambda m: series("nic_tx_packets_total", device="nf1a") not in m,
                   "series of a moved interface stayed", scrapes)
        sh("ip", "-n", other, "link", "set", "nf1a", "netns", ns)
        m = wait_until(s, lambda m: series("nic_tx_packets_total", device="nf1a") in m,
                       "moved interface not picked up again", scrapes)
        assert m[series("nic_tx_packets_total", device="nf1a")] >= moved_tx
        assert not any(k[0] == "nic_stat_resets_total" and ("device", "nf1a") in k[1] for k in m)

        # A driver reload: the netdev is unregistered and a new one registered under the
        # same name, with a new ifindex and counters from zero.
        sh("ip", "-n", ns, "link", "del", "nf2a")
        wait_until(s, lambda m: series("nic_tx_packets_total", device="nf2a") not in m,
                   "series of a deleted interface stayed", scrapes)
        sh("ip", "-n", ns, "link", "add", "nf2a", "type", "veth", "peer", "name", "nf2b")
        replaced = series("nic_stat_resets_total", device="nf2a", reason=INTERFACE_REPLACED)
        m = wait_until(s, lambda m: replaced in m, "replacement not recorded", scrapes)
        assert m[replaced] == 1
        assert m[series("nic_tx_packets_total", device="nf2a")] < old_tx
        assert s.proc.poll() is None
    finally:
        sh("ip", "netns", "del", other, check=False)
    assert counters_never_fall_without_reset(scrapes) > 100
    promtool_check(scrapes[-1])


# --------------------------------------------------------------------------- tests: tracker

KEY = SeriesKey("nic_rx_bytes_total")
DRV = SeriesKey("nic_driver_stat_total", (("stat", "rx_queue_N_drops"),))


def sample(t: float, counters: dict, ifindex: int | None = 7, generation: int | None = 1,
           device: str = "eth0", driver: str | None = "veth") -> Sample:
    nc = NetClass(device, ifindex, None, "up", 1500, None, None, True, None, None, None, None,
                  None, None)
    return Sample(NicIdentity(device, ifindex, driver, None, None, None, None, None), t, t,
                  counters, {}, frozenset(), generation, Reading(device, t, t, nc))


def cv(raw: int, source: str = "sysfs") -> CounterValue:
    return CounterValue(raw, source)


def test_replacement_between_polls_with_a_poll_in_between_is_a_reset():
    tr = Tracker()
    tr.update([sample(0, {KEY: cv(1000)})])
    assert tr.update([]) == []  # a uevent-triggered poll while the netdev is gone
    (s,) = tr.update([sample(1, {KEY: cv(10)}, ifindex=8)])
    assert s.resets == {INTERFACE_REPLACED: 1} and s.counters[KEY].value == 10
    (s,) = tr.update([sample(2, {KEY: cv(20)}, ifindex=8)])
    assert s.resets == {INTERFACE_REPLACED: 1} and s.counters[KEY].rate == 10.0


def test_a_failed_identity_read_is_no_replacement():
    tr = Tracker()
    tr.update([sample(0, {KEY: cv(10)})])
    (s,) = tr.update([sample(5, {KEY: cv(20)}, driver=None)])  # GDRVINFO failed
    (s,) = tr.update([sample(10, {KEY: cv(30)}, ifindex=None)])  # ifindex unreadable
    (s,) = tr.update([sample(15, {KEY: cv(40)})])
    assert s.resets == {} and s.counters[KEY].rate == 2.0
    (s,) = tr.update([sample(20, {KEY: cv(0)}, driver="mlx5_core")])
    assert s.resets == {INTERFACE_REPLACED: 1}


def test_failed_driver_stats_are_no_stat_set_change_and_rates_span_the_gap():
    tr = Tracker()
    tr.update([sample(0, {KEY: cv(0), DRV: cv(0, "ethtool_ioctl")})])
    (s,) = tr.update([sample(5, {KEY: cv(50)}, generation=None)])  # GSTATS failed
    assert s.resets == {} and DRV not in s.counters
    (s,) = tr.update([sample(10, {KEY: cv(100), DRV: cv(30, "ethtool_ioctl")})])
    assert s.resets == {}
    assert s.counters[DRV].rate == 3.0  # 30 over the 10 s since it was last read
    (s,) = tr.update([sample(15, {KEY: cv(150), DRV: cv(5, "ethtool_ioctl")})])
    assert s.resets == {COUNTER_DECREASE: 1}


def test_departed_interfaces_are_remembered_within_bounds():
    tr = Tracker(retention=100, max_departed=2)
    for i in range(4):  # four interfaces come and go, one per poll
        tr.update([sample(i, {KEY: cv(100)}, device=f"if{i}")])
    tr.update([])
    # Only the two most recent departures are remembered: if0 comes back as new.
    for i, remembered in ((0, False), (2, True)):
        (s,) = tr.update([sample(10, {KEY: cv(5)}, device=f"if{i}")])
        assert s.resets == ({COUNTER_DECREASE: 1} if remembered else {}), i
    tr.update([])
    # Gone for longer than the retention: forgotten too.
    (s,) = tr.update([sample(200, {KEY: cv(1)}, device="if2")])
    assert s.resets == {}


POLL = st.one_of(
    st.none(),  # the interface is absent from this poll
    st.fixed_dictionaries({
        "ifindex": st.sampled_from([1, 2, None]),
        "driver": st.sampled_from(["veth", "mlx5_core", None]),
        "generation": st.sampled_from([None, 1, 2]),
        "bytes": st.integers(0, 1000),
        "drops": st.one_of(st.none(), st.integers(0, 1000)),
    }))


@settings(max_examples=300, deadline=None)
@given(st.lists(POLL, min_size=1, max_size=40))
def test_exports_only_fall_with_a_recorded_reset_across_gaps_and_replacements(polls):
    tr = Tracker()
    last: dict[SeriesKey, tuple[float, int]] = {}  # series -> (value, resets then)
    for i, p in enumerate(polls):
        if p is None:
            assert tr.update([]) == []
            continue
        counters = {KEY: cv(p["bytes"])}
        if p["drops"] is not None:
            counters[DRV] = cv(p["drops"], "ethtool_ioctl")
        (s,) = tr.update([sample(5.0 * i, counters, p["ifindex"], p["generation"],
                                 driver=p["driver"])])
        resets = sum(s.resets.values())
        for key, t in s.counters.items():
            assert t.rate is None or t.rate >= 0
            if key in last and t.value < last[key][0]:
                assert resets > last[key][1], (key, last[key], t.value)
            last[key] = (t.value, resets)


if __name__ == "__main__":
    run_scenario(globals())
