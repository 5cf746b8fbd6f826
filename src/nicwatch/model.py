"""Records that flow between the stages: sources -> Reading -> normalize -> Sample -> tracker.

Everything here is immutable. ``None`` always means "the kernel or driver did not say",
never zero (see docs/architecture.md, "absent is not zero").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple, TypedDict


def _empty() -> Mapping[str, int]:
    return MappingProxyType({})


def _empty_names() -> Mapping[str, str]:
    return MappingProxyType({})


def _no_nodes() -> Mapping[int, int]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class DriverInfo:
    """ETHTOOL_GDRVINFO."""

    driver: str
    version: str
    firmware_version: str
    bus_info: str
    n_stats: int


@dataclass(frozen=True, slots=True)
class StatSet:
    """Driver statistics as `ethtool -S` shows them, in kernel order.

    ``generation`` identifies the name list (one number per distinct list), so it changes
    whenever the set grows, shrinks or is renamed, and consumers can tell a changed set
    from new values.
    """

    names: tuple[str, ...]
    values: tuple[int, ...]
    generation: int

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self.names, self.values, strict=False))


@dataclass(frozen=True, slots=True)
class Rings:
    """Descriptor ring sizes (RINGS_GET / ETHTOOL_GRINGPARAM). ``None``: not reported."""

    rx: int | None
    tx: int | None
    rx_max: int | None
    tx_max: int | None


@dataclass(frozen=True, slots=True)
class Channels:
    """Channel counts (CHANNELS_GET / ETHTOOL_GCHANNELS). ``None``: not reported."""

    rx: int | None
    tx: int | None
    other: int | None
    combined: int | None
    rx_max: int | None
    tx_max: int | None
    other_max: int | None
    combined_max: int | None


@dataclass(frozen=True, slots=True)
class PauseParams:
    """802.3x PAUSE configuration (PAUSE_GET)."""

    autoneg: bool
    rx: bool
    tx: bool


@dataclass(frozen=True, slots=True)
class FecParams:
    """FEC configuration (FEC_GET): configured mode names and the active one."""

    configured: tuple[str, ...]
    active: str | None
    auto: bool | None


@dataclass(frozen=True, slots=True)
class EthtoolNetlinkInfo:
    """What the ethtool generic-netlink dumps said about one interface.

    ``std_stats`` holds the kernel's driver-independent statistics under stable keys:
    ``pause.rx_frames``, ``pause.tx_frames``, ``fec.corrected_blocks`` (total) and
    ``fec.corrected_blocks.lane<N>``, ``fec.uncorrectable_blocks[.lane<N>]``,
    ``fec.corrected_bits[.lane<N>]``, ``eth-phy.<Name>``, ``eth-mac.<Name>``,
    ``eth-ctrl.<Name>``, ``rmon.<name>``. A key is present only when the driver filled it.
    """

    pause: PauseParams | None = None
    fec: FecParams | None = None
    rings: Rings | None = None
    channels: Channels | None = None
    std_stats: Mapping[str, int] = field(default_factory=_empty)
    # Link physics (docs/link-physics.md): the lanes of the link mode (LINKMODES_GET
    # ETHTOOL_A_LINKMODES_LANES) and LINKSTATE_GET's state. std_stats adds
    # ``fec.hist.<low>_<high>[.lane<N>]`` (FEC_STAT_HIST bins, 6.18) and
    # ``linkstate.ext_down_cnt``.
    lanes: int | None = None
    linkstate: LinkState | None = None


@dataclass(frozen=True, slots=True)
class LinkState:
    """LINKSTATE_GET: ``link`` detected; ``ext_state`` / ``ext_substate`` why the link is down
    (names of the uapi enums, lower case without prefix: ``bad_signal_integrity``,
    ``serdes_alos``; ``state_<n>`` for a number this table lacks), None when the driver
    gives no reason."""

    link: bool | None
    ext_state: str | None
    ext_substate: str | None


# enum ethtool_link_ext_state and the ethtool_link_ext_substate_* enums (include/uapi/linux/
# ethtool.h; 5.9, substates added up to 5.15 and MODULE in 5.16).
LINK_EXT_STATES: tuple[str, ...] = (
    "autoneg", "link_training_failure", "link_logical_mismatch", "bad_signal_integrity",
    "no_cable", "cable_issue", "eeprom_issue", "calibration_failure", "power_budget_exceeded",
    "overheat", "module")
LINK_EXT_SUBSTATES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "autoneg": ("no_partner_detected", "ack_not_received", "next_page_exchange_failed",
                "no_partner_detected_force_mode", "fec_mismatch_during_override", "no_hcd"),
    "link_training_failure": ("kr_frame_lock_not_acquired", "kr_link_inhibit_timeout",
                              "kr_link_partner_did_not_set_receiver_ready", "remote_fault"),
    "link_logical_mismatch": ("pcs_did_not_acquire_block_lock", "pcs_did_not_acquire_am_lock",
                              "pcs_did_not_get_align_status", "fc_fec_is_not_locked",
                              "rs_fec_is_not_locked"),
    "bad_signal_integrity": ("large_number_of_physical_errors", "unsupported_rate",
                             "serdes_reference_clock_lost", "serdes_alos"),
    "cable_issue": ("unsupported_cable", "cable_test_failure"),
    "module": ("cmis_not_ready",),
})


def link_ext_state_name(value: int) -> str:
    return LINK_EXT_STATES[value] if value < len(LINK_EXT_STATES) else f"state_{value}"


def link_ext_substate_name(state: int, value: int) -> str:
    """Substates count from 1 within their state's enum."""
    names = LINK_EXT_SUBSTATES.get(link_ext_state_name(state), ())
    return names[value - 1] if 0 < value <= len(names) else f"substate_{value}"


# FEC link-mode bits (enum ethtool_link_mode_bit_indices, uapi ethtool.h) -> FEC mode name.
# FEC_GET reports configured modes as a bitset of these bits and the active mode as one bit
# index; ETHTOOL_FEC_OFF is reported as the FEC_NONE link mode.
FEC_LINK_MODES: Mapping[int, str] = MappingProxyType({
    49: "off",  # ETHTOOL_LINK_MODE_FEC_NONE_BIT
    50: "rs",  # ETHTOOL_LINK_MODE_FEC_RS_BIT
    51: "baser",  # ETHTOOL_LINK_MODE_FEC_BASER_BIT
    74: "llrs",  # ETHTOOL_LINK_MODE_FEC_LLRS_BIT
})


