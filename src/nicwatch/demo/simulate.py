"""Simulated ConnectX-class ports for `nicwatch demo` and the end-to-end tests.

Nothing here is hardware, and everything says so: the driver version is ``simulated``
(so ``nic_info{driver_version="simulated"}``) and the demo logs a ``simulated_hardware``
event at start. The simulation feeds the daemon's *real* pipeline through the same three
doors a host has:

* :meth:`Simulation.write_sysfs` writes a sysfs tree (netdevs, PCI functions with their
  link and AER files under PCIe root ports, RDMA devices with ``hw_counters``), laid out
  like the fixture trees in ``tests/fixtures/sysfs`` (see their README), for
  ``--path.sysfs``; :class:`SysfsRefresher` keeps its counters moving;
* :class:`SimulatedEthtool` has the methods of
  :class:`nicwatch.sources.ethtool_ioctl.EthtoolIoctl` and returns mlx5_core statistics
  under the driver's real names;
* :class:`SimulatedEthtoolNetlink` has :meth:`~nicwatch.sources.ethtool_netlink.
  EthtoolNetlink.read_all`: rings, channels, PAUSE and FEC settings and the FEC block
  counters, which mlx5 reports only over ethtool netlink;
* :class:`SimulatedDcb` has :meth:`~nicwatch.sources.dcbnl.DcbNetlink.ieee_pfc`: PFC on
  priority 3, as a RoCE host configures it;
* :class:`SimulatedDevlink` has :meth:`~nicwatch.sources.devlink.DevlinkNetlink.read_all`:
  mlx5's devlink health reporters (fw, fw_fatal, vnic on the device; tx, rx on the uplink
  port), all healthy; the marginal-optic port's tx reporter recovered two errors before the
  demo started and holds their dump;
* :class:`SimulatedModules` has :meth:`~nicwatch.sources.ethtool_module.KernelModuleReader.
  read_module`: every port carries a real module's EEPROM (demo/module_eeprom.py);
* :class:`SimulatedVfs` has :meth:`~nicwatch.sources.sriov.SriovNetlink.vfs`: port 0's
  four SR-IOV VFs, each carrying a share of its netdev traffic, VF 3 dropping 0.2 % of what
  arrives for it;
* :class:`SimulatedNetdev` has :meth:`~nicwatch.sources.netdev_genl.NetdevGenl.read`: each
  port's eight channels as a 6.10+ mlx5 reports them (rx and tx queue per channel, linked to
  its NAPI, whose irq is the channel's completion vector) and their qstats; and
  :meth:`Simulation.write_procfs` writes the interrupts' affinities and /proc/net/softnet_stat
  (the completion vectors alternate over the host's two CPUs, as mlx5 spreads eight
  channels over a two-CPU node), with per-CPU interrupt counts in the sysfs tree.

The script (:func:`demo_ports`), the lab report's faults on otherwise healthy 400G ports:

* port 0: a ConnectX-6 200G card trained at PCIe Gen4 x8 under an x16-capable root port
  (the path carries 126 Gb/s, less than the line rate), with a trickle of correctable AER
  errors;
* port 1: PFC PAUSE bursts on priority 3, 30 s on / 30 s off, the peer holding the port
  paused 40 % of the time during a burst (20 % on average), with buffer-threshold events,
  port discards, ECN marks and CNPs while it lasts; and one bad lane: lane 3 of its 4 x 100G
  lanes at a pre-FEC BER of 8e-5, the port's own ratio near 2e-5 (docs/link-physics.md);
* port 2: a marginal optic: pre-FEC bit error ratio 3e-5 and a few uncorrectable FEC
  codewords, PCS symbol errors and CRC errors; on its RDMA port the same link shows as IB
  PortCounters symbol and receive errors, link downs and error recoveries, requester QPs
  that ran out of transport retries, and the 4-bit local_link_integrity_errors counter
  standing at its maximum (saturated: PMA counters stop there, docs/rdma.md);
* the last port: a 1,024-entry receive ring among 8,192s, and the out-of-buffer drops that
  come with it; and the receive flow-hash collision the lab report could not rule out for
  that host's slow direction: six of sixteen streams hash to receive queue 5, which takes
  3/8 of the packets (three times its fair share);
* with seven ports or more (``--ports 7``), port 4: a pause storm (its receive path hung:
  nothing arrives while it holds its peer paused 95 % of the time on priority 3), and
  port 5: RoCE transport loss (out-of-sequence packets and sequence NAKs with local ACK
  timeouts); the ports between are healthy;
* with ten ports or more (``--ports 10``), port 6: ECN not engaging (PFC on priority 3 while
  the fabric marks nothing: no ECN marks, no CNPs), port 7: congestion control misconfigured
  (ECN off at the notification point on priority 3, the lossless one, so it sends no CNPs),
  and port 8: receiver not ready (RNR NAKs with RDMA out-of-buffer drops: the application
  posts receive buffers too slowly);
* with eleven ports or more (``--ports 11``), port 9: its receive CPU saturated (all eight
  completion vectors on a third CPU of their own, 95 % of it in softirq, softnet time_squeeze
  rising there); :meth:`Simulation.write_procfs` writes /proc/stat's softirq column for
  every CPU (5 % on the two shared ones);
* with twelve ports or more (``--ports 12``), port 10: pausing its peer (the source): its
  receive buffer passes its threshold and it sends PFC on priority 3, holding the peer paused
  30 % of the time while traffic still arrives, without drops (lossless: PFC keeps the buffer
  from overflowing), so neither a pause storm nor a host receive bottleneck;
* with thirteen ports or more (``--ports 13``), port 11: configuration drift, its rx ring
  4,096 among 8,192s with nothing else wrong (the demo's ``[[consistent]]`` group flags it;
  docs/diagnosis.md shows drift as context, a verdict of its own on a port with no other).

Counters are integrals of per-second rates, advanced under a lock whenever any door is
read, so every reader sees one consistent, monotonic history.

The pieces live beside this face: demo/ports.py (the ports and their script),
demo/simulation.py (the shared state and its sysfs/procfs writers), demo/sysfs_tree.py (the
tree layout), demo/doubles.py (the kernel-reader doubles).
"""

from nicwatch.demo.doubles import (
    SimulatedDcb,
    SimulatedDevlink,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    SimulatedModules,
    SimulatedNetdev,
    SimulatedVfs,
)
from nicwatch.demo.ports import (
    BURST_ON,
    BURST_PAUSED,
    BURST_PERIOD,
    DRIVER,
    MAX_PORTS,
    MIN_PORTS,
    PFC_PRIORITY,
    VF_DROP_RATIO,
    VFS,
    PortSpec,
    demo_ports,
    stat_names,
)
from nicwatch.demo.simulation import Simulation, SysfsRefresher

__all__ = [
    "BURST_ON", "BURST_PAUSED", "BURST_PERIOD", "DRIVER", "MAX_PORTS", "MIN_PORTS",
    "PFC_PRIORITY", "VFS", "VF_DROP_RATIO", "PortSpec", "SimulatedDcb", "SimulatedDevlink",
    "SimulatedEthtool", "SimulatedEthtoolNetlink", "SimulatedModules", "SimulatedNetdev",
    "SimulatedVfs", "Simulation", "SysfsRefresher", "demo_ports", "stat_names",
]
