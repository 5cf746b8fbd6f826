"""LLDPDUs (IEEE 802.1AB-2016) and the IEEE 802.1Qaz DCBX TLVs they carry, decoded.

Pure: bytes in, :class:`~nicwatch.model.LldpNeighbor` out, no I/O. The passive receiver
(sources/lldp.py) hands each frame it accepts to :func:`decode_frame` on its own thread.
Every input either decodes or raises :class:`LldpError` (a ValueError) with one line naming
what is wrong; nothing else escapes (tests/unit/normalize/test_lldp_decode.py fuzzes it).

An LLDPDU is a sequence of TLVs: a 16-bit header of a 7-bit type and a 9-bit length, then
that many bytes. 802.1AB 8.2 requires Chassis ID (1), Port ID (2) and Time To Live (3) first,
in that order; End Of LLDPDU (0) ends it (optional since 802.1AB-2009: the frame may just
end). The optional TLVs read here: Port Description (4), System Name (5), Management
Address (8) and Organizationally Specific (127) with the IEEE 802.1 OUI 00-80-C2 and
802.1Qaz-2011 (Annex D) subtypes:

* 0x09 ETS Configuration: willing (bit 7), CBS (bit 6), max TCs (bits 2-0, 0 meaning 8);
  the priority assignment table (8 x 4 bits, priority 0 in the high nibble of the first
  byte); TC bandwidth (8 x 1 byte, percent); TSA (8 x 1 byte: 0 strict, 1 CBS, 2 ETS, 255
  vendor).
* 0x0A ETS Recommendation: one reserved byte, then the same three tables.
* 0x0B PFC Configuration: willing (bit 7), MBC (bit 6), PFC capability (bits 3-0); the PFC
  enable vector (bit n: priority n).
* 0x0C Application Priority: one reserved byte, then 3-byte entries: priority (bits 7-5),
  selector (bits 2-0), a 16-bit protocol id (1 EtherType, 2 TCP/SCTP port, 3 UDP/DCCP port,
  4 TCP/SCTP/UDP/DCCP port, 5 DSCP).

Values the frame controls are bounded before they leave: text is decoded as UTF-8 with
replacement and cut to :data:`MAX_TEXT` characters, ids other than MACs and addresses are
rendered as text when printable, else as hex of at most :data:`MAX_ID_BYTES` bytes.
"""

from __future__ import annotations

import ipaddress
import struct

from nicwatch.model import DcbApp, DcbxEts, DcbxPfc, LldpNeighbor

ETHERTYPE_LLDP = 0x88CC
LLDP_MULTICAST = bytes.fromhex("0180c200000e")  # nearest bridge (802.1AB 7.1)
MIN_FRAME = 14 + 2 * 3 + 2 + 2 + 2  # Ethernet header and the three mandatory TLVs at least
MAX_TEXT = 255  # characters of a name or description (a TLV holds at most 511 bytes)
MAX_ID_BYTES = 64  # chassis and port ids rendered as hex are cut here

TLV_END, TLV_CHASSIS, TLV_PORT, TLV_TTL = 0, 1, 2, 3
TLV_PORT_DESCRIPTION, TLV_SYSTEM_NAME, TLV_MANAGEMENT, TLV_ORG = 4, 5, 8, 127
OUI_8021 = b"\x00\x80\xc2"
QAZ_ETS_CONFIG, QAZ_ETS_RECO, QAZ_PFC, QAZ_APP = 0x09, 0x0A, 0x0B, 0x0C

CHASSIS_SUBTYPES = {1: "chassis_component", 2: "interface_alias", 3: "port_component",
                    4: "mac", 5: "network_address", 6: "interface_name", 7: "local"}
PORT_SUBTYPES = {1: "interface_alias", 2: "port_component", 3: "mac", 4: "network_address",
                 5: "interface_name", 6: "agent_circuit_id", 7: "local"}
