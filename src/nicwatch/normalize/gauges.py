"""Gauges and identity that come straight from a Reading's configuration fields."""

from __future__ import annotations

from functools import lru_cache

from nicwatch.metrics import (
    BOND_INFO,
    BOND_MEMBER_ACTIVE,
    CANONICAL_COUNTERS,
    CARRIER,
    CHANNELS,
    CHANNELS_MAX,
    ETS_PRIORITY_TC,
    ETS_TC_BANDWIDTH_RATIO,
    ETS_TC_TSA_INFO,
    FEC_MODE_INFO,
    INFO,
    LINK_DOWN_REASON,
    LINK_FULL_DUPLEX,
    LINK_LANES,
    LINK_SPEED_BYTES_PER_SECOND,
    LINK_UP,
    MTU_BYTES,
    PAUSE_AUTONEG,
    PAUSE_ENABLED,
    PFC_ENABLED,
    QOS_DSCP_PRIORITY,
    QOS_TRUST_INFO,
    RING_DESCRIPTORS,
    RING_MAX_DESCRIPTORS,
    ROCE_CNP_DSCP,
    ROCE_CNP_PRIORITY,
    ROCE_ECN_ENABLED,
    STAT_SUPPORTED,
)
from nicwatch.model import (
    DcbQos,
    EthtoolNetlinkInfo,
    Labels,
    NicIdentity,
    NicState,
    Reading,
    SeriesKey,
)
from nicwatch.normalize.state import nic_state


def identity_of(reading: Reading, driver: str | None) -> NicIdentity:
    nc, di = reading.netclass, reading.driver_info
    return NicIdentity(
        device=reading.device,
        ifindex=nc.ifindex,
        driver=driver,
        driver_version=di.version if di else None,
        firmware_version=di.firmware_version if di else None,
        pci_address=nc.pci_address,
        perm_address=reading.perm_address,
        address=nc.address,
    )


# Keys that are the same for every interface and poll, built once.
_SUPPORTED_KEYS = tuple((name, SeriesKey(STAT_SUPPORTED.name, (("counter", name),)))
                        for name in CANONICAL_COUNTERS)


def _put(out: dict[SeriesKey, float], metric: str, value: float | None,
         labels: Labels = ()) -> None:
    if value is not None:
        out[SeriesKey(metric, tuple(labels))] = float(value)


# Keys with fixed labels, built once (a SeriesKey is built in Python, a lookup is not).
_LINK_UP, _CARRIER, _MTU = (SeriesKey(LINK_UP.name), SeriesKey(CARRIER.name),
                            SeriesKey(MTU_BYTES.name))
_SPEED, _DUPLEX = SeriesKey(LINK_SPEED_BYTES_PER_SECOND.name), SeriesKey(LINK_FULL_DUPLEX.name)
_RINGS = tuple((ring, f"{ring}_max", SeriesKey(RING_DESCRIPTORS.name, (("ring", ring),)),
                SeriesKey(RING_MAX_DESCRIPTORS.name, (("ring", ring),))) for ring in ("rx", "tx"))
_CHANNELS = tuple((kind, f"{kind}_max", SeriesKey(CHANNELS.name, (("type", kind),)),
                   SeriesKey(CHANNELS_MAX.name, (("type", kind),)))
                  for kind in ("rx", "tx", "other", "combined"))
_PFC = tuple((p, SeriesKey(PFC_ENABLED.name, (("priority", str(p)),))) for p in range(8))


SEL_DSCP, SEL_PCP = 5, 255  # IEEE_8021QAZ_APP_SEL_DSCP, DCB_APP_SEL_PCP
TRUST_NAMES = {SEL_DSCP: "dscp", SEL_PCP: "pcp"}


def trust_of(qos: DcbQos | None, mlx5_trust: str | None = None) -> tuple[str, str] | None:
    """(trust, source) of one port, the first source that has it: the dcbnl app-trust table
    (its first selector: dscp, pcp or the selector number; ``none`` for a table with no
    selector, which trusts neither field), the vendor mlx5 ``qos/trust`` file (what mlnx_qos
    reads and writes where it exists), else the dcbnl APP table (dscp when it has DSCP
    entries, else pcp). None without either."""
    if qos is not None and qos.apptrust is not None:
        first = qos.apptrust[0] if qos.apptrust else None
        trust = "none" if first is None else TRUST_NAMES.get(first, str(first))
        return trust, "dcbnl_apptrust"
    if mlx5_trust is not None:
        return mlx5_trust, "mlx5_sysfs"
    if qos is not None:
        return ("dscp" if any(a.selector == SEL_DSCP for a in qos.apps) else "pcp",
                "dcbnl_app_table")
    return None


