"""The shared state behind every door of the simulated host (see demo/simulate.py): counters
integrated from per-second rates under a lock, and the writers of its sysfs and procfs
files."""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from nicwatch.demo.ports import (
    BURST_ON,
    BURST_PAUSED,
    BURST_PERIOD,
    CHANNELS,
    ECN_OFF_PFC_PER_SECOND,
    FEC_LANES,
    HOST_CPUS,
    IRQ_BASE,
    IRQS_PER_PORT,
    LANE_SERDES_BITS,
    MLX5_IB,
    NETDEV_PACKET_BYTES,
    PACKETS_PER_INTERRUPT,
    PAUSE_FRAMES_PER_PAUSED_SECOND,
    PAUSING_SHARE,
    PFC_PRIORITY,
    RDMA_PACKET_BYTES,
    RDMA_SHARE,
    SATURATED_SOFTIRQ_SHARE,
    SATURATED_SQUEEZES_PER_SECOND,
    SOFTIRQ_SHARE,
    STORM_PAUSED,
    PortSpec,
    raw,
    rdma_counters,
    stat_names,
)
from nicwatch.demo.sysfs_tree import (
    AER_CORRECTABLE,
    IB_COUNTERS,
    NETDEV_STATS,
    aer_lines,
    function_dir,
    write_bond,
    write_file,
    write_hwmon,
    write_port_tree,
    write_roce_qos,
)
from nicwatch.model import (
    Channels,
    EthtoolNetlinkInfo,
    FecParams,
    LinkState,
    PauseParams,
    Rings,
)