@dataclass(frozen=True, slots=True)
class IeeePfc:
    """``struct ieee_pfc`` of one port.

    ``enabled``: priorities (0-7) with PFC on, from the ``pfc_en`` bitmap. ``capability``:
    how many priorities the port can enable at once (``pfc_cap``). ``mbc``: MACsec bypass
    capable. ``delay``: the cable allowance in bit times. ``requests`` / ``indications``:
    PFC frames sent / received per priority, when the driver fills them (mlx5 and i40e do;
    others leave zeros) - ``None`` when the kernel sent only the configuration part.
    """

    enabled: tuple[int, ...]
    capability: int
    mbc: bool
    delay: int
    requests: tuple[int, ...] | None
    indications: tuple[int, ...] | None


# --------------------------------------------------------------------------- PCIe and RDMA (sysfs)


@dataclass(frozen=True, slots=True)
class PcieLink:
    """The four link attributes of one PCIe device, read together.

    Speeds are GT/s per lane, widths are lanes. ``None``: the kernel said "Unknown" (or 0
    lanes: link down), or the file was unreadable or garbage (then a problem is recorded).

    An endpoint's or a switch upstream port's ``current_*`` describe the link above it; a
    root port's or switch downstream port's describe the link below it, so each physical
    link shows up on both of its ends. ``max_*`` is the device's own capability (for a port:
    what the slot can do).
    """

    current_speed_gts: float | None
    current_width: int | None
    max_speed_gts: float | None
    max_width: int | None


@dataclass(frozen=True, slots=True)
class AerCounters:
    """Advanced Error Reporting counts of one device, cumulative since enumeration.

    ``correctable`` / ``nonfatal`` / ``fatal`` map the kernel's error names (with spaces,
    e.g. ``"Receiver Error"``, ``"Bad TLP"``) to counts from ``aer_dev_correctable`` /
    ``aer_dev_nonfatal`` / ``aer_dev_fatal``; the ``TOTAL_ERR_*`` line of each file is
    ``total_*`` instead. ``rootport_total_*`` come from ``aer_rootport_total_err_*`` (root
    ports and event collectors only) and count errors reported by anything below the port.
    An absent file gives an empty mapping and ``None`` totals.
    """

    correctable: Mapping[str, int]
    nonfatal: Mapping[str, int]
    fatal: Mapping[str, int]
    total_correctable: int | None
    total_nonfatal: int | None
    total_fatal: int | None
    rootport_total_correctable: int | None
    rootport_total_nonfatal: int | None
    rootport_total_fatal: int | None


@dataclass(frozen=True, slots=True)
class PciDevice:
    """One PCI function directory (an endpoint or a bridge/port on the way up).

    ``link``: ``None`` when the device has no link attributes (not PCIe, e.g. virtio-PCI
    or a conventional PCI bridge). ``aer``: ``None`` when it has no AER attributes.
    ``local_cpus``: sorted CPU numbers from ``local_cpulist``. ``numa_node``: ``None`` for
    the kernel's -1 (no affinity).
    """

    bdf: str
    vendor_id: int | None
    device_id: int | None
    class_code: int | None
    numa_node: int | None
    local_cpus: tuple[int, ...] | None
    link: PcieLink | None
    aer: AerCounters | None
    power_state: str | None = None  # "D0", "D3cold", ...; None: no such file (pre-4.20)


@dataclass(frozen=True, slots=True)
class PciePath:
    """A PCI function and every PCI device above it, as sysfs shows them.

    ``function`` is the address asked about. For a virtual function ``physfn`` is its
    physical function: VF link registers are not meaningful, so ``hops`` then start at the
    PF (as the kernel's ``pci_upstream_bridge()`` does). ``hops[0]`` is the function whose
    link is read, each next hop is its parent bridge, the last is the root port (or the
    function itself when it sits directly on a host bridge). ``problems`` lists every file
    that was present but unreadable or garbage.
    """

    function: str
    physfn: str | None
    hops: tuple[PciDevice, ...]
    problems: tuple[str, ...]

    @property
    def is_pcie(self) -> bool:
        """Whether the function (or its PF) has PCIe link attributes at all."""
        return bool(self.hops) and self.hops[0].link is not None


@dataclass(frozen=True, slots=True)
class RdmaGid:
    """One valid entry of a RoCE port's GID table (``ports/<n>/gids/<index>`` with
    ``gid_attrs/types/<index>`` and ``gid_attrs/ndevs/<index>``): ``gid`` as the kernel prints
    it (``fe80:0000:...``, eight groups of four hex digits), ``type`` ``"RoCE v2"`` or
    ``"IB/RoCE v1"``, ``netdev`` the interface the entry belongs to (a VLAN or macvlan upper
    device of the port's netdev has entries of its own)."""

    index: int
    gid: str
    type: str | None
    netdev: str | None