def _qos_gauges(out: dict[SeriesKey, float], qos: DcbQos) -> None:
    for app in qos.apps:
        if app.selector == SEL_DSCP:
            _put(out, QOS_DSCP_PRIORITY.name, app.priority, (("dscp", str(app.protocol)),))
    if qos.ets is not None:
        for priority, tc in enumerate(qos.ets.prio_tc):
            _put(out, ETS_PRIORITY_TC.name, tc, (("priority", str(priority)),))
        for tc, (bw, tsa) in enumerate(zip(qos.ets.tc_tx_bw, qos.ets.tc_tsa, strict=True)):
            _put(out, ETS_TC_BANDWIDTH_RATIO.name, bw / 100, (("tc", str(tc)),))
            _put(out, ETS_TC_TSA_INFO.name, 1, (("tc", str(tc)), ("tsa", tsa)))


def reading_gauges(reading: Reading, driver: str | None, supported: frozenset[str],
                   state: NicState | None = None) -> dict[SeriesKey, float]:
    """The gauges of a Reading's configuration; link, rings, channels, FEC, pause and lanes
    rendered from its resolved ``state`` (normalize.state.nic_state)."""
    if state is None:
        state = nic_state(reading)
    nc, di = reading.netclass, reading.driver_info
    out: dict[SeriesKey, float] = {}
    info = (("driver", driver or ""), ("driver_version", di.version if di else ""),
            ("firmware_version", di.firmware_version if di else ""),
            ("mac", nc.address or ""), ("pci_address", nc.pci_address or ""),
            ("perm_mac", reading.perm_address or ""),
            ("rdma_device", ",".join(sorted({p.device for p in reading.rdma}))))
    _put(out, INFO.name, 1, info)
    if state.up is not None:
        out[_LINK_UP] = float(state.up)
    if state.carrier is not None:
        out[_CARRIER] = float(state.carrier)
    if state.mtu is not None:
        out[_MTU] = float(state.mtu)
    if state.speed_mbps is not None:
        out[_SPEED] = float(state.speed_mbps * 125_000)
    if state.full_duplex is not None:
        out[_DUPLEX] = float(state.full_duplex)
    rings = state.rings
    if rings:
        for ring, ring_max, key, key_max in _RINGS:
            if (value := getattr(rings, ring)) is not None:
                out[key] = float(value)
            if (value := getattr(rings, ring_max)) is not None:
                out[key_max] = float(value)
    channels = state.channels
    if channels:
        for kind, kind_max, key, key_max in _CHANNELS:
            if (value := getattr(channels, kind)) is not None:
                out[key] = float(value)
            if (value := getattr(channels, kind_max)) is not None:
                out[key_max] = float(value)
    if reading.bond is not None:
        bond = reading.bond
        _put(out, BOND_INFO.name, 1, (("bond", bond.bond), ("mode", bond.mode or "")))
        if bond.state in ("active", "backup"):
            _put(out, BOND_MEMBER_ACTIVE.name, bond.state == "active", (("bond", bond.bond),))
    fec = state.fec
    if fec:
        _put(out, FEC_MODE_INFO.name, 1, (("active", fec.active or ""),
                                           ("configured", ",".join(fec.configured))))
    if state.lanes is not None:
        _put(out, LINK_LANES.name, state.lanes, ())
    if reading.netlink is not None:
        _link_down_reason(out, reading.netlink)
    if reading.dcb_pfc is not None:
        enabled = reading.dcb_pfc.enabled
        for priority, key in _PFC:
            out[key] = float(priority in enabled)
    if (trust := trust_of(reading.dcb_qos, reading.mlx5_trust)) is not None:
        _put(out, QOS_TRUST_INFO.name, 1, (("source", trust[1]), ("trust", trust[0])))
    if reading.dcb_qos is not None:
        _qos_gauges(out, reading.dcb_qos)
    if reading.roce_ecn is not None:
        ecn = reading.roce_ecn
        for point, states in (("rp", ecn.rp_enabled), ("np", ecn.np_enabled)):
            for priority, on in enumerate(states):
                _put(out, ROCE_ECN_ENABLED.name, on,
                     (("point", point), ("priority", str(priority))))
        _put(out, ROCE_CNP_DSCP.name, ecn.cnp_dscp)
        _put(out, ROCE_CNP_PRIORITY.name, ecn.cnp_802p_prio)
    pause = state.pause
    if pause:
        _put(out, PAUSE_AUTONEG.name, pause.autoneg)
        _put(out, PAUSE_ENABLED.name, pause.rx, (("direction", "rx"),))
        _put(out, PAUSE_ENABLED.name, pause.tx, (("direction", "tx"),))
    out.update(_supported_flags(supported))
    return out


# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=256)
def _supported_flags(supported: frozenset[str]) -> tuple[tuple[SeriesKey, float], ...]:
    """nic_stat_supported of one set of supported families: the same few sets every poll."""
    return tuple((key, float(name in supported)) for name, key in _SUPPORTED_KEYS)


def _link_down_reason(out: dict[SeriesKey, float], netlink: EthtoolNetlinkInfo) -> None:
    """Why the link is down (docs/link-physics.md): a reason only while the driver reports
    the link not detected."""
    state = netlink.linkstate
    if state is not None and state.ext_state is not None and state.link is not True:
        _put(out, LINK_DOWN_REASON.name, 1, (("reason", state.ext_state),
                                              ("subreason", state.ext_substate or "")))
