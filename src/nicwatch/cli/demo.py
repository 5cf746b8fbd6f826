"""`nicwatch demo`: the real daemon over simulated ConnectX-class ports, with scripted faults.

For trying the dashboards and alert rules without the hardware: a 200G card trained at
PCIe Gen4 x8, PFC PAUSE bursts, a marginal optic with FEC errors, and one port with a
1,024-entry receive ring among 8,192s (see nicwatch.demo.simulate). The poll loop, tracker,
exporter and HTTP server are the ones `nicwatch serve` runs; only the kernel is replaced:
a generated sysfs tree in a temporary directory, and simulated ethtool ioctl and netlink
sources. Every port says `driver_version="simulated"` in `nic_info`, and the log starts
with a `simulated_hardware` event. The demo's configuration file expects what a RoCE fabric
host should have (rings 8192, MTU 9000, PCIe at the card's maximum, PFC on priority 3), so
the faults also show up as expectation violations. A capture trigger on PFC frames turns
each PAUSE burst into an incident (`nicwatch incidents --web.url http://127.0.0.1:10847`),
kept in the demo's temporary directory until it exits.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import structlog

from nicwatch import log as logging_setup
from nicwatch.cli import common
from nicwatch.collect import Collector, Selection
from nicwatch.config import build
from nicwatch.demo.fabric import SimulatedLldp
from nicwatch.demo.simulate import (
    MAX_PORTS,
    MIN_PORTS,
    SimulatedDcb,
    SimulatedDevlink,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    SimulatedModules,
    SimulatedNetdev,
    SimulatedVfs,
    Simulation,
    SysfsRefresher,
    demo_ports,
)
from nicwatch.sources.sriov import SriovSource
from nicwatch.values import DEFAULT_PORT, ConfigError

EXIT_USAGE = common.EXIT_USAGE
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"

# The demo host's configuration file: the tuning a RoCE fabric host is meant to have
# (deploy/roce-fabric.toml), which the scripted ring and PCIe faults violate.
CONFIG = """\
[[expect]]
driver = "mlx5_core"
rx_ring = 8192
tx_ring = 8192
mtu = 9000
pcie_speed = "max"
pcie_width = "max"
pfc = [3]
pause_rx = false
pause_tx = false
fec_mode = "rs"

[[consistent]]
group = "fabric"
driver = "mlx5_core"
checks = ["rx_ring", "tx_ring", "mtu", "channels"]

# Incident capture: port 1's PFC PAUSE bursts on priority 3 (8,000 frames/s) open an
# incident; `nicwatch incidents --web.url http://127.0.0.1:10847` lists them.
[capture]
before = "1m"
after = "30s"

[[capture.trigger]]
family = "nic_rx_pfc_frames_total"
rate_above = 1000
"""

log = structlog.get_logger("nicwatch.demo")


def configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    common.add_settings(p, ("interval", "web.listen_address", "log.level", "log.format"),
                        config_file=False, helps={"web.listen_address": (
                            f"Address to serve /metrics on (default {DEFAULT_LISTEN}, loopback "
                            "only: it is a demo; :PORT serves every address).")})
    p.set_defaults(**{"web.listen_address": DEFAULT_LISTEN})  # loopback: it is a demo
    p.add_argument("--ports", type=int, default=MIN_PORTS, metavar="N",
                   help=f"simulated ports, {MIN_PORTS} to {MAX_PORTS} (default {MIN_PORTS})")
    p.add_argument("--seed", type=int, default=1, help="seed for the traffic noise (default 1)")
    return p


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    return configure(common.add_command(
        subparsers, "demo",
        description=f"{__doc__.splitlines()[0]} Serves on {DEFAULT_LISTEN} unless "
        "--web.listen-address says otherwise."))


def run(args: argparse.Namespace) -> int:
    from nicwatch.daemon import Daemon

    try:
        ports = demo_ports(args.ports)
    except ValueError as e:
        print(f"nicwatch demo: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    root = Path(tempfile.mkdtemp(prefix="nicwatch-demo-"))
    try:
        sysfs = root / "sys"
        config_file = root / "nicwatch.toml"
        config_file.write_text(CONFIG)
        # the simulation has module EEPROMs and VFs: their collectors are on (the daemon
        # drops a source of its collector that the configuration turns off)
        flags = {"collector.module": "true", "collector.vfs": "true",
                 **common.given_flags(args), "path.sysfs": str(sysfs),
                 "state.file": str(root / "identity.json"),
                 "interfaces.include": "|".join(p.name for p in ports)}
        config = build(str(config_file), flags)
        logging_setup.configure(config.log_level, config.log_format)
        simulation = Simulation(ports, seed=args.seed)
        simulation.write_sysfs(sysfs)
        procfs = root / "proc"  # the receive path's files only: the host's /proc stays
        simulation.write_procfs(procfs)
        log.warning("simulated_hardware", ports=[p.name for p in ports], sysfs=str(sysfs),
                    detail="nicwatch demo: every port is simulated (driver_version=\"simulated\"); "
                    "nothing here is real hardware")
        for port in ports:
            log.info("simulated_port", device=port.name, card=port.card,
                     speed_gbps=port.speed_mbps // 1000,
                     pcie=f"{port.pcie_speed.split()[0]} GT/s x{port.pcie_width}",
                     rx_ring=port.rx_ring, pause_bursts=port.pause_bursts,
                     bad_optic=port.bad_optic)
        collector = Collector(
            sysfs, Selection(config.interfaces_include),
            ioctl=SimulatedEthtool(simulation), netlink=SimulatedEthtoolNetlink(simulation),
            dcb=SimulatedDcb(simulation), devlink=SimulatedDevlink(simulation),
            module=SimulatedModules(simulation), netdev=SimulatedNetdev(simulation),
            procfs=procfs)
        collector.sources.append(SriovSource(sysfs, SimulatedVfs(simulation)))
        collector.sources.append(SimulatedLldp(simulation))
        refresher = SysfsRefresher(simulation, sysfs, period=min(1.0, config.interval / 2))
        daemon = Daemon(config, str(config_file), flags, collector=collector)
        daemon.install_signals()
        refresher.start()
        try:
            daemon.run()
        except OSError as e:  # the listen address: in use, or not ours to bind
            print(f"nicwatch demo: error: {config.web_listen_address}: {e.strerror or e}",
                  file=sys.stderr)
            return EXIT_USAGE
        finally:
            refresher.stop()
    except ConfigError as e:
        print(f"nicwatch demo: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        self.exit(EXIT_USAGE, f"nicwatch demo: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(configure(_Parser(prog="nicwatch demo")).parse_args(argv))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
