"""The fabric under one real Prometheus: four nicwatch daemons, each in its own network
namespace with a data port (`data`) joined by a veth to another host's (links h0-h1 and
h2-h3), an LLDP agent (tests/helpers/lldp_sender.py) announcing each end with PFC on
priority 3, and Debian's /usr/bin/prometheus scraping them every second over a management
veth (`fab0`) with the shipped rules loaded; then `nicwatch fabric` against it.

Each daemon is tests/helpers/fabric_host.py: the daemon's own wiring and real sources, the
LLDP receiver included, with what a veth cannot have stood in for (ring sizes, a CRC
counter, the port's own PFC). All four hosts have the role gpu-backend.

* A healthy fabric: the two links join, each port carries its peer's MTU, no alert fires
  and `nicwatch fabric` exits 0 with both links and no problem.
* Each fault once: host-1's PFC on priority 4 where host-0's is on 3 (each agent announces
  its own: the DCBX mismatch, seen from both ends, and a minority of the role); host-2
  receiving CRC errors that host-3 does not (one-sided); host-3's 1024 ring among 8192s
  (the ring minority), whose MTU of 1500 against 9000 also makes the ends of h2-h3 differ
  (on both ends) and is a minority of the role. `nicwatch fabric`
  exits 1 naming each.

The shipped `for` are minutes: the alerts are checked in a copy of the fabric group without
`for` (alert names suffixed Now), as tests/e2e/test_fleet.py does. What a veth cannot carry
at all (PAUSE) is covered by the promtool tests (deploy/prometheus/tests/fabric.yml)."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from lldp_sender import start
from netns import PYTHON, ns_python, ns_sh, sh
from paths import REPO, TESTS
from waiting import wait_until

pytestmark = pytest.mark.netns
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
RULES = REPO / "deploy" / "prometheus" / "nicwatch-rules.yml"
NICWATCH = Path(sys.executable).parent / "nicwatch"
HOSTS = 4
LINKS = ((0, 1), (2, 3))
HOST_SCRIPT = TESTS / "helpers" / "fabric_host.py"
HEALTHY = {"mtu": 9000, "ring": 8192, "crc_per_second": 0, "pfc": [3],
           "firmware": "0x800009e0"}
FAULTS = {1: {"pfc": [4]}, 2: {"crc_per_second": 50}, 3: {"ring": 1024, "mtu": 1500}}
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
    def __init__(self, tmp: Path, faults: dict[int, dict]) -> None:
        tag = secrets.token_hex(3)
        self.tmp = tmp
        self.spec = {n: {**HEALTHY, **faults.get(n, {})} for n in range(HOSTS)}
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
            sh("ip", "-n", self.ns[a], "link", "add", "data", "mtu", str(self.spec[a]["mtu"]),
               "type", "veth", "peer", "name", "data", "netns", self.ns[b], "mtu",
               str(self.spec[b]["mtu"]))
            for n in (a, b):
                ns_sh(self.ns[n], "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
                sh("ip", "-n", self.ns[n], "link", "set", "data", "up")

    def mac(self, n: int) -> str:
        return ns_sh(self.ns[n], "cat", "/sys/class/net/data/address").stdout.strip()

    def start(self) -> None:
        for n, ns in enumerate(self.ns):
            flags = {"interval": "1s", "interfaces.include": "^data$", "collector.lldp": "true",
                     "fabric.role": "gpu-backend",
                     "web.listen_address": f"198.19.{10 + n}.2:{PORT}",
                     "state.file": f"{self.tmp / host(n)}.json"}
            spec = {**self.spec[n], "flags": flags}
            self.processes.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, PYTHON, str(HOST_SCRIPT), json.dumps(spec)],
                stdout=subprocess.DEVNULL, stderr=(self.tmp / f"{host(n)}.log").open("w")))
        for n, ns in enumerate(self.ns):  # each host's LLDP agent, every second
            self.processes.append(start(ns, dev="data", mac=self.mac(n), name=host(n),
                                        addr=f"198.19.{10 + n}.2", pfc=self.spec[n]["pfc"], roce=3,
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


    def fabric_view(self, *args: str) -> subprocess.CompletedProcess:
        """`nicwatch fabric` in Prometheus' namespace."""
        return subprocess.run(["ip", "netns", "exec", self.prom_ns, str(NICWATCH), "fabric",
                               "--prometheus", f"http://127.0.0.1:{PROM_PORT}", *args],
                              capture_output=True, text=True, timeout=60)


@contextmanager
def running(tmp_path: Path, faults: dict[int, dict]):
    if not Path(PROMETHEUS).exists():
        pytest.skip("no prometheus binary")
    f = Fabric(tmp_path, faults)
    try:
        f.start()
        yield f
    finally:
        f.stop()
        f.delete()


def pairs(result: list) -> set[tuple[str, str]]:
    return {(r["metric"]["instance"], r["metric"]["peer_instance"]) for r in result}


def both_ways() -> set[tuple[str, str]]:
    return {(host(a), host(b)) for x, y in LINKS for a, b in ((x, y), (y, x))}


def joined(fabric: Fabric) -> list:
    return wait_until(lambda: (r := fabric.query("link:nic_lldp_peer:info")) and len(r) == 4
                      and r, 60, "the four ends joined")


