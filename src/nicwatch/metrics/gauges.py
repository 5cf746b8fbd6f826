"""The canonical gauge families (link, rings, PCIe, DCB, devlink, hwmon, firmware, ...) and
the fabric's (LLDP and the peer's DCBX)."""

from __future__ import annotations

from nicwatch.metrics.family import DEVLINK_HEALTH, Family, _counter, _gauge
from nicwatch.metrics.module import MODULE_GAUGES, MODULE_VDM_GAUGES

ASIC_TEMPERATURE = _gauge(
    "nic_asic_temperature_celsius", "Temperature of a sensor of the NIC chip as its driver's "
    "hwmon device reports it (tempN_input, millidegrees in sysfs). sensor: tempN_label where "
    "the driver names its sensors (mlx5: the firmware's name, \"asic\", and \"Module<n>\" for "
    "the module in the cage, the same reading as nic_module_temperature_celsius), else "
    "tempN (bnxt_en, ice: temp1, the chip). Absent when the driver registers no hwmon "
    "device or the read failed.", labels=("sensor",), unit="celsius")
ASIC_TEMPERATURE_THRESHOLD = _gauge(
    "nic_asic_temperature_threshold_celsius", "A temperature threshold of a NIC sensor as "
    "its driver reports it. level: warning (tempN_max: bnxt_en, ice), critical (tempN_crit: "
    "mlx5 MTMP temp_threshold_hi, bnxt_en and ice firmware critical threshold), emergency "
    "(tempN_emergency: bnxt_en and ice fatal threshold), shutdown (bnxt_en temp1_shutdown, "
    "when set in NVM). Only the levels the driver reports.", labels=("sensor", "level"),
    unit="celsius")
FIRMWARE_INFO = _gauge(
    "nic_firmware_info", "A firmware or hardware version the devlink instance behind this "
    "interface reports (devlink dev info, DEVLINK_CMD_INFO_GET); value 1. devlink: the "
    "instance (pci/<address>, netdevsim/netdevsim<n>), slot: running (what runs now), "
    "stored (what runs after activation: the flashed image) or fixed (hardware identity), "
    "component: the version's name as the driver reports it (fw.version, fw, fw.mgmt, "
    "fw.psid, ...), version: its value. Read every 60 s.",
    labels=("devlink", "slot", "component", "version"))
FIRMWARE_PENDING = _gauge(
    "nic_firmware_activation_pending", "1 when the stored version of this firmware component "
    "differs from the running one: an image was flashed and is not active yet (activate it "
    "with devlink dev reload ... action fw_activate where the driver supports it, else a "
    "cold reboot); 0 when they are equal. Only components with both a running and a stored "
    "version the driver could read (mlx5 reports 0.0.0000 or 255.255.65535 for a version "
    "its firmware query failed to read: not compared).", labels=("devlink", "component"))

