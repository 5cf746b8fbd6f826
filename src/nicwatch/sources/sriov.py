"""SR-IOV: the VFs of each selected PF, from sysfs and from the PF's rtnetlink link reply.

sysfs (below ``--path.sysfs``): ``class/net/<pf>/device/sriov_numvfs`` (VFs enabled) and
``sriov_totalvfs`` (the most the device allows); both exist only on an SR-IOV capable PCI
function. A PF without ``sriov_totalvfs`` is not asked anything else.

netlink: an ``RTM_GETLINK`` request for the PF's ifindex carrying ``IFLA_EXT_MASK`` =
``RTEXT_FILTER_VF`` (include/uapi/linux/rtnetlink.h). ``rtnl_fill_vf()`` in
net/core/rtnetlink.c then adds ``IFLA_NUM_VF`` (u32, only for a device with a parent
device) and, when the driver has ``ndo_get_vf_config``, ``IFLA_VFINFO_LIST``: one
``IFLA_VF_INFO`` nest per VF holding, as fixed structs that each start with ``__u32 vf``
(include/uapi/linux/if_link.h):

* ``IFLA_VF_MAC`` ``struct ifla_vf_mac`` (vf, mac[32]; the first addr_len bytes count),
* ``IFLA_VF_VLAN`` ``struct ifla_vf_vlan`` (vf, vlan, qos) and ``IFLA_VF_VLAN_LIST`` holding
  one ``IFLA_VF_VLAN_INFO`` ``struct ifla_vf_vlan_info`` (vf, vlan, qos, __be16 vlan_proto),
* ``IFLA_VF_RATE`` ``struct ifla_vf_rate`` (vf, min_tx_rate, max_tx_rate; Mb/s),
* ``IFLA_VF_SPOOFCHK``, ``IFLA_VF_TRUST``, ``IFLA_VF_LINK_STATE`` (vf, setting); the kernel
  presets spoofchk and trust to -1 (0xffffffff) so a driver that does not fill them shows
  as "not reported",
* ``IFLA_VF_STATS``: a nest of u64 counters (``IFLA_VF_STATS_RX_PACKETS`` ..
  ``IFLA_VF_STATS_TX_DROPPED``; the two drop counters came with kernel commit c5a9f6f0ab40
  and are absent before it), left out when the request carries ``RTEXT_FILTER_SKIP_STATS``
  (for VFs since commit fa0e21fa4443 of June 2023, backported to 5.15.y). The kernel
  zero-fills the stats before it calls ``ndo_get_vf_stats`` and ignores what that returns,
  so zeros are not always a measurement: a driver without the callback (netdevsim, for
  one) sends zeros for ever, VF after VF, and no attribute says so (normalize.sriov
  decides when they count), and one whose callback failed (i40e
  answers -EBUSY while a VF is in reset, mlx5 a failed firmware query) sends zeros for
  that poll, all of them or only the drop counters.

What the kernel announces is not what the driver described. ``rtnl_fill_vf()`` puts
``IFLA_NUM_VF`` = ``dev_num_vf(parent)`` (the VFs enabled) before it asks the driver
anything, then calls ``rtnl_fill_vfinfo()`` for each VF; that returns 0 *without an
entry* when the driver's ``ndo_get_vf_config`` fails (ice: ``ice_check_vf_ready_for_cfg``
during a VF reset; i40e: -EAGAIN while another VF operation is pending). So the list can
hold fewer entries than announced, and which VF is missing shows only in the ``vf`` numbers
of the entries present. :class:`SriovSource` serves the others and names the missing ones
in ``SriovState.unreadable``, as it does a VF whose counters read all zero right after
non-zero values with its MAC unchanged (the kernel's zero-fill of a failed read, not a VF
re-created: a fall to zero there is not a reset), for at most ``ZERO_FILL_POLLS`` polls in
a row; zeros that last longer are believed (a VF re-created with the same MAC and left
idle). A single counter that falls to exactly zero while another of the same VF keeps
counting (mlx5: the drop counters when the drop query alone failed) is left out for that
poll the same way.

Size: a VF takes about 300 bytes of the reply (``rtnl_vfinfo_size()``), so the
``IFLA_VFINFO_LIST`` nest passes the 65,535 bytes its u16 ``nla_len`` can express at about
220 VFs; the kernel does not refuse, the length wraps. The walk here therefore reads
``IFLA_VF_INFO`` entries from the start of the list for as long as the next attribute is
one (the attributes the kernel puts after the list, ``IFLA_VF_PORTS``/``IFLA_PORT_SELF``
and ``IFLA_XDP``, never are) and at most the ``IFLA_NUM_VF`` announced, not until the
list's own (possibly wrapped) length, and stops the top-level walk there (everything read
comes before the list). The single reply is sized by the kernel (``if_nlmsg_size()``) and
the shared socket peeks a datagram's size before reading it, so a big reply is never cut.

Representors are not PFs. In switchdev e-switch mode a VF (or SF) representor's ``device``
link is its PF's device, so its sysfs shows the PF's ``sriov_numvfs``: every representor
would claim all the VFs (on mlx5, each of 64 representors 64 VFs). Only the PF's own netdev,
the uplink, reports them: an interface whose devlink port (the devlink source's
``devlink_port`` part) has a function flavour, ``pci_vf``, ``pci_sf`` or ``pci_pf`` (a
host PF's representor on a SmartNIC), is a representor and is skipped, and so is one
without a devlink port whose ``phys_port_name`` names a function (``pf0vf1``, ``c1pf0vf1``,
``pf0sf3``, ``pf0``: devlink's ``__devlink_port_phys_port_name_get`` spellings; sfc's
``p0pf0vf1`` and bnxt's and nfp's ``pf0vf1`` from their own ``ndo_get_phys_port_name``).

One request per SR-IOV PF rather than a dump: a dump with the VF mask returns every
interface of the namespace with its full attributes (docs/sriov.md has the measurements).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import struct
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

from nicwatch.model import DevlinkPort, Reading, SriovState, VfInfo
from nicwatch.sources import Poll, SourceOptions, errno_name
from nicwatch.sources.netlink import (
    NETLINK_ROUTE,
    NLA_HDR,
    NLA_TYPE_MASK,
    NLM_F_DUMP,
    KernelError,
    NetlinkSocket,
    ParseError,
    attributes,
    decode_uint,
    nlattr,
)
from nicwatch.sources.rtnetlink import IFINFOMSG, IFLA_ADDRESS, IFLA_IFNAME, RTM_GETLINK
from nicwatch.sources.sysfs_net import read_text
from nicwatch.sources.sysfs_pci import SysfsReader, parse_unsigned

# enum IFLA_* (uapi if_link.h), the attributes this module reads or sends.
IFLA_NUM_VF = 21
IFLA_VFINFO_LIST = 22
IFLA_EXT_MASK = 29
RTEXT_FILTER_VF = 1 << 0  # uapi rtnetlink.h
RTEXT_FILTER_SKIP_STATS = 1 << 3
IFLA_VF_INFO = 1  # enum IFLA_VF_INFO_*
# enum IFLA_VF_* inside IFLA_VF_INFO.
IFLA_VF_MAC = 1
IFLA_VF_VLAN = 2
IFLA_VF_SPOOFCHK = 4
IFLA_VF_LINK_STATE = 5
IFLA_VF_RATE = 6
IFLA_VF_STATS = 8
IFLA_VF_TRUST = 9
IFLA_VF_VLAN_LIST = 12
IFLA_VF_VLAN_INFO = 1  # enum IFLA_VF_VLAN_INFO_*
# enum IFLA_VF_STATS_* in order; 6 is IFLA_VF_STATS_PAD (alignment padding, no value).
VF_STATS = {0: "rx_packets", 1: "tx_packets", 2: "rx_bytes", 3: "tx_bytes", 4: "broadcast",
            5: "multicast", 7: "rx_dropped", 8: "tx_dropped"}
LINK_STATES = ("auto", "enable", "disable")  # IFLA_VF_LINK_STATE_AUTO/ENABLE/DISABLE
VLAN_PROTOS = {0x8100: "802.1Q", 0x88A8: "802.1ad"}
NOT_REPORTED = 0xFFFFFFFF  # the kernel's -1 preset of spoofchk and trust

_U32 = struct.Struct("=I")
_VF_MAC = struct.Struct("=I32s")  # struct ifla_vf_mac
_VF_VLAN = struct.Struct("=III")  # struct ifla_vf_vlan
_VF_VLAN_INFO = struct.Struct("=III2s")  # struct ifla_vf_vlan_info (16 bytes with padding)
_VF_RATE = struct.Struct("=III")  # struct ifla_vf_rate
_VF_SETTING = struct.Struct("=II")  # ifla_vf_spoofchk, ifla_vf_trust, ifla_vf_link_state


_U64 = struct.Struct("=Q")
# Fixed-size IFLA_VF_* payloads: attribute -> its struct (all start with __u32 vf).
_LAYOUTS = {IFLA_VF_MAC: _VF_MAC, IFLA_VF_VLAN: _VF_VLAN, IFLA_VF_RATE: _VF_RATE,
            IFLA_VF_SPOOFCHK: _VF_SETTING, IFLA_VF_TRUST: _VF_SETTING,
            IFLA_VF_LINK_STATE: _VF_SETTING}


def _setting(value: tuple[Any, ...] | None) -> bool | None:
    return None if value is None or value[1] == NOT_REPORTED else bool(value[1])


def parse_vf_info(data: bytes, start: int, end: int, addr_len: int = 6) -> VfInfo:
    """One ``IFLA_VF_INFO`` nest (payload ``data[start:end]``)."""
    got: dict[int, tuple[Any, ...]] = {}  # IFLA_VF_* -> its struct, unpacked
    vlan_info = None
    stats: dict[str, int] = {}
    for attr, s, e in attributes(data, start, end):
        layout = _LAYOUTS.get(attr)
        if layout is not None:
            if e - s < layout.size:
                raise ParseError(f"IFLA_VF attribute {attr} of {e - s} bytes, expected "
                                 f"{layout.size}")
            got[attr] = layout.unpack_from(data, s)
        elif attr == IFLA_VF_STATS:
            for kind, vs, ve in attributes(data, s, e):
                name = VF_STATS.get(kind)
                if name is not None:
                    stats[name] = (_U64.unpack_from(data, vs)[0] if ve - vs == 8
                                   else decode_uint(data, vs, ve))
        elif attr == IFLA_VF_VLAN_LIST:
            for kind, vs, ve in attributes(data, s, e):
                if kind == IFLA_VF_VLAN_INFO and vlan_info is None:
                    if ve - vs < _VF_VLAN_INFO.size:
                        raise ParseError(f"IFLA_VF_VLAN_INFO of {ve - vs} bytes")
                    vlan_info = _VF_VLAN_INFO.unpack_from(data, vs)
    mac = got.get(IFLA_VF_MAC)
    if mac is None:
        raise ParseError("IFLA_VF_INFO without IFLA_VF_MAC")
    vlan = qos = proto = None
    if vlan_info is not None:
        _vf, vlan, qos, raw_proto = vlan_info
        number = int.from_bytes(raw_proto, "big")
        proto = VLAN_PROTOS.get(number) or f"0x{number:04x}"
    elif (plain := got.get(IFLA_VF_VLAN)) is not None:
        _vf, vlan, qos = plain
    rate = got.get(IFLA_VF_RATE)
    link = got.get(IFLA_VF_LINK_STATE)
    address = mac[1][:addr_len]
    return VfInfo(
        vf=mac[0],
        mac=address.hex(":") if any(address) else None,
        vlan=vlan, qos=qos, vlan_proto=proto,
        link_state=None if link is None else (
            LINK_STATES[link[1]] if link[1] < len(LINK_STATES) else str(link[1])),
        spoofchk=_setting(got.get(IFLA_VF_SPOOFCHK)),
        trust=_setting(got.get(IFLA_VF_TRUST)),
        min_tx_rate_mbps=None if rate is None else rate[1],
        max_tx_rate_mbps=None if rate is None else rate[2],
        stats=MappingProxyType(stats),
    )


def parse_vf_link(payload: bytes) -> tuple[str | None, int, int | None, tuple[VfInfo, ...]]:
    """An RTM_NEWLINK payload (``ifinfomsg`` and attributes) of a request with
    RTEXT_FILTER_VF -> (name, ifindex, IFLA_NUM_VF or None, the VFs). Raises ParseError for
    bytes that do not fit the layout."""
    if len(payload) < IFINFOMSG.size:
        raise ParseError(f"RTM_NEWLINK of {len(payload)} bytes has no ifinfomsg")
    ifindex = IFINFOMSG.unpack_from(payload)[2]
    name = None
    num_vf = None
    addr_len = 6
    unpack = NLA_HDR.unpack_from
    pos, end = IFINFOMSG.size, len(payload)
    while pos < end:
        if end - pos < NLA_HDR.size:
            raise ParseError(f"{end - pos} trailing bytes after the last attribute")
        length, attr = unpack(payload, pos)
        attr &= NLA_TYPE_MASK
        if attr == IFLA_VFINFO_LIST:
            # Read VF entries up to the announced count: the list's own u16 length wraps
            # past 64 KiB. Nothing read here comes after the list.
            return name, ifindex, num_vf, _vf_list(payload, pos + NLA_HDR.size, end,
                                                   num_vf, addr_len)
        if length < NLA_HDR.size or pos + length > end:
            raise ParseError(f"attribute {attr} of length {length} does not fit its "
                             f"{end - pos} bytes")
        if attr == IFLA_IFNAME:
            name = payload[pos + 4:pos + length].rstrip(b"\0").decode("utf-8",
                                                                       "surrogateescape")
        elif attr == IFLA_NUM_VF:
            num_vf = decode_uint(payload, pos + 4, pos + length)
        elif attr == IFLA_ADDRESS and length > NLA_HDR.size:
            addr_len = length - NLA_HDR.size
        pos += (length + 3) & ~3
    return name, ifindex, num_vf, ()


def _vf_list(data: bytes, start: int, end: int, count: int | None,
             addr_len: int) -> tuple[VfInfo, ...]:
    """The IFLA_VF_INFO entries from ``start``: while the next attribute is one, at most
    ``count``. Fewer than ``count`` is the kernel's way of skipping a VF the driver could
    not describe, not a damaged reply."""
    vfs: list[VfInfo] = []
    unpack = NLA_HDR.unpack_from
    pos = start
    while pos + NLA_HDR.size <= end and (count is None or len(vfs) < count):
        length, attr = unpack(data, pos)
        if attr & NLA_TYPE_MASK != IFLA_VF_INFO:
            break
        if length < NLA_HDR.size or pos + length > end:
            raise ParseError(f"IFLA_VF_INFO of length {length} does not fit its "
                             f"{end - pos} bytes")
        vfs.append(parse_vf_info(data, pos + NLA_HDR.size, pos + length, addr_len))
        pos += (length + 3) & ~3
    return tuple(vfs)


def request_body(ifindex: int = 0, skip_stats: bool = False) -> bytes:
    """``ifinfomsg`` for ``ifindex`` (0 in a dump) and ``IFLA_EXT_MASK``."""
    mask = RTEXT_FILTER_VF | (RTEXT_FILTER_SKIP_STATS if skip_stats else 0)
    return IFINFOMSG.pack(0, 0, ifindex, 0, 0) + nlattr(IFLA_EXT_MASK, _U32.pack(mask))


class VfError(OSError):
    """A VF request failed; ``kind`` is the errno name (ENODEV, ...) or ``parse``."""

    @property
    def kind(self) -> str:
        return errno_name(self.errno) if self.errno else "parse"


class SriovNetlink(NetlinkSocket):
    """An rtnetlink socket for VF requests, reused across polls. Sees the interfaces of the
    network namespace it was created in. Not thread-safe."""

    family_header = IFINFOMSG.size

    def __init__(self) -> None:
        super().__init__(NETLINK_ROUTE)

    def __enter__(self) -> SriovNetlink:
        return self

    def vfs(self, ifindex: int) -> tuple[int | None, tuple[VfInfo, ...]]:
        """(IFLA_NUM_VF or None, the VFs) of one interface. Raises VfError."""
        try:
            replies = self.request(RTM_GETLINK, 0, request_body(ifindex))
            for reply in replies:
                _name, index, num_vf, vfs = parse_vf_link(reply)
                if index == ifindex:
                    return num_vf, vfs
        except KernelError as e:
            raise VfError(e.errno, f"RTM_GETLINK ifindex {ifindex}: "
                                   f"{errno_name(e.errno)}") from None
        except (ParseError, struct.error) as e:
            raise VfError(0, f"ifindex {ifindex}: {e}") from None
        return None, ()

    def dump(self) -> dict[str, tuple[int | None, tuple[VfInfo, ...]]]:
        """The same for every interface of the namespace from one dump (measured against
        :meth:`vfs` in docs/sriov.md). Raises VfError."""
        out = {}
        try:
            for reply in self.request(RTM_GETLINK, NLM_F_DUMP, request_body()):
                name, _index, num_vf, vfs = parse_vf_link(reply)
                if name is not None:
                    out[name] = (num_vf, vfs)
        except KernelError as e:
            raise VfError(e.errno, f"RTM_GETLINK dump: {errno_name(e.errno)}") from None
        except (ParseError, struct.error) as e:
            raise VfError(0, str(e)) from None
        return out


@runtime_checkable
class VfReader(Protocol):
    """What SriovSource reads through: SriovNetlink, or a test double."""

    def vfs(self, ifindex: int) -> tuple[int | None, tuple[VfInfo, ...]]: ...
    def close(self) -> None: ...


def read_sriov_counts(root: str | os.PathLike[str], ifname: str,
                      problems: list[str] | None = None) -> tuple[int | None, int | None]:
    """(sriov_numvfs, sriov_totalvfs) of ``ifname``'s device; None where absent."""
    reader = SysfsReader(root)
    device = Path("class/net") / ifname / "device"
    got = (reader.value(device / "sriov_numvfs", parse_unsigned),
           reader.value(device / "sriov_totalvfs", parse_unsigned))
    if problems is not None:
        problems.extend(reader.problems)
    return got


