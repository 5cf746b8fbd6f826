"""One host of tests/e2e/test_fabric_prometheus.py: `python fabric_host.py SPEC-JSON` inside
the host's network namespace runs the daemon's own wiring (build_collector, Daemon, its
SIGTERM handling) over the host's veth `data`, with every real source including the LLDP
receiver, and stands in only for what a veth cannot have, as fixture_ethtool does for
hardware this machine cannot have:

* the port presents itself as an ixgbe (driver info and firmware ``firmware``), with the
  ring sizes ``ring`` (a veth has none) and, beside the veth's real statistics, ixgbe's
  ``rx_crc_errors`` growing by ``crc_per_second`` (a veth never sees a bad frame);
* its IEEE PFC configuration (dcbnl) has PFC on ``pfc`` (a veth has no DCB).

SPEC: {"flags": {setting: value}, "ring": N, "crc_per_second": N, "pfc": [priorities],
"firmware": str}."""

from __future__ import annotations

import json
import sys
import time

from nicwatch import log
from nicwatch.config import build
from nicwatch.daemon import Daemon, build_collector
from nicwatch.model import DriverInfo, IeeePfc, Rings, StatSet
from nicwatch.sources.dcbnl import DcbSource
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl, EthtoolIoctlSource

PORT = "data"


class PortIoctl(EthtoolIoctl):
    def __init__(self, spec: dict) -> None:
        super().__init__()
        self.spec = spec
        self.started = time.monotonic()

    def driver_info(self, ifname: str) -> DriverInfo:
        real = super().driver_info(ifname)
        if ifname != PORT:
            return real
        return DriverInfo("ixgbe", real.version, self.spec["firmware"], real.bus_info,
                          real.n_stats + 1)

    def statistics(self, ifname: str) -> StatSet:
        real = super().statistics(ifname)
        if ifname != PORT:
            return real
        crc = int((time.monotonic() - self.started) * self.spec["crc_per_second"])
        return StatSet((*real.names, "rx_crc_errors"), (*real.values, crc), real.generation)

    def rings(self, ifname: str) -> Rings:
        if ifname != PORT:
            return super().rings(ifname)
        return Rings(self.spec["ring"], self.spec["ring"], 8192, 8192)


class PortDcb:
    """dcbnl's IEEE_GET for the port: PFC on the spec's priorities, no peer attributes."""

    def __init__(self, spec: dict) -> None:
        self.pfc = IeeePfc(tuple(spec["pfc"]), 8, False, 0, None, None)

    def ieee(self, ifname: str):
        return (self.pfc, None) if ifname == PORT else (None, None)

    def close(self) -> None:
        pass


def main() -> None:
    spec = json.loads(sys.argv[1])
    config = build(None, spec["flags"])
    log.configure(config.log_level, config.log_format)
    collector = build_collector(config)
    for i, source in enumerate(collector.sources):
        if isinstance(source, EthtoolIoctlSource):
            source.close()
            collector.sources[i] = EthtoolIoctlSource(PortIoctl(spec))
        elif isinstance(source, DcbSource):
            source.close()
            collector.sources[i] = DcbSource(PortDcb(spec))
    Daemon(config, collector=collector).run()


if __name__ == "__main__":
    main()