@dataclass(frozen=True, slots=True)
class RdmaPort:
    """One port of one RDMA device, with or without a netdev (an InfiniBand port has none).

    ``state`` / ``phys_state`` are the names from ``"4: ACTIVE"`` / ``"5: LinkUp"`` (or the
    same names decoded from the RDMA netlink port dump). ``rate_bytes_per_second`` is the
    port rate from ``rate`` in bytes per second. ``netdev`` is the Ethernet (or IPoIB)
    interface of this port, ``pci_function`` the PCI address behind the device.
    ``hw_counters`` maps the driver's counter names to raw values (netlink
    ``RDMA_NLDEV_CMD_STAT_GET`` or ``hw_counters/``, see ``source``); ``counters`` maps the
    IB PortCounters files of ``counters/`` to raw values (``counters["port_xmit_data"]`` is
    in 4-byte words). ``problems`` as in :class:`PciePath`.

    ``source``: where ``hw_counters`` came from this poll, ``"netlink"`` or ``"sysfs"``.
    ``driver``: the RDMA driver whose counter table applies (``mlx5``, ``bnxt_re``,
    ``irdma``, ``efa``, ``mana``, ``ionic``, ``rxe``, ...); None when it could not be told.
    ``skipped``: counters not asked this poll because they failed before and are backed
    off, by name (``hw_counters`` names, ``counters/<name>`` for PMA files, ``stat_get`` for
    a port's whole netlink request) to the reason (an errno name). ``gids``: the valid GID
    table entries (RoCE ports; read on the slow cadence; None: not read). ``netdev_mtu``:
    the netdev's MTU when it has one. ``addresses``: the IP addresses of the netdev
    (``ip -j addr`` spelling; None: not read, as on a fixture tree).
    """

    device: str
    port: int
    link_layer: str | None
    state: str | None
    phys_state: str | None
    rate_bytes_per_second: int | None
    netdev: str | None
    node_guid: str | None
    pci_function: str | None
    hw_counters: Mapping[str, int]
    counters: Mapping[str, int]
    problems: tuple[str, ...]
    default_roce_tos: int | None = None  # rdma_cm configfs; see nicwatch.sources.sysfs_roce
    traffic_class: int | None = None  # vendor mlx5 tc/<port>/traffic_class global value
    source: str = "sysfs"
    driver: str | None = None
    skipped: Mapping[str, str] = field(default_factory=_empty_names)
    gids: tuple[RdmaGid, ...] | None = None
    netdev_mtu: int | None = None
    addresses: tuple[str, ...] | None = None
    # ``counters_ext/`` (pre-4.5 kernels and MLNX_OFED: the 64-bit PortCountersExtended as
    # ``port_rcv_data_64``, ``port_unicast_rcv_packets``, ...) by file name, raw; where a
    # file of it is present its value wins over a 32-bit ``counters/`` one (a 64-bit
    # ``counters/`` file wins over it).
    counters_ext: Mapping[str, int] = field(default_factory=_empty)
    # The HCA's identity (the device's ``board_id``, ``fw_ver`` and ``hca_type`` files, as
    # node_exporter's node_infiniband_info reads them); None: not read or absent.
    board_id: str | None = None
    firmware_version: str | None = None
    hca_type: str | None = None

    @property
    def key(self) -> str:
        """``"mlx5_0/1"``: the port's identity in the tracker and the exposition cache (no
        netdev name contains a ``/``)."""
        return f"{self.device}/{self.port}"


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The narrowest link on a PCIe path.

    ``bytes_per_second`` = ``width`` x lane rate at ``speed_gts`` of ``limiting_hop`` (a BDF).
    ``unknown_hops`` are PCIe hops whose current speed or width is unknown (link down, a
    speed the kernel could not name, unreadable files); when there are any, the ceiling is
    only an upper bound.
    """

    bytes_per_second: int
    limiting_hop: str
    speed_gts: float
    width: int
    unknown_hops: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LinkFault:
    """One physical link on the path that trained below what both of its ends support.

    ``hop`` is the index in ``PciePath.hops`` of the link's lower end (the NIC function,
    0, or a switch upstream port); ``bdf`` its address; ``actual`` and ``expected`` lanes
    (``WIDTH``) or GT/s (``SPEED``).
    """

    reason: str
    hop: int
    bdf: str
    actual: float
    expected: float


@dataclass(frozen=True, slots=True)
class PcieVerdict:
    """How a NIC function's PCIe path compares with what it could and should do.

    ``reasons`` (the function is degraded when there is any), in this order:

    * ``"width"``: a link on the path trained narrower than both of its ends support: the
      NIC's own link against ``expected_width`` = min(endpoint max width, parent port max
      width), or a switch uplink further up (each in ``faults``; bad riser or slot, dirty
      contacts, lane faults, a retimer);
    * ``"speed"``: the same for speed (``expected_speed_gts`` for the NIC's own link);
    * ``"ceiling_below_line_rate"``: the path ceiling is below
      ``line_rate_bytes_per_second``, the summed line rates of the physical ports sharing the
      link.

    ``unknown`` says what could not be judged, so the verdict is never "ok" by default:
    ``"link_state"`` (the NIC's own link reads Unknown or 0 or all-ones lanes: link down or in
    recovery, the function in D3cold or gone), ``"no_own_link"`` (all four link attributes
    read 0 / Unknown: reserved link registers, as in a virtual function passed to a guest,
    whose PF's link is out of sight), ``"upstream_link_state"`` (the same for a real
    hop above it; the ceiling is then only an upper bound) and ``"hidden_link_partner"`` (the
    NIC's link trained below the card's maximum behind an emulated port: in a VM the host's
    slot is not visible, so a fault cannot be told from a narrow slot).

    ``slot_limits`` (``"width"``, ``"speed"``) says the parent port cannot do what the card
    can (an x16 card in an x8 slot or lane-split port, a Gen5 card on a Gen4 port). That is
    how the machine is built, not a training fault, so it is not a reason by itself; it
    often comes with ``ceiling_below_line_rate``.

    ``emulated_hops`` are the BDFs of ports a hypervisor emulates (see
    :data:`EMULATED_PORTS`): their links are left out of everything else.

    ``pcie`` is False when the function has no PCIe link attributes (virtio-PCI): then
    there is no ceiling, no expectation and no reason.
    """

    function: str
    pcie: bool
    ceiling: Ceiling | None
    line_rate_bytes_per_second: int | None
    expected_width: int | None
    expected_speed_gts: float | None
    reasons: tuple[str, ...]
    slot_limits: tuple[str, ...]
    unknown: tuple[str, ...] = ()
    faults: tuple[LinkFault, ...] = ()
    emulated_hops: tuple[str, ...] = ()

    @property
    def degraded(self) -> bool:
        return bool(self.reasons)

    @property
    def slot_limited(self) -> bool:
        return bool(self.slot_limits)

    @property
    def state(self) -> str:
        """``"degraded"``, else ``"unknown"``, else ``"ok"``: the one word show, check,
        /metrics and the alerts agree on."""
        return "degraded" if self.reasons else "unknown" if self.unknown else "ok"

    @property
    def headroom_ratio(self) -> float | None:
        """Ceiling over summed line rate; below 1.0 the NIC can out-run its bus."""
        if self.ceiling is None or not self.line_rate_bytes_per_second:
            return None
        return self.ceiling.bytes_per_second / self.line_rate_bytes_per_second


# --------------------------------------------------------------------------- interfaces


@dataclass(frozen=True, slots=True)
class NetClass:
    """/sys/class/net/<device>: link state, kernel stats and the device behind it."""

    name: str
    ifindex: int | None
    address: str | None
    operstate: str | None
    mtu: int | None
    speed_mbps: int | None
    duplex: str | None
    carrier: bool | None
    carrier_changes: int | None
    carrier_up_count: int | None
    carrier_down_count: int | None
    device_path: str | None  # realpath of the `device` link, relative to the sysfs root
    pci_address: str | None  # the PCI function at or above device_path
    driver: str | None  # basename of device/driver (walking up from a virtio child)
    # statistics/* (rtnl_link_stats64 fields)
    stats: Mapping[str, int] = field(default_factory=_empty)
    dev_port: int | None = None  # port index within its PCI function (mlx4: 0, 1)
    phys_port_id: str | None = None  # physical port identity (hex); None: driver has none


@dataclass(frozen=True, slots=True)
class IeeeEts:
    """``struct ieee_ets`` of one port (dcbnl ``DCB_ATTR_IEEE_ETS``), the operational part.

    ``prio_tc[p]``: the traffic class of priority ``p``. ``tc_tx_bw[t]``: percent of the
    bandwidth ETS gives traffic class ``t``. ``tc_tsa[t]``: its transmission selection
    algorithm, one of ``strict``, ``cbs``, ``ets``, ``vendor`` or the number for others.
    ``willing``: the port accepts the peer's configuration (DCBX). ``ets_cap``: how many
    traffic classes the port supports.
    """

    willing: bool
    ets_cap: int
    prio_tc: tuple[int, ...]
    tc_tx_bw: tuple[int, ...]
    tc_tsa: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DcbApp:
    """One ``struct dcb_app`` of the DCB application table: traffic matching ``protocol``
    under ``selector`` (5: DSCP, 1: EtherType, 2-4: ports, 255: PCP) gets ``priority``."""

    selector: int
    priority: int
    protocol: int


@dataclass(frozen=True, slots=True)
class DcbQos:
    """The QoS part of a dcbnl IEEE_GET reply (besides PFC).

    ``ets``: None when the driver sent no ETS. ``apps``: the application table (the kernel
    always sends it, possibly empty). ``apptrust``: the selectors the port trusts, in order,
    from ``DCB_ATTR_DCB_APP_TRUST_TABLE`` (Linux 6.3+, drivers with ``dcbnl_getapptrust``);
    None when not reported.
    """

    ets: IeeeEts | None
    apps: tuple[DcbApp, ...]
    apptrust: tuple[int, ...] | None


# ------------------------------------------------------------------ LLDP neighbours (fabric)


@dataclass(frozen=True, slots=True)
class DcbxPfc:
    """IEEE 802.1Qaz PFC Configuration TLV (802.1 OUI 00-80-C2 subtype 0x0B) as a peer
    announces it. ``enabled``: priorities (0-7) with PFC on; ``capability``: how many it
    can enable at once; ``willing``: it accepts its peer's configuration; ``mbc``: MACsec
    bypass capable."""

    willing: bool
    mbc: bool
    capability: int
    enabled: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DcbxEts:
    """IEEE 802.1Qaz ETS Configuration (subtype 0x09) or Recommendation (0x0A) TLV.
    ``prio_tc[p]``: traffic class of priority p; ``tc_bw[t]``: percent of bandwidth;
    ``tc_tsa[t]``: strict, cbs, ets, vendor or the number. ``willing``/``cbs``/``max_tcs``
    only in the configuration TLV (False/False/0 in a recommendation)."""

    willing: bool
    cbs: bool
    max_tcs: int
    prio_tc: tuple[int, ...]
    tc_bw: tuple[int, ...]
    tc_tsa: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LldpNeighbor:
    """One LLDP neighbour of a port, decoded from its last LLDPDU (IEEE 802.1AB).

    ``chassis_id``/``port_id`` rendered by subtype (a MAC as aa:bb:.., a network address as
    text, names as printable text, anything else hex) with the subtype's name in
    ``*_subtype``. ``ttl``: seconds the neighbour said its information stays valid (0: the
    neighbour shut down). ``pfc``, ``ets``, ``ets_reco``, ``apps``: its IEEE 802.1Qaz DCBX
    TLVs, None when the frame carried none (``apps`` an Application Priority TLV, entries
    as :class:`DcbApp`). ``received_at``: wall clock of the last frame (set by the source).
    """

    chassis_id: str
    chassis_id_subtype: str
    port_id: str
    port_id_subtype: str
    ttl: int
    system_name: str | None = None
    port_description: str | None = None
    management_address: str | None = None
    pfc: DcbxPfc | None = None
    ets: DcbxEts | None = None
    ets_reco: DcbxEts | None = None
    apps: tuple[DcbApp, ...] | None = None
    received_at: float = 0.0


@dataclass(frozen=True, slots=True)
class LldpPort:
    """What the passive LLDP receiver knows of one port.

    ``state``: ``ok`` (listening), ``starting`` (the worker has not opened the port's socket
    yet), ``not_permitted`` (no CAP_NET_RAW: no packet socket),
    ``firmware_agent`` (the NIC's firmware runs its own LLDP agent and consumes the frames:
    i40e/ice ``fw-lldp-agent`` on, mlx5 DCBX in firmware mode; ``firmware_detail`` says
    which), or ``failed`` (the socket could not be opened or bound). ``neighbors``: the
    unexpired neighbours, oldest first. ``frames``/``malformed``/``dropped``: LLDPDUs
    received, refused by the decoder, and not parsed for the rate limit or table bound,
    since start. ``local_chassis_id``/``local_port_id``: this port's identity as an LLDP
    agent on this host announces it (see docs/fabric.md).
    """

    state: str
    neighbors: tuple[LldpNeighbor, ...] = ()
    frames: int = 0
    malformed: int = 0
    dropped: int = 0
    firmware_detail: str | None = None
    local_chassis_id: str | None = None
    local_port_id: str | None = None


@dataclass(frozen=True, slots=True)
class DcbPeer:
    """The peer's DCBX configuration as the driver's DCBX agent learned it (dcbnl
    ``DCB_ATTR_IEEE_PEER_PFC``/``_ETS``/``_APP``, drivers with ``ieee_peer_get*``: bnx2x,
    qede, i40e, ...). Each None when the driver did not send it."""

    pfc: IeeePfc | None
    ets: IeeeEts | None
    apps: tuple[DcbApp, ...] | None


@dataclass(frozen=True, slots=True)
class RoceEcn:
    """The vendor mlx5 driver's ``/sys/class/net/<if>/ecn/`` tree (DCQCN).

    ``rp_enabled[p]`` / ``np_enabled[p]``: ECN enabled on priority ``p`` at the reaction
    point (``roce_rp/enable/<p>``) and notification point (``roce_np/enable/<p>``); None
    where the file is absent or unreadable. ``cnp_dscp`` / ``cnp_802p_prio``: DSCP and
    802.1p priority of the CNPs the port sends (``roce_np/``).
    """

    rp_enabled: tuple[bool | None, ...]
    np_enabled: tuple[bool | None, ...]
    cnp_dscp: int | None
    cnp_802p_prio: int | None


@dataclass(frozen=True, slots=True)
class DevlinkPort:
    """A devlink port (DEVLINK_CMD_PORT_GET): the device it belongs to (``handle``, such as
    ``pci/0000:08:00.0``), its index, the netdev it backs and its physical identity.
    ``flavour``: physical, cpu, dsa, pci_pf, pci_vf, virtual, unused, pci_sf (or the number
    of one this code does not know); ``split_subport`` is None for a port that is not split."""

    handle: str
    index: int
    netdev_ifindex: int | None
    netdev_name: str | None
    flavour: str | None
    number: int | None
    split_group: int | None = None
    split_subport: int | None = None
    pf: int | None = None
    vf: int | None = None


@dataclass(frozen=True, slots=True)
class DevlinkHealthReporter:
    """One devlink health reporter (DEVLINK_CMD_HEALTH_REPORTER_GET) of a device
    (``port`` None) or of one of its ports. ``state`` is ``healthy``, ``error``, or
    ``unknown`` for a value the kernel did not define; ``errors`` and ``recoveries`` are the
    kernel's u64 counts since the reporter was created (driver load). ``grace_period_ms`` and
    ``auto_recover`` are None for a reporter without a recover operation, ``auto_dump`` for one
    without a dump operation; ``last_dump_time`` (wall clock, seconds) is None while no dump
    is stored."""

    handle: str
    port: int | None
    name: str
    state: str
    errors: int
    recoveries: int
    grace_period_ms: int | None
    auto_recover: bool | None
    auto_dump: bool | None
    last_dump_time: float | None

    @property
    def recoverable(self) -> bool:
        """Whether the reporter has a recover operation: the kernel sends GRACEFUL_PERIOD
        and AUTO_RECOVER only then (devlink_nl_health_reporter_fill). Without one, devlink
        never recovers it (``devlink health recover`` answers EOPNOTSUPP), its recovery
        count stays 0 and its state returns to healthy only when the driver sets it."""
        return self.grace_period_ms is not None or self.auto_recover is not None


@dataclass(frozen=True, slots=True)
class ModuleEeprom:
    """A pluggable module's EEPROM as read, in 128-byte halves (SFF-8472/8636/CMIS memory map).

    ``lower``: i2c address (0x50, 0x51) -> bytes 0..127 of that address (len <= 128).
    ``upper``: (i2c address, bank, page) -> bytes 128..255 of that page (len <= 128).
    ``read_at``: wall clock (epoch seconds) when the read finished. ``power``: the power mode
    the kernel reported at that read. Halves may be missing (a
    dump with only some pages, a page the module lacks): decoders decode what is there.
    """

    lower: Mapping[int, bytes]
    upper: Mapping[tuple[int, int, int], bytes]
    read_at: float
    power: ModulePowerMode | None = None  # ethtool MODULE_GET at the same read; None: not asked


@dataclass(frozen=True, slots=True)
class ModulePowerMode:
    """The module power mode the kernel reports (ethtool netlink ``MODULE_GET``, 5.16+):
    ``policy`` ``high`` or ``auto`` (ETHTOOL_A_MODULE_POWER_MODE_POLICY), ``mode`` ``low``
    or ``high`` (ETHTOOL_A_MODULE_POWER_MODE); None where the driver does not report it."""

    policy: str | None
    mode: str | None


# ModuleReadStatus.state, and "corrupt": a read whose checksums fail (decided in normalize).
MODULE_STATES = ("ok", "unsupported", "absent", "not_permitted", "failed", "corrupt", "busy")


@dataclass(frozen=True, slots=True)
class ModuleReadStatus:
    """How reading one interface's module EEPROM fares (read on the module source's own
    thread and cadence, not per poll).

    ``state``: ``ok`` (the last attempt read the module), ``unsupported`` (the driver or the
    kernel has no module EEPROM access: EOPNOTSUPP), ``absent`` (no module answers: ENODEV,
    EIO, as an empty cage reads), ``not_permitted`` (EPERM: no CAP_NET_ADMIN), ``busy``
    (EBUSY: the kernel refuses module reads while module firmware is flashed) or ``failed``
    (any other error). ``attempted_at``: wall clock of the last attempt. ``errors``: failed
    attempts since start by kind (errno name, or ``parse``); ``unsupported``, ``absent``,
    ``not_permitted`` and ``busy`` are states, not counted.
    """

    state: str
    attempted_at: float
    errors: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class VfInfo:
    """One SR-IOV virtual function as its PF reports it (RTM_GETLINK with RTEXT_FILTER_VF:
    one ``IFLA_VF_INFO`` of ``IFLA_VFINFO_LIST``, filled by the kernel's rtnl_fill_vfinfo()).

    ``vf``: the VF number. ``vlan``/``qos``/``vlan_proto``: the port VLAN the PF enforces on
    the VF (0: none). ``link_state``: auto, enable or disable. ``spoofchk``/``trust``: None
    where the driver does not report them (the kernel sends -1). ``stats``: the VF's counters
    by the kernel's names (rx_packets, tx_packets, rx_bytes, tx_bytes, broadcast, multicast,
    rx_dropped, tx_dropped); empty when the reply had none.
    """

    vf: int
    mac: str | None
    vlan: int | None
    qos: int | None
    vlan_proto: str | None  # "802.1Q", "802.1ad" or the hex ethertype
    link_state: str | None
    spoofchk: bool | None
    trust: bool | None
    min_tx_rate_mbps: int | None
    max_tx_rate_mbps: int | None
    stats: Mapping[str, int] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class SriovState:
    """SR-IOV of one PF: the VF counts sysfs shows (``device/sriov_numvfs``, enabled;
    ``device/sriov_totalvfs``, the most the device allows) and what the kernel's link reply
    said. ``announced``: its IFLA_NUM_VF, None when netlink was not read; the kernel puts
    ``dev_num_vf()`` there before it asks the driver anything, so it always equals the VFs
    enabled and says nothing about what the driver could describe. ``vfs``: the
    IFLA_VF_INFO entries the reply holds; a VF whose ``ndo_get_vf_config`` failed this poll
    (ice during a VF reset, i40e while another VF operation is pending) is skipped by the
    kernel and missing here. ``unreadable``: the VF numbers not readable this poll, missing
    from the list or with counters the kernel zero-filled after the driver's
    ``ndo_get_vf_stats`` failed (their ``stats`` are empty).
    """

    enabled: int | None
    total: int | None
    announced: int | None
    vfs: tuple[VfInfo, ...] = ()
    unreadable: tuple[int, ...] = ()


# --------------------------------------------------------------------------- receive path

# netdev generic netlink qstats (Documentation/netlink/specs/netdev.yaml, attribute set
# "qstats"; include/uapi/linux/netdev.h NETDEV_A_QSTATS_*): attribute number -> name, as the
# spec spells it. 8-11 since 6.9, the rest since 6.10.
QSTATS: Mapping[int, str] = MappingProxyType({
    8: "rx-packets", 9: "rx-bytes", 10: "tx-packets", 11: "tx-bytes",
    12: "rx-alloc-fail", 13: "rx-hw-drops", 14: "rx-hw-drop-overruns",
    15: "rx-csum-complete", 16: "rx-csum-unnecessary", 17: "rx-csum-none", 18: "rx-csum-bad",
    19: "rx-hw-gro-packets", 20: "rx-hw-gro-bytes", 21: "rx-hw-gro-wire-packets",
    22: "rx-hw-gro-wire-bytes", 23: "rx-hw-drop-ratelimits", 24: "tx-hw-drops",
    25: "tx-hw-drop-errors", 26: "tx-csum-none", 27: "tx-needs-csum", 28: "tx-hw-gso-packets",
    29: "tx-hw-gso-bytes", 30: "tx-hw-gso-wire-packets", 31: "tx-hw-gso-wire-bytes",
    32: "tx-hw-drop-ratelimits", 33: "tx-stop", 34: "tx-wake",
})


@dataclass(frozen=True, slots=True)
class NetdevQueue:
    """One queue of an interface as the netdev family's queue-get lists it (6.8+; only the
    queues of an interface that is up). ``kind``: ``rx`` or ``tx`` (each its own id space);
    ``napi_id``: the NAPI instance that serves it, None where the driver does not link its
    queues to NAPIs (netif_queue_set_napi: veth does not)."""

    kind: str
    id: int
    napi_id: int | None


@dataclass(frozen=True, slots=True)
class Napi:
    """One NAPI instance (netdev napi-get, 6.8+). ``irq``: the interrupt that schedules it,
    None where the driver did not say (netif_napi_set_irq: virtio_net and veth do not);
    ``pid``: its kernel thread in threaded mode, None in softirq mode."""

    id: int
    irq: int | None
    pid: int | None


@dataclass(frozen=True, slots=True)
class QueueStats:
    """The qstats of one queue (qstats-get with scope queue, 6.9+): ``stats`` maps the
    netdev.yaml names (:data:`QSTATS`) to values, only those the driver filled. Per queue
    the kernel counts "since the last reconfiguration" and only active queues: they need
    not add up to the device's totals."""

    kind: str
    id: int
    stats: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class NetdevQueues:
    """What the netdev generic netlink family said about one interface. ``queues`` /
    ``napis``: None when not read (a kernel without queue-get / napi-get); ``queue_stats``:
    per queue; ``stats``: device scope, rx and tx together (the queues' counts plus what the
    driver keeps for queues gone since); None when the driver has no qstats
    (netdev_stat_ops: veth has none, virtio_net since 6.10)."""

    queues: tuple[NetdevQueue, ...] | None
    napis: tuple[Napi, ...] | None
    queue_stats: tuple[QueueStats, ...] = ()
    stats: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class Irq:
    """One interrupt of an interface's device. ``name``: its action name(s) (the last column
    of /proc/interrupts, /sys/kernel/irq/<n>/actions), e.g. ``mlx5_comp3@pci:0000:17:00.0``
    or ``ice-ens1f0-TxRx-3``; ``counters``: interrupts taken per CPU, index = CPU number,
    the kernel's unsigned int counts since boot (32 bits: they wrap); None: not read.
    ``affinity`` / ``effective``: CPUs of /proc/irq/<n>/smp_affinity_list (where it may go)
    and effective_affinity_list (where the interrupt controller delivers it, 4.13+); None:
    not readable (a kernel without the file, an interrupt without affinity)."""

    irq: int
    name: str | None
    counters: tuple[int, ...] | None
    affinity: tuple[int, ...] | None
    effective: tuple[int, ...] | None