# An interface whose device has no SR-IOV count files is looked at again after this long
# (a safety net: the capability comes with the device, and a rebind changes the ifindex).
NOT_A_PF_SECONDS = 60.0

# devlink port flavours of a function's representor: never the PF's uplink (``physical``).
REPRESENTOR_FLAVOURS = frozenset({"pci_pf", "pci_vf", "pci_sf"})
# phys_port_name of a function's representor (see the module docstring for the spellings)
REPRESENTOR_NAME = re.compile(r"(?:c[0-9]+)?(?:p[0-9]+)?pf[0-9]+(?:(?:vf|sf)[0-9]+)?")


def is_representor(port: DevlinkPort | None, phys_port_name: str | None) -> bool:
    """Whether a netdev is the representor of a PCI function (VF, SF, or a host PF) rather
    than a PF's uplink: by its devlink port's flavour where it has a port, else by its
    ``phys_port_name``."""
    if port is not None and port.flavour is not None:
        return port.flavour in REPRESENTOR_FLAVOURS
    return phys_port_name is not None and REPRESENTOR_NAME.fullmatch(phys_port_name) is not None


ZERO_FILL_POLLS = 3  # polls in a row a VF's zero-filled counters are not believed


@dataclasses.dataclass(frozen=True, slots=True)
class _Seen:
    """What the last polls showed of one VF: its MAC, its last believed counters, and for
    how many polls in a row its counters read as a zero-fill."""

    mac: str | None
    stats: Mapping[str, int]
    held: int = 0


