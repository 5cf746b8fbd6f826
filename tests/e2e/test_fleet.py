"""A fleet under one real Prometheus: 16 nicwatch daemons, each in its own network namespace
polling its own veth, one of them misconfigured (MTU 1500 among 9000s), scraped every second
by Debian's /usr/bin/prometheus with the shipped rules loaded.

Every fleet dashboard query returns data for every host (or, for what a veth does not have,
nothing at all), and the peer rules single out the odd host and only it: the recording rule
device:nic_peer_property:outlier, the shipped NicConfigDiffersFromPeers alert (pending: its
`for` is 15 minutes) and a copy of it without `for` (firing).

Layout: Prometheus runs in a namespace of its own with one veth per host (198.19.N.1/24);
host N's daemon listens on 198.19.N.2:10847 on the other end, `fab0`, which is also the
interface it polls, like a management port. Nothing touches the root namespace.

The test prints what it measured (scrape durations, series per host, daemon memory).
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from grafana import dashboards, queries
from netns import ns_python, sh
from paths import PROMETHEUS, REPO

RULES = REPO / "deploy" / "prometheus" / "nicwatch-rules.yml"
NICWATCH = Path(sys.executable).parent / "nicwatch"
HOSTS = 16
ODD = 11  # host-11 runs MTU 1500; every other host 9000
PORT = 10847
PROM_PORT = 9090
DEADLINE = 50.0
ALERT = "NicConfigDiffersFromPeers"
SHORT_FOR_GROUP = "fleet-short-for"
# Fleet queries that must be empty on veths, and why: a veth has no PAUSE, drop, discard or
# FEC counters and no PCIe link, so there is nothing to show (absent is not zero).
EMPTY_ON_VETH = {
    "Port health now (A)": "no PAUSE duration counters",
    "Port health now (B)": "no PAUSE duration counters",
    "Port health now (C)": "no out-of-buffer counter",
    "Port health now (D)": "no port discard counter",
    "Port health now (E)": "no FEC",
    "Port health now (F)": "no FEC",
    "Port health now (G)": "no PCIe link",
    "Degraded PCIe links (A)": "no PCIe link",
    "Expectation violations (A)": "no expectations configured",
    "Incidents captured (A)": "no capture trigger configured",
    "Incidents captured (B)": "no capture trigger configured",
    "Time paused by the peer (worst priority) (A)": "no PAUSE duration counters",
    "Time pausing the peer (worst priority) (A)": "no PAUSE duration counters",
    "Out-of-buffer drops (A)": "no out-of-buffer counter",
    "Port discards (A)": "no port discard counter",
    "Pre-FEC bit error ratio (A)": "no FEC",
    "Throughput per host (A)": "no physical port counters",
    "Throughput per host (B)": "no physical port counters",
    **{f"RDMA ports with faults ({q})": "no RDMA device" for q in "ABCDEF"},
    "RDMA retransmissions, worst 10 (A)": "no RDMA device",
    **{f"Diagnosis: causes that hold now ({q})": "nothing holds on a healthy veth"
       for q in "ABC"},
}
# Fleet queries that name only the odd host, and the median of the peer group it differs from.
ODD_ONLY = {"Ports that differ from their peers (A)"}
PEER_MEDIAN = "Ports that differ from their peers (B)"
# Single-stat counts over the fleet: the value each must show.
COUNTS = {"Hosts (A)": HOSTS, "Ports (A)": HOSTS, "nicwatch down (A)": 0,
          "Ports dropping (A)": 0, "PCIe degraded (A)": 0, "Expectation violations (A)": 0,
          "NIC identity changes (A)": 0,
          "Firing NIC alerts (A)": 1}  # the copy without `for`, for the odd host


def host(n: int) -> str:
    return f"host-{n:02d}"


def fleet_queries() -> dict[str, str]:
    return dict(queries(dashboards.DASHBOARDS["nicwatch-fleet.json"]()))


def short_for_copy() -> dict:
    rules = [{k: v for k, v in rule.items() if k not in ("for", "keep_firing_for")}
             for group in yaml.safe_load(RULES.read_text())["groups"]
             for rule in group["rules"] if rule.get("alert") == ALERT]
    assert len(rules) == 1
    return {"groups": [{"name": SHORT_FOR_GROUP, "rules": rules}]}


class Fleet:
    """The namespaces, daemons and Prometheus this test starts; stopped by their PIDs."""

    def __init__(self, tmp_path: Path) -> None:
        tag = secrets.token_hex(3)
        self.tmp = tmp_path
        self.prom_ns = f"nwp-{tag}"
        self.host_ns = [f"nwf{n:02d}-{tag}" for n in range(HOSTS)]
        self.daemons: list[subprocess.Popen] = []
        self.prometheus: subprocess.Popen | None = None
        self.logs = []
        sh("ip", "netns", "add", self.prom_ns)
        sh("ip", "-n", self.prom_ns, "link", "set", "lo", "up")
        for n, ns in enumerate(self.host_ns):
            mtu = "1500" if n == ODD else "9000"
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", self.prom_ns, "link", "add", f"p{n}", "mtu", mtu, "type", "veth",
               "peer", "name", "fab0", "netns", ns, "mtu", mtu)
            sh("ip", "-n", self.prom_ns, "addr", "add", f"198.19.{n}.1/24", "dev", f"p{n}")
            sh("ip", "-n", ns, "addr", "add", f"198.19.{n}.2/24", "dev", "fab0")
            for netns, dev in ((self.prom_ns, f"p{n}"), (ns, "fab0"), (ns, "lo")):
                sh("ip", "-n", netns, "link", "set", dev, "up")

    def start(self) -> None:
        for n, ns in enumerate(self.host_ns):
            log = (self.tmp / f"{host(n)}.log").open("w+")
            self.logs.append(log)
            self.daemons.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, str(NICWATCH), "serve", "--interval=1s",
                 "--interfaces.include=^fab0$", f"--web.listen-address=198.19.{n}.2:{PORT}",
                 f"--state.file={self.tmp / host(n)}.json", "--log.format=json"],
                stdout=log, stderr=subprocess.STDOUT))
        (self.tmp / "short-for.yml").write_text(yaml.safe_dump(short_for_copy()))
        (self.tmp / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "rule_files": [str(RULES), str(self.tmp / "short-for.yml")],
            "scrape_configs": [{"job_name": "nicwatch", "static_configs": [
                {"targets": [f"198.19.{n}.2:{PORT}"], "labels": {"instance": host(n)}}
                for n in range(HOSTS)]}],
        }))
        log = (self.tmp / "prometheus.log").open("w+")
        self.logs.append(log)
        self.prometheus = subprocess.Popen(
            ["ip", "netns", "exec", self.prom_ns, PROMETHEUS,
             f"--config.file={self.tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.tmp / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{PROM_PORT}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT)

    def query(self, *exprs: str, path: str = "query") -> list:
        """Instant queries (or another GET API path) from inside Prometheus' namespace."""
        code = (
            "import json, sys, urllib.parse, urllib.request\n"
            "out = []\n"
            f"for q in {list(exprs)!r}:\n"
            f"    url = 'http://127.0.0.1:{PROM_PORT}/api/v1/{path}'\n"
            "    if q: url += '?' + urllib.parse.urlencode({'query': q})\n"
            "    try:\n"
            "        out.append(json.load(urllib.request.urlopen(url, timeout=5))['data'])\n"
            "    except OSError as e:\n"
            "        out.append(None)\n"
            "print(json.dumps(out))\n")
        return ns_python(self.prom_ns, code)

    def running(self) -> bool:
        return all(p.poll() is None for p in [*self.daemons, self.prometheus])

    def stop(self) -> list[int]:
        processes = [p for p in [self.prometheus, *self.daemons] if p is not None]
        for p in processes:
            if p.poll() is None:
                p.terminate()
        codes = [p.wait(timeout=20) for p in processes]
        for log in self.logs:
            log.close()
        return codes

    def delete(self) -> None:
        for ns in [self.prom_ns, *self.host_ns]:
            sh("ip", "netns", "del", ns, check=False)

    def tail(self) -> str:
        return "".join(f"--- {Path(f.name).name}\n{Path(f.name).read_text()[-1500:]}"
                       for f in self.logs[-3:])


