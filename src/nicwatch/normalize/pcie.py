"""PCIe bandwidth ceiling and link verdicts for NIC functions (pure; reads nothing).

Units: every bandwidth here is **bytes per second**, per direction, after line encoding and
before protocol overhead. Per lane that is exactly the kernel's ``PCIE_SPEED2MBS_ENC``
(drivers/pci/pci.h: integer Mb/s, 8b/10b for 2.5 and 5 GT/s, 128b/130b for 8, 16 and
32 GT/s, 1/1 for 64 GT/s flit mode) times 125 000, so ``width x lane rate`` reproduces the
"... Gb/s available PCIe bandwidth, limited by ..." line drivers print at probe. TLP headers,
DLLPs and read requests cost another 5-15 %, so real payload throughput stays below it.

The ceiling of a path is the minimum over its hops of ``current width x lane rate``, found
like the kernel's ``pcie_bandwidth_available()``: on a tie the hop further upstream is the
limiting one. Line rates are bytes per second too (``/sys/class/net/<if>/speed`` is Mb/s:
use :func:`line_rate_from_mbps`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from nicwatch.model import Ceiling, PciDevice, PciePath, PcieVerdict

# PCIE_SPEED2MBS_ENC: usable Mb/s per lane by signalling rate (GT/s), integer arithmetic.
_LANE_MBPS: Mapping[float, int] = {
    2.5: 2500 * 8 // 10,
    5.0: 5000 * 8 // 10,
    8.0: 8000 * 128 // 130,
    16.0: 16000 * 128 // 130,
    32.0: 32000 * 128 // 130,
    64.0: 64000 * 1 // 1,
}
_BYTES_PER_SECOND_PER_MBPS = 1_000_000 // 8

WIDTH = "width"
SPEED = "speed"
CEILING_BELOW_LINE_RATE = "ceiling_below_line_rate"




def lane_bytes_per_second(speed_gts: float) -> int | None:
    """Usable bytes/s of one lane at ``speed_gts``; ``None`` for a rate the kernel's table
    does not know (the kernel counts those as 0)."""
    mbps = _LANE_MBPS.get(speed_gts)
    return None if mbps is None else mbps * _BYTES_PER_SECOND_PER_MBPS


def link_bytes_per_second(speed_gts: float | None, width: int | None) -> int | None:
    """Usable bytes/s of a ``width``-lane link at ``speed_gts``; ``None`` if either is unknown."""
    if speed_gts is None or width is None:
        return None
    lane = lane_bytes_per_second(speed_gts)
    return None if lane is None else lane * width


def line_rate_from_mbps(speed_mbps: int | None) -> int | None:
    """Bytes/s from ``/sys/class/net/<if>/speed`` (Mb/s); -1 (unknown) and 0 are ``None``."""
    if speed_mbps is None or speed_mbps <= 0:
        return None
    return speed_mbps * _BYTES_PER_SECOND_PER_MBPS


def path_ceiling(path: PciePath) -> Ceiling | None:
    """The narrowest current link on ``path``; ``None`` when no hop's bandwidth is known."""
    limit: tuple[int, PciDevice] | None = None
    unknown: list[str] = []
    for hop in path.hops:
        if hop.link is None:
            continue
        bandwidth = link_bytes_per_second(hop.link.current_speed_gts, hop.link.current_width)
        if bandwidth is None:
            unknown.append(hop.bdf)
        elif limit is None or bandwidth <= limit[0]:
            limit = (bandwidth, hop)
    if limit is None:
        return None
    bandwidth, hop = limit
    return Ceiling(
        bytes_per_second=bandwidth,
        limiting_hop=hop.bdf,
        speed_gts=hop.link.current_speed_gts,
        width=hop.link.current_width,
        unknown_hops=tuple(unknown),
    )


