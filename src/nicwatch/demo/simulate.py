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
"""

from __future__ import annotations

import errno
import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from nicwatch.model import (
    Channels,
    DcbApp,
    DcbPeer,
    DcbQos,
    DevlinkHealthReporter,
    DevlinkInfo,
    DevlinkPort,
    DevlinkVersion,
    DriverInfo,
    EthtoolNetlinkInfo,
    FecParams,
    IeeeEts,
    IeeePfc,
    LinkState,
    ModuleEeprom,
    Napi,
    NetdevQueue,
    PauseParams,
    QueueStats,
    Rings,
    StatSet,
    VfInfo,
)
from nicwatch.sources.devlink import DevlinkResult
from nicwatch.sources.ethtool_ioctl import EthtoolError
from nicwatch.sources.ethtool_module import ModuleReadError
from nicwatch.sources.ethtool_netlink import NetlinkResult
from nicwatch.sources.netdev_genl import Dumps
from nicwatch.sources.sriov import VfError

DRIVER = "mlx5_core"
DRIVER_VERSION = "simulated"
MIN_PORTS = 4  # the 400G ports need three members for a peer median to single one out
MAX_PORTS = 30  # one root port per PCI device number on bus 0 (0x01..0x1f)
CHANNELS = 8
FEC_LANES = 4
LANE_SERDES_BITS = {50_000: 53.125e9, 100_000: 106.25e9}  # Mb/s a lane -> serdes bits/s
PFC_PRIORITY = 3
CNP_PRIORITY = 6
ROCE_DSCP, CNP_DSCP = 26, 48
DSCP_SELECTOR = 5  # IEEE_8021QAZ_APP_SEL_DSCP
HOST_CPUS = 2  # the simulated host's CPUs (one NUMA node), where the channels' vectors go
SKEWED_STREAMS = (1, 2, 1, 2, 1, 6, 1, 2)  # queue 5 took six of sixteen streams
PACKETS_PER_INTERRUPT = 32  # interrupt coalescing
IRQ_BASE, IRQS_PER_PORT = 100, 16  # port i's async vector is 100 + 16 i, then its channels'
PAUSE_FRAMES_PER_PAUSED_SECOND = 20_000  # XOFF refreshes at half the pause quanta at 400G
BURST_PERIOD = 60.0
BURST_ON = 30.0
BURST_PAUSED = 0.4
RDMA_SHARE = 0.9  # RoCE traffic bypasses the netdev counters
NETDEV_PACKET_BYTES = 1500
RDMA_PACKET_BYTES = 4096
STORM_MIN_PORTS = 7  # from this many ports, port 4 has a pause storm and port 5 RoCE loss
STORM_PAUSED = 0.95
# from this many ports, ports 6-8 add the congestion-control and RNR faults of the diagnosis
CONGESTION_MIN_PORTS = 10
ECN_OFF_PFC_PER_SECOND = 400.0  # PFC frames/s the peer sends while ECN does not engage
CPU_SATURATED_MIN_PORTS = 11  # from this many ports, port 9's receive CPU is saturated
SOFTIRQ_SHARE = 0.05  # of each shared CPU's time in softirq
SATURATED_SOFTIRQ_SHARE = 0.95  # of the saturated port's own CPU
SATURATED_SQUEEZES_PER_SECOND = 40.0  # softnet time_squeeze on it
PAUSING_MIN_PORTS = 12  # from this many ports, port 10 pauses its peer (the source)
PAUSING_SHARE = 0.3  # of the time it holds its peer paused: well under a storm's 0.8
DRIFT_MIN_PORTS = 13  # from this many ports, port 11's rx ring differs from its peers'
DRIFT_RX_RING = 4096


@dataclass(frozen=True, slots=True)
class PortSpec:
    """One simulated port: a single-port card in its own root port on bus 0."""

    name: str
    ifindex: int
    bdf: str
    root_port: str
    rdma_device: str
    card: str
    device_id: int
    speed_mbps: int
    pcie_speed: str  # "32.0 GT/s PCIe"
    pcie_width: int  # trained
    pcie_max_speed: str
    pcie_max_width: int
    mac: str
    rx_ring: int
    tx_ring: int = 8192
    ring_max: int = 8192
    pause_bursts: bool = False
    pre_fec_ber: float = 2e-8
    bad_optic: bool = False
    out_of_buffer_ratio: float = 0.0
    aer_correctable_per_second: float = 0.0
    vfs: int = 0  # SR-IOV VFs enabled (sriov_numvfs; sriov_totalvfs is 16)
    # streams per receive queue (channel): how RSS spread sixteen flows; even by default
    rx_streams: tuple[int, ...] = (2,) * 8
    # one lane of FEC_LANES with this pre-FEC BER of its own, on top of the port's
    # (docs/link-physics.md): (lane, bit error ratio at the lane's serdes rate)
    bad_lane: tuple[int, float] | None = None
    # diagnosis faults (demos of STORM_MIN_PORTS ports or more; docs/diagnosis.md)
    pause_storm: bool = False  # holds its peer paused 95 % of the time, nothing arriving
    transport_loss: bool = False  # RoCE out-of-sequence packets with ACK timeouts
    # (demos of CONGESTION_MIN_PORTS ports or more)
    ecn_not_engaging: bool = False  # PFC on priority 3, no ECN marks and no CNPs
    ecn_off: bool = False  # ECN disabled at the notification point on priority 3
    receiver_not_ready: bool = False  # RNR NAKs with RDMA out-of-buffer drops
    # (demos of CPU_SATURATED_MIN_PORTS ports or more) its vectors on a saturated CPU
    cpu_saturated: bool = False
    # (demos of PAUSING_MIN_PORTS ports or more) PFC sent on priority 3, traffic arriving
    pausing_peer: bool = False


def demo_ports(count: int = MIN_PORTS) -> tuple[PortSpec, ...]:
    """The scripted ports (see the module docstring); ``count`` between MIN_PORTS and
    MAX_PORTS, ValueError otherwise."""
    if not MIN_PORTS <= count <= MAX_PORTS:
        raise ValueError(f"--ports must be between {MIN_PORTS} and {MAX_PORTS}, got {count}")
    ports = []
    for i in range(count):
        bus = i + 1
        port = PortSpec(
            name=f"enp{bus}s0np0", ifindex=i + 2, bdf=f"0000:{bus:02x}:00.0",
            root_port=f"0000:00:{bus:02x}.1", rdma_device=f"mlx5_{i}",
            mac=f"b8:3f:d2:5e:{bus:02x}:00", card="ConnectX-7", device_id=0x1021,
            speed_mbps=400_000, pcie_speed="32.0 GT/s PCIe", pcie_width=16,
            pcie_max_speed="32.0 GT/s PCIe", pcie_max_width=16, rx_ring=8192,
            pre_fec_ber=2e-8 * (1 + i % 3))
        if i == 0:
            port = replace(port, card="ConnectX-6", device_id=0x101B, speed_mbps=200_000,
                           pcie_speed="16.0 GT/s PCIe", pcie_width=8,
                           pcie_max_speed="16.0 GT/s PCIe", aer_correctable_per_second=0.02,
                           vfs=VFS)
        elif i == 1:
            # and lane 3 of its 4 x 100G PAM4 lanes at 8e-5 (106.25 Gb/s a lane): the port's
            # own ratio stays near 2e-5, below the RS(544,514) threshold the lane is above.
            port = replace(port, pause_bursts=True, bad_lane=(3, 8e-5))
        elif i == 2:
            port = replace(port, pre_fec_ber=3e-5, bad_optic=True)
        elif i == count - 1:
            port = replace(port, rx_ring=1024, out_of_buffer_ratio=3e-3,
                           rx_streams=SKEWED_STREAMS)
        elif i == 4 and count >= STORM_MIN_PORTS:
            port = replace(port, pause_storm=True)
        elif i == 5 and count >= STORM_MIN_PORTS:
            port = replace(port, transport_loss=True)
        elif i == 6 and count >= CONGESTION_MIN_PORTS:
            port = replace(port, ecn_not_engaging=True)
        elif i == 7 and count >= CONGESTION_MIN_PORTS:
            port = replace(port, ecn_off=True)
        elif i == 8 and count >= CONGESTION_MIN_PORTS:
            port = replace(port, receiver_not_ready=True)
        elif i == 9 and count >= CPU_SATURATED_MIN_PORTS:
            port = replace(port, cpu_saturated=True)
        elif i == 10 and count >= PAUSING_MIN_PORTS:
            port = replace(port, pausing_peer=True)
        elif i == 11 and count >= DRIFT_MIN_PORTS:
            port = replace(port, rx_ring=DRIFT_RX_RING)
        ports.append(port)
    return tuple(ports)


def stat_names() -> tuple[str, ...]:
    """mlx5_core `ethtool -S` names of a port with PFC on priority 3 and stall detection,
    in the driver's group order (software, vport, PPCNT 802.3 / RFC 2863 / physical,
    per-priority, per-channel)."""
    names = [
        "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_csum_unnecessary",
        "rx_buff_alloc_err", "tx_queue_dropped", "tx_queue_stopped", "tx_queue_wake",
        "rx_out_of_buffer", "rx_if_down_packets",
        "rx_vport_unicast_packets", "rx_vport_unicast_bytes",
        "tx_vport_unicast_packets", "tx_vport_unicast_bytes",
        "rx_vport_rdma_unicast_packets", "rx_vport_rdma_unicast_bytes",
        "tx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_bytes",
        "tx_packets_phy", "rx_packets_phy", "rx_crc_errors_phy", "tx_bytes_phy", "rx_bytes_phy",
        "rx_symbol_err_phy", "rx_pause_ctrl_phy", "tx_pause_ctrl_phy", "rx_discards_phy",
        "tx_discards_phy", "link_down_events_phy", "rx_pcs_symbol_err_phy",
        "rx_corrected_bits_phy",
        *(f"rx_err_lane_{lane}_phy" for lane in range(FEC_LANES)),
        "rx_buffer_passed_thres_phy", "outbound_pci_stalled_rd", "outbound_pci_stalled_wr",
    ]
    for p in range(8):
        names += [f"rx_prio{p}_bytes", f"rx_prio{p}_packets", f"rx_prio{p}_discards",
                  f"tx_prio{p}_bytes", f"tx_prio{p}_packets"]
    p = PFC_PRIORITY
    names += [f"rx_prio{p}_pause", f"rx_prio{p}_pause_duration", f"tx_prio{p}_pause",
              f"tx_prio{p}_pause_duration", f"rx_prio{p}_pause_transition",
              "tx_pause_storm_warning_events", "tx_pause_storm_error_events"]
    for ch in range(CHANNELS):
        names += [f"ch{ch}_events", f"ch{ch}_poll"]
    for ch in range(CHANNELS):
        names += [f"rx{ch}_packets", f"rx{ch}_bytes", f"rx{ch}_buff_alloc_err"]
    for ch in range(CHANNELS):
        names += [f"tx{ch}_packets", f"tx{ch}_bytes"]
    return tuple(names)


# Counters kept per port (floats, integrated from rates); everything else derives from them.
_STATE = (
    "netdev_rx_bytes", "netdev_tx_bytes", "netdev_rx_packets", "netdev_tx_packets",
    "rdma_rx_bytes", "rdma_tx_bytes", "rdma_rx_packets", "rdma_tx_packets",
    "rx_paused_us", "tx_paused_us", "rx_pause_frames", "tx_pause_frames", "pause_transitions",
    "storm_warnings", "out_of_buffer", "rx_discards", "buffer_thres", "corrected_bits",
    "fec_corrected_blocks", "fec_uncorrectable_blocks", "pcs_symbol_errors", "crc_errors",
    "ecn_marked", "cnp_sent", "cnp_handled", "out_of_sequence", "packet_seq_err",
    "local_ack_timeout", "aer_correctable", "poll_events", "bad_lane_bits", "codewords",
    "rdma_symbol_errors", "rdma_rcv_errors", "rdma_link_downed", "failed_qps",
    "rnr_naks", "rdma_out_of_buffer", "time_squeeze",
)


class Simulation:
    """The shared state behind every door. ``clock`` is monotonic seconds (injectable for
    tests); all methods are thread-safe."""

    def __init__(self, ports: Iterable[PortSpec], seed: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ports: dict[str, PortSpec] = {p.name: p for p in ports}
        self.by_ifindex = {p.ifindex: p for p in self.ports.values()}
        self._clock = clock
        self._random = random.Random(seed)
        self._phase = {name: self._random.uniform(0, 2 * math.pi) for name in self.ports}
        self._lock = threading.Lock()
        self._start = self._last = clock()
        self._written: dict[Path, object] = {}  # sysfs file -> value, to rewrite only changes
        self._procfs: Path | None = None  # where write_procfs wrote, kept moving
        # Counters since "boot": a day of traffic at a third of line rate, so rates are
        # plausible from the first poll.
        self._state = {name: self._initial(p) for name, p in self.ports.items()}

    def _initial(self, port: PortSpec) -> dict[str, float]:
        state = dict.fromkeys(_STATE, 0.0)
        for key, rate in self._rates(port, 0.0).items():
            state[key] = rate * 86_400 / 3 if key.endswith(("bytes", "packets")) else 0.0
        return state

    def _rates(self, port: PortSpec, t: float) -> dict[str, float]:
        """Per-second rates of every state counter at ``t`` seconds into the script."""
        line = port.speed_mbps * 125_000
        phase = self._phase[port.name]
        paused = (BURST_PAUSED if port.pause_bursts and t % BURST_PERIOD < BURST_ON else 0.0)
        rx_util = (0.45 + 0.15 * math.sin(2 * math.pi * t / 120 + phase)) * (1 - paused)
        if port.pause_storm:  # its receive path hung: nothing arrives, its peer held paused
            rx_util = 0.0005
        tx_util = (0.40 + 0.15 * math.cos(2 * math.pi * t / 90 + phase)) * (1 - paused)
        rx_bytes, tx_bytes = rx_util * line, tx_util * line
        netdev_rx_packets = rx_bytes * (1 - RDMA_SHARE) / NETDEV_PACKET_BYTES
        rdma_rx_packets = rx_bytes * RDMA_SHARE / RDMA_PACKET_BYTES
        ecn = rdma_rx_packets * (2e-3 + 0.05 * paused)
        # the serdes rate of one lane (106.25 Gb/s at 100G a lane, 53.125 at 50G)
        lane_bits = LANE_SERDES_BITS.get(port.speed_mbps // FEC_LANES, 0.0)
        bad_lane_bits = port.bad_lane[1] * lane_bits if port.bad_lane else 0.0
        return {
            "netdev_rx_bytes": rx_bytes * (1 - RDMA_SHARE),
            "netdev_tx_bytes": tx_bytes * (1 - RDMA_SHARE),
            "netdev_rx_packets": netdev_rx_packets,
            "netdev_tx_packets": tx_bytes * (1 - RDMA_SHARE) / NETDEV_PACKET_BYTES,
            "rdma_rx_bytes": rx_bytes * RDMA_SHARE,
            "rdma_tx_bytes": tx_bytes * RDMA_SHARE,
            "rdma_rx_packets": rdma_rx_packets,
            "rdma_tx_packets": tx_bytes * RDMA_SHARE / RDMA_PACKET_BYTES,
            # The peer pauses us (rx) during a burst; we pause it a little in return.
            "rx_paused_us": paused * 1e6,
            "tx_paused_us": paused * 0.05 * 1e6,
            "rx_pause_frames": paused * PAUSE_FRAMES_PER_PAUSED_SECOND,
            "tx_pause_frames": paused * 0.05 * PAUSE_FRAMES_PER_PAUSED_SECOND,
            "pause_transitions": paused * 50,
            "storm_warnings": 1 / 600 if port.pause_bursts else 0.0,
            "rx_discards": paused * 20,
            "buffer_thres": paused * 10,
            "ecn_marked": ecn,
            "cnp_sent": ecn / 4,
            "cnp_handled": tx_bytes * RDMA_SHARE / RDMA_PACKET_BYTES * (1e-3 + 0.02 * paused),
            "local_ack_timeout": 0.2 * paused,
            "out_of_buffer": netdev_rx_packets * port.out_of_buffer_ratio,
            # Pre-FEC errors are on the line (idle codewords too), so they follow line rate.
            "corrected_bits": port.pre_fec_ber * line * 8 + bad_lane_bits,
            "bad_lane_bits": bad_lane_bits,
            "codewords": line * 8 / 5440,  # RS(544,514): 5440-bit codewords
            "fec_corrected_blocks": port.pre_fec_ber * line * 8 / 3,
            "fec_uncorrectable_blocks": 0.05 if port.bad_optic else 0.0,
            "pcs_symbol_errors": 0.05 if port.bad_optic else 0.0,
            "crc_errors": 0.02 if port.bad_optic else 0.0,
            "out_of_sequence": 0.01 if port.bad_optic else 0.0,
            "packet_seq_err": 0.005 if port.bad_optic else 0.0,
            # the optic's link as its RDMA port counts it (IB PortCounters, mlx5 hw_counters)
            "rdma_symbol_errors": 0.2 if port.bad_optic else 0.0,
            "rdma_rcv_errors": 0.1 if port.bad_optic else 0.0,
            "rdma_link_downed": 0.1 if port.bad_optic else 0.0,
            "failed_qps": 0.1 if port.bad_optic else 0.0,
            "aer_correctable": port.aer_correctable_per_second,
            "poll_events": 20_000,
            **self._diagnosis_faults(port),
        }

    @staticmethod
    def _diagnosis_faults(port: PortSpec) -> dict[str, float]:
        """The rates a pause storm or RoCE transport loss replaces."""
        if port.pause_storm:
            return {"tx_paused_us": STORM_PAUSED * 1e6,
                    "tx_pause_frames": STORM_PAUSED * PAUSE_FRAMES_PER_PAUSED_SECOND,
                    "storm_warnings": 0.1}
        if port.transport_loss:
            return {"out_of_sequence": 5.0, "packet_seq_err": 2.0, "local_ack_timeout": 0.5}
        if port.ecn_not_engaging:  # the peer pauses priority 3 (2 % of the time), no marks
            return {"ecn_marked": 0.0, "cnp_sent": 0.0, "cnp_handled": 0.0,
                    "rx_pause_frames": ECN_OFF_PFC_PER_SECOND,
                    "rx_paused_us": ECN_OFF_PFC_PER_SECOND / PAUSE_FRAMES_PER_PAUSED_SECOND
                    * 1e6}
        if port.ecn_off:  # marked packets arrive, the notification point sends no CNP
            return {"cnp_sent": 0.0}
        if port.receiver_not_ready:
            return {"rnr_naks": 3.0, "rdma_out_of_buffer": 40.0}
        if port.cpu_saturated:
            return {"time_squeeze": SATURATED_SQUEEZES_PER_SECOND}
        if port.pausing_peer:  # its rx buffer passes the threshold: PFC out, nothing dropped
            return {"tx_paused_us": PAUSING_SHARE * 1e6,
                    "tx_pause_frames": PAUSING_SHARE * PAUSE_FRAMES_PER_PAUSED_SECOND,
                    "buffer_thres": 10.0}
        return {}

    def advance(self) -> None:
        """Integrate every counter up to now (midpoint rates, a little noise)."""
        with self._lock:
            now = self._clock()
            dt = now - self._last
            if dt <= 0:
                return
            mid = (self._last + now) / 2 - self._start
            for name, port in self.ports.items():
                noise = self._random.uniform(0.95, 1.05)
                state = self._state[name]
                for key, rate in self._rates(port, mid).items():
                    state[key] += rate * dt * noise
            self._last = now

    def counters(self, name: str) -> Mapping[str, int]:
        """A port's state counters as integers, after advancing to now."""
        self.advance()
        with self._lock:
            return MappingProxyType({k: int(v) for k, v in self._state[name].items()})

    # ------------------------------------------------------------------ ethtool -S

    def ethtool_stats(self, name: str) -> dict[str, int]:
        port, c = self.ports[name], self.counters(name)
        phy_rx_bytes = c["netdev_rx_bytes"] + c["rdma_rx_bytes"]
        phy_tx_bytes = c["netdev_tx_bytes"] + c["rdma_tx_bytes"]
        phy_rx_packets = c["netdev_rx_packets"] + c["rdma_rx_packets"]
        phy_tx_packets = c["netdev_tx_packets"] + c["rdma_tx_packets"]
        p = PFC_PRIORITY
        stats = dict.fromkeys(stat_names(), 0)
        stats.update({
            "rx_packets": c["netdev_rx_packets"], "rx_bytes": c["netdev_rx_bytes"],
            "tx_packets": c["netdev_tx_packets"], "tx_bytes": c["netdev_tx_bytes"],
            "rx_csum_unnecessary": c["netdev_rx_packets"],
            "rx_out_of_buffer": c["out_of_buffer"],
            "rx_vport_unicast_packets": c["netdev_rx_packets"],
            "rx_vport_unicast_bytes": c["netdev_rx_bytes"],
            "tx_vport_unicast_packets": c["netdev_tx_packets"],
            "tx_vport_unicast_bytes": c["netdev_tx_bytes"],
            "rx_vport_rdma_unicast_packets": c["rdma_rx_packets"],
            "rx_vport_rdma_unicast_bytes": c["rdma_rx_bytes"],
            "tx_vport_rdma_unicast_packets": c["rdma_tx_packets"],
            "tx_vport_rdma_unicast_bytes": c["rdma_tx_bytes"],
            "rx_packets_phy": phy_rx_packets, "tx_packets_phy": phy_tx_packets,
            "rx_bytes_phy": phy_rx_bytes, "tx_bytes_phy": phy_tx_bytes,
            "rx_crc_errors_phy": c["crc_errors"],
            "rx_discards_phy": c["rx_discards"],
            "link_down_events_phy": 1,
            "rx_pcs_symbol_err_phy": c["pcs_symbol_errors"],
            "rx_corrected_bits_phy": c["corrected_bits"],
            "rx_buffer_passed_thres_phy": c["buffer_thres"],
            f"rx_prio{p}_bytes": c["rdma_rx_bytes"], f"rx_prio{p}_packets": c["rdma_rx_packets"],
            f"tx_prio{p}_bytes": c["rdma_tx_bytes"], f"tx_prio{p}_packets": c["rdma_tx_packets"],
            "rx_prio0_bytes": c["netdev_rx_bytes"], "rx_prio0_packets": c["netdev_rx_packets"],
            "tx_prio0_bytes": c["netdev_tx_bytes"], "tx_prio0_packets": c["netdev_tx_packets"],
            # ConnectX's IEEE 802.3 PAUSE control counters rise with PFC on a PFC-only port
            # (docs/field-notes.md); mlx5 also reports them as the kernel's pause statistic.
            "rx_pause_ctrl_phy": c["rx_pause_frames"], "tx_pause_ctrl_phy": c["tx_pause_frames"],
            f"rx_prio{p}_pause": c["rx_pause_frames"],
            f"rx_prio{p}_pause_duration": c["rx_paused_us"],
            f"tx_prio{p}_pause": c["tx_pause_frames"],
            f"tx_prio{p}_pause_duration": c["tx_paused_us"],
            f"rx_prio{p}_pause_transition": c["pause_transitions"],
            "tx_pause_storm_warning_events": c["storm_warnings"],
        })
        bad = port.bad_lane
        spread = c["corrected_bits"] - c["bad_lane_bits"]
        for lane in range(FEC_LANES):
            stats[f"rx_err_lane_{lane}_phy"] = spread // FEC_LANES + (
                c["bad_lane_bits"] if bad is not None and bad[0] == lane else 0)
        rx_packets, rx_bytes = self.rx_queue_counts(name)
        for ch in range(CHANNELS):
            stats[f"ch{ch}_events"] = stats[f"ch{ch}_poll"] = c["poll_events"] // CHANNELS
            stats[f"rx{ch}_packets"], stats[f"rx{ch}_bytes"] = rx_packets[ch], rx_bytes[ch]
            stats[f"tx{ch}_packets"] = c["netdev_tx_packets"] // CHANNELS
            stats[f"tx{ch}_bytes"] = c["netdev_tx_bytes"] // CHANNELS
        if port.speed_mbps < 400_000:  # the x8 card's PCIe link backs up under load
            stats["outbound_pci_stalled_rd"] = 12
        return stats

    def rx_queue_counts(self, name: str) -> tuple[list[int], list[int]]:
        """Packets and bytes per receive queue: the netdev's, split by the port's streams."""
        port, c = self.ports[name], self.counters(name)
        total = sum(port.rx_streams)
        return ([c["netdev_rx_packets"] * n // total for n in port.rx_streams],
                [c["netdev_rx_bytes"] * n // total for n in port.rx_streams])

    @staticmethod
    def irq_cpu(channel: int) -> int:
        return channel % HOST_CPUS

    @property
    def cpus(self) -> int:
        """The simulated host's CPUs: HOST_CPUS, and one more for a saturated port."""
        return HOST_CPUS + any(p.cpu_saturated for p in self.ports.values())

    def channel_cpu(self, port: PortSpec, channel: int) -> int:
        """The CPU a port's channel's completion vector is pinned to."""
        return HOST_CPUS if port.cpu_saturated else self.irq_cpu(channel)

    def softirq_seconds(self) -> list[float]:
        """Cumulative softirq seconds per CPU since the simulation started (plus a day)."""
        with self._lock:
            elapsed = 86_400 + self._clock() - self._start
        return [elapsed * (SATURATED_SOFTIRQ_SHARE if cpu >= HOST_CPUS else SOFTIRQ_SHARE)
                for cpu in range(self.cpus)]

    def irq_numbers(self, port: PortSpec) -> tuple[int, ...]:
        """The port's async vector, then one completion vector per channel."""
        first = IRQ_BASE + IRQS_PER_PORT * list(self.ports).index(port.name)
        return tuple(range(first, first + 1 + CHANNELS))

    def interrupt_counts(self) -> dict[int, tuple[int, ...]]:
        """irq -> interrupts per CPU: each channel's packets over the coalescing, on its
        vector's CPU."""
        out: dict[int, tuple[int, ...]] = {}
        for port in self.ports.values():
            packets, _ = self.rx_queue_counts(port.name)
            irqs = self.irq_numbers(port)
            out[irqs[0]] = tuple(5 if cpu == 0 else 0 for cpu in range(self.cpus))
            for ch, irq in enumerate(irqs[1:]):
                counts = [0] * self.cpus
                counts[self.channel_cpu(port, ch)] = (
                    packets[ch] // PACKETS_PER_INTERRUPT) % (1 << 32)
                out[irq] = tuple(counts)
        return out

    def softnet(self) -> list[tuple[int, int, int]]:
        """(processed, dropped, time_squeeze) per CPU: the packets of the channels whose
        vectors it serves; no drops, and squeezes only on a saturated port's CPU (the shared
        CPUs keep up)."""
        processed = [0] * self.cpus
        squeezed = [0] * self.cpus
        for port in self.ports.values():
            packets, _ = self.rx_queue_counts(port.name)
            for ch, n in enumerate(packets):
                processed[self.channel_cpu(port, ch)] += n
            if port.cpu_saturated:
                squeezed[HOST_CPUS] += self.counters(port.name)["time_squeeze"]
        return [(p % (1 << 32), 0, q % (1 << 32)) for p, q in zip(processed, squeezed,
                                                                  strict=True)]

    def rings(self, name: str) -> Rings:
        port = self.ports[name]
        return Rings(rx=port.rx_ring, tx=port.tx_ring, rx_max=port.ring_max,
                     tx_max=port.ring_max)

    def channels(self, name: str) -> Channels:
        return Channels(rx=None, tx=None, other=None, combined=CHANNELS, rx_max=None,
                        tx_max=None, other_max=None, combined_max=63)

    def netlink_info(self, name: str) -> EthtoolNetlinkInfo:
        c = self.counters(name)
        std = {"pause.rx_frames": c["rx_pause_frames"], "pause.tx_frames": c["tx_pause_frames"],
               "fec.corrected_blocks": c["fec_corrected_blocks"],
               "fec.uncorrectable_blocks": c["fec_uncorrectable_blocks"]}
        # The FEC histogram (ETHTOOL_A_FEC_STAT_HIST, 6.18, no lanes as mlx5): bin s holds
        # 2^-s of the codewords, up to the port's worst: 15 symbols (the limit) on the
        # marginal optic, 12 with the bad lane, 4 on a clean link.
        port = self.ports[name]
        worst = 15 if port.bad_optic else 12 if port.bad_lane else 4
        for symbols in range(worst + 1):
            std[f"fec.hist.{symbols}_{symbols}"] = c["codewords"] >> symbols
        for lane in range(FEC_LANES):
            std[f"fec.corrected_blocks.lane{lane}"] = c["fec_corrected_blocks"] // FEC_LANES
            std[f"fec.uncorrectable_blocks.lane{lane}"] = (
                c["fec_uncorrectable_blocks"] // FEC_LANES
                + (lane < c["fec_uncorrectable_blocks"] % FEC_LANES))
        return EthtoolNetlinkInfo(
            pause=PauseParams(autoneg=False, rx=False, tx=False),  # PFC, not 802.3x PAUSE
            fec=FecParams(configured=("rs",), active="rs", auto=False),
            rings=self.rings(name), channels=self.channels(name),
            std_stats=MappingProxyType(std), lanes=FEC_LANES,
            linkstate=LinkState(link=True, ext_state=None, ext_substate=None))

    # ------------------------------------------------------------------ sysfs

    def write_sysfs(self, root: str | os.PathLike[str]) -> None:
        """Write the whole tree below ``root`` (an empty or absent directory)."""
        root = Path(root)
        for port in self.ports.values():
            _write_port_tree(root, port)
            _write_roce_qos(root, port)
            fn = _function_dir(root, port)
            irqs = self.irq_numbers(port)
            names = [f"mlx5_async0@pci:{port.bdf}",
                     *(f"mlx5_comp{ch}@pci:{port.bdf}" for ch in range(CHANNELS))]
            for irq, name in zip(irqs, names, strict=True):
                _put(fn / "msi_irqs" / str(irq), "msix")
                _put(root / "kernel" / "irq" / str(irq) / "actions", name)
        cpus = f"0-{self.cpus - 1}"
        for name in ("possible", "online"):
            _put(root / "devices" / "system" / "cpu" / name, cpus)
        _put(root / "devices" / "system" / "node" / "node0" / "cpulist", cpus)
        _write_bond(root, list(self.ports.values())[-2:])
        for number, port in enumerate(self.ports.values()):
            _write_hwmon(root, port, number)
        self.write_counters(root)

    def write_procfs(self, root: str | os.PathLike[str]) -> None:
        """The procfs files of the receive path below ``root`` (--path.procfs): each
        interrupt's affinity (async vectors may go anywhere and land on CPU 0, completion
        vectors are pinned to their channel's CPU) and softnet_stat; write_counters keeps
        softnet_stat moving."""
        root = Path(root)
        self._procfs = root
        for port in self.ports.values():
            irqs = self.irq_numbers(port)
            for i, irq in enumerate(irqs):
                cpu = 0 if i == 0 else self.channel_cpu(port, i - 1)
                _put(root / "irq" / str(irq) / "smp_affinity_list",
                     f"0-{HOST_CPUS - 1}" if i == 0 else cpu)
                _put(root / "irq" / str(irq) / "effective_affinity_list", cpu)
        self.write_counters_procfs()

    def write_counters_procfs(self) -> None:
        if self._procfs is None:
            return
        lines = [" ".join(f"{w:08x}" for w in (p, d, sq, 0, 0, 0, 0, 0, 0, 0, 0, 0, cpu, 0, 0))
                 for cpu, (p, d, sq) in enumerate(self.softnet())]
        _put(self._procfs / "net" / "softnet_stat", "\n".join(lines))
        # /proc/stat's per-CPU lines (user nice system idle iowait irq softirq steal guest
        # guest_nice, in USER_HZ ticks): the softirq column is what the softirq source reads
        hz = os.sysconf("SC_CLK_TCK")
        ticks = [round(s * hz) for s in self.softirq_seconds()]
        cpu_lines = [f"cpu{cpu} 0 0 0 0 0 0 {t} 0 0 0" for cpu, t in enumerate(ticks)]
        _put(self._procfs / "stat", "\n".join([f"cpu  0 0 0 0 0 0 {sum(ticks)} 0 0 0",
                                               *cpu_lines]))

    def write_counters(self, root: str | os.PathLike[str]) -> None:
        """Rewrite the moving sysfs files (netdev statistics, AER, RDMA counters) whose
        value changed."""
        root = Path(root)

        def put(path: Path, value: object) -> None:
            if self._written.get(path) != value:
                _put(path, value)
                self._written[path] = value

        for port in self.ports.values():
            c = self.counters(port.name)
            fn = _function_dir(root, port)
            stats = dict.fromkeys(_NETDEV_STATS, 0)
            stats.update(rx_bytes=c["netdev_rx_bytes"], tx_bytes=c["netdev_tx_bytes"],
                         rx_packets=c["netdev_rx_packets"], tx_packets=c["netdev_tx_packets"],
                         rx_missed_errors=c["out_of_buffer"], rx_crc_errors=c["crc_errors"],
                         rx_errors=c["crc_errors"])
            for key, value in stats.items():
                put(fn / "net" / port.name / "statistics" / key, value)
            receiver_errors = c["aer_correctable"]
            put(fn / "aer_dev_correctable", _aer_lines(_AER_CORRECTABLE, "COR",
                                                       {"Receiver Error": receiver_errors}))
            put(fn.parent / "aer_rootport_total_err_cor", receiver_errors)
            port_dir = fn / "infiniband" / port.rdma_device / "ports" / "1"
            hw = dict.fromkeys(_HW_COUNTERS, 0)
            hw.update(np_cnp_sent=c["cnp_sent"], rp_cnp_handled=c["cnp_handled"],
                      np_ecn_marked_roce_packets=c["ecn_marked"],
                      out_of_sequence=c["out_of_sequence"], packet_seq_err=c["packet_seq_err"],
                      local_ack_timeout_err=c["local_ack_timeout"],
                      req_transport_retries_exceeded=c["failed_qps"],
                      rnr_nak_retry_err=c["rnr_naks"], out_of_buffer=c["rdma_out_of_buffer"])
            for key, value in hw.items():
                put(port_dir / "hw_counters" / key, value)
            ib = dict.fromkeys(_IB_COUNTERS, 0)
            ib.update(port_rcv_data=c["rdma_rx_bytes"] // 4, port_xmit_data=c["rdma_tx_bytes"] // 4,
                      port_rcv_packets=c["rdma_rx_packets"], port_xmit_packets=c["rdma_tx_packets"],
                      unicast_rcv_packets=c["rdma_rx_packets"],
                      unicast_xmit_packets=c["rdma_tx_packets"],
                      symbol_error=c["rdma_symbol_errors"], port_rcv_errors=c["rdma_rcv_errors"],
                      link_downed=c["rdma_link_downed"],
                      link_error_recovery=c["rdma_link_downed"] * 2,
                      # 4 bits: a bad link fills it, and a PMA counter stops at its maximum
                      local_link_integrity_errors=15 if port.bad_optic else 0)
            for key, value in ib.items():
                put(port_dir / "counters" / key, value)
        for irq, counts in self.interrupt_counts().items():
            put(root / "kernel" / "irq" / str(irq) / "per_cpu_count", ",".join(map(str, counts)))
        self.write_counters_procfs()


class SysfsRefresher:
    """Rewrites a simulation's moving sysfs files every ``period`` seconds on a thread, as
    the kernel keeps /sys current while the NIC counts."""

    def __init__(self, simulation: Simulation, root: str | os.PathLike[str],
                 period: float) -> None:
        self.simulation = simulation
        self.root = root
        self.period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nicwatch-sim-sysfs",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.simulation.write_counters(self.root)


class SimulatedEthtool:
    """The methods of :class:`~nicwatch.sources.ethtool_ioctl.EthtoolIoctl`, answered from a
    :class:`Simulation`. An interface it does not simulate fails with ENODEV, as the ioctl
    does for a vanished interface."""

    GENERATION = 1  # the stat set never changes

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation
        self._names = stat_names()

    def _port(self, ifname: str) -> PortSpec:
        port = self.simulation.ports.get(ifname)
        if port is None:
            raise EthtoolError(errno.ENODEV, f"{ifname}: No such device (not simulated)")
        return port

    def driver_info(self, ifname: str) -> DriverInfo:
        port = self._port(ifname)
        return DriverInfo(driver=DRIVER, version=DRIVER_VERSION,
                          firmware_version=f"{28 if port.card == 'ConnectX-7' else 22}.39.1002 "
                          "(simulated)", bus_info=port.bdf, n_stats=len(self._names))

    def perm_address(self, ifname: str) -> str:
        return self._port(ifname).mac

    def statistics(self, ifname: str) -> StatSet:
        stats = self.simulation.ethtool_stats(self._port(ifname).name)
        return StatSet(self._names, tuple(stats[n] for n in self._names), self.GENERATION)

    def rings(self, ifname: str) -> Rings:
        return self.simulation.rings(self._port(ifname).name)

    def channels(self, ifname: str) -> Channels:
        return self.simulation.channels(self._port(ifname).name)

    def forget(self, ifname: str) -> None:
        """Nothing is cached per interface."""

    def close(self) -> None:
        """No socket to close."""


class SimulatedEthtoolNetlink:
    """:meth:`~nicwatch.sources.ethtool_netlink.EthtoolNetlink.read_all` from a
    :class:`Simulation`."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def read_all(self, ifindexes: Iterable[int] | None = None) -> NetlinkResult:
        wanted = self.simulation.by_ifindex if ifindexes is None else {
            i: self.simulation.by_ifindex[i] for i in ifindexes if i in self.simulation.by_ifindex}
        infos = {i: self.simulation.netlink_info(p.name) for i, p in wanted.items()}
        return NetlinkResult(infos=MappingProxyType(infos), errors=MappingProxyType({}))

    def close(self) -> None:
        """No socket to close."""


class SimulatedModules:
    """The module EEPROM reader of the simulated ports (the module source's ``reader``): each
    read returns the real 800G OSFP EEPROM of :mod:`nicwatch.demo.module_eeprom`, with the
    spec-built VDM pages of :mod:`nicwatch.demo.module_vdm`, stamped with the time it was
    read."""

    def __init__(self, simulation: Simulation, clock: Callable[[], float] = time.time) -> None:
        from nicwatch.demo.module_eeprom import DUMP
        from nicwatch.demo.module_vdm import with_vdm
        from nicwatch.normalize.module.hexdump import parse
        self.simulation = simulation
        self._eeprom = with_vdm(parse(DUMP).eeprom)  # VDM pages spec-built (module_vdm.py)
        self._clock = clock

    def read_module(self, ifindex: int, ifname: str,
                    should_stop: Callable[[], bool] = lambda: False) -> ModuleEeprom:
        if ifname not in self.simulation.ports:
            raise ModuleReadError(errno.ENODEV, f"{ifname}: not simulated")
        return replace(self._eeprom, read_at=self._clock())

    def close(self) -> None:
        pass


class SimulatedDcb:
    """:meth:`~nicwatch.sources.dcbnl.DcbNetlink.ieee_pfc` from a :class:`Simulation`: PFC
    on priority 3 with mlx5's per-priority frame counts."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def ieee(self, ifname: str) -> tuple[IeeePfc | None, DcbQos | None]:
        """PFC as :meth:`ieee_pfc` and the usual RoCE profile: DSCP trust, RoCE's DSCP 26 on
        the PFC priority, CNPs' DSCP 48 on priority 6 (strict), ETS splitting the rest."""
        if ifname not in self.simulation.ports:
            return None, None
        prio_tc = tuple(p if p in (PFC_PRIORITY, CNP_PRIORITY) else 0 for p in range(8))
        ets = IeeeEts(willing=False, ets_cap=8, prio_tc=prio_tc,
                      tc_tx_bw=tuple(50 if t in (0, PFC_PRIORITY) else 0 for t in range(8)),
                      tc_tsa=tuple("strict" if t == CNP_PRIORITY else "ets" for t in range(8)))
        apps = (DcbApp(DSCP_SELECTOR, PFC_PRIORITY, ROCE_DSCP),
                DcbApp(DSCP_SELECTOR, CNP_PRIORITY, CNP_DSCP))
        return self.ieee_pfc(ifname), DcbQos(ets=ets, apps=apps, apptrust=None)

    def ieee_with_peer(self, ifname: str
                       ) -> tuple[IeeePfc | None, DcbQos | None, DcbPeer | None]:
        """:meth:`ieee` and, for the last port only (its simulated firmware runs the DCBX
        agent, demo/fabric.py), the switch's configuration as that agent learned it: PFC on
        priority 3, RoCE v2 on priority 3."""
        pfc, qos = self.ieee(ifname)
        last = max(self.simulation.ports.values(), key=lambda p: p.ifindex).name
        if ifname != last or pfc is None:
            return pfc, qos, None
        return pfc, qos, DcbPeer(pfc=pfc, ets=qos.ets if qos else None,
                                 apps=(DcbApp(3, PFC_PRIORITY, 4791),))

    def ieee_pfc(self, ifname: str) -> IeeePfc | None:
        if ifname not in self.simulation.ports:
            return None
        c = self.simulation.counters(ifname)
        sent, received = [0] * 8, [0] * 8
        sent[PFC_PRIORITY], received[PFC_PRIORITY] = c["tx_pause_frames"], c["rx_pause_frames"]
        return IeeePfc(enabled=(PFC_PRIORITY,), capability=8, mbc=False, delay=0,
                       requests=tuple(sent), indications=tuple(received))

    def close(self) -> None:
        """No socket to close."""


class SimulatedDevlink:
    """:meth:`~nicwatch.sources.devlink.DevlinkNetlink.read_all` from a :class:`Simulation`:
    the reporters and uplink port mlx5_core registers for each port's PCI function (grace
    periods and operations as the driver's: see tests/fixtures/devlink/mlx5-cx6dx.txt)."""

    def __init__(self, simulation: Simulation, clock: Callable[[], float] = time.time) -> None:
        self.simulation = simulation
        self.started = clock()  # wall time of the dump the marginal optic's tx reporter holds

    def read_all(self) -> DevlinkResult:
        reporters, ports = [], []
        for port in self.simulation.ports.values():
            handle = f"pci/{port.bdf}"
            tx_errors = 2 if port.bad_optic else 0
            reporters += [
                DevlinkHealthReporter(handle, None, "fw", "healthy", 0, 0, None, None, True,
                                      None),
                DevlinkHealthReporter(handle, None, "fw_fatal", "healthy", 0, 0, 60_000, True,
                                      True, None),
                DevlinkHealthReporter(handle, None, "vnic", "healthy", 0, 0, None, None, None,
                                      None),
                DevlinkHealthReporter(handle, UPLINK_PORT, "tx", "healthy", tx_errors,
                                      tx_errors, 500, True, True,
                                      self.started if tx_errors else None),
                DevlinkHealthReporter(handle, UPLINK_PORT, "rx", "healthy", 0, 0, 500, True,
                                      True, None),
            ]
            ports.append(DevlinkPort(handle, UPLINK_PORT, port.ifindex, port.name, "physical",
                                     0))
        return DevlinkResult(tuple(reporters), tuple(ports),
                             infos=tuple(_devlink_info(p, i) for i, p in
                                         enumerate(self.simulation.ports.values())))

    def close(self) -> None:
        """No socket to close."""


RUNNING_FW, FLASHED_FW = "28.39.1002", "28.41.1000"


def _devlink_info(port: PortSpec, number: int) -> DevlinkInfo:
    """`devlink dev info` as mlx5_core reports it (mlx5/core/devlink.c: fixed fw.psid,
    running and stored fw.version and fw; layout of the published dump in
    tests/fixtures/devlink/info-mlx5-query-failed.txt). Port 0 has a newer image flashed
    and not activated yet."""
    stored = FLASHED_FW if number == 0 else RUNNING_FW
    return DevlinkInfo(f"pci/{port.bdf}", "mlx5_core", f"MT22{number:02d}X0000{number}", (
        DevlinkVersion("fixed", "fw.psid", "MT_0000000838"),
        DevlinkVersion("running", "fw.version", RUNNING_FW),
        DevlinkVersion("running", "fw", RUNNING_FW),
        DevlinkVersion("stored", "fw.version", stored),
        DevlinkVersion("stored", "fw", stored)))


VFS = 4  # SR-IOV VFs of port 0
VF_SHARES = (0.04, 0.03, 0.02, 0.01)  # of port 0's netdev traffic, per VF
VF_DROPPING, VF_DROP_RATIO = 3, 2e-3


class SimulatedVfs:
    """:meth:`~nicwatch.sources.sriov.SriovNetlink.vfs` from a :class:`Simulation`: the VFs
    of ports with ``vfs``, their counters fixed shares of the port's netdev counters (so
    monotonic with them), administrative MACs, VLAN 100 + VF and spoof check on."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def vfs(self, ifindex: int) -> tuple[int | None, tuple[VfInfo, ...]]:
        port = self.simulation.by_ifindex.get(ifindex)
        if port is None:
            raise VfError(errno.ENODEV, f"RTM_GETLINK ifindex {ifindex}: ENODEV")
        c = self.simulation.counters(port.name)
        out = []
        for vf in range(port.vfs):
            share = VF_SHARES[vf % len(VF_SHARES)]
            rx_packets = int(c["netdev_rx_packets"] * share)
            dropped = int(rx_packets * VF_DROP_RATIO) if vf == VF_DROPPING else 0
            out.append(VfInfo(
                vf=vf, mac=f"02:00:{port.mac[-5:]}:{vf:02x}:01", vlan=100 + vf, qos=0,
                vlan_proto="802.1Q", link_state="auto", spoofchk=True, trust=False,
                min_tx_rate_mbps=0, max_tx_rate_mbps=0,
                stats=MappingProxyType({
                    "rx_packets": rx_packets, "tx_packets": int(c["netdev_tx_packets"] * share),
                    "rx_bytes": int(c["netdev_rx_bytes"] * share),
                    "tx_bytes": int(c["netdev_tx_bytes"] * share),
                    "broadcast": int(rx_packets * 1e-5), "multicast": int(rx_packets * 1e-4),
                    "rx_dropped": dropped, "tx_dropped": 0})))
        return port.vfs, tuple(out)

    def close(self) -> None:
        """No socket to close."""


class SimulatedNetdev:
    """:meth:`~nicwatch.sources.netdev_genl.NetdevGenl.read` from a :class:`Simulation`: per
    port, an rx and a tx queue per channel, both on the channel's NAPI (ids from 8192, as
    the kernel numbers them after its reserved ids), whose irq is the channel's completion
    vector; qstats per queue as mlx5e_get_queue_stats_rx/tx fill them (6.10+: rx packets,
    bytes, alloc-fail; tx packets, bytes, stop, wake) and the device's sums."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def read(self, topology: bool) -> Dumps:
        sim = self.simulation
        out = Dumps(queues={} if topology else None, napis={} if topology else None)
        for n, port in enumerate(sim.ports.values()):
            c = sim.counters(port.name)
            packets, rx_bytes = sim.rx_queue_counts(port.name)
            irqs = sim.irq_numbers(port)
            per_queue = []
            for ch in range(CHANNELS):
                napi = 8192 + CHANNELS * n + ch
                if out.queues is not None and out.napis is not None:
                    out.queues.setdefault(port.ifindex, []).extend(
                        (NetdevQueue("rx", ch, napi), NetdevQueue("tx", ch, napi)))
                    out.napis.setdefault(port.ifindex, []).append(Napi(napi, irqs[1 + ch], None))
                per_queue.append(QueueStats("rx", ch, MappingProxyType({
                    "rx-packets": packets[ch], "rx-bytes": rx_bytes[ch], "rx-alloc-fail": 0})))
                per_queue.append(QueueStats("tx", ch, MappingProxyType({
                    "tx-packets": c["netdev_tx_packets"] // CHANNELS,
                    "tx-bytes": c["netdev_tx_bytes"] // CHANNELS, "tx-stop": 0,
                    "tx-wake": 0})))
            out.per_queue[port.ifindex] = per_queue
            totals: dict[str, int] = {}
            for q in per_queue:
                for key, value in q.stats.items():
                    totals[key] = totals.get(key, 0) + value
            out.device[port.ifindex] = totals
        return out

    def interface_name(self, ifindex: int) -> str | None:
        port = self.simulation.by_ifindex.get(ifindex)
        return None if port is None else port.name

    def close(self) -> None:
        """No socket to close."""


UPLINK_PORT = 0xFFFF  # mlx5's uplink devlink port index on a function with vhca_id 0


# ---------------------------------------------------------------------- tree layout

_NETDEV_STATS = (
    "collisions", "multicast", "rx_bytes", "rx_compressed", "rx_crc_errors", "rx_dropped",
    "rx_errors", "rx_fifo_errors", "rx_frame_errors", "rx_length_errors", "rx_missed_errors",
    "rx_nohandler", "rx_over_errors", "rx_packets", "tx_aborted_errors", "tx_bytes",
    "tx_carrier_errors", "tx_compressed", "tx_dropped", "tx_errors", "tx_fifo_errors",
    "tx_heartbeat_errors", "tx_packets", "tx_window_errors",
)
_AER_CORRECTABLE = ("Receiver Error", "Bad TLP", "Bad DLLP", "RELAY_NUM Rollover",
                    "Replay Timer Timeout", "Advisory Non-Fatal", "Corrected Internal Error",
                    "Header Log Overflow")
_AER_NONFATAL = ("Undefined", "Data Link Protocol", "Surprise Down Error", "Poisoned TLP",
                 "Flow Control Protocol", "Completion Timeout", "Completer Abort",
                 "Unexpected Completion", "Receiver Overflow", "Malformed TLP", "ECRC",
                 "Unsupported Request", "ACS Violation", "Uncorrectable Internal Error",
                 "MC Blocked TLP", "AtomicOp Egress Blocked", "TLP Prefix Blocked Error")
_HW_COUNTERS = (
    "duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent",
    "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err",
    "req_cqe_error", "req_cqe_flush_error", "req_remote_access_errors",
    "req_remote_invalid_request", "resp_cqe_error", "resp_cqe_flush_error",
    "resp_local_length_error", "resp_remote_access_errors", "rnr_nak_retry_err",
    "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans", "rp_cnp_handled", "rp_cnp_ignored", "rx_atomic_requests",
    "rx_dct_connect", "rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests",
    "req_transport_retries_exceeded", "req_rnr_retries_exceeded",
)
_IB_COUNTERS = (
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
    "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards",
    "port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets",
    "unicast_xmit_packets",
)


def _aer_lines(kinds: tuple[str, ...], total: str, counts: Mapping[str, int]) -> str:
    lines = [f"{name} {counts.get(name, 0)}" for name in kinds]
    lines.append(f"TOTAL_ERR_{total} {sum(counts.values())}")
    return "\n".join(lines)


def _put(path: Path, value: object) -> None:
    """Replace one attribute file atomically (temp file + rename: a reader never sees a
    half-written value). Not fsynced: the tree is a throwaway simulation, not data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_symlink():
        path.symlink_to(target)


def _function_dir(root: Path, port: PortSpec) -> Path:
    return root / "devices" / "pci0000:00" / port.root_port / port.bdf


def _pci_common(directory: Path, vendor: int, device: int, pci_class: int,
                slot: str) -> None:
    for name, value in (("vendor", f"0x{vendor:04x}"), ("device", f"0x{device:04x}"),
                        ("class", f"0x{pci_class:06x}"), ("subsystem_vendor", f"0x{vendor:04x}"),
                        ("subsystem_device", "0x0020"), ("revision", "0x00"),
                        ("numa_node", "0"), ("local_cpulist", "0-1"), ("enable", "1"),
                        ("power_state", "D0"),
                        ("uevent", (f"PCI_CLASS={pci_class:X}\nPCI_ID={vendor:04X}:{device:04X}"
                                    f"\nPCI_SLOT_NAME={slot}"))):
        _put(directory / name, value)


def _write_roce_qos(root: Path, port: PortSpec) -> None:
    """The vendor mlx5 driver's ecn/ tree (ECN on every priority, CNPs on DSCP 48 /
    priority 6) and qos/trust (dscp), its forced traffic class and the rdma_cm default ToS
    (DSCP 26, ECT(0))."""
    fn = root / "devices" / "pci0000:00" / port.root_port / port.bdf
    ecn = fn / "net" / port.name / "ecn"
    for point in ("roce_rp", "roce_np"):
        for priority in range(8):
            off = port.ecn_off and point == "roce_np" and priority == PFC_PRIORITY
            _put(ecn / point / "enable" / str(priority), 0 if off else 1)
    _put(ecn / "roce_np" / "cnp_dscp", CNP_DSCP)
    _put(ecn / "roce_np" / "cnp_802p_prio", CNP_PRIORITY)
    # the vendor qos/ directory the driver creates beside ecn/: RoCE traffic classified by DSCP
    _put(fn / "net" / port.name / "qos" / "trust", "dscp")
    _put(fn / "infiniband" / port.rdma_device / "tc" / "1" / "traffic_class",
         f"Global tclass={ROCE_DSCP << 2 | 2}")
    _put(root / "kernel/config/rdma_cm" / port.rdma_device / "ports" / "1" / "default_roce_tos",
         ROCE_DSCP << 2 | 2)


def _write_bond(root: Path, members: list[PortSpec]) -> None:
    """An 802.3ad bond (RoCE LAG) over ``members``, as the bonding driver shows it: the bond
    under devices/virtual/net, each member's ``master`` link and ``bonding_slave/`` files
    (drivers/net/bonding/bond_sysfs.c, bond_sysfs_slave.c)."""
    bond = root / "devices" / "virtual" / "net" / "bond0"
    _put(bond / "bonding" / "mode", "802.3ad 4")
    for name, value in (("ifindex", 100), ("address", members[0].mac), ("type", 1),
                        ("mtu", 9000), ("operstate", "up"), ("carrier", 1), ("flags", "0x1403"),
                        ("uevent", "DEVTYPE=bond\nINTERFACE=bond0\nIFINDEX=100")):
        _put(bond / name, value)
    _link(root / "class/net" / "bond0", "../../devices/virtual/net/bond0")
    for port in members:
        net = root / "devices" / "pci0000:00" / port.root_port / port.bdf / "net" / port.name
        _link(net / "master", "../../../../../virtual/net/bond0")
        _put(net / "bonding_slave" / "state", "active")
        _put(net / "bonding_slave" / "mii_status", "up")


def _write_hwmon(root: Path, port: PortSpec, number: int) -> None:
    """The hwmon device mlx5_core registers under each function (mlx5/core/hwmon.c): the
    ASIC sensor and the module in the cage, with the values and thresholds a real
    dual-port ConnectX reported (asic 69.0 C, crit 105; Module0 51.0 C, crit 85: `sensors`
    output in fastfetch-cli/fastfetch#2073), a little cooler per port here."""
    hwmon = _function_dir(root, port) / "hwmon" / f"hwmon{number + 2}"
    _put(hwmon / "name", "mlx5")
    for channel, label, celsius, crit in ((1, "asic", 60.0 + 2 * number, 105.0),
                                          (2, f"Module{number}", 45.0 + number, 85.0)):
        _put(hwmon / f"temp{channel}_label", label)
        _put(hwmon / f"temp{channel}_input", int(celsius * 1000))
        _put(hwmon / f"temp{channel}_highest", int((celsius + 3) * 1000))
        _put(hwmon / f"temp{channel}_crit", int(crit * 1000))
    _link(hwmon / "device", "../../../" + port.bdf)
    _link(hwmon / "subsystem", "../../../../../../class/hwmon")
    function_path = f"devices/pci0000:00/{port.root_port}/{port.bdf}"
    _link(root / "class/hwmon" / hwmon.name, f"../../{function_path}/hwmon/{hwmon.name}")


def _write_port_tree(root: Path, port: PortSpec) -> None:
    rp = root / "devices" / "pci0000:00" / port.root_port
    fn = rp / port.bdf
    # Root port: AMD Genoa-class, PCIe Gen5 x16 capable; its current_* describe the link below.
    _pci_common(rp, 0x1022, 0x14AB, 0x060400, port.root_port)
    for name, value in (("current_link_speed", port.pcie_speed),
                        ("current_link_width", port.pcie_width),
                        ("max_link_speed", "32.0 GT/s PCIe"), ("max_link_width", 16),
                        ("aer_dev_correctable", _aer_lines(_AER_CORRECTABLE, "COR", {})),
                        ("aer_dev_nonfatal", _aer_lines(_AER_NONFATAL, "NONFATAL", {})),
                        ("aer_dev_fatal", _aer_lines(_AER_NONFATAL, "FATAL", {})),
                        ("aer_rootport_total_err_nonfatal", 0),
                        ("aer_rootport_total_err_fatal", 0)):
        _put(rp / name, value)
    _link(rp / "driver", "../../../bus/pci/drivers/pcieport")
    _link(rp / "subsystem", "../../../bus/pci")
    _link(root / "bus/pci/devices" / port.root_port,
          f"../../../devices/pci0000:00/{port.root_port}")
    _link(root / "bus/pci/drivers/pcieport" / port.root_port,
          f"../../../../devices/pci0000:00/{port.root_port}")
    # The NIC function.
    _pci_common(fn, 0x15B3, port.device_id, 0x020000, port.bdf)
    for name, value in (("current_link_speed", port.pcie_speed),
                        ("current_link_width", port.pcie_width),
                        ("max_link_speed", port.pcie_max_speed),
                        ("max_link_width", port.pcie_max_width),
                        ("aer_dev_nonfatal", _aer_lines(_AER_NONFATAL, "NONFATAL", {})),
                        ("aer_dev_fatal", _aer_lines(_AER_NONFATAL, "FATAL", {}))):
        _put(fn / name, value)
    if port.vfs:
        _put(fn / "sriov_numvfs", port.vfs)
        _put(fn / "sriov_totalvfs", 16)
    _link(fn / "driver", "../../../../bus/pci/drivers/mlx5_core")
    _link(fn / "subsystem", "../../../../bus/pci")
    function_path = f"devices/pci0000:00/{port.root_port}/{port.bdf}"
    _link(root / "bus/pci/devices" / port.bdf, f"../../../{function_path}")
    _link(root / "bus/pci/drivers/mlx5_core" / port.bdf, f"../../../../{function_path}")
    # The netdev.
    net = fn / "net" / port.name
    for name, value in (("ifindex", port.ifindex), ("iflink", port.ifindex),
                        ("address", port.mac), ("broadcast", "ff:ff:ff:ff:ff:ff"),
                        ("addr_len", 6), ("addr_assign_type", 0), ("type", 1), ("mtu", 9000),
                        ("speed", port.speed_mbps), ("duplex", "full"), ("operstate", "up"),
                        ("carrier", 1), ("carrier_changes", 2), ("carrier_up_count", 1),
                        ("carrier_down_count", 1), ("dev_port", 0), ("dev_id", "0x0"),
                        ("flags", "0x1003"), ("tx_queue_len", 1000), ("proto_down", 0),
                        ("uevent", f"INTERFACE={port.name}\nIFINDEX={port.ifindex}")):
        _put(net / name, value)
    for ch in range(CHANNELS):
        _put(net / "queues" / f"rx-{ch}" / "rps_cpus", "0")
        _put(net / "queues" / f"tx-{ch}" / "xps_cpus", "0")
    _link(net / "device", "../..")
    _link(net / "subsystem", "../../../../../../class/net")
    _link(root / "class/net" / port.name, f"../../{function_path}/net/{port.name}")
    # The RDMA device (RoCE: Ethernet link layer, GID 0 on the netdev).
    ib = fn / "infiniband" / port.rdma_device
    gbps = port.speed_mbps // 1000
    for name, value in (("node_guid", _guid(port)), ("node_type", "1: CA"),
                        ("fw_ver", "28.39.1002"), ("hca_type", f"MT{port.device_id:04x}"),
                        ("ports/1/link_layer", "Ethernet"), ("ports/1/state", "4: ACTIVE"),
                        ("ports/1/phys_state", "5: LinkUp"),
                        ("ports/1/rate", f"{gbps} Gb/sec (4X {'NDR' if gbps >= 400 else 'HDR'})"),
                        ("ports/1/gid_attrs/ndevs/0", port.name),
                        ("ports/1/gid_attrs/types/0", "IB/RoCE v1")):
        _put(ib / name, value)
    _link(ib / "device", "../..")
    _link(ib / "subsystem", "../../../../../../class/infiniband")
    _link(root / "class/infiniband" / port.rdma_device,
          f"../../{function_path}/infiniband/{port.rdma_device}")


def _guid(port: PortSpec) -> str:
    mac = port.mac.replace(":", "")
    raw = mac[:6] + "fffe" + mac[6:]
    return ":".join(raw[i:i + 4] for i in range(0, 16, 4))
