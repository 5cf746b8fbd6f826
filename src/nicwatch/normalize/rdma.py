"""RDMA ports -> RdmaSamples: the IB PortCounters and each driver's hardware counters as
canonical families, driver knowledge as data.

A port's series are its own (``rdma_device``, ``port``; the exporter adds the netdev as
``device`` where the port has one). Families come first from the PortCounters (``counters/``),
then from the driver's table of ``hw_counters``: a driver without PMA counters (efa, mana,
rxe: no ``process_mad``; bnxt_re before it answered PMA MADs) gives its RDMA bytes and
packets from its own counters. A
hardware counter the driver's table does not map stays reachable as
``nic_rdma_hw_stat_total{counter}``, a value that is no counter (mana ``current_rate``) as
``nic_rdma_hw_value{counter}``.

The same counter name does not mean the same thing on every driver: each driver's table says
what its counter counts, from its kernel source (and the vendor's documentation where the
source only names the hardware field), and maps it only to a family with that meaning.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from nicwatch.model import CounterValue, Labels, RdmaPort, RdmaSample, SeriesKey

SOURCE = "rdma"
RAW_COUNTER = "nic_rdma_hw_stat_total"
RAW_VALUE = "nic_rdma_hw_value"
WORD = 4.0  # port_xmit_data / port_rcv_data count 4-byte words
# iboe_get_mtu: IB_GRH_BYTES 40 + IB_UDP_BYTES 8 + IB_BTH_BYTES 12 + IB_EXT_XRC_BYTES 4 +
# IB_EXT_ATOMICETH_BYTES 28 + IB_ICRC_BYTES 4
ROCE_HEADERS = 96


@dataclass(frozen=True, slots=True)
class PmaCounter:
    """One IB PortCounters file: its width in ``PORT_PMA_ATTR`` (the data and packet
    counters are 64-bit in the extended table), the family and the raw unit's scale."""

    name: str
    metric: str
    width: int
    meaning: str
    scale: float = 1.0
    extended: bool = False  # 64 bits when the PMA declares IB_PMA_CLASS_CAP_EXT_WIDTH


PMA_EVIDENCE = ("drivers/infiniband/core/sysfs.c PORT_PMA_ATTR / PORT_PMA_ATTR_EXT, "
                "show_pma_counter (IBTA PortCounters / PortCountersExtended)")

PMA: tuple[PmaCounter, ...] = (
    PmaCounter("symbol_error", "nic_rdma_symbol_errors_total", 16,
               "minor link errors detected on one or more physical lanes"),
    PmaCounter("link_error_recovery", "nic_rdma_link_error_recoveries_total", 8,
               "times the port training state machine completed the link error recovery "
               "process"),
    PmaCounter("link_downed", "nic_rdma_link_downed_total", 8,
               "times the link error recovery process failed and the link went down"),
    PmaCounter("port_rcv_errors", "nic_rdma_rx_errors_total", 16,
               "packets received with an error (local physical errors, malformed packets, "
               "buffer overruns)"),
    PmaCounter("port_rcv_remote_physical_errors", "nic_rdma_rx_remote_physical_errors_total",
               16, "packets received marked bad (EBP) by an upstream link"),
    PmaCounter("port_rcv_switch_relay_errors", "nic_rdma_rx_switch_relay_errors_total", 16,
               "packets a switch port could not relay"),
    PmaCounter("port_xmit_discards", "nic_rdma_tx_discards_total", 16,
               "outbound packets discarded (port down or congested)"),
    PmaCounter("port_xmit_constraint_errors", "nic_rdma_tx_constraint_errors_total", 8,
               "outbound packets not sent for a partition or raw constraint"),
    PmaCounter("port_rcv_constraint_errors", "nic_rdma_rx_constraint_errors_total", 8,
               "inbound packets discarded for a partition or raw constraint"),
    PmaCounter("local_link_integrity_errors", "nic_rdma_local_link_integrity_errors_total", 4,
               "times the local physical errors exceeded the LocalPhyErrors threshold"),
    PmaCounter("excessive_buffer_overrun_errors",
               "nic_rdma_excessive_buffer_overrun_errors_total", 4,
               "times consecutive flow-control update periods had a buffer overrun"),
    PmaCounter("VL15_dropped", "nic_rdma_vl15_dropped_total", 16,
               "subnet management packets (VL15) dropped for lack of buffers"),
    PmaCounter("port_xmit_wait", "nic_rdma_tx_wait_ticks_total", 32,
               "ticks the port had data to send but could not (no credits, arbitration): "
               "congestion backpressure"),
    PmaCounter("port_xmit_data", "nic_rdma_tx_bytes_total", 32,
               "data octets sent, divided by 4 (the file counts 4-byte words)", WORD, True),
    PmaCounter("port_rcv_data", "nic_rdma_rx_bytes_total", 32,
               "data octets received, divided by 4 (4-byte words)", WORD, True),
    PmaCounter("port_xmit_packets", "nic_rdma_tx_packets_total", 32, "packets sent", 1.0, True),
    PmaCounter("port_rcv_packets", "nic_rdma_rx_packets_total", 32, "packets received", 1.0,
               True),
    PmaCounter("unicast_xmit_packets", "nic_rdma_tx_unicast_packets_total", 64,
               "unicast packets sent (PortCountersExtended only)"),
    PmaCounter("unicast_rcv_packets", "nic_rdma_rx_unicast_packets_total", 64,
               "unicast packets received"),
    PmaCounter("multicast_xmit_packets", "nic_rdma_tx_multicast_packets_total", 64,
               "multicast packets sent"),
    PmaCounter("multicast_rcv_packets", "nic_rdma_rx_multicast_packets_total", 64,
               "multicast packets received"),
)
PMA_BY_NAME: Mapping[str, PmaCounter] = MappingProxyType({c.name: c for c in PMA})
# Files only the extended table (pma_attrs_ext) has: their presence says the data and
# packet counters are the 64-bit PortCountersExtended ones.
EXTENDED_ONLY = frozenset({"unicast_xmit_packets", "unicast_rcv_packets",
                           "multicast_xmit_packets", "multicast_rcv_packets"})
