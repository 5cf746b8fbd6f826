"""What the diagnosis consumer costs per poll; prints one JSON document.

  python benchmarks/diagnosis.py [POLLS]        (the veth part needs root, ip and ethtool)

Per poll, CPU time of this process (``time.process_time``) of ``Diagnosis.update`` (the
window steps, the receive-path signals, evaluating every signature on every interface),
median over POLLS polls after the 30 s window has filled:

* ``demo_4`` and ``demo_30``: the demo's simulated ConnectX host (nicwatch demo) with 4 and
  30 ports, polled every 5 simulated seconds, RDMA ports and QoS profile included;
* ``veth_32``: 32 veth interfaces (16 pairs) in a namespace of its own, read by the real
  sources (build_collector), polled every 0.2 s.

Target: well under the poll's own cost; the daemon's poll of those hosts takes tens of ms.
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CODE_VETH = """
import json, statistics, time
from nicwatch.config import build
from nicwatch.daemon import build_collector
from nicwatch.tracker import Tracker
from nicwatch.consumers.diagnosis.consumer import Diagnosis
config = build(None, {"interfaces.include": "bv.*"})
collector = build_collector(config)
tracker, diagnosis, costs = Tracker(), Diagnosis(window=3.0), []
for i in range(POLLS + 16):
    result = collector.poll()
    tracked = tracker.update(result.samples)
    start = time.process_time()
    diagnosis.update(result, tracked, time.time())
    if i >= 16:
        costs.append(time.process_time() - start)
    time.sleep(0.2)
print(json.dumps({"interfaces": len(result.samples), "ms": statistics.median(costs) * 1e3}))
"""


def demo(ports: int, polls: int) -> dict[str, float]:
    from nicwatch.collect import Collector, Selection
    from nicwatch.consumers.diagnosis.consumer import Diagnosis
    from nicwatch.demo.simulate import (
        SimulatedDcb,
        SimulatedEthtool,
        SimulatedEthtoolNetlink,
        SimulatedNetdev,
        Simulation,
        demo_ports,
    )
    from nicwatch.tracker import Tracker
    now = [1000.0]
    with tempfile.TemporaryDirectory() as tmp:
        sim = Simulation(demo_ports(ports), seed=1, clock=lambda: now[0])
        tree, procfs = Path(tmp) / "sys", Path(tmp) / "proc"
        sim.write_sysfs(tree)
        sim.write_procfs(procfs)
        collector = Collector(tree, Selection("enp.*"), ioctl=SimulatedEthtool(sim),
                              netlink=SimulatedEthtoolNetlink(sim), dcb=SimulatedDcb(sim),
                              netdev=SimulatedNetdev(sim), procfs=procfs,
                              monotonic=lambda: now[0])
        tracker, diagnosis, costs = Tracker(), Diagnosis(), []
        for i in range(polls + 7):
            now[0] += 5.0
            sim.write_counters(tree)
            result = collector.poll()
            tracked = tracker.update(result.samples)
            start = time.process_time()
            diagnosis.update(result, tracked, 1.7e9 + now[0])
            if i >= 7:
                costs.append(time.process_time() - start)
    ms = statistics.median(costs) * 1e3
    return {"ms": round(ms, 3), "ms_per_interface": round(ms / ports, 3)}


def veth(polls: int) -> dict[str, float] | str:
    if os.geteuid() != 0:
        return "skipped: needs root"
    ns = f"nwbench-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        batch = "".join(f"link add bva{i} type veth peer name bvb{i}\nlink set bva{i} up\n"
                        f"link set bvb{i} up\n" for i in range(16))
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input=batch, text=True, check=True)
        out = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c",
                              CODE_VETH.replace("POLLS", str(polls))],
                             capture_output=True, text=True, check=True).stdout
        doc = json.loads(out.strip().splitlines()[-1])
        return {"interfaces": doc["interfaces"], "ms": round(doc["ms"], 3),
                "ms_per_interface": round(doc["ms"] / max(1, doc["interfaces"]), 3)}
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def main() -> None:
    polls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(json.dumps({"polls": polls, "load": float(load), "demo_4": demo(4, polls),
                      "demo_30": demo(30, polls), "veth_32": veth(polls)}, indent=1))


if __name__ == "__main__":
    main()