# Columns of /proc/net/softnet_stat nicwatch keeps (net/core/net-procfs.c softnet_seq_show),
# in SoftnetCpu.counters order. Each is the kernel's unsigned int, so it wraps at 2^32.
SOFTNET_FIELDS = ("processed", "dropped", "time_squeeze", "received_rps", "flow_limit_count")


@dataclass(frozen=True, slots=True)
class SoftnetCpu:
    """One CPU's line of /proc/net/softnet_stat: ``counters`` in :data:`SOFTNET_FIELDS`
    order (None where this kernel prints no such column)."""

    cpu: int
    counters: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class ReceivePath:
    """The receive path of one interface as procfs and sysfs show it.

    ``irqs``: the interrupts of its device (its PCI function's ``msi_irqs``, else its
    legacy ``irq``) and of its NAPI instances; ``irqs_from``: where their numbers came from
    (``msi_irqs``, ``irq``, ``napi``, joined by ``+``; ``""``: none found). ``rps``: rx
    queue -> CPUs of its non-empty ``queues/rx-<n>/rps_cpus`` mask (receive packet steering:
    those CPUs process the queue's packets after the interrupt). ``softnet``: the
    softnet_stat lines of the CPUs that serve it (its interrupts' effective affinity, else
    their affinity, and its RPS CPUs). ``cpu_nodes``: CPU -> NUMA node for the whole host
    (one shared object), empty when the host shows no nodes."""

    irqs: tuple[Irq, ...]
    irqs_from: str
    rps: tuple[tuple[int, tuple[int, ...]], ...] = ()
    softnet: tuple[SoftnetCpu, ...] = ()
    cpu_nodes: Mapping[int, int] = field(default_factory=_no_nodes)