# The separate 64-bit directory counters_ext/ (kernels before 4.5 and MLNX_OFED, as
# prometheus/procfs documents it): its file -> the counters/ file it supersedes. Its values
# are 64 bits (no saturation) and win over the 32-bit ones of counters/; where counters/ is
# the 64-bit extended table already (unicast/multicast files, or a value of 2^32 or more),
# counters/ wins and the counters_ext/ file stays raw (node_exporter's tree has a ConnectX-3
# port with counters/port_rcv_packets 6,825,908,347 and counters_ext/port_rcv_packets_64 0).
EXT_EVIDENCE = ("counters_ext/ (pre-4.5 kernels, MLNX_OFED; prometheus/procfs "
                "sysfs/class_infiniband.go parseInfiniBandCounters)")
COUNTERS_EXT: Mapping[str, str] = MappingProxyType({
    "port_xmit_data_64": "port_xmit_data",
    "port_rcv_data_64": "port_rcv_data",
    "port_xmit_packets_64": "port_xmit_packets",
    "port_rcv_packets_64": "port_rcv_packets",
    "port_unicast_xmit_packets": "unicast_xmit_packets",
    "port_unicast_rcv_packets": "unicast_rcv_packets",
    "port_multicast_xmit_packets": "multicast_xmit_packets",
    "port_multicast_rcv_packets": "multicast_rcv_packets",
})


@dataclass(frozen=True, slots=True)
class HwCounter:
    """One driver hardware counter: ``metric`` the family it feeds (None: raw, no family
    has its meaning), its width (32-bit counters wrap and are extended), what it counts on
    this driver and the kernel source saying so. ``value``: not a counter (a rate, a level)."""

    name: str
    metric: str | None
    meaning: str
    evidence: str
    width: int = 64
    value: bool = False


@dataclass(frozen=True, slots=True)
class RdmaDriver:
    key: str
    title: str
    counters: tuple[HwCounter, ...]
    note: str = ""

    def get(self, name: str) -> HwCounter | None:
        return _INDEX[self.key].get(name)


_MLX5 = "drivers/infiniband/hw/mlx5/counters.c"
_MLX5_Q = f"{_MLX5} basic/retrans/extended_err/roce_accl q_cnts (QUERY_Q_COUNTER, be32)"
_MLX5_CC = f"{_MLX5} cong_cnts (QUERY_CONG_STATISTICS, 64-bit)"
_MLX5_OP = f"{_MLX5} *_op_cnts, IB_STAT_FLAG_OPTIONAL (5.16+): netlink only, when enabled"
_MLX5_DOC = "; meaning: NVIDIA 'Understanding mlx5 Linux counters'"


def _mlx5(name: str, metric: str | None, meaning: str, width: int = 32,
          evidence: str = _MLX5_Q) -> HwCounter:
    return HwCounter(name, metric, meaning, evidence + _MLX5_DOC, width)