TSA_NAMES = {0: "strict", 1: "cbs", 2: "ets", 255: "vendor"}

# Application Priority selectors (802.1Qaz-2011 D.2.10.3 and 802.1Q-2014 D.2.12.3)
SEL_ETHERTYPE, SEL_TCP, SEL_UDP, SEL_PORT, SEL_DSCP = 1, 2, 3, 4, 5
ROCE_V1_ETHERTYPE = 0x8915  # RoCE v1 (InfiniBand over Ethernet)
ROCE_V2_UDP_PORT = 4791  # RoCE v2 (IANA)


class LldpError(ValueError):
    """A frame that is no valid LLDPDU; the message names the first thing wrong."""


def _mac(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def _text(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")[:MAX_TEXT]
    return "".join(c if c.isprintable() else "?" for c in text)


def _network_address(raw: bytes) -> str:
    """IANA address family number, then the address (RFC 3232 / 802.1AB 8.5.2.3)."""
    if len(raw) == 5 and raw[0] == 1:
        return str(ipaddress.IPv4Address(raw[1:]))
    if len(raw) == 17 and raw[0] == 2:
        return str(ipaddress.IPv6Address(raw[1:]))
    if len(raw) == 7 and raw[0] == 6:  # 802 (MAC)
        return _mac(raw[1:])
    return raw[:MAX_ID_BYTES].hex()


def _id(subtype: int, raw: bytes, mac: int, address: int) -> str:
    if not raw:
        raise LldpError("empty id")
    if subtype == mac and len(raw) == 6:
        return _mac(raw)
    if subtype == address:
        return _network_address(raw)
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return raw[:MAX_ID_BYTES].hex()
    return text[:MAX_TEXT] if text.isprintable() else raw[:MAX_ID_BYTES].hex()


def _pat(raw: bytes) -> tuple[int, ...]:
    """The 4-byte priority assignment table: the traffic class of priorities 0..7."""
    return tuple(raw[p // 2] >> (4 if p % 2 == 0 else 0) & 0x0F for p in range(8))


def _ets(body: bytes, config: bool) -> DcbxEts:
    if len(body) != 21:
        raise LldpError(f"ETS {'Configuration' if config else 'Recommendation'} TLV of "
                        f"{len(body) + 4} bytes, not 25")
    flags = body[0]
    return DcbxEts(willing=config and bool(flags & 0x80), cbs=config and bool(flags & 0x40),
                   max_tcs=((flags & 0x07) or 8) if config else 0,
                   prio_tc=_pat(body[1:5]), tc_bw=tuple(body[5:13]),
                   tc_tsa=tuple(TSA_NAMES.get(t, str(t)) for t in body[13:21]))


def _pfc(body: bytes) -> DcbxPfc:
    if len(body) != 2:
        raise LldpError(f"PFC Configuration TLV of {len(body) + 4} bytes, not 6")
    flags, enable = body
    return DcbxPfc(willing=bool(flags & 0x80), mbc=bool(flags & 0x40), capability=flags & 0x0F,
                   enabled=tuple(p for p in range(8) if enable >> p & 1))


def _apps(body: bytes) -> tuple[DcbApp, ...]:
    if len(body) < 1 or (len(body) - 1) % 3:
        raise LldpError(f"Application Priority TLV of {len(body) + 4} bytes: not 5 + 3n")
    return tuple(DcbApp(selector=body[i] & 0x07, priority=body[i] >> 5,
                        protocol=int.from_bytes(body[i + 1:i + 3], "big"))
                 for i in range(1, len(body), 3))


def _management(value: bytes) -> str | None:
    """The address of a Management Address TLV (802.1AB 8.5.9): its string length (subtype
    and address), the address subtype and the address."""
    if len(value) < 2 or not 2 <= value[0] <= 32 or 1 + value[0] > len(value):
        raise LldpError(f"Management Address TLV of {len(value)} bytes with an address "
                        f"length of {value[0] if value else 0}")
    return _network_address(value[1:1 + value[0]])


def tlvs(lldpdu: bytes) -> list[tuple[int, bytes]]:
    """(type, value) of each TLV up to End Of LLDPDU or the end of the frame; LldpError for
    a TLV whose length runs past the frame or a header cut short. Padding after End (an
    Ethernet frame's minimum size) is ignored."""
    out: list[tuple[int, bytes]] = []
    offset = 0
    while offset < len(lldpdu):
        if len(lldpdu) - offset < 2:
            raise LldpError(f"TLV header cut short at byte {offset}")
        (head,) = struct.unpack_from("!H", lldpdu, offset)
        kind, length = head >> 9, head & 0x1FF
        offset += 2
        if kind == TLV_END:
            break
        if offset + length > len(lldpdu):
            raise LldpError(f"TLV type {kind} of {length} bytes at byte {offset - 2} runs "
                            f"{offset + length - len(lldpdu)} bytes past the frame")
        out.append((kind, lldpdu[offset:offset + length]))
        offset += length
    return out


def decode_lldpdu(lldpdu: bytes, received_at: float = 0.0) -> LldpNeighbor:
    """One LLDPDU (the bytes after the EtherType)."""
    items = tlvs(lldpdu)
    kinds = [k for k, _ in items[:3]]
    if kinds != [TLV_CHASSIS, TLV_PORT, TLV_TTL]:
        raise LldpError(f"first TLVs are types {kinds}, not Chassis ID, Port ID, TTL (1, 2, 3)")
    (_, chassis), (_, port), (_, ttl) = items[:3]
    if len(chassis) < 2 or len(port) < 2:
        raise LldpError("Chassis ID or Port ID TLV without an id")
    if len(ttl) != 2:
        raise LldpError(f"TTL TLV of {len(ttl)} bytes, not 2")
    fields: dict[str, object] = {}
    for kind, value in items[3:]:
        if kind in (TLV_CHASSIS, TLV_PORT, TLV_TTL):
            raise LldpError(f"a second TLV of type {kind}")
        if kind == TLV_PORT_DESCRIPTION:
            fields["port_description"] = _text(value)
        elif kind == TLV_SYSTEM_NAME:
            fields["system_name"] = _text(value)
        elif kind == TLV_MANAGEMENT and "management_address" not in fields:
            fields["management_address"] = _management(value)
        elif kind == TLV_ORG and len(value) >= 4 and value[:3] == OUI_8021:
            subtype, body = value[3], value[4:]
            if subtype == QAZ_ETS_CONFIG:
                fields["ets"] = _ets(body, True)
            elif subtype == QAZ_ETS_RECO:
                fields["ets_reco"] = _ets(body, False)
            elif subtype == QAZ_PFC:
                fields["pfc"] = _pfc(body)
            elif subtype == QAZ_APP:
                fields["apps"] = _apps(body)
    return LldpNeighbor(
        chassis_id=_id(chassis[0], chassis[1:], 4, 5),
        chassis_id_subtype=CHASSIS_SUBTYPES.get(chassis[0], str(chassis[0])),
        port_id=_id(port[0], port[1:], 3, 4),
        port_id_subtype=PORT_SUBTYPES.get(port[0], str(port[0])),
        ttl=int.from_bytes(ttl, "big"), received_at=received_at,
        **fields)  # type: ignore[arg-type]


def decode_frame(frame: bytes, received_at: float = 0.0) -> LldpNeighbor:
    """One Ethernet frame as a packet socket reads it (destination, source, EtherType
    0x88cc, LLDPDU; one 802.1Q tag is skipped)."""
    if len(frame) < MIN_FRAME:
        raise LldpError(f"frame of {len(frame)} bytes, shorter than the {MIN_FRAME} of the "
                        "smallest LLDPDU")
    offset = 12
    (ethertype,) = struct.unpack_from("!H", frame, offset)
    if ethertype == 0x8100:
        offset += 4
        (ethertype,) = struct.unpack_from("!H", frame, offset)
    if ethertype != ETHERTYPE_LLDP:
        raise LldpError(f"EtherType {ethertype:#06x}, not LLDP (0x88cc)")
    return decode_lldpdu(frame[offset + 2:], received_at)


def roce_priority(apps: tuple[DcbApp, ...] | None) -> int | None:
    """The priority an application table gives RoCE: RoCE v2 (UDP port 4791 under the UDP or
    any-port selector) first, else RoCE v1 (EtherType 0x8915); None without either."""
    for app in apps or ():
        if app.selector in (SEL_UDP, SEL_PORT) and app.protocol == ROCE_V2_UDP_PORT:
            return app.priority
    for app in apps or ():
        if app.selector == SEL_ETHERTYPE and app.protocol == ROCE_V1_ETHERTYPE:
            return app.priority
    return None


# --- encoding (the tests' sender and `nicwatch` docs examples; never sent by nicwatch) -------


def tlv(kind: int, value: bytes) -> bytes:
    if len(value) > 0x1FF:
        raise ValueError(f"TLV value of {len(value)} bytes, more than 511")
    return struct.pack("!H", kind << 9 | len(value)) + value


def encode_frame(source_mac: bytes, chassis_mac: bytes, port_id: bytes, ttl: int = 120, *,
                 port_subtype: int = 3, system_name: str | None = None,
                 port_description: str | None = None, management_ipv4: str | None = None,
                 pfc: DcbxPfc | None = None, ets: DcbxEts | None = None,
                 apps: tuple[DcbApp, ...] | None = None) -> bytes:
    """An LLDP frame as an LLDP agent sends it (chassis id subtype MAC)."""
    body = [tlv(TLV_CHASSIS, b"\x04" + chassis_mac), tlv(TLV_PORT, bytes([port_subtype]) + port_id),
            tlv(TLV_TTL, struct.pack("!H", ttl))]
    if port_description is not None:
        body.append(tlv(TLV_PORT_DESCRIPTION, port_description.encode()))
    if system_name is not None:
        body.append(tlv(TLV_SYSTEM_NAME, system_name.encode()))
    if management_ipv4 is not None:
        address = b"\x01" + ipaddress.IPv4Address(management_ipv4).packed
        body.append(tlv(TLV_MANAGEMENT, bytes([len(address)]) + address
                        + b"\x02" + struct.pack("!I", 0) + b"\x00"))
    if ets is not None:
        flags = ets.willing << 7 | ets.cbs << 6 | (ets.max_tcs & 7)
        pat = bytes(ets.prio_tc[i] << 4 | ets.prio_tc[i + 1] for i in range(0, 8, 2))
        tsa = bytes(next((k for k, v in TSA_NAMES.items() if v == t), 2) for t in ets.tc_tsa)
        body.append(tlv(TLV_ORG, OUI_8021 + bytes([QAZ_ETS_CONFIG, flags]) + pat
                        + bytes(ets.tc_bw) + tsa))
    if pfc is not None:
        flags = pfc.willing << 7 | pfc.mbc << 6 | (pfc.capability & 0x0F)
        enable = sum(1 << p for p in pfc.enabled)
        body.append(tlv(TLV_ORG, OUI_8021 + bytes([QAZ_PFC, flags, enable])))
    if apps is not None:
        entries = b"".join(bytes([a.priority << 5 | a.selector]) + struct.pack("!H", a.protocol)
                           for a in apps)
        body.append(tlv(TLV_ORG, OUI_8021 + bytes([QAZ_APP, 0]) + entries))
    body.append(tlv(TLV_END, b""))
    return LLDP_MULTICAST + source_mac + struct.pack("!H", ETHERTYPE_LLDP) + b"".join(body)