@dataclass(frozen=True, slots=True)
class SourceRun:
    """How one source's read went in one poll: ``up`` unless it raised or reported a failure
    as a whole (an error for device ""); ``seconds`` it took (wall clock)."""

    source: str
    up: bool
    seconds: float


@dataclass(frozen=True, slots=True)
class BondMember:
    """An interface enslaved to a Linux bond (sysfs ``bonding_slave/``): the bond's name and
    mode (``active-backup``, ``802.3ad``, ... as ``bonding/mode`` names it), the member's state
    in it (``active`` or ``backup``) and its link as the bond monitors it (``mii_status``:
    ``up``, ``going down``, ``down``, ``going back``). None where a file was unreadable."""

    bond: str
    mode: str | None
    state: str | None
    mii_status: str | None


@dataclass(frozen=True, slots=True)
class HwmonTemperature:
    """One temperature channel (``tempN_*``) of a NIC's hwmon device, in degrees Celsius
    (the files hold millidegrees). ``label``: ``tempN_label`` (mlx5: the firmware's sensor
    name, ``asic``, ``Module0``), else ``tempN``. ``highest``: the highest value since the
    history was reset (mlx5 ``tempN_highest``); ``warning``, ``critical``, ``emergency``,
    ``shutdown``: the driver's thresholds (``tempN_max``, ``_crit``, ``_emergency``, bnxt's
    ``temp1_shutdown``). None where the driver has no such file or it was unreadable."""

    channel: int
    label: str
    celsius: float | None
    highest: float | None = None
    warning: float | None = None
    critical: float | None = None
    emergency: float | None = None
    shutdown: float | None = None


