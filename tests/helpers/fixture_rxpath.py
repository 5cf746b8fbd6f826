"""Fixture hosts for the receive path: a sysfs and a procfs tree written in the kernel's own
formats, for NIC interrupt layouts this machine does not have (mlx5, ice) and for host sizes
it does not have (256 CPUs, two NUMA nodes).

Formats, from the kernel source (6.18):

* ``/proc/interrupts`` (kernel/irq/proc.c show_interrupts): a header of ``prec + 8`` spaces
  and ``CPU%-8d`` per online CPU; per interrupt ``%*d: `` (prec = digits of nr_irqs, at
  least 3), ``%10u `` per online CPU, `` %8s`` the chip name (x86 MSI-X:
  ``PCI-MSIX-<bdf>``), `` %*lu`` the hardware irq, ``-%-8s`` the flow handler name (``edge``),
  then ``  %s`` the first action name and ``, %s`` each further one;
* ``/sys/kernel/irq/<n>/per_cpu_count`` (kernel/irq/irqdesc.c per_cpu_count_show): ``%u``
  per possible CPU joined by ``,``; ``actions``: the action names joined by ``,``;
* ``/proc/irq/<n>/smp_affinity_list``, ``effective_affinity_list`` (kernel/irq/proc.c):
  ``%*pbl`` (``0-3,8``);
* ``/proc/net/softnet_stat`` (net/core/net-procfs.c softnet_seq_show, 6.8+): 15 ``%08x``
  words per online CPU: processed, dropped, time_squeeze, 0, 0, 0, 0, 0, 0, received_rps,
  flow_limit_count, backlog length, CPU, input and process queue lengths;
* ``/sys/bus/pci/devices/<bdf>/msi_irqs/<n>`` (drivers/pci/msi/msi.c msi_sysfs_populate):
  one file per vector, named by its Linux irq number;
* ``/sys/class/net/<if>/queues/rx-<n>/rps_cpus`` (net/core/net-sysfs.c show_rps_map):
  ``%*pb`` (32-bit hex words, most significant first, comma-separated);
* ``/sys/devices/system/node/node<k>/cpulist``, ``/sys/devices/system/cpu/{possible,online}``:
  ``%*pbl``.

The interrupt names are the drivers' (mlx5 pci_irq.c ``mlx5_comp%d@pci:%s``, ice
``ice-<netdev>-TxRx-%d`` and ``ice-<bdf>:misc``); counts are made up.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from nicwatch.collect import Collector, Selection
from nicwatch.normalize.rxpath import cpulist


@dataclass
class FixtureIrq:
    irq: int
    name: str
    affinity: tuple[int, ...]
    effective: tuple[int, ...]
    counts: dict[int, int] = field(default_factory=dict)  # cpu -> interrupts


@dataclass
class FixtureNic:
    name: str
    bdf: str
    driver: str
    numa_node: int
    local_cpus: tuple[int, ...]
    ifindex: int
    rx_queues: int
    irqs: list[FixtureIrq]
    rps: dict[int, tuple[int, ...]] = field(default_factory=dict)
    mac: str = "b8:ce:f6:00:00:01"
    speed: int = 400000


@dataclass
class FixtureHost:
    cpus: int
    nodes: dict[int, tuple[int, ...]]
    nics: list[FixtureNic]
    softnet: dict[int, list[int]] = field(default_factory=dict)  # cpu -> 5 SOFTNET_FIELDS
    other_irqs: list[FixtureIrq] = field(default_factory=list)  # NVMe and the like


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def cpu_mask(cpus: tuple[int, ...], width: int) -> str:
    """``%*pb`` of a mask ``width`` bits wide."""
    value = sum(1 << c for c in cpus)
    words = max(1, (width + 31) // 32)
    return ",".join(f"{(value >> (32 * i)) & 0xFFFFFFFF:08x}" for i in reversed(range(words)))


def interrupts_text(host: FixtureHost) -> str:
    irqs = sorted([*host.other_irqs, *(i for nic in host.nics for i in nic.irqs)],
                  key=lambda i: i.irq)
    prec, j = 3, 1000
    top = max((i.irq for i in irqs), default=0) + 1
    while prec < 10 and j <= top:
        prec += 1
        j *= 10
    lines = [" " * (prec + 8) + "".join(f"CPU{c:<8d}" for c in range(host.cpus)).rstrip()]
    chip_of = {i.irq: f"PCI-MSIX-{nic.bdf}" for nic in host.nics for i in nic.irqs}
    for n, irq in enumerate(irqs):
        counts = "".join(f"{irq.counts.get(c, 0):10d} " for c in range(host.cpus))
        chip = chip_of.get(irq.irq, "PCI-MSIX-0000:c1:00.0")
        lines.append(f"{irq.irq:>{prec}d}: {counts} {chip:>8s} {n:>{prec}d}-{'edge':<8s}"
                     f"  {irq.name}")
    lines.append(f"{'NMI':>{prec}s}: " + "".join(f"{0:10d} " for _ in range(host.cpus))
                 + "  Non-maskable interrupts")
    lines.append(f"{'LOC':>{prec}s}: " + "".join(f"{12345678:10d} " for _ in range(host.cpus))
                 + "  Local timer interrupts")
    return "\n".join(lines) + "\n"


def softnet_text(host: FixtureHost) -> str:
    out = []
    for cpu in range(host.cpus):
        p, d, sq, rps, fl = host.softnet.get(cpu, [0, 0, 0, 0, 0])
        words = [p, d, sq, 0, 0, 0, 0, 0, 0, rps, fl, 0, cpu, 0, 0]
        out.append(" ".join(f"{w & 0xFFFFFFFF:08x}" for w in words))
    return "\n".join(out) + "\n"


def write_counts(host: FixtureHost, sysfs: Path, procfs: Path,
                 proc_interrupts: bool = True) -> None:
    """(Re)write every count: per_cpu_count, /proc/interrupts and softnet_stat."""
    for irq in [*host.other_irqs, *(i for nic in host.nics for i in nic.irqs)]:
        _write(sysfs / "kernel" / "irq" / str(irq.irq) / "per_cpu_count",
               ",".join(str(irq.counts.get(c, 0)) for c in range(host.cpus)) + "\n")
    if proc_interrupts:
        _write(procfs / "interrupts", interrupts_text(host))
    _write(procfs / "net" / "softnet_stat", softnet_text(host))


def write_affinity(irq: FixtureIrq, procfs: Path) -> None:
    base = procfs / "irq" / str(irq.irq)
    _write(base / "smp_affinity_list", cpulist(irq.affinity) + "\n")
    _write(base / "effective_affinity_list", cpulist(irq.effective) + "\n")


def build(host: FixtureHost, root: Path, sys_kernel_irq: bool = True) -> tuple[Path, Path]:
    """Write the host's sysfs and procfs trees under ``root``; returns (sysfs, procfs).
    ``sys_kernel_irq`` False leaves out /sys/kernel/irq (a kernel before 4.17)."""
    sysfs, procfs = root / "sys", root / "proc"
    every = f"0-{host.cpus - 1}"
    _write(sysfs / "devices" / "system" / "cpu" / "possible", every + "\n")
    _write(sysfs / "devices" / "system" / "cpu" / "online", every + "\n")
    for node, cpus in host.nodes.items():
        _write(sysfs / "devices" / "system" / "node" / f"node{node}" / "cpulist",
               cpulist(cpus) + "\n")
    (sysfs / "class" / "net").mkdir(parents=True, exist_ok=True)
    for nic in host.nics:
        domain = f"pci0000:{nic.bdf[5:7]}"
        fn = sysfs / "devices" / domain / nic.bdf
        for name, value in (("vendor", "0x15b3" if nic.driver == "mlx5_core" else "0x8086"),
                            ("device", "0x1021" if nic.driver == "mlx5_core" else "0x159b"),
                            ("class", "0x020000"), ("numa_node", str(nic.numa_node)),
                            ("local_cpulist", cpulist(nic.local_cpus)), ("enable", "1"),
                            ("current_link_speed", "32.0 GT/s PCIe"),
                            ("current_link_width", "16"), ("max_link_speed", "32.0 GT/s PCIe"),
                            ("max_link_width", "16"), ("power_state", "D0")):
            _write(fn / name, value + "\n")
        for irq in nic.irqs:
            _write(fn / "msi_irqs" / str(irq.irq), "msix\n")
        drivers = sysfs / "bus" / "pci" / "drivers" / nic.driver
        drivers.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(fn, drivers), drivers / nic.bdf)
        os.symlink(os.path.relpath(drivers, fn), fn / "driver")
        devices = sysfs / "bus" / "pci" / "devices"
        devices.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(fn, devices), devices / nic.bdf)
        net = fn / "net" / nic.name
        for name, value in (("ifindex", str(nic.ifindex)), ("iflink", str(nic.ifindex)),
                            ("address", nic.mac), ("operstate", "up"), ("mtu", "9000"),
                            ("speed", str(nic.speed)), ("duplex", "full"), ("carrier", "1"),
                            ("carrier_changes", "2"), ("carrier_up_count", "1"),
                            ("carrier_down_count", "1"), ("dev_port", "0"), ("type", "1"),
                            ("flags", "0x1003")):
            _write(net / name, value + "\n")
        for stat in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped",
                     "rx_missed_errors"):
            _write(net / "statistics" / stat, "0\n")
        for q in range(nic.rx_queues):
            _write(net / "queues" / f"rx-{q}" / "rps_cpus",
                   cpu_mask(nic.rps.get(q, ()), host.cpus) + "\n")
            _write(net / "queues" / f"tx-{q}" / "xps_cpus", cpu_mask((), host.cpus) + "\n")
        os.symlink(os.path.relpath(fn, net), net / "device")
        os.symlink(os.path.relpath(net, sysfs / "class" / "net"),
                   sysfs / "class" / "net" / nic.name)
    for irq in [*host.other_irqs, *(i for nic in host.nics for i in nic.irqs)]:
        write_affinity(irq, procfs)
        if sys_kernel_irq:
            _write(sysfs / "kernel" / "irq" / str(irq.irq) / "actions", irq.name + "\n")
    write_counts(host, sysfs, procfs)
    if not sys_kernel_irq:
        shutil.rmtree(sysfs / "kernel" / "irq", ignore_errors=True)
    return sysfs, procfs


# --------------------------------------------------------------------------- hosts


def two_node_host(cpus_per_node: int = 8) -> dict[int, tuple[int, ...]]:
    return {0: tuple(range(cpus_per_node)),
            1: tuple(range(cpus_per_node, 2 * cpus_per_node))}


def mlx5_nic(name: str = "ens1f0np0", bdf: str = "0000:17:00.0", node: int = 1,
             cpus: tuple[int, ...] = tuple(range(8, 16)), first_irq: int = 150,
             channels: int = 8, ifindex: int = 4) -> FixtureNic:
    """A ConnectX-7 port: the async EQ vector, then one completion vector per channel, each
    pinned to one CPU of ``cpus`` in order (mlx5's own spreading over its local CPUs)."""
    irqs = [FixtureIrq(first_irq, f"mlx5_async0@pci:{bdf}", cpus, cpus[:1])]
    for ch in range(channels):
        cpu = cpus[ch % len(cpus)]
        irqs.append(FixtureIrq(first_irq + 1 + ch, f"mlx5_comp{ch}@pci:{bdf}", (cpu,), (cpu,)))
    return FixtureNic(name, bdf, "mlx5_core", node, cpus, ifindex, channels, irqs)


def ice_nic(name: str = "ens1f0", bdf: str = "0000:3b:00.0", node: int = 0,
            cpus: tuple[int, ...] = tuple(range(8)), first_irq: int = 200,
            queues: int = 8, ifindex: int = 5) -> FixtureNic:
    """An E810 port: the misc vector, then one TxRx vector per queue pair."""
    irqs = [FixtureIrq(first_irq, f"ice-{bdf}:misc", cpus, cpus[:1])]
    for q in range(queues):
        cpu = cpus[q % len(cpus)]
        irqs.append(FixtureIrq(first_irq + 1 + q, f"ice-{name}-TxRx-{q}", (cpu,), (cpu,)))
    return FixtureNic(name, bdf, "ice", node, cpus, ifindex, queues, irqs,
                      mac="40:a6:b7:00:00:01", speed=100000)


def mlx5_collector(sysfs: Path, procfs: Path, netdev: object) -> Collector:
    """A collector of a fixture host (``build``) whose ConnectX-7 port ens1f0np0 answers
    with the mlx5 `ethtool -S` of tests/fixtures/ethtool and ``netdev``'s records (a
    fixture_netdev.KernelNetdev)."""
    from fixture_ethtool import RecordedEthtool
    from paths import ETHTOOL

    return Collector(sysfs, Selection(include=".*"),
                     ioctl=RecordedEthtool({"ens1f0np0": {
                         "stats": ETHTOOL / "mlx5_core.txt", "driver": "mlx5_core"}}),
                     netdev=netdev, procfs=procfs)


def polled(tmp_path: Path, nics: list[FixtureNic], packets: list[int] | None = None) -> list:
    """One poll of a two-node, 16-CPU fixture host with ``nics``: a ConnectX-7 port among
    them has its netdev records (tests/helpers/fixture_netdev.py mlx5_device, 8 channels,
    ``packets`` per rx queue) and the mlx5 `ethtool -S` of tests/fixtures/ethtool."""
    from fixture_netdev import KernelNetdev, mlx5_device

    host = FixtureHost(16, two_node_host(), nics)
    sysfs, procfs = build(host, tmp_path)
    netdev = KernelNetdev([mlx5_device(4, 8, 150, rx_packets=packets or [0] * 8)])
    collector = mlx5_collector(sysfs, procfs, netdev)
    try:
        return list(collector.poll().samples)
    finally:
        collector.close()
