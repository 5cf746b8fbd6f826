"""The serve loop: poll on a fixed schedule, track, render once, publish to the HTTP cache.

Polls are scheduled on a monotonic grid. A poll that overruns its slot does not queue more
polls behind it: the missed slots are skipped and counted. Scrapes only read the last
rendered exposition.

No signal handler runs: SIGTERM, SIGINT and SIGHUP are blocked in every thread and one thread
takes them with sigwaitinfo, sets a flag and writes the wakeup pipe that ends the wait; the loop
acts on the flags. A handler that took a lock once deadlocked with the code it interrupted, and
handlers, even flag-setting ones, let a storm of SIGHUPs interrupt the loop so often that a
0.2 s poll completed once in 2 s and SIGTERM took 1.6 s. Blocked, a storm costs the daemon one
reload per ``RELOAD_HOLDOFF``: the kernel coalesces the rest. Staleness shows whatever its
cause: each scrape carries the age of the last completed poll, /readyz fails once that age
passes ``STALE_INTERVALS`` intervals, and the systemd watchdog is fed only while the data is
fresh.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import structlog

from nicwatch import metrics
from nicwatch.collect import (
    DCB_REFRESH,
    PCIE_REFRESH,
    RXPATH_REFRESH,
    Collector,
    PollResult,
    Selection,
)
from nicwatch.config import COLLECTORS, Config, build
from nicwatch.consumers import Consumer, History, Services
from nicwatch.consumers.history import snapshot_response
from nicwatch.consumers.registry import open_consumers
from nicwatch.exporter.http import Exposition, MetricsServer, systemd_sockets
from nicwatch.exporter.render import Renderer, SelfStats
from nicwatch.normalize import NormalizeOptions
from nicwatch.normalize.drivers import HWMON_ONE_PER_CHIP
from nicwatch.normalize.lldp import decode_frame
from nicwatch.normalize.module import pages_to_read
from nicwatch.snapshot import files as snapshot
from nicwatch.snapshot.files import Snapshot, poll_of
from nicwatch.sources import PollStopped, SourceOptions
from nicwatch.sources.ethtool_netlink import EthtoolNetlink, EthtoolNetlinkUnavailable
from nicwatch.sources.host import read_host
from nicwatch.sources.netns import namespace_interfaces
from nicwatch.sources.registry import SOURCES, open_sources
from nicwatch.sources.rtnetlink import RtNetlink
from nicwatch.sources.threads import DAEMON_SIGNALS
from nicwatch.sources.udev import OUTCOMES, EventGate, NetEvents
from nicwatch.tracker import TrackedSample, Tracker
from nicwatch.values import ConfigError

log = structlog.get_logger("nicwatch")

STALE_INTERVALS = 3  # /readyz fails when no poll completed for this many intervals...
STALE_MIN_SECONDS = 1.0  # ...or this long, whichever is longer
CLOSE_SECONDS = 0.15  # what the consumers get to finish when the daemon stops (SIGTERM: 1 s)
# After a SIGHUP, further SIGHUPs wait this long in the kernel (coalesced into one pending
# signal): a storm reloads at most 10 times a second. SIGTERM and SIGINT are taken meanwhile.
RELOAD_HOLDOFF = 0.1
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


class SignalThread:
    """The daemon's signals without a handler: blocked in every thread (the main thread blocks
    them in ``start``, later threads inherit that, earlier ones start with them blocked:
    sources.threads) and taken by one thread with sigwaitinfo, which sets ``stop`` or
    ``reload`` and makes ``fileno()`` readable. After a SIGHUP only a stop signal is taken for
    ``RELOAD_HOLDOFF``: meanwhile the SIGHUPs of a storm are one pending signal in the kernel
    and interrupt nothing."""

    def __init__(self) -> None:
        self.stop = False
        self.reload = False  # the loop clears it as it reloads
        self._read: int | None = None  # the wakeup pipe, once started
        self._write = -1

    def start(self) -> None:
        """Block the signals in the calling thread (the main one) and start taking them."""
        signal.pthread_sigmask(signal.SIG_BLOCK, DAEMON_SIGNALS)
        self._read, self._write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        threading.Thread(target=self._take, name="nicwatch-signals", daemon=True).start()

    def fileno(self) -> int | None:
        """Readable after a signal was taken; None until ``start``."""
        return self._read

    def drain(self) -> None:
        """Empty the wakeup pipe (the flags say what was taken)."""
        assert self._read is not None
        try:
            while os.read(self._read, 512):
                pass
        except BlockingIOError:
            pass

    def _take(self) -> None:
        while True:
            info: signal.struct_siginfo | None = signal.sigwaitinfo(DAEMON_SIGNALS)
            if info is not None and info.si_signo == signal.SIGHUP:
                self.reload = True
                self._wake()
                info = signal.sigtimedwait(STOP_SIGNALS, RELOAD_HOLDOFF)
                if info is None:
                    continue
            self.stop = True  # then the thread ends: a second SIGTERM stays pending, unheard
            self._wake()
            return

    def _wake(self) -> None:
        try:
            os.write(self._write, b"\0")
        except BlockingIOError:  # the pipe is full: the loop is woken already
            pass


def stale_after(interval: float) -> float:
    return max(STALE_INTERVALS * interval, STALE_MIN_SECONDS)


def live_sysfs(path: str) -> bool:
    """Whether ``path`` is this host's /sys (not a fixture tree): only then do the netlink
    sockets, which see the daemon's namespace, describe the same interfaces."""
    return os.path.realpath(path) == "/sys"