MLX5 = RdmaDriver("mlx5", "mlx5 (ConnectX, BlueField)", (
    _mlx5("rx_write_requests", "nic_rdma_rx_write_requests_total",
          "RDMA WRITE requests received by the port's QPs"),
    _mlx5("rx_read_requests", "nic_rdma_rx_read_requests_total",
          "RDMA READ requests received"),
    _mlx5("rx_atomic_requests", "nic_rdma_rx_atomic_requests_total",
          "ATOMIC requests received"),
    _mlx5("rx_dct_connect", "nic_rdma_rx_dct_connects_total",
          "connection requests received for the port's DCTs"),
    _mlx5("out_of_buffer", "nic_rdma_out_of_buffer_drops_total",
          "packets dropped for lack of a receive WQE (the consumer did not post receive "
          "buffers in time)"),
    _mlx5("out_of_sequence", "nic_rdma_out_of_sequence_total",
          "packets received out of sequence (a loss upstream in a lossless fabric)"),
    _mlx5("duplicate_request", "nic_rdma_duplicate_requests_total",
          "requests received that had been executed before (the requester retransmitted)"),
    _mlx5("rnr_nak_retry_err", "nic_rdma_rnr_nak_retry_errors_total",
          "RNR NAKs received (the responder had no receive WQE); the QP's retry limit was "
          "not exceeded"),
    _mlx5("packet_seq_err", "nic_rdma_packet_seq_errors_total",
          "NAK sequence error packets received; the retry limit was not exceeded"),
    _mlx5("implied_nak_seq_err", "nic_rdma_implied_nak_seq_errors_total",
          "times the requester saw an ACK with a PSN beyond the expected one for a READ or "
          "ATOMIC response (an implied NAK)"),
    _mlx5("local_ack_timeout_err", "nic_rdma_local_ack_timeout_errors_total",
          "times a QP's ack timer expired at the sender (RC, XRC, DCT) and it retransmitted; "
          "the retry limit was not exceeded"),
    _mlx5("resp_local_length_error", "nic_rdma_resp_local_length_errors_total",
          "local length errors the responder detected"),
    _mlx5("resp_cqe_error", "nic_rdma_resp_cqe_errors_total",
          "responder completions with an error"),
    _mlx5("req_cqe_error", "nic_rdma_req_cqe_errors_total",
          "requester completions with an error"),
    _mlx5("req_remote_invalid_request", "nic_rdma_req_remote_invalid_requests_total",
          "remote invalid request errors the requester detected"),
    _mlx5("req_remote_access_errors", "nic_rdma_req_remote_access_errors_total",
          "remote access errors the requester detected"),
    _mlx5("resp_remote_access_errors", "nic_rdma_resp_remote_access_errors_total",
          "remote access errors the responder detected"),
    _mlx5("resp_cqe_flush_error", "nic_rdma_resp_cqe_flush_errors_total",
          "responder completions flushed with error (QP moved to the error state)"),
    _mlx5("req_cqe_flush_error", "nic_rdma_req_cqe_flush_errors_total",
          "requester completions flushed with error"),
    _mlx5("req_transport_retries_exceeded", "nic_rdma_req_transport_retries_exceeded_total",
          "times the requester exceeded its transport retries (the QP failed)",
          evidence=f"{_MLX5} extended_err_cnts (6.9+)"),
    _mlx5("req_rnr_retries_exceeded", "nic_rdma_req_rnr_retries_exceeded_total",
          "times the requester exceeded its RNR NAK retries (the QP failed)",
          evidence=f"{_MLX5} extended_err_cnts (6.9+)"),
    _mlx5("roce_adp_retrans", "nic_rdma_adaptive_retransmissions_total",
          "adaptive retransmissions of RoCE traffic"),
    _mlx5("roce_adp_retrans_to", "nic_rdma_adaptive_retransmission_timeouts_total",
          "times RoCE traffic reached a timeout under adaptive retransmission"),
    _mlx5("roce_slow_restart", "nic_rdma_slow_restarts_total",
          "times RoCE slow restart was used"),
    _mlx5("roce_slow_restart_cnps", "nic_rdma_slow_restart_cnps_total",
          "CNPs RoCE slow restart generated"),
    _mlx5("roce_slow_restart_trans", "nic_rdma_slow_restart_transitions_total",
          "times RoCE slow restart changed state to slow restart"),
    _mlx5("rp_cnp_ignored", "nic_rdma_cnp_ignored_total",
          "CNPs received and ignored by the reaction point (congestion control off for "
          "the priority)", 64, _MLX5_CC),
    _mlx5("rp_cnp_handled", "nic_rdma_cnp_handled_total",
          "CNPs handled by the reaction point to throttle the sending rate", 64, _MLX5_CC),
    _mlx5("np_ecn_marked_roce_packets", "nic_rdma_ecn_marked_packets_total",
          "RoCEv2 packets the notification point received with ECN CE (11)", 64, _MLX5_CC),
    _mlx5("np_cnp_sent", "nic_rdma_cnp_sent_total",
          "CNPs the notification point sent for ECN-marked packets", 64, _MLX5_CC),
    _mlx5("rx_icrc_encapsulated", "nic_rdma_icrc_errors_total",
          "RoCE packets received with an ICRC error", 64,
          f"{_MLX5} ext_ppcnt_cnts (PPCNT Ethernet extended group)"),
    _mlx5("cc_rx_ce_pkts", "nic_rdma_rx_ce_packets_total",
          "RoCE packets received with ECN CE, counted by a steering flow counter (optional "
          "counter)", 64, _MLX5_OP),
    _mlx5("cc_rx_cnp_pkts", "nic_rdma_rx_cnp_packets_total",
          "CNPs received, flow counter (optional)", 64, _MLX5_OP),
    _mlx5("cc_tx_cnp_pkts", "nic_rdma_tx_cnp_packets_total",
          "CNPs sent, flow counter (optional)", 64, _MLX5_OP),
    _mlx5("rdma_tx_packets", "nic_rdma_flow_tx_packets_total",
          "RDMA packets sent, link-wide flow counter of the RDMA TX steering (optional)", 64,
          _MLX5_OP),
    _mlx5("rdma_tx_bytes", "nic_rdma_flow_tx_bytes_total",
          "RDMA bytes sent, link-wide flow counter (optional)", 64, _MLX5_OP),
    _mlx5("rdma_rx_packets", "nic_rdma_flow_rx_packets_total",
          "RDMA packets received, link-wide flow counter (optional)", 64, _MLX5_OP),
    _mlx5("rdma_rx_bytes", "nic_rdma_flow_rx_bytes_total",
          "RDMA bytes received, link-wide flow counter (optional)", 64, _MLX5_OP),
))