# The mlx5_ib hw_counters the simulation moves: family -> state counter (the names come from
# the driver's table, normalize/drivers/mlx5_ib.py).
_RDMA_STATE = (
    ("nic_rdma_cnp_sent_total", "cnp_sent"), ("nic_rdma_cnp_handled_total", "cnp_handled"),
    ("nic_rdma_ecn_marked_packets_total", "ecn_marked"),
    ("nic_rdma_out_of_sequence_total", "roce_oos"),
    ("nic_rdma_packet_seq_errors_total", "roce_seq_naks"),
    ("nic_rdma_local_ack_timeout_errors_total", "local_ack_timeout"),
    ("nic_rdma_req_transport_retries_exceeded_total", "failed_qps"),
    ("nic_rdma_rnr_nak_retry_errors_total", "rnr_naks"),
    ("nic_rdma_out_of_buffer_drops_total", "rdma_out_of_buffer"),
)
# Counters kept per port (floats, integrated from rates); everything else derives from them.
_STATE = (
    "netdev_rx_bytes", "netdev_tx_bytes", "netdev_rx_packets", "netdev_tx_packets",
    "roce_rx_bytes", "roce_tx_bytes", "roce_rx_packets", "roce_tx_packets",
    "rx_paused_us", "tx_paused_us", "rx_pauses", "tx_pauses", "pause_transitions",
    "storm_warnings", "ring_drops", "rx_discards", "buffer_thres", "corrected_bits",
    "fec_corrected_blocks", "fec_uncorrectable_blocks", "pcs_symbol_errors", "crc_errors",
    "ecn_marked", "cnp_sent", "cnp_handled", "roce_oos", "roce_seq_naks",
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
            "roce_rx_bytes": rx_bytes * RDMA_SHARE,
            "roce_tx_bytes": tx_bytes * RDMA_SHARE,
            "roce_rx_packets": rdma_rx_packets,
            "roce_tx_packets": tx_bytes * RDMA_SHARE / RDMA_PACKET_BYTES,
            # The peer pauses us (rx) during a burst; we pause it a little in return.
            "rx_paused_us": paused * 1e6,
            "tx_paused_us": paused * 0.05 * 1e6,
            "rx_pauses": paused * PAUSE_FRAMES_PER_PAUSED_SECOND,
            "tx_pauses": paused * 0.05 * PAUSE_FRAMES_PER_PAUSED_SECOND,
            "pause_transitions": paused * 50,
            "storm_warnings": 1 / 600 if port.pause_bursts else 0.0,
            "rx_discards": paused * 20,
            "buffer_thres": paused * 10,
            "ecn_marked": ecn,
            "cnp_sent": ecn / 4,
            "cnp_handled": tx_bytes * RDMA_SHARE / RDMA_PACKET_BYTES * (1e-3 + 0.02 * paused),
            "local_ack_timeout": 0.2 * paused,
            "ring_drops": netdev_rx_packets * port.out_of_buffer_ratio,
            # Pre-FEC errors are on the line (idle codewords too), so they follow line rate.
            "corrected_bits": port.pre_fec_ber * line * 8 + bad_lane_bits,
            "bad_lane_bits": bad_lane_bits,
            "codewords": line * 8 / 5440,  # RS(544,514): 5440-bit codewords
            "fec_corrected_blocks": port.pre_fec_ber * line * 8 / 3,
            "fec_uncorrectable_blocks": 0.05 if port.bad_optic else 0.0,
            "pcs_symbol_errors": 0.05 if port.bad_optic else 0.0,
            "crc_errors": 0.02 if port.bad_optic else 0.0,
            "roce_oos": 0.01 if port.bad_optic else 0.0,
            "roce_seq_naks": 0.005 if port.bad_optic else 0.0,
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
                    "tx_pauses": STORM_PAUSED * PAUSE_FRAMES_PER_PAUSED_SECOND,
                    "storm_warnings": 0.1}
        if port.transport_loss:
            return {"roce_oos": 5.0, "roce_seq_naks": 2.0, "local_ack_timeout": 0.5}
        if port.ecn_not_engaging:  # the peer pauses priority 3 (2 % of the time), no marks
            return {"ecn_marked": 0.0, "cnp_sent": 0.0, "cnp_handled": 0.0,
                    "rx_pauses": ECN_OFF_PFC_PER_SECOND,
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
                    "tx_pauses": PAUSING_SHARE * PAUSE_FRAMES_PER_PAUSED_SECOND,
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
        phy_rx_bytes = c["netdev_rx_bytes"] + c["roce_rx_bytes"]
        phy_tx_bytes = c["netdev_tx_bytes"] + c["roce_tx_bytes"]
        phy_rx_packets = c["netdev_rx_packets"] + c["roce_rx_packets"]
        phy_tx_packets = c["netdev_tx_packets"] + c["roce_tx_packets"]
        p = PFC_PRIORITY
        stats = dict.fromkeys(stat_names(), 0)
        stats.update({
            "rx_packets": c["netdev_rx_packets"], "rx_bytes": c["netdev_rx_bytes"],
            "tx_packets": c["netdev_tx_packets"], "tx_bytes": c["netdev_tx_bytes"],
            "rx_csum_unnecessary": c["netdev_rx_packets"],
            raw("nic_rx_out_of_buffer_drops_total"): c["ring_drops"],
            "rx_vport_unicast_packets": c["netdev_rx_packets"],
            "rx_vport_unicast_bytes": c["netdev_rx_bytes"],
            "tx_vport_unicast_packets": c["netdev_tx_packets"],
            "tx_vport_unicast_bytes": c["netdev_tx_bytes"],
            "rx_vport_rdma_unicast_packets": c["roce_rx_packets"],
            "rx_vport_rdma_unicast_bytes": c["roce_rx_bytes"],
            "tx_vport_rdma_unicast_packets": c["roce_tx_packets"],
            "tx_vport_rdma_unicast_bytes": c["roce_tx_bytes"],
            raw("nic_phy_rx_packets_total"): phy_rx_packets,
            raw("nic_phy_tx_packets_total"): phy_tx_packets,
            raw("nic_phy_rx_bytes_total"): phy_rx_bytes,
            raw("nic_phy_tx_bytes_total"): phy_tx_bytes,
            raw("nic_rx_crc_errors_total"): c["crc_errors"],
            raw("nic_rx_discards_total"): c["rx_discards"],
            raw("nic_link_down_events_total"): 1,
            raw("nic_rx_pcs_symbol_errors_total"): c["pcs_symbol_errors"],
            raw("nic_fec_corrected_bit_errors_total"): c["corrected_bits"],
            raw("nic_rx_buffer_almost_full_events_total"): c["buffer_thres"],
            f"rx_prio{p}_bytes": c["roce_rx_bytes"], f"rx_prio{p}_packets": c["roce_rx_packets"],
            f"tx_prio{p}_bytes": c["roce_tx_bytes"], f"tx_prio{p}_packets": c["roce_tx_packets"],
            "rx_prio0_bytes": c["netdev_rx_bytes"], "rx_prio0_packets": c["netdev_rx_packets"],
            "tx_prio0_bytes": c["netdev_tx_bytes"], "tx_prio0_packets": c["netdev_tx_packets"],
            # ConnectX's IEEE 802.3 PAUSE control counters rise with PFC on a PFC-only port
            # (docs/field-notes.md); mlx5 also reports them as the kernel's pause statistic.
            raw("nic_rx_pause_ctrl_frames_total"): c["rx_pauses"],
            raw("nic_tx_pause_ctrl_frames_total"): c["tx_pauses"],
            raw("nic_rx_pfc_frames_total", priority=p): c["rx_pauses"],
            raw("nic_rx_pause_duration_seconds_total", priority=p): c["rx_paused_us"],
            raw("nic_tx_pfc_frames_total", priority=p): c["tx_pauses"],
            raw("nic_tx_pause_duration_seconds_total", priority=p): c["tx_paused_us"],
            f"rx_prio{p}_pause_transition": c["pause_transitions"],
            raw("nic_pause_storm_events_total", kind="warning"): c["storm_warnings"],
        })
        bad = port.bad_lane
        spread = c["corrected_bits"] - c["bad_lane_bits"]
        for lane in range(FEC_LANES):
            stats[raw("nic_fec_lane_bit_errors_total", lane=lane)] = spread // FEC_LANES + (
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
        std = {"pause.rx_frames": c["rx_pauses"], "pause.tx_frames": c["tx_pauses"],
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
            write_port_tree(root, port)
            write_roce_qos(root, port)
            fn = function_dir(root, port)
            irqs = self.irq_numbers(port)
            names = [f"mlx5_async0@pci:{port.bdf}",
                     *(f"mlx5_comp{ch}@pci:{port.bdf}" for ch in range(CHANNELS))]
            for irq, name in zip(irqs, names, strict=True):
                write_file(fn / "msi_irqs" / str(irq), "msix")
                write_file(root / "kernel" / "irq" / str(irq) / "actions", name)
        cpus = f"0-{self.cpus - 1}"
        for name in ("possible", "online"):
            write_file(root / "devices" / "system" / "cpu" / name, cpus)
        write_file(root / "devices" / "system" / "node" / "node0" / "cpulist", cpus)
        write_bond(root, list(self.ports.values())[-2:])
        for number, port in enumerate(self.ports.values()):
            write_hwmon(root, port, number)
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
                write_file(root / "irq" / str(irq) / "smp_affinity_list",
                           f"0-{HOST_CPUS - 1}" if i == 0 else cpu)
                write_file(root / "irq" / str(irq) / "effective_affinity_list", cpu)
        self.write_counters_procfs()

    def write_counters_procfs(self) -> None:
        if self._procfs is None:
            return
        lines = [" ".join(f"{w:08x}" for w in (p, d, sq, 0, 0, 0, 0, 0, 0, 0, 0, 0, cpu, 0, 0))
                 for cpu, (p, d, sq) in enumerate(self.softnet())]
        write_file(self._procfs / "net" / "softnet_stat", "\n".join(lines))
        # /proc/stat's per-CPU lines (user nice system idle iowait irq softirq steal guest
        # guest_nice, in USER_HZ ticks): the softirq column is what the softirq source reads
        hz = os.sysconf("SC_CLK_TCK")
        ticks = [round(s * hz) for s in self.softirq_seconds()]
        cpu_lines = [f"cpu{cpu} 0 0 0 0 0 0 {t} 0 0 0" for cpu, t in enumerate(ticks)]
        write_file(self._procfs / "stat", "\n".join([f"cpu  0 0 0 0 0 0 {sum(ticks)} 0 0 0",
                                                     *cpu_lines]))

    def write_counters(self, root: str | os.PathLike[str]) -> None:
        """Rewrite the moving sysfs files (netdev statistics, AER, RDMA counters) whose
        value changed."""
        root = Path(root)

        def put(path: Path, value: object) -> None:
            if self._written.get(path) != value:
                write_file(path, value)
                self._written[path] = value

        for port in self.ports.values():
            c = self.counters(port.name)
            fn = function_dir(root, port)
            stats = dict.fromkeys(NETDEV_STATS, 0)
            stats.update(rx_bytes=c["netdev_rx_bytes"], tx_bytes=c["netdev_tx_bytes"],
                         rx_packets=c["netdev_rx_packets"], tx_packets=c["netdev_tx_packets"],
                         rx_missed_errors=c["ring_drops"], rx_crc_errors=c["crc_errors"],
                         rx_errors=c["crc_errors"])
            for key, value in stats.items():
                put(fn / "net" / port.name / "statistics" / key, value)
            receiver_errors = c["aer_correctable"]
            put(fn / "aer_dev_correctable", aer_lines(AER_CORRECTABLE, "COR",
                                                       {"Receiver Error": receiver_errors}))
            put(fn.parent / "aer_rootport_total_err_cor", receiver_errors)
            port_dir = fn / "infiniband" / port.rdma_device / "ports" / "1"
            hw = dict.fromkeys(rdma_counters(), 0)
            hw.update({MLX5_IB.name_of(metric): c[key] for metric, key in _RDMA_STATE})
            for key, value in hw.items():
                put(port_dir / "hw_counters" / key, value)
            ib = dict.fromkeys(IB_COUNTERS, 0)
            ib.update(port_rcv_data=c["roce_rx_bytes"] // 4, port_xmit_data=c["roce_tx_bytes"] // 4,
                      port_rcv_packets=c["roce_rx_packets"], port_xmit_packets=c["roce_tx_packets"],
                      unicast_rcv_packets=c["roce_rx_packets"],
                      unicast_xmit_packets=c["roce_tx_packets"],
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


