"""PCIe bandwidth ceiling and link verdicts for NIC functions (pure; reads nothing).

Units: every bandwidth here is **bytes per second**, per direction, after line encoding and
before protocol overhead. Per lane that is exactly the kernel's ``PCIE_SPEED2MBS_ENC``
(drivers/pci/pci.h: integer Mb/s, 8b/10b for 2.5 and 5 GT/s, 128b/130b for 8, 16 and
32 GT/s, 1/1 for the flit-mode rates 64 GT/s (Gen6, merged in 6.x with the Jan 2024 fix) and
128 GT/s (Gen7, in the 2026 series; a kernel without it prints ``"Unknown"``)) times
125 000, so ``width x lane rate`` reproduces the "... Gb/s available PCIe bandwidth, limited
by ..." line drivers print at probe. Above that, TLP headers, DLLPs and read requests cost
another 5-15 %; in flit mode (Gen6+) the flit's CRC, FEC and DLP bytes (14 of every 256,
5.5 %) take the place of LCRC and sequence numbers and belong to that same overhead, which is
why the kernel counts 64 and 128 GT/s at 1/1.

The ceiling of a path is the minimum over its hops of ``current width x lane rate``, found
like the kernel's ``pcie_bandwidth_available()``: on a tie the hop further upstream is the
limiting one. Line rates are bytes per second too (``/sys/class/net/<if>/speed`` is Mb/s:
use :func:`line_rate_from_mbps`).

Ports a hypervisor emulates (:data:`EMULATED_PORTS`) report made-up link values (QEMU's
``pcie-root-port`` says 2.5 GT/s x1 on old machine types): they are named in the verdict and
left out of the ceiling and of every expectation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TypeVar

from nicwatch.model import Ceiling, LinkFault, PciDevice, PcieLink, PciePath, PcieVerdict

_N = TypeVar("_N", int, float)

# PCIE_SPEED2MBS_ENC: usable Mb/s per lane by signalling rate (GT/s), integer arithmetic.
_LANE_MBPS: Mapping[float, int] = {
    2.5: 2500 * 8 // 10,
    5.0: 5000 * 8 // 10,
    8.0: 8000 * 128 // 130,
    16.0: 16000 * 128 // 130,
    32.0: 32000 * 128 // 130,
    64.0: 64000 * 1 // 1,  # flit mode
    128.0: 128000 * 1 // 1,  # flit mode
}

# Ports and bridges that only exist in a hypervisor's device model, by (vendor, device).
# Their link registers are invented, so they are never a ceiling nor a link partner.
# Sources: QEMU include/hw/pci/pci.h (PCI_VENDOR_ID_REDHAT 0x1b36 and its
# PCI_DEVICE_ID_REDHAT_* ids), the kernel's include/linux/pci_ids.h (PCI_VENDOR_ID_REDHAT,
# PCI_VENDOR_ID_VMWARE 0x15ad) and pci.ids for VMware's device ids. QEMU's older
# ``ioh3420`` and ``x3130`` models borrow real Intel and TI ids and cannot be told apart
# from hardware here; Hyper-V puts passthrough functions on a virtual host bridge with no
# port above them, so there is nothing to recognise.
EMULATED_PORTS: Mapping[tuple[int, int], str] = {
    (0x1B36, 0x0001): "QEMU PCI-PCI bridge",
    (0x1B36, 0x000B): "QEMU PCIe expander bridge",
    (0x1B36, 0x000C): "QEMU PCIe root port",
    (0x1B36, 0x000E): "QEMU PCIe-to-PCI bridge",
    (0x15AD, 0x0790): "VMware PCI bridge",
    (0x15AD, 0x07A0): "VMware PCIe root port",
}
_BYTES_PER_SECOND_PER_MBPS = 1_000_000 // 8

WIDTH = "width"
SPEED = "speed"
CEILING_BELOW_LINE_RATE = "ceiling_below_line_rate"
REASONS = (WIDTH, SPEED, CEILING_BELOW_LINE_RATE)

# Why a verdict cannot be made (PcieVerdict.unknown).
LINK_STATE = "link_state"  # the NIC's own link reads Unknown / 0 / all-ones lanes
UPSTREAM_LINK_STATE = "upstream_link_state"  # a real hop above it does
HIDDEN_LINK_PARTNER = "hidden_link_partner"  # below the card's max behind an emulated port
# All four link attributes read 0 / Unknown in D0: the link registers are reserved, as in an
# SR-IOV virtual function seen from a guest (no physfn there); its PF's link carries it. A
# root complex integrated endpoint has none either (max_link_width 255, the kernel's
# PCIE_LNK_WIDTH_UNKNOWN, which the source reads as unknown).
NO_OWN_LINK = "no_own_link"
UNKNOWN_REASONS = (LINK_STATE, UPSTREAM_LINK_STATE, HIDDEN_LINK_PARTNER, NO_OWN_LINK)




def emulated_port(dev: PciDevice) -> str | None:
    """What ``dev`` is when a hypervisor emulates it (``"QEMU PCIe root port"``), else None."""
    if dev.vendor_id is None or dev.device_id is None:
        return None
    return EMULATED_PORTS.get((dev.vendor_id, dev.device_id))


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
    """The narrowest current link on ``path``; ``None`` when no hop's bandwidth is known.
    Emulated ports are not links."""
    limit: tuple[int, str, float, int] | None = None  # bandwidth, bdf, speed, width
    unknown: list[str] = []
    for hop in path.hops:
        if hop.link is None or emulated_port(hop):
            continue
        speed, width = hop.link.current_speed_gts, hop.link.current_width
        bandwidth = link_bytes_per_second(speed, width)
        if bandwidth is None or speed is None or width is None:
            unknown.append(hop.bdf)
        elif limit is None or bandwidth <= limit[0]:
            limit = (bandwidth, hop.bdf, speed, width)
    if limit is None:
        return None
    bandwidth, bdf, speed, width = limit
    return Ceiling(
        bytes_per_second=bandwidth,
        limiting_hop=bdf,
        speed_gts=speed,
        width=width,
        unknown_hops=tuple(unknown),
    )


def links(path: PciePath) -> list[tuple[int, PciDevice, PciDevice]]:
    """The physical links on ``path`` as (index of the lower end, lower end, upper end).

    A path alternates a device whose link goes up (the NIC function, a switch upstream
    port) and the port it plugs into (a switch downstream port, the root port): hops 0-1,
    2-3, ... Between a switch's downstream and upstream ports there is no physical link.
    """
    return [(i, path.hops[i], path.hops[i + 1]) for i in range(0, len(path.hops) - 1, 2)]


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


def _link_faults(path: PciePath) -> list[LinkFault]:
    """Links (both ends real PCIe ports) trained below what both ends support; an end whose
    maximum is unknown (a speed newer than the kernel) does not lower the expectation."""
    faults = []
    for i, lower, upper in links(path):
        if lower.link is None or upper.link is None or emulated_port(lower) or emulated_port(upper):
            continue
        width = _min_known(lower.link.max_width, upper.link.max_width)
        speed = _min_known(lower.link.max_speed_gts, upper.link.max_speed_gts)
        actual_width, actual_speed = lower.link.current_width, lower.link.current_speed_gts
        if actual_width is not None and width is not None and actual_width < width:
            faults.append(LinkFault(WIDTH, i, lower.bdf, actual_width, width))
        if actual_speed is not None and speed is not None and actual_speed < speed:
            faults.append(LinkFault(SPEED, i, lower.bdf, actual_speed, speed))
    return faults


def _no_own_link(dev: PciDevice) -> bool:
    link = dev.link
    return (dev.power_state != "D3cold" and link is not None
            and all(v is None for v in (link.current_speed_gts, link.current_width,
                                        link.max_speed_gts, link.max_width)))


def _unknown_link(link: PcieLink) -> bool:
    return link.current_speed_gts is None or link.current_width is None


def assess(path: PciePath, shared_line_rates: Iterable[int | None]) -> PcieVerdict:
    """The verdict for ``path``'s function.

    ``shared_line_rates``: line rates in bytes/s of every physical port on the shared link,
    including this function's own; unknown ones (``None``, a down port) are skipped.
    """
    line_rate = sum(rate for rate in shared_line_rates if rate) or None
    endpoint = path.hops[0].link if path.hops else None
    if endpoint is None:  # not path.is_pcie
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
    emulated = tuple(h.bdf for h in path.hops if emulated_port(h))
    parent_dev = path.hops[1] if len(path.hops) > 1 else None
    # The NIC's link partner is out of sight: an emulated port (a VM), or no port at all
    # (a function on a hypervisor's virtual host bridge, as on Hyper-V).
    hidden = parent_dev is None or parent_dev.link is None or parent_dev.bdf in emulated
    parent = parent_dev.link if parent_dev is not None and not hidden else None
    parent_max_width = parent.max_width if parent else None
    parent_max_speed = parent.max_speed_gts if parent else None
    expected_width = _min_known(endpoint.max_width, parent_max_width)
    expected_speed = _min_known(endpoint.max_speed_gts, parent_max_speed)
    ceiling = path_ceiling(path)
    faults = _link_faults(path)
    unknown = []
    if _no_own_link(path.hops[0]):
        unknown.append(NO_OWN_LINK)
    elif _unknown_link(endpoint):
        unknown.append(LINK_STATE)
    if any(h.link is not None and h.bdf not in emulated and _unknown_link(h.link)
           for h in path.hops[1:]):
        unknown.append(UPSTREAM_LINK_STATE)
    if hidden and (_below(endpoint.current_width, endpoint.max_width)
                   or _below(endpoint.current_speed_gts, endpoint.max_speed_gts)):
        unknown.append(HIDDEN_LINK_PARTNER)
    reasons = [r for r in (WIDTH, SPEED) if any(f.reason == r for f in faults)]
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
        unknown=tuple(unknown),
        faults=tuple(faults),
        emulated_hops=emulated,
    )


def assess_all(nics: Mapping[str, tuple[PciePath, int | None]],
               ports: Mapping[str, object] | None = None) -> dict[str, PcieVerdict]:
    """Verdicts for many netdevs at once: ``{name: (path, line rate in bytes/s)}``.

    Line rates are summed per :func:`shared_link` group, once per physical port:
    ``ports`` maps a netdev to its physical port's identity (see :func:`physical_port`);
    netdevs with the same identity (the partitions of one port on an NPAR card, several PCI
    functions each reporting the port's speed) count once, with the highest speed among
    them. A netdev missing from ``ports`` is a port of its own. A virtual function's netdev
    never adds to the sum: its traffic goes through its physical function's port, which
    the PF's own netdev already counts.
    """
    ports = ports or {}
    groups = group_by_shared_link({name: path for name, (path, _) in nics.items()})
    sharing = {name: members for members in groups.values() for name in members}
    verdicts = {}
    for name, (path, _) in nics.items():
        per_port: dict[object, int] = {}
        for m in sharing.get(name, (name,)):
            rate = nics[m][1]
            if nics[m][0].physfn is not None or not rate:
                continue
            key = ports.get(m) or ("netdev", m)
            per_port[key] = max(per_port.get(key, 0), rate)
        verdicts[name] = assess(path, per_port.values())
    return verdicts


def describe(verdict: PcieVerdict, path: PciePath) -> str:
    """The verdict in one line, as ``nicwatch show`` prints it: ``ok``, ``DEGRADED: width
    (x8 of x16 at 0000:41:00.0)``, ``UNKNOWN: link_state (power state D3cold)``, with slot
    limits and emulated ports after it."""
    if not verdict.pcie:
        return "not PCIe"
    parts = []
    for reason in verdict.reasons:
        where = ", ".join(_fault_text(f) for f in verdict.faults if f.reason == reason)
        parts.append(f"{reason} ({where})" if where else reason)
    text = "DEGRADED: " + ", ".join(parts) if parts else ""
    if verdict.unknown:
        unknown = ", ".join(verdict.unknown)
        power = path.hops[0].power_state if path.hops else None
        if LINK_STATE in verdict.unknown and power not in (None, "D0"):
            unknown += f" (power state {power})"
        text = f"{text}; UNKNOWN: {unknown}" if text else f"UNKNOWN: {unknown}"
    text = text or "ok"
    if verdict.slot_limits:
        text += f" (slot-limited: {', '.join(verdict.slot_limits)})"
    if verdict.emulated_hops:
        text += f" (emulated, not a limit: {', '.join(verdict.emulated_hops)})"
    return text


def _fault_text(fault: LinkFault) -> str:
    if fault.reason == WIDTH:
        return f"x{fault.actual:g} of x{fault.expected:g} at {fault.bdf}"
    return f"{fault.actual:g} of {fault.expected:g} GT/s at {fault.bdf}"


def physical_port(phys_port_id: str | None, pci_address: str | None,
                  dev_port: int | None) -> tuple[str, ...] | None:
    """The identity of the physical port behind a netdev: the driver's ``phys_port_id``
    when it has one (bnxt, bnx2x, i40e and qede partitions of one port share it), else the
    PCI function and ``dev_port`` (mlx4 puts two ports on one function; switchdev
    representors share their PF's function and count once with it); ``None`` when neither
    is known."""
    if phys_port_id:
        return ("phys_port_id", phys_port_id)
    if pci_address:
        return ("function", pci_address, str(dev_port or 0))
    return None


def _min_known(*values: _N | None) -> _N | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _below(value: float | None, bound: float | None) -> bool:
    """``value < bound`` when both are known; unknown never counts as degraded."""
    return value is not None and bound is not None and value < bound