@pytest.fixture
def fleet(tmp_path: Path):
    f = Fleet(tmp_path)
    try:
        f.start()
        yield f
    finally:
        f.stop()
        f.delete()


def instances(result: dict) -> set[str]:
    return {s["metric"].get("instance") for s in result["result"]}


def read(fleet: Fleet) -> dict:
    queries = fleet_queries()
    results = fleet.query(*queries.values(),
                          '{__name__="device:nic_peer_property:outlier"}',
                          'scrape_duration_seconds{job="nicwatch"}',
                          'scrape_samples_scraped{job="nicwatch"}',
                          'count by (instance) ({job="nicwatch"})',
                          'max_over_time(scrape_duration_seconds{job="nicwatch"}[1m])',
                          'up{job="nicwatch"}')
    if any(r is None for r in results):
        return {}
    *panels, outlier, duration, samples, series, worst, up = results
    (rules,) = fleet.query("", path="rules")
    alerts = [a | {"group": g["name"]} for g in rules["groups"] for r in g["rules"]
              for a in r.get("alerts", ())]
    return {"panels": dict(zip(queries, panels, strict=False)), "outlier": outlier,
            "duration": duration,
            "samples": samples, "series": series, "worst": worst, "up": up, "alerts": alerts,
            "rules": [r | {"group": g["name"]} for g in rules["groups"] for r in g["rules"]]}


