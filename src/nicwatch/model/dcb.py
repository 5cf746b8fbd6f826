"""Records of DCB and the other end of the wire: PFC, ETS, the application table, DCBX,
LLDP neighbours and RoCE ECN."""

from __future__ import annotations

from dataclasses import dataclass


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