GAUGES: tuple[Family, ...] = (
    _gauge("nic_info", "Identity of a network interface; value is always 1.",
           labels=("driver", "driver_version", "firmware_version", "pci_address", "mac",
                   "perm_mac", "rdma_device")),
    _gauge("nic_link_up", "1 when the interface operstate is up, else 0."),
    _gauge("nic_carrier", "1 when the interface has carrier, 0 when not."),
    _gauge("nic_mtu_bytes", "Interface MTU.", unit="bytes"),
    _gauge("nic_link_speed_bytes_per_second", "Negotiated link speed (line rate).",
           unit="bytes_per_second"),
    _gauge("nic_link_full_duplex", "1 for full duplex, 0 for half duplex."),
    _gauge("nic_ring_descriptors", "Configured descriptor ring size.", labels=("ring",)),
    _gauge("nic_ring_max_descriptors", "Largest descriptor ring size the driver allows.",
           labels=("ring",)),
    _gauge("nic_channels", "Configured channel (queue) count by type.", labels=("type",)),
    _gauge("nic_channels_max", "Largest channel count the driver allows by type.",
           labels=("type",)),
    _gauge("nic_pause_autoneg", "1 when 802.3x PAUSE is autonegotiated."),
    _gauge("nic_pfc_enabled", "1 when IEEE 802.1Qbb PFC is enabled for this priority, 0 when "
           "not (dcbnl pfc_en); absent when the driver has no DCB support.",
           labels=("priority",)),
    # RoCE QoS profile: dcbnl IEEE_GET (read every poll with PFC), the vendor mlx5 ecn/
    # sysfs tree and the RDMA ToS settings (read on the PCIe cadence). Absent where the
    # driver does not expose them (docs/roce-qos.md).
    _gauge("nic_qos_trust_info", "Which packet field selects the priority of received "
           "traffic; value 1. trust is dscp, pcp or none (an app-trust table with no "
           "selector: neither is trusted). source says where it was read, the first that "
           "has it: dcbnl_apptrust (the first selector of the dcbnl app-trust table, Linux "
           "6.3+ drivers with dcbnl_getapptrust), mlx5_sysfs (the vendor mlx5 "
           "/sys/class/net/<if>/qos/trust file that mlnx_qos reads), dcbnl_app_table (dscp "
           "when the DCB application table has DSCP entries, how upstream mlx5 and ice "
           "switch to DSCP trust, else pcp). Absent without DCB support and without the "
           "vendor file.", labels=("trust", "source")),
    _gauge("nic_qos_dscp_priority", "Priority that traffic with this DSCP gets, from the DCB "
           "application table (DSCP selector; dcb app show); only mapped DSCP values appear.",
           labels=("dscp",)),
    _gauge("nic_ets_priority_tc", "Traffic class that this priority is mapped to (dcbnl IEEE "
           "ETS prio_tc).", labels=("priority",)),
    _gauge("nic_ets_tc_bandwidth_ratio", "Share of the bandwidth ETS gives this traffic class "
           "(dcbnl IEEE ETS tc_tx_bw, percent / 100); meaningful for tsa=\"ets\".",
           labels=("tc",), unit="ratio"),
    _gauge("nic_ets_tc_tsa_info", "Transmission selection algorithm of this traffic class "
           "(dcbnl IEEE ETS tc_tsa: strict, cbs, ets, vendor); value 1.", labels=("tc", "tsa")),
    _gauge("nic_roce_ecn_enabled", "1 when RoCE ECN (DCQCN) is enabled for this priority at "
           "this point (rp: reaction point, slows the sender on CNPs; np: notification point, "
           "sends CNPs for ECN-marked packets), 0 when not; vendor mlx5 driver's "
           "ecn/roce_<point>/enable/<priority>, absent elsewhere.",
           labels=("point", "priority")),
    _gauge("nic_roce_cnp_dscp", "DSCP of the congestion notification packets this port "
           "sends (vendor mlx5 ecn/roce_np/cnp_dscp)."),
    _gauge("nic_roce_cnp_priority", "802.1p priority of the congestion notification packets "
           "this port sends (vendor mlx5 ecn/roce_np/cnp_802p_prio)."),
    _gauge("nic_pause_enabled", "1 when 802.3x PAUSE is enabled in this direction.",
           labels=("direction",)),
    _gauge("nic_fec_mode_info", "FEC configuration; value 1. configured lists the allowed "
           "modes (comma-separated), active the mode in use.", labels=("configured", "active")),
    _gauge("nic_link_lanes", "Serdes lanes the link runs on (ethtool netlink LINKMODES_GET "
           "ETHTOOL_A_LINKMODES_LANES, 5.11); absent while the driver does not say."),
    _gauge("nic_link_down_reason", "Why the link is down, as the driver reports it (ethtool "
           "netlink LINKSTATE_GET extended state and substate, 5.9: reason autoneg, "
           "link_training_failure, link_logical_mismatch, bad_signal_integrity, no_cable, "
           "cable_issue, eeprom_issue, calibration_failure, power_budget_exceeded, overheat, "
           "module; subreason e.g. serdes_alos, or \"\"); value 1, present only while the "
           "link is down and the driver gives a reason.", labels=("reason", "subreason")),
    _gauge("nic_numa_node", "NUMA node of the NIC's PCI function."),
    _gauge("nic_irq_info", "One interrupt of the NIC's device; value 1. queue: the receive "
           "queue (channel) it serves, from the kernel's NAPI records or the driver's name for "
           "it (\"\" for the device's own: async events, misc); kind: rxtx, rx, tx or other; "
           "affinity: /proc/irq/<irq>/smp_affinity_list, effective: effective_affinity_list "
           "(where it is delivered; \"\" when the kernel does not say), node: the NUMA node of "
           "those CPUs when they are all on one (\"\" otherwise).",
           labels=("irq", "queue", "kind", "affinity", "effective", "node")),
    _gauge("nic_irqs", "The NIC's queue interrupts by placement: local (delivered to CPUs on "
           "the NIC's NUMA node), remote (to CPUs of another node: every packet crosses the "
           "interconnect), unknown (CPUs on several nodes, or no node known).",
           labels=("placement",)),
    _gauge("nic_rx_queue_rps_info", "Receive packet steering of this receive queue; value 1. "
           "cpus: the CPUs of its queues/rx-<queue>/rps_cpus mask, which process its packets "
           "after the interrupt. Absent for queues without RPS.", labels=("queue", "cpus")),
    _gauge("nic_pcie_link_speed_gts", "PCIe link speed in GT/s of each device on the NIC's "
           "path (hop=\"0\" the NIC function, then each upstream port to the root port); "
           "kind=current is the trained speed, kind=max the device's capability.",
           labels=("hop", "pci_address", "kind")),
    _gauge("nic_pcie_link_width", "PCIe link width in lanes of each device on the NIC's path; "
           "kind=current trained, kind=max capability.", labels=("hop", "pci_address", "kind")),
    _gauge("nic_pcie_bandwidth_ceiling_bytes_per_second", "Usable PCIe bandwidth of the "
           "narrowest link on the NIC's path, per direction, after line encoding (as the "
           "kernel's pcie_bandwidth_available); TLP overhead takes another 5-15%."),
    _gauge("nic_pcie_shared_line_rate_bytes_per_second", "Sum of the line rates of all "
           "netdevs sharing this NIC's PCIe link (ports of one card share one link)."),
    _gauge("nic_pcie_degraded", "1 when the NIC's PCIe path is degraded for this reason: "
           "width or speed (a link on the path, the NIC's own or a switch uplink, trained "
           "below what both of its ends support), ceiling_below_line_rate (the path cannot "
           "carry the line rate of the physical ports sharing it); 0 otherwise.",
           labels=("reason",)),
    _gauge("nic_pcie_verdict_unknown", "1 when the NIC's PCIe path cannot be judged for this "
           "reason: link_state (the NIC's own link reads Unknown or 0 lanes: link down or in "
           "recovery, function in D3cold), no_own_link (all its link attributes read 0 or "
           "Unknown: a virtual function seen from a guest, whose PF's link is out of sight, "
           "or a function without link registers, max_link_width 255), "
           "upstream_link_state (a port above it does; the "
           "ceiling is only an upper bound), hidden_link_partner (trained below the card's "
           "maximum behind an emulated port or none: in a VM a fault cannot be told from a "
           "narrow host slot); 0 otherwise.", labels=("reason",)),
    _gauge("nic_pcie_emulated_ports", "Ports on the NIC's PCIe path that a hypervisor "
           "emulates (QEMU, VMware ids): their link values are invented, so the ceiling and "
           "the verdict leave them out. Above 0 inside a VM with a passthrough NIC."),
    _gauge("nic_pcie_slot_limited", "1 when the slot (the parent port) supports less than "
           "the card's capability in this respect (width or speed): a platform limit, not a "
           "training fault.", labels=("limit",)),
    _gauge("nic_sriov_vfs", "SR-IOV VFs of this PF: state=enabled (sysfs sriov_numvfs), "
           "total (sriov_totalvfs, the most the device allows), reported (VFs the PF's link "
           "reply described this poll, as ip -d link lists them), no_counters (reported VFs "
           "without counters: the driver has no VF statistics, so the kernel sends zeros, "
           "which are not exported, or the reply carried none), unreadable (enabled VFs the "
           "reply left out, as the kernel does when the driver cannot describe a VF, or whose "
           "counters the kernel zero-filled after the driver's read failed). reported, "
           "no_counters and unreadable only when the link reply was read. Representors "
           "(switchdev) carry none: their PF does. Opt-in (--collector.vfs).",
           labels=("state",)),
    _gauge("nic_vf_info", "One SR-IOV VF of this PF as the PF enforces it; value 1. mac: "
           "administrative MAC (empty: none set), vlan: port VLAN (0: none), link_state: "
           "auto, enable or disable, spoofchk and trust: on, off or empty when the driver "
           "does not report them. Opt-in (--collector.vfs).",
           labels=("vf", "mac", "vlan", "link_state", "spoofchk", "trust")),
    _gauge("nic_stat_supported", "1 when this interface provides the canonical counter "
           "family, 0 when it does not (absent is not zero).", labels=("counter",)),
    _gauge("nic_devlink_health_reporter_state", "1 for the state this devlink health "
           "reporter is in, 0 for the others: healthy, error (an error was reported and "
           "nothing has marked the reporter healthy since: for a reporter with a recover "
           "operation, recovery did not run or failed, e.g. auto-recovery off or a second "
           "error within the grace period; for one without, until the driver clears it, "
           "ice after a reset), unknown (a state value the kernel did not define).",
           labels=(*DEVLINK_HEALTH, "state")),
    _gauge("nic_devlink_health_last_dump_timestamp_seconds", "Wall-clock time of the dump this "
           "devlink health reporter holds (taken at an error; devlink keeps one until it is "
           "cleared); absent while none is stored.", labels=DEVLINK_HEALTH, unit="seconds"),
    _gauge("nic_devlink_health_auto_recover", "1 when this devlink health reporter recovers "
           "by itself after an error, 0 when an operator must (devlink health recover); absent "
           "for a reporter without a recover operation.", labels=DEVLINK_HEALTH),
    _gauge("nic_devlink_health_recoverable", "1 when this devlink health reporter has a "
           "recover operation (the kernel sends its grace period and auto-recover setting): "
           "devlink recovers it, automatically or on `devlink health recover`; 0 when it has "
           "none (mlx5 fw and vnic, every ice reporter): devlink health recover answers "
           "EOPNOTSUPP, its recovery count stays 0 and its state is healthy again only when "
           "the driver sets it.", labels=DEVLINK_HEALTH),
    _gauge("nic_bond_info", "This interface is a member of a Linux bond; value 1. bond: the "
           "bond (its master), mode: the bond's mode as bonding/mode names it (active-backup, "
           "802.3ad, balance-xor, ...). The bond itself is not polled by default (it has no "
           "device), so its counters, the sum of its members', are not counted twice.",
           labels=("bond", "mode")),
    _gauge("nic_bond_member_active", "1 when the bonding driver has this member active "
           "(bonding_slave/state: in active-backup the one that carries the traffic), 0 "
           "when it is a backup.", labels=("bond",)),
    _gauge("nic_devlink_port_info", "The devlink port whose netdev this interface is; value "
           "1. flavour: physical, pci_pf, pci_vf, pci_sf, virtual, ...; number: the physical "
           "port number (\"\" for other flavours); split_subport: the subport of a split port "
           "(\"\" when not split).",
           labels=("devlink", "devlink_port", "flavour", "number", "split_subport")),
    # NIC ASIC temperature (hwmon under the PCI function: mlx5, bnxt_en, ice).
    ASIC_TEMPERATURE,
    _gauge("nic_asic_temperature_highest_celsius", "Highest temperature this NIC sensor has "
           "read since its history was reset (mlx5 tempN_highest: the firmware's MTMP "
           "max_temperature, kept across driver reloads until reset); absent for drivers "
           "without it (bnxt_en, ice).", labels=("sensor",), unit="celsius"),
    ASIC_TEMPERATURE_THRESHOLD,
    _gauge("nic_asic_hwmon_info", "The hwmon device that reports this interface's NIC chip; "
           "value 1. hwmon: its directory (hwmonN: the number changes across reboots and "
           "driver reloads), name: its name file (mlx5, bnxt_en, ice), pci_address: the PCI "
           "function it is registered under (for ice's second and later PFs, PF 0 of the "
           "same device: the same chip).", labels=("hwmon", "name", "pci_address")),
    # Firmware versions (devlink dev info).
    FIRMWARE_INFO,
    FIRMWARE_PENDING,
    *MODULE_GAUGES,
    *MODULE_VDM_GAUGES,
)

