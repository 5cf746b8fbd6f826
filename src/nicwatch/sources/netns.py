"""Whether a sysfs root and this process's network namespace describe the same interfaces.

The sources that read through kernel sockets (ethtool netlink and ioctl, dcbnl, devlink,
netdev genl, module EEPROMs: collect.SOCKET_SOURCES) see the network namespace the daemon
runs in (SR-IOV and RDMA use netlink only over the live /sys); the
sysfs sources and the interface list see ``--path.sysfs``. The two differ when that root is
a fixture tree, or the host's /sys mounted into a container that has a network namespace
of its own (a DaemonSet without ``hostNetwork`` mounting /sys at /host/sys). Then an
interface of the tree and one of the namespace can share an ifindex (or a name), and a
socket's reply for one would be attached to the other: this host's rings on a fixture port.

:func:`compare` matches each interface of the tree by ifindex *and* name against the
namespace (``if_nameindex(3)``, one netlink dump in libc). The two agree when no interface
of the tree has its name or its ifindex held by a different interface of the namespace, and
at least one matches: then the socket sources read the interfaces that match (one that is
gone from the namespace has nothing to read). Otherwise they disagree and the socket sources
read none of them: nothing is mixed, and the collector reports it as one error of the poll
(source ``netns``: one warning when it starts, ``nicwatch_source_errors_total``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SOURCE = "netns"  # the source name the disagreement is reported under
KIND = "mismatch"


def namespace_interfaces() -> dict[str, int]:
    """name -> ifindex of every interface of this process's network namespace."""
    return {name: index for index, name in socket.if_nameindex()}


@dataclass(frozen=True, slots=True)
class Agreement:
    """``served``: the interfaces of the tree the socket sources may read; ``problem``: why
    the tree and the namespace disagree (None when they agree)."""

    served: frozenset[str]
    problem: str | None = None


def compare(tree: Iterable[tuple[str, int | None]], namespace: Mapping[str, int],
            root: str) -> Agreement:
    """The agreement of the tree's interfaces, (name, ifindex) pairs read under ``root``,
    with the namespace's ``name -> ifindex``."""
    by_index = {index: name for name, index in namespace.items()}
    matched: set[str] = set()
    conflicts: list[str] = []
    count = 0
    for name, ifindex in tree:
        count += 1
        held = namespace.get(name)
        if held is not None and held == ifindex:
            matched.add(name)
        elif held is not None or (ifindex is not None and ifindex in by_index):
            other = by_index.get(ifindex) if ifindex is not None else None
            here = (f"ifindex {held}" if held is not None else f"{other} has ifindex {ifindex}")
            conflicts.append(f"{name} (ifindex {ifindex} under {root}; {here} here)")
    if not conflicts and (matched or not count):
        return Agreement(frozenset(matched))
    first = conflicts[0] if conflicts else "none of its interfaces is here"
    return Agreement(frozenset(), (
        f"--path.sysfs {root} and this network namespace describe different interfaces "
        f"({len(conflicts)} of {count} differ: {first}): values read through kernel sockets "
        "(rings, channels, ethtool statistics, DCB, devlink, module) are left out; run "
        "nicwatch in the network namespace whose /sys it reads (hostNetwork for the host's)"))