_BNXT = ("drivers/infiniband/hw/bnxt_re/hw_counters.c bnxt_re_stat_descs (renamed to the "
         "mlx5 spelling by 'RDMA/bnxt_re: RoCE related hardware counters update', rdma-next "
         "2025-08, 'for compatibility with open-source monitoring agents'; both spellings "
         "are here)")
_BNXT_OOT = ("drivers/infiniband/hw/bnxt_re/hw_counters.c of Broadcom's out-of-tree bnxt_re "
             "(2025, HAVE_RDMA_STAT_DESC)")


def _bnxt(names: tuple[str, ...], metric: str | None, meaning: str, enum: str,
          evidence: str = _BNXT) -> list[HwCounter]:
    return [HwCounter(n, metric, meaning, f"{evidence}: {enum}") for n in names]


BNXT_RE = RdmaDriver("bnxt_re", "bnxt_re (Broadcom NetXtreme-E/Thor RoCE)", tuple(
    _bnxt(("local_ack_timeout_err", "to_retransmits"), "nic_rdma_local_ack_timeout_errors_total",
          "retransmissions after an ack timeout", "BNXT_RE_TO_RETRANSMITS")
    + _bnxt(("packet_seq_err", "seq_err_naks_rcvd"), "nic_rdma_packet_seq_errors_total",
            "sequence error NAKs received (the requester's packets were lost)",
            "BNXT_RE_SEQ_ERR_NAKS_RCVD")
    + _bnxt(("rnr_nak_retry_err", "rnr_naks_rcvd"), "nic_rdma_rnr_nak_retry_errors_total",
            "RNR NAKs received (the responder had no receive WQE posted)",
            "BNXT_RE_RNR_NAKS_RCVD")
    + _bnxt(("implied_nak_seq_err", "missing_resp"), "nic_rdma_implied_nak_seq_errors_total",
            "missing responses the requester detected (implied NAKs)", "BNXT_RE_MISSING_RESP")
    + _bnxt(("duplicate_request", "dup_req"), "nic_rdma_duplicate_requests_total",
            "duplicate requests received", "BNXT_RE_DUP_REQ")
    + _bnxt(("req_remote_invalid_request", "remote_invalid_req_err"),
            "nic_rdma_req_remote_invalid_requests_total", "remote invalid request errors",
            "BNXT_RE_REMOTE_INVALID_REQ_ERR")
    + _bnxt(("req_remote_access_errors", "remote_access_err"),
            "nic_rdma_req_remote_access_errors_total", "remote access errors",
            "BNXT_RE_REMOTE_ACCESS_ERR")
    + _bnxt(("resp_local_length_error", "res_length_mismatch"),
            "nic_rdma_resp_local_length_errors_total", "responder length mismatches",
            "BNXT_RE_RES_LENGTH_MISMATCH")
    + _bnxt(("out_of_buffer", "rx_out_of_buffer"), "nic_rdma_out_of_buffer_drops_total",
            "packets the responder dropped for lack of a posted receive WQE (it sent an RNR "
            "NAK for each); gen P5/P7 chips (Thor, Thor2)", "BNXT_RE_OOB (ext stats oob)")
    + _bnxt(("out_of_sequence", "oos_drop_count"), "nic_rdma_out_of_sequence_total",
            "packets the responder dropped as out of sequence (a packet before them was "
            "lost)", "BNXT_RE_OUT_OF_SEQ_ERR (res_oos_drop_count)")
    + _bnxt(("np_cnp_pkts", "tx_cnp_pkts"), "nic_rdma_cnp_sent_total",
            "CNPs sent by the notification point for ECN-marked packets received",
            "BNXT_RE_TX_CNP (cnp_tx_pkts)")
    + _bnxt(("np_cnp_sent",), "nic_rdma_cnp_sent_total", "CNPs sent (np_cnp_pkts in mainline)",
            "BNXT_RE_TX_CNP (cnp_tx_pkts)", _BNXT_OOT)
    + _bnxt(("rp_cnp_handled", "rx_cnp_pkts"), "nic_rdma_rx_cnp_packets_total",
            "CNPs received by the reaction point (all of them: the hardware field counts "
            "received CNPs, not only those that lowered the rate)",
            "BNXT_RE_RX_CNP (cnp_rx_pkts)")
    + _bnxt(("rp_cnp_ignored",), "nic_rdma_cnp_ignored_total",
            "CNPs received and ignored by the reaction point", "BNXT_RE_RX_CNP_IGNORED",
            _BNXT_OOT)
    + _bnxt(("np_ecn_marked_roce_packets", "rx_ecn_marked_pkts"),
            "nic_rdma_ecn_marked_packets_total",
            "RoCE packets the notification point received with ECN CE",
            "BNXT_RE_RX_ECN (ecn_marked)")
    + _bnxt(("rx_read_requests", "rx_read_req"), "nic_rdma_rx_read_requests_total",
            "RDMA READ requests received", "BNXT_RE_RX_READ_REQ")
    + _bnxt(("rx_write_requests", "rx_write_req"), "nic_rdma_rx_write_requests_total",
            "RDMA WRITE requests received", "BNXT_RE_RX_WRITE_REQ")
    + _bnxt(("rx_atomic_requests", "rx_atomic_req"), "nic_rdma_rx_atomic_requests_total",
            "ATOMIC requests received", "BNXT_RE_RX_ATOMIC_REQ")
    + _bnxt(("req_cqe_error",), "nic_rdma_req_cqe_errors_total",
            "requester completions with an error (bad response, local QP operation, "
            "protection, memory management, remote invalid request, access and operation "
            "errors summed)", "BNXT_RE_REQ_CQE_ERROR")
    + _bnxt(("resp_cqe_error",), "nic_rdma_resp_cqe_errors_total",
            "responder completions with an error (completion and CQ load errors summed)",
            "BNXT_RE_RESP_CQE_ERROR")
    + _bnxt(("resp_remote_access_errors",), "nic_rdma_resp_remote_access_errors_total",
            "remote access errors the responder detected (rx and tx no-permission summed)",
            "BNXT_RE_RESP_REMOTE_ACCESS_ERRS")
    + _bnxt(("rx_bytes",), "nic_rdma_rx_bytes_total",
            "RoCE bytes received (CNPs included); the PortCounters win where the port has "
            "them", "BNXT_RE_RX_BYTES")
    + _bnxt(("tx_bytes",), "nic_rdma_tx_bytes_total", "RoCE bytes sent", "BNXT_RE_TX_BYTES")
    + _bnxt(("rx_pkts",), "nic_rdma_rx_packets_total", "RoCE packets received",
            "BNXT_RE_RX_PKTS")
    + _bnxt(("tx_pkts",), "nic_rdma_tx_packets_total", "RoCE packets sent", "BNXT_RE_TX_PKTS")
    + _bnxt(("max_retry_exceeded",), "nic_rdma_req_transport_retries_exceeded_total",
            "times a QP exceeded its retry count (the QP failed)",
            "BNXT_RE_MAX_RETRY_EXCEEDED")),
    note="Both spellings of each counter are mapped: the 6.x names (`rnr_naks_rcvd`, "
         "`oos_drop_count`, `rx_out_of_buffer`, `tx_cnp_pkts`, `rx_cnp_pkts`, "
         "`rx_ecn_marked_pkts`, ...) and the mlx5 names they were renamed to "
         "(`rnr_nak_retry_err`, `out_of_sequence`, `out_of_buffer`, `np_cnp_pkts`, "
         "`rp_cnp_handled`, `np_ecn_marked_roce_packets`, ...). bnxt_re's "
         "`rnr_nak_retry_err` counts every RNR NAK received, as mlx5's does; its "
         "`rp_cnp_handled` counts every CNP received (`nic_rdma_rx_cnp_packets_total`). "
         "bnxt_re answers PMA MADs (`bnxt_re_process_mad`: PortCounters and "
         "PortCountersExtended from its own statistics), so its `counters/` win over its "
         "`rx_bytes`/`tx_bytes`/`rx_pkts`/`tx_pkts` where the kernel has them.")

