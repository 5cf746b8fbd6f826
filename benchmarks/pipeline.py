"""Poll cost in process, stage by stage, and the floor it is compared with; prints one JSON
document. Run by run.py:

  ip netns exec NS python benchmarks/pipeline.py veth POLLS IFACE...   (the benchmark's veths)
  ip netns exec NS python benchmarks/pipeline.py paced POLLS GAP IFACE...  (at the cadence)
  python benchmarks/pipeline.py sim POLLS PORTS [raw] [files]         (nicwatch/demo/simulate.py)
  python benchmarks/pipeline.py connectx POLLS PORTS     (the same, ~4,900 mlx5 names a port:
                                                          benchmarks/connectx.py)
  python benchmarks/pipeline.py collectors POLLS PORTS   (the realistic host with every source:
                                                          what each collector costs a poll)
  ip netns exec NS python benchmarks/pipeline.py growth POLLS IFACE...  (every source against
                                                          the ethtool statistics alone)

The whole poll is the daemon's own: ``Daemon.poll_once()`` with the collector the daemon builds
(``build_collector``: ethtool ioctls, ethtool netlink, the rtnetlink link dump, DCB, sysfs,
PCIe paths, RDMA ports; speed and duplex re-read every poll, as at the default 5 s interval;
driver info and permanent address once a minute, as in the daemon), then track, flight
recorder, identity, softirq load, expectations, and the render of the variant Prometheus
scrapes (OpenMetrics + gzip), with the garbage collector as the serving loop runs it (off
during the poll, one young collection after). Its CPU time (``time.process_time``: this
process, one thread) is the median over measured polls after two warm-up polls; the spread
is the min and max. The stages are timed one by one on the same objects (CPU, median).

The floor is the bare GSTATS ioctls for the same interfaces with preallocated buffers and
cached names; "ioctl + decode" adds unpacking the values (``EthtoolIoctl.statistics()``
with its name cache warm): what reading these counters costs at minimum from Python.

``paced`` measures what the daemon pays at its cadence: the same ``poll_once()`` and the
same floor, each run after ``GAP`` seconds of sleep (the daemon's interval), alternating,
so both meet memory and caches as an idle daemon does. Its CPU is this thread's
(``time.thread_time``). Pages a poll touches are counted apart, on polls of their own: the
kernel's accessed bits cleared (``/proc/self/clear_refs``) before one poll and the
``Referenced`` total of ``/proc/self/smaps_rollup`` read after it. The host's own cost of
memory left idle is measured beside them: writing one byte per 4 KiB page of a 12 MiB
buffer back to back, and after ``GAP`` seconds of sleep.

The simulated host is nicwatch/demo/simulate.py (ConnectX ports with PCIe paths, RDMA ports and
DCB written as a sysfs tree, mlx5 statistics and ethtool netlink answers from the
simulation), polled through the same ``Daemon.poll_once()``; its "read" includes the
simulation's own Python, so it is an upper bound of what the real sources would cost.
"""

from __future__ import annotations

import ctypes
import fcntl
import gzip
import json
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import types

from nicwatch.collect import (
    DCB_REFRESH,
    PCIE_LINK_SAFETY,
    PCIE_REFRESH,
    RXPATH_REFRESH,
    Collector,
    Selection,
)
from nicwatch.config import build
from nicwatch.daemon import Daemon, tune_gc, young_collection_after
from nicwatch.exporter.render import SelfStats
from nicwatch.log import configure
from nicwatch.normalize import NormalizeOptions, RawOptions
from nicwatch.sources import Poll, ethtool_ioctl
from nicwatch.sources.dcbnl import DcbSource
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl, EthtoolIoctlSource
from nicwatch.sources.ethtool_netlink import EthtoolNetlinkSource
from nicwatch.sources.interrupts import InterruptSource
from nicwatch.sources.rdma import RdmaSource
from nicwatch.sources.sysfs_pci import SysfsPciSource

