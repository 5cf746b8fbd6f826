"""Records of the PCIe path of a NIC and the verdicts derived across interfaces."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)

class PcieLink:
    """The four link attributes of one PCIe device, read together.

    Speeds are GT/s per lane, widths are lanes. ``None``: the kernel said "Unknown" (or 0
    lanes: link down), or the file was unreadable or garbage (then a problem is recorded).

    An endpoint's or a switch upstream port's ``current_*`` describe the link above it; a
    root port's or switch downstream port's describe the link below it, so each physical
    link shows up on both of its ends. ``max_*`` is the device's own capability (for a port:
    what the slot can do).
    """

    current_speed_gts: float | None
    current_width: int | None
    max_speed_gts: float | None
    max_width: int | None



@dataclass(frozen=True, slots=True)

class AerCounters:
    """Advanced Error Reporting counts of one device, cumulative since enumeration.

    ``correctable`` / ``nonfatal`` / ``fatal`` map the kernel's error names (with spaces,
    e.g. ``"Receiver Error"``, ``"Bad TLP"``) to counts from ``aer_dev_correctable`` /
    ``aer_dev_nonfatal`` / ``aer_dev_fatal``; the ``TOTAL_ERR_*`` line of each file is
    ``total_*`` instead. ``rootport_total_*`` come from ``aer_rootport_total_err_*`` (root
    ports and event collectors only) and count errors reported by anything below the port.
    An absent file gives an empty mapping and ``None`` totals.
    """

    correctable: Mapping[str, int]
    nonfatal: Mapping[str, int]
    fatal: Mapping[str, int]
    total_correctable: int | None
    total_nonfatal: int | None
    total_fatal: int | None
    rootport_total_correctable: int | None
    rootport_total_nonfatal: int | None
    rootport_total_fatal: int | None



@dataclass(frozen=True, slots=True)

class PciDevice:
    """One PCI function directory (an endpoint or a bridge/port on the way up).

    ``link``: ``None`` when the device has no link attributes (not PCIe, e.g. virtio-PCI
    or a conventional PCI bridge). ``aer``: ``None`` when it has no AER attributes.
    ``local_cpus``: sorted CPU numbers from ``local_cpulist``. ``numa_node``: ``None`` for
    the kernel's -1 (no affinity).
    """

    bdf: str
    vendor_id: int | None
    device_id: int | None
    class_code: int | None
    numa_node: int | None
    local_cpus: tuple[int, ...] | None
    link: PcieLink | None
    aer: AerCounters | None
    power_state: str | None = None  # "D0", "D3cold", ...; None: no such file (pre-4.20)



@dataclass(frozen=True, slots=True)

class PciePath:
    """A PCI function and every PCI device above it, as sysfs shows them.

    ``function`` is the address asked about. For a virtual function ``physfn`` is its
    physical function: VF link registers are not meaningful, so ``hops`` then start at the
    PF (as the kernel's ``pci_upstream_bridge()`` does). ``hops[0]`` is the function whose
    link is read, each next hop is its parent bridge, the last is the root port (or the
    function itself when it sits directly on a host bridge). ``problems`` lists every file
    that was present but unreadable or garbage.
    """

    function: str
    physfn: str | None
    hops: tuple[PciDevice, ...]
    problems: tuple[str, ...]

    @property
    def is_pcie(self) -> bool:
        """Whether the function (or its PF) has PCIe link attributes at all."""
        return bool(self.hops) and self.hops[0].link is not None



@dataclass(frozen=True, slots=True)

class Ceiling:
    """The narrowest link on a PCIe path.

    ``bytes_per_second`` = ``width`` x lane rate at ``speed_gts`` of ``limiting_hop`` (a BDF).
    ``unknown_hops`` are PCIe hops whose current speed or width is unknown (link down, a
    speed the kernel could not name, unreadable files); when there are any, the ceiling is
    only an upper bound.
    """

    bytes_per_second: int
    limiting_hop: str
    speed_gts: float
    width: int
    unknown_hops: tuple[str, ...]



@dataclass(frozen=True, slots=True)

class LinkFault:
    """One physical link on the path that trained below what both of its ends support.

    ``hop`` is the index in ``PciePath.hops`` of the link's lower end (the NIC function,
    0, or a switch upstream port); ``bdf`` its address; ``actual`` and ``expected`` lanes
    (``WIDTH``) or GT/s (``SPEED``).
    """

    reason: str
    hop: int
    bdf: str
    actual: float
    expected: float



@dataclass(frozen=True, slots=True)

class PcieVerdict:
    """How a NIC function's PCIe path compares with what it could and should do.

    ``reasons`` (the function is degraded when there is any), in this order:

    * ``"width"``: a link on the path trained narrower than both of its ends support: the
      NIC's own link against ``expected_width`` = min(endpoint max width, parent port max
      width), or a switch uplink further up (each in ``faults``; bad riser or slot, dirty
      contacts, lane faults, a retimer);
    * ``"speed"``: the same for speed (``expected_speed_gts`` for the NIC's own link);
    * ``"ceiling_below_line_rate"``: the path ceiling is below
      ``line_rate_bytes_per_second``, the summed line rates of the physical ports sharing the
      link.

    ``unknown`` says what could not be judged, so the verdict is never "ok" by default:
    ``"link_state"`` (the NIC's own link reads Unknown or 0 or all-ones lanes: link down or in
    recovery, the function in D3cold or gone), ``"no_own_link"`` (all four link attributes
    read 0 / Unknown: reserved link registers, as in a virtual function passed to a guest,
    whose PF's link is out of sight), ``"upstream_link_state"`` (the same for a real
    hop above it; the ceiling is then only an upper bound) and ``"hidden_link_partner"`` (the
    NIC's link trained below the card's maximum behind an emulated port: in a VM the host's
    slot is not visible, so a fault cannot be told from a narrow slot).

    ``slot_limits`` (``"width"``, ``"speed"``) says the parent port cannot do what the card
    can (an x16 card in an x8 slot or lane-split port, a Gen5 card on a Gen4 port). That is
    how the machine is built, not a training fault, so it is not a reason by itself; it
    often comes with ``ceiling_below_line_rate``.

    ``emulated_hops`` are the BDFs of ports a hypervisor emulates (see
    :data:`EMULATED_PORTS`): their links are left out of everything else.

    ``pcie`` is False when the function has no PCIe link attributes (virtio-PCI): then
    there is no ceiling, no expectation and no reason.
    """

    function: str
    pcie: bool
    ceiling: Ceiling | None
    line_rate_bytes_per_second: int | None
    expected_width: int | None
    expected_speed_gts: float | None
    reasons: tuple[str, ...]
    slot_limits: tuple[str, ...]
    unknown: tuple[str, ...] = ()
    faults: tuple[LinkFault, ...] = ()
    emulated_hops: tuple[str, ...] = ()

    @property
    def degraded(self) -> bool:
        return bool(self.reasons)

    @property
    def slot_limited(self) -> bool:
        return bool(self.slot_limits)

    @property
    def state(self) -> str:
        """``"degraded"``, else ``"unknown"``, else ``"ok"``: the one word show, check,
        /metrics and the alerts agree on."""
        return "degraded" if self.reasons else "unknown" if self.unknown else "ok"

    @property
    def headroom_ratio(self) -> float | None:
        """Ceiling over summed line rate; below 1.0 the NIC can out-run its bus."""
        if self.ceiling is None or not self.line_rate_bytes_per_second:
            return None
        return self.ceiling.bytes_per_second / self.line_rate_bytes_per_second