_IRDMA = "drivers/infiniband/hw/irdma/verbs.c irdma_hw_stat_descs"
IRDMA = RdmaDriver("irdma", "irdma (Intel E810/X722 iWARP and RoCE)", (
    HwCounter("cnpHandled", "nic_rdma_cnp_handled_total", "CNPs handled (rate reduced)",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RXRPCNPHANDLED (gen2)"),
    HwCounter("cnpIgnored", "nic_rdma_cnp_ignored_total", "CNPs received and ignored",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RXRPCNPIGNORED"),
    HwCounter("cnpSent", "nic_rdma_cnp_sent_total", "CNPs sent",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_TXNPCNPSENT"),
    HwCounter("InRdmaReads", "nic_rdma_rx_read_requests_total", "RDMA READ requests received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXRDS (iwInRdmaReads before 6.x)"),
    HwCounter("iwInRdmaReads", "nic_rdma_rx_read_requests_total", "RDMA READs received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXRDS"),
    HwCounter("InRdmaWrites", "nic_rdma_rx_write_requests_total", "RDMA WRITEs received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXWRS"),
    HwCounter("iwInRdmaWrites", "nic_rdma_rx_write_requests_total", "RDMA WRITEs received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXWRS"),
), note="The ip4/ip6/tcp/udp protocol counters (`ip4InOctets`, `tcpRetransSegs`, ...) "
        "count the function's RDMA protocol engine and stay raw.")

_EFA = "drivers/infiniband/hw/efa/efa_verbs.c EFA_DEFINE_PORT_STATS"
EFA = RdmaDriver("efa", "efa (AWS Elastic Fabric Adapter)", (
    HwCounter("tx_bytes", "nic_rdma_tx_bytes_total", "bytes sent (no PMA on efa)",
              f"{_EFA} EFA_TX_BYTES"),
    HwCounter("rx_bytes", "nic_rdma_rx_bytes_total", "bytes received", f"{_EFA} EFA_RX_BYTES"),
    HwCounter("tx_pkts", "nic_rdma_tx_packets_total", "packets sent", f"{_EFA} EFA_TX_PKTS"),
    HwCounter("rx_pkts", "nic_rdma_rx_packets_total", "packets received",
              f"{_EFA} EFA_RX_PKTS"),
), note="`rx_drops`, the work-request counters (`send_wrs`, `rdma_read_wrs`, ...) and their "
        "byte counts have no family and stay raw.")

_MANA = "drivers/infiniband/hw/mana/counters.c mana_ib_port_stats_desc"
MANA = RdmaDriver("mana", "mana (Microsoft Azure Network Adapter)", (
    HwCounter("requester_oos_nak", "nic_rdma_packet_seq_errors_total",
              "out-of-sequence NAKs the requester received", f"{_MANA} MANA_IB_REQUESTER_OOS_NAK"),
    HwCounter("requester_rnr_nak", "nic_rdma_rnr_nak_retry_errors_total",
              "RNR NAKs the requester received", f"{_MANA} MANA_IB_REQUESTER_RNR_NAK"),
    HwCounter("responder_oos", "nic_rdma_out_of_sequence_total",
              "out-of-sequence packets the responder received", f"{_MANA} MANA_IB_RESPONDER_OOS"),
    HwCounter("responder_dup_request", "nic_rdma_duplicate_requests_total",
              "duplicate requests the responder received",
              f"{_MANA} MANA_IB_RESPONDER_DUP_REQUEST"),
    HwCounter("requester_implicit_nak", "nic_rdma_implied_nak_seq_errors_total",
              "implicit NAKs the requester detected", f"{_MANA} MANA_IB_REQUESTER_IMPLICIT_NAK"),
    HwCounter("tx_bytes", "nic_rdma_tx_bytes_total", "bytes sent (no PMA on mana)",
              f"{_MANA} MANA_IB_TX_BYTES (6.12+)"),
    HwCounter("rx_bytes", "nic_rdma_rx_bytes_total", "bytes received", f"{_MANA} MANA_IB_RX_BYTES"),
    HwCounter("tx_pkt", "nic_rdma_tx_packets_total", "packets sent", f"{_MANA} MANA_IB_TX_PKT"),
    HwCounter("rx_pkt", "nic_rdma_rx_packets_total", "packets received", f"{_MANA} MANA_IB_RX_PKT"),
    HwCounter("rx_write_req", "nic_rdma_rx_write_requests_total", "RDMA WRITE requests received",
              f"{_MANA} MANA_IB_RX_WRITE_REQ"),
    HwCounter("rx_read_req", "nic_rdma_rx_read_requests_total", "RDMA READ requests received",
              f"{_MANA} MANA_IB_RX_READ_REQ"),
    HwCounter("current_rate", None, "the current rate of the congestion control (a value, "
              "not a counter)", f"{_MANA} MANA_IB_CURRENT_RATE (resp.current_rate)", value=True),
), note="`requester_timeout` (a timeout, not said to be a retransmission) and the NAK "
        "error counters stay raw.")

_RXE = "drivers/infiniband/sw/rxe/rxe_hw_counters.c rxe_counter_descs"
RXE = RdmaDriver("rxe", "rxe (soft-RoCE)", (
    HwCounter("sent_pkts", "nic_rdma_tx_packets_total", "RoCE packets sent (no PMA on rxe)",
              f"{_RXE} RXE_CNT_SENT_PKTS"),
    HwCounter("rcvd_pkts", "nic_rdma_rx_packets_total", "RoCE packets received",
              f"{_RXE} RXE_CNT_RCVD_PKTS"),
    HwCounter("duplicate_request", "nic_rdma_duplicate_requests_total",
              "duplicate requests received", f"{_RXE} RXE_CNT_DUP_REQ"),
    HwCounter("out_of_seq_request", "nic_rdma_out_of_sequence_total",
              "requests received out of sequence", f"{_RXE} RXE_CNT_OUT_OF_SEQ_REQ"),
    HwCounter("rcvd_rnr_err", "nic_rdma_rnr_nak_retry_errors_total", "RNR NAKs received",
              f"{_RXE} RXE_CNT_RCV_RNR"),
    HwCounter("rcvd_seq_err", "nic_rdma_packet_seq_errors_total",
              "sequence error NAKs received", f"{_RXE} RXE_CNT_RCV_SEQ_ERR"),
    HwCounter("retry_exceeded_err", "nic_rdma_req_transport_retries_exceeded_total",
              "times the requester exceeded its retries", f"{_RXE} RXE_CNT_RETRY_EXCEEDED"),
    HwCounter("retry_rnr_exceeded_err", "nic_rdma_req_rnr_retries_exceeded_total",
              "times the requester exceeded its RNR retries",
              f"{_RXE} RXE_CNT_RNR_RETRY_EXCEEDED"),
    HwCounter("link_downed", "nic_rdma_link_downed_total",
              "times the port went down with its netdev (no PMA on rxe)",
              f"{_RXE} RXE_CNT_LINK_DOWNED"),
))

DRIVERS: Mapping[str, RdmaDriver] = MappingProxyType(
    {d.key: d for d in (MLX5, BNXT_RE, IRDMA, EFA, MANA, RXE)})
_INDEX: dict[str, dict[str, HwCounter]] = {
    d.key: {c.name: c for c in d.counters} for d in DRIVERS.values()}
# Drivers whose counters nicwatch has not mapped yet: every counter raw.
UNMAPPED_NOTE = ("ionic, hns, qedr, erdma, siw and mlx4: their counters are exported raw "
                 "(`nic_rdma_hw_stat_total`).")


# --------------------------------------------------------------------------- normalize


def pma_width(counter: PmaCounter, names: Mapping[str, int], value: int) -> int:
    """The width of a PortCounters value: 64 for the data and packet counters of the
    extended table (told by its unicast/multicast files, or by a value no 32-bit counter
    holds)."""
    if counter.extended and (EXTENDED_ONLY & names.keys() or value >= 1 << 32):
        return 64
    return counter.width


def _wide(port: RdmaPort, name: str) -> bool:
    """Whether ``counters/<name>`` is there in 64 bits (the extended table: its
    unicast/multicast files, or a value no 32-bit counter holds)."""
    value = port.counters.get(name)
    return value is not None and pma_width(PMA_BY_NAME[name], port.counters, value) == 64


def port_labels(port: RdmaPort) -> Labels:
    return (("port", str(port.port)), ("rdma_device", port.device))


def rdma_counters(port: RdmaPort) -> dict[SeriesKey, CounterValue]:
    """The port's counter series: PortCounters first, then its driver's table, the rest raw."""
    base = port_labels(port)
    out: dict[SeriesKey, CounterValue] = {}
    families: set[str] = set()
    for name, value in port.counters_ext.items():
        known = COUNTERS_EXT.get(name)
        if known is None or _wide(port, known):
            # unknown, or counters/ has the same counter in 64 bits already: it stays raw
            out[SeriesKey(RAW_COUNTER, (("counter", f"counters_ext/{name}"),) + base)] = \
                CounterValue(value, SOURCE)
            continue
        extended = PMA_BY_NAME[known]
        out[SeriesKey(extended.metric, base)] = CounterValue(value, SOURCE, 64, extended.scale)
        families.add(extended.metric)
    for name, value in port.counters.items():
        pma = PMA_BY_NAME.get(name)
        if pma is not None and pma.metric in families:
            continue  # counters_ext/ has it in 64 bits, counters/ in 32
        if pma is None:
            out[SeriesKey(RAW_COUNTER, (("counter", f"counters/{name}"),) + base)] = \
                CounterValue(value, SOURCE)
            continue
        width = pma_width(pma, port.counters, value)
        out[SeriesKey(pma.metric, base)] = CounterValue(value, SOURCE, width, pma.scale,
                                                        saturates=width < 64)
        families.add(pma.metric)
    driver = DRIVERS.get(port.driver or "")
    for name, value in port.hw_counters.items():
        entry = driver.get(name) if driver is not None else None
        if entry is not None and entry.value:
            continue
        if entry is None or entry.metric is None or entry.metric in families:
            out[SeriesKey(RAW_COUNTER, (("counter", name),) + base)] = CounterValue(value, SOURCE)
            continue
        out[SeriesKey(entry.metric, base)] = CounterValue(value, SOURCE, entry.width)
        families.add(entry.metric)
    return out


def iboe_mtu(netdev_mtu: int) -> int | None:
    """The RoCE active MTU the kernel derives from a netdev MTU (``iboe_get_mtu``,
    include/rdma/ib_addr.h: the MTU less 96 bytes of GRH, UDP, BTH, XRC, AtomicETH and ICRC
    headers, rounded down to an IB MTU of 256..4096); None below 256."""
    room = netdev_mtu - ROCE_HEADERS
    for mtu in (4096, 2048, 1024, 512, 256):
        if room >= mtu:
            return mtu
    return None


def gid_for_address(address: str) -> str:
    """The GID a RoCE v2 entry has for an IP address (``roce_gid_mgmt.c``: IPv4 as the
    IPv4-mapped IPv6 address ``::ffff:a.b.c.d``), printed as sysfs prints GIDs."""
    ip = ipaddress.ip_address(address.split("%")[0])
    packed = (ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed).packed
              if ip.version == 4 else ip.packed)
    hexed = packed.hex()
    return ":".join(hexed[i:i + 4] for i in range(0, 32, 4))


def roce_v2_gids(port: RdmaPort) -> set[str]:
    """The RoCE v2 GIDs of the port's own netdev."""
    return {g.gid for g in port.gids or () if g.type == "RoCE v2"
            and (g.netdev is None or g.netdev == port.netdev)}


def addresses_without_gid(port: RdmaPort) -> tuple[str, ...] | None:
    """The netdev's IP addresses no RoCE v2 GID carries; None when unknown (no addresses
    read, no GID table)."""
    if port.addresses is None or port.gids is None:
        return None
    gids = roce_v2_gids(port)
    return tuple(a for a in port.addresses if gid_for_address(a) not in gids)


def rdma_gauges(port: RdmaPort, counters: Mapping[SeriesKey, CounterValue]) -> dict[SeriesKey,
                                                                                    float]:
    base = port_labels(port)
    out: dict[SeriesKey, float] = {}
    info = (("driver", port.driver or ""), ("link_layer", port.link_layer or ""),
            ("node_guid", port.node_guid or ""), ("pci_address", port.pci_function or ""),
            ("phys_state", port.phys_state or ""), ("state", port.state or ""))
    out[SeriesKey("nic_rdma_port_info", info + base)] = 1.0
    if port.board_id is not None or port.firmware_version is not None \
            or port.hca_type is not None:
        hca = (("board_id", port.board_id or ""),
               ("firmware_version", port.firmware_version or ""),
               ("hca_type", port.hca_type or ""))
        out[SeriesKey("nic_rdma_info", hca + base)] = 1.0
    if port.state is not None:
        out[SeriesKey("nic_rdma_port_active", base)] = float(port.state == "ACTIVE")
    if port.rate_bytes_per_second is not None:
        out[SeriesKey("nic_rdma_port_rate_bytes_per_second", base)] = float(
            port.rate_bytes_per_second)
    if port.default_roce_tos is not None:
        out[SeriesKey("nic_rdma_default_roce_tos", base)] = float(port.default_roce_tos)
    if port.traffic_class is not None:
        out[SeriesKey("nic_rdma_traffic_class", base)] = float(port.traffic_class)
    for key, cv in counters.items():
        if cv.saturated:
            name = next(p.name for p in PMA if p.metric == key.metric)
            out[SeriesKey("nic_rdma_portcounters_saturated", (("counter", name),) + base)] = 1.0
    driver = DRIVERS.get(port.driver or "")
    if driver is not None:
        for name, value in port.hw_counters.items():
            entry = driver.get(name)
            if entry is not None and entry.value:
                out[SeriesKey(RAW_VALUE, (("counter", name),) + base)] = float(value)
    if port.link_layer == "Ethernet":
        if port.netdev_mtu is not None:
            mtu = iboe_mtu(port.netdev_mtu)
            if mtu is not None:
                out[SeriesKey("nic_rdma_active_mtu_bytes", base)] = float(mtu)
        if port.gids is not None:
            out[SeriesKey("nic_rdma_roce_v2_gids", base)] = float(len(roce_v2_gids(port)))
        missing = addresses_without_gid(port)
        if missing is not None:
            out[SeriesKey("nic_rdma_addresses_without_roce_v2_gid", base)] = float(len(missing))
    return out


def normalize_rdma(port: RdmaPort, time: float, monotonic: float) -> RdmaSample:
    counters = rdma_counters(port)
    return RdmaSample(port, time, monotonic, counters, rdma_gauges(port, counters))
