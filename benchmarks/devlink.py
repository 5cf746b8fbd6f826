"""What the devlink source costs per poll in nicwatch's own process; prints one JSON document.

  python benchmarks/devlink.py [POLLS]

No devlink hardware here, so the kernel's answers are the test double's datagrams
(tests/helpers/fixture_devlink.py: messages in the kernel's layout built from
tests/fixtures/devlink/mlx5-cx6dx.txt), built once and replayed: what is timed is everything
nicwatch does with a reply after recv() (splitting the datagram, decoding both dumps, mapping
reporters to interfaces) plus the devlink part of normalize. The kernel's side (two dump
requests, a few hundred bytes per reporter) is not in it. CPU time of this process
(time.process_time), median over POLLS after 20 warm-up polls, for

  * dual:   one ConnectX-6 Dx, two PFs (10 reporters, 2 ports, 2 interfaces selected);
  * host16: eight such cards (80 reporters, 16 ports, 16 interfaces).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

from nicwatch.model import Reading
from nicwatch.normalize.devlink import devlink_counters, devlink_gauges
from nicwatch.sources import Poll
from nicwatch.sources import devlink as dl
from nicwatch.sources.netlink import NLMSGHDR, split_replies

from fixture_devlink import (
    IFS,
    MLX5,
    KernelDouble,
    TextPort,
    TextReporter,
    datagram,
    netclass,
    port_message,
    reporter_message,
)


class Replay(dl.DevlinkNetlink):
    """The double's two datagrams, built once (for the sequence numbers 1 and 2 of each
    read_all); each exchange only splits them, as the real socket's does after recv()."""

    def __init__(self, reporters: list[TextReporter], ports: list[TextPort],
                 ifindexes: dict[str, int]) -> None:
        self._seq, self._family = 0, 0x1c
        self.reporters = [reporter_message(r) for r in
                          sorted(reporters, key=lambda r: (r.handle, r.port is not None))]
        self.ports = [port_message(p, ifindexes.get(p.netdev or "")) for p in ports]
        self.datagrams = {dl.DEVLINK_CMD_HEALTH_REPORTER_GET: datagram(self.reporters, 1),
                          dl.DEVLINK_CMD_PORT_GET: datagram(self.ports, 2)}

    def _exchange(self, data: bytes, seq: int) -> list[bytes]:
        cmd = data[NLMSGHDR.size]
        if cmd == dl.DEVLINK_CMD_PORT_GET:
            self._seq = 0  # the next read_all asks with 1 and 2 again
        return split_replies(self.datagrams[cmd], seq, 4, strip=True)[0]

    def close(self) -> None:
        pass


def scenario(cards: int):
    base = KernelDouble(MLX5)
    reporters, ports, ifindexes, interfaces = [], [], {}, []
    for card in range(cards):
        for pf in (0, 1):
            old = f"pci/0000:08:00.{pf}"
            new = f"pci/0000:{0x10 + card:02x}:00.{pf}"
            reporters += [TextReporter(new, r.port, r.name, r.fields)
                          for r in base.reporters if r.handle == old]
            name = f"enp{card}s0f{pf}np{pf}"
            port = next(p for p in base.ports if p.handle == old)
            ports.append(TextPort(new, port.index, name, port.flavour, port.number))
            ifindexes[name] = 100 + 2 * card + pf
            interfaces.append(netclass(name, ifindexes[name], new.removeprefix("pci/")))
    return Replay(reporters, ports, ifindexes), interfaces


def measure(cards: int, polls: int) -> dict:
    reader, interfaces = scenario(cards)
    source = dl.DevlinkSource(reader)
    times = []
    for i in range(polls + 20):
        t0 = time.process_time()
        poll = Poll(interfaces)
        source.read(poll)
        for nc in interfaces:
            reading = Reading(device=nc.name, time=0.0, monotonic=0.0, netclass=nc,
                              **poll.parts[nc.name])
            devlink_counters(reading)
            devlink_gauges(reading)
        if i >= 20:
            times.append(time.process_time() - t0)
    assert not poll.errors and all(poll.parts[nc.name]["devlink_health"] for nc in interfaces)
    return {"cards": cards, "reporters": len(reader.reporters), "interfaces": len(interfaces),
            "median_us": round(statistics.median(times) * 1e6, 1),
            "min_us": round(min(times) * 1e6, 1), "max_us": round(max(times) * 1e6, 1)}


def main() -> int:
    polls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    assert IFS and MLX5.exists()
    print(json.dumps({"polls": polls, "dual": measure(1, polls), "host16": measure(8, polls)},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
