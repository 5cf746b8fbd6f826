"""The families of pluggable transceiver modules: EEPROM monitors, flags, thresholds and
the CMIS VDM per-lane observables."""

from __future__ import annotations

from nicwatch.metrics.family import RDMA, Family, _gauge

# Pluggable transceiver modules (`ethtool -m`): decoded from the module EEPROM by
# nicwatch.normalize.module. SFF-8472 (SFP/SFP+/SFP28: A0h identity, A2h digital diagnostics),
# SFF-8636 (QSFP+/QSFP28: lower page monitors, page 00h identity, page 03h thresholds) and CMIS
# (QSFP-DD/OSFP/QSFP112/SFP-DD/DSFP: lower memory, pages 00h-02h, lane page 11h). Absent when
# no module EEPROM was read, the module does not implement the field, the page holding it
# fails its checksum, or the value is outside the physical bounds (then
# nic_module_value_implausible names it). docs/optics.md says what each value means.
_MODULE_LEVEL = ("level",)
MODULE_GAUGES: tuple[Family, ...] = (
    _gauge("nic_rdma_port_info", "An RDMA port; value 1. driver: the counter table that "
           "applies (mlx5, bnxt_re, irdma, efa, mana, rxe, ...; \"\" unknown); link_layer: "
           "InfiniBand or Ethernet (RoCE); state and phys_state as the kernel names them "
           "(ACTIVE, DOWN, ...; LinkUp, Polling, Disabled, ...).",
           labels=("driver", "link_layer", "node_guid", "pci_address", "phys_state", "state",
                   *RDMA)),
    _gauge("nic_rdma_info", "The HCA behind an RDMA port; value 1. board_id, "
           "firmware_version and hca_type: the device's board_id, fw_ver and hca_type files "
           "as printed (\"\" where absent), the labels node_exporter's node_infiniband_info "
           "has.", labels=("board_id", "firmware_version", "hca_type", *RDMA)),
    _gauge("nic_rdma_port_active", "1 when the RDMA port's logical state is ACTIVE, else 0.",
           labels=RDMA),
    _gauge("nic_rdma_port_rate_bytes_per_second", "The RDMA port's rate (ports/<n>/rate: "
           "width x lane speed).", labels=RDMA, unit="bytes_per_second"),
    _gauge("nic_rdma_portcounters_saturated", "1 while an IB PortCounters counter of this port "
           "stands at its maximum (2^width - 1): the PMA counters stop there instead of "
           "wrapping, so its increase since is unknown (no rate is computed) until someone "
           "clears it (perfquery -R). counter: the counters/ file.",
           labels=("counter", *RDMA)),
    _gauge("nic_rdma_hw_value", "A driver RDMA counter that is a value, not a count (mana "
           "current_rate), by the driver's name.", labels=("counter", *RDMA)),
    _gauge("nic_rdma_active_mtu_bytes", "The RoCE active MTU of this port: what the kernel "
           "derives from the netdev MTU (iboe_get_mtu, include/rdma/ib_addr.h: the MTU less 96 "
           "bytes of RoCE headers, rounded down to 256..4096), as mlx5, bnxt_re and irdma "
           "report active_mtu; computed, not read (no sysfs or netlink attribute has it).",
           labels=RDMA, unit="bytes"),
    _gauge("nic_rdma_roce_v2_gids", "RoCE v2 entries of this port's GID table that belong to "
           "its own netdev (gid_attrs/types, gid_attrs/ndevs).", labels=RDMA),
    _gauge("nic_rdma_addresses_without_roce_v2_gid", "IP addresses of the port's netdev "
           "without a RoCE v2 GID (IPv4 as ::ffff:a.b.c.d): RoCE v2 traffic to those addresses "
           "cannot be set up (rdma_cm resolves an address to a GID). Absent when the addresses "
           "or the GID table were not read.", labels=RDMA),
    _gauge("nic_rdma_default_roce_tos", "ToS byte (DSCP << 2 | ECN) rdma_cm gives new RoCE "
           "connections on this port (configfs rdma_cm/<dev>/ports/<n>/default_roce_tos; "
           "present once the rdma_cm/<dev> directory was created).", labels=RDMA),
    _gauge("nic_rdma_traffic_class", "Traffic class (ToS byte) forced on every RoCE QP of "
           "this port by the vendor mlx5 driver (infiniband/<dev>/tc/<n>/traffic_class "
           "\"Global tclass\"); absent when none is set.", labels=RDMA),
)