P = time.process_time


def med(xs):
    return statistics.median(xs) if xs else None


def timed(f, n: int) -> dict:
    xs = []
    for _ in range(n):
        t0 = P()
        f()
        xs.append(P() - t0)
    return {"median": med(xs), "min": min(xs), "max": max(xs)}


class Counting:
    """Counts calls of one method of an object (instrumentation, not behaviour)."""

    def __init__(self, obj, name: str) -> None:
        self.calls = 0
        original = getattr(obj, name)

        def wrapped(*a, **kw):
            self.calls += 1
            return original(*a, **kw)

        setattr(obj, name, wrapped)


def reader_of(collector: Collector, kind: type):
    """The reader behind the collector's source of ``kind`` (None when it has none)."""
    return next((s.reader for s in collector.sources if isinstance(s, kind)), None)


def daemon_for(flags: dict, collector: Collector | None = None) -> Daemon:
    state = tempfile.mkdtemp(prefix="nwbench-state-")
    d = Daemon(build(None, {"state.file": f"{state}/identity.json", **flags}),
               collector=collector)
    # Polls here follow each other at once; at the default 5 s interval the daemon re-reads
    # speed and duplex every poll, and so does the poll measured here.
    d.collector.link_refresh = 0.0
    # Likewise the PCIe AER counts and power states (PCIE_REFRESH); the rest of each PCIe
    # path keeps its own period (PCIE_LINK_SAFETY), which polls back to back never reach:
    # its cost is the stage "PCIe paths, read whole".
    for source in d.collector.sources:
        if isinstance(source, SysfsPciSource) and source.refresh:
            source.refresh = 1e-9
    d.server = types.SimpleNamespace(last_variant=(True, True))  # what Prometheus asks for
    return d


# Consumers by class, as the stage tables name them.
CONSUMER_STAGES = {
    "IdentityConsumer": "identity", "SoftirqLoad": "per-CPU softirq load",
    "ReceivePath": "receive path (consumer)", "LinkPhysicsConsumer": "link physics (consumer)",
    "ExpectationChecks": "expectations", "Incidents": "incidents", "Diagnosis": "diagnosis",
}