def open_link_modes() -> EthtoolNetlink | None:
    """The collector's reader of speed and duplex (one LINKMODES_GET dump per poll); None on
    a kernel without the ethtool family, which leaves them to sysfs as before (so only
    logged at debug: the ethtool_netlink source warns about the family already)."""
    try:
        return EthtoolNetlink()
    except (EthtoolNetlinkUnavailable, OSError) as e:
        log.debug("link_modes_unavailable", error=str(e))
        return None


def build_collector(config: Config) -> Collector:
    """The collector for ``config``, over every registered source (sources.registry).
    ConfigError when --path.sysfs is no sysfs: a mistyped path would otherwise serve an empty
    exposition as if the host had no interfaces."""
    if not os.path.isdir(os.path.join(config.path_sysfs, "class", "net")):
        raise ConfigError(f"--path.sysfs {config.path_sysfs}: no class/net directory there "
                          "(not a sysfs mount)")
    live = live_sysfs(config.path_sysfs)
    return Collector(
        config.path_sysfs,
        Selection(config.interfaces_include, config.interfaces_exclude),
        NormalizeOptions(raw=config.raw_options),
        sources=open_sources(SourceOptions(config.path_sysfs, config.path_procfs,
                                           config.collector_ethtool_netlink, PCIE_REFRESH,
                                           module=config.collector_module,
                                           module_interval=config.collector_module_interval,
                                           module_pages=pages_to_read,
                                           vfs=config.collector_vfs,
                                           rdma_netlink=config.collector_rdma_netlink,
                                           rdma_include=config.collector_rdma_include,
                                           rdma_exclude=config.collector_rdma_exclude,
                                           receive_path=config.collector_receive_path,
                                           rxpath_refresh=RXPATH_REFRESH,
                                           lldp=config.collector_lldp,
                                           lldp_decode=decode_frame,
                                           lldp_chassis_id=config.fabric_chassis_id or "",
                                           lldp_port_id=config.fabric_port_id,
                                           dcb_refresh=DCB_REFRESH,
                                           disabled=config.disabled_sources,
                                           hwmon_one_per_chip=HWMON_ONE_PER_CHIP)),
        rtnetlink=RtNetlink() if live else None,
        link_modes=open_link_modes() if live and config.collector_ethtool_netlink else None,
        pcie_refresh=PCIE_REFRESH,
        # another tree (a fixture, the host's /sys in a container of its own network
        # namespace): the socket sources read only what matches their namespace
        namespace=None if live else namespace_interfaces,
    )


# A registered source the collector does not read: (its switch in Config, how it is turned
# on or off) -> why. With the switch on (or none), its open found the kernel without it and
# logged the error (sources/*.py open).
_NOT_READ: dict[str, tuple[str | None, str, str]] = {
    "ethtool_netlink": ("collector_ethtool_netlink", "off (--collector.ethtool-netlink=false)",
                        "unavailable (kernel: no ethtool netlink family, Linux < 5.6)"),
    "module": ("collector_module", "off (--collector.module not given)",
               "unavailable (kernel: neither ethtool netlink nor the ethtool ioctl)"),
    "sriov": ("collector_vfs", "off (--collector.vfs not given)", "unavailable"),
    "netdev_genl": ("collector_receive_path", "off (--collector.receive-path=false)",
                    "unavailable (kernel: no netdev generic netlink family, Linux < 6.2)"),
    "devlink": (None, "", "unavailable (kernel: no devlink family)"),
}
# Why a source's read fails, by the errno it fails with (an ioctl or netlink request the
# caller may not make, the driver does not implement, the kernel does not have).
_ERRNO_WHY = {"EPERM": "capability", "EACCES": "capability", "EOPNOTSUPP": "driver",
              "ENOTSUP": "driver", "EINVAL": "driver", "ENODATA": "driver",
              "ENOSYS": "kernel", "EPROTONOSUPPORT": "kernel", "EAFNOSUPPORT": "kernel",
              "ENOENT": "kernel"}
