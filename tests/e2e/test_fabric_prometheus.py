"""Both ends of two links under one real Prometheus: four nicwatch daemons, each in its own
network namespace with a data port (`data`) joined by a veth to another host's, an LLDP agent
(tests/helpers/lldp_sender.py) announcing each end, and Debian's /usr/bin/prometheus scraping
them every second over a management veth (`fab0`) with the shipped rules loaded.

The link join (link:nic_lldp_peer:info) pairs exactly the two ends of each link, and of the
fabric alerts only NicLinkEndsDiffer fires, for the link whose ends differ in MTU (host-3 at
1500 against host-2 at 9000) and on both of its ends; the healthy link h0-h1 fires nothing.
The shipped `for` is 10 minutes: the alerts are checked in a copy of the group without `for`,
as tests/e2e/test_fleet.py does. What a veth cannot show (PAUSE, CRC, FEC, DCB) is covered by
the promtool tests on two-host series (deploy/prometheus/tests/fabric.yml)."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lldp_sender import start
from netns import ns_python, ns_sh, sh
from paths import REPO
from waiting import wait_until

pytestmark = pytest.mark.netns
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
RULES = REPO / "deploy" / "prometheus" / "nicwatch-rules.yml"
NICWATCH = Path(sys.executable).parent / "nicwatch"
HOSTS = 4
LINKS = ((0, 1), (2, 3))
MTU = {0: 9000, 1: 9000, 2: 9000, 3: 1500}
PORT, PROM_PORT = 10847, 9091
SHORT = "fabric-short-for"


def host(n: int) -> str:
    return f"host-{n}"


def short_for_copy() -> dict:
    """The fabric group's rules with every alert's `for` dropped (records as they are)."""
    group = next(g for g in yaml.safe_load(RULES.read_text())["groups"]
                 if g["name"] == "nicwatch-fabric")
    rules = [{k: v for k, v in rule.items() if k not in ("for", "keep_firing_for")}
             for rule in group["rules"] if "alert" in rule]
    for rule in rules:
        rule["alert"] += "Now"
    return {"groups": [{"name": SHORT, "rules": rules}]}


class Fabric:
    def __init__(self, tmp: Path) -> None:
        tag = secrets.token_hex(3)
        self.tmp = tmp
        self.prom_ns = f"nwp-{tag}"
        self.ns = [f"nwh{n}-{tag}" for n in range(HOSTS)]
        self.processes: list[subprocess.Popen] = []
        sh("ip", "netns", "add", self.prom_ns)
        sh("ip", "-n", self.prom_ns, "link", "set", "lo", "up")
        for n, ns in enumerate(self.ns):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", self.prom_ns, "link", "add", f"p{n}", "type", "veth", "peer", "name",
               "fab0", "netns", ns)
            sh("ip", "-n", self.prom_ns, "addr", "add", f"198.19.{10 + n}.1/24", "dev", f"p{n}")
            sh("ip", "-n", ns, "addr", "add", f"198.19.{10 + n}.2/24", "dev", "fab0")
            for netns, dev in ((self.prom_ns, f"p{n}"), (ns, "fab0"), (ns, "lo")):
                sh("ip", "-n", netns, "link", "set", dev, "up")
        for a, b in LINKS:
            sh("ip", "-n", self.ns[a], "link", "add", "data", "mtu", str(MTU[a]), "type", "veth",
               "peer", "name", "data", "netns", self.ns[b], "mtu", str(MTU[b]))
            for n in (a, b):
                ns_sh(self.ns[n], "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
                sh("ip", "-n", self.ns[n], "link", "set", "data", "up")

    def mac(self, n: int) -> str:
        return ns_sh(self.ns[n], "cat", "/sys/class/net/data/address").stdout.strip()

    def start(self) -> None:
        for n, ns in enumerate(self.ns):
            self.processes.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, str(NICWATCH), "serve", "--interval=1s",
                 "--interfaces.include=^data$", "--collector.lldp",
                 f"--web.listen-address=198.19.{10 + n}.2:{PORT}",
                 f"--state.file={self.tmp / host(n)}.json"],
                stdout=subprocess.DEVNULL, stderr=(self.tmp / f"{host(n)}.log").open("w")))
        for n, ns in enumerate(self.ns):  # each host's LLDP agent, every second
            self.processes.append(start(ns, dev="data", mac=self.mac(n), name=host(n),
                                        addr=f"198.19.{10 + n}.2", pfc=[3], roce=3,
                                        repeat=120, every=1))
        (self.tmp / "short.yml").write_text(yaml.safe_dump(short_for_copy()))
        (self.tmp / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "rule_files": [str(RULES), str(self.tmp / "short.yml")],
            "scrape_configs": [{"job_name": "nicwatch", "static_configs": [
                {"targets": [f"198.19.{10 + n}.2:{PORT}"], "labels": {"instance": host(n)}}
                for n in range(HOSTS)]}]}))
        self.processes.append(subprocess.Popen(
            ["ip", "netns", "exec", self.prom_ns, PROMETHEUS,
             f"--config.file={self.tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.tmp / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{PROM_PORT}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=(self.tmp / "prometheus.log").open("w")))

    def query(self, expr: str) -> list | None:
        code = ("import json, urllib.parse, urllib.request\n"
                f"url = 'http://127.0.0.1:{PROM_PORT}/api/v1/query?' + "
                f"urllib.parse.urlencode({{'query': {expr!r}}})\n"
                "try:\n"
                "    print(json.dumps(json.load(urllib.request.urlopen(url, timeout=5))"
                "['data']['result']))\n"
                "except OSError:\n"
                "    print('null')\n")
        result = ns_python(self.prom_ns, code)
        return result if isinstance(result, list) else None

    def stop(self) -> None:
        for p in self.processes:
            if p.poll() is None:
                p.terminate()
        for p in self.processes:
            p.wait(timeout=20)

    def delete(self) -> None:
        for ns in (self.prom_ns, *self.ns):
            sh("ip", "netns", "del", ns, check=False)


@pytest.fixture
def fabric(tmp_path: Path):
    if not Path(PROMETHEUS).exists():
        pytest.skip("no prometheus binary")
    f = Fabric(tmp_path)
    try:
        f.start()
        yield f
    finally:
        f.stop()
        f.delete()


def pairs(result: list) -> set[tuple[str, str]]:
    return {(r["metric"]["instance"], r["metric"]["peer_instance"]) for r in result}


def test_prometheus_joins_both_ends_and_flags_the_link_whose_ends_differ(fabric) -> None:
    joined = wait_until(lambda: (r := fabric.query("link:nic_lldp_peer:info")) and len(r) == 4
                        and r, 60, "the four ends joined")
    assert pairs(joined) == {(host(a), host(b)) for x, y in LINKS
                             for a, b in ((x, y), (y, x))}
    assert all(r["metric"]["peer_device"] == "data" for r in joined)
    peer_mtu = wait_until(lambda: fabric.query("link:nic_peer_mtu_bytes:value"), 30,
                          "the peer's MTU on each port")
    assert {(r["metric"]["instance"], float(r["value"][1])) for r in peer_mtu} == {
        (host(a), float(MTU[b])) for x, y in LINKS for a, b in ((x, y), (y, x))}
    firing = wait_until(
        lambda: (r := fabric.query('ALERTS{alertstate="firing",alertname=~".*Now"}'))
        and len(r) >= 2 and r, 30, "NicLinkEndsDiffer on the odd link")
    got = {(r["metric"]["alertname"], r["metric"]["instance"], r["metric"].get("property"))
           for r in firing}
    assert got == {("NicLinkEndsDifferNow", host(2), "mtu"),
                   ("NicLinkEndsDifferNow", host(3), "mtu")}, got
    assert fabric.query('ALERTS{alertname=~"NicLink.*",instance=~"host-[01]"}') == []
