"""nicwatch benchmarks: every figure of docs/performance.md in one run, side by side.

    sudo .venv/bin/python benchmarks/run.py [--quick]

Needs root (it creates two network namespaces), iproute2, ethtool and Debian's
prometheus-node-exporter (`apt-get install prometheus-node-exporter`; the reference). It
builds 32 veth interfaces with 64 rx/tx queues each (577 driver counters apiece, 18.5k in
all) in a namespace of its own, then measures:

  * poll cost per stage at 1, 8, 16 and 32 ports, for the veth set, a simulated mlx5 port
    (~4,900 driver counters, benchmarks/simulated.py) and the same with raw families on,
    against the floor: the bare GSTATS ioctls for the same interfaces (pipeline.py);
  * the real `nicwatch serve` on the 32 veths: RSS after warm-up, CPU at a 5 s interval
    over 60 s with a Prometheus-like scrape every 15 s, scrape latency p50/p99 from 4
    concurrent keep-alive clients for text/OpenMetrics x plain/gzip, CPU per scrape served
    from the cache, and RSS after an hour's worth of polls (720, run at 0.1 s intervals
    with the peak window scaled alike);
  * references: node_exporter 1.5 with only `--collector.ethtool` on the same interfaces
    (CPU and wall per scrape), and `ethtool -S` forked per interface.

Results go to benchmarks/results/latest.json and latest.md (the table, also printed).
--quick shortens the CPU window and the history run for a smoke test; its numbers are not
the published ones.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

import psutil

from nicwatch.snapshot.atomicfile import write_atomic

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
NODE_EXPORTER = "prometheus-node-exporter"
PORTS, QUEUES = 32, 64
POLL_INTERVAL = 5.0
HISTORY_INTERVAL = 0.1
SCRAPE_EVERY = 15.0
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
TARGETS = {"poll_vs_floor": 10.0, "poll_vs_ioctl_decode": 10.0, "scrape_p50_ms": 5.0, "cpu_percent": 0.5, "rss_mb": 60.0,
           "scrape_cpu_ratio": 20.0}


def sh(*argv: str, stdin: str | None = None) -> str:
    return subprocess.run(argv, input=stdin, check=True, capture_output=True, text=True).stdout


class Namespace:
    """32 veth interfaces (nwbv0..31) with 64 queues each; their peers live in a second
    namespace so this one holds only them and lo. No addresses: nothing is sent."""

    def __init__(self) -> None:
        tag = secrets.token_hex(3)
        self.ns, self.peer = f"nwbench-{tag}", f"nwbpeer-{tag}"
        self.ifaces = [f"nwbv{i}" for i in range(PORTS)]

    def __enter__(self) -> Self:
        try:
            sh("ip", "netns", "add", self.ns)
            sh("ip", "netns", "add", self.peer)
            for ns in (self.ns, self.peer):
                self.run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                         "net.ipv6.conf.default.disable_ipv6=1", ns=ns)
            q = f"numtxqueues {QUEUES} numrxqueues {QUEUES}"
            sh("ip", "-n", self.ns, "-batch", "-", stdin="".join(
                f"link add nwbv{i} {q} type veth peer name nwbp{i} netns {self.peer} {q}\n"
                f"link set nwbv{i} up\n" for i in range(PORTS)) + "link set lo up\n")
            sh("ip", "-n", self.peer, "-batch", "-",
               stdin="".join(f"link set nwbp{i} up\n" for i in range(PORTS)))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ns in (self.ns, self.peer):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)

    def run(self, *argv: str, ns: str | None = None) -> str:
        return sh("ip", "netns", "exec", ns or self.ns, *argv)

    def json(self, script: str, *args) -> dict:
        return json.loads(self.run(sys.executable, str(HERE / script), *map(str, args)))

    def spawn(self, *argv: str, log: Path) -> psutil.Process:
        """Start a process in the namespace; `ip netns exec` execs, so the PID is its own."""
        with open(log, "wb") as f:
            proc = subprocess.Popen(["ip", "netns", "exec", self.ns, *argv],
                                    stdout=subprocess.DEVNULL, stderr=f)
        return psutil.Process(proc.pid)


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def stop(p: psutil.Process) -> None:
    p.terminate()
    try:
        p.wait(timeout=10)
    except psutil.TimeoutExpired:
        p.kill()


class Served:
    """`nicwatch serve` on the 32 veths, in the namespace."""

    def __init__(self, ns: Namespace, logdir: Path, name: str, *flags: str) -> None:
        self.ns = ns
        self.port = free_port()
        self.proc = ns.spawn(NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{self.port}",
                             "--interfaces.include=nwbv[0-9]+", *flags,
                             log=logdir / f"nicwatch-{name}.log")

    def wait_polls(self, n: int) -> None:
        self.ns.json("scrape.py", "polls", self.port, n)

    def rss_mb(self) -> float:
        return self.proc.memory_info().rss / 2**20


def measure_daemon(ns: Namespace, logdir: Path, quick: bool) -> dict:
    out: dict = {}
    # At the production interval: RSS after warm-up, CPU over a window, scrape latency.
    d = Served(ns, logdir, "5s", f"--interval={POLL_INTERVAL:g}s")
    try:
        d.wait_polls(2)
        out["rss_warm_mb"] = d.rss_mb()
        window = 20.0 if quick else 60.0
        c0, t0 = cpu_seconds(d.proc), time.monotonic()
        scrapes = 0
        while time.monotonic() - t0 < window:
            ns.run("curl", "-sf", "--compressed", "-o", "/dev/null", "-H",
                   f"Accept: {PROMETHEUS_ACCEPT}", f"http://127.0.0.1:{d.port}/metrics")
            scrapes += 1
            time.sleep(max(0.0, min(SCRAPE_EVERY, window - (time.monotonic() - t0))))
        elapsed = time.monotonic() - t0
        out["cpu_window_s"] = elapsed
        out["cpu_scrapes"] = scrapes
        out["cpu_percent"] = 100 * (cpu_seconds(d.proc) - c0) / elapsed
        out["latency"] = ns.json("scrape.py", "latency", d.port, 4, 200 if quick else 800)
    finally:
        stop(d.proc)
    # Served from the cache only (no poll after the first): CPU per scrape.
    d = Served(ns, logdir, "1h", "--interval=1h")
    try:
        d.wait_polls(1)
        per_scrape = {}
        for name, accept, gz in (("prometheus (openmetrics+gzip)", PROMETHEUS_ACCEPT, "gzip"),
                                 ("text", "text/plain", "plain")):
            ns.json("scrape.py", "burst", d.port, 5, accept, gz)  # build the cached variant
            c0 = cpu_seconds(d.proc)
            n = 500
            r = ns.json("scrape.py", "burst", d.port, n, accept, gz)
            per_scrape[name] = {"cpu": (cpu_seconds(d.proc) - c0) / n, "p50": r["p50"],
                                "bytes": r["bytes"]}
        out["per_scrape"] = per_scrape
        out["text_series"] = ns.json("scrape.py", "burst", d.port, 1, "text/plain",
                                     "plain")["series"]
    finally:
        stop(d.proc)
    # An hour of 5 s polls (720), run at 0.1 s with the peak window scaled the same way.
    history = 120 if quick else int(3600 / POLL_INTERVAL)
    scale = HISTORY_INTERVAL / POLL_INTERVAL
    d = Served(ns, logdir, "history", f"--interval={HISTORY_INTERVAL:g}s",
               f"--rates.peak-window={60 * scale:g}s")
    try:
        d.wait_polls(3)
        out["history_rss_warm_mb"] = d.rss_mb()
        d.wait_polls(history + 3)
        out["history_polls"] = history
        out["history_rss_mb"] = d.rss_mb()
    finally:
        stop(d.proc)
    return out


def measure_node_exporter(ns: Namespace, logdir: Path) -> dict:
    port = free_port()
    p = ns.spawn(NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                 "--collector.disable-defaults", "--collector.ethtool",
                 log=logdir / "node_exporter.log")
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                ns.json("scrape.py", "burst", port, 3, "text/plain", "plain")
                break
            except subprocess.CalledProcessError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        n = 30
        c0 = cpu_seconds(p)
        r = ns.json("scrape.py", "burst", port, n, "text/plain", "plain",
                    'node_scrape_collector_duration_seconds{collector="ethtool"}')
        cpu = (cpu_seconds(p) - c0) / n
        r2 = ns.json("scrape.py", "burst", port, 1, "text/plain", "plain")
        return {"version": sh(NODE_EXPORTER, "--version").splitlines()[0], "cpu": cpu,
                "p50": r["p50"], "p99": r["p99"], "series": r2["series"], "bytes": r2["bytes"],
                "collector_p50": sorted(r["values"])[len(r["values"]) // 2]}
    finally:
        stop(p)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def summarize(data: dict) -> dict:
    veth32 = data["pipeline"]["veth"][-1]
    floor32 = data["floor"]["32"]
    d, ne = data["daemon"], data["node_exporter"]
    scrape_cpu = d["per_scrape"]["prometheus (openmetrics+gzip)"]["cpu"]
    p50 = max(v["p50"] for v in d["latency"].values())
    return {
        "poll_vs_floor": ratio(veth32["total"], floor32["bare_ioctl"]),
        "poll_vs_ioctl_decode": ratio(veth32["total"], floor32["ioctl_decode"]),
        "scrape_p50_ms": p50 * 1e3,
        "cpu_percent": d["cpu_percent"],
        "rss_mb": max(d["rss_warm_mb"], d["history_rss_mb"]),
        "scrape_cpu_ratio": ratio(ne["cpu"], scrape_cpu),
        "poll_cpu_ratio": ratio(ne["cpu"], veth32["cpu"]),
        "ethtool_fork_vs_poll": ratio(data["ethtool_fork"]["wall"], veth32["total"]),
        "ethtool_fork_vs_ioctl": ratio(data["ethtool_fork"]["wall"], floor32["ioctl_decode"]),
    }


def ms(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x * 1e3:.{digits}f}"


def times(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}x"


def markdown(data: dict) -> str:
    s = data["summary"]
    d, ne, fork = data["daemon"], data["node_exporter"], data["ethtool_fork"]
    veth32 = data["pipeline"]["veth"][-1]
    lines = [(f"Measured {data['date']} on {data['machine']} (kernel {data['kernel']}, Python "
             f"{data['python']}, {data['cpus']} CPUs); {PORTS} veth x {QUEUES} queues = "
             f"{veth32['driver_counters']} driver counters."), ""]
    lines += ["### Targets", "", "| target | goal | measured | met |", "|---|---|---|---|"]
    rows = [("whole poll vs bare-ioctl floor (32 veth)", "poll_vs_floor", "< 10x", times, False),
            ("scrape p50 from cache (worst format)", "scrape_p50_ms", "< 5 ms",
             lambda v: f"{v:.2f} ms", False),
            ("daemon CPU at a 5 s interval", "cpu_percent", "< 0.5% of a core",
             lambda v: f"{v:.2f}%", False),
            ("RSS (max of warm-up, after 720 polls)", "rss_mb", "< 60 MB",
             lambda v: f"{v:.1f} MB", False),
            ("CPU per scrape, node_exporter / nicwatch", "scrape_cpu_ratio", ">= 20x", times,
             True)]
    rows.insert(1, ("whole poll vs ioctl + decode (32 veth)", "poll_vs_ioctl_decode", "< 10x",
                    times, False))
    for label, key, goal, fmt, higher in rows:
        v = s[key]
        met = v is not None and (v >= TARGETS[key] if higher else v < TARGETS[key])
        lines.append(f"| {label} | {goal} | {fmt(v) if v is not None else '-'} | "
                     f"{'yes' if met else '**no**'} |")
    lines += ["", "### Poll cost per stage (median of measured polls, ms)", "",
              ("| scenario | ports | driver counters | series | read | normalize | track | "
              "render | poll wall | poll CPU | CPU us/counter | wall / floor |"),
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for scenario, rows_ in data["pipeline"].items():
        for r in rows_:
            floor = data["floor"][str(r["ports"])]["bare_ioctl"]
            per = r["cpu"] / r["driver_counters"] * 1e6 if r["driver_counters"] else None
            lines.append(
                f"| {scenario} | {r['ports']} | {r['driver_counters']} | {r['series']} | "
                f"{ms(r['read'])} | {ms(r['normalize'])} | {ms(r['track'])} | "
                f"{ms(r['render'])} | {ms(r['total'])} | {ms(r['cpu'])} | "
                f"{'-' if per is None else f'{per:.2f}'} | "
                f"{times(ratio(r['total'], floor)) if scenario == 'veth' else '-'} |")
    lines += ["", "Floors (veth, names cached):", "",
              "| ports | bare GSTATS ioctls (ms) | ioctl + decode (ms) |", "|---|---|---|"]
    for n, f in data["floor"].items():
        lines.append(f"| {n} | {ms(f['bare_ioctl'], 3)} | {ms(f['ioctl_decode'], 3)} |")
    rb = data["read_breakdown"]
    share = {k: v / sum(rb.values()) for k, v in rb.items()}
    lines += ["", ("Read stage of the 32-veth poll by source, each timed on its own (ms, "
                   f"share): sysfs interface selection and attributes {ms(rb['sysfs'])} "
                   f"({share['sysfs']:.0%}), ethtool netlink dumps {ms(rb['netlink'])} "
                   f"({share['netlink']:.0%}), per-interface ioctls {ms(rb['ioctl'])} "
                   f"({share['ioctl']:.0%}).")]
    checks = data["pipeline"]["veth"][-1]
    lines += ["", (f"Statistic names re-read during measured polls: {checks['names_reread']}; "
              f"ethtool netlink requests per poll: {checks['netlink_requests_per_poll']:g} "
              "(dumps, the same at 1 and 32 ports)."), ""]
    lines += [("### Scrape latency (`nicwatch serve`, 32 veth, 5 s interval, 4 concurrent "
              "keep-alive clients)"), "",
              "| format | bytes | requests | p50 ms | p99 ms | max ms |", "|---|---|---|---|---|---|"]
    for name, r in d["latency"].items():
        lines.append(f"| {name} | {r['bytes']} | {r['requests']} | {ms(r['p50'])} | "
                     f"{ms(r['p99'])} | {ms(r['max'])} |")
    lines += ["", "### Daemon", "", "| measure | value |", "|---|---|",
              (f"| CPU at a 5 s interval ({d['cpu_window_s']:.0f} s, {d['cpu_scrapes']} scrapes) "
              f"| {d['cpu_percent']:.3f}% of one core |"),
              f"| RSS after warm-up | {d['rss_warm_mb']:.1f} MB |",
              (f"| RSS after {d['history_polls']} polls (0.1 s interval) | "
              f"{d['history_rss_mb']:.1f} MB (at its warm-up: {d['history_rss_warm_mb']:.1f} MB) |")]
    for name, r in d["per_scrape"].items():
        lines.append(f"| CPU per scrape from cache, {name} | {ms(r['cpu'], 3)} ms "
                     f"({r['bytes']} bytes, p50 {ms(r['p50'])} ms) |")
    lines += ["", "### References (same 32 veth x 64 queues)", "",
              "| what | per poll / scrape: wall ms | CPU ms | nicwatch ratio |",
              "|---|---|---|---|",
              (f"| bare GSTATS ioctls (floor) | {ms(data['floor']['32']['bare_ioctl'], 3)} | - | "
              f"poll is {times(s['poll_vs_floor'])} the floor |"),
              (f"| nicwatch poll (read+normalize+track+render) | {ms(veth32['total'])} | "
              f"{ms(veth32['cpu'])} | - |"),
              (f"| nicwatch scrape from cache (openmetrics+gzip) | "
              f"{ms(d['per_scrape']['prometheus (openmetrics+gzip)']['p50'])} | "
              f"{ms(d['per_scrape']['prometheus (openmetrics+gzip)']['cpu'], 3)} | - |"),
              (f"| {ne['version']}, ethtool collector only ({ne['series']} series) | "
              f"{ms(ne['p50'])} (collector {ms(ne['collector_p50'])}) | {ms(ne['cpu'])} | "
              f"{times(s['scrape_cpu_ratio'])} the CPU of a nicwatch scrape, "
              f"{times(s['poll_cpu_ratio'])} that of a whole nicwatch poll |"),
              (f"| `ethtool -S` forked per interface | {ms(fork['wall'])} | {ms(fork['cpu'])} | "
              f"{times(s['ethtool_fork_vs_ioctl'])} the in-process ioctl reads of the same "
              f"counters, {times(s['ethtool_fork_vs_poll'])} a whole nicwatch poll |")]
    levels = [g["level"] for g in next(iter(data["gzip"].values()))["levels"]]
    lines += ["", "### gzip levels (CPU ms to compress one text exposition, compressed bytes)",
              "", "| exposition | raw bytes | " + " | ".join(f"level {n}" for n in levels) + " |",
              "|---|---|" + "---|" * len(levels)]
    for name, g in data["gzip"].items():
        lines.append(f"| {name} | {g['raw_bytes']} | " + " | ".join(
            f"{ms(x['cpu'])} ms, {x['bytes']} B" for x in g["levels"]) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short windows; a smoke test")
    ap.add_argument("--polls", type=int, default=20, help="measured polls per pipeline cell")
    ap.add_argument("--report", action="store_true",
                    help="only re-render latest.md from latest.json")
    args = ap.parse_args()
    if args.report:
        data = json.loads((RESULTS / "latest.json").read_text())
        data["summary"] = summarize(data)
        table = markdown(data)
        write_atomic(RESULTS / "latest.md", table.encode())
        print(table)
        return 0
    if os.geteuid() != 0:
        print("benchmarks/run.py: error: needs root (creates network namespaces)",
              file=sys.stderr)
        return 2
    for tool in ("ip", "ethtool", "curl", NODE_EXPORTER):
        if subprocess.run(["which", tool], capture_output=True, check=False).returncode:
            print(f"benchmarks/run.py: error: {tool} not found (apt-get install "
                  "iproute2 ethtool curl prometheus-node-exporter)", file=sys.stderr)
            return 2
    data: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "machine": cpu_model(),
                  "kernel": platform.release(), "python": platform.python_version(),
                  "cpus": os.cpu_count(), "quick": args.quick}
    with Namespace() as ns, tempfile.TemporaryDirectory() as logs:
        logdir = Path(logs)
        print(f"namespace {ns.ns}: {PORTS} veth x {QUEUES} queues", file=sys.stderr)
        print("poll pipeline, floors, ethtool -S forks, gzip levels ...", file=sys.stderr)
        data.update(ns.json("pipeline.py", 5 if args.quick else args.polls, *ns.ifaces))
        print("node_exporter ...", file=sys.stderr)
        data["node_exporter"] = measure_node_exporter(ns, logdir)
        print("nicwatch serve ...", file=sys.stderr)
        data["daemon"] = measure_daemon(ns, logdir, args.quick)
    RESULTS.mkdir(parents=True, exist_ok=True)
    data["summary"] = summarize(data)
    table = markdown(data)
    write_atomic(RESULTS / "latest.json", (json.dumps(data, indent=1) + "\n").encode())
    write_atomic(RESULTS / "latest.md", table.encode())
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