@dataclass(frozen=True, slots=True)
class NicHwmon:
    """The hwmon device a NIC driver registered under a PCI function (mlx5, bnxt_en, ice:
    ``hwmon_device_register_with_info`` on the function's device): ``hwmon`` its directory
    name (``hwmon3``), ``name`` its ``name`` file (the driver: ``mlx5``, ``bnxt_en``,
    ``ice``), ``pci_address`` the function it hangs under (another function of the same card
    for an interface whose own function has none: ice registers on PF 0 only)."""

    hwmon: str
    name: str
    pci_address: str
    temperatures: tuple[HwmonTemperature, ...]


@dataclass(frozen=True, slots=True)
class DevlinkVersion:
    """One version a devlink instance reports (``devlink dev info``): ``slot`` running (what
    the device runs now), stored (what it will run after activation: the flashed image) or
    fixed (hardware identity: board, ASIC, PSID); ``name`` the component (``fw.version``,
    ``fw.mgmt``, ``fw.psid``, ...), ``value`` as the driver prints it."""

    slot: str
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class DevlinkInfo:
    """``DEVLINK_CMD_INFO_GET`` of one devlink instance: its handle, driver name and serial
    number where reported, and its versions in the kernel's order."""

    handle: str
    driver: str | None
    serial: str | None
    versions: tuple[DevlinkVersion, ...]