# CMIS VDM (versatile diagnostics, pages 20h-2Fh; docs/link-physics.md "CMIS VDM"): what the
# module measures per lane beyond power and bias, where page 01h byte 142 bit 6 advertises it.
# lane counts from 1 (the descriptor's lane field + 1); side: media (the module's optical or
# line input) or host (its electrical input from the NIC); stat: current, min, max, average.
_VDM_SRC = ("from the module's VDM (CMIS 5.x 8.22: descriptor pages 20h-23h, samples "
            "24h-27h, thresholds 28h-2Bh)")
_VDM_STAT = (" stat: current, or the module's min, max and average statistics (over the "
             "interval between two freezes, page 2Fh byte 144, which nicwatch never writes).")
VDM_ESNR = _gauge("nic_module_vdm_esnr_db", "Effective signal-to-noise ratio of this lane's "
                  "input as the module measures it (VDM types 5 media, 6 host; U16, 1/256 dB), "
                  + _VDM_SRC + ".", labels=("lane", "side"), unit="db")
VDM_PRE_FEC_BER = _gauge("nic_module_vdm_pre_fec_ber", "Pre-FEC bit error ratio of this "
                         "lane's input as the module measures it (VDM types 9-16; F16), "
                         + _VDM_SRC + "." + _VDM_STAT, labels=("lane", "side", "stat"))
VDM_ERRORED_FRAMES = _gauge("nic_module_vdm_errored_frames", "The module's errored frames "
                            "observable (FERC; VDM types 17-24, F16) of this lane's input, "
                            "as the module reports it, " + _VDM_SRC + "." + _VDM_STAT,
                            labels=("lane", "side", "stat"))
VDM_LASER_TEMPERATURE = _gauge("nic_module_vdm_laser_temperature_celsius", "Temperature of "
                               "this lane's laser as the module measures it (VDM type 4; S16, "
                               "1/256 C), " + _VDM_SRC + ".", labels=("lane",), unit="celsius")
_VDM_LIMIT = (" The module's own alarm and warning thresholds of the observable (level: "
              "high_alarm, low_alarm, high_warning, low_warning; its descriptor's threshold "
              "set on pages 28h-2Bh), in its unit; labels as on the observable. Only for "
              "stat current (statistics have none here), and none where the module's set is "
              "four zeros.")
VDM_ESNR_THRESHOLD = _gauge("nic_module_vdm_esnr_threshold_db", "eSNR thresholds." + _VDM_LIMIT,
                            labels=("lane", "side", "level"), unit="db")
VDM_PRE_FEC_BER_THRESHOLD = _gauge("nic_module_vdm_pre_fec_ber_threshold", "Pre-FEC BER "
                                   "thresholds." + _VDM_LIMIT,
                                   labels=("lane", "side", "stat", "level"))
VDM_ERRORED_FRAMES_THRESHOLD = _gauge("nic_module_vdm_errored_frames_threshold", "Errored "
                                      "frames thresholds." + _VDM_LIMIT,
                                      labels=("lane", "side", "stat", "level"))
VDM_LASER_TEMPERATURE_THRESHOLD = _gauge("nic_module_vdm_laser_temperature_threshold_celsius",
                                         "Laser temperature thresholds." + _VDM_LIMIT,
                                         labels=("lane", "level"), unit="celsius")
MODULE_VDM_GAUGES: tuple[Family, ...] = (
    VDM_ESNR, VDM_PRE_FEC_BER, VDM_ERRORED_FRAMES, VDM_LASER_TEMPERATURE, VDM_ESNR_THRESHOLD,
    VDM_PRE_FEC_BER_THRESHOLD, VDM_ERRORED_FRAMES_THRESHOLD, VDM_LASER_TEMPERATURE_THRESHOLD)

