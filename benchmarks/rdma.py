"""What the RDMA stage costs per poll on the simulated 30-port ConnectX host; prints one JSON
document.

  python benchmarks/rdma.py [ROUNDS]

The host is the demo's (nicwatch.demo.simulate, ``demo_ports(30)``): 30 ConnectX RoCE ports,
each with 29 ``hw_counters`` files and 21 IB PortCounters files (``counters/``), written as
a sysfs tree. Per poll of ``RdmaSource.read_ports`` (CPU time of this process,
``time.process_time``, median of 5 batches of ROUNDS polls; the slow attributes within
their refresh, as in the daemon):

* ``sysfs_ms``: no RDMA netlink (every hw_counters and counters file read each poll);
* ``netlink_ms``: the hardware counters through RDMA netlink (one ``PORT_GET`` and one
  ``STAT_GET`` per port in one datagram), the PortCounters files from sysfs. The kernel is
  a replay of tests/helpers/fixture_rdma.KernelRdma's replies (rdma_netlink.h layout,
  the device dump and the batch), built once: a poll pays the sequence numbers written into
  them and nicwatch's whole reply path (split_batch, the decoders), not the double's
  message building; the socket's system calls are not in it (no RDMA netlink here);
* ``netlink_no_portcounters_ms``: the same with the ``counters/`` files gone (what the
  PortCounters cost).

The counter files are kept open and re-read with pread, as the daemon does on the live
``/sys`` (``keep_open``); ``NICWATCH_BENCH_REOPEN=1`` opens each file every poll instead.

Target (issue #28): the RDMA stage under 3 ms per poll for this host through netlink.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from fixture_rdma import Device, KernelRdma, Port
from timing import per_call

from nicwatch.demo.simulate import Simulation, demo_ports
from nicwatch.sources import rdma_netlink as nl
from nicwatch.sources.netlink import NLMSGHDR, KernelError, message, split_batch
from nicwatch.sources.rdma import RdmaSource

PORTS = 30
TARGET_MS = 3.0
# The daemon keeps the live /sys counter files open (RdmaSource keep_open); the tree here is
# not rewritten while measured, so it may too. NICWATCH_BENCH_REOPEN=1 opens every file each
# poll instead (what a fixture tree gets, and the daemon before keep_open).
KEEP_OPEN = os.environ.get("NICWATCH_BENCH_REOPEN") != "1"


class ReplayRdma(KernelRdma):
    """KernelRdma whose batch replies are built once per request layout and replayed with
    the request's sequence numbers, so a poll measures nicwatch, not the double."""

    def __init__(self, *devices: Device) -> None:
        super().__init__(*devices)
        self._replies: dict[bytes, tuple[bytes, list[int]]] = {}
        self._dump: list[bytes] | None = None

    def _exchange(self, data: bytes, seq: int) -> list[bytes]:
        """The device dump's replies (split from their datagram, as the socket's exchange
        returns them), built once: nicwatch's part, parsing each, stays measured."""
        if self._dump is None:
            self._dump = super()._exchange(data, seq)
        return self._dump

    def _exchange_batch(self, data: bytes, first: int,
                        count: int) -> dict[int, list[bytes] | KernelError]:
        layout = bytearray(data)
        pos = 0
        while pos < len(layout):  # the request without its sequence numbers
            length = NLMSGHDR.unpack_from(layout, pos)[0]
            struct.pack_into("=I", layout, pos + 8, 0)
            pos += (length + 3) & ~3
        key = bytes(layout)
        cached = self._replies.get(key)
        if cached is None:
            cached = self._build(data)
            self._replies[key] = cached
        reply, offsets = cached
        out = bytearray(reply)
        for i, offset in enumerate(offsets):
            struct.pack_into("=I", out, offset + 8, first + i)
        results: dict[int, list[bytes] | KernelError] = {}
        split_batch(bytes(out), first, count, 0, False, {}, results)
        return results

    def _build(self, data: bytes) -> tuple[bytes, list[int]]:
        out, offsets, pos = bytearray(), [], 0
        while pos < len(data):
            length, msg_type, _flags, seq, _pid = NLMSGHDR.unpack_from(data, pos)
            body = data[pos + NLMSGHDR.size:pos + length]
            pos += (length + 3) & ~3
            index = nl.attribute_index(body, 0, len(body))
            dev = self._device(nl.decode_uint(body, *index[nl.RDMA_NLDEV_ATTR_DEV_INDEX]))
            port = nl.decode_uint(body, *index[nl.RDMA_NLDEV_ATTR_PORT_INDEX])
            assert dev is not None
            cmd = msg_type - (nl.RDMA_NL_NLDEV << 10)
            offsets.append(len(out))
            if cmd == nl.RDMA_NLDEV_CMD_PORT_GET:
                out += message(nl.nldev_type(nl.RDMA_NLDEV_CMD_GET), 0, seq,
                               self.port_info(dev, port))
            else:
                out += message(msg_type, 0, seq, self.stat_info(dev, port))
        return bytes(out), offsets


def devices(sim: Simulation, root: Path) -> list[Device]:
    """The simulated host's RDMA devices as the kernel's netlink would list them: each
    port's hardware counters are its hw_counters files' values."""
    out = []
    for i, spec in enumerate(sim.ports.values()):
        hw = root / "class/infiniband" / spec.rdma_device / "ports/1/hw_counters"
        counters = {f.name: int(f.read_text()) for f in sorted(hw.iterdir())
                    if f.name != "lifespan"}
        out.append(Device(i + 1, spec.rdma_device,
                          {1: Port(netdev=spec.name, ifindex=spec.ifindex, counters=counters)}))
    return out


def per_poll(fn: Callable[[], object], rounds: int) -> float:
    """Median CPU milliseconds of one call over 5 batches of ``rounds`` calls."""
    return round(per_call(fn, rounds) * 1e3, 3)


def measure(root: Path, netlink: KernelRdma | None, rounds: int) -> float:
    source = RdmaSource(root, netlink, refresh=3600.0, keep_open=KEEP_OPEN)
    ports = source.read_ports()  # the first poll reads the slow attributes too
    assert len(ports) == PORTS and all(not p.problems for p in ports), ports[0].problems
    assert {p.source for p in ports} == {"sysfs" if netlink is None else "netlink"}
    return per_poll(source.read_ports, rounds)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    sim = Simulation(demo_ports(PORTS))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sys"
        sim.write_sysfs(root)
        files = {group: sum(1 for _ in root.glob(f"class/infiniband/*/ports/1/{group}/*"))
                 for group in ("hw_counters", "counters")}
        out: dict[str, object] = {
            "ports": PORTS, "files": files, "rounds": rounds,
            "sysfs_ms": measure(root, None, rounds),
            "netlink_ms": measure(root, ReplayRdma(*devices(sim, root)), rounds),
        }
        for port_dir in root.glob("class/infiniband/*/ports/1/counters"):
            shutil.rmtree(port_dir.resolve())
        out["netlink_no_portcounters_ms"] = measure(root, ReplayRdma(*devices(sim, root)),
                                                    rounds)
    out["keep_open"] = KEEP_OPEN
    out["target_ms"] = TARGET_MS
    out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