def stages(d: Daemon, reps: int) -> dict:
    """CPU per stage of one poll, each timed on its own (median, ms)."""
    c = d.collector
    sel = c._select([])
    label = ("select (sysfs)" if not c.rtnetlink else
             "select (rtnetlink dump + LINKMODES_GET dump)" if c.link_modes else
             "select (rtnetlink dump + sysfs speed/duplex)")
    out = {label: timed(lambda: c._select([]), reps)["median"]}
    if c.rtnetlink:  # speed and duplex kept while the link is unchanged (polls within 5 s)
        refresh, c.link_refresh = c.link_refresh, PCIE_REFRESH
        c._select([])
        out["select, speed/duplex cached (polls within 5 s)"] = timed(
            lambda: c._select([]), reps)["median"]
        c.link_refresh = refresh
    labels = {"ethtool_netlink": "ethtool netlink dumps", "ethtool_ioctl": "ethtool ioctls",
              "dcbnl": "DCB (RTM_GETDCB per interface)", "rdma": "RDMA ports",
              "host": "per-CPU softirq", "rxpath": "receive path (source)"}
    # Each source on its own, over one Poll that the sources before it filled, as in the
    # daemon (the ioctl source asks for rings and channels only when the netlink dumps did
    # not report them).
    shared = Poll(sel)
    for source in c.sources:
        if isinstance(source, SysfsPciSource):
            fresh = SysfsPciSource(c.sysfs)  # refresh 0: reads every path whole every time
            out[f"PCIe paths, read whole (link change, every {PCIE_LINK_SAFETY:g} s)"] = timed(
                lambda s=fresh: s.read(Poll(sel)), reps)["median"]
            counts = SysfsPciSource(c.sysfs, refresh=1e-9, safety=1e9,
                                    keep_open=source.files is not None)
            counts.read(Poll(sel))
            out[f"PCIe AER and power state (every {PCIE_REFRESH:g} s)"] = timed(
                lambda s=counts: s.read(Poll(sel)), reps)["median"]
            counts.close()
            cached = SysfsPciSource(c.sysfs, refresh=1e9, safety=1e9)
            cached.read(Poll(sel))
            out[f"PCIe paths, cached (polls within {PCIE_REFRESH:g} s)"] = timed(
                lambda s=cached: s.read(Poll(sel)), reps)["median"]
        elif isinstance(source, DcbSource) and source.refresh:
            # Asked on a notification, a link change or every DCB_REFRESH, which polls back
            # to back never reach: the request per interface timed on its own, as the
            # PCIe paths' whole read, and the kept answers as the polls in between serve them
            asking = DcbSource(source.reader)
            out[labels["dcbnl"]] = timed(lambda s=asking: s.read(Poll(sel)), reps)["median"]
            out[f"DCB, kept (no change within {DCB_REFRESH:g} s)"] = timed(
                lambda s=source: s.read(shared), reps)["median"]
        elif isinstance(source, InterruptSource) and source.refresh:
            # Its layout (interrupt lists, RPS masks, NUMA nodes) every RXPATH_REFRESH, which
            # polls back to back never reach: timed on its own, as the PCIe paths' whole read
            fresh = InterruptSource(source.sysfs, source.procfs)
            out[f"receive path, layout read (every {RXPATH_REFRESH:g} s)"] = timed(
                lambda s=fresh: s.read(Poll(sel)), reps)["median"]
            out[labels[source.name]] = timed(lambda s=source: s.read(shared), reps)["median"]
        else:
            out[labels.get(source.name, source.name)] = timed(
                lambda s=source: s.read(shared), reps)["median"]
    result = c.poll()
    readings = [s.reading for s in result.samples]
    out["normalize"] = timed(lambda: [c.normalizer.normalize(r, c.options) for r in readings],
                             reps)["median"]
    out["track"] = timed(lambda: d.tracker.update(result.samples), reps)["median"]
    out["flight recorder"] = timed(lambda: d.recorder.add(result.samples), reps)["median"]
    # The other consumers keep windows keyed by poll time, so one fed the same poll again
    # does less than in a poll: their stages are timed inside the measured whole polls
    # (whole_poll, "consumers").
    out.update(getattr(d, "consumer_stages", {}))
    tracked = d.tracker.update(result.samples)
    renderer = d.renderer  # the daemon's, as warm as its polls left it
    body = renderer.render(tracked, SelfStats(polls=3), True)
    out["render (OpenMetrics)"] = timed(lambda: renderer.render(tracked, SelfStats(polls=3), True),
                                        reps)["median"]
    out["gzip level 1"] = timed(lambda: gzip.compress(body, 1, mtime=0), reps)["median"]
    return out


def _time_consumers(d: Daemon, recorder: bool = False) -> dict[str, list[float]]:
    """Wrap each consumer but the recorder (a stage of its own, unless ``recorder``) so that
    its CPU in every poll that follows is appended to a list per stage label: observe() and
    families(), as poll_once() calls them, once each per poll."""
    spent: dict[str, list[float]] = {}
    for k in d.consumers:
        if k is d.recorder and not recorder:
            continue
        label = ("flight recorder" if k is d.recorder
                 else CONSUMER_STAGES.get(type(k).__name__, type(k).__name__))
        times = spent.setdefault(label, [])

        def observe(result, tracked=(), _f=k.observe, _t=times):
            c0 = P()
            _f(result, tracked)
            _t.append(P() - c0)

        def families(_f=k.families, _t=times):
            c0 = P()
            out = _f()
            _t[-1] += P() - c0
            return out

        k.observe, k.families = observe, families  # instance attributes shadow the methods
    return spent