def screen_zero_fill(vf: VfInfo, seen: _Seen | None) -> tuple[VfInfo, _Seen, bool]:
    """``vf`` with the counters the kernel zero-filled after a failed ``ndo_get_vf_stats``
    left out, what to remember of it, and whether it is unreadable this poll (all its
    counters were a zero-fill). See the module docstring for the rule."""
    stats = vf.stats
    if not stats or seen is None or seen.mac != vf.mac or not any(seen.stats.values()):
        return vf, _Seen(vf.mac, stats), False
    if not any(stats.values()):
        if seen.held < ZERO_FILL_POLLS:
            return (dataclasses.replace(vf, stats=MappingProxyType({})),
                    _Seen(vf.mac, seen.stats, seen.held + 1), True)
        return vf, _Seen(vf.mac, stats), False  # zeros that last: believed
    zeroed = {k for k, v in stats.items() if v == 0 and seen.stats.get(k, 0) > 0}
    counting = any(v > 0 and v >= seen.stats.get(k, 0) for k, v in stats.items()
                   if k not in zeroed)
    if not zeroed or not counting or seen.held >= ZERO_FILL_POLLS:
        return vf, _Seen(vf.mac, stats), False
    kept = {k: v for k, v in stats.items() if k not in zeroed}
    remembered = {**kept, **{k: seen.stats[k] for k in zeroed}}
    return (dataclasses.replace(vf, stats=MappingProxyType(kept)),
            _Seen(vf.mac, remembered, seen.held + 1), False)


