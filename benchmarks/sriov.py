"""What --collector.vfs costs per poll; prints one JSON document.

  ip netns exec NS python benchmarks/sriov.py [ROUNDS]

* real: the kernel's RTM_GETLINK reply with RTEXT_FILTER_VF in this namespace, asked per
  ifindex (what the source does, for each SR-IOV PF) and as one dump of every interface;
  CPU time of this process per request (``time.process_time``, median of 5 batches);
* parse: parse_vf_link() on kernel-layout replies of a PF with 64 and 256 VFs (all eight
  counters each; built by tests/helpers/fixture_sriov.py), the source's zero-fill screen of
  those VFs against the previous poll's, then normalize() of a Reading holding them, and
  the series that adds.

Veths have no parent device, so the real replies carry no VF list: they give the request
and the walk, the doubles give the per-VF cost.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from timing import per_call

from nicwatch.model import NetClass, Reading, SriovState
from nicwatch.normalize import Normalizer, normalize
from nicwatch.sources.sriov import SriovNetlink, SriovSource, parse_vf_link

from fixture_sriov import Vf, newlink

STATS = {"rx_packets": 123456789, "tx_packets": 98765432, "rx_bytes": 1 << 40,
         "tx_bytes": 1 << 39, "broadcast": 1234, "multicast": 5678, "rx_dropped": 42,
         "tx_dropped": 7}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    out: dict = {}
    names = socket.if_nameindex()
    with SriovNetlink() as nl:
        index = next(i for i, n in names if n != "lo")
        out["real"] = {
            "interfaces": len(names),
            "per_ifindex_us": round(per_call(lambda: nl.vfs(index), rounds) * 1e6, 1),
            "dump_us": round(per_call(nl.dump, rounds) * 1e6, 1),
        }
    out["parse"] = {}
    for count in (64, 256):
        vfs = [Vf(i, mac=f"02:00:00:00:{i >> 8:02x}:{i & 255:02x}", vlan=100 + i % 8,
                  spoofchk=1, trust=0, stats=STATS) for i in range(count)]
        payload = newlink("pf0", vfs)
        _n, _i, num, parsed = parse_vf_link(payload)
        nc = NetClass("pf0", 5, None, "up", 1500, 100000, "full", True, None, None, None,
                      None, "0000:41:00.0", "mlx5_core")
        reading = Reading("pf0", 0, 0, nc, sriov=SriovState(count, 256, num, parsed))
        bare = normalize(Reading("pf0", 0, 0, nc))
        sample = normalize(reading)
        n = max(1, rounds // count)
        kept = Normalizer()  # as the collector keeps one
        source = SriovSource("/nonexistent", None)
        seen: dict = {}
        source._screen(5, num, parsed, seen)  # the previous poll
        source._seen = seen

        def screen(source=source, num=num, parsed=parsed) -> None:
            source._screen(5, num, parsed, {})

        out["parse"][str(count)] = {
            "reply_bytes": len(payload),
            "parse_us": round(per_call(lambda p=payload: parse_vf_link(p), n) * 1e6, 1),
            "screen_us": round(per_call(screen, n) * 1e6, 1),
            "normalize_extra_us": round((per_call(lambda r=reading, k=kept: k.normalize(r), n)
                                         - per_call(lambda c=nc, k=kept: k.normalize(Reading(
                                             "pf0", 0, 0, c)), n)) * 1e6, 1),
            "series_added": (len(sample.counters) + len(sample.gauges)
                             - len(bare.counters) - len(bare.gauges)),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