def _largest_families(body: bytes, n: int = 5) -> list[tuple[str, int]]:
    """The ``n`` families with the most series in an exposition, with their counts."""
    counts: dict[str, int] = {}
    for line in body.split(b"\n"):
        if line and not line.startswith(b"#"):
            name = line.split(b"{", 1)[0].split(b" ", 1)[0].decode()
            counts[name] = counts.get(name, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])[:n]


def whole_poll(d: Daemon, polls: int) -> dict:
    for _ in range(2):  # warm-up: names cached, plans compiled, rates present
        d.poll_once()
    tune_gc()  # as the daemon does once serving
    ioctl, netlink = reader_of(d.collector, EthtoolIoctlSource), reader_of(d.collector,
                                                                           EthtoolNetlinkSource)
    names = Counting(ioctl, "stat_names") if isinstance(ioctl, EthtoolIoctl) else None
    dumps = Counting(netlink, "_dump") if hasattr(netlink, "_dump") else None
    walls, cpus = [], []
    body = b""
    spent = _time_consumers(d)
    for _ in range(polls):
        c0, t0 = P(), time.perf_counter()
        with young_collection_after():  # as the serving loop polls
            exposition = d.poll_once()
        cpus.append(P() - c0)
        walls.append(time.perf_counter() - t0)
    body = exposition.get(False, False)
    # Each consumer's CPU per poll (observe and families), median over the measured polls
    d.consumer_stages = {label: med(times) for label, times in spent.items() if times}
    result = d.collector.poll()
    return {
        "cpu": med(cpus), "cpu_min": min(cpus), "cpu_max": max(cpus), "wall": med(walls),
        "polls": polls, "interfaces": len(result.samples),
        "driver_counters": sum(len(s.raw_stats.names) for s in result.samples
                               if s.raw_stats),
        "series": sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#")),
        "largest_families": _largest_families(body),
        "exposition_bytes": len(body),
        "names_reread": names.calls if names else None,
        "netlink_requests_per_poll": dumps.calls / (polls + 1) if dumps else None,
    }


def ioctl_floor(ifaces: list[str], reps: int) -> dict:
    """Bare GSTATS per interface (buffers and requests prepared), and with decoding."""
    with EthtoolIoctl() as io:
        prepared = []
        for name in ifaces:
            count = len(io.statistics(name).names)
            buf = ctypes.create_string_buffer(8 + (count + ethtool_ioctl.SLACK) * 8)
            struct.pack_into("=II", buf, 0, ethtool_ioctl.ETHTOOL_GSTATS, count)
            ifreq = struct.pack("16sP", name.encode(), ctypes.addressof(buf)).ljust(40, b"\0")
            prepared.append((buf, ifreq))
        fd = io._sock.fileno()
        bare, decoded = [], []
        for _ in range(reps):
            t0 = P()
            for _buf, ifreq in prepared:
                fcntl.ioctl(fd, ethtool_ioctl.SIOCETHTOOL, ifreq)
            t1 = P()
            for name in ifaces:
                io.statistics(name)
            t2 = P()
            bare.append(t1 - t0)
            decoded.append(t2 - t1)
    return {"bare_ioctl": med(bare), "ioctl_decode": med(decoded)}


def ethtool_fork(ifaces: list[str], reps: int) -> dict:
    """`ethtool -S` forked once per interface, as text-scraping exporters do."""
    import resource
    walls, cpus = [], []
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s0 = P()
        t0 = time.perf_counter()
        for name in ifaces:
            subprocess.run(["ethtool", "-S", name], check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime + P() - s0)
    return {"wall": med(walls), "cpu": med(cpus)}


