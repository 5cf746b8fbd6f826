"""The signature table: every diagnosis nicwatch makes, as data (docs/diagnosis.md).

Each :class:`Signature` lists its conditions; a condition compares one quantity (computed by
engine.QUANTITIES from the window's series, None when a series it needs is absent) with a
threshold. ``required`` conditions decide whether the signature holds (all of them, or any
one with ``match="any"``); the others are supporting evidence that raises the confidence
and, where they hold, name the likely reason. An unknown (absent) required condition never
holds: absent is not zero. Thresholds carry their source in ``source``;
tests/unit/consumers/diagnosis has a positive and a negative scenario per signature and healthy
busy ones where none holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from nicwatch.normalize.linkphysics import FEC_CODES

DEVICE = "device"
PRIORITY = "priority"
LANE = "lane"

# Classes group signatures for alerting (one alert per class, docs/alerts.md).
HOST = "host_receive"
TRANSMIT = "host_transmit"
LINK = "physical_layer"
PCIE = "pcie"
FLOW = "flow_control"
CONGESTION = "congestion_control"
TRANSPORT = "rdma_transport"
CONTEXT = "context"  # configuration drift: shown with the others, never a cause by itself

# Thresholds (named, so the docs, the tests and the alert table quote one number).
HOST_DROP_RATIO = 1e-4  # drops / (drops + packets received): NicRxOutOfBufferDrops
PAUSE_SENT_PER_SECOND = 1.0  # PAUSE/PFC frames sent: "the host pushed back at all"
SOFTIRQ_SATURATED = 0.9  # share of a serving CPU in softirq: NicReceiveCpuSaturated
SOFTNET_PRESSURE_PER_SECOND = 1.0  # time_squeeze + backlog drops per second on serving CPUs
QUEUE_IMBALANCE = 2.0  # busiest queue share / fair share: NicRxQueueImbalance
PCIE_TRAFFIC_SHARE = 0.8  # peak traffic / PCIe ceiling, the ceiling below line rate
RX_PAUSED = 0.10  # fraction of time the peer held a priority paused: NicRxPauseTimeHigh
TX_PAUSING = 0.05  # fraction of time this port held its peer paused: NicTxPauseTimeHigh
# Pause physics (IEEE 802.3 Annex 31B, 802.1Qbb): one pause quantum is 512 bit times and an
# XOFF carries at most 0xFFFF quanta, which is also what ixgbe (IXGBE_DEFAULT_FCPAUSE) and i40e
# (I40E_DEFAULT_PAUSE_TIME) send by default. A received XOFF pauses for at most
# quanta x 512 / link bit rate seconds and an XON ends it early, so XOFF/s x that is an upper
# bound of the paused fraction (capped at 1): the estimate where no duration counter exists.
PAUSE_QUANTUM_BITS = 512
MAX_PAUSE_QUANTA = 0xFFFF
# A sender holding a pause refreshes it with another XOFF before it expires: ixgbe every half
# of it (IXGBE_FCRTV = pause_time / 2), i40e likewise. An XOFF no XON released paused at least
# that long: where XON is counted apart the paused fraction is a range (quantities._estimated).
PAUSE_REFRESH_SHARE = 0.5
# Frame sizes that bound a count of frames from bytes (no frame counter) or bytes from frames:
MIN_FRAME_BYTES = 64  # the smallest Ethernet frame the byte counters count
MIN_FRAME_WIRE_BYTES = 84  # 64 + 8 preamble + 12 inter-frame gap: the most frames a link carries
MAX_FRAME_BYTES = 16_383  # the largest frame any table's size bins count (bnxt 9217-16383)
XOFF_FRAMES_PER_SECOND = 1.0  # supporting: XOFF frames at all on the priority
TX_DROP_RATIO = 1e-4  # transmit drops / (drops + packets sent): the receive side's ratio
STORM_PAUSED = 0.8  # tx pause duration / poll interval: the PFC watchdog rule (SONiC)
STORM_RX_IDLE = 0.01  # rx traffic / line rate that counts as "near zero" during a storm
PFC_ACTIVE_PER_SECOND = 100.0  # PFC frames/s on a priority that are more than "a few"
ECN_NEAR_ZERO_PER_SECOND = 1.0  # ECN marks + CNPs per second that count as not engaging
# corrected bits / line bits of the port, where no lane ratio is known (a lane is held to
# its FEC code's threshold, normalize.linkphysics.FEC_CODES)
PRE_FEC_BER = 1e-5
RX_POWER_MARGIN_DB = 1.0  # dB above the module's own rx power low-warning threshold
ONE = 1.0  # at least one event in the window
_FEC_THRESHOLDS = ", ".join(f"{c.name} {c.threshold:g}" for c in FEC_CODES.values())
_ESTIMATE = ("where no duration counter exists (ixgbe, i40e, ice, be2net, e1000e; mlx5 and bnxt "
             "for 802.3x PAUSE without its duration), the fraction is estimated from frames: "
             f"an XOFF pauses for at most {MAX_PAUSE_QUANTA:,} quanta (0xFFFF, the most it "
             f"carries and the ixgbe/i40e default) x {PAUSE_QUANTUM_BITS} bit times / the link's "
             "bit rate (3.36 ms at 10G, 0.34 ms at 100G), so XOFF/s x that, capped at 1, is an "
             "upper bound. Where XON is counted apart (ixgbe, i40e, ice, e1000e) the fraction is "
             "a range: at least (XOFF - XON)/s x that x "
             f"{PAUSE_REFRESH_SHARE:g} (an XOFF no XON released lasted until it expired or was "
             "refreshed, every half quanta by ixgbe/i40e), at most the bound; it decides only "
             "where the whole range is on one side of the threshold, else the verdict is "
             "unknown (released by XON, no duration counter), never held: 600 XOFF/s each "
             "released by an XON on 100G is 0 to 20.1 %, unknown; 23,400 XOFF/s never released "
             "on 10G is 100 %. Without an XON count (be2net; mlx5/bnxt 802.3x) the bound "
             "decides, said to be one; without the link speed it is unknown")


@dataclass(frozen=True, slots=True)
class Condition:
    """``quantity`` (engine.QUANTITIES) ``op`` (">=" or "<") ``threshold``."""

    quantity: str
    op: str
    threshold: float
    text: str  # what it means when it holds, for the verdict ("rx ring below its maximum")
    required: bool = True
    # where it applies in a per-lane signature: "" every verdict, DEVICE the interface's own
    # verdict (lane ""), LANE each lane's verdict
    scope: str = ""


@dataclass(frozen=True, slots=True)
class Signature:
    name: str
    klass: str
    scope: str  # DEVICE, PRIORITY or LANE: what the verdict is per
    title: str
    conditions: tuple[Condition, ...]
    next_check: str  # the one next check or fix; {device} and {scope} are filled in
    source: str  # where the thresholds come from
    false_positives: str  # when it may hold without the fault
    match: str = "all"  # required conditions: "all" must hold, or "any" one
    supersedes: tuple[str, ...] = ()  # signatures it explains on the same device and scope


def _req(quantity: str, op: str, threshold: float, text: str, scope: str = "") -> Condition:
    return Condition(quantity, op, threshold, text, True, scope)


def _sup(quantity: str, op: str, threshold: float, text: str) -> Condition:
    return Condition(quantity, op, threshold, text, False)


SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "host_rx_bottleneck", HOST, DEVICE, "Host receive bottleneck",
        (_req("host_rx_drop_ratio", ">=", HOST_DROP_RATIO,
              "the host's receive path drops (out of buffer, port discards)"),
         _sup("tx_pause_frames_rate", ">=", PAUSE_SENT_PER_SECOND,
              "the host sent PAUSE/PFC while dropping"),
         _sup("rx_ring_fill", "<", 1.0, "the rx ring is below its maximum"),
         _sup("pcie_ceiling_ratio", "<", 1.0, "the PCIe ceiling is below line rate"),
         _sup("rx_cpu_softirq_max", ">=", SOFTIRQ_SATURATED,
              "a CPU serving the NIC is saturated in softirq"),
         _sup("rx_queue_imbalance", ">=", QUEUE_IMBALANCE, "one receive queue dominates")),
        "ethtool -g {device}; raise the rx ring to its maximum: ethtool -G {device} rx <max>",
        "drop ratio: the NicRxOutOfBufferDrops alert (1e-4); PAUSE sent at all: 1 frame/s",
        "a burst of drops at link-up or during a ring resize holds for one window; drops "
        "counted by the port for filtered traffic (rx_discards on some drivers) count too",
        supersedes=("pausing_peer",)),
    Signature(
        "rx_cpu_saturated", HOST, DEVICE, "Receive CPU saturated",
        (_req("rx_cpu_saturated_share", ">=", SOFTIRQ_SATURATED,
              "a CPU serving the NIC's interrupts is at or near full softirq"),
         _req("rx_cpu_saturated_pressure", ">=", SOFTNET_PRESSURE_PER_SECOND,
              "softnet time_squeeze or backlog drops rising on that same CPU"),
         _sup("rx_queue_imbalance", ">=", QUEUE_IMBALANCE, "one receive queue dominates")),
        "cat /proc/interrupts and /proc/net/softnet_stat; spread the queues' IRQs over more "
        "CPUs (set_irq_affinity) or the flows over more queues (ethtool -X {device})",
        "softirq share: the NicReceiveCpuSaturated alert (0.9); softnet pressure: any "
        "time_squeeze (net_rx_action ran out of netdev_budget or netdev_budget_usecs with "
        "work left, Documentation/networking/scaling.rst) or backlog drop, at least one a "
        "second; both on one CPU (a CPU busy in softirq that never runs out of budget keeps "
        "up, a squeeze on a CPU with softirq to spare is a budget setting, not saturation). "
        "Blind where NAPI runs outside softirq: with threaded NAPI (napi-get lists a pid, "
        "/sys/class/net/<dev>/threaded) the work is a napi/<dev>-<id> kthread's process "
        "time and the verdict is unknown; busy polling (net.core.busy_poll/busy_read, "
        "SO_BUSY_POLL, epoll busy poll) runs in the application's time and is not seen",
        "a CPU busy in softirq for another NIC on the same core counts (softnet_stat is per "
        "CPU, not per NIC); a single time_squeeze per second on a busy core is common"),
    Signature(
        "tx_drops", TRANSMIT, DEVICE, "Transmit drops",
        (_req("tx_drop_ratio", ">=", TX_DROP_RATIO,
              "packets the host handed to the interface were dropped on transmit"),
         _sup("link_flaps", ">=", ONE, "the link went down (no carrier)")),
        "ip -s -s link show {device} (TX dropped, carrier); compare its MTU with the other "
        "end's (ip link show; a veth, tunnel or switch port with a smaller MTU drops every "
        "larger packet); ethtool -S {device} | grep -iE 'drop|discard|stop|timeout'; dmesg | "
        "grep -i 'transmit.*timed out' (a stopped queue)",
        "1e-4 of what is sent, the receive side's ratio: at that loss TCP's throughput bound "
        "(Mathis et al. 1997: 1.22 x MSS / (RTT x sqrt(p))) is 14 Gb/s for a 1,448-byte MSS at "
        "100 us, below a 25G port's line rate; a healthy transmit path drops nothing (excess "
        "waits in the qdisc, which the interface's counters do not count). Drops: "
        "nic_tx_dropped_total (the netdev: an MTU larger than the other end of a veth takes, "
        "no carrier) plus nic_tx_discards_total (the port); sent: nic_tx_packets_total, else "
        "the port's frames",
        "a driver that counts packets dropped by policy (tc police, a VF spoof check) as tx "
        "drops; a link going down drops what was queued once"),
    Signature(
        "pcie_limited", PCIE, DEVICE, "PCIe-limited",
        (_req("pcie_ceiling_ratio", "<", 1.0, "the PCIe ceiling is below line rate"),
         _req("pcie_traffic_share", ">=", PCIE_TRAFFIC_SHARE,
              "traffic (netdev plus RDMA) reached the PCIe ceiling")),
        "lspci -vv -s <pci address> | grep LnkSta; check the slot and the BIOS lane split",
        "ceiling vs line rate: normalize/pcie_verdict.py (the NicPcieBandwidthBelowLineRate "
        "alert); 0.8 of the ceiling: TLP and descriptor overhead leave about that much for payload",
        "a port that never needs line rate can sit at the ceiling by design; the ceiling is "
        "the link's raw rate, so the share is an estimate"),
    Signature(
        "paused_by_peer", FLOW, PRIORITY, "Paused by the peer (victim)",
        (_req("rx_pause_fraction", ">=", RX_PAUSED,
              "the peer held this priority paused (rx pause duration, else estimated from "
              "XOFF frames)"),
         _sup("rx_pfc_frames_rate", ">=", XOFF_FRAMES_PER_SECOND,
              "PAUSE/PFC frames received on this priority"),
         _sup("tx_pause_fraction", "<", TX_PAUSING, "this port is not pausing the peer back")),
        "look downstream: the peer's (switch's) egress on this priority is congested; check "
        "its buffer and ECN settings, and the receivers behind it",
        "the NicRxPauseTimeHigh alert (0.10 of the time), from the rx pause duration where "
        "the driver counts it (mlx5, bnxt): durations decide and frame counts do not (2,000 "
        "PFC frames/s at 1 % paused, ordinary incast, holds nothing); " + _ESTIMATE,
        "incast by design (many senders to one receiver) pauses the senders briefly; averaged "
        "over the window a short burst stays below 0.10. Estimated from XOFF frames where "
        "XON is not counted apart (be2net) the fraction is an upper bound: many short "
        "pauses each ended by an XON read as long ones"),
    Signature(
        "pausing_peer", FLOW, PRIORITY, "Pausing the peer (source)",
        (_req("tx_pause_fraction", ">=", TX_PAUSING,
              "this port held the peer paused on this priority (tx pause duration, else "
              "estimated from XOFF frames)"),
         _sup("tx_pfc_frames_rate", ">=", XOFF_FRAMES_PER_SECOND,
              "PAUSE/PFC frames sent on this priority"),
         _sup("host_rx_drop_ratio", ">=", HOST_DROP_RATIO, "the host's receive path drops")),
        "the host cannot drain its receive buffer: see host_rx_bottleneck and "
        "rx_cpu_saturated; ethtool -S {device} | grep -E 'out_of_buffer|discard'",
        "the NicTxPauseTimeHigh alert (0.05 of the time), from the tx pause duration where "
        "the driver counts it; " + _ESTIMATE,
        "a receiver at its line rate pauses briefly by design (lossless); a window with one "
        "long burst can reach 0.05; an estimate from XOFF frames is an upper bound"),
    Signature(
        "pause_storm", FLOW, PRIORITY, "Pause storm",
        (_req("tx_pause_fraction_peak", ">=", STORM_PAUSED,
              "tx pause covered almost the whole poll interval (duration, else estimated from "
              "XOFF frames)"),
         _req("rx_traffic_share", "<", STORM_RX_IDLE, "while rx traffic is near zero"),
         _sup("pause_storm_events", ">=", ONE, "the NIC's own storm watchdog fired")),
        "the host stopped receiving (hung driver or queue): check dmesg and devlink health; "
        "enable the NIC's storm prevention (mlx5: ethtool --set-tunable {device} "
        "pfc-prevention-tout 500)",
        "the PFC watchdog rule of SONiC and switch vendors: paused for more than 0.8 of the "
        "detection interval while the queue does not drain; the paused fraction per poll from "
        "the tx pause duration, " + _ESTIMATE + "; rx traffic from the port's bytes, else "
        f"its frames x {MAX_FRAME_BYTES:,} bytes (the largest frame a table counts: an upper "
        "bound, so \"near zero\" is never guessed)",
        "a port deliberately held (a test) or an rx-only port with no traffic to receive and "
        "real pressure would also match; 0.8 of every poll is rare without a fault",
        supersedes=("pausing_peer",)),
    Signature(
        "ecn_not_engaging", CONGESTION, PRIORITY, "ECN not engaging",
        (_req("pfc_frames_rate", ">=", PFC_ACTIVE_PER_SECOND,
              "PFC rising on the lossless priority"),
         _req("ecn_cnp_rate", "<", ECN_NEAR_ZERO_PER_SECOND,
              "while ECN marks and CNPs stay near zero"),
         _sup("pfc_enabled", ">=", ONE, "PFC is enabled on this priority")),
        "enable ECN at the switch egress queue of this priority and on the host (mlx5: "
        "echo 1 > /sys/class/net/{device}/ecn/roce_np/enable/{scope}); see docs/roce-qos.md",
        "\"ECN is the control loop, PFC is the safety net\" (DCQCN, docs/roce-qos.md): PFC "
        "above 100 frames/s with ECN marks and CNPs below 1/s",
        "traffic that is not RoCE (no CNP path) on a lossless priority pauses without ECN; "
        "absent ECN/CNP counters leave it unknown, never held"),
    Signature(
        "congestion_control_misconfigured", CONGESTION, DEVICE,
        "Congestion control misconfigured",
        (_req("cnp_ignored", ">=", ONE, "CNPs received and ignored"),
         _req("ecn_off_on_lossless", ">=", ONE, "ECN is off on a PFC-enabled priority"),
         _req("cnp_priority_pfc", ">=", ONE, "the CNP priority is PFC-enabled"),
         _req("roce_priority_mismatch", ">=", ONE,
              "the RoCE DSCP maps to a priority without PFC")),
        "mlnx_qos -i {device} (trust, pfc, dscp2prio) and the ecn/ tree; see docs/roce-qos.md",
        "the RoCE QoS profile (docs/roce-qos.md): CNPs on their own priority without PFC, "
        "ECN at both points of the lossless priority, RoCE DSCP mapped to it",
        "a host deliberately running RoCE lossy (no PFC) matches the DSCP rule; any ignored "
        "CNP counts", match="any"),
    # RDMA: a host counts one end of each queue pair (the requester's NAKs received, the
    # responder's drops), never both; each end's evidence is a verdict of its own.
    Signature(
        "rdma_transport_loss", TRANSPORT, DEVICE, "RDMA transport loss",
        (_req("rdma_out_of_sequence", ">=", ONE,
              "as responder: packets arrived out of sequence (one before them was lost)"),
         _req("rdma_sequence_naks", ">=", ONE,
              "as requester: sequence error NAKs or implied NAKs (its packets were lost)"),
         _sup("rdma_recovery_events", ">=", ONE,
              "local ACK timeouts or duplicate requests rising with them"),
         _sup("rdma_retries_exceeded", ">=", ONE, "QPs exceeded their transport retries")),
        "find the loss on the path: rdma statistic show; the switch's drop counters on the "
        "RoCE priority; PFC on that priority end to end",
        "RoCE is built for a lossless fabric and RC delivers in order: a responder counts "
        "out_of_sequence only when a PSN was skipped, a requester receives a sequence NAK "
        "(packet_seq_err) or infers one (implied_nak_seq_err) only when its packet was lost, "
        "so one of either end's counters in the window (>= 1) is a loss; the peer's counters "
        "are on another host, so either end alone holds",
        "a QP torn down mid-transfer can leave a stray sequence error; adaptive routing "
        "(out-of-order delivery the NIC does not reorder) counts out_of_sequence without "
        "loss; a window of 30 s keeps a single event visible for one window",
        match="any"),
    Signature(
        "rdma_qp_retries_exceeded", TRANSPORT, DEVICE,
        "RDMA queue pairs failed (transport retries exceeded)",
        (_req("rdma_retries_exceeded", ">=", ONE,
              "QPs exhausted their transport retries and went to the error state"),
         _sup("rdma_ack_timeouts", ">=", ONE, "local ACK timeouts rising")),
        "the peer stopped answering or the path drops every retry: rdma resource show qp "
        "(QPs in ERR); ping the peer's RoCE address; check its port and the path's PFC",
        "a QP retries a lost transfer retry_cnt times (at most 7) after each ACK timeout; "
        "req_transport_retries_exceeded (mlx5 6.9+) and max_retry_exceeded (bnxt_re) count "
        "the QPs that ran out, each one failed with IB_WC_RETRY_EXC_ERR: any (>= 1)",
        "a peer process killed or a host rebooted mid-transfer fails its QPs the same way"),
    Signature(
        "rdma_rnr_naks_received", TRANSPORT, DEVICE,
        "Remote receiver not ready (RNR NAKs received)",
        (_req("rdma_rnr_naks", ">=", ONE,
              "as requester: RNR NAKs received (the responder had no receive WQE)"),
         _req("rdma_rnr_retries_exceeded", ">=", ONE,
              "QPs exhausted their RNR retries and went to the error state")),
        "the peer's application does not post receive WQEs fast enough: raise its receive "
        "queue depth (or SRQ limit); rnr_retry 7 and a larger min_rnr_timer on this side "
        "only hide it",
        "an RNR NAK stalls the QP for min_rnr_timer (0.01-655 ms) each time: a correctly "
        "provisioned receiver posts its WQEs ahead and sends none, so any (>= 1) in the "
        "window (rnr_nak_retry_err on mlx5 and bnxt_re counts RNR NAKs received; "
        "req_rnr_retries_exceeded, mlx5 6.9+, the QPs that failed of them)",
        "applications that use RNR as flow control on purpose (rnr_retry 7) match",
        match="any"),
    Signature(
        "rdma_receiver_not_ready", TRANSPORT, DEVICE, "Receiver not ready (RNR)",
        (_req("rdma_out_of_buffer", ">=", ONE,
              "as responder: packets dropped for lack of a posted receive WQE (an RNR NAK "
              "sent for each)"),
         _sup("rdma_rnr_naks", ">=", ONE, "RNR NAKs received from the peers too")),
        "this host's application does not post receive WQEs fast enough: raise its receive "
        "queue depth (or SRQ limit); rdma statistic show link {device} for the QPs' counters",
        "out_of_buffer (mlx5 q counter, bnxt_re ext stats) counts packets the responder "
        "dropped with no receive WQE posted, each answered with an RNR NAK: a receiver that "
        "keeps ahead drops none, so any (>= 1)",
        "applications that use RNR as flow control on purpose (rnr_retry 7) match; on mlx5 "
        "the counter covers every QP of the port's q counter (UD too)",
        supersedes=("rdma_rnr_naks_received",)),
    Signature(
        "physical_layer", LINK, LANE, "Physical layer",
        (_req("lane_ber_over_threshold", ">=", ONE,
              "the lane's pre-FEC bit error ratio at or above its FEC code's threshold", LANE),
         _req("pre_fec_ber", ">=", PRE_FEC_BER,
              "the port's pre-FEC bit error ratio high (no lane ratio known)", DEVICE),
         _req("fec_uncorrectable", ">=", ONE, "uncorrectable FEC codewords", DEVICE),
         _req("crc_errors", ">=", ONE, "CRC errors", DEVICE),
         _req("pcs_symbol_errors", ">=", ONE, "PCS symbol errors (after FEC)", DEVICE),
         _req("rx_power_margin_db", "<", RX_POWER_MARGIN_DB,
              "module rx power near its low warning", DEVICE),
         _req("link_flaps", ">=", ONE, "the link went down", DEVICE)),
        "clean the connector and reseat the module (or swap the cable; a lane that follows "
        "the module is the module's); ethtool -I --show-fec {device}; ethtool -m {device}",
        "per lane: nic_pre_fec_ber{lane,fec} (docs/link-physics.md, the lane's bit errors over "
        "the window / its serdes rate) against its FEC code's threshold, a decade below the "
        "ratio the code is designed for (normalize/linkphysics.py FEC_CODES: "
        f"{_FEC_THRESHOLDS}; the NicPreFecBerHigh alert's by_fec); "
        "the port's own verdict: its total ratio at 1e-5 (well below the 2.4e-4 RS(544,514) "
        "limit of IEEE 802.3) only where no lane ratio is known (no lane counters, no lane "
        "count or an unknown FEC code); uncorrectable FEC, CRC, PCS errors and link flaps: "
        "any; rx power: within 1 dB of the module's own low-warning threshold (SFF-8636/CMIS)",
        "a link that was just trained or re-plugged counts a flap and a few CRC errors once; "
        "FEC correcting at a normal rate (BER 1e-8) stays far below the threshold; a lane "
        "ratio is the window's mean, so a burst shorter than the window is diluted",
        match="any", supersedes=("rdma_transport_loss", "rdma_qp_retries_exceeded")),
    Signature(
        "config_drift", CONTEXT, DEVICE, "Configuration unlike the port's peers",
        (_req("drift_checks", ">=", ONE,
              "ring, MTU, channels, QoS profile or firmware differ from the group's"),),
        "nicwatch check: align the port with its group ([[consistent]] in the configuration)",
        "the configured [[consistent]] groups (docs/expectations.md)",
        "a port deliberately different must be left out of the group"),
)

BY_NAME: dict[str, Signature] = {s.name: s for s in SIGNATURES}
