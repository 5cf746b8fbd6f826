"""The other end of each link in `nicwatch show`: the LLDP receiver's state, the neighbour,
and the peer's PFC priorities and RoCE priority beside the port's own (docs/fabric.md)."""

from __future__ import annotations

from nicwatch.model import Sample
from nicwatch.normalize.fabric import own_roce_priority, peer_pfc, peer_roce_priority

FABRIC_HEADERS = ["DEVICE", "LLDP", "NEIGHBOUR", "PFC HERE / PEER", "ROCE PRIO HERE / PEER"]

STATE_NOTES = {"not_permitted": "no CAP_NET_RAW", "failed": "socket failed"}


def _priorities(enabled: tuple[int, ...] | None) -> str:
    if enabled is None:
        return "-"
    return ",".join(map(str, enabled)) if enabled else "none"


def fabric_row(s: Sample) -> list[str] | None:
    """One port's row; None when neither the LLDP receiver (--collector.lldp) nor the
    driver's peer attributes say anything of the other end."""
    reading = s.reading
    if reading.lldp is None and reading.dcb_peer is None:
        return None
    lldp = reading.lldp
    if lldp is None:
        state, neighbour = "off", "-"
    else:
        note = lldp.firmware_detail or STATE_NOTES.get(lldp.state)
        state = lldp.state + (f" ({note})" if note else "")
        if lldp.neighbors:
            n = lldp.neighbors[-1]
            neighbour = " ".join(x for x in (n.system_name, n.port_id, f"(chassis {n.chassis_id})")
                                 if x)
            if len(lldp.neighbors) > 1:
                neighbour += f" +{len(lldp.neighbors) - 1} more"
        else:
            neighbour = "none yet (LLDP agents send every 30s)"
    own = reading.dcb_pfc.enabled if reading.dcb_pfc is not None else None
    peer = peer_pfc(reading)
    pfc = f"{_priorities(own)} / " + (f"{_priorities(peer[0])} ({peer[1]})" if peer else "-")
    if own is not None and peer is not None and set(own) != set(peer[0]):
        pfc += " MISMATCH"
    own_roce, peer_roce = own_roce_priority(reading), peer_roce_priority(reading)
    roce = ("-" if own_roce is None else str(own_roce)) + " / " + (
        f"{peer_roce[0]} ({peer_roce[1]})" if peer_roce else "-")
    if own_roce is not None and peer_roce is not None and own_roce != peer_roce[0]:
        roce += " MISMATCH"
    return [s.identity.device, state, neighbour, pfc, roce]
