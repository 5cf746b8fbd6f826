"""`nicwatch record` of a deliberately skewed run, for real (subnet 44): one UDP flow over a
veth pair with 4 queues. Its report names the hot queue, its share and its CPU.

veth hands each packet to the peer's rx queue of the tx queue the sender's flow hash picked,
so one flow lands on one queue. veth counts packets per rx queue (rx_queue_N_xdp_packets)
only on its NAPI path: GRO on at the receiver, TSO off at the sender
(veth_skb_is_eligible_for_gro). veth has no interrupts (its NAPI poll runs on the CPU that
sent the packet), so the test gives each rx queue an RPS CPU: the CPU the report names for
a queue is the one nicwatch read from queues/rx-<n>/rps_cpus."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from netns import PYTHON, make_veth_pair, ns_sh
from snapshot_helpers import neighbours

pytestmark = pytest.mark.netns

NICWATCH = str(Path(sys.executable).parent / "nicwatch")
COUNT = 4000


def one_flow(src: str, dst: str) -> str:
    """CMD: COUNT datagrams from one socket (one source port: one flow hash), bounded."""
    return (f"import socket\n"
            f"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('{src}', 0))\n"
            f"for _ in range({COUNT}): s.sendto(b'x' * 64, ('{dst}', 9))\n")


def queue_packets(ns: str, dev: str) -> dict[int, int]:
    """The kernel's own per-queue counts: `ethtool -S` rx_queue_N_xdp_packets."""
    out = ns_sh(ns, "ethtool", "-S", dev).stdout
    return {int(q): int(n) for q, n in
            re.findall(r"rx_queue_(\d+)_xdp_packets:\s*(\d+)", out)}


def test_record_of_one_hot_flow_names_the_hot_queue_its_share_and_its_cpu(tmp_path):
    cpus = os.cpu_count() or 1
    # each rx queue's RPS CPU, shifted so that no queue's CPU is its own number
    rps = {q: (q + 1) % cpus for q in range(4)}
    pair = make_veth_pair(queues=4, subnet=44)
    out = tmp_path / "run"
    try:
        neighbours(pair)
        ns_sh(pair.ns_b, "ethtool", "-K", pair.b, "gro", "on")
        ns_sh(pair.ns_a, "ethtool", "-K", pair.a, "tso", "off")
        for q, cpu in rps.items():
            ns_sh(pair.ns_b, "sh", "-c", f"echo {1 << cpu:x} > "
                  f"/sys/class/net/{pair.b}/queues/rx-{q}/rps_cpus")
        r = subprocess.run(
            ["ip", "netns", "exec", pair.ns_b, NICWATCH, "record", "-o", str(out),
             "--interval=0.2s", f"--interfaces.include={pair.b}", "--",
             "ip", "netns", "exec", pair.ns_a, PYTHON, "-c", one_flow(pair.addr_a, pair.addr_b)],
            capture_output=True, text=True, timeout=120)
        kernel = queue_packets(pair.ns_b, pair.b)
    finally:
        pair.delete()
    assert r.returncode == 0, r.stderr
    assert len(kernel) == 4 and sum(kernel.values()) >= COUNT
    hot = max(kernel, key=lambda q: kernel[q])  # where the kernel put the flow
    assert kernel[hot] >= COUNT  # the one flow: every datagram on one queue
    cpu = rps[hot]

    rep = json.loads((out / "report.json").read_text())
    (iface,) = rep["interfaces"]
    rx = iface["receive_path"]
    assert (rx["queues_counted"], rx["queues_in_use"]) == (4, 4)
    busiest = rx["queues"][0]
    assert busiest["queue"] == hot and busiest["packets"] == kernel[hot]
    assert busiest["share"] == pytest.approx(kernel[hot] / sum(kernel.values()))
    assert busiest["share"] > 0.99 and rx["busiest_ratio"] > 3.9
    assert (busiest["irq_cpus"], busiest["rps_cpus"]) == ([], [cpu])
    # the hot CPU: the queues it serves and their packets, with its softnet counts
    top = rx["cpus"][0]
    assert top["cpu"] == cpu and hot in top["queues"]
    assert top["packets"] == sum(kernel[q] for q in top["queues"])
    assert top["time_squeeze"] is not None and top["dropped"] is not None
    # the CPUs serving it (every CPU with an RPS mask here) processed the flow's packets.
    # Which of them did is veth's own: it hands the peer the skb with the sender's tx queue
    # in queue_mapping, which RPS reads as rx queue q-1 (queue 0: rx-0), so the mask applied
    # is rx-<q-1>'s (measured: queue 2's packets on rx-1's CPU, queue 3's on rx-2's)
    assert sorted(c["cpu"] for c in rx["cpus"]) == sorted(set(rps.values()))
    assert sum(c["processed"] for c in rx["cpus"]) >= kernel[hot], (rx, kernel)

    text = (out / "report.txt").read_text()
    assert (f"busiest queue {hot}: {kernel[hot]:,} packets, "
            f"{100 * busiest['share']:.2f}%") in text
    assert f"on CPU {cpu} (rps)." in text
    assert "CPUs serving it" in text and r.stderr.endswith(text)
    assert "Receive path</h3>" in (out / "report.html").read_text()
