"""A 400G port behind a double of the ethtool netlink reader whose replies are built in the
kernel's layout (include/uapi/linux/ethtool_netlink_generated.h as of 6.18, uapi
ethtool.h enums) and decoded by nicwatch's own decoder: FEC_GET with per-lane corrected bits
and the FEC histogram, LINKSTATE_GET, LINKMODES_GET lanes. Only for hardware nothing here
has (ConnectX-7 400G); the numbers are chosen, not recorded, and said so in each test."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from nicwatch.model import EthtoolNetlinkInfo
from nicwatch.sources import ethtool_netlink as en

from fixture_ethtool import attrs, header, nest, u8, u32, u64, u64_array

# uapi numbers, spelled out here rather than taken from the module under test.
FEC_HEADER, FEC_ACTIVE, FEC_STATS = 1, 4, 5
FEC_STAT_CORRECTED, FEC_STAT_UNCORR, FEC_STAT_CORR_BITS, FEC_STAT_HIST = 2, 3, 4, 5
HIST_BIN_LOW, HIST_BIN_HIGH, HIST_BIN_VAL, HIST_BIN_VAL_PER_LANE = 2, 3, 4, 5
LINKSTATE_HEADER, LINKSTATE_LINK, EXT_STATE, EXT_SUBSTATE, EXT_DOWN_CNT = 1, 2, 5, 6, 7
LINKMODES_HEADER, LINKMODES_SPEED, LINKMODES_LANES = 1, 5, 9
LINK_MODE_FEC_RS_BIT = 50  # ETHTOOL_LINK_MODE_FEC_RS_BIT


def hist_bin(low: int, high: int, value: int, per_lane: tuple[int, ...] = ()) -> bytes:
    children = [u32(HIST_BIN_LOW, low), u32(HIST_BIN_HIGH, high), u64(HIST_BIN_VAL, value)]
    if per_lane:
        children.append(u64_array(HIST_BIN_VAL_PER_LANE, *per_lane))
    return nest(FEC_STAT_HIST, *children)


def fec_reply(ifindex: int, corr_bits_lanes: tuple[int, ...], uncorr: int = 0,
              bins: tuple[bytes, ...] = (), active: int = LINK_MODE_FEC_RS_BIT) -> bytes:
    """The kernel sums the lanes into entry 0 (fec_stats_recalc)."""
    return attrs(header(FEC_HEADER, ifindex), u32(FEC_ACTIVE, active), nest(
        FEC_STATS, u64_array(FEC_STAT_CORRECTED, 0), u64_array(FEC_STAT_UNCORR, uncorr),
        u64_array(FEC_STAT_CORR_BITS, sum(corr_bits_lanes), *corr_bits_lanes), *bins))


def linkstate_reply(ifindex: int, link: bool, state: int | None = None,
                    substate: int | None = None, down_cnt: int | None = None) -> bytes:
    parts = [header(LINKSTATE_HEADER, ifindex), u8(LINKSTATE_LINK, int(link))]
    if state is not None:
        parts.append(u8(EXT_STATE, state))
    if substate is not None:
        parts.append(u8(EXT_SUBSTATE, substate))
    if down_cnt is not None:
        parts.append(u32(EXT_DOWN_CNT, down_cnt))
    return attrs(*parts)


def linkmodes_reply(ifindex: int, speed: int, lanes: int) -> bytes:
    return attrs(header(LINKMODES_HEADER, ifindex), u32(LINKMODES_SPEED, speed),
                 u32(LINKMODES_LANES, lanes))


def decoded(replies: dict[str, list[bytes]]) -> dict[int, EthtoolNetlinkInfo]:
    """ifindex -> EthtoolNetlinkInfo, through the decoder of each request by name."""
    merged: dict[int, dict] = {}
    for request in en.REQUESTS:
        for ifindex, part in en.decode_dump(request, replies.get(request.name, []), None):
            into = merged.setdefault(ifindex, {"std_stats": {}})
            into["std_stats"].update(part.pop("std_stats", {}))
            into.update(part)
    return {i: EthtoolNetlinkInfo(pause=p.get("pause"), fec=p.get("fec"),
                                  std_stats=MappingProxyType(p["std_stats"]),
                                  lanes=p.get("lanes"), linkstate=p.get("linkstate"))
            for i, p in merged.items()}


SERDES_50G = 53.125e9  # bits/s of a 26.5625 GBd PAM4 lane (IEEE 802.3bs/cd)


@dataclass
class Port400G:
    """A 400GBASE-R8 port (8 x 50G PAM4, RS(544,514)) as ethtool netlink would report it,
    ``seconds`` apart per poll: lane ``bad`` at ``bad_ber``, the others at ``good_ber``;
    the FEC histogram's worst codewords reach ``worst_symbols`` (mlx5-like: 16 one-symbol
    bins, no lanes)."""

    ifindex: int
    bad: int = 5
    bad_ber: float = 1e-4
    good_ber: float = 2e-7
    worst_symbols: int = 13
    seconds: float = 5.0
    polls: int = 0
    lanes: int = 8
    down: tuple[int, int] | None = None  # (ext state, substate) while the link is down
    down_cnt: int = 3
    calls: list[str] = field(default_factory=list)

    def per_poll_bits(self) -> tuple[int, ...]:
        return tuple(round((self.bad_ber if lane == self.bad else self.good_ber)
                           * SERDES_50G * self.seconds) for lane in range(self.lanes))

    def read_all(self, ifindexes=None) -> en.NetlinkResult:
        self.polls += 1
        bits = tuple(n * self.polls for n in self.per_poll_bits())
        bins = tuple(hist_bin(s, s, (10 ** 9 >> s) * self.polls)
                     for s in range(self.worst_symbols + 1))
        state = self.down or (None, None)
        replies = {
            "FEC_GET": [fec_reply(self.ifindex, bits, bins=bins)],
            "LINKSTATE_GET": [linkstate_reply(self.ifindex, self.down is None, *state,
                                              down_cnt=self.down_cnt)],
            "LINKMODES_GET": [linkmodes_reply(self.ifindex, 400000, self.lanes)],
        }
        return en.NetlinkResult(MappingProxyType(decoded(replies)), MappingProxyType({}))

    def close(self) -> None:
        pass
