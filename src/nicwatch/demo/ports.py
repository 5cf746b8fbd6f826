"""The simulated host's ports (see demo/simulate.py): what each port is (PortSpec), the
script of faults (demo_ports) and the driver statistics a port shows (stat_names)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from nicwatch.normalize.drivers import RDMA_TABLES, TABLES

DRIVER = "mlx5_core"
MLX5 = TABLES[DRIVER]  # its driver table: the raw names the demo writes
MLX5_IB = RDMA_TABLES["mlx5"]  # its RDMA side
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
VFS = 4  # SR-IOV VFs of port 0
VF_SHARES = (0.04, 0.03, 0.02, 0.01)  # of port 0's netdev traffic, per VF
VF_DROPPING, VF_DROP_RATIO = 3, 2e-3



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


def raw(metric: str, **labels: object) -> str:
    """mlx5_core's raw `ethtool -S` name for a canonical family, as its driver table spells
    it (normalize/drivers/mlx5_core.py): the demo writes no second spelling."""
    name: str = MLX5.raw_name(metric, **labels)
    return name


def stat_names() -> tuple[str, ...]:
    """mlx5_core `ethtool -S` names of a port with PFC on priority 3 and stall detection,
    in the driver's group order (software, vport, PPCNT 802.3 / RFC 2863 / physical,
    per-priority, per-channel). Names the driver table maps come from the table; the rest
    (software, vport, per-priority traffic, per-channel) no table maps and stay raw."""
    names = [
        "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_csum_unnecessary",
        "rx_buff_alloc_err", "tx_queue_dropped", "tx_queue_stopped", "tx_queue_wake",
        raw("nic_rx_out_of_buffer_drops_total"), "rx_if_down_packets",
        "rx_vport_unicast_packets", "rx_vport_unicast_bytes",
        "tx_vport_unicast_packets", "tx_vport_unicast_bytes",
        "rx_vport_rdma_unicast_packets", "rx_vport_rdma_unicast_bytes",
        "tx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_bytes",
        raw("nic_phy_tx_packets_total"), raw("nic_phy_rx_packets_total"),
        raw("nic_rx_crc_errors_total"), raw("nic_phy_tx_bytes_total"),
        raw("nic_phy_rx_bytes_total"), raw("nic_rx_symbol_errors_total"),
        raw("nic_rx_pause_ctrl_frames_total"), raw("nic_tx_pause_ctrl_frames_total"),
        raw("nic_rx_discards_total"), raw("nic_tx_discards_total"),
        raw("nic_link_down_events_total"), raw("nic_rx_pcs_symbol_errors_total"),
        raw("nic_fec_corrected_bit_errors_total"),
        *(raw("nic_fec_lane_bit_errors_total", lane=lane) for lane in range(FEC_LANES)),
        raw("nic_rx_buffer_almost_full_events_total"),
        "outbound_pci_stalled_rd", "outbound_pci_stalled_wr",
    ]
    for p in range(8):
        names += [f"rx_prio{p}_bytes", f"rx_prio{p}_packets", f"rx_prio{p}_discards",
                  f"tx_prio{p}_bytes", f"tx_prio{p}_packets"]
    p = PFC_PRIORITY
    names += [raw("nic_rx_pfc_frames_total", priority=p),
              raw("nic_rx_pause_duration_seconds_total", priority=p),
              raw("nic_tx_pfc_frames_total", priority=p),
              raw("nic_tx_pause_duration_seconds_total", priority=p),
              f"rx_prio{p}_pause_transition",
              raw("nic_pause_storm_events_total", kind="warning"),
              raw("nic_pause_storm_events_total", kind="error")]
    for ch in range(CHANNELS):
        names += [f"ch{ch}_events", f"ch{ch}_poll"]
    for ch in range(CHANNELS):
        names += [f"rx{ch}_packets", f"rx{ch}_bytes", f"rx{ch}_buff_alloc_err"]
    for ch in range(CHANNELS):
        names += [f"tx{ch}_packets", f"tx{ch}_bytes"]
    return tuple(names)


def rdma_counters() -> tuple[str, ...]:
    """mlx5_ib's hw_counters files of a port: its table's counters (normalize/drivers/
    mlx5_ib.py) but the optional ones, which only netlink shows when enabled."""
    return tuple(c.name for c in MLX5_IB.counters if not c.optional)
