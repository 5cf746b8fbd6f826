"""nicwatch benchmarks: every figure of docs/performance.md in one run, side by side.

    sudo .venv/bin/python benchmarks/run.py [--quick] [--rounds N] [--window S]

Needs root (it creates network namespaces), iproute2, ethtool, curl and Debian's
prometheus-node-exporter (installed with apt-get if missing: the reference). It builds 32
veth interfaces with 64 rx/tx queues each (577 driver counters apiece, 18.5k in all) in a
namespace of its own, and a second one with 128 veths of 16 queues, then measures:

  * the headline: whole-process CPU seconds at equal cadence. `nicwatch serve` (5 s
    interval) and node_exporter (`--collector.ethtool`, and `--collector.ethtool
    --collector.netclass`, the fair superset) on the same 32 veths, each scraped every 5 s
    like Prometheus (OpenMetrics, gzip), one at a time, in rounds whose order rotates
    (pairwise A/B); nicwatch at a 1 s interval in the same rounds; medians and spread;
  * shorter intervals (0.5, 0.25, 0.1 s): CPU and skipped polls, for the fastest useful one;
  * the whole poll and the floor at the daemon's cadence, each after 5 s of sleep (pipeline.py
    paced), with the pages each touches and what this host charges for memory left idle;
  * the whole poll in process (pipeline.py) at 1, 8, 32 and 128 veths and on a simulated
    ConnectX host (nicwatch/demo/simulate.py), stage by stage, against the ioctl+decode floor;
  * what each --[no-]collector.NAME costs a poll on the realistic ConnectX host (pipeline.py
    collectors: its own stage, and the whole poll with it on and off, interleaved), the series
    per port there, and the cost growth of the signal set on the idle 32 veths: every source
    and consumer against the ethtool statistics alone (pipeline.py growth, interleaved);
  * CPU per scrape served from the cache, scrape latency with 4 concurrent clients, RSS
    warm and after 720 polls (an hour of 5 s polls, run at 0.1 s: the history fills by
    poll count), and the real hour (benchmarks/hour.py, run separately) if its result file
    is there.

Everything goes to benchmarks/results/latest.json; docs/performance.md and the README's
performance section are written from it by this script (--report re-renders them from the
JSON without measuring). --quick shortens every window for a smoke test and writes only
benchmarks/results/quick.json: its numbers are not the published ones.
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
SCRAPE_EVERY = 5.0  # Prometheus' scrape interval in the equal-cadence runs
FAST_INTERVALS = (0.5, 0.25, 0.1)
SCALE_PORTS, SCALE_QUEUES = 128, 16
SIM_PORTS = (4, 8, 30)
CONNECTX_PORTS = 10  # a DGX-class host: 8 compute ports and 2 storage/management ports
MANY_PAIRS = 1000  # 2,000 interfaces: veth pairs with both ends polled
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
DOC = HERE.parent / "docs" / "performance.md"
README = HERE.parent / "README.md"
README_BEGIN, README_END = "<!-- benchmark:begin -->", "<!-- benchmark:end -->"


def sh(*argv: str, stdin: str | None = None) -> str:
    return subprocess.run(argv, input=stdin, check=True, capture_output=True, text=True).stdout


class Namespace:
    """``ports`` veth interfaces (nwbv0..) with ``queues`` queues each; their peers live in a
    second namespace so this one holds only them and lo. No addresses: nothing is sent."""

    def __init__(self, ports: int = PORTS, queues: int = QUEUES, tag: str = "nwbench") -> None:
        token = secrets.token_hex(3)
        self.ns, self.peer = f"{tag}-{token}", f"{tag}peer-{token}"
        self.ports, self.queues = ports, queues
        self.ifaces = [f"nwbv{i}" for i in range(ports)]

    def __enter__(self) -> Self:
        try:
            sh("ip", "netns", "add", self.ns)
            sh("ip", "netns", "add", self.peer)
            for ns in (self.ns, self.peer):
                self.run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                         "net.ipv6.conf.default.disable_ipv6=1", ns=ns)
            q = f"numtxqueues {self.queues} numrxqueues {self.queues}"
            sh("ip", "-n", self.ns, "-batch", "-", stdin="".join(
                f"link add nwbv{i} {q} type veth peer name nwbp{i} netns {self.peer} {q}\n"
                f"link set nwbv{i} up\n" for i in range(self.ports)) + "link set lo up\n")
            sh("ip", "-n", self.peer, "-batch", "-",
               stdin="".join(f"link set nwbp{i} up\n" for i in range(self.ports)))
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


class Pairs(Namespace):
    """``pairs`` veth pairs with both ends inside the namespace (pv0a/pv0b, ...), one queue
    each: the 2,000-interface host. No addresses: nothing is sent."""

    def __init__(self, pairs: int = MANY_PAIRS) -> None:
        super().__init__(0, 1, tag="nwbmany")
        self.pairs = pairs

    def __enter__(self) -> Self:
        try:
            sh("ip", "netns", "add", self.ns)
            sh("ip", "netns", "add", self.peer)  # empty; deleted with it
            sh("ip", "-n", self.ns, "-batch", "-", stdin="".join(
                f"link add pv{i}a type veth peer name pv{i}b\nlink set pv{i}a up\n"
                f"link set pv{i}b up\n" for i in range(self.pairs)) + "link set lo up\n")
        except BaseException:
            self.__exit__()
            raise
        return self


def many_interfaces(logdir: Path, window: float, scrapes: int) -> dict:
    """`nicwatch serve` at 5 s on 2 x MANY_PAIRS veth interfaces: whole-process CPU over
    ``window`` s while scraped every 5 s as Prometheus does (OpenMetrics, gzip), RSS at the
    end, then ``scrapes`` sequential gzip scrapes for the latency (polls go on meanwhile)."""
    with Pairs() as ns:
        port = free_port()
        proc = ns.spawn(NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{port}",
                        "--interfaces.include=pv[0-9]+[ab]", "--interval=5s",
                        log=logdir / "nicwatch-many.log")
        try:
            ns.json("scrape.py", "polls", port, 3)
            out = scraped_window(ns, proc, port, window)
            out["rss_mb"] = proc.memory_info().rss / 2**20
            out["interfaces"] = 2 * ns.pairs
            out["scrape"] = ns.json("scrape.py", "burst", port, scrapes, PROMETHEUS_ACCEPT,
                                    "gzip")
            out["scrape"].pop("values", None)
            out["scrape_requests"] = scrapes
            out["text_bytes"] = ns.json("scrape.py", "burst", port, 1, "text/plain",
                                        "plain")["bytes"]
            out["load"] = os.getloadavg()[0]
        finally:
            stop(proc)
        # Where a poll of this host goes: the whole poll in process, stage by stage, with
        # the serving daemon stopped (pipeline.py veth, as for the 32 veths).
        names = [f"pv{i}{end}" for i in range(ns.pairs) for end in "ab"]
        out["pipeline"] = ns.json("pipeline.py", "veth", 3, len(names), *names)["rows"][-1]
        return out


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




def median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def spread(xs: list[float]) -> dict:
    return {"median": median(xs), "min": min(xs), "max": max(xs), "runs": xs}


def scrape_once(ns: Namespace, port: int) -> None:
    ns.run("curl", "-sf", "--compressed", "-o", "/dev/null", "-H",
           f"Accept: {PROMETHEUS_ACCEPT}", f"http://127.0.0.1:{port}/metrics")


def metric(ns: Namespace, port: int, name: str) -> float | None:
    return ns.json("scrape.py", "burst", port, 1, "text/plain", "plain", name)["values"][0]


def wait_ready(ns: Namespace, port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            ns.json("scrape.py", "burst", port, 1, "text/plain", "plain")
            return
        except subprocess.CalledProcessError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def scraped_window(ns: Namespace, proc: psutil.Process, port: int, window: float) -> dict:
    """CPU seconds of the whole process over ``window`` seconds while it is scraped every
    SCRAPE_EVERY seconds (the scraper, curl, is another process)."""
    c0, t0 = cpu_seconds(proc), time.monotonic()
    scrapes = 0
    while (elapsed := time.monotonic() - t0) < window:
        scrape_once(ns, port)
        scrapes += 1
        time.sleep(max(0.0, min(SCRAPE_EVERY - (time.monotonic() - t0 - (scrapes - 1)
                                                * SCRAPE_EVERY), window - elapsed)))
    elapsed = time.monotonic() - t0
    cpu = cpu_seconds(proc) - c0
    return {"cpu_s": cpu, "seconds": elapsed, "scrapes": scrapes,
            "percent": 100 * cpu / elapsed}


MEMBERS = {
    # name: (program, flags)
    "nicwatch 5s": ("nicwatch", ("--interval=5s",)),
    "node_exporter ethtool": ("node", ("--collector.ethtool",)),
    "node_exporter ethtool+netclass": ("node", ("--collector.ethtool", "--collector.netclass")),
    "nicwatch 1s": ("nicwatch", ("--interval=1s",)),
}


def run_member(ns: Namespace, logdir: Path, name: str, window: float) -> dict:
    program, flags = MEMBERS[name]
    if program == "nicwatch":
        d = Served(ns, logdir, name.replace(" ", "-"), *flags)
        proc, port = d.proc, d.port
    else:
        port = free_port()
        proc = ns.spawn(NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                        "--collector.disable-defaults", *flags,
                        log=logdir / f"{name.replace(' ', '-')}.log")
    try:
        if program == "nicwatch":
            d.wait_polls(2)
        else:
            wait_ready(ns, port)
            scrape_once(ns, port)  # warm: the first ethtool scrape reads the string sets
        out = scraped_window(ns, proc, port, window)
        out["rss_mb"] = proc.memory_info().rss / 2**20
        if program == "nicwatch":
            out["polls"] = metric(ns, port, "nicwatch_polls_total")
            out["skipped"] = metric(ns, port, "nicwatch_skipped_polls_total")
        return out
    finally:
        stop(proc)


def equal_cadence(ns: Namespace, logdir: Path, rounds: int, window: float) -> dict:
    """Each member once per round, one at a time; the order rotates and reverses between
    rounds, so each pair runs in both orders and drift on the shared machine spreads."""
    names = list(MEMBERS)
    runs: dict[str, list] = {n: [] for n in names}
    orders = []
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        if r % 2:
            order.reverse()
        orders.append(order)
        for name in order:
            print(f"  round {r + 1}/{rounds}: {name} ...", file=sys.stderr)
            runs[name].append(run_member(ns, logdir, name, window))
    out = {"window_s": window, "rounds": rounds, "orders": orders, "runs": runs,
           "cpu_percent": {n: spread([x["percent"] for x in runs[n]]) for n in names}}
    base = [x["cpu_s"] for x in runs["nicwatch 5s"]]
    for ref in ("node_exporter ethtool", "node_exporter ethtool+netclass"):
        out[f"ratio {ref}"] = spread([x["cpu_s"] / b
                                      for x, b in zip(runs[ref], base, strict=False)])
    return out


def fast_intervals(ns: Namespace, logdir: Path, window: float) -> list[dict]:
    out = []
    for interval in FAST_INTERVALS:
        d = Served(ns, logdir, f"fast-{interval:g}", f"--interval={interval:g}s")
        try:
            d.wait_polls(3)
            p0, s0 = metric(ns, d.port, "nicwatch_polls_total"), metric(
                ns, d.port, "nicwatch_skipped_polls_total")
            r = scraped_window(ns, d.proc, d.port, window)
            p1, s1 = metric(ns, d.port, "nicwatch_polls_total"), metric(
                ns, d.port, "nicwatch_skipped_polls_total")
            r.update(interval=interval, polls=p1 - p0, skipped=s1 - s0,
                     cpu_per_poll=r["cpu_s"] / max(1.0, p1 - p0))
            out.append(r)
        finally:
            stop(d.proc)
    return out


def cached_scrapes(ns: Namespace, logdir: Path, quick: bool) -> dict:
    """Served from the cache only (no poll after the first): CPU per scrape; and latency
    with 4 concurrent keep-alive clients while 5 s polls go on."""
    out: dict = {}
    d = Served(ns, logdir, "1h", "--interval=1h")
    try:
        d.wait_polls(1)
        per_scrape = {}
        for name, accept, gz in (("prometheus (openmetrics+gzip)", PROMETHEUS_ACCEPT, "gzip"),
                                 ("text", "text/plain", "plain")):
            ns.json("scrape.py", "burst", d.port, 5, accept, gz)  # build the cached variant
            c0 = cpu_seconds(d.proc)
            n = 100 if quick else 500
            r = ns.json("scrape.py", "burst", d.port, n, accept, gz)
            per_scrape[name] = {"cpu": (cpu_seconds(d.proc) - c0) / n, "p50": r["p50"],
                                "bytes": r["bytes"]}
        out["per_scrape"] = per_scrape
    finally:
        stop(d.proc)
    d = Served(ns, logdir, "latency", "--interval=5s")
    try:
        d.wait_polls(2)
        out["latency"] = ns.json("scrape.py", "latency", d.port, 4, 100 if quick else 400)
    finally:
        stop(d.proc)
    return out


def history_rss(ns: Namespace, logdir: Path, quick: bool) -> dict:
    """720 polls (an hour at 5 s) at a 0.1 s interval, the peak window scaled alike."""
    polls = 120 if quick else int(3600 / POLL_INTERVAL)
    scale = HISTORY_INTERVAL / POLL_INTERVAL
    d = Served(ns, logdir, "history", f"--interval={HISTORY_INTERVAL:g}s",
               f"--rates.peak-window={60 * scale:g}s")
    try:
        d.wait_polls(3)
        warm = d.rss_mb()
        d.wait_polls(polls + 3)
        return {"polls": polls, "rss_warm_mb": warm, "rss_mb": d.rss_mb()}
    finally:
        stop(d.proc)


def ensure_node_exporter() -> str | None:
    if subprocess.run(["which", NODE_EXPORTER], capture_output=True, check=False).returncode:
        print("installing prometheus-node-exporter (apt-get) ...", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                            "prometheus-node-exporter"], capture_output=True, text=True,
                           env=env, check=False)
        if r.returncode:
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)
            r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                                "prometheus-node-exporter"], capture_output=True, text=True,
                               env=env, check=False)
        if r.returncode:
            return f"apt-get install prometheus-node-exporter failed: {r.stderr.strip()[-200:]}"
    return None


def pipeline_veth(ns: Namespace, polls: int, counts: list[int]) -> dict:
    return ns.json("pipeline.py", "veth", polls, ",".join(map(str, counts)), *ns.ifaces)


def pipeline_paced(ns: Namespace, polls: int) -> dict:
    return ns.json("pipeline.py", "paced", polls, POLL_INTERVAL, *ns.ifaces)


def pipeline_connectx(polls: int, ports: int) -> dict:
    return json.loads(sh(sys.executable, str(HERE / "pipeline.py"), "connectx", str(polls),
                         str(ports)))


def pipeline_growth(ns: Namespace, polls: int) -> dict:
    """Every source and consumer against the ethtool statistics alone, on the idle veths."""
    return {**ns.json("pipeline.py", "growth", polls, *ns.ifaces), "queues": ns.queues}


def pipeline_collectors(polls: int, ports: int) -> dict:
    """What each --[no-]collector.NAME costs a poll on the realistic ConnectX host."""
    return json.loads(sh(sys.executable, str(HERE / "pipeline.py"), "collectors", str(polls),
                         str(ports)))


def pipeline_sim(polls: int, ports: int, raw: bool = False, files: bool = False) -> dict:
    """``files``: the simulation's tree read as files (as a fixture tree is), not through
    the live /sys's paths (benchmarks/livepaths.py)."""
    argv = [sys.executable, str(HERE / "pipeline.py"), "sim", str(polls), str(ports)]
    return json.loads(sh(*argv, *(["raw"] if raw else []), *(["files"] if files else [])))


