"""CPU cost of the module collector (--collector.module), on the double of the kernel's
MODULE_EEPROM_GET replies built from real modules' EEPROMs; prints one JSON document.

  python benchmarks/module_read.py [REPEATS]

* ``read_us``: one module read by the worker thread (one request per 128-byte half: build it,
  frame the kernel's reply, take DATA), per memory map. The double's own work (checking the
  request as eeprom.c does, building the reply datagram) is included, so this is an upper
  bound of nicwatch's user-space CPU per module per --collector.module.interval. The I2C time
  the kernel and the NIC firmware spend (milliseconds per page on real hardware; the thread
  waits, it does not burn CPU) cannot be measured here: there is no module on this machine.
* ``poll_us``: what the counter poll pays, ``read(poll)`` of the source for 32 interfaces
  with modules read: a copy of the latest EEPROM per interface, no kernel call.

CPU time is ``time.process_time`` (the whole process), median of REPEATS batches.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

from module_decode import DUMPS, per_call_us

from nicwatch.model import NetClass
from nicwatch.normalize.module import pages_to_read
from nicwatch.sources import Poll
from nicwatch.sources.ethtool_module import EthtoolModuleSource, KernelModuleReader

from fixture_module import KernelModuleEeprom, fixture_eeprom

PORTS = 32


def main(repeats: int) -> dict:
    out: dict = {}
    for kind, name in DUMPS.items():
        kernel = KernelModuleEeprom({1: ("eth1", fixture_eeprom(name))})
        reader = KernelModuleReader(kernel, None, pages_to_read)
        reader.read_module(1, "eth1")
        halves = len(kernel.requests)
        out[kind] = {"dump": name, "halves": halves,
                     "read_us": per_call_us(lambda r=reader: r.read_module(1, "eth1"), repeats)}
    eeprom = fixture_eeprom(DUMPS["cmis"])
    kernel = KernelModuleEeprom({i: (f"eth{i}", eeprom) for i in range(1, PORTS + 1)})
    source = EthtoolModuleSource(KernelModuleReader(kernel, None, pages_to_read), interval=3600)
    interfaces = [NetClass(f"eth{i}", i, *[None] * 12) for i in range(1, PORTS + 1)]
    source.read(Poll(interfaces))
    source.wait_first_read(30)
    out["poll_us"] = {"ports": PORTS,
                      "read_poll_us": per_call_us(lambda: source.read(Poll(interfaces)),
                                                  repeats)}
    source.close()
    return out


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 15), indent=1))