class SriovSource:
    """SR-IOV PFs and their VFs as a :class:`~nicwatch.sources.Source` (the ``sriov`` part
    of each Reading; opt-in, ``--collector.vfs``). The netlink request is made only for a
    PF whose sysfs shows SR-IOV and only when ``reader`` is given (the daemon gives one for
    the live /sys: the socket sees the daemon's namespace, a fixture tree does not), never
    for a representor (module docstring). It remembers each VF's last counters from poll
    to poll (a few ints per VF of the PFs polled) to tell the kernel's zero-fill of a
    failed read from a measurement."""

    name = "sriov"
    fills: ClassVar[frozenset[str]] = frozenset({"sriov"})
    needs: ClassVar[frozenset[str]] = frozenset({"devlink_port"})  # representors

    def __init__(self, root: str | os.PathLike[str], reader: VfReader | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = root
        self.reader = reader
        self.clock = clock
        self._seen: dict[tuple[int, int], _Seen] = {}  # (PF ifindex, VF) -> last seen
        # (name, ifindex) -> when its device was found to be no SR-IOV PF (neither count file:
        # a device's SR-IOV capability is fixed while it is bound, and a rebind is a new
        # ifindex), asked again after NOT_A_PF_SECONDS
        self._not_pf: dict[tuple[str, int | None], float] = {}

    def _screen(self, ifindex: int, announced: int | None, vfs: tuple[VfInfo, ...],
                seen: dict[tuple[int, int], _Seen]
                ) -> tuple[tuple[VfInfo, ...], tuple[int, ...]]:
        """The VFs of one PF's reply as served, and the unreadable VF numbers; fills
        ``seen`` with what to remember of this PF's VFs."""
        out = []
        unreadable = []
        for vf in vfs:
            key = (ifindex, vf.vf)
            served, seen[key], zero_filled = screen_zero_fill(vf, self._seen.get(key))
            out.append(served)
            if zero_filled:
                unreadable.append(vf.vf)
        present = {vf.vf for vf in vfs}
        missing = [n for n in range(announced or 0) if n not in present]
        for n in missing:  # keep what the VF showed before it went missing
            if (ifindex, n) in self._seen:
                seen[(ifindex, n)] = self._seen[(ifindex, n)]
        return tuple(out), tuple(sorted((*unreadable, *missing)))

    @classmethod
    def open(cls, options: SourceOptions) -> SriovSource | None:
        if not options.vfs:
            return None
        live = os.path.realpath(options.sysfs) == "/sys"
        return cls(options.sysfs, SriovNetlink() if live else None)

    def _representor(self, poll: Poll, name: str) -> bool:
        port = poll.get(name, Reading.devlink_port)
        phys_port_name = None
        if port is None or port.flavour is None:  # no devlink port told: ask the netdev
            phys_port_name = read_text(Path(self.root) / "class/net" / name / "phys_port_name")
        return is_representor(port, phys_port_name)

    def read(self, poll: Poll) -> None:
        seen: dict[tuple[int, int], _Seen] = {}
        now = self.clock()
        not_pf: dict[tuple[str, int | None], float] = {}
        for nc in poll.each():
            key = (nc.name, nc.ifindex)
            if (since := self._not_pf.get(key)) is not None and now - since < NOT_A_PF_SECONDS:
                not_pf[key] = since
                continue  # no SR-IOV PF when last looked, and still the same device
            problems: list[str] = []
            enabled, total = read_sriov_counts(self.root, nc.name, problems)
            if total is None and enabled is None and not problems:
                not_pf[key] = now
                continue  # not an SR-IOV PF: nothing to ask
            if self._representor(poll, nc.name):
                continue  # its PF's counts, seen through the PF's device: the PF has them
            if problems:
                poll.error(nc.name, self.name, "invalid", "; ".join(problems))
            if total is None and enabled is None:
                continue
            announced: int | None = None
            vfs: tuple[VfInfo, ...] = ()
            unreadable: tuple[int, ...] = ()
            if self.reader is not None and nc.ifindex is not None:
                try:
                    announced, vfs = self.reader.vfs(nc.ifindex)
                except VfError as e:
                    if e.errno != errno.ENODEV:  # gone since it was listed
                        poll.error(nc.name, self.name, e.kind, f"{nc.name}: {e}")
                else:
                    vfs, unreadable = self._screen(nc.ifindex, announced, vfs, seen)
            poll.put(nc.name, Reading.sriov, SriovState(enabled, total, announced, vfs, unreadable))
        self._seen = seen
        self._not_pf = not_pf

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
