"""Series per port and bytes per scrape at each --collector.detail level (docs/metrics.md,
"Detail tiers"); prints one JSON document.

  python benchmarks/series.py [PORTS]

Two hosts, both the demo's simulation (nicwatch/demo/simulate.py) polled through the daemon's
own ``Daemon.poll_once()`` with the collector `nicwatch demo` builds (modules, RDMA devices,
DCB, devlink, receive path): ``demo``, its ports as `nicwatch demo` serves them, and
``connectx``, the same ports with a real mlx5 port's ~4,900 statistic names
(benchmarks/connectx.py). Each is polled three times; the exposition of the last poll (text
format, what Prometheus asks without OpenMetrics) is counted: series, bytes, gzip bytes,
and per port the series that carry a queue, irq or cpu label, so the figures for a port with
more queues and CPUs follow (``per_queue_or_cpu``: those series' count per port).
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
import types
from pathlib import Path

from nicwatch import metrics
from nicwatch.cli.demo import CONFIG
from nicwatch.collect import Collector, Selection
from nicwatch.config import build
from nicwatch.daemon import Daemon
from nicwatch.demo import simulate
from nicwatch.log import configure
from nicwatch.sources.sriov import SriovSource

HERE = Path(__file__).resolve().parent


def exposition(ports: int, realistic: bool, detail: str | None) -> bytes:
    with tempfile.TemporaryDirectory(prefix="nwbench-series-") as tmp:
        root = Path(tmp)
        sysfs, procfs = root / "sys", root / "proc"
        specs = simulate.demo_ports(ports)
        sim = simulate.Simulation(specs, seed=1)
        sim.write_sysfs(sysfs)
        sim.write_procfs(procfs)
        if realistic:
            sys.path.insert(0, str(HERE))
            from connectx import RealisticEthtool
            ioctl: simulate.SimulatedEthtool = RealisticEthtool(sim)
        else:
            ioctl = simulate.SimulatedEthtool(sim)
        (root / "nicwatch.toml").write_text(CONFIG)
        flags = {"path.sysfs": str(sysfs), "state.file": str(root / "identity.json"),
                 "interfaces.include": "|".join(p.name for p in specs)}
        if detail is not None:
            flags["collector.detail"] = detail
        config = build(str(root / "nicwatch.toml"), flags)
        collector = Collector(
            sysfs, Selection(config.interfaces_include), ioctl=ioctl,
            netlink=simulate.SimulatedEthtoolNetlink(sim), dcb=simulate.SimulatedDcb(sim),
            devlink=simulate.SimulatedDevlink(sim), module=simulate.SimulatedModules(sim),
            netdev=simulate.SimulatedNetdev(sim), procfs=procfs)
        collector.sources.append(SriovSource(sysfs, simulate.SimulatedVfs(sim)))
        daemon = Daemon(config, str(root / "nicwatch.toml"), flags, collector=collector)
        daemon.server = types.SimpleNamespace(last_variant=(False, False))
        for _ in range(3):
            sim.advance()
            sim.write_counters(sysfs)
            body = daemon.poll_once().get(False, False)
        daemon.collector.close()
        return body


def count(body: bytes, ports: int) -> dict:
    lines = [line for line in body.decode().splitlines() if line and not line.startswith("#")]
    scaled = sum(1 for line in lines
                 if any(f'{label}="' in line.split("}", 1)[0] for label in ("queue", "irq", "cpu")))
    return {"series": len(lines), "per_port": round(len(lines) / ports, 1),
            "per_queue_or_cpu": round(scaled / ports, 1), "bytes": len(body),
            "gzip_bytes": len(gzip.compress(body))}


def main() -> None:
    configure("error", "json")
    ports = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    levels = getattr(metrics, "DETAIL_LEVELS", None) or (None,)  # None: before the tiers
    out: dict = {"ports": ports}
    for host, realistic in (("demo", False), ("connectx", True)):
        out[host] = {str(level or "default"): count(exposition(ports, realistic, level), ports)
                     for level in levels}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