@dataclass(frozen=True, slots=True)
class SourceError:
    """A source that failed for one interface in one poll. ``kind`` is stable (an errno
    name such as ``ENODEV``, or ``parse``); ``message`` is for people."""

    source: str
    kind: str
    message: str


class ReadingParts(TypedDict, total=False):
    """The fields of a :class:`Reading` the sources fill: the typed hand-off between the
    sources and the collector (``sources.Poll.put`` checks each part against these types; the
    collector builds the Reading from them). A key is absent until a source put it. Every
    field of Reading but the collector's own (device, time, monotonic, netclass, errors) is
    here with the same type, and nothing else (tests/unit/test_model.py)."""

    driver_info: DriverInfo | None
    perm_address: str | None
    stats: StatSet | None
    rings: Rings | None
    channels: Channels | None
    netlink: EthtoolNetlinkInfo | None
    pcie: PciePath | None
    rdma: tuple[RdmaPort, ...]
    dcb_pfc: IeeePfc | None
    dcb_qos: DcbQos | None
    roce_ecn: RoceEcn | None
    devlink_port: DevlinkPort | None
    devlink_health: tuple[DevlinkHealthReporter, ...]
    module: ModuleEeprom | None
    module_read: ModuleReadStatus | None
    sriov: SriovState | None
    devlink_vf_ports: int | None
    mlx5_trust: str | None
    bond: BondMember | None
    queues: NetdevQueues | None
    rxpath: ReceivePath | None
    hwmon: NicHwmon | None
    devlink_info: DevlinkInfo | None
    lldp: LldpPort | None
    dcb_peer: DcbPeer | None


class HostParts(TypedDict, total=False):
    """Host-wide values the sources read in one poll (``sources.Poll.put_host``)."""

    softirq_seconds: tuple[float, ...]  # cumulative softirq seconds per CPU, by CPU number
    rdma_ports: tuple[RdmaPort, ...]  # every RDMA port read, with or without a netdev
    softnet: tuple[SoftnetCpu, ...]  # /proc/net/softnet_stat, every online CPU


@dataclass(frozen=True, slots=True)
class Reading:
    """Everything the sources returned for one interface in one poll, unnormalized."""

    device: str
    time: float  # wall clock, seconds since the epoch
    monotonic: float  # time.monotonic() at the read
    netclass: NetClass
    driver_info: DriverInfo | None = None
    perm_address: str | None = None
    stats: StatSet | None = None
    rings: Rings | None = None
    channels: Channels | None = None
    netlink: EthtoolNetlinkInfo | None = None
    pcie: PciePath | None = None  # the PCI function and every port above it
    rdma: tuple[RdmaPort, ...] = ()  # RDMA ports whose netdev this is
    dcb_pfc: IeeePfc | None = None  # IEEE PFC configuration (dcbnl); None: not reported
    dcb_qos: DcbQos | None = None  # ETS, APP table, trust (dcbnl); None: no DCB support
    roce_ecn: RoceEcn | None = None  # vendor mlx5 ecn/ sysfs tree; None: not there
    devlink_port: DevlinkPort | None = None  # the devlink port whose netdev this is
    devlink_health: tuple[DevlinkHealthReporter, ...] = ()  # reporters of its device and port
    module: ModuleEeprom | None = None  # module EEPROM; None: not read, unsupported or opt-in off
    module_read: ModuleReadStatus | None = None  # module collector state; None: opt-in off
    sriov: SriovState | None = None  # SR-IOV PF and its VFs (--collector.vfs); None: not read
    # pci_vf-flavour devlink ports of its devlink instance (VF representors: the e-switch is
    # in switchdev mode); None: devlink ports not read or no instance for its PCI function
    devlink_vf_ports: int | None = None
    mlx5_trust: str | None = None  # vendor mlx5 qos/trust file ("dscp", "pcp"); None: absent
    bond: BondMember | None = None  # the bond this interface is a member of; None: none
    queues: NetdevQueues | None = None  # netdev generic netlink; None: not read
    rxpath: ReceivePath | None = None  # interrupts, RPS and softnet; None: not read
    hwmon: NicHwmon | None = None  # ASIC temperature sensors (hwmon); None: none
    devlink_info: DevlinkInfo | None = None  # devlink dev info of its instance; None: none
    lldp: LldpPort | None = None  # passive LLDP receiver (--collector.lldp); None: off
    dcb_peer: DcbPeer | None = None  # dcbnl IEEE peer attributes; None: not reported
    errors: tuple[SourceError, ...] = ()


Labels = tuple[tuple[str, str], ...]