def rdma_stage(rounds: int) -> dict:
    """The RDMA stage of the simulated 30-port ConnectX host (benchmarks/rdma.py)."""
    return json.loads(sh(sys.executable, str(HERE / "rdma.py"), str(rounds)))


def rxpath_stage(rounds: int) -> dict:
    """The receive-path source on the 256-CPU fixture host (benchmarks/rxpath.py)."""
    return json.loads(sh(sys.executable, str(HERE / "rxpath.py"), str(rounds)))


def git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                       text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                            "../src", "../benchmarks/*.py"], cwd=HERE,
                           capture_output=True, text=True, check=False).stdout.strip()
    return (r.stdout.strip() or "unknown") + ("+changes" if dirty else "")


# --------------------------------------------------------------------------- the report


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def ms(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x * 1e3:,.{digits}f}"


def times(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}x"


def pct(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}%"


def summarize(data: dict) -> dict:
    cad = data["cadence"]
    veth = {r["ports"]: r for r in data["veth"]["rows"] + data["veth128"]["rows"]}
    v32 = veth[PORTS]
    hour = data.get("hour") or {}
    node_runs = cad["runs"]["node_exporter ethtool"]
    node_scrape = median([r["cpu_s"] / r["scrapes"] for r in node_runs])
    nw_scrape = data["scrapes"]["per_scrape"]["prometheus (openmetrics+gzip)"]["cpu"]
    fast = [f for f in data["fast"] if not f["skipped"]]
    paced = data["paced"]
    return {
        "ratio": cad["ratio node_exporter ethtool"]["median"],
        "ratio_min": cad["ratio node_exporter ethtool"]["min"],
        "ratio_max": cad["ratio node_exporter ethtool"]["max"],
        "ratio_netclass": cad["ratio node_exporter ethtool+netclass"]["median"],
        "ratio_netclass_min": cad["ratio node_exporter ethtool+netclass"]["min"],
        "ratio_netclass_max": cad["ratio node_exporter ethtool+netclass"]["max"],
        "cpu_5s": cad["cpu_percent"]["nicwatch 5s"]["median"],
        "cpu_1s": cad["cpu_percent"]["nicwatch 1s"]["median"],
        "cpu_node": cad["cpu_percent"]["node_exporter ethtool"]["median"],
        "cpu_node_netclass": cad["cpu_percent"]["node_exporter ethtool+netclass"]["median"],
        "poll_cpu_32": v32["cpu"],
        "floor_32": v32["floor"]["ioctl_decode"],
        "bare_32": v32["floor"]["bare_ioctl"],
        "poll_vs_floor": ratio(v32["cpu"], v32["floor"]["ioctl_decode"]),
        "poll_vs_bare": ratio(v32["cpu"], v32["floor"]["bare_ioctl"]),
        "paced_poll": paced["poll_cpu"],
        "paced_floor": paced["floor_cpu"],
        "paced_ratio": ratio(paced["poll_cpu"], paced["floor_cpu"]),
        "idle_us_per_page": paced["idle_penalty"]["us_per_page_after_gap"],
        "rss_hour": hour.get("rss_mb") if hour.get("done") else None,
        "hour_commit": (hour.get("commit") if hour.get("done")
                        and hour.get("commit") != data.get("commit") else None),
        "rss_720": data["history"]["rss_mb"],
        "rss_warm": data["history"]["rss_warm_mb"],
        "node_scrape_cpu": node_scrape,
        "nicwatch_scrape_cpu": nw_scrape,
        "scrape_ratio": ratio(node_scrape, nw_scrape),
        "scrape_p50": max(v["p50"] for v in data["scrapes"]["latency"].values()),
        "fastest": fast[-1] if fast else None,
        "rdma": data.get("rdma"),  # absent in results from before benchmarks/rdma.py
        "rxpath": data.get("rxpath"),  # absent before benchmarks/rxpath.py joined the run
        "sim30_poll": data["sim"][-1]["cpu"] if data["sim"][-1]["ports"] == 30 else None,
        "connectx_poll": (data.get("connectx") or {}).get("cpu"),
        "many_cpu": (data.get("many") or {}).get("percent"),
        "many_rss": (data.get("many") or {}).get("rss_mb"),
        "many_p99": ((data.get("many") or {}).get("scrape") or {}).get("p99"),
        # absent in results from before #39's rows
        "growth": (data.get("growth") or {}).get("ratio"),
        "series_per_port": ((data.get("collectors") or {}).get("series_per_port")
                            or {}).get("median"),
    }