def gzip_levels(body: bytes, reps: int = 5) -> dict:
    out = []
    for level in (1, 3, 6, 9):
        xs = []
        for _ in range(reps):
            t0 = P()
            size = len(gzip.compress(body, compresslevel=level, mtime=0))
            xs.append(P() - t0)
        out.append({"level": level, "cpu": med(xs), "bytes": size})
    return {"raw_bytes": len(body), "levels": out}


def referenced_kb() -> int:
    """Resident memory whose accessed bit is set (anonymous and file-backed), in KiB."""
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Referenced:"):
                return int(line.split()[1])
    return 0


def touched_kb(f) -> int:
    """KiB of this process's memory that one call of ``f`` touches."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("1")
    f()
    return referenced_kb()


def idle_penalty(gap: float, reps: int = 3) -> dict:
    """CPU to touch every page of a 12 MiB buffer, back to back and after ``gap`` s idle."""
    buf = bytearray(12 * 2**20)

    def touch():
        for i in range(0, len(buf), 4096):
            buf[i] = (buf[i] + 1) & 255

    touch()
    out = {"mib": 12}
    for name, pause in (("hot", 0.0), ("after_gap", gap)):
        xs = []
        for _ in range(reps):
            time.sleep(pause)
            t0 = time.thread_time()
            touch()
            xs.append(time.thread_time() - t0)
        out[name] = med(xs)
    out["us_per_page_after_gap"] = (out["after_gap"] - out["hot"]) / (len(buf) / 4096) * 1e6
    return out


def paced(polls: int, gap: float, ifaces: list[str]) -> dict:
    """The daemon's poll and the ioctl+decode floor, each after ``gap`` s of sleep."""
    d = daemon_for({"interfaces.include": "|".join(ifaces)})
    d.collector.link_refresh = gap  # as the daemon: speed and duplex every 5 s poll
    for _ in range(2):
        d.poll_once()
    tune_gc()
    T = time.thread_time
    with EthtoolIoctl() as io:
        def floor():
            for name in ifaces:
                io.statistics(name)

        floor()
        poll_cpu, floor_cpu = [], []
        for _ in range(polls):
            time.sleep(gap)
            t0 = T()
            with young_collection_after():
                d.poll_once()
            poll_cpu.append(T() - t0)
            time.sleep(gap)
            t0 = T()
            floor()
            floor_cpu.append(T() - t0)
        time.sleep(gap)
        poll_kb = touched_kb(d.poll_once)
        time.sleep(gap)
        floor_kb = touched_kb(floor)
    d.collector.close()
    return {"gap": gap, "polls": polls, "interfaces": len(ifaces),
            "poll_cpu": med(poll_cpu), "poll_cpu_min": min(poll_cpu),
            "poll_cpu_max": max(poll_cpu),
            "floor_cpu": med(floor_cpu), "floor_cpu_min": min(floor_cpu),
            "floor_cpu_max": max(floor_cpu),
            "poll_touched_kb": poll_kb, "floor_touched_kb": floor_kb,
            "idle_penalty": idle_penalty(gap)}


def veth(polls: int, ifaces: list[str], counts: list[int]) -> dict:
    out: dict = {"rows": [], "floor": {}}
    for n in counts:
        # Every interface of the namespace but lo when all are asked for (an alternation of
        # 2,000 names is more than RE2 compiles)
        d = daemon_for({"interfaces.include": ".*", "interfaces.exclude": "lo"}
                       if n == len(ifaces) and n > 256 else
                       {"interfaces.include": "|".join(ifaces[:n])})
        row = whole_poll(d, polls)
        row["ports"] = n
        row["floor"] = ioctl_floor(ifaces[:n], reps=50)
        if n == counts[-1]:
            row["stages"] = stages(d, polls)
            out["gzip"] = gzip_levels(d.poll_once().get(False, False))
        d.collector.close()
        out["rows"].append(row)
    out["ethtool_fork"] = ethtool_fork(ifaces[:min(counts[-1], 128)], reps=3)
    return out


