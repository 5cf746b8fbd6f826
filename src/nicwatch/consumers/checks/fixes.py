"""The command that would set a property to the wanted value, given with a failed check
(``fix``); where none is known, a hint that names what to look at."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicwatch.consumers.checks.readers import (
    _ecn_states,
    _fec_lane_ber,
    _module_vdm,
    _pending,
    _queue_irq_nodes,
    _reporter_states,
    _roce_ports,
    _unhealthy,
    _without_gid,
    _without_recovery,
)
from nicwatch.metrics import (
    LINK_DOWN_REASON,
)
from nicwatch.model import Sample
from nicwatch.normalize import rdma
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.rxpath import cpulist, cumulative_balance, nic_node
from nicwatch.printable import shell_word


def _devlink_fix(sample: Sample, wanted: str) -> str:
    """Diagnose each reporter that is not healthy; recover it where devlink can (a reporter
    without a recover operation answers EOPNOTSUPP): show its stored dump instead."""
    bad = _unhealthy(_reporter_states(sample))
    if bad is None:
        return "devlink health show"
    manual = _without_recovery(sample)
    steps = []
    for h, r in bad[1]:
        step = f"devlink health diagnose {shell_word(h)} reporter {shell_word(r)}; "
        step += (f"devlink health dump show {shell_word(h)} reporter {shell_word(r)}"
                 if (h, r) in manual else
                 f"devlink health recover {shell_word(h)} reporter {shell_word(r)}")
        steps.append(step)
    return "; ".join(steps)


def _firmware_fix(sample: Sample, wanted: str) -> str:
    handles = sorted(h for h, components in _pending(sample).items() if components)
    steps = [f"devlink dev reload {shell_word(h)} action fw_activate" for h in handles]
    return ("; ".join(steps) or "devlink dev info") + (
        "  # where the driver supports fw_activate (devlink dev show lists reload actions); "
        "else a cold reboot (a warm reboot does not reset every device's firmware)")


def _irq_fix(sample: Sample, wanted: str) -> str:
    """Pin each interrupt off the NIC's node to one of the node's CPUs, in turn (as mlx5
    and ice spread their vectors); irqbalance would move them again unless told not to."""
    nic = nic_node(sample.reading)
    rx = sample.reading.rxpath
    local = sorted(c for c, n in (rx.cpu_nodes if rx else {}).items() if n == nic)
    if nic is None or not local:
        return "# the NIC's NUMA node or its CPUs are not known: cat /sys/class/net/" \
            f"{sample.identity.device}/device/numa_node"
    off = [irq for irq, node in sorted(_queue_irq_nodes(sample).items()) if node != str(nic)]
    steps = [f"echo {local[i % len(local)]} > /proc/irq/{irq}/smp_affinity_list"
             for i, irq in enumerate(off)]
    return "; ".join(steps) + (f"  # node {nic} CPUs {cpulist(local)}; with irqbalance "
                               "running, ban these interrupts (--banirq) or it moves them")


def _balance_fix(sample: Sample, wanted: str) -> str:
    spread = cumulative_balance(sample.counters, sample.gauges)
    dev = _dev(sample)
    if spread is None:
        return f"# too few packets to judge; ethtool -x {dev}"
    top = spread.busiest
    return (f"ethtool -x {dev}; ethtool -X {dev} equal {spread.in_use}  # queue {top.queue} "
            f"took {top.share:.0%} of {spread.packets} packets, {spread.ratio:.1f}x its fair "
            f"share; few large flows collide whatever the table: ethtool -n {dev} "
            "rx-flow-hash tcp4 (sdfn hashes the ports too)")


def _down_hint(sample: Sample) -> str | None:
    """Why the link is down, where the driver says (nic_link_down_reason): the hint of a
    check whose value a down link does not report (docs/link-physics.md)."""
    reasons = [dict(k.labels) for k in sample.gauges if k.metric == LINK_DOWN_REASON.name]
    if not reasons:
        return None
    why = ", ".join(r["reason"] + (f"/{r['subreason']}" if r.get("subreason") else "")
                    for r in reasons)
    return (f"# link down: {why} (the driver's extended link state); ethtool "
            f"{_dev(sample)}; nicwatch show")


def _fec_ber_fix(sample: Sample, wanted: str) -> str:
    worst = _fec_lane_ber(sample) or "no ratio"
    return (f"# hardware, not settable: {worst}: clean or reseat the optic or cable, swap it "
            f"to see whether the lane follows it; ethtool -I --show-fec {_dev(sample)}; "
            "nicwatch show")


def _module_vdm_fix(sample: Sample, wanted: str) -> str:
    return (f"# hardware, not settable: {_module_vdm(sample) or 'no VDM'}: media side, clean "
            "or reseat the connectors and check the far end; host side, reseat the module or "
            f"try another cage; nicwatch module decode (ethtool -m {_dev(sample)} hex on)")


def _sriov_fix(sample: Sample, wanted: int) -> str:
    """The kernel refuses to change one non-zero VF count to another (EBUSY): back to 0
    first, which removes the VFs there are."""
    path = shell_word(f"/sys/class/net/{sample.identity.device}/device/sriov_numvfs")
    return f"echo 0 > {path} && echo {wanted} > {path}" if wanted else f"echo 0 > {path}"


def _gid_fix(sample: Sample, wanted: bool) -> str:
    missing = _without_gid(sample) or []
    ports = ", ".join(p.key for p in _roce_ports(sample))
    bdf = sample.identity.pci_address or "<pci address>"
    return (f"# no RoCE v2 GID for {', '.join(missing)} on {ports}: RoCE traffic to that "
            f"address cannot be set up. Check RoCE is on (devlink dev param show pci/{bdf} "
            f"name enable_roce) and the address is not tentative (ip -6 addr show dev "
            f"{sample.identity.device}); ib_core adds the GIDs when an address is added: "
            f"re-add it (ip addr del ADDR/LEN dev {sample.identity.device} && ip addr add "
            f"ADDR/LEN dev {sample.identity.device})")


def _rdma_mtu_fix(sample: Sample, wanted: int) -> str:
    need = wanted + rdma.ROCE_HEADERS
    return (f"ip link set dev {_dev(sample)} mtu {need}  # RoCE MTU {wanted} needs a netdev "
            f"MTU of at least {need} (iboe_get_mtu: {rdma.ROCE_HEADERS} bytes of RoCE "
            "headers); every switch port on the path must carry it too")


def _ecn_fix(sample: Sample, wanted: tuple[int, ...]) -> str:
    states = _ecn_states(sample)
    dev = sample.identity.device
    return " && ".join(
        f"echo 1 > {shell_word(f'/sys/class/net/{dev}/ecn/roce_{point}/enable/{p}')}"
        for p in wanted for point in ("rp", "np") if not states.get((point, p)))


def _trust_fix(sample: Sample, wanted: str) -> str:
    table = TABLES.get(sample.identity.driver or "")
    if table is not None and table.trust_command:
        return table.trust_command.format(dev=_dev(sample), trust=wanted)
    return f"dcb apptrust set dev {_dev(sample)} order {wanted}"


def _ets_fix(sample: Sample, wanted: tuple[Any, ...]) -> str:
    words = {"prio_tc": "prio-tc", "tc_bw": "tc-bw", "tsa": "tc-tsa"}
    return f"dcb ets set dev {_dev(sample)} " + " ".join(
        words[k] + " " + " ".join(f"{i}:{x}" for i, x in enumerate(v)) for k, v in wanted)


def _pcie_unknown(sample: Sample, reason: str) -> bool:
    """Whether the PCIe verdict is unknown for ``reason`` (nic_pcie_verdict_unknown)."""
    return sample.pcie_verdict is not None and reason in sample.pcie_verdict.unknown


def _pcie_fix(limit: str) -> Callable[[Sample, Any], str]:
    """The plain hint for a NIC link below what is wanted (see :func:`_pcie_hint` for the
    cases where the card itself is not at fault)."""
    def fix(sample: Sample, _wanted: Any) -> str:
        bdf = sample.identity.pci_address or "<pci address>"
        if sample.pcie_verdict is not None and limit in sample.pcie_verdict.slot_limits:
            cause = "the slot allows less than the card: check the BIOS lane split (bifurcation)"
        else:
            cause = "the link trained below card and slot: reseat the card, check the riser"
        return f"# hardware, not settable: {cause}; lspci -vv -s {bdf}"
    return fix


def _dev(sample: Sample) -> str:
    return shell_word(sample.identity.device)
