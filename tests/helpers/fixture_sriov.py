"""Test doubles of the kernel's RTM_NEWLINK reply with VF info, built to its layout.

The structs are those of include/uapi/linux/if_link.h (every one starts with ``__u32 vf``;
``struct ifla_vf_vlan_info`` is 16 bytes with its padding); the nesting and the attribute
order are those of ``rtnl_fill_vfinfo()`` in net/core/rtnetlink.c: IFLA_VF_INFO holding
MAC, BROADCAST, VLAN, RATE, TX_RATE, SPOOFCHK, LINK_STATE, RSS_QUERY_EN, TRUST, then the
IFLA_VF_VLAN_LIST nest (one IFLA_VF_VLAN_INFO) and the IFLA_VF_STATS nest (u64 values; on
architectures without efficient unaligned access each is preceded by an IFLA_VF_STATS_PAD
attribute). ``nla_nest_end()`` stores a nest's length in the u16 ``nla_len``, so a list over
65,535 bytes wraps: ``wrap`` reproduces that.

What the driver's callbacks decide is reproduced as the kernel does it: a VF whose
``ndo_get_vf_config`` failed has no entry at all (``rtnl_fill_vfinfo()`` returns 0 before
it opens the nest), so such a reply is built by leaving the VF out of ``vfs`` while
``num_vf`` keeps the VFs enabled (``dev_num_vf()``, put before the driver is asked); a VF
whose ``ndo_get_vf_stats`` failed carries ``ZERO_FILL``, the struct the kernel memset()s and
sends whatever the callback returned.

The values come from the published listings in tests/fixtures/sriov/ (see its README). The
lab (tests/lab/test_lab_nsim_sriov.py) checks the source against the real reply of netdevsim's
VFs under QEMU.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sriov"

IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_NUM_VF, IFLA_VFINFO_LIST = 1, 3, 4, 21, 22
IFLA_XDP, IFLA_PERM_ADDRESS = 43, 54
IFLA_VF_INFO = 1
(IFLA_VF_MAC, IFLA_VF_VLAN, IFLA_VF_TX_RATE, IFLA_VF_SPOOFCHK, IFLA_VF_LINK_STATE,
 IFLA_VF_RATE, IFLA_VF_RSS_QUERY_EN, IFLA_VF_STATS, IFLA_VF_TRUST) = range(1, 10)
IFLA_VF_VLAN_LIST, IFLA_VF_BROADCAST = 12, 13
IFLA_VF_VLAN_INFO = 1
STATS_ORDER = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "broadcast", "multicast",
               None, "rx_dropped", "tx_dropped")  # IFLA_VF_STATS_*; 6 is PAD
IFLA_VF_STATS_PAD = 6
ZERO_FILL = {name: 0 for name in STATS_ORDER if name is not None}  # memset(&vf_stats, 0, ...)
LINK_STATES = {"auto": 0, "enable": 1, "disable": 2}
UNSET = 0xFFFFFFFF  # the kernel's -1 preset of spoofchk, trust, rss_query_en


def nla(kind: int, payload: bytes = b"", length: int | None = None) -> bytes:
    n = 4 + len(payload) if length is None else length
    return struct.pack("=HH", n & 0xFFFF, kind) + payload + b"\0" * (-(4 + len(payload)) % 4)


@dataclass
class Vf:
    vf: int
    mac: str = "00:00:00:00:00:00"
    vlan: int = 0
    qos: int = 0
    proto: int = 0x8100
    spoofchk: int = UNSET  # 0/1, or UNSET: driver did not report
    trust: int = UNSET
    link_state: str = "auto"
    min_rate: int = 0
    max_rate: int = 0
    stats: dict[str, int] | None = field(default=None)  # None: no IFLA_VF_STATS nest


def vf_info(v: Vf, addr_len: int = 6, pad: bool = False) -> bytes:
    mac = bytes.fromhex(v.mac.replace(":", ""))[:addr_len].ljust(32, b"\0")
    body = (nla(IFLA_VF_MAC, struct.pack("=I32s", v.vf, mac))
            + nla(IFLA_VF_BROADCAST, (b"\xff" * addr_len).ljust(32, b"\0"))
            + nla(IFLA_VF_VLAN, struct.pack("=III", v.vf, v.vlan, v.qos))
            + nla(IFLA_VF_RATE, struct.pack("=III", v.vf, v.min_rate, v.max_rate))
            + nla(IFLA_VF_TX_RATE, struct.pack("=II", v.vf, v.max_rate))
            + nla(IFLA_VF_SPOOFCHK, struct.pack("=II", v.vf, v.spoofchk))
            + nla(IFLA_VF_LINK_STATE, struct.pack("=II", v.vf, LINK_STATES[v.link_state]))
            + nla(IFLA_VF_RSS_QUERY_EN, struct.pack("=II", v.vf, UNSET))
            + nla(IFLA_VF_TRUST, struct.pack("=II", v.vf, v.trust))
            + nla(IFLA_VF_VLAN_LIST, nla(IFLA_VF_VLAN_INFO, struct.pack(
                "=III2s2x", v.vf, v.vlan, v.qos, v.proto.to_bytes(2, "big")))))
    if v.stats is not None:
        stats = b""
        for kind, name in enumerate(STATS_ORDER):
            if name is None or name not in v.stats:
                continue
            if pad:
                stats += nla(IFLA_VF_STATS_PAD)
            stats += nla(kind, struct.pack("=Q", v.stats[name]))
        body += nla(IFLA_VF_STATS, stats)
    return nla(IFLA_VF_INFO, body)


def newlink(name: str, vfs: list[Vf], ifindex: int = 7, num_vf: int | None = -1,
            address: str = "ac:1f:6b:cf:32:c8", wrap: bool = True, pad: bool = False,
            vfinfo: bool = True) -> bytes:
    """The payload (after nlmsghdr) of the kernel's reply for one PF. ``num_vf`` -1: the
    number of ``vfs``; None: no IFLA_NUM_VF (a device without a parent)."""
    addr = bytes.fromhex(address.replace(":", ""))
    out = struct.pack("=BxHiII", 0, 1, ifindex, 0x1043, 0)
    out += nla(IFLA_IFNAME, name.encode() + b"\0") + nla(IFLA_MTU, struct.pack("=I", 1500))
    out += nla(IFLA_ADDRESS, addr)
    if num_vf is not None:
        out += nla(IFLA_NUM_VF, struct.pack("=I", len(vfs) if num_vf == -1 else num_vf))
    if vfinfo and num_vf is not None:
        body = b"".join(vf_info(v, len(addr), pad) for v in vfs)
        length = 4 + len(body)
        if not wrap and length > 0xFFFF:
            raise ValueError("list too long for nla_len")
        out += nla(IFLA_VFINFO_LIST, body, length)
    # What the kernel puts after the list: XDP nest, permanent address.
    out += nla(IFLA_XDP, nla(1, b"\0")) + nla(IFLA_PERM_ADDRESS, addr)
    return out


class Replies:
    """A VfReader whose reply to ``vfs()`` changes from poll to poll: each one of the
    kernel-layout RTM_NEWLINK payloads given, parsed as the socket parses it."""

    def __init__(self, *payloads: bytes) -> None:
        from nicwatch.sources.sriov import parse_vf_link
        self.replies = [parse_vf_link(p)[2:] for p in payloads]

    def vfs(self, ifindex: int):
        return self.replies.pop(0)

    def close(self) -> None:
        pass


# --- published listings -----------------------------------------------------------------

_IP_VF = re.compile(r"vf (\d+)\s+(?:MAC ([0-9a-f:]{17})|link/ether ([0-9a-f:]{17})[^,]*)"
                    r"(?:, vlan (\d+))?, spoof checking (on|off), link-state (\w+)"
                    r"(?:, trust (on|off))?")


def ip_link_vfs(text: str) -> list[Vf]:
    """The VFs of an ``ip link show`` listing (old "MAC x" and new "link/ether x" forms)."""
    out = []
    for m in _IP_VF.finditer(text):
        vf, mac_old, mac_new, vlan, spoof, state, trust = m.groups()
        out.append(Vf(int(vf), mac=mac_old or mac_new, vlan=int(vlan or 0),
                      spoofchk=int(spoof == "on"), link_state=state,
                      trust=UNSET if trust is None else int(trust == "on")))
    return out


_PROM = re.compile(r'^node_net_vf_(\w+)_total\{device="([^"]+)",[^}]*vf="(\d+)"\} (\d+)$', re.M)
PROM_STATS = {"receive_packets": "rx_packets", "receive_dropped": "rx_dropped"}


def prom_vf_stats(text: str) -> dict[str, dict[int, dict[str, int]]]:
    """device -> vf -> kernel stat name -> value, from node_exporter's VF families."""
    out: dict[str, dict[int, dict[str, int]]] = {}
    for family, device, vf, value in _PROM.findall(text):
        if family in PROM_STATS:
            out.setdefault(device, {}).setdefault(int(vf), {})[PROM_STATS[family]] = int(value)
    return out


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()