def sim(polls: int, ports: int, raw: bool = False, realistic: bool = False,
        live: bool = True) -> dict:
    """``realistic``: the ports report a real mlx5 port's ~4,900 statistic names
    (benchmarks/connectx.py) instead of the demo's 167. ``live``: the interface list and the
    RDMA counters are read as on the live /sys (benchmarks/livepaths.py: the rtnetlink dump
    and RDMA netlink replayed in the kernel's layout, RDMA files kept open); without it, as
    files of the simulation's tree."""
    from livepaths import ReplayLinks, live_rdma

    from nicwatch.demo.simulate import (
        SimulatedDcb,
        SimulatedEthtool,
        SimulatedEthtoolNetlink,
        Simulation,
        demo_ports,
    )
    with tempfile.TemporaryDirectory(prefix="nwbench-sim-") as root:
        simulation = Simulation(demo_ports(ports), seed=1)
        simulation.write_sysfs(root)
        options = NormalizeOptions(RawOptions(enabled=raw))
        if realistic:
            from connectx import RealisticEthtool
            ioctl: SimulatedEthtool = RealisticEthtool(simulation)
        else:
            ioctl = SimulatedEthtool(simulation)
        collector = Collector(root, Selection(include=".*"), options, ioctl=ioctl,
                              netlink=SimulatedEthtoolNetlink(simulation),
                              dcb=SimulatedDcb(simulation), pcie_refresh=PCIE_REFRESH,
                              rtnetlink=ReplayLinks(root) if live else None)
        if live:  # RDMA and PCIe as the daemon reads them on the live /sys (livepaths.py)
            collector.sources = [
                live_rdma(simulation, root, PCIE_REFRESH) if isinstance(s, RdmaSource) else
                SysfsPciSource(root, PCIE_REFRESH, keep_open=True)
                if isinstance(s, SysfsPciSource) else s for s in collector.sources]
        for source in collector.sources:  # the receive path's layout at the daemon's cadence
            if isinstance(source, InterruptSource):
                source.refresh = RXPATH_REFRESH
        d = daemon_for({"path.sysfs": root, "collector.raw": str(raw).lower()}, collector)
        row = whole_poll(d, polls)
        row["ports"] = ports
        row["live"] = live
        row["stages"] = stages(d, polls)
        # The simulation's own Python answering the ioctls (inside "ethtool ioctls"; a real
        # port's GSTATS is one system call and a decode)
        row["simulated_ioctl"] = timed(lambda: [ioctl.statistics(n) for n in simulation.ports],
                                       polls)["median"]
        if raw:
            row["gzip"] = gzip_levels(d.poll_once().get(False, False))
        return row


def _full_sim(root: str, ports: int, flags: dict[str, str]) -> tuple[Daemon, object]:
    """The realistic ConnectX host (benchmarks/connectx.py) with every source the demo has a
    double for (devlink, module EEPROMs, netdev queues, SR-IOV VFs besides ethtool and DCB),
    read as on the live /sys, as a daemon configured by ``flags`` (--no-collector.NAME drops
    a source from the collector, as the daemon does)."""
    from connectx import RealisticEthtool
    from livepaths import ReplayLinks, live_rdma

    from nicwatch.demo.simulate import (
        SimulatedDcb,
        SimulatedDevlink,
        SimulatedEthtoolNetlink,
        SimulatedModules,
        SimulatedNetdev,
        SimulatedVfs,
        Simulation,
        demo_ports,
    )
    from nicwatch.sources.sriov import SriovSource

    simulation = Simulation(demo_ports(ports), seed=1)
    simulation.write_sysfs(root)
    collector = Collector(root, Selection(include=".*"), NormalizeOptions(),
                          ioctl=RealisticEthtool(simulation),
                          netlink=SimulatedEthtoolNetlink(simulation),
                          dcb=SimulatedDcb(simulation), devlink=SimulatedDevlink(simulation),
                          module=SimulatedModules(simulation),
                          netdev=SimulatedNetdev(simulation), pcie_refresh=PCIE_REFRESH,
                          rtnetlink=ReplayLinks(root))
    collector.sources = [
        live_rdma(simulation, root, PCIE_REFRESH) if isinstance(s, RdmaSource) else
        SysfsPciSource(root, PCIE_REFRESH, keep_open=True)
        if isinstance(s, SysfsPciSource) else s for s in collector.sources]
    collector.sources.append(SriovSource(root, SimulatedVfs(simulation)))
    for source in collector.sources:
        if isinstance(source, InterruptSource):
            source.refresh = RXPATH_REFRESH
    d = daemon_for({"path.sysfs": root, **flags}, collector)
    d.poll_once()  # starts the module thread; its first pass, so that its series count
    for source in d.collector.sources:
        if hasattr(source, "wait_first_read"):
            source.wait_first_read(10.0)
    return d, simulation