# The other end of each link (--collector.lldp; docs/fabric.md): LLDP neighbours received
# passively, their IEEE 802.1Qaz DCBX and the dcbnl peer attributes, and this port's own
# identity as an LLDP agent announces it, so that recording rules join both ends.
LLDP_NEIGHBOR = ("chassis_id", "port_id")
FABRIC_FAMILIES: tuple[Family, ...] = (
    _counter("nic_lldp_frames_total", "LLDPDUs received on this port and parsed "
             "(--collector.lldp), malformed ones included.", unit="frames"),
    _counter("nic_lldp_malformed_frames_total", "LLDPDUs received on this port that do not "
             "decode (a TLV past the frame, the mandatory TLVs missing or out of order, a "
             "DCBX TLV of the wrong length); each is logged at debug level.", unit="frames"),
    _counter("nic_lldp_dropped_frames_total", "LLDP frames on this port not parsed: over the "
             "per-port rate limit (5 a second, bursts of 10: the kernel drops them from the "
             "socket's 64 KiB buffer) or from a new neighbour past the 8 a port keeps.",
             unit="frames"),
    _gauge("nic_lldp_receive_state", "1 for the state of this port's LLDP receiver, 0 for "
           "the others: ok (listening); starting (the receiver's thread has not opened the "
           "port's socket yet: the first poll or two); not_permitted (no CAP_NET_RAW, no "
           "packet socket); firmware_agent (the NIC firmware runs its own LLDP agent and "
           "takes the frames: i40e/ice fw-lldp-agent on, mlx5 DCBX in firmware mode, from "
           "dcbnl GDCBX); failed (the socket could not be opened or bound).",
           labels=("state",)),
    _gauge("nic_lldp_neighbor_info", "The LLDP neighbour of this port, from its last LLDPDU; "
           "value 1, gone when its TTL runs out. chassis_id/port_id as the subtypes render "
           "them (mac: aa:bb:cc:dd:ee:ff; network_address: the address; names as text; others "
           "hex); system_name, port_description, management_address \"\" when not sent.",
           labels=(*LLDP_NEIGHBOR, "chassis_id_subtype", "port_id_subtype", "system_name",
                   "port_description", "management_address")),
    _gauge("nic_lldp_neighbor_age_seconds", "Seconds since this neighbour's last LLDPDU "
           "(LLDP agents send every 30 s by default).", labels=LLDP_NEIGHBOR, unit="seconds"),
    _gauge("nic_lldp_neighbor_ttl_seconds", "The time to live this neighbour announced: its "
           "information is dropped this long after its last LLDPDU.", labels=LLDP_NEIGHBOR,
           unit="seconds"),
    _gauge("nic_lldp_local_info", "This port as this host's LLDP agent announces it (not "
           "sent by nicwatch); value 1. chassis_id: --fabric.chassis-id, else the MAC of the "
           "lowest-ifindex port with a device (lldpd's default); port_id: the port's MAC or "
           "its name (--fabric.port-id). A neighbour's nic_lldp_neighbor_info with the same "
           "chassis_id and port_id is the other end of this port's link.",
           labels=LLDP_NEIGHBOR),
    _gauge("nic_lldp_peer_pfc_enabled", "1 when the link peer announces IEEE 802.1Qbb PFC on "
           "this priority, 0 when not. source: lldp (its PFC Configuration TLV, received by "
           "nicwatch) or dcbnl (DCB_ATTR_IEEE_PEER_PFC, what the driver's DCBX agent learned); "
           "lldp when both have it.", labels=("priority", "source")),
    _gauge("nic_lldp_peer_roce_priority", "The priority the link peer's Application Priority "
           "TLV gives RoCE (v2: UDP port 4791; else v1: EtherType 0x8915); absent when it "
           "gives none. source as for nic_lldp_peer_pfc_enabled.", labels=("source",)),
    _gauge("nic_qos_roce_priority", "The priority this port's own DCB application table "
           "gives RoCE (v2: UDP port 4791; else v1: EtherType 0x8915); absent when it gives "
           "none."),
    _gauge("nic_lldp_peer_dcbx_mismatch", "1 when this port and its link peer disagree, 0 "
           "when they agree: setting pfc (the sets of PFC-enabled, lossless, priorities "
           "differ) or roce_priority (the RoCE application priorities differ); absent when "
           "either side does not report the setting.", labels=("setting",)),
)
