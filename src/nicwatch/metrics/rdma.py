"""The families of RDMA ports: IB PortCounters, driver hardware counters and port state."""

from __future__ import annotations

from nicwatch.metrics.family import RDMA, Family, _counter, _gauge
from nicwatch.metrics.module import _MODULE_LEVEL

# RDMA ports (docs/rdma.md): every port of every RDMA device, InfiniBand ports without a
# netdev included. Their series carry rdma_device and port; the netdev, where the port has
# one, is the device label. Counters come from the IB PortCounters (counters/, sysfs), then
# the driver's hardware counters (RDMA netlink, else hw_counters/), per driver table
# (normalize/drivers/, read by normalize/rdma.py). The PortCounters of 4 to 32 bits saturate
# at their maximum instead of wrapping (nic_rdma_portcounters_saturated).
_PMA = "IB PortCounters (counters/"


def _rdma(name: str, help: str, unit: str = "events", health: bool = False) -> Family:
    return _counter(name, help, RDMA, unit, health)


RDMA_COUNTERS: tuple[Family, ...] = (
    _rdma("nic_rdma_rx_bytes_total", "Bytes received by the RDMA port: counters/port_rcv_data "
          "x 4 (4-byte words), RDMA traffic the netdev does not see; from the driver's own "
          "counter where it has no PortCounters (bnxt_re, efa, mana).", "bytes"),
    _rdma("nic_rdma_tx_bytes_total", "Bytes sent by the RDMA port (counters/port_xmit_data x "
          "4; driver counter without PortCounters).", "bytes"),
    _rdma("nic_rdma_rx_packets_total", "Packets received by the RDMA port (counters/"
          "port_rcv_packets; driver counter without PortCounters).", "packets"),
    _rdma("nic_rdma_tx_packets_total", "Packets sent by the RDMA port (counters/"
          "port_xmit_packets; driver counter without PortCounters).", "packets"),
    _rdma("nic_rdma_rx_unicast_packets_total", "Unicast packets received (counters/"
          "unicast_rcv_packets, PortCountersExtended).", "packets"),
    _rdma("nic_rdma_tx_unicast_packets_total", "Unicast packets sent (counters/"
          "unicast_xmit_packets).", "packets"),
    _rdma("nic_rdma_rx_multicast_packets_total", "Multicast packets received (counters/"
          "multicast_rcv_packets).", "packets"),
    _rdma("nic_rdma_tx_multicast_packets_total", "Multicast packets sent (counters/"
          "multicast_xmit_packets).", "packets"),
    _rdma("nic_rdma_symbol_errors_total", f"{_PMA}symbol_error, 16 bits, saturating): minor "
          "link errors on one or more physical lanes. Rising: a marginal cable or optic.",
          health=True),
    _rdma("nic_rdma_link_error_recoveries_total", f"{_PMA}link_error_recovery, 8 bits): times "
          "the link recovered from errors by retraining.", health=True),
    _rdma("nic_rdma_link_downed_total", f"{_PMA}link_downed, 8 bits): times link error "
          "recovery failed and the link went down (rxe: its port went down).", health=True),
    _rdma("nic_rdma_rx_errors_total", f"{_PMA}port_rcv_errors, 16 bits): packets received "
          "with an error.", "packets", health=True),
    _rdma("nic_rdma_rx_remote_physical_errors_total", f"{_PMA}port_rcv_remote_physical_errors,"
          " 16 bits): packets an upstream link marked bad.", "packets", health=True),
    _rdma("nic_rdma_rx_switch_relay_errors_total", f"{_PMA}port_rcv_switch_relay_errors, 16 "
          "bits): packets a switch port could not relay.", "packets", health=True),
    _rdma("nic_rdma_tx_discards_total", f"{_PMA}port_xmit_discards, 16 bits): outbound "
          "packets discarded because the port was down or congested.", "packets", health=True),
    _rdma("nic_rdma_tx_constraint_errors_total", f"{_PMA}port_xmit_constraint_errors, 8 "
          "bits): outbound packets not sent for a partition or raw constraint.", "packets",
          health=True),
    _rdma("nic_rdma_rx_constraint_errors_total", f"{_PMA}port_rcv_constraint_errors, 8 "
          "bits): inbound packets discarded for a partition or raw constraint.", "packets",
          health=True),
    _rdma("nic_rdma_local_link_integrity_errors_total", f"{_PMA}local_link_integrity_errors, "
          "4 bits): times local physical errors passed the LocalPhyErrors threshold.",
          health=True),
    _rdma("nic_rdma_excessive_buffer_overrun_errors_total", f"{_PMA}"
          "excessive_buffer_overrun_errors, 4 bits): times consecutive flow-control periods "
          "overran a receive buffer.", health=True),
    _rdma("nic_rdma_vl15_dropped_total", f"{_PMA}VL15_dropped, 16 bits): subnet management "
          "packets dropped for lack of buffers.", "packets", health=True),
    _rdma("nic_rdma_tx_wait_ticks_total", f"{_PMA}port_xmit_wait, 32 bits): sample ticks the "
          "port had data to send and could not (no flow-control credits): fabric "
          "backpressure; the tick length is the device's (PortSamplesControl.TickTime).",
          "ticks"),
    _rdma("nic_rdma_cnp_sent_total", "RoCE congestion notification packets sent by this port "
          "as notification point (mlx5 np_cnp_sent, irdma cnpSent): it received ECN-marked "
          "packets. Normal under congestion control.", "packets"),
    _rdma("nic_rdma_cnp_handled_total", "RoCE CNPs handled by this port as reaction point "
          "(mlx5 rp_cnp_handled, irdma cnpHandled): it slowed down as asked. Normal under "
          "congestion control.", "packets"),
    _rdma("nic_rdma_cnp_ignored_total", "RoCE CNPs received as reaction point and ignored "
          "(mlx5 rp_cnp_ignored, irdma cnpIgnored): congestion was signalled and nothing "
          "slowed down (congestion control off for the priority).", "packets", health=True),
    _rdma("nic_rdma_ecn_marked_packets_total", "RoCEv2 packets received with ECN CE by the "
          "notification point (mlx5 np_ecn_marked_roce_packets).", "packets"),
    _rdma("nic_rdma_out_of_sequence_total", "Packets received out of sequence (mlx5 "
          "out_of_sequence, mana responder_oos, rxe out_of_seq_request): a loss upstream in a "
          "lossless fabric.", "packets", health=True),
    _rdma("nic_rdma_packet_seq_errors_total", "Sequence error NAKs received (mlx5 "
          "packet_seq_err, bnxt_re packet_seq_err/seq_err_naks_rcvd, mana requester_oos_nak, "
          "rxe rcvd_seq_err): the responder saw a gap and asked for a resend.", health=True),
    _rdma("nic_rdma_implied_nak_seq_errors_total", "Implied NAKs: the requester saw a response "
          "with a later PSN than expected (mlx5 implied_nak_seq_err, bnxt_re missing_resp, "
          "mana requester_implicit_nak).", health=True),
    _rdma("nic_rdma_local_ack_timeout_errors_total", "Times a QP's ack timer expired and it "
          "retransmitted, its retry limit not yet exceeded (mlx5 local_ack_timeout_err, "
          "bnxt_re to_retransmits).", health=True),
    _rdma("nic_rdma_rnr_nak_retry_errors_total", "RNR NAKs received: the responder had no "
          "receive WQE posted and the requester had to retry, its retry limit not exceeded "
          "(mlx5 rnr_nak_retry_err, bnxt_re rnr_naks_rcvd, mana requester_rnr_nak, rxe "
          "rcvd_rnr_err). QPs that ran out of retries: "
          "nic_rdma_req_rnr_retries_exceeded_total.", health=True),
    _rdma("nic_rdma_duplicate_requests_total", "Requests received that had been executed "
          "before (the requester retransmitted): mlx5/bnxt_re/rxe duplicate_request, mana "
          "responder_dup_request.", health=True),
    _rdma("nic_rdma_out_of_buffer_drops_total", "Packets dropped for lack of a posted receive "
          "WQE (mlx5 out_of_buffer, a 32-bit Q counter; bnxt_re rx_out_of_buffer): the RDMA "
          "consumer did not post receive buffers fast enough.", "packets", health=True),
    _rdma("nic_rdma_icrc_errors_total", "RoCE packets received with a bad ICRC (mlx5 "
          "rx_icrc_encapsulated).", "packets", health=True),
    _rdma("nic_rdma_req_cqe_errors_total", "Requester completions with an error (mlx5 "
          "req_cqe_error).", health=True),
    _rdma("nic_rdma_req_cqe_flush_errors_total", "Requester completions flushed with error "
          "(mlx5 req_cqe_flush_error): work requests of a QP that went to the error state.",
          health=True),
    _rdma("nic_rdma_resp_cqe_errors_total", "Responder completions with an error (mlx5 "
          "resp_cqe_error).", health=True),
    _rdma("nic_rdma_resp_cqe_flush_errors_total", "Responder completions flushed with error "
          "(mlx5 resp_cqe_flush_error).", health=True),
    _rdma("nic_rdma_req_remote_access_errors_total", "Remote access errors the requester "
          "detected (mlx5 req_remote_access_errors, bnxt_re remote_access_err).", health=True),
    _rdma("nic_rdma_req_remote_invalid_requests_total", "Remote invalid request errors the "
          "requester detected (mlx5 req_remote_invalid_request).", health=True),
    _rdma("nic_rdma_resp_local_length_errors_total", "Local length errors the responder "
          "detected (mlx5 resp_local_length_error, bnxt_re res_length_mismatch).", health=True),
    _rdma("nic_rdma_resp_remote_access_errors_total", "Remote access errors the responder "
          "detected (mlx5 resp_remote_access_errors).", health=True),
    _rdma("nic_rdma_req_transport_retries_exceeded_total", "Times a requester QP exceeded its "
          "transport retries and failed (mlx5 req_transport_retries_exceeded 6.9+, bnxt_re "
          "max_retry_exceeded, rxe retry_exceeded_err).", health=True),
    _rdma("nic_rdma_req_rnr_retries_exceeded_total", "Times a requester QP exceeded its RNR "
          "NAK retries and failed (mlx5 req_rnr_retries_exceeded 6.9+, rxe "
          "retry_rnr_exceeded_err).", health=True),
    _rdma("nic_rdma_adaptive_retransmissions_total", "Adaptive retransmissions of RoCE "
          "traffic (mlx5 roce_adp_retrans).", health=True),
    _rdma("nic_rdma_adaptive_retransmission_timeouts_total", "Times RoCE traffic reached a "
          "timeout under adaptive retransmission (mlx5 roce_adp_retrans_to).", health=True),
    _rdma("nic_rdma_slow_restarts_total", "Times RoCE slow restart was used (mlx5 "
          "roce_slow_restart)."),
    _rdma("nic_rdma_slow_restart_cnps_total", "CNPs RoCE slow restart generated (mlx5 "
          "roce_slow_restart_cnps).", "packets"),
    _rdma("nic_rdma_slow_restart_transitions_total", "Times RoCE slow restart changed state "
          "to slow restart (mlx5 roce_slow_restart_trans)."),
    _rdma("nic_rdma_rx_read_requests_total", "RDMA READ requests received (mlx5 "
          "rx_read_requests, irdma InRdmaReads, mana rx_read_req).", "requests"),
    _rdma("nic_rdma_rx_write_requests_total", "RDMA WRITE requests received (mlx5 "
          "rx_write_requests, irdma InRdmaWrites, mana rx_write_req).", "requests"),
    _rdma("nic_rdma_rx_atomic_requests_total", "ATOMIC requests received (mlx5 "
          "rx_atomic_requests).", "requests"),
    _rdma("nic_rdma_rx_dct_connects_total", "Connection requests received for the port's DCTs "
          "(mlx5 rx_dct_connect).", "requests"),
    _rdma("nic_rdma_rx_ce_packets_total", "RoCE packets received with ECN CE, counted by an "
          "mlx5 steering flow counter (optional counter cc_rx_ce_pkts, RDMA netlink only, "
          "present once an operator enabled it: docs/rdma.md).", "packets"),
    _rdma("nic_rdma_rx_cnp_packets_total", "CNPs received, mlx5 flow counter (optional "
          "counter cc_rx_cnp_pkts).", "packets"),
    _rdma("nic_rdma_tx_cnp_packets_total", "CNPs sent, mlx5 flow counter (optional counter "
          "cc_tx_cnp_pkts).", "packets"),
    _rdma("nic_rdma_flow_rx_bytes_total", "RDMA bytes received on the link, mlx5 RDMA RX "
          "steering flow counter (optional counter rdma_rx_bytes); not the PortCounters.",
          "bytes"),
    _rdma("nic_rdma_flow_tx_bytes_total", "RDMA bytes sent on the link, mlx5 RDMA TX steering "
          "flow counter (optional counter rdma_tx_bytes).", "bytes"),
    _rdma("nic_rdma_flow_rx_packets_total", "RDMA packets received, mlx5 flow counter "
          "(optional counter rdma_rx_packets).", "packets"),
    _rdma("nic_rdma_flow_tx_packets_total", "RDMA packets sent, mlx5 flow counter (optional "
          "counter rdma_tx_packets).", "packets"),
)
RDMA_RAW_COUNTER = _counter(
    "nic_rdma_hw_stat_total", "A hardware counter of an RDMA port that no canonical family "
    "has the meaning of on its driver, by the driver's name (counter); PortCounters files "
    "nicwatch does not know as counter=\"counters/<name>\".", ("counter", *RDMA))