def test_a_healthy_fabric_fires_nothing_and_the_view_exits_0(tmp_path) -> None:
    with running(tmp_path, {}) as fabric:
        links = joined(fabric)
        assert pairs(links) == both_ways()
        assert all(r["metric"]["peer_device"] == "data" for r in links)
        peer_mtu = wait_until(lambda: (r := fabric.query("link:nic_peer_mtu_bytes:value"))
                              and len(r) == 4 and r, 30, "the peer's MTU on each port")
        assert {(r["metric"]["instance"], float(r["value"][1])) for r in peer_mtu} == {
            (a, 9000.0) for a, _ in both_ways()}
        # every fabric rule has what it needs: the CRC rate of each peer (0), the role's norm
        wait_until(lambda: len(fabric.query("link:nic_peer_rx_crc_errors:rate5m") or []) == 4,
                   30, "each peer's CRC rate")
        norms = wait_until(lambda: fabric.query("role:nic_fabric_property_value:majority"), 30,
                           "the role's norms")
        assert {(r["metric"]["property"], r["metric"]["value"]) for r in norms} >= {
            ("rx_ring", "8192"), ("tx_ring", "8192"), ("mtu", "9000"),
            ("firmware", "0x800009e0"), ("pfc_prio3", "1")}
        time.sleep(5)  # alerts without for fire at the next evaluation (every second)
        assert fabric.query('ALERTS{alertname=~"Nic.*"}') == []
        r = fabric.fabric_view("--json")
        assert r.returncode == 0, (r.stdout, r.stderr)
        view = json.loads(r.stdout)
        assert view["problems"] == [] and view["healthy"] is True
        assert {(lk["a"]["instance"], lk["b"]["instance"]) for lk in view["links"]} == {
            (host(a), host(b)) for a, b in LINKS}
        ports = {p["instance"]: p for p in view["ports"]}
        assert set(ports) == {host(n) for n in range(HOSTS)}
        assert ports[host(0)]["neighbour"]["system_name"] == host(1)
        assert all(p["lldp"] == "ok" and p["role"] == "gpu-backend"
                   and p["rates"]["rx_crc_errors"] == 0 for p in ports.values())
        page = tmp_path / "fabric.html"
        r = fabric.fabric_view("--html", str(page))
        assert r.returncode == 0 and "PROBLEMS (0)" in r.stdout
        assert "healthy</span>" in page.read_text()


def test_each_fault_fires_once_and_the_view_names_it(tmp_path) -> None:
    with running(tmp_path, FAULTS) as fabric:
        assert pairs(joined(fabric)) == both_ways()
        want = {("NicLinkPeerDcbxMismatchNow", host(0), "setting", "pfc"),
                ("NicLinkPeerDcbxMismatchNow", host(1), "setting", "pfc"),
                ("NicFabricConfigMinorityNow", host(1), "property", "pfc_prio3"),
                ("NicFabricConfigMinorityNow", host(1), "property", "pfc_prio4"),
                ("NicLinkErrorsOneSidedNow", host(2), "", ""),
                ("NicFabricConfigMinorityNow", host(3), "property", "rx_ring"),
                ("NicFabricConfigMinorityNow", host(3), "property", "tx_ring"),
                ("NicFabricConfigMinorityNow", host(3), "property", "mtu"),
                ("NicLinkEndsDifferNow", host(2), "property", "mtu"),
                ("NicLinkEndsDifferNow", host(3), "property", "mtu")}

        def firing() -> set | None:
            r = fabric.query('ALERTS{alertstate="firing",alertname=~"Nic.*Now"}')
            got = {(a["metric"]["alertname"], a["metric"]["instance"],
                    *next(((k, a["metric"][k]) for k in ("setting", "property")
                           if k in a["metric"]), ("", ""))) for a in r or []}
            return got if got >= want else None

        got = wait_until(firing, 60, "each fault's alert")
        time.sleep(5)  # and nothing else comes
        got = firing()
        assert got == want, got
        crc = {(a["metric"]["instance"], a["metric"]["counter"])
               for a in fabric.query('ALERTS{alertname="NicLinkErrorsOneSidedNow"}') or []}
        assert crc == {(host(2), "crc")}, crc  # the receiving end only
        r = fabric.fabric_view("--json")
        assert r.returncode == 1, (r.stdout, r.stderr)
        view = json.loads(r.stdout)
        problems = "\n".join(view["problems"])
        assert f"{host(0)}/data: disagrees with its link peer on pfc" in problems
        assert f"{host(1)}/data: disagrees with its link peer on pfc" in problems
        assert (f"link {host(2)}/data - {host(3)}/data: errors one-sided: {host(2)}/data "
                "receives") in problems
        assert f"{host(3)}/data: rx_ring 1024 where 3 of the 4 gpu-backend ports have 8192" \
            in problems
        assert {(d["instance"], d["property"], d["value"], d["norm"]) for d in view["drift"]} \
            == {(host(3), "rx_ring", "1024", "8192"), (host(3), "tx_ring", "1024", "8192"),
                (host(3), "mtu", "1500", "9000"), (host(1), "pfc_prio3", "0", "1"),
                (host(1), "pfc_prio4", "1", "0")}
        healthy_link = [lk for lk in view["links"] if lk["a"]["instance"] == host(0)]
        assert healthy_link and healthy_link[0]["verdict"] == ""
        text = fabric.fabric_view()
        assert text.returncode == 1 and "errors one-sided" in text.stdout