def _poll_cpu(d: Daemon) -> float:
    c0 = P()
    with young_collection_after():
        d.poll_once()
    return P() - c0


def series_per_port(body: bytes, ports: list[str]) -> dict:
    """Series whose ``device`` label is each port (its netdev's, RDMA and module series
    included), at the configuration the body was rendered with."""
    counts = {}
    for port in ports:
        tag = f'device="{port}"'.encode()
        counts[port] = sum(1 for line in body.split(b"\n")
                           if line and not line.startswith(b"#") and tag in line)
    values = sorted(counts.values())
    return {"median": med(values), "max": values[-1] if values else None, "ports": len(values)}


def collectors(polls: int, ports: int) -> dict:
    """What each --[no-]collector.NAME costs a poll on the realistic ConnectX host: its own
    stage (a source's read: wall time from nicwatch_source_duration_seconds, median; a
    consumer's observe and families: CPU, median) and the whole poll's CPU with every collector
    on against the same host with it off (so normalize, track, history and render of its
    series count), polls of the two daemons interleaved, medians. Module EEPROMs and VFs are
    on in the every-collector daemon (the demo simulates both); the module's reads run on its
    own thread, so only what the poll does with them is in the poll."""
    from nicwatch.config import COLLECTORS
    on = {"collector.module": "true", "collector.vfs": "true"}
    out: dict = {"ports": ports, "polls": polls, "collectors": {}}
    with tempfile.TemporaryDirectory(prefix="nwbench-cx-") as base:
        every, _ = _full_sim(f"{base}/all", ports, on)
        for _ in range(2):
            every.poll_once()
        spent = _time_consumers(every, recorder=True)
        runs: dict[str, list[float]] = {}
        for _ in range(polls):
            every.poll_once()
            for run in every.collector.poll().sources:
                runs.setdefault(run.source, []).append(run.seconds)
        body = every.poll_once().get(False, False)
        names = [s.identity.device for s in every.collector.poll().samples
                 if not s.identity.device.startswith("bond")]
        out["series"] = sum(1 for line in body.split(b"\n")
                            if line and not line.startswith(b"#"))
        out["series_per_port"] = series_per_port(body, names)
        consumers = {label: med(times) for label, times in spent.items() if times}
        by_consumer = {"history": "flight recorder", "identity": "identity",
                       "softirq": "per-CPU softirq load",
                       "receive_path": "receive path (consumer)",
                       "link_physics": "link physics (consumer)", "checks": "expectations",
                       "incidents": "incidents", "diagnosis": "diagnosis"}
        every.collector.close()
        for i, switch in enumerate(COLLECTORS):
            # both daemons new and as old as each other (a daemon's poll grows as its history
            # and windows fill: one kept across the collectors was measured 50% dearer by the
            # last of them)
            key = f"collector.{switch.name.replace('-', '_')}"
            every, _ = _full_sim(f"{base}/{i}a", ports, on)
            without, _ = _full_sim(f"{base}/{i}b", ports, {**on, key: "false"})
            for _ in range(2):
                every.poll_once()
                without.poll_once()
            a, b = [], []
            for j in range(polls):  # interleaved, the order alternating
                if j % 2:
                    b.append(_poll_cpu(without))
                    a.append(_poll_cpu(every))
                else:
                    a.append(_poll_cpu(every))
                    b.append(_poll_cpu(without))
            own = sum(med(runs.get(name, [])) or 0.0 for name in switch.sources)
            own += sum(consumers.get(by_consumer.get(name, ""), 0.0) or 0.0
                       for name in switch.consumers)
            out["collectors"][switch.name] = {
                "own": own, "with": med(a), "without": med(b), "whole": med(a) - med(b),
                "sources": sorted(switch.sources), "consumers": sorted(switch.consumers)}
            without.collector.close()
            every.collector.close()
    return out