RDMA_GAUGES: tuple[Family, ...] = (
    _gauge("nic_module_info", "Identity of the pluggable module in this port; value 1. "
           "identifier: module type as SFF-8024 names its identifier byte (SFP, QSFP+, QSFP28, "
           "QSFP-DD, OSFP, ...); spec: the memory map decoded (SFF-8472, SFF-8636, CMIS <rev> "
           "from CMIS byte 1); vendor, part, serial, revision: the ASCII vendor fields (SFF-8472 "
           "A0h bytes 20-35, 40-55, 56-59, 68-83; SFF-8636 and CMIS page 00h); firmware: the "
           "module firmware version (CMIS lower memory bytes 39-40, \"\" where the map has none).",
           labels=("identifier", "spec", "vendor", "part", "serial", "revision", "firmware")),
    _gauge("nic_module_firmware_info", "A firmware image of a CMIS module; value 1. image: "
           "active (the image running: lower memory bytes 39-40, CMIS 5.2 8.15) or inactive "
           "(the other image of a module with two: page 01h bytes 128-129, CMIS 5.2 8.3.7; "
           "the image a module firmware update writes, run after the module switches "
           "images); version: major.minor. The factory (boot) image's version is only "
           "available through a CDB command (a write to the module), which nicwatch never "
           "sends. Absent for SFF-8636 and SFF-8472 modules and where the page fails its "
           "checksum.", labels=("image", "version")),
    _gauge("nic_module_temperature_celsius", "Module internal temperature as the module "
           "measures it (signed, 1/256 C per bit: SFF-8472 A2h bytes 96-97, SFF-8636 bytes "
           "22-23, CMIS bytes 14-15); SFF-8472 externally calibrated modules are corrected with "
           "their slope and offset.", unit="celsius"),
    _gauge("nic_module_supply_voltage_volts", "Module internal supply voltage (Vcc) as the "
           "module measures it (100 uV per bit: SFF-8472 A2h bytes 98-99, SFF-8636 bytes "
           "26-27, CMIS bytes 16-17).", unit="volts"),
    _gauge("nic_module_rx_power_watts", "Received optical power of this lane (module-measured, "
           "0.1 uW per bit; SFF-8472 A2h bytes 104-105, with the external-calibration "
           "polynomial when A0h byte 92 bit 4 is set; SFF-8636 bytes 34-41; CMIS page 11h "
           "bytes 186-201). type: what the module measures, average (average power) or oma "
           "(optical modulation amplitude; SFF-8472 A0h byte 92 bit 3, SFF-8636 byte 220 bit "
           "3, CMIS page 01h byte 151 bit 4): the two differ by 1-3 dB, so compare rx power "
           "only within one type. 0 W is a dark receiver (a CMIS lane whose data path is not "
           "activated has no value here: see nic_module_data_path_state). lane counts from 1 "
           "(SFP: 1).", labels=("lane", "type"), unit="watts"),
    _gauge("nic_module_tx_power_watts", "Transmitted optical power of this lane "
           "(module-measured, 0.1 uW per bit; SFF-8472 A2h bytes 102-103, SFF-8636 bytes 50-57, "
           "CMIS page 11h bytes 154-169).", labels=("lane",), unit="watts"),
    _gauge("nic_module_tx_bias_amperes", "Laser bias current of this lane (module-measured, "
           "2 uA per bit; SFF-8472 A2h bytes 100-101, SFF-8636 bytes 42-49, CMIS page 11h bytes "
           "170-185 times the multiplier of page 01h byte 160).", labels=("lane",),
           unit="amperes"),
    _gauge("nic_module_temperature_threshold_celsius", "The module's own temperature alarm "
           "and warning thresholds (level: high_alarm, high_warning, low_warning, low_alarm), "
           "from its EEPROM: SFF-8472 A2h bytes 0-7, SFF-8636 page 03h bytes 128-135, CMIS "
           "page 02h bytes 128-135.", labels=_MODULE_LEVEL, unit="celsius"),
    _gauge("nic_module_supply_voltage_threshold_volts", "The module's own supply voltage "
           "alarm and warning thresholds by level (SFF-8472 A2h bytes 8-15, SFF-8636 page 03h "
           "bytes 144-151, CMIS page 02h bytes 136-143).", labels=_MODULE_LEVEL, unit="volts"),
    _gauge("nic_module_rx_power_threshold_watts", "The module's own rx power alarm and "
           "warning thresholds by level, for every lane alike (SFF-8472 A2h bytes 32-39, "
           "SFF-8636 page 03h bytes 176-183, CMIS page 02h bytes 192-199); type as on "
           "nic_module_rx_power_watts.", labels=("level", "type"), unit="watts"),
    _gauge("nic_module_tx_power_threshold_watts", "The module's own tx power alarm and "
           "warning thresholds by level (SFF-8472 A2h bytes 24-31, SFF-8636 page 03h bytes "
           "192-199, CMIS page 02h bytes 176-183).", labels=_MODULE_LEVEL, unit="watts"),
    _gauge("nic_module_tx_bias_threshold_amperes", "The module's own laser bias alarm and "
           "warning thresholds by level (SFF-8472 A2h bytes 16-23, SFF-8636 page 03h bytes "
           "184-191, CMIS page 02h bytes 184-191 times the page 01h bias multiplier).",
           labels=_MODULE_LEVEL, unit="amperes"),
    _gauge("nic_module_flags_set", "How many of the flags the module implements "
           "(nic_module_flag) are set in the last read: 0 when none is; absent when no flag "
           "was read. Below --collector.detail=full, nic_module_flag shows the set flags only "
           "(docs/metrics.md, Detail tiers).", unit=""),
    _gauge("nic_module_flag", "A flag the module itself raises: 1 set, 0 clear (below "
           "--collector.detail=full only the set flags are served: nic_module_flags_set counts "
           "them). quantity: "
           "temperature, supply_voltage, rx_power, tx_power, tx_bias (level high_alarm, "
           "high_warning, low_warning, low_alarm), rx_los, tx_los, tx_fault, rx_cdr_lol, "
           "tx_cdr_lol, tx_adaptive_eq_fault (level \"state\"), and the CMIS VDM observables' "
           "flags (page 2Ch: vdm_esnr_<side>, vdm_pre_fec_ber_<side>_current, "
           "vdm_errored_frames_<side>_current, vdm_laser_temperature; the four levels); lane "
           "\"\" for module-wide flags. "
           "From SFF-8472 A2h bytes 110 and 112-117, SFF-8636 bytes 3-14, CMIS lower memory "
           "byte 9 and page 11h bytes 135-152; present only where the module says it "
           "implements the flag. SFF-8636 and CMIS latch these flags until read, so a set "
           "flag may come from an event since the previous read.",
           labels=("quantity", "level", "lane")),
    _gauge("nic_module_checksum_valid", "1 when a checksum byte of the module EEPROM matches "
           "the bytes it covers (the low 8 bits of their sum), 0 when it does not: the read "
           "returned bytes other than the module's (an I2C error, a driver placing a page at "
           "the wrong offset) or the vendor programmed a wrong one. checksum: cc_base, cc_ext "
           "(SFF-8472 A0h bytes 63 and 95; SFF-8636 page 00h bytes 191 and 223), cc_dmi "
           "(SFF-8472 A2h byte 95), page_00h, page_01h, page_02h (CMIS bytes 222, 255, 255). "
           "Present for each checksum whose bytes were read. Nothing from a failing page is "
           "exported, and nic_module_read_state reads corrupt.", labels=("checksum",)),
    _gauge("nic_module_value_implausible", "1 for a module value that was decoded outside "
           "what the map's units can express (temperature below -128 or at/above 128 C, a "
           "negative or above-6.55 V supply, negative or above-6.55 mW power, negative "
           "bias): only SFF-8472 external calibration constants can compute one. The value "
           "itself is not exported. quantity: temperature, supply_voltage, tx_bias, tx_power, "
           "rx_power; lane as on the monitors; level \"\" for the measurement, else the "
           "threshold level.", labels=("quantity", "lane", "level")),
    _gauge("nic_module_state", "1 for the CMIS module state (lower memory byte 3 bits 3-1), 0 "
           "for the others: low_power (ModuleLowPwr: the host keeps it in low power, or the "
           "power mode policy is auto and the port is down; every data path is deactivated), "
           "power_up, ready, power_down, fault (ModuleFault), unknown (a reserved code). CMIS "
           "modules only.", labels=("state",)),
    _gauge("nic_module_data_path_state", "The CMIS data path state of this media lane (page "
           "11h bytes 128-131, a nibble per lane), value 1, one series per lane labelled with "
           "its state: deactivated, init, deinit, activated, tx_turn_on, tx_turn_off, "
           "initialized, unknown. Only an activated lane carries data; the others have no "
           "rx/tx power, bias or flags (their 0 W is the state, not a dark fiber).",
           labels=("lane", "state")),
    _gauge("nic_module_power_mode_policy", "The module power mode policy the driver reports "
           "(ethtool netlink MODULE_GET, kernel 5.16+; ETHTOOL_A_MODULE_POWER_MODE_POLICY): "
           "value 1, policy high (always high power) or auto (the host moves the module "
           "to high power when the port is up). Absent where the driver does not report it "
           "(most NIC drivers; mlxsw does).", labels=("policy",)),
    _gauge("nic_module_power_mode", "The module's operational power mode the driver reports "
           "(MODULE_GET, ETHTOOL_A_MODULE_POWER_MODE): value 1, mode low or high. A module "
           "in low power does not pass traffic. Absent where the driver does not report it.",
           labels=("mode",)),
    # The module collector's own state (nicwatch.sources.ethtool_module): present for every
    # polled interface once --collector.module read it, so absence is visible.
    _gauge("nic_module_read_timestamp_seconds", "When the module EEPROM behind this "
           "interface's nic_module_* values was read (Unix time): they are read on their own "
           "cadence (--collector.module.interval), and after a failed read the last good values "
           "stay, so time() minus this is their age.", unit="seconds"),
    _gauge("nic_module_read_state", "1 for the state of the last module EEPROM read of this "
           "interface, 0 for the others: ok; unsupported (the driver or kernel has no module "
           "access, EOPNOTSUPP); absent (no module answers, ENODEV or EIO: an empty cage); "
           "not_permitted (EPERM: nicwatch lacks CAP_NET_ADMIN); busy (EBUSY: the kernel refuses "
           "module reads while it flashes the module's firmware, ethtool "
           "--flash-module-firmware; the last good values stay); failed (any other error, see "
           "nic_module_read_errors_total); corrupt (the read succeeded but a checksum of the "
           "EEPROM fails: nic_module_checksum_valid names it).", labels=("state",)),
)