def by_instance(result: dict) -> dict[str, float]:
    return {s["metric"]["instance"]: float(s["value"][1]) for s in result["result"]}


def problems(s: dict) -> list[str]:
    """What is not (yet) as it must be, from one reading: empty once the fleet settled."""
    if not s:
        return ["Prometheus not answering"]
    every, odd = {host(n) for n in range(HOSTS)}, host(ODD)
    out = []
    if by_instance(s["up"]) != dict.fromkeys(every, 1.0):
        out.append(f"up: {by_instance(s['up'])}")
    out += [f"rule {r['name']}: {r['health']} {r.get('lastError')}" for r in s["rules"]
            if r["health"] != "ok" or r["lastEvaluation"] < "2000"]
    # Every fleet dashboard query has data for every host, or for what a veth lacks, none.
    missing = set(EMPTY_ON_VETH) | ODD_ONLY | set(COUNTS) | {PEER_MEDIAN}
    out += [f"no fleet query {t!r}" for t in sorted(missing - set(s["panels"]))]
    for title, result in s["panels"].items():
        if title in EMPTY_ON_VETH:
            got, want = result["result"], []
        elif title in ODD_ONLY:
            got, want = instances(result), {odd}
        elif title in COUNTS:
            got, want = [float(r["value"][1]) for r in result["result"]], [COUNTS[title]]
        elif title == PEER_MEDIAN:
            got = [(r["metric"]["property"], r["value"][1]) for r in result["result"]]
            want = [("mtu", "9000")]
        else:
            got, want = sorted(every - instances(result)), []  # hosts without data
        if got != want:
            out.append(f"{title}: {got} != {want}")
    # The peer rules name the odd host, its MTU, and nothing else.
    outlier = [(o["metric"]["instance"], o["metric"]["device"], o["metric"]["property"],
                o["metric"]["driver"], o["value"][1]) for o in s["outlier"]["result"]]
    if outlier != [(odd, "fab0", "mtu", "veth", "1500")]:
        out.append(f"outlier: {outlier}")
    named = {(a["group"] == SHORT_FOR_GROUP, a["state"], a["labels"]["instance"])
             for a in s["alerts"] if a["labels"]["alertname"] == ALERT}
    if named != {(True, "firing", odd), (False, "pending", odd)}:
        out.append(f"{ALERT}: {named}")
    out += [f"description: {a['annotations']['description']}" for a in s["alerts"]
            if a["labels"]["alertname"] == ALERT and not a["annotations"]["description"]
            .startswith("fab0 has mtu 1500 while the median of the veth ports at 10 Gb/s it "
                        "is compared with is 9000.")]
    return out


@pytest.mark.slow
def test_one_prometheus_singles_out_the_odd_host_of_16(fleet: Fleet) -> None:
    started = time.monotonic()
    s: dict = {}
    while time.monotonic() - started < DEADLINE and problems(s):
        assert fleet.running(), fleet.tail()
        time.sleep(1)
        s = read(fleet)
    assert problems(s) == [], fleet.tail()

    durations = by_instance(s["duration"])
    samples = by_instance(s["samples"])
    series = by_instance(s["series"])
    worst = by_instance(s["worst"])
    rss = [int(next(line.split()[1] for line in Path(f"/proc/{p.pid}/status").read_text()
                    .splitlines() if line.startswith("VmRSS:"))) for p in fleet.daemons]
    print(f"\nfleet of {HOSTS} settled in {time.monotonic() - started:.1f} s; per host: "
          f"scrape duration {min(durations.values()) * 1e3:.1f}-"
          f"{max(durations.values()) * 1e3:.1f} ms (worst over the run "
          f"{max(worst.values()) * 1e3:.1f} ms), samples per scrape "
          f"{min(samples.values()):.0f}-{max(samples.values()):.0f}, series in Prometheus "
          f"{min(series.values()):.0f}-{max(series.values()):.0f} (all hosts "
          f"{sum(series.values()):.0f}); daemon RSS {min(rss) / 1024:.1f}-"
          f"{max(rss) / 1024:.1f} MiB")
    assert set(samples) == {host(n) for n in range(HOSTS)}
    assert max(samples.values()) < 1000  # one veth: a few hundred
    assert all(code == 0 for code in fleet.stop()), fleet.tail()
    events = [json.loads(line) for line in Path(fleet.logs[0].name).read_text().splitlines()
              if line.startswith("{")]
    assert events[-1]["event"] == "stopped"