def growth(polls: int, ifaces: list[str]) -> dict:
    """The cost of the signal set on an idle host: the daemon's whole poll with every source
    and consumer (module EEPROMs and VFs too) against the same daemon reading only the ethtool
    statistics (``--collector.disable-defaults --collector.ethtool-ioctl``: GSTATS, driver
    info, no consumer), polls interleaved, CPU medians; and series per interface of each."""
    include = {"interfaces.include": "|".join(ifaces)}
    every = daemon_for({**include, "collector.module": "true", "collector.vfs": "true"})
    stats = daemon_for({**include, "collector.disable_defaults": "true",
                        "collector.ethtool_ioctl": "true"})
    for d in (every, stats):
        for _ in range(2):
            d.poll_once()
    tune_gc()
    a, b = [], []
    for j in range(polls):
        pair = (every, stats) if j % 2 == 0 else (stats, every)
        for d in pair:
            (a if d is every else b).append(_poll_cpu(d))
    out = {"interfaces": len(ifaces), "polls": polls, "every": med(a), "every_min": min(a),
           "every_max": max(a), "statistics": med(b), "statistics_min": min(b),
           "statistics_max": max(b), "ratio": med(a) / med(b),
           "sources_every": [s.name for s in every.collector.sources],
           "sources_statistics": [s.name for s in stats.collector.sources]}
    for name, d in (("every", every), ("statistics", stats)):
        out[f"series_per_port_{name}"] = series_per_port(d.poll_once().get(False, False),
                                                         ifaces)
        d.collector.close()
    return out


def main() -> None:
    # stdout carries the JSON document: log lines (a source that is not there says so at
    # debug) go to stderr, warnings and worse only.
    configure("warning", "json")
    if len(sys.argv) < 4 or sys.argv[1] not in ("veth", "sim", "paced", "connectx",
                                                  "collectors", "growth"):
        raise SystemExit(f"usage: {sys.argv[0]} veth POLLS COUNTS IFACE... | "
                         "paced POLLS GAP IFACE... | sim POLLS PORTS [raw] [files] | "
                         "connectx POLLS PORTS | collectors POLLS PORTS | growth POLLS IFACE...")
    mode, polls, *rest = sys.argv[1:]
    if mode == "veth":
        counts = [int(x) for x in rest[0].split(",")]
        result = veth(int(polls), rest[1:], counts)
    elif mode == "paced":
        result = paced(int(polls), float(rest[0]), rest[1:])
    elif mode == "sim":  # "files": the simulation's tree read as files, not as the live /sys
        result = sim(int(polls), int(rest[0]), "raw" in rest[1:], live="files" not in rest[1:])
    elif mode == "connectx":
        result = sim(int(polls), int(rest[0]), realistic=True)
    elif mode == "collectors":
        result = collectors(int(polls), int(rest[0]))
    elif mode == "growth":
        result = growth(int(polls), rest)
    else:
        raise SystemExit(f"unknown mode {mode}")
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
