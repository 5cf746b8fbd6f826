"""RoCE QoS settings outside dcbnl: the vendor mlx5 ECN tree and the RDMA default ToS.

Files read, below the sysfs root (``--path.sysfs``):

===================================================  ===========================================
``class/net/<if>/ecn/roce_rp/enable/<0-7>``          ``"1"``: DCQCN reaction point (rate
                                                     limiting on CNPs) on for that priority
``class/net/<if>/ecn/roce_np/enable/<0-7>``          ``"1"``: notification point (CNPs sent for
                                                     ECN-marked packets) on for that priority
``class/net/<if>/ecn/roce_np/cnp_dscp``              DSCP of the CNPs the port sends
``class/net/<if>/ecn/roce_np/cnp_802p_prio``         802.1p priority of those CNPs
``kernel/config/rdma_cm/<dev>/ports/<n>/             ToS byte rdma_cm gives RoCE connections
default_roce_tos``                                   (configfs; the directory exists only
                                                     after ``mkdir`` of ``<dev>``)
``class/infiniband/<dev>/tc/<n>/traffic_class``      ``"Global tclass=106"``: the vendor mlx5
                                                     override of every QP's traffic class;
                                                     empty when none is set
``class/net/<if>/qos/trust``                         ``"dscp"`` or ``"pcp"``: the vendor mlx5
                                                     priority trust state, what mlnx_qos reads
                                                     (and writes) where the file exists
===================================================  ===========================================

The ``ecn/`` and ``tc/`` trees are created by the vendor (MLNX_OFED / DOCA-OFED) mlx5 driver's
``en_sysfs.c`` / ``main.c`` (every attribute prints ``"%d\\n"``); upstream mlx5 has neither
(its DCQCN switches are in debugfs/devlink). Each ECN read is a firmware query on mlx5, so
the collector reads this tree on the PCIe cadence, not every poll. Absent files stay absent.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import ClassVar

from nicwatch.model import Reading, RoceEcn
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.sysfs_pci import LINK_SAFETY, SysfsReader, parse_unsigned

PRIORITIES = range(8)
_TCLASS = re.compile(r"Global tclass=([0-9]{1,3})")


# Seconds an interface found without the vendor ecn/ tree is taken to have none (unless its
# ifindex changes: a netdev registered again); the PCIe paths' safety period.
ABSENT_REFRESH = LINK_SAFETY


def _flag(text: str) -> bool:
    value = parse_unsigned(text)
    if value not in (0, 1):
        raise ValueError(f"expected 0 or 1, got {text!r}")
    return bool(value)


def read_roce_ecn(root: str | os.PathLike[str], ifname: str,
                  problems: list[str] | None = None) -> RoceEcn | None:
    """The ``ecn/`` tree of ``ifname``; None when the interface has none."""
    reader = SysfsReader(root)
    ecn = Path("class/net") / ifname / "ecn"
    if not (reader.root / ecn).is_dir():
        return None
    got = RoceEcn(
        rp_enabled=tuple(reader.value(ecn / "roce_rp/enable" / str(p), _flag) for p in PRIORITIES),
        np_enabled=tuple(reader.value(ecn / "roce_np/enable" / str(p), _flag) for p in PRIORITIES),
        cnp_dscp=reader.value(ecn / "roce_np/cnp_dscp", parse_unsigned),
        cnp_802p_prio=reader.value(ecn / "roce_np/cnp_802p_prio", parse_unsigned))
    if problems is not None:
        problems.extend(reader.problems)
    return got


TRUST_STATES = ("dscp", "pcp")


def parse_trust(text: str) -> str:
    """The vendor mlx5 ``qos/trust`` file: one word, as mlnx_qos reads it (the file's text
    without its newline, Mellanox/mlnx-tools python/mlnx_qos Trust.getTrust)."""
    if text not in TRUST_STATES:
        raise ValueError(f"expected one of {', '.join(TRUST_STATES)}, got {text[:40]!r}")
    return text


def read_mlx5_trust(root: str | os.PathLike[str], ifname: str,
                    problems: list[str] | None = None) -> str | None:
    """The vendor mlx5 trust state of ``ifname``; None where the file is absent."""
    reader = SysfsReader(root)
    got = reader.value(Path("class/net") / ifname / "qos" / "trust", parse_trust)
    if problems is not None:
        problems.extend(reader.problems)
    return got


def parse_traffic_class(text: str) -> int:
    """The global value of a vendor mlx5 ``tc/<n>/traffic_class`` file (first line)."""
    m = _TCLASS.fullmatch(text.splitlines()[0].strip()) if text else None
    if not m or int(m.group(1)) > 255:
        raise ValueError(f"expected \"Global tclass=<0-255>\", got {text!r}")
    return int(m.group(1))


def read_rdma_tos(reader: SysfsReader, device: str, port: int) -> tuple[int | None, int | None]:
    """(rdma_cm default_roce_tos, vendor mlx5 global traffic_class) of one RDMA port."""
    tos = reader.value(Path("kernel/config/rdma_cm") / device / "ports" / str(port)
                       / "default_roce_tos", parse_unsigned)
    tclass_file = Path("class/infiniband") / device / "tc" / str(port) / "traffic_class"
    quiet = SysfsReader(reader.root)  # an empty file means "not set", not a problem
    text = quiet.text(tclass_file)
    tclass = None
    if text and not text.startswith("Global tclass=") and "\n" not in text:
        reader.note(tclass_file, f"unparsable {text[:40]!r}")
    elif text and text.startswith("Global tclass="):
        try:
            tclass = parse_traffic_class(text)
        except ValueError as e:
            reader.note(tclass_file, str(e))
    return tos, tclass


class SysfsRoceSource:
    """The vendor mlx5 ``ecn/`` tree and ``qos/trust`` file of each interface as a
    :class:`~nicwatch.sources.Source` (the ``roce_ecn`` and ``mlx5_trust`` parts of its
    Reading). Each file is a firmware query, so a reading is reused for ``refresh`` seconds,
    the PCIe cadence; files present but unreadable or garbage are one error per interface per
    poll, naming them. The vendor driver makes the tree when it registers the netdev
    (mlx5e_sysfs_create), so an interface without one is looked at again only as a new
    ifindex or after ``absent_refresh`` seconds: on 2,000 veths at the 5 s cadence the
    lookups for a tree none had cost 102 ms a poll."""

    name = "sysfs_roce_ecn"
    fills: ClassVar[frozenset[str]] = frozenset({"roce_ecn", "mlx5_trust"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, root: str | os.PathLike[str], refresh: float = 0.0,
                 absent_refresh: float = ABSENT_REFRESH) -> None:
        self.root = root
        self.refresh = refresh
        # refresh 0 (a fixture tree, a test): everything every poll
        self.absent_refresh = max(refresh, absent_refresh) if refresh else 0.0
        # netdev -> (read at, ifindex, RoceEcn | None, vendor trust | None, problems)
        self._ecn: dict[str, tuple[float, int | None, RoceEcn | None, str | None,
                                   tuple[str, ...]]] = {}

    @classmethod
    def open(cls, options: SourceOptions) -> SysfsRoceSource:
        return cls(options.sysfs, options.pcie_refresh)

    def read(self, poll: Poll) -> None:
        now = time.monotonic()
        cache = {}
        for nc in poll.each():
            entry = self._ecn.get(nc.name)
            if entry is None or entry[1] != nc.ifindex or now - entry[0] >= 0.9 * (
                    self.refresh if entry[2] is not None else self.absent_refresh):
                problems: list[str] = []
                ecn = read_roce_ecn(self.root, nc.name, problems)
                # The vendor driver creates qos/ and ecn/ together (en_sysfs.c,
                # mlx5e_sysfs_create): no ecn/ tree, no trust file to look for (saves one
                # failed open per interface, ~50 us each on 5,000 interfaces).
                trust = None if ecn is None else read_mlx5_trust(self.root, nc.name, problems)
                entry = (now, nc.ifindex, ecn, trust, tuple(problems))
            cache[nc.name] = entry
            poll.put(nc.name, Reading.roce_ecn, entry[2])
            poll.put(nc.name, Reading.mlx5_trust, entry[3])
            if entry[4]:
                poll.error(nc.name, self.name, "invalid", "; ".join(entry[4]))
        self._ecn = cache

    def close(self) -> None:
        pass