def target_rows(s: dict) -> list[tuple[str, str, str, bool | None]]:
    """Targets of issue #33 (the last five rows) are None (not measured) in a run from
    before they existed."""
    rss = s["rss_hour"] if s["rss_hour"] is not None else s["rss_720"]
    rss_how = "an hour at defaults" if s["rss_hour"] is not None else "720 polls at 0.1 s"
    return [
        ("whole-process CPU at equal cadence, node_exporter `--collector.ethtool` / nicwatch "
         "(5 s, 32 veth x 64 queues)", ">= 20x (aim 50x)",
         f"{times(s['ratio'])} (runs {times(s['ratio_min'])}-{times(s['ratio_max'])})",
         s["ratio"] >= 20),
        ("the same with `--collector.netclass` too (the fair superset)", ">= 20x",
         f"{times(s['ratio_netclass'])} (runs {times(s['ratio_netclass_min'])}-"
         f"{times(s['ratio_netclass_max'])})", s["ratio_netclass"] >= 20),
        ("whole daemon poll, every source, vs ioctl + decode floor (32 veth), polls back "
         "to back", "<= 10x",
         f"{times(s['poll_vs_floor'])} ({ms(s['poll_cpu_32'])} vs {ms(s['floor_32'], 3)} ms)",
         s["poll_vs_floor"] <= 10),
        ("the same, each after 5 s idle (the daemon's cadence)", "<= 10x",
         f"{times(s['paced_ratio'])} ({ms(s['paced_poll'])} vs {ms(s['paced_floor'], 3)} ms)",
         s["paced_ratio"] <= 10),
        ("daemon CPU at `--interval 1s` (32 veth x 64 queues)", "< 1% of a core",
         pct(s["cpu_1s"]), s["cpu_1s"] < 1),
        (f"RSS after {rss_how}" + (f" (nicwatch {s['hour_commit']})"
                                   if s.get("hour_commit") else ""),
         "<= 60 MB", f"{rss:.1f} MB", rss <= 60),
        ("scrape p50 from cache, worst format, 4 concurrent clients", "< 5 ms",
         f"{ms(s['scrape_p50'])} ms", s["scrape_p50"] * 1e3 < 5),
        *([] if not s.get("rdma") else [
            ("RDMA stage per poll, simulated 30-port ConnectX host through netlink "
             "(benchmarks/rdma.py)", f"< {s['rdma']['target_ms']:g} ms",
             f"{s['rdma']['netlink_ms']:.2f} ms (sysfs only {s['rdma']['sysfs_ms']:.2f} ms)",
             s["rdma"]["netlink_ms"] < s["rdma"]["target_ms"])]),
        *([] if not s.get("rxpath") else [
            ("receive-path source per poll, 256-CPU host with every count moving, "
             "/sys/kernel/irq (benchmarks/rxpath.py)", "< 2 ms",
             f"{s['rxpath']['sys_kernel_irq']['busy_ms']:.2f} ms (steady "
             f"{s['rxpath']['sys_kernel_irq']['steady_ms']:.2f} ms; /proc/interrupts only "
             f"{s['rxpath']['proc_only']['busy_ms']:.2f} ms)",
             s["rxpath"]["sys_kernel_irq"]["busy_ms"] < 2.0)]),
        ("whole poll, simulated 30-port ConnectX host (the demo's 167 names a port; "
         "PCIe AER every poll as at 5 s)", "< 20 ms",
         f"{ms(s.get('sim30_poll'))} ms", _below(s.get("sim30_poll"), 0.020)),
        (f"{2 * MANY_PAIRS:,} interfaces ({MANY_PAIRS:,} veth pairs): whole-process CPU at 5 s",
         "< 5% of a core", pct(s.get("many_cpu")), _below(s.get("many_cpu"), 5)),
        (f"{2 * MANY_PAIRS:,} interfaces: RSS", "< 150 MB",
         "-" if s.get("many_rss") is None else f"{s['many_rss']:.1f} MB",
         _below(s.get("many_rss"), 150)),
        (f"{2 * MANY_PAIRS:,} interfaces: scrape p99, OpenMetrics + gzip", "< 50 ms",
         f"{ms(s.get('many_p99'))} ms", _below(s.get("many_p99"), 0.050)),
        (f"realistic ConnectX host: {CONNECTX_PORTS} ports x 4,912 mlx5 statistics, RDMA "
         "counters, PCIe tree (benchmarks/connectx.py): whole poll", "timed (no goal)",
         f"{ms(s.get('connectx_poll'))} ms", None),
        *([] if s.get("growth") is None else [
            (f"every source and consumer / the ethtool statistics alone, idle {PORTS} veth x "
             f"{QUEUES} queues, whole poll CPU (pipeline.py growth)", "<= 1.3x",
             times(s["growth"], 2), s["growth"] <= 1.3)]),
        *([] if s.get("series_per_port") is None else [
            ("series per port at defaults with the module (realistic ConnectX host: 63 "
             "channels, RDMA device, module)", "<= 300", f"{s['series_per_port']:,.0f}",
             s["series_per_port"] <= 300)]),
    ]


def _below(x: float | None, limit: float) -> bool | None:
    return None if x is None else x < limit