def shared_link(path: PciePath) -> str | None:
    """The key of the link ``path``'s function shares with its sibling functions: the
    parent port's BDF, or, for a function with no bridge above it, its own
    ``domain:bus:device``. ``None`` when the function is not PCIe.

    Functions behind different downstream ports of one switch also share the switch's
    upstream link; that sharing is not grouped here, but each path's ceiling includes it.
    """
    if not path.is_pcie:
        return None
    if len(path.hops) > 1:
        return path.hops[1].bdf
    return path.hops[0].bdf.rsplit(".", 1)[0]


def group_by_shared_link(paths: Mapping[str, PciePath]) -> dict[str, tuple[str, ...]]:
    """Names (netdevs, or whatever keys ``paths`` uses) grouped by :func:`shared_link`;
    names whose function is not PCIe are left out."""
    groups: defaultdict[str, list[str]] = defaultdict(list)
    for name, path in paths.items():
        key = shared_link(path)
        if key is not None:
            groups[key].append(name)
    return {key: tuple(sorted(names)) for key, names in groups.items()}


def assess(path: PciePath, shared_line_rates: Iterable[int | None]) -> PcieVerdict:
    """The verdict for ``path``'s function.

    ``shared_line_rates``: line rates in bytes/s of every netdev on the shared link,
    including this function's own; unknown ones (``None``, a down port) are skipped.
    """
    line_rate = sum(rate for rate in shared_line_rates if rate) or None
    if not path.is_pcie:
        return PcieVerdict(
            function=path.function,
            pcie=False,
            ceiling=None,
            line_rate_bytes_per_second=line_rate,
            expected_width=None,
            expected_speed_gts=None,
            reasons=(),
            slot_limits=(),
        )
    endpoint = path.hops[0].link
    parent = path.hops[1].link if len(path.hops) > 1 else None
    parent_max_width = parent.max_width if parent else None
    parent_max_speed = parent.max_speed_gts if parent else None
    expected_width = _min_known(endpoint.max_width, parent_max_width)
    expected_speed = _min_known(endpoint.max_speed_gts, parent_max_speed)
    ceiling = path_ceiling(path)
    reasons = []
    if _below(endpoint.current_width, expected_width):
        reasons.append(WIDTH)
    if _below(endpoint.current_speed_gts, expected_speed):
        reasons.append(SPEED)
    if ceiling is not None and _below(ceiling.bytes_per_second, line_rate):
        reasons.append(CEILING_BELOW_LINE_RATE)
    slot_limits = []
    if _below(parent_max_width, endpoint.max_width):
        slot_limits.append(WIDTH)
    if _below(parent_max_speed, endpoint.max_speed_gts):
        slot_limits.append(SPEED)
    return PcieVerdict(
        function=path.function,
        pcie=True,
        ceiling=ceiling,
        line_rate_bytes_per_second=line_rate,
        expected_width=expected_width,
        expected_speed_gts=expected_speed,
        reasons=tuple(reasons),
        slot_limits=tuple(slot_limits),
    )


def assess_all(nics: Mapping[str, tuple[PciePath, int | None]]) -> dict[str, PcieVerdict]:
    """Verdicts for many netdevs at once: ``{name: (path, line rate in bytes/s)}``.

    Line rates are summed per :func:`shared_link` group. A virtual function's netdev never
    adds to the sum: its traffic goes through its physical function's port, which the PF's
    own netdev already counts.
    """
    groups = group_by_shared_link({name: path for name, (path, _) in nics.items()})
    sharing = {name: members for members in groups.values() for name in members}
    verdicts = {}
    for name, (path, _) in nics.items():
        rates = (nics[m][1] for m in sharing.get(name, (name,)) if nics[m][0].physfn is None)
        verdicts[name] = assess(path, rates)
    return verdicts


def _min_known(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _below(value: float | None, bound: float | None) -> bool:
    """``value < bound`` when both are known; unknown never counts as degraded."""
    return value is not None and bound is not None and value < bound
