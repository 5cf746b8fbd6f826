"""Cost of decoding one pluggable module's EEPROM, per memory map; prints one JSON document.

  python benchmarks/module_decode.py [REPEATS]

For each real dump in tests/fixtures/module (an SFP with diagnostics, a QSFP28, an 800G CMIS
OSFP with 8 lanes): CPU time (``time.process_time``, median of REPEATS batches of 200) of
``decode`` (bytes -> values), of ``series`` (what a poll pays on a new EEPROM read: decode
plus the Sample's series keys) and of ``gauges`` on an EEPROM already decoded for that
interface (what every other poll pays until the next module read).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from nicwatch.normalize.module import decode, gauges, series
from nicwatch.normalize.module.hexdump import parse

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "module"
DUMPS = {"sff8472": "sfp-oem-10g-lr-go-ethtool.txt", "sff8636": "qsfp28-fs-ir4-go-ethtool.txt",
         "cmis": "osfp-800g-dr8-juniper.txt"}
BATCH = 200


def per_call_us(f, repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(BATCH):
            f()
        runs.append((time.process_time() - t0) / BATCH * 1e6)
    return round(statistics.median(runs), 1)


def main(repeats: int) -> dict:
    out = {}
    for kind, name in DUMPS.items():
        eeprom = parse((FIXTURES / name).read_text()).eeprom
        gauges(eeprom, "bench0")
        out[kind] = {"dump": name, "values": len(decode(eeprom)),
                     "decode_us": per_call_us(lambda e=eeprom: decode(e), repeats),
                     "new_read_us": per_call_us(lambda e=eeprom: series(e), repeats),
                     "same_read_us": per_call_us(lambda e=eeprom: gauges(e, "bench0"), repeats)}
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 15), indent=1))