def stage_table(stages: dict) -> list[str]:
    total = sum(stages.values())
    lines = ["| stage | CPU ms | share of the stages |", "|---|---|---|"]
    for name, v in sorted(stages.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {ms(v)} | {v / total:.0%} |")
    return lines


def results(data: dict) -> list[str]:
    s = data["summary"]
    cad = data["cadence"]
    ne = data["node_version"]
    lines = [f"Measured {data['date']} on {data['machine']} (kernel {data['kernel']}, Python "
             f"{data['python']}, {data['cpus']} CPUs), nicwatch {data['commit']}, {ne}. "
             f"Load average {data['load_start']:.1f} at the start, {data['load_end']:.1f} at "
             "the end" + (": other work shared the 2 cores during the run."
                          if max(data["load_start"], data["load_end"]) >= 1 else
                          ": nothing else ran on the 2 cores.") +
             (" **--quick: a smoke test, not the published numbers.**" if data["quick"] else ""),
             "", "### Targets", "", "| target | goal | measured | met |", "|---|---|---|---|"]
    for label, goal, measured, met in target_rows(s):
        verdict = "-" if met is None else "yes" if met else "**no**"
        lines.append(f"| {label} | {goal} | {measured} | {verdict} |")
    lines += ["", f"### Whole-process CPU at equal cadence ({PORTS} veth x {QUEUES} queues, "
              f"scraped every {SCRAPE_EVERY:g} s, {cad['window_s']:g} s per run, "
              f"{cad['rounds']} round{'s' if cad['rounds'] > 1 else ''})", "",
              "| process | CPU, % of one core: median | min - max | CPU s per run | "
              "RSS MB |", "|---|---|---|---|---|"]
    for name in MEMBERS:
        c = cad["cpu_percent"][name]
        runs = cad["runs"][name]
        lines.append(f"| {name} | {pct(c['median'], 3)} | {pct(c['min'], 3)} - "
                     f"{pct(c['max'], 3)} | "
                     f"{', '.join(format(r['cpu_s'], '.3f') for r in runs)} | "
                     f"{median([r['rss_mb'] for r in runs]):.1f} |")
    lines += ["", "Run order per round (rotated, reversed every other round): " + "; ".join(
        " > ".join(o) for o in cad["orders"]) + ".", ""]
    lines += ["### Shorter intervals (32 veth x 64 queues, scraped every 5 s)", "",
              "| interval | CPU, % of a core | polls | skipped | CPU per poll ms |",
              "|---|---|---|---|---|"]
    one = cad["runs"]["nicwatch 1s"]
    lines.append(f"| 1 s (median of the rounds above) | {pct(s['cpu_1s'], 2)} | "
                 f"{median([r['polls'] for r in one]):g} (whole run) | "
                 f"{median([r['skipped'] for r in one]):g} | - |")
    for f in data["fast"]:
        lines.append(f"| {f['interval']:g} s | {pct(f['percent'], 2)} | {f['polls']:g} | "
                     f"{f['skipped']:g} | {ms(f['cpu_per_poll'])} |")
    lines += ["", f"### Whole poll in process vs the floor (median CPU of {data['polls']} "
              "polls after two warm-up polls)", "",
              "| host | interfaces | driver counters | series | poll CPU ms (min - max) | "
              "poll wall ms | CPU us per counter | ioctl+decode floor ms | poll / floor |",
              "|---|---|---|---|---|---|---|---|---|"]
    for label, rows in ((f"veth x {QUEUES} queues", data["veth"]["rows"]),
                        (f"veth x {SCALE_QUEUES} queues", data["veth128"]["rows"])):
        for r in rows:
            lines.append(
                f"| {label} | {r['ports']} | {r['driver_counters']:,} | {r['series']:,} | "
                f"{ms(r['cpu'])} ({ms(r['cpu_min'])} - {ms(r['cpu_max'])}) | {ms(r['wall'])} | "
                f"{r['cpu'] / r['driver_counters'] * 1e6:.2f} | "
                f"{ms(r['floor']['ioctl_decode'], 3)} | "
                f"{times(ratio(r['cpu'], r['floor']['ioctl_decode']))} |")
    for r in data["sim"]:
        lines.append(
            f"| simulated ConnectX host | {r['ports']} | {r['driver_counters']:,} | "
            f"{r['series']:,} | {ms(r['cpu'])} ({ms(r['cpu_min'])} - {ms(r['cpu_max'])}) | "
            f"{ms(r['wall'])} | {r['cpu'] / r['driver_counters'] * 1e6:.2f} | - | - |")
    if (r := data.get("connectx")):
        lines.append(
            f"| realistic ConnectX host (4,912 mlx5 names a port) | {r['ports']} | "
            f"{r['driver_counters']:,} | {r['series']:,} | {ms(r['cpu'])} ({ms(r['cpu_min'])} "
            f"- {ms(r['cpu_max'])}) | {ms(r['wall'])} | "
            f"{r['cpu'] / r['driver_counters'] * 1e6:.2f} | - | - |")
    pc = data["paced"]
    ip = pc["idle_penalty"]
    lines += ["", f"### At the daemon's cadence ({pc['interfaces']} veth x {QUEUES} queues, "
              f"each measured after {pc['gap']:g} s of sleep, {pc['polls']} of each, "
              "alternating)", "",
              "| measure | CPU ms: median (min - max) | memory touched |", "|---|---|---|",
              f"| whole daemon poll | {ms(pc['poll_cpu'])} ({ms(pc['poll_cpu_min'])} - "
              f"{ms(pc['poll_cpu_max'])}) | {pc['poll_touched_kb'] / 1024:.1f} MiB |",
              f"| ioctl + decode floor | {ms(pc['floor_cpu'], 3)} ({ms(pc['floor_cpu_min'], 3)}"
              f" - {ms(pc['floor_cpu_max'], 3)}) | {pc['floor_touched_kb'] / 1024:.1f} MiB |",
              f"| poll / floor | {times(s['paced_ratio'])} | |",
              f"| this host: one byte written per page of {ip['mib']} MiB, back to back / after "
              f"{pc['gap']:g} s idle | {ms(ip['hot'])} / {ms(ip['after_gap'])} "
              f"({ip['us_per_page_after_gap']:.1f} us per page) | {ip['mib']} MiB |"]
    v32 = next(r for r in data["veth"]["rows"] if r["ports"] == PORTS)
    lines += ["", f"Stages of the {PORTS}-veth poll, each timed on its own (CPU, median):", ""]
    lines += stage_table(v32["stages"])
    sim = data["sim"][-1]
    lines += ["", f"Stages of the simulated {sim['ports']}-port ConnectX host (its sysfs "
              "tree under --path.sysfs; the interface list and the RDMA counters read as on "
              "the live /sys, through the rtnetlink dump and RDMA netlink replayed in the "
              "kernel's layout, benchmarks/livepaths.py; ioctl, ethtool netlink and DCB "
              "answers come from the simulation's Python; consumers timed inside the "
              "measured polls):", ""]
    lines += stage_table(sim["stages"])
    if (sf := data.get("sim_files")):
        lines += ["", f"The same host read as files of the simulation's tree (what a fixture "
                  f"tree gets): whole poll {ms(sf['cpu'])} ms ({ms(sf['cpu_min'])} - "
                  f"{ms(sf['cpu_max'])}); "
                  + ", ".join(f"{k} {ms(v)} ms" for k, v in sf["stages"].items()
                              if k.startswith(("select", "RDMA"))) + "."]
    if (cx := data.get("connectx")):
        lines += ["", f"Stages of the realistic {cx['ports']}-port ConnectX host "
                  "(benchmarks/connectx.py: the same simulation, each port with a real mlx5 "
                  "port's 4,912 statistic names at 63 channels; \"ethtool ioctls\" includes "
                  f"the simulation's own {ms(cx.get('simulated_ioctl'))} ms of Python "
                  "building the values):", ""]
        lines += stage_table(cx["stages"])
    if (co := data.get("collectors")):
        lines += ["", f"### What each collector costs a poll (realistic {co['ports']}-port "
                  "ConnectX host, every source on, module EEPROMs and VFs too; "
                  "benchmarks/pipeline.py collectors)", "",
                  "Own: the sources' reads (wall, nicwatch_source_duration_seconds) and the "
                  "consumers' observe and families (CPU), medians. Whole poll: CPU with every "
                  "collector on minus CPU with this one off (`--no-collector.NAME`), polls of "
                  f"the two daemons interleaved, medians of {co['polls']} each: what its series "
                  "cost downstream too (normalize, track, history, render); within the "
                  "run's noise when small.", "",
                  "| collector | sources | consumers | own ms | whole poll ms (with / "
                  "without) |", "|---|---|---|---|---|"]
        for name, c in co["collectors"].items():
            lines.append(f"| `{name}` | {', '.join(c['sources']) or '-'} | "
                         f"{', '.join(c['consumers']) or '-'} | {ms(c['own'])} | "
                         f"{ms(c['whole'])} ({ms(c['with'])} / {ms(c['without'])}) |")
        spp = co["series_per_port"]
        lines += ["", f"Series per port at these settings: median {spp['median']:,.0f}, max "
                  f"{spp['max']:,} ({spp['ports']} ports; {co['series']:,} in all)."]
    if (gr := data.get("growth")):
        lines += ["", f"### The signal set's cost on an idle host ({gr['interfaces']} veth x "
                  f"{gr.get('queues', QUEUES)} queues, {gr['polls']} polls of each daemon, "
                  "interleaved)", "",
                  "| daemon | sources | poll CPU ms: median (min - max) | series per "
                  "interface |", "|---|---|---|---|",
                  f"| every source and consumer | {len(gr['sources_every'])} | "
                  f"{ms(gr['every'])} ({ms(gr['every_min'])} - {ms(gr['every_max'])}) | "
                  f"{gr['series_per_port_every']['median']:,.0f} |",
                  "| the ethtool statistics alone (`--collector.disable-defaults "
                  f"--collector.ethtool-ioctl`) | 1 | {ms(gr['statistics'])} "
                  f"({ms(gr['statistics_min'])} - {ms(gr['statistics_max'])}) | "
                  f"{gr['series_per_port_statistics']['median']:,.0f} |",
                  f"| ratio | | {times(gr['ratio'], 2)} | |"]
    if (m := data.get("many")):
        lines += ["", f"### {m['interfaces']:,} interfaces ({m['interfaces'] // 2:,} veth pairs, "
                  "both ends polled, one queue each)", "",
                  "| measure | value |", "|---|---|",
                  f"| whole-process CPU at 5 s, scraped every 5 s ({m['seconds']:.0f} s) | "
                  f"{pct(m['percent'])} of a core ({m['cpu_s']:.2f} s) |",
                  f"| RSS | {m['rss_mb']:.1f} MB |",
                  f"| OpenMetrics + gzip scrape, {m['scrape_requests']} sequential | p50 "
                  f"{ms(m['scrape']['p50'])} ms, p99 {ms(m['scrape']['p99'])} "
                  f"ms ({m['scrape']['bytes']:,} bytes; text {m['text_bytes']:,} bytes) |",
                  f"| load average at the end | {m['load']:.1f} |"]
        if (mp := m.get("pipeline")):
            lines += ["", f"Stages of one poll of the {mp['ports']:,} interfaces in process "
                      f"(pipeline.py veth, the daemon stopped): whole poll {ms(mp['cpu'])} ms "
                      f"CPU ({ms(mp['cpu_min'])} - {ms(mp['cpu_max'])}), {mp['series']:,} "
                      f"series, ioctl + decode floor {ms(mp['floor']['ioctl_decode'])} ms:", ""]
            lines += stage_table(mp["stages"])
    lines += ["", f"Statistic names re-read during measured polls: {v32['names_reread']}; "
              f"ethtool netlink requests per poll: {v32['netlink_requests_per_poll']:g} "
              "(dumps, the same at 1 and 32 ports); rtnetlink: one RTM_GETLINK dump per poll."]
    sc = data["scrapes"]
    lines += ["", "### Scrapes", "", "| measure | value |", "|---|---|"]
    for name, r in sc["per_scrape"].items():
        lines.append(f"| CPU per scrape from cache, {name} | {ms(r['cpu'], 3)} ms "
                     f"({r['bytes']:,} bytes, p50 {ms(r['p50'])} ms) |")
    lines.append(f"| node_exporter `--collector.ethtool`, CPU per scrape (equal-cadence runs) "
                 f"| {ms(s['node_scrape_cpu'])} ms: {times(s['scrape_ratio'], 0)} a cached "
                 "nicwatch scrape |")
    for name, r in sc["latency"].items():
        lines.append(f"| {name}, 4 concurrent clients, {r['requests']} requests | p50 "
                     f"{ms(r['p50'])} ms, p99 {ms(r['p99'])} ms, max {ms(r['max'])} ms "
                     f"({r['bytes']:,} bytes) |")
    fork = data["veth"]["ethtool_fork"]
    lines.append(f"| `ethtool -S` forked for the {PORTS} interfaces | {ms(fork['wall'])} ms "
                 f"wall, {ms(fork['cpu'])} ms CPU with the children |")
    h, hour = data["history"], data.get("hour")
    lines += ["", "### Memory", "", "| measure | RSS |", "|---|---|",
              f"| `nicwatch serve` after warm-up | {h['rss_warm_mb']:.1f} MB |",
              f"| after {h['polls']} polls at 0.1 s (an hour of 5 s polls) | "
              f"{h['rss_mb']:.1f} MB |"]
    if hour:
        last = hour["samples"][-1]
        state = "done" if hour.get("done") else f"still running, {last['t'] / 60:.0f} min in"
        lines.append(f"| real hour at defaults (benchmarks/hour.py, started {hour['started']}, "
                     f"nicwatch {hour['commit']}, {state}) | {last['rss_mb']:.1f} MB after "
                     f"{last['polls']:g} polls; "
                     f"CPU {100 * last['cpu_s'] / max(1, last['t']):.2f}% |")
    g = data["sim_raw"]["gzip"]
    lines += ["", "### gzip levels (CPU ms to compress one text exposition, compressed bytes)",
              "", "| exposition | raw bytes | " + " | ".join(
                  f"level {x['level']}" for x in g["levels"]) + " |",
              "|---|---|" + "---|" * len(g["levels"])]
    for name, gz in ((f"veth x{PORTS}", data["veth"]["gzip"]),
                     (f"simulated ConnectX x{data['sim_raw']['ports']}, raw families", g)):
        lines.append(f"| {name} | {gz['raw_bytes']:,} | " + " | ".join(
            f"{ms(x['cpu'])} ms, {x['bytes']:,} B" for x in gz["levels"]) + " |")
    return lines


# What would make each stage cheaper, by stage label (prefix): the levers the prose names for
# the largest stages of a missed target. Measured reasons come from the run's stage tables.
LEVERS = (
    ("diagnosis", "a verdict is already built only where a signature holds, and an interface "
                  "whose window moved nothing and held nothing is not evaluated again; what "
                  "is left is each moving interface's 30 s window, its steps re-summed and "
                  "every quantity evaluated each poll: running window sums are its lever "
                  "(evidence made only for the verdicts built was measured and gained "
                  "nothing)"),
    ("receive path (source)", "its layout is read every 30 s, the affinities every 300 s, the "
                              "count files kept open; what is left is one per_cpu_count file "
                              "per interrupt and softnet_stat each poll"),
    ("receive path (consumer)", "the per-queue shares computed only for interfaces whose "
                                "queues moved"),
    ("ethtool ioctls", "on a real port one GSTATS ioctl and its decode; here mostly the "
                       "simulation's own Python building the values"),
    ("ethtool netlink", "the simulation's answers, built in Python each poll"),
    ("DCB", "the simulation's answers, built in Python each poll"),
    ("normalize", "values as arrays per (driver, stat-set generation) from the ioctl buffer "
                  "through normalize, the tracker and the flight recorder, instead of an "
                  "object per series"),
    ("track", "the same arrays: one vectorised delta per interface"),
    ("flight recorder", "the same arrays, packed per interface without a record per series"),
    ("select", "the link list: one rtnetlink dump, its parse a Python walk over ~50 "
               "attributes per link"),
    ("render", "only lines whose value changed are re-rendered already; the rest is per "
               "series"),
    ("sysfs_hwmon", "hwmon files kept open and re-read with pread, as the RDMA source does"),
    ("PCIe AER", "AER counts and power states from files kept open"),
    ("RDMA", "RDMA netlink already: one batch for every port"),
)


# The same stages on a host the kernel answers for (the veths): not the simulation's Python.
KERNEL_LEVERS = (
    ("ethtool ioctls", "one GSTATS ioctl per interface and its decode"),
    ("ethtool netlink", "five dumps a poll (pause, FEC, statistics, link state, link "
                        "modes; rings and channels only when a notification, a link change "
                        "or 60 s asks), each reply parsed in Python; the select stage dumps "
                        "the link modes a second time, for speed and duplex"),
    ("DCB", "one RTM_GETDCB per interface"),
)


def _lever(stage: str, kernel: bool = False) -> str | None:
    return next((text for prefix, text in (*(KERNEL_LEVERS if kernel else ()), *LEVERS)
                 if stage.startswith(prefix)), None)


def _per_poll(stages: dict) -> dict:
    """The stages a poll pays at 5 s: no "cached" variant, no once-a-minute read."""
    return {k: v for k, v in stages.items() if "cached" not in k and "read whole" not in k}


def _top_with_levers(stages: dict, n: int, kernel: bool = False) -> str:
    top = sorted(_per_poll(stages).items(), key=lambda kv: -kv[1])[:n]
    return "; ".join(f"{k} {ms(v)} ms" + (f" ({lever})" if (lever := _lever(k, kernel))
                                          else "") for k, v in top)


RXPATH_EVERY = 30.0  # collect.RXPATH_REFRESH: the receive path's layout read

SERIES_STAGES = ("normalize", "track", "flight recorder", "render (OpenMetrics)",
                 "gzip level 1")


def _third_wave(v32: dict) -> str:
    """What the consumers of the receive path, link physics and diagnosis, and the series
    per receive queue, add to the 32-veth poll, from its stage table."""
    st = _per_poll(v32["stages"])
    added = {k: v for k, v in st.items() if k.startswith(("diagnosis", "receive path",
                                                          "link physics"))}
    layout = next((v for k, v in v32["stages"].items() if "layout read" in k), None)
    queues = dict(v32.get("largest_families") or []).get("nic_rx_queue_packets_total")
    if not added:
        return ""
    return ("The stages the receive path, link physics and diagnosis added to the poll are "
            + ", ".join(f"{k} {ms(v)} ms" for k, v in sorted(added.items(),
                                                            key=lambda kv: -kv[1]))
            + (f", and packets per receive queue are {queues:,} of the {v32['series']:,} "
               "series (one per queue of each veth's 64), which normalize, track, the "
               "flight recorder and render each pay for. " if queues else ". ")
            + (f"Every {RXPATH_EVERY:g} s the receive path also reads its layout (each "
               f"queue's RPS mask, the interrupt lists): {ms(layout)} ms here, "
               f"{ms(layout * POLL_INTERVAL / RXPATH_EVERY)} ms a poll on average at "
               f"{POLL_INTERVAL:g} s. " if layout else ""))


def hosts_reading(data: dict) -> list[str]:
    """Targets 1, 2 and 5 of issue #33: met or missed, by how much, why (the stage tables
    of this run) and the next levers."""
    s = data["summary"]
    out: list[str] = []
    sim = data["sim"][-1]
    if s.get("sim30_poll") is not None:
        per_series = sum(v for k, v in sim["stages"].items() if k in SERIES_STAGES)
        sf = data.get("sim_files")
        out += [
            f"**The simulated {sim['ports']}-port ConnectX host.** Its whole poll costs "
            f"{ms(s['sim30_poll'])} ms of CPU for {sim['interfaces']} interfaces and "
            f"{sim['series']:,} series"
            + (" (target < 20 ms: met)." if s["sim30_poll"] < 0.020 else
               f" (target < 20 ms: **missed by {times(s['sim30_poll'] / 0.020)}**).")
            + (f" Read as files of the simulation's tree instead of through the live /sys's "
               f"paths it costs {ms(sf['cpu'])} ms." if sf else "")
            + " Where it goes, the largest stages of the table above with the lever each "
            f"has: {_top_with_levers(sim['stages'], 6)}. The per-series stages ("
            + ", ".join(SERIES_STAGES) + f") alone take {ms(per_series)} ms, "
            f"{per_series / sim['series'] * 1e6:.2f} us per series; 20 ms for the whole poll "
            f"leaves {0.020 / sim['series'] * 1e6:.2f} us per series for everything, which "
            "an object per series in Python does not reach: after the stage levers above, "
            "the next is the arrays per stat set. The simulation's own Python building the "
            f"statistics costs {ms(sim.get('simulated_ioctl'))} ms timed alone (it runs "
            "inside the ethtool ioctls stage), which a real host does not pay.",
            "",
        ]
    if (cx := data.get("connectx")):
        out += [
            f"**The realistic ConnectX host** ({cx['ports']} ports, 4,912 mlx5 statistics "
            f"each, {cx['driver_counters']:,} driver counters, {cx['series']:,} series; no "
            f"target, timed): its whole poll costs {ms(cx['cpu'])} ms "
            f"({ms(cx['cpu_min'])} - {ms(cx['cpu_max'])}), "
            f"{cx['cpu'] / cx['driver_counters'] * 1e6:.2f} us per driver counter; "
            f"{ms(cx.get('simulated_ioctl'))} ms of it is the simulation building the "
            f"values. Largest stages: {_top_with_levers(cx['stages'], 4)}.",
            "",
        ]
    if (m := data.get("many")):
        mp = m.get("pipeline") or {}
        polls = m["seconds"] / POLL_INTERVAL
        per_iface = m["cpu_s"] / polls / m["interfaces"] * 1e6
        out += [
            f"**{m['interfaces']:,} interfaces.** At 5 s, scraped every 5 s, the daemon "
            f"uses {pct(m['percent'])} of a core"
            + (" (target < 5%: met)" if m["percent"] < 5 else
               f" (target < 5%: **missed by {times(m['percent'] / 5)}**)")
            + f", about {per_iface:.0f} us of CPU per interface and poll; RSS "
            f"{m['rss_mb']:.1f} MB"
            + (" (target < 150 MB: met)" if m["rss_mb"] < 150 else
               f" (target < 150 MB: **missed by {m['rss_mb'] - 150:.0f} MB**)")
            + f", about {(m['rss_mb'] - s['rss_warm']) * 1024 / m['interfaces']:.0f} KB per "
            f"interface above the 32-veth daemon's {s['rss_warm']:.1f} MB; the OpenMetrics "
            f"+ gzip scrape p99 {ms(m['scrape']['p99'])} ms"
            + (" (target < 50 ms: met)." if m["scrape"]["p99"] < 0.050 else
               " (target < 50 ms: **missed**).")
            + (f" One poll in process costs {ms(mp['cpu'])} ms "
               f"({mp['cpu'] / mp['ports'] * 1e6:.0f} us per interface) against an ioctl + "
               f"decode floor of {ms(mp['floor']['ioctl_decode'])} ms; its largest stages: "
               f"{_top_with_levers(mp['stages'], 5, kernel=True)}. No stage alone gives the "
               f"{times(m['percent'] / 5)}: the work is spread over every interface in "
               "every stage. The serving daemon pays more a poll than this back-to-back "
               "figure (see \"The daemon against the poll in process\" below): work due on "
               "a cadence back-to-back polls never reach, the young collection after each "
               "poll, and interfaces that are not idle. The next levers are an interface "
               "skipped whole in every stage when its inputs did not change, then the arrays "
               "per stat set; for the RSS, one cache entry per interface in the renderer "
               "instead of a key per series." if mp else ""),
            "",
        ]
    return out


def reading(data: dict) -> list[str]:
    """The prose, from the same numbers."""
    s = data["summary"]
    v32 = next(r for r in data["veth"]["rows"] if r["ports"] == PORTS)
    # A 5 s poll re-reads what the "cached" rows reuse (polls within 5 s): each cost once.
    st = _per_poll(v32["stages"])
    top = sorted(st.items(), key=lambda kv: -kv[1])
    total = sum(st.values())
    kernel = sum(v for k, v in st.items() if k.startswith(("select", "ethtool", "DCB", "PCIe",
                                                            "RDMA")))
    fastest = s["fastest"]
    out = [
        f"**Headline.** At the same cadence on the same {PORTS} interfaces, node_exporter's "
        f"ethtool collector spends {pct(s['cpu_node'])} of a core and nicwatch "
        f"{pct(s['cpu_5s'], 3)}: **{times(s['ratio'])} less CPU** (runs "
        f"{times(s['ratio_min'])}-{times(s['ratio_max'])}); with netclass as well "
        f"({pct(s['cpu_node_netclass'])}) {times(s['ratio_netclass'])}. nicwatch polls every "
        "5 s whether scraped or not, so this is what a user pays: the whole process, poll, "
        "render, history and HTTP included. Served from the cache, one scrape costs nicwatch "
        f"{ms(s['nicwatch_scrape_cpu'], 3)} ms of CPU against node_exporter's "
        f"{ms(s['node_scrape_cpu'])} ms ({times(s['scrape_ratio'], 0)}): the secondary figure, "
        "cheapest for nicwatch and not what a user pays. "
        + ("The 20x target is met." if s["ratio"] >= 20 else
           f"**The 20x target is missed.** Per 5 s nicwatch spends "
           f"{s['cpu_5s'] / 100 * POLL_INTERVAL * 1e3:.1f} ms of CPU in all. Its poll costs "
           f"{ms(s['poll_cpu_32'])} ms back to back, but {ms(s['paced_poll'])} ms after "
           f"{POLL_INTERVAL:g} s idle, as the daemon runs it (paragraph after next): that is "
           "where the process's CPU goes, not scrapes or HTTP. 20x below node_exporter's "
           f"{ms(s['node_scrape_cpu'])} ms per scrape leaves "
           f"{s['node_scrape_cpu'] / 20 * 1e3:.1f} ms per interval for everything, and on "
           f"this host reading the counters alone after {POLL_INTERVAL:g} s idle (the ioctl "
           f"+ decode floor) costs {ms(s['paced_floor'])} ms. "
           + ("So no poll that reads these counters from Python can meet it on this host. "
              if s["paced_floor"] >= 0.75 * s["node_scrape_cpu"] / 20 else "")
           + "What moves the ratio is a poll that touches less memory (the levers below); "
           "on a host without this price on idle memory the back-to-back figures apply."),
        "",
        f"**The poll against the floor.** The daemon's whole poll on {PORTS} veths costs "
        f"{ms(s['poll_cpu_32'])} ms of CPU, {times(s['poll_vs_floor'])} the "
        f"{ms(s['floor_32'], 3)} ms it takes to fetch and decode the same "
        f"{v32['driver_counters']:,} counters "
        f"with bare ioctls ({times(s['poll_vs_bare'])} the undecoded ioctls), with every source "
        "the daemon runs in it (ethtool ioctls and netlink, the rtnetlink link dump, DCB, "
        "sysfs, PCIe, RDMA). The kernel-facing stages together take "
        f"{ms(kernel)} ms ({kernel / total:.0%} of the stages); the largest stages are "
        + ", ".join(f"{k} {ms(v)} ms" for k, v in top[:4]) + ". "
        + ("The 10x target is met." if s["poll_vs_floor"] <= 10 else
           f"10x is out of reach while each of the {v32['series']:,} series and "
           f"{v32['interfaces']} interfaces costs microseconds of Python in normalize, "
           "track, history and render (plans are compiled once per stat set, unchanged "
           "lines and history values are reused, not rebuilt): those stages alone are "
           f"{times(ratio(total - kernel, s['floor_32']))} the floor. "
           + _third_wave(v32) + "The next levers are "
           "the rtnetlink link parse (a walk over ~50 attributes per link in Python), the "
           "flight recorder packing each interface's value arrays without a record per "
           "series, and carrying values as arrays per (driver, stat-set generation) from "
           "the ioctl buffer through normalize and tracker (one vectorised delta per "
           "interface instead of an object per series). Driver info, the permanent "
           "address and unsupported calls are already asked for once a minute, speed and "
           "duplex come from one ethtool netlink dump. Within 10x of a floor this low "
           "the whole poll would have to cost about "
           f"{ms(10 * s['floor_32'])} ms, which needs the per-series path compiled."),
        "",
        f"**At the daemon's cadence.** Back to back, a poll finds its memory in the caches; "
        f"the daemon finds it after {POLL_INTERVAL:g} s of sleep. Timed that way, alternating, "
        f"the whole poll costs {ms(s['paced_poll'])} ms and the floor "
        f"{ms(s['paced_floor'], 3)} ms: {times(s['paced_ratio'])}"
        + (" (target <= 10x: met at the cadence the daemon runs, missed back to back)"
           if s["paced_ratio"] <= 10 < s["poll_vs_floor"] else
           " (target <= 10x: met)" if s["paced_ratio"] <= 10 else " (target <= 10x: missed)")
        + f". The poll touches {data['paced']['poll_touched_kb'] / 1024:.1f} MiB of the "
        f"process's memory, the floor {data['paced']['floor_touched_kb'] / 1024:.1f} MiB "
        "(the interpreter, the socket, the buffers); both also touch kernel memory (each "
        "veth's 64 queue structures) that this count cannot see. This host charges "
        f"{s['idle_us_per_page']:.1f} us per page first written after {POLL_INTERVAL:g} s "
        f"idle ({ms(data['paced']['idle_penalty']['hot'])} ms back to back, "
        f"{ms(data['paced']['idle_penalty']['after_gap'])} ms after the pause, for "
        f"{data['paced']['idle_penalty']['mib']} MiB), a cost that changes from minute to "
        "minute with the host's other load and that node_exporter pays as well; it is why "
        "the equal-cadence figures spread as they do. At this cadence the lever is the "
        "memory a poll touches, not only its instructions.",
        "",
        f"**Sub-second polling.** At `--interval 1s` the daemon uses {pct(s['cpu_1s'])} of "
        "a core on these 32 ports x 64 queues"
        + (" (target < 1%: met)." if s["cpu_1s"] < 1 else
           f" (target < 1%: missed by {times(s['cpu_1s'])}): "
           f"{s['cpu_1s'] / 100 * 1e3:.1f} ms per second, against "
           f"{ms(s['poll_cpu_32'])} ms for a poll back to back; the difference is what a "
           "poll pays for memory idle since the last one on this host, less than after "
           "5 s but not nothing. The levers are those of the poll above.")
        + (f" The fastest interval tested with no skipped poll is {fastest['interval']:g} s, "
           f"at {pct(fastest['percent'])} of a core ({ms(fastest['cpu_per_poll'])} ms per "
           "poll); below the poll's own duration polls are skipped and counted in "
           "`nicwatch_skipped_polls_total`. PAUSE storms shorter than 5 s need 1 s or less; "
           "the daemon's own `*_peak_per_second` gauges keep the highest rate between two "
           "polls within `--rates.peak-window`, so a scrape every 15 s still sees them."
           if fastest else ""),
        "",
        *hosts_reading(data),
        "**Memory.** " + (
            f"After a real hour at defaults RSS is {s['rss_hour']:.1f} MB"
            + (f" (that hour ran nicwatch {data['hour']['commit']}, started "
               f"{data['hour'].get('started', 'apart from this run')}; the figures in "
               "parentheses are from this run's commit. The 720 polls at 0.1 s are no "
               "longer an equivalent of the hour: "
               "the diagnosis and receive-path windows hold 30 s of polls, 300 at 0.1 s "
               "against 6 at 5 s)" if data["hour"].get("commit") != data["commit"]
               else "")
            if s["rss_hour"] is not None else
            "The real hour did not finish before this run; after 720 polls at 0.1 s "
            f"(the history fills by poll count: an hour of 5 s polls) RSS is "
            f"{s['rss_720']:.1f} MB") +
        f" ({s['rss_warm']:.1f} MB after warm-up, {s['rss_720']:.1f} MB after 720 polls at "
        "0.1 s). The flight recorder no longer keeps raw driver statistics unless "
        "`--history.raw-stats` asks for them.",
        "",
        "**Scaling.** Poll CPU grows with interfaces and counters (table above: 1, 8, 32 "
        f"veths with {QUEUES} queues and {SCALE_PORTS} with {SCALE_QUEUES}): per rendered "
        "series it is " + ", ".join(
            f"{r['cpu'] / r['series'] * 1e6:.1f} us at {r['ports']}"
            for r in data["veth"]["rows"] + data["veth128"]["rows"]) +
        " veths, so the cost follows series (canonical families per interface) more than "
        "driver counters, which the ioctl and the name cache make cheap; the fixed "
        "part (one rtnetlink dump, five ethtool netlink dumps) is shared, and statistic names "
        "are read once per interface, not again while the set is unchanged. The simulated "
        "ConnectX host adds what veths lack: PCIe paths (AER counts and power states re-read "
        "every 5 s at most; the rest of a path, identity and link, read whole when the "
        "interface's link state or ifindex changes and otherwise every 60 s, so a link that "
        "retrains without telling shows within 60 s), "
        "RDMA port counters (the hardware counters through RDMA netlink, one batch for "
        "every port, the PortCounters files kept open) and DCB.",
        "",
        f"**DCB** is configuration: one `RTM_GETDCB` request costs "
        f"~{st.get('DCB (RTM_GETDCB per interface)', 0) / PORTS * 1e6:.0f} us per interface "
        "here (measured asking every time), and the daemon asks again only when a DCB "
        "notification names the interface, its link state changes or 30 s passed "
        "(docs/architecture.md, \"Cadence\").",
    ]
    return out


METHOD = """\
How much nicwatch costs on a host with many high-queue-count ports, measured the way a
user pays for it, against the kernel floor and against node_exporter. Everything below,
tables and prose, is written by one run of

    .venv/bin/python benchmarks/run.py        # as root; about 20 minutes

which stores every number in `benchmarks/results/latest.json` and rewrites this page and
the README's performance section from it (`--report` re-renders them from the JSON). The
hour of memory is `benchmarks/hour.py`, run beside it; its result file is read in if there.

## Method

**Interfaces.** A network namespace of the benchmark's own with 32 veth interfaces, each
with 64 rx and 64 tx queues (577 driver counters apiece, 18,464 in all; the peers live in
a second namespace), and another with 128 veths of 16 queues. Nothing is sent over them.

**Equal cadence (the headline).** `nicwatch serve` at its default 5 s interval and Debian's
`prometheus-node-exporter` with `--collector.disable-defaults --collector.ethtool` (and,
the fair superset of what nicwatch reports, `--collector.ethtool --collector.netclass`),
each alone on the 32 veths, scraped every 5 s with Prometheus' Accept header and gzip, for
the same window; CPU seconds (user + system) of the whole process from psutil (the kernel's
`/proc/<pid>/stat`, whose total is the exact run time in 10 ms units), so polls, rendering,
history, HTTP and idle threads all count. nicwatch at `--interval 1s` runs in
the same rounds. Runs are sequential, one process at a time, in rounds whose order rotates
and reverses (pairwise A/B), so slow drift of the shared machine spreads over all of them;
the table gives the median and the range, and each round's ratio uses that round's runs.

**Whole poll vs floor** (`benchmarks/pipeline.py`, in the namespace). The daemon's own
`poll_once()` on the collector the daemon builds, with every source it runs: ethtool ioctls
(statistics every poll; driver info and permanent address once a minute, as the daemon asks),
five ethtool netlink dumps, one rtnetlink `RTM_GETLINK` dump, DCB, sysfs (speed, duplex, the
device behind each interface), PCIe paths and RDMA ports, devlink where the kernel has it; then
tracking, the flight recorder, identity, softirq load, expectations and the OpenMetrics render
with gzip that a Prometheus scrape asks for. CPU time of the process (`time.process_time`),
median over the measured polls after two warm-up polls, with the garbage collector tuned as the
daemon tunes it once serving. The floor: the bare `ETHTOOL_GSTATS` ioctls for the same
interfaces, buffers prepared and names cached, and "ioctl + decode", which adds unpacking the
values. Stages are also timed one by one on the same objects, the consumers (softirq load,
receive path, link physics, expectations, incidents, diagnosis) inside the measured polls.

**At the daemon's cadence** (`pipeline.py paced`). Polls back to back find the process's
memory in the caches; the daemon finds it after 5 s of sleep. The same `poll_once()` and the
same floor (ioctl + decode, one interface after another) are therefore also timed each after
5 s of sleep, alternating, 8 of each: CPU of the thread, median. The memory each touches is
measured on a poll of its own (accessed bits cleared through `/proc/self/clear_refs`, the
`Referenced` total of `smaps_rollup` after). Beside them, what this host charges for memory
left idle: one byte written per 4 KiB page of a 12 MiB buffer, back to back and after 5 s.

**Simulated ConnectX host.** `nicwatch/demo/simulate.py` (the demo's simulation: ConnectX
ports with PCIe paths under root ports, RDMA ports with hw_counters, PFC on priority 3)
polled through the same `poll_once()`. Its sysfs is a tree under `--path.sysfs`; what the
daemon reads differently on the live `/sys` is read that way (`benchmarks/livepaths.py`):
the interface list and counters through an rtnetlink `RTM_GETLINK` dump, the RDMA hardware
counters through RDMA netlink, each replayed in the kernel's layout (payloads built once
from a real payload of this kernel, parsed by nicwatch every poll), and the RDMA, PCIe and
hwmon files the daemon keeps open kept open; a second run reads the same host as plain
files, as a fixture tree is read. Its ioctl, ethtool netlink and DCB answers come from the
simulation's Python. Each consumer is timed inside the measured polls (a consumer fed the
same poll twice does less). Its whole poll is timed as the daemon polls at 5 s: speed,
duplex and the PCIe AER counts and power states re-read every poll, the receive path's
layout (interrupt lists, RPS masks) every 30 s as the daemon reads it (its own stage,
"layout read"), the receive path's per-interrupt counts every poll; the rest of each PCIe
path (identity, link speed and width) is read whole only when the interface's link state or
ifindex changes (a uevent's add or rebind, a retrain with the port) and otherwise every 60 s
(`PCIE_LINK_SAFETY`, so a link that degrades without telling is seen within 60 s;
`NicPcieLinkDegraded` waits 10 minutes), which polls back to back never reach: that read is
the stage "PCIe paths, read whole", once a minute.

**Realistic ConnectX host** (`benchmarks/connectx.py`, target 5). The same simulation on a
DGX-class host of 10 ports, each port reporting what a real mlx5_core port reports at 63
channels (mlx5e's default on a host with 64 or more CPUs): the mlx5 name list of
tests/fixtures/ethtool/mlx5_core.txt (251 global names, 74 per channel) expanded per channel
as the driver numbers its `chN_`, `rxN_` and `txN_` groups, 4,912 names a port; the
per-channel packet, byte, completion and poll counts move, the rest keep the fixture's values,
as most of a real port's counters do between two polls. RDMA hw_counters and the PCIe tree are
the simulation's. The "ethtool ioctls" stage includes the simulation's own Python building the
values (shown beside it), an upper bound of what one GSTATS ioctl and its decode cost.

**2,000 interfaces** (target 2). 1,000 veth pairs, both ends in one namespace and polled, one
queue each; `nicwatch serve` at 5 s, scraped every 5 s as above for 60 s (whole-process CPU),
its RSS at the end, then 100 sequential OpenMetrics + gzip scrapes while the polls go on (p99).

**Memory.** RSS after warm-up; after 720 polls (an hour of 5 s polls) at 0.1 s with the
peak window scaled alike, an equivalent because the history is bounded by poll count and
bytes, not wall time; and the real hour at defaults from `benchmarks/hour.py`.

**Scrapes.** CPU per scrape served from the cache (a daemon with `--interval=1h`, 500
sequential scrapes, CPU delta / 500) and latency from 4 concurrent keep-alive clients per
format while 5 s polls go on. `ethtool -S` forked per interface, as text-scraping exporters
do, for scale.
"""


ARRAYS_BEGIN, ARRAYS_END = "<!-- arrays:begin -->", "<!-- arrays:end -->"


def kept_sections() -> list[str]:
    """The page's hand-written section between ARRAYS_BEGIN and ARRAYS_END (the array
    path's representation choice, issue #39), kept as it is."""
    text = DOC.read_text() if DOC.exists() else ""
    start, end = text.find(ARRAYS_BEGIN), text.find(ARRAYS_END)
    return [text[start:end + len(ARRAYS_END)], ""] if 0 <= start < end else []


def document(data: dict) -> str:
    return "\n".join(["# Performance", "", METHOD, "## Results", "", *results(data), "",
                      "## Reading the results", "", *reading(data), "", *kept_sections()])


def _readme_rows_33(s: dict, rows: list[tuple[str, str, str, bool | None]]) -> list[str]:
    """README rows of issue #33's targets, once a run measured them."""
    if s.get("many_cpu") is None:
        return []

    def verdict(start: str) -> str:
        row = next(r for r in rows if r[0].startswith(start))
        return f"{row[1]}: {'met' if row[3] else 'missed'}"

    many = f"{2 * MANY_PAIRS:,} interfaces"
    return [f"| whole poll, simulated 30-port ConnectX host | {ms(s['sim30_poll'])} ms CPU | | "
            f"{verdict('whole poll, simulated 30-port')} |",
            f"| {many} at 5 s | {pct(s['many_cpu'])} of a core, RSS "
            f"{s['many_rss']:.1f} MB, gzip scrape p99 {ms(s['many_p99'])} ms | | "
            f"{verdict(many + ' (')}; {verdict(many + ': RSS')}; "
            f"{verdict(many + ': scrape')} |",
            f"| whole poll, realistic 10-port ConnectX host (4,912 mlx5 statistics a port) | "
            f"{ms(s['connectx_poll'])} ms CPU | | |"]


def _readme_rows_39(s: dict, rows: list[tuple[str, str, str, bool | None]]) -> list[str]:
    """README rows of issue #39's cost-growth and series rows, once a run measured them."""
    out = []
    for key, start, label in (
            ("growth", "every source and consumer /",
             "every source and consumer / the ethtool statistics alone, idle 32 veth"),
            ("series_per_port", "series per port", "series per ConnectX port at defaults, "
             "with its module")):
        row = next((r for r in rows if r[0].startswith(start)), None)
        if s.get(key) is not None and row is not None:
            out.append(f"| {label} | {row[2]} | | {row[1]}: {'met' if row[3] else 'missed'} |")
    return out


def readme_block(data: dict) -> str:
    s = data["summary"]
    rss = s["rss_hour"] if s["rss_hour"] is not None else s["rss_720"]
    rss_how = "after an hour at defaults" if s["rss_hour"] is not None else "after 720 polls"
    rows = target_rows(s)
    lines = [README_BEGIN,
             "On this project's 2-core VM"
             + (" (shared with other work during the run)"
                if max(data["load_start"], data["load_end"]) >= 1 else "") + ", 32 veth "
             f"interfaces x 64 queues (18,464 driver counters), measured {data['date']} by "
             "`benchmarks/run.py`, which also writes these lines:", "",
             "| measure | nicwatch | reference | target |", "|---|---|---|---|",
             f"| whole-process CPU, polled / scraped every 5 s | {pct(s['cpu_5s'], 3)} of a "
             f"core | node_exporter `--collector.ethtool` {pct(s['cpu_node'])}: "
             f"**{times(s['ratio'])} less**; with netclass {times(s['ratio_netclass'])} | "
             f">= 20x: {'met' if rows[0][3] else 'missed'} |",
             f"| CPU at `--interval 1s` | {pct(s['cpu_1s'])} of a core | | < 1%: "
             f"{'met' if rows[4][3] else 'missed'} |",
             f"| whole poll, every source | {ms(s['poll_cpu_32'])} ms CPU | ioctl + decode "
             f"floor {ms(s['floor_32'], 3)} ms ({times(s['poll_vs_floor'])}) | <= 10x: "
             f"{'met' if rows[2][3] else 'missed'} |",
             f"| the same, each after 5 s idle (the daemon's cadence) | "
             f"{ms(s['paced_poll'])} ms CPU | floor {ms(s['paced_floor'], 3)} ms "
             f"({times(s['paced_ratio'])}) | <= 10x: {'met' if rows[3][3] else 'missed'} |",
             f"| CPU per scrape from cache | {ms(s['nicwatch_scrape_cpu'], 3)} ms | "
             f"node_exporter {ms(s['node_scrape_cpu'])} ms ({times(s['scrape_ratio'], 0)}) | |",
             f"| RSS {rss_how}" + (f" (nicwatch {s['hour_commit']})" if s.get("hour_commit")
                                    else "") + f" | {rss:.1f} MB | | <= 60 MB: "
             f"{'met' if rows[5][3] else 'missed'} |",
             *_readme_rows_33(s, rows), *_readme_rows_39(s, rows), "",
             "Method, every table, and why a missed target is missed: "
             "[docs/performance.md](docs/performance.md).", README_END]
    return "\n".join(lines)


def write_reports(data: dict) -> None:
    data["summary"] = summarize(data)
    write_atomic(DOC, document(data).encode())
    text = README.read_text()
    if README_BEGIN in text and README_END in text:
        head, rest = text.split(README_BEGIN, 1)
        tail = rest.split(README_END, 1)[1]
        write_atomic(README, (head + readme_block(data) + tail).encode())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short windows; a smoke test")
    ap.add_argument("--polls", type=int, default=20, help="measured polls per pipeline cell")
    ap.add_argument("--rounds", type=int, default=3, help="equal-cadence rounds")
    ap.add_argument("--window", type=float, default=45.0,
                    help="seconds per equal-cadence run (a multiple of 5 s)")
    ap.add_argument("--report", action="store_true",
                    help="only re-render docs/performance.md and the README from latest.json")
    args = ap.parse_args()
    if args.report:
        data = json.loads((RESULTS / "latest.json").read_text())
        hour = RESULTS / "hour.json"
        if hour.exists():  # the hour runs beside the benchmark and may finish after it
            data["hour"] = json.loads(hour.read_text())
            data["summary"] = summarize(data)
            write_atomic(RESULTS / "latest.json", (json.dumps(data, indent=1) + "\n").encode())
        write_reports(data)
        return 0
    if os.geteuid() != 0:
        print("benchmarks/run.py: error: needs root (creates network namespaces)",
              file=sys.stderr)
        return 2
    problem = ensure_node_exporter()
    for tool in ("ip", "ethtool", "curl", NODE_EXPORTER):
        if subprocess.run(["which", tool], capture_output=True, check=False).returncode:
            print(f"benchmarks/run.py: error: {tool} not found (apt-get install iproute2 "
                  f"ethtool curl prometheus-node-exporter){'; ' + problem if problem else ''}",
                  file=sys.stderr)
            return 2
    quick = args.quick
    polls = 5 if quick else args.polls
    rounds = 1 if quick else args.rounds
    window = 10.0 if quick else args.window
    data: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "machine": cpu_model(), "kernel": platform.release(),
                  "python": platform.python_version(), "cpus": os.cpu_count(), "quick": quick,
                  "commit": git_commit(), "polls": polls, "load_start": os.getloadavg()[0],
                  "node_version": sh(NODE_EXPORTER, "--version").splitlines()[0]}
    with tempfile.TemporaryDirectory() as logs:
        logdir = Path(logs)
        with Namespace() as ns:
            print(f"namespace {ns.ns}: {PORTS} veth x {QUEUES} queues", file=sys.stderr)
            print("equal cadence ...", file=sys.stderr)
            data["cadence"] = equal_cadence(ns, logdir, rounds, window)
            print("shorter intervals ...", file=sys.stderr)
            data["fast"] = fast_intervals(ns, logdir, window / 2)
            print("poll and floor at the daemon's cadence ...", file=sys.stderr)
            data["paced"] = pipeline_paced(ns, 4 if quick else 8)
            print("poll pipeline and floors ...", file=sys.stderr)
            data["veth"] = pipeline_veth(ns, polls, [1, 8, PORTS])
            print("every source against the statistics alone ...", file=sys.stderr)
            data["growth"] = pipeline_growth(ns, 2 * polls)
            print("scrapes ...", file=sys.stderr)
            data["scrapes"] = cached_scrapes(ns, logdir, quick)
            print("history ...", file=sys.stderr)
            data["history"] = history_rss(ns, logdir, quick)
        with Namespace(SCALE_PORTS, SCALE_QUEUES, tag="nwb128") as ns128:
            print(f"{SCALE_PORTS} veth x {SCALE_QUEUES} queues ...", file=sys.stderr)
            data["veth128"] = pipeline_veth(ns128, polls, [SCALE_PORTS])
    print("simulated ConnectX host ...", file=sys.stderr)
    data["sim"] = [pipeline_sim(polls, n) for n in SIM_PORTS]
    data["sim_raw"] = pipeline_sim(polls, SIM_PORTS[-1], raw=True)
    data["sim_files"] = pipeline_sim(polls, SIM_PORTS[-1], files=True)
    print("RDMA stage of the simulated host ...", file=sys.stderr)
    data["rdma"] = rdma_stage(polls)
    print("receive-path stage of a 256-CPU host ...", file=sys.stderr)
    data["rxpath"] = rxpath_stage(10 if quick else 50)
    print(f"realistic ConnectX host ({CONNECTX_PORTS} ports) ...", file=sys.stderr)
    data["connectx"] = pipeline_connectx(polls, CONNECTX_PORTS)
    print("each collector's cost on the realistic host ...", file=sys.stderr)
    data["collectors"] = pipeline_collectors(polls, CONNECTX_PORTS)
    with tempfile.TemporaryDirectory() as logs:
        print(f"{2 * MANY_PAIRS} interfaces ...", file=sys.stderr)
        data["many"] = many_interfaces(Path(logs), 20.0 if quick else 60.0,
                                       20 if quick else 100)
    hour = RESULTS / "hour.json"
    data["hour"] = json.loads(hour.read_text()) if hour.exists() else None
    data["load_end"] = os.getloadavg()[0]
    RESULTS.mkdir(parents=True, exist_ok=True)
    data["summary"] = summarize(data)
    if quick:  # a smoke test: its numbers never replace the published ones
        write_atomic(RESULTS / "quick.json", (json.dumps(data, indent=1) + "\n").encode())
    else:
        write_atomic(RESULTS / "latest.json", (json.dumps(data, indent=1) + "\n").encode())
        write_reports(data)
    print("\n".join(results(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
