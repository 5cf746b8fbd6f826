"""Records of the ethtool interfaces: driver info, statistic sets, rings, channels, pause,
FEC and link state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


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
