"""Poll cost inside the benchmark namespace, stage by stage, and the floors it is compared
with. Run by run.py as `ip netns exec NS python benchmarks/pipeline.py IFACE...`; prints
one JSON document.

Per scenario and port count: the median over measured polls of wall time per stage (read
and normalize from Collector.poll's own durations, track, render) and of the CPU time of
the whole poll (time.process_time, one thread). The floor is the bare GSTATS ioctls for
the same interfaces with preallocated buffers and cached names; "ioctl + decode" adds
unpacking the values, i.e. EthtoolIoctl.statistics() with its name cache warm.
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulated import SimulatedMlx5Ioctl

from nicwatch.collect import Collector, Selection
from nicwatch.exporter.render import SelfStats, render
from nicwatch.normalize import NormalizeOptions, RawOptions
from nicwatch.sources import Poll, SourceOptions, ethtool_ioctl
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl, EthtoolIoctlSource
from nicwatch.sources.ethtool_netlink import EthtoolNetlinkSource
from nicwatch.sources.sysfs_infiniband import SysfsInfinibandSource
from nicwatch.sources.sysfs_pci import SysfsPciSource
from nicwatch.tracker import Tracker

PORTS = (1, 8, 16, 32)
SCENARIOS = {
    # name: (ioctl factory, raw families on)
    "veth": (EthtoolIoctl, False),
    "mlx5-sim": (SimulatedMlx5Ioctl, False),
    "mlx5-sim-raw": (SimulatedMlx5Ioctl, True),
}


def median(xs):
    return statistics.median(xs) if xs else None


class Counting:
    """Counts calls of one method of an object (instrumentation, not behaviour)."""

    def __init__(self, obj, name: str) -> None:
        self.calls = 0
        original = getattr(obj, name)

        def wrapped(*a, **kw):
            self.calls += 1
            return original(*a, **kw)

        setattr(obj, name, wrapped)


def collector_for(scenario: str, ifaces: list[str]) -> Collector:
    make_ioctl, raw = SCENARIOS[scenario]
    netlink = EthtoolNetlinkSource.open(SourceOptions())
    sources = [*([netlink] if netlink else []), EthtoolIoctlSource(make_ioctl()),
               SysfsPciSource("/sys"), SysfsInfinibandSource("/sys")]  # as before: no dcb, no softirq
    return Collector("/sys", Selection(include="|".join(ifaces)),
                     NormalizeOptions(RawOptions(enabled=raw)), sources=sources)


def reader_of(collector: Collector, kind: type):
    return next((s.reader for s in collector.sources if isinstance(s, kind)), None)


def exposition(scenario: str, ifaces: list[str]) -> bytes:
    """The text exposition after two polls (so rate gauges are present)."""
    collector = collector_for(scenario, ifaces)
    tracker = Tracker()
    for _ in range(2):
        tracked = tracker.update(collector.poll().samples)
    collector.close()
    return render(tracked, SelfStats(polls=2), False)


def measure_pipeline(scenario: str, ifaces: list[str], polls: int) -> dict:
    collector = collector_for(scenario, ifaces)
    ioctl, netlink = reader_of(collector, EthtoolIoctlSource), reader_of(collector, EthtoolNetlinkSource)
    names_read = Counting(ioctl, "stat_names") if isinstance(ioctl, EthtoolIoctl) else None
    dumps = Counting(netlink, "_dump") if netlink is not None else None
    tracker = Tracker()
    rows = []
    body = b""
    series = counters = 0
    for i in range(polls + 2):
        if i == 2:  # two warm-up polls: names cached, plans compiled, rates present
            if names_read:
                names_read.calls = 0
            if dumps:
                dumps.calls = 0
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = collector.poll()
        t1 = time.perf_counter()
        tracked = tracker.update(result.samples)
        t2 = time.perf_counter()
        body = render(tracked, SelfStats(polls=i + 1), False)
        t3 = time.perf_counter()
        cpu = time.process_time() - cpu0
        if i >= 2:
            rows.append({"read": result.durations["read"],
                         "normalize": result.durations["normalize"],
                         "track": t2 - t1, "render": t3 - t2, "total": t3 - t0, "cpu": cpu})
        assert len(result.samples) == len(ifaces), (scenario, len(result.samples))
        counters = sum(len(s.raw_stats.names) for s in result.samples if s.raw_stats)
        series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
    collector.close()
    out = {k: median([r[k] for r in rows]) for k in rows[0]}
    out.update(ports=len(ifaces), driver_counters=counters, series=series,
               exposition_bytes=len(body), polls=polls,
               names_reread=names_read.calls if names_read else None,
               netlink_requests_per_poll=dumps.calls / polls if dumps else None)
    return out


def read_breakdown(ifaces: list[str], reps: int) -> dict:
    """The read stage of a veth poll split by source: the sysfs pass that lists and
    selects interfaces (reading each one's attributes), the ethtool netlink dumps, and the
    per-interface ioctls the Collector issues (GDRVINFO, GPERMADDR, GSTATS, ...)."""
    collector = collector_for("veth", ifaces)
    collector.poll()
    parts: dict[str, list[float]] = {"sysfs": [], "netlink": [], "ioctl": []}
    timed = {EthtoolNetlinkSource.name: "netlink", EthtoolIoctlSource.name: "ioctl"}
    for _ in range(reps):
        t0 = time.perf_counter()
        poll = Poll(collector._select())
        parts["sysfs"].append(time.perf_counter() - t0)
        for source in collector.sources:
            if source.name in timed:
                t1 = time.perf_counter()
                source.read(poll)
                parts[timed[source.name]].append(time.perf_counter() - t1)
    collector.close()
    return {k: median(v) for k, v in parts.items()}


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
            t0 = time.perf_counter()
            for _buf, ifreq in prepared:
                fcntl.ioctl(fd, ethtool_ioctl.SIOCETHTOOL, ifreq)
            t1 = time.perf_counter()
            for name in ifaces:
                io.statistics(name)
            t2 = time.perf_counter()
            bare.append(t1 - t0)
            decoded.append(t2 - t1)
    return {"bare_ioctl": median(bare), "ioctl_decode": median(decoded)}


def ethtool_fork(ifaces: list[str], reps: int) -> dict:
    """`ethtool -S` forked once per interface, as text-scraping exporters do."""
    import resource
    walls, cpus = [], []
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s0 = time.process_time()
        t0 = time.perf_counter()
        for name in ifaces:
            subprocess.run(["ethtool", "-S", name], check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
                    + time.process_time() - s0)
    return {"wall": median(walls), "cpu": median(cpus)}


def gzip_levels(body: bytes, reps: int = 5) -> dict:
    out = []
    for level in (1, 3, 6, 9):
        times = []
        for _ in range(reps):
            t0 = time.process_time()
            size = len(gzip.compress(body, compresslevel=level, mtime=0))
            times.append(time.process_time() - t0)
        out.append({"level": level, "cpu": median(times), "bytes": size})
    return {"raw_bytes": len(body), "levels": out}


def main() -> None:
    polls = int(sys.argv[1])
    ifaces = sys.argv[2:]
    out = {"pipeline": {}, "floor": {}}
    for scenario in SCENARIOS:
        out["pipeline"][scenario] = [measure_pipeline(scenario, ifaces[:n], polls) for n in PORTS]
    for n in PORTS:
        out["floor"][str(n)] = ioctl_floor(ifaces[:n], reps=50)
    out["read_breakdown"] = read_breakdown(ifaces, reps=polls)
    out["ethtool_fork"] = ethtool_fork(ifaces, reps=3)
    out["gzip"] = {f"{scenario} x{len(ifaces)}": gzip_levels(exposition(scenario, ifaces))
                   for scenario in ("veth", "mlx5-sim-raw")}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