WATCHING_NAMES = 100  # interfaces and RDMA ports named in the line at most (then a count)


def _named(names: Sequence[str]) -> list[str]:
    return [*names[:WATCHING_NAMES], *([f"... {len(names) - WATCHING_NAMES} more"]
                                       if len(names) > WATCHING_NAMES else [])]


def watching(config: Config, collector: Collector, result: PollResult) -> dict[str, Any]:
    """What the first poll watched, for the one "watching" line at start-up: the selected
    interfaces and RDMA ports, the sources read, those not read (off, or unavailable and
    why), and those whose reads failed in that poll (errno, how many devices, and why:
    capability, driver or kernel)."""
    read = [source.name for source in collector.sources]
    not_read = {}
    switches = {name: c for c in COLLECTORS for name in c.sources}
    for registered in SOURCES:
        name = registered.name
        if name in read:
            continue
        switch, off, unavailable = _NOT_READ.get(name, (None, "", "unavailable"))
        if switch and not getattr(config, switch):
            not_read[name] = off
        elif name in config.disabled_sources:
            not_read[name] = f"off (--no-collector.{switches[name].name})"
        else:
            not_read[name] = unavailable
    failing: dict[str, Counter[str]] = {}
    for _device, error in result.errors:
        failing.setdefault(error.source, Counter())[error.kind] += 1
    return {
        "interfaces": _named(sorted(s.identity.device for s in result.samples)),
        "rdma": _named(sorted(r.key for r in result.rdma)),
        "sources": read, "not_read": not_read,
        "failing": {source: "; ".join(
            f"{kind} on {n} device{'s' if n > 1 else ''}"
            + (f" ({_ERRNO_WHY[kind]})" if kind in _ERRNO_WHY else "")
            for kind, n in sorted(kinds.items())) for source, kinds in sorted(failing.items())},
    }


class ErrorStates:
    """Counts source errors and logs each (device, source) only when its state changes."""

    def __init__(self) -> None:
        self.totals: Counter[tuple[str, str]] = Counter()
        self._failing: dict[tuple[str, str], str] = {}

    def observe(self, result: PollResult) -> None:
        now: dict[tuple[str, str], str] = {}
        for device, err in result.errors:
            key = (err.source, device)
            self.totals[key] += 1
            now[key] = err.kind
            if self._failing.get(key) != err.kind:
                log.warning("source_failed", source=err.source, device=device, error=err.kind,
                            message=err.message)
        polled = {s.identity.device for s in result.samples}
        for key in self._failing.keys() - now.keys():
            # a failure of a whole source (device "") ends with a poll that read it again
            if not key[1] or key[1] in polled:
                log.info("source_recovered", source=key[0], device=key[1])
        self._failing = now
        # An interface that is gone takes its error counts with it, like its nic_* series,
        # so interfaces that come and go leave no series behind.
        for key in [k for k in self.totals if k[1] and k[1] not in polled and k not in now]:
            del self.totals[key]


class WrapStates:
    """Logs, once per change, interfaces polled less often than their 32-bit hardware
    counters can wrap at line rate (nic_stat_wrap_ambiguous), with the interval to use."""

    def __init__(self) -> None:
        self._ambiguous: set[str] = set()

    def observe(self, tracked: Sequence[TrackedSample], interval: float) -> None:
        now = {t.sample.identity.device: t.wrap_safe_interval for t in tracked
               if t.wrap_ambiguous and t.wrap_safe_interval is not None}
        for device in sorted(now.keys() - self._ambiguous):
            safe = now[device]
            log.warning("counter_wraps_uncountable", device=device, interval=interval,
                        safe_interval=round(safe, 3),
                        hint=f"set --interval below {safe:.1f}s: a 32-bit counter can wrap "
                             "more than once between polls at line rate")
        polled = {t.sample.identity.device for t in tracked}
        for device in sorted((self._ambiguous - now.keys()) & polled):
            log.info("counter_wraps_countable", device=device)
        self._ambiguous = set(now)


