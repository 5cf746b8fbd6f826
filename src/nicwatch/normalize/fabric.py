"""The other end of each link: LLDP neighbour, peer DCBX and this port's own LLDP identity
as gauges and counters (docs/fabric.md). Reads the ``lldp`` and ``dcb_peer`` parts of a
Reading and the port's own ``dcb_pfc``/``dcb_qos``."""

from __future__ import annotations

from nicwatch.metrics import (
    LLDP_DROPPED_FRAMES,
    LLDP_FRAMES,
    LLDP_LOCAL_INFO,
    LLDP_MALFORMED_FRAMES,
    LLDP_NEIGHBOR_AGE_SECONDS,
    LLDP_NEIGHBOR_INFO,
    LLDP_NEIGHBOR_TTL_SECONDS,
    LLDP_PEER_DCBX_MISMATCH,
    LLDP_PEER_PFC_ENABLED,
    LLDP_PEER_ROCE_PRIORITY,
    LLDP_RECEIVE_STATE,
    QOS_ROCE_PRIORITY,
)
from nicwatch.model import CounterValue, Reading, SeriesKey
from nicwatch.normalize.lldp import roce_priority

RECEIVE_STATES = ("ok", "starting", "not_permitted", "firmware_agent", "failed")


def peer_pfc(reading: Reading) -> tuple[tuple[int, ...], str] | None:
    """(PFC-enabled priorities, source) the link peer announces: its LLDP PFC TLV (the
    first neighbour that sent one), else the driver's dcbnl peer attribute."""
    lldp = reading.lldp
    for neighbor in lldp.neighbors if lldp is not None else ():
        if neighbor.pfc is not None:
            return neighbor.pfc.enabled, "lldp"
    if reading.dcb_peer is not None and reading.dcb_peer.pfc is not None:
        return reading.dcb_peer.pfc.enabled, "dcbnl"
    return None


def peer_roce_priority(reading: Reading) -> tuple[int, str] | None:
    """(priority, source) the link peer's application table gives RoCE, as peer_pfc."""
    lldp = reading.lldp
    for neighbor in lldp.neighbors if lldp is not None else ():
        if neighbor.apps is not None and (p := roce_priority(neighbor.apps)) is not None:
            return p, "lldp"
    if reading.dcb_peer is not None and reading.dcb_peer.apps is not None:
        p = roce_priority(reading.dcb_peer.apps)
        if p is not None:
            return p, "dcbnl"
    return None


def own_roce_priority(reading: Reading) -> int | None:
    return roce_priority(reading.dcb_qos.apps) if reading.dcb_qos is not None else None


def fabric_gauges(reading: Reading) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    lldp = reading.lldp
    if lldp is not None:
        for state in RECEIVE_STATES:
            out[SeriesKey(LLDP_RECEIVE_STATE.name, (("state", state),))] = float(
                lldp.state == state)
        if lldp.local_chassis_id and lldp.local_port_id:
            out[SeriesKey(LLDP_LOCAL_INFO.name, (("chassis_id", lldp.local_chassis_id),
                                                 ("port_id", lldp.local_port_id)))] = 1.0
        for n in lldp.neighbors:
            ids = (("chassis_id", n.chassis_id), ("port_id", n.port_id))
            out[SeriesKey(LLDP_NEIGHBOR_INFO.name, (
                *ids, ("chassis_id_subtype", n.chassis_id_subtype),
                ("port_id_subtype", n.port_id_subtype), ("system_name", n.system_name or ""),
                ("port_description", n.port_description or ""),
                ("management_address", n.management_address or "")))] = 1.0
            out[SeriesKey(LLDP_NEIGHBOR_AGE_SECONDS.name, ids)] = max(
                0.0, reading.time - n.received_at)
            out[SeriesKey(LLDP_NEIGHBOR_TTL_SECONDS.name, ids)] = float(n.ttl)
    own_roce = own_roce_priority(reading)
    if own_roce is not None:
        out[SeriesKey(QOS_ROCE_PRIORITY.name)] = float(own_roce)
    pfc = peer_pfc(reading)
    if pfc is not None:
        enabled, source = pfc
        for priority in range(8):
            out[SeriesKey(LLDP_PEER_PFC_ENABLED.name, (("priority", str(priority)),
                                                       ("source", source)))] = float(
                priority in enabled)
        if reading.dcb_pfc is not None:
            out[SeriesKey(LLDP_PEER_DCBX_MISMATCH.name, (("setting", "pfc"),))] = float(
                set(enabled) != set(reading.dcb_pfc.enabled))
    roce = peer_roce_priority(reading)
    if roce is not None:
        out[SeriesKey(LLDP_PEER_ROCE_PRIORITY.name, (("source", roce[1]),))] = float(roce[0])
        if own_roce is not None:
            out[SeriesKey(LLDP_PEER_DCBX_MISMATCH.name, (("setting", "roce_priority"),))] = (
                float(own_roce != roce[0]))
    return out


def fabric_counters(reading: Reading) -> dict[SeriesKey, CounterValue]:
    lldp = reading.lldp
    if lldp is None:
        return {}
    return {SeriesKey(family.name): CounterValue(value, "lldp") for family, value in (
        (LLDP_FRAMES, lldp.frames), (LLDP_MALFORMED_FRAMES, lldp.malformed),
        (LLDP_DROPPED_FRAMES, lldp.dropped))}