def scaled(raw: float, scale: float) -> float:
    """``raw`` in base units. Divides for sub-unit scales so that 1834567 us reads 1.834567 s,
    not 1.8345669999999998."""
    if scale < 1:
        return raw / round(1 / scale)
    return raw * scale


class SeriesKey(NamedTuple):
    """One time series of one interface: metric family name plus sorted extra labels
    (the ``device`` label is implicit). A named tuple, so that hashing, equality and
    order (by metric, then labels) run in C: keys are hashed and compared on every series
    of every poll (tracker, history, render)."""

    metric: str
    labels: Labels = ()


class CounterValue(NamedTuple):
    """A cumulative counter as read: raw integer in the source's unit.

    ``width`` is the hardware width (32 or 64 bits) used for wrap extension; ``scale``
    converts the raw unit to the exported base unit (e.g. 1e-6 for microseconds).
    ``saturates``: the counter stops at ``2**width - 1`` instead of wrapping (the IB PMA
    PortCounters of ``counters/``): at that value it is saturated, its increase since then
    unknown; a fall is a reset (someone cleared it), never a wrap.

    A named tuple, as SeriesKey: one is made for every counter series that moved, every
    poll (thousands on a host of ConnectX ports), and a named tuple is made in C, four
    times faster than a frozen dataclass.
    """

    raw: int
    source: str
    width: int = 64
    scale: float = 1.0
    saturates: bool = False

    @property
    def saturated(self) -> bool:
        return self.saturates and self.raw >= (1 << self.width) - 1

    @property
    def value(self) -> float:
        return scaled(self.raw, self.scale)


@dataclass(frozen=True, slots=True)
class NicIdentity:
    """Who a NIC is. The PCI function and permanent MAC identify it; the name is a label."""

    device: str
    ifindex: int | None
    driver: str | None
    driver_version: str | None
    firmware_version: str | None
    pci_address: str | None
    perm_address: str | None
    address: str | None


@dataclass(frozen=True, slots=True)
class ModuleState:
    """A port's pluggable module as normalize resolved it from the decoded EEPROM and the
    collector's read status. None: not read, not reported or not decoded."""

    read_state: str | None = None  # a MODULE_STATES name; "corrupt": checksums fail
    read_at: float | None = None  # wall clock of the EEPROM shown
    temperature_celsius: float | None = None
    temperature_high_warning_celsius: float | None = None


@dataclass(frozen=True, slots=True)
class NicState:
    """One interface's link, configuration, PCIe and module state, resolved once in normalize
    from every source that reports it (nicwatch.normalize.state: ethtool netlink rings and
    channels win over the ioctl's). The state gauges are rendered from it, and consumers and
    views read it instead of decoding gauges. None: not reported."""

    up: bool | None = None  # operstate "up"; None: no operstate
    carrier: bool | None = None
    mtu: int | None = None
    speed_mbps: int | None = None
    full_duplex: bool | None = None  # None: duplex unknown
    lanes: int | None = None  # lanes of the link mode (LINKMODES_GET)
    rings: Rings | None = None
    channels: Channels | None = None
    fec: FecParams | None = None
    pause: PauseParams | None = None
    pcie_link: PcieLink | None = None  # the NIC function's own link (hop 0 of its path)
    module: ModuleState | None = None


@dataclass(frozen=True, slots=True)
class Sample:
    """One interface after normalization: canonical counters and gauges for one poll."""

    identity: NicIdentity
    time: float
    monotonic: float
    counters: Mapping[SeriesKey, CounterValue]
    gauges: Mapping[SeriesKey, float]
    supported: frozenset[str]  # canonical counter families this interface provides
    stats_generation: int | None  # StatSet.generation, to detect a changed stat set
    reading: Reading = field(repr=False, compare=False)  # the raw record; use the lookups below
    pcie_verdict: PcieVerdict | None = None  # derived after reading, across NICs sharing a link
    state: NicState = NicState()  # resolved in normalize; read this, not the gauges

    # Lookups for consumers and views, so none reaches into the raw reading.

    @property
    def netclass(self) -> NetClass:
        """Link state and netdev attributes (sysfs)."""
        return self.reading.netclass

    @property
    def pcie(self) -> PciePath | None:
        """The PCI function and every port above it; None: not a PCI device."""
        return self.reading.pcie

    @property
    def local_cpus(self) -> tuple[int, ...] | None:
        """CPUs local to the NIC's PCI function (its local_cpulist)."""
        path = self.reading.pcie
        return path.hops[0].local_cpus if path and path.hops else None

    @property
    def rdma_ports(self) -> tuple[RdmaPort, ...]:
        """The RDMA ports whose netdev this interface is (their own series are in
        RdmaSamples)."""
        return self.reading.rdma

    @property
    def rx_cpus(self) -> tuple[int, ...]:
        """CPUs serving the NIC's receive path: its interrupts' effective affinity and its
        RPS CPUs (those whose softnet lines its receive path reading holds)."""
        rx = self.reading.rxpath
        return tuple(row.cpu for row in rx.softnet) if rx is not None else ()

    @property
    def raw_stats(self) -> StatSet | None:
        """The driver's `ethtool -S` statistics as read."""
        return self.reading.stats

    @property
    def errors(self) -> tuple[SourceError, ...]:
        """Sources that failed for this interface in this poll."""
        return self.reading.errors

    def counter(self, metric: str) -> float | None:
        """A counter family summed over its labels (base units); None: absent."""
        values = [cv.value for k, cv in self.counters.items() if k.metric == metric]
        return sum(values) if values else None

    def gauge(self, metric: str, **labels: str) -> float | None:
        """The gauge series of ``metric`` with exactly ``labels``; None: absent."""
        want = tuple(sorted(labels.items()))
        return next((v for k, v in self.gauges.items() if k.metric == metric and k.labels == want),
                    None)


@dataclass(frozen=True, slots=True)
class RdmaSample:
    """One RDMA port after normalization: its canonical counters and gauges, keyed by series
    whose labels include ``rdma_device`` and ``port`` (the netdev, where the port has one,
    is the ``device`` label the exporter adds). ``port`` is the raw record."""

    port: RdmaPort
    time: float
    monotonic: float
    counters: Mapping[SeriesKey, CounterValue]
    gauges: Mapping[SeriesKey, float]

    @property
    def key(self) -> str:
        return self.port.key

    @property
    def netdev(self) -> str | None:
        return self.port.netdev


@dataclass(frozen=True, slots=True)
class ExtraFamily:
    """A family from a consumer other than the tracker (expectations, identity, CPU load)."""

    name: str
    type: str
    help: str
    series: tuple[tuple[tuple[tuple[str, str], ...], float], ...]