def _sd_notify(message: str) -> None:
    """Tell systemd (Type=notify) about readiness and liveness; no-op outside systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        try:
            s.sendto(message.encode(), address)
        except OSError:
            pass


# What exists once serving starts (modules, configuration, sockets, compiled plans) is
# frozen out of the cyclic garbage collector, so its collections walk only what polls make.
# Raising the young threshold as well (700 -> 20,000 allocations) saved another ~0.3 ms per
# poll on 32 veths x 64 queues but kept 6 MB more resident after an hour of polls
# (45.5 -> 51.9 MB): the RSS target wins.


def tune_gc() -> None:
    gc.collect()
    gc.freeze()


# glibc serves an allocation above its mmap threshold (128 KiB) with mmap and gives it back
# when freed, but raises the threshold to the size of each such block freed (up to 32 MiB):
# after the first poll the exposition bodies (7.8 MB of text at 2,000 interfaces) and the
# dump buffers come from the heap, whose freed middle is never returned. Fixing the threshold
# keeps them mmapped: on 2,000 veth interfaces `nicwatch serve` held 181-183 MB instead of
# 266-267 MB (alternating runs, benchmarks/run.py's 2,000-interface setup), CPU within the
# runs' spread. Below 128 KiB (32 veths: a 127 KB body) nothing changes. No-op without glibc.
MMAP_THRESHOLD = 128 << 10
_M_MMAP_THRESHOLD = -3  # malloc.h


def tune_malloc() -> None:
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


# A poll allocates tens of thousands of objects that live until it ends (readings, samples,
# lines): collections triggered by allocation counts during the poll walk them again and
# again while none is garbage yet. The serving loop therefore turns the automatic collector
# off for the poll and collects the young generations once after it; between polls it runs
# as usual (full collections keep their schedule: each young collection counts toward
# them). On 2,000 veth interfaces a poll took 401 ms of CPU this way against 586-596 ms
# (alternating, load 7.8-8.1), RSS +1 MB.
@contextmanager
def young_collection_after() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect(1)


class Daemon:
    def __init__(self, config: Config, config_file: str | None = None,
                 flags: Mapping[str, Any] | None = None,
                 collector: Collector | None = None) -> None:
        self.config = config
        self._config_file = config_file
        self._flags = flags or {}
        self.host = read_host(config.path_procfs)
        # Consumers first: the identity state file is checked before any kernel handle opens.
        self.services = Services()
        self.consumers: list[Consumer] = open_consumers(config, self.host, self.services)
        self.collector = collector or build_collector(config)
        # A collector built elsewhere (the demo's, a benchmark's) reads no source the
        # configuration turned off either (build_collector never opens them).
        off = config.disabled_sources
        for source in [s for s in self.collector.sources if s.name in off]:
            source.close()  # its handle (a module source: its thread) is not needed
        self.collector.sources = [s for s in self.collector.sources if s.name not in off]
        self.collectors = tuple((c.name, config.collector_enabled(c)) for c in COLLECTORS)
        self.tracker = Tracker(config.rates_peak_window)
        self._poll_lock = threading.Lock()  # the collector is polled by one thread at a time
        self._poll_failure: tuple[str, int | None] | None = None
        self.errors = ErrorStates()
        self.wraps = WrapStates()
        self.stop_event = threading.Event()  # set by other threads (tests, embedding code)
        self._signals = SignalThread()  # started by install_signals
        self._unchanged_logged = -10.0
        self.polls = 0
        self.skipped = 0
        self._render_seconds = 0.0
        self.uevents = EventGate()  # which interface events poll early (nicwatch_uevents_total)
        self.renderer = Renderer(self.config.collector_detail)  # kept between polls
        self.server: MetricsServer | None = None

    @property
    def recorder(self) -> History | None:
        """The flight recorder (the history service the consumers share)."""
        return self.services.history

    def stopping(self) -> bool:
        return self._signals.stop or self.stop_event.is_set()

    def poll_once(self) -> Exposition:
        with self._poll_lock:
            result = self.collector.poll()
        finished = time.monotonic()
        if self.collector.should_stop():  # stopping: nobody will see this poll
            raise PollStopped()
        t0 = time.perf_counter()
        tracked = self.tracker.update(result.samples)
        tracked_rdma = self.tracker.update_rdma(result.rdma)
        t1 = time.perf_counter()
        self.errors.observe(result)
        self.wraps.observe(tracked, self.config.interval)
        for consumer in self.consumers:
            consumer.observe(result, tracked)
        self.polls += 1
        if self.polls == 1:  # start-up says what is watched, once the first poll has seen it
            log.info("watching", **watching(self.config, self.collector, result))
        stats = SelfStats(
            polls=self.polls, skipped_polls=self.skipped, last_poll_time=time.time(),
            durations={**result.durations, "track": t1 - t0, "render": self._render_seconds},
            source_errors=dict(self.errors.totals), sources=result.sources,
            collectors=self.collectors,
            interval=self.config.interval,
            peak_window=self.config.rates_peak_window)

        extra = [family for consumer in self.consumers for family in consumer.families()]
        extra.append(metrics.extra(metrics.UEVENTS, tuple(
            ((("outcome", outcome),), float(self.uevents.counts[outcome]))
            for outcome in OUTCOMES)))

        def render_timed(openmetrics: bool) -> bytes:
            start = time.perf_counter()
            body = self.renderer.render(tracked, stats, openmetrics, extra,
                                        rates=self.config.collector_rates, rdma=tracked_rdma)
            self._render_seconds = time.perf_counter() - start
            return body

        exposition = Exposition(render_timed, finished=finished)
        if self.collector.should_stop():
            raise PollStopped()
        # Build, on the poll thread, the variant scrapers last asked for (Prometheus:
        # OpenMetrics + gzip), so no scrape waits for a render and no format is rendered twice.
        exposition.get(*(self.server.last_variant if self.server else (False, False)))
        return exposition

    def take_snapshot(self, label: str | None) -> Snapshot:
        """A fresh poll as a snapshot (POST /api/v1/snapshots); the tracker and the history
        do not see it, so rates stay per interval."""
        with self._poll_lock:
            result = self.collector.poll()
        return snapshot.build(self.host, [poll_of(result.samples, time.time(), time.monotonic(),
                                                  rdma=result.rdma)], label)

    def _publish_poll(self) -> None:
        """One poll, published. A poll that raises (out of file descriptors, a consumer's
        bug) does not end the daemon: the last exposition stays served, its timestamp ages,
        and the failure is logged when it starts, changes and ends, not every poll."""
        server = self.server
        if server is None:  # only _serve() polls to publish, with its server started
            raise RuntimeError("no server to publish to")
        try:
            server.publish(self.poll_once())
        except PollStopped:
            return
        except Exception as e:
            failure = (type(e).__name__, getattr(e, "errno", None))
            if failure != self._poll_failure:
                log.exception("poll_failed", error=str(e))
            self._poll_failure = failure
        else:
            if self._poll_failure is not None:
                log.info("poll_recovered")
            self._poll_failure = None

    def reload(self) -> None:
        """Apply the configuration file again; whatever is wrong with the new one (a bad
        value, a value out of bounds, a file that is not TOML or not UTF-8), the daemon keeps
        running with the configuration it has and logs why. The web config file is re-read
        too: SIGHUP is the explicit act that may apply one that turns TLS or auth off."""
        if self.server is not None:
            self.server.reload_web_config()
        try:
            config = build(self._config_file, self._flags)
        except ConfigError as e:
            log.error("reload_failed", error=str(e), detail="keeping the previous configuration")
            return
        except Exception as e:  # a bug in a parser must not end the daemon either
            log.error("reload_failed", error=f"{type(e).__name__}: {e}",
                      detail="keeping the previous configuration", exc_info=True)
            return
        if config == self.config:
            # Confirmed at info, but at most every 10 s: a SIGHUP storm must not flood the log.
            now = time.monotonic()
            quiet = now - self._unchanged_logged < 10
            (log.debug if quiet else log.info)("reload_unchanged", config=self._config_file)
            if not quiet:
                self._unchanged_logged = now
            return
        try:
            self.collector.selection = Selection(config.interfaces_include,
                                                 config.interfaces_exclude)
            self.collector.options = NormalizeOptions(raw=config.raw_options)
            self.tracker.peak_window = config.rates_peak_window
            if config.collector_detail != self.config.collector_detail:
                self.renderer = Renderer(config.collector_detail)
            for consumer in self.consumers:
                consumer.reconfigure(config)
        except Exception as e:  # validated whole when read; a bug here must not end it either
            log.error("reload_failed", error=f"{type(e).__name__}: {e}",
                      detail="applied in part; the next good reload applies it whole",
                      exc_info=True)
            return
        self.config = config
        if self.server is not None:
            self.server.stale_after = stale_after(config.interval)
        log.info("reloaded", config=self._config_file)

    def install_signals(self) -> None:
        """Take SIGTERM, SIGINT and SIGHUP from now on (on the main thread, before run)."""
        self._signals = SignalThread()
        self._signals.start()

    def _open_events(self) -> NetEvents | None:
        try:
            return NetEvents()
        # no uevent socket (e.g. a restricted sandbox): polling still finds changes
        except Exception as e:
            log.warning("udev_unavailable", error=str(e))
            return None

    def _wait(self, timeout: float, events: NetEvents | None) -> None:
        """Sleep until ``timeout``, a signal, or an interface event; the events go through
        the gate (``self.uevents``), which says whether and when they poll early."""
        wake = self._signals.fileno()
        fds = [fd for fd in (wake, events.fileno() if events else None) if fd is not None]
        if not fds:
            self.stop_event.wait(timeout)
            return
        ready, _, _ = select.select(fds, [], [], timeout)
        if wake is not None and wake in ready:
            self._signals.drain()
        if events and events.fileno() in ready:
            for ev in self.uevents.offer(events.drain(), self.collector.selection.selects):
                log.info("interface_event", action=ev.action, device=ev.name, old_name=ev.old_name)

    def run(self) -> None:
        """Serve until SIGTERM/SIGINT; the kernel handles are closed however it ends."""
        self.collector.should_stop = self.stopping  # a poll ends early when serving ends
        tune_malloc()
        try:
            self._serve()
        finally:
            self.collector.should_stop = lambda: False
            self.collector.close()

    def _serve(self) -> None:
        host, port = self.config.listen
        self.server = MetricsServer(
            host, port, web_config_file=self.config.web_config_file,
            allow_writes=self.config.web_enable_writes,
            sockets=systemd_sockets() if self.config.web_systemd_socket else None,
            telemetry_path=self.config.web_telemetry_path)
        for consumer in self.consumers:
            for route in consumer.routes():
                self.server.add_route(route.method, route.path, route.handler,
                                      max_concurrent=route.max_concurrent)
        self.server.add_route("POST", "/api/v1/snapshots",
                              partial(snapshot_response, self.take_snapshot), write=True)
        self.server.stale_after = stale_after(self.config.interval)
        self.server.start()
        address = (f"systemd socket, port {self.server.port}" if self.config.web_systemd_socket
                   else self.config.web_listen_address)
        log.info("serving", address=address, interval=self.config.interval,
                 sysfs=self.config.path_sysfs,
                 sources=[source.name for source in self.collector.sources])
        watchdog = "WATCHDOG_USEC" in os.environ
        events = self._open_events()
        next_slot = last_poll = time.monotonic()
        due, ready = True, False
        try:
            while not self.stopping():
                if self._signals.reload:
                    self._signals.reload = False
                    self.reload()
                if due:
                    # A SIGTERM meanwhile stops a long poll between interfaces (should_stop).
                    self.uevents.polled()  # this poll serves every event taken before it
                    with young_collection_after():
                        self._publish_poll()
                    if self.stopping():
                        break
                    if self.polls and not ready:
                        _sd_notify("READY=1")
                        ready = True
                        tune_gc()
                    if watchdog and self.server.fresh():  # a stale daemon gets restarted
                        _sd_notify("WATCHDOG=1")
                    now = time.monotonic()
                    if now >= next_slot:  # a scheduled poll (not one woken early by an event)
                        missed = int((now - next_slot) // self.config.interval)
                        self.skipped += missed
                        next_slot += (missed + 1) * self.config.interval
                    last_poll = now
                # A signal only wakes the loop (to reload or stop); the next poll is due at
                # its slot or when an early poll an interface event asked for may run
                # (EventGate: coalesced, at most one a second), so neither a SIGHUP storm
                # nor a uevent storm is a poll storm.
                early = self.uevents.due(last_poll, self.config.interval)
                wake_at = next_slot if early is None else min(next_slot, early)
                self._wait(max(0.0, wake_at - time.monotonic()), events)
                early = self.uevents.due(last_poll, self.config.interval)
                now = time.monotonic()
                due = now >= next_slot or (early is not None and now >= early)
        finally:
            _sd_notify("STOPPING=1")
            if events:
                events.close()
            self.server.stop()
            # SIGTERM stops the daemon within a second: the consumers get 0.15 s of it
            # (an incident whose close is not written by then is closed at the next start)
            deadline = time.monotonic() + CLOSE_SECONDS
            for consumer in self.consumers:
                consumer.close(max(0.0, deadline - time.monotonic()))
            log.info("stopped", polls=self.polls)
