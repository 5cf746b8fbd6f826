"""The receive path source: interrupts, affinities, RPS and softnet under the sysfs and
procfs roots. For real where this machine has them (its own /proc/interrupts,
/sys/kernel/irq, /proc/net/softnet_stat, RPS on a veth queue in a namespace), and on fixture
hosts written in the kernel's formats (tests/helpers/fixture_rxpath.py) for the mlx5 and
ice layouts and a two-node host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nicwatch.model import NetClass, SoftnetCpu
from nicwatch.sources import Poll
from nicwatch.sources.interrupts import (
    InterruptSource,
    parse_cpu_mask,
    parse_interrupts,
    parse_per_cpu_count,
    parse_softnet,
)
from nicwatch.sources.sysfs_net import read_netclass

from fixture_rxpath import (
    FixtureHost,
    build,
    ice_nic,
    mlx5_nic,
    two_node_host,
    write_affinity,
    write_counts,
)
from netns import make_veth_pair, ns_python, ns_sh

# --------------------------------------------------------------------------- parsers


def test_cpu_masks_as_sysfs_prints_them():
    assert parse_cpu_mask("00000000") == ()
    assert parse_cpu_mask("3") == (0, 1)
    assert parse_cpu_mask("00000001,80000000") == (31, 32)
    assert parse_cpu_mask("ff,00000000,00000000") == tuple(range(64, 72))
    with pytest.raises(ValueError):
        parse_cpu_mask("0x3")


def test_per_cpu_count_is_indexed_by_cpu_number():
    assert parse_per_cpu_count("0,24361", (0, 1)) == (0, 24361)
    assert parse_per_cpu_count("5,7", (0, 2)) == (5, 0, 7)  # CPU 1 not possible
    with pytest.raises(ValueError):
        parse_per_cpu_count("1,2,3", (0, 1))


def test_this_hosts_interrupts_agree_with_sys_kernel_irq():
    """/proc/interrupts and /sys/kernel/irq/<n> (4.17+) say the same of every interrupt
    here: its name, and counts that only grow between the two reads."""
    first = {}
    for entry in os.listdir("/sys/kernel/irq"):
        base = Path("/sys/kernel/irq") / entry
        first[int(entry)] = ((base / "actions").read_text().strip() or None,
                             parse_per_cpu_count((base / "per_cpu_count").read_text(),
                                                 tuple(range(os.cpu_count() or 1))))
    table = parse_interrupts(Path("/proc/interrupts").read_text())
    assert table.cpus == tuple(range(os.cpu_count() or 1))
    shown = {irq: v for irq, v in first.items() if v[0]}  # /proc lists interrupts with actions
    assert set(shown) <= set(table.lines)
    for irq, (name, counts) in shown.items():
        assert table.lines[irq][1] == name.replace(",", ", ")
        assert all(a <= b for a, b in zip(counts, table.lines[irq][0], strict=True))


def test_interrupts_of_offline_cpus_and_shared_lines():
    text = ("            CPU0       CPU2\n"
            "  45:         10         20   PCI-MSIX-0000:17:00.0   1-edge      a, b\n"
            " NMI:          0          0   Non-maskable interrupts\n"
            "  46:          1          2  GICv3  27 Level     arch_timer\n")
    table = parse_interrupts(text)
    assert table.cpus == (0, 2)
    assert table.lines[45] == ((10, 0, 20), "a, b")
    assert table.lines[46] == ((1, 0, 2), "arch_timer")
    assert set(parse_interrupts(text, [46]).lines) == {46}


def test_this_hosts_softnet_stat():
    rows = parse_softnet(Path("/proc/net/softnet_stat").read_text())
    assert [r.cpu for r in rows] == list(range(os.cpu_count() or 1))
    assert all(len(r.counters) == 5 and None not in r.counters for r in rows)
    assert any(r.counters[0] > 0 for r in rows)  # this host has received packets


def test_softnet_stat_before_the_cpu_column():
    """Before 5.10 a line has no CPU column: lines follow the online CPUs."""
    text = ("00000010 00000001 00000002 00000000 00000000 00000000 00000000 00000000 "
            "00000000 00000003 00000004\n") * 2
    rows = parse_softnet(text, online=(0, 3))
    assert rows == (SoftnetCpu(0, (16, 1, 2, 3, 4)), SoftnetCpu(3, (16, 1, 2, 3, 4)))
    with pytest.raises(ValueError):
        parse_softnet(text)


# --------------------------------------------------------------------------- fixture hosts


def host_with(*nics) -> FixtureHost:
    host = FixtureHost(16, two_node_host(), list(nics))
    for cpu in range(16):
        host.softnet[cpu] = [1000 * cpu, cpu % 2, 3 * cpu, 0, 0]
    return host


def read(sysfs: Path, procfs: Path, names, refresh: float = 30.0,
         src: InterruptSource | None = None) -> tuple[Poll, InterruptSource]:
    src = src or InterruptSource(sysfs, procfs, refresh)
    poll = Poll([read_netclass(sysfs, n) for n in names])
    src.read(poll)
    return poll, src


@pytest.mark.parametrize("sys_kernel_irq", [True, False], ids=["sys-kernel-irq", "proc-only"])
def test_mlx5_and_ice_interrupts(tmp_path, sys_kernel_irq):
    mlx5, ice = mlx5_nic(), ice_nic()
    mlx5.irqs[3].counts = {10: 500}
    ice.irqs[1].counts = {0: 7, 5: 1}
    sysfs, procfs = build(host_with(mlx5, ice), tmp_path, sys_kernel_irq)
    poll, _ = read(sysfs, procfs, ["ens1f0np0", "ens1f0"])
    assert poll.errors == []
    rx = poll.parts["ens1f0np0"]["rxpath"]
    assert rx.irqs_from == "msi_irqs"
    assert [i.name for i in rx.irqs][:3] == ["mlx5_async0@pci:0000:17:00.0",
                                            "mlx5_comp0@pci:0000:17:00.0",
                                            "mlx5_comp1@pci:0000:17:00.0"]
    comp2 = rx.irqs[3]
    assert (comp2.irq, comp2.affinity, comp2.effective) == (153, (10,), (10,))
    assert comp2.counters[10] == 500 and sum(comp2.counters) == 500
    assert rx.cpu_nodes[3] == 0 and rx.cpu_nodes[12] == 1
    # the softnet lines of the CPUs its interrupts are delivered to: 8-15
    assert [r.cpu for r in rx.softnet] == list(range(8, 16))
    assert rx.softnet[2] == SoftnetCpu(10, (10000, 0, 30, 0, 0))
    ice_rx = poll.parts["ens1f0"]["rxpath"]
    assert ice_rx.irqs[1].name == "ice-ens1f0-TxRx-0" and ice_rx.irqs[1].counters[5] == 1
    assert len(poll.host["softnet"]) == 16


def test_counts_every_poll_affinity_on_the_cadence_or_when_moved(tmp_path):
    host = host_with(mlx5_nic())
    sysfs, procfs = build(host, tmp_path)
    poll, src = read(sysfs, procfs, ["ens1f0np0"], refresh=3600.0)
    comp0 = host.nics[0].irqs[1]
    comp0.counts = {8: 100}
    write_counts(host, sysfs, procfs)
    # irqbalance moves comp1 to CPU 0; nothing has arrived there yet
    comp1 = host.nics[0].irqs[2]
    comp1.affinity = comp1.effective = (0,)
    write_affinity(comp1, procfs)
    poll, _ = read(sysfs, procfs, ["ens1f0np0"], src=src)
    irqs = poll.parts["ens1f0np0"]["rxpath"].irqs
    assert irqs[1].counters[8] == 100
    assert irqs[2].effective == (9,)  # not re-read yet: the cadence is an hour
    comp1.counts = {0: 50}
    write_counts(host, sysfs, procfs)
    poll, _ = read(sysfs, procfs, ["ens1f0np0"], src=src)
    # taken on CPU 0, outside the effective affinity read before: read again at once
    assert poll.parts["ens1f0np0"]["rxpath"].irqs[2].effective == (0,)


def test_rps_masks_and_their_cpus(tmp_path):
    nic = ice_nic()
    nic.rps = {2: (12, 13)}
    sysfs, procfs = build(host_with(nic), tmp_path)
    poll, _ = read(sysfs, procfs, ["ens1f0"])
    rx = poll.parts["ens1f0"]["rxpath"]
    assert rx.rps == ((2, (12, 13)),)
    assert {r.cpu for r in rx.softnet} == {0, 1, 2, 3, 4, 5, 6, 7, 12, 13}


def test_an_unreadable_affinity_is_an_error_of_the_interface(tmp_path):
    sysfs, procfs = build(host_with(ice_nic()), tmp_path)
    target = procfs / "irq" / "201" / "effective_affinity_list"
    target.unlink()
    target.mkdir()  # reads fail with EISDIR
    poll, _ = read(sysfs, procfs, ["ens1f0"])
    assert [(d, e.source) for d, e in poll.errors] == [("ens1f0", "rxpath")]
    assert "irq/201/effective_affinity_list" in poll.errors[0][1].message
    irq = poll.parts["ens1f0"]["rxpath"].irqs[1]
    assert irq.effective is None and irq.affinity == (0,)


def test_an_interface_without_interrupts_or_rps_has_no_part(tmp_path):
    sysfs, procfs = build(host_with(), tmp_path)
    poll = Poll([NetClass("lo", 1, None, "up", 65536, None, None, True, 0, 0, 0, None, None,
                          None)])
    InterruptSource(sysfs, procfs).read(poll)
    assert poll.parts["lo"] == {}


def test_rps_on_a_real_veth_queue():
    pair = make_veth_pair(queues=2, subnet=4)
    try:
        ns_sh(pair.ns_b, "sh", "-c", f"echo 2 > /sys/class/net/{pair.b}/queues/rx-1/rps_cpus")
        code = f"""
import json
from nicwatch.sources import Poll
from nicwatch.sources.interrupts import InterruptSource
from nicwatch.sources.sysfs_net import read_netclass
poll = Poll([read_netclass("/sys", {pair.b!r})])
InterruptSource().read(poll)
rx = poll.parts[{pair.b!r}]["rxpath"]
print(json.dumps([rx.irqs, rx.irqs_from, rx.rps, [r.cpu for r in rx.softnet]]))
"""
        irqs, source, rps, softnet = ns_python(pair.ns_b, code)
    finally:
        pair.delete()
    assert (irqs, source, rps, softnet) == ([], "", [[1, [1]]], [1])


def test_counts_moved_on_the_effective_cpus_only_are_converted_there_only():
    """The fast path of per_cpu_count: the same counts as a full parse, and a count outside
    the effective affinity falls back to the full parse (and is seen as a move)."""
    from nicwatch.sources.interrupts import _IrqState, _moved, _update_counts
    possible = tuple(range(8))
    state = _IrqState("mlx5_comp3@pci:0000:17:00.0", (5,), (5,))
    first = b"0,0,0,0,0,100,0,7"
    _update_counts(state, first, possible)
    assert state.counts == (0, 0, 0, 0, 0, 100, 0, 7) and not state.inside_only
    assert not _moved(state)  # the first read: nothing to compare with
    _update_counts(state, b"0,0,0,0,0,250,0,7", possible)
    assert state.inside_only and state.counts == parse_per_cpu_count("0,0,0,0,0,250,0,7",
                                                                     possible)
    assert not _moved(state)
    _update_counts(state, b"0,0,3,0,0,260,0,7", possible)  # taken on CPU 2 as well
    assert not state.inside_only and state.counts == (0, 0, 3, 0, 0, 260, 0, 7)
    assert _moved(state)
    with pytest.raises(ValueError):
        _update_counts(state, b"0,0,3,0,0,x,0,7", possible)


@pytest.mark.parametrize("effective", [(0,), (7,), (2, 3), (0, 4, 7), (1, 5), tuple(range(8))])
def test_the_fast_path_agrees_with_a_full_parse_whatever_moved(effective):
    """Counts growing on the effective CPUs (a field getting longer: 9 -> 10), elsewhere,
    or both: the counts always equal a full parse of the same text, and the fast path is
    taken exactly when nothing outside the effective CPUs changed."""
    import random

    from nicwatch.sources.interrupts import _IrqState, _update_counts
    possible = tuple(range(8))
    rng = random.Random(sum(effective))
    state = _IrqState("x", effective, effective)
    counts = [rng.randrange(0, 12) for _ in possible]
    for _ in range(200):
        before = list(counts)
        for cpu in rng.sample(possible, rng.randrange(1, 3)):
            counts[cpu] += rng.choice((1, 9, 95, 1000))
        text = ",".join(map(str, counts)).encode()
        cut = state.segments is not None  # a whole parse before cut the text
        _update_counts(state, text, possible)
        assert state.counts == tuple(counts)
        only_inside = all(counts[c] == before[c] for c in possible if c not in effective)
        assert state.inside_only == (cut and only_inside)


def test_softnet_stat_of_1024_cpus_is_read_whole(tmp_path):
    """A 1,024-CPU host's softnet_stat is 138,240 bytes (15 words of 9 bytes a line, the
    6.8+ format this machine's 6.18 kernel prints): every CPU's line is read, none is lost
    past 64 KiB."""
    host = FixtureHost(1024, {0: tuple(range(512)), 1: tuple(range(512, 1024))},
                       [mlx5_nic(cpus=tuple(range(512, 520)))])
    for cpu in range(1024):
        host.softnet[cpu] = [7 * cpu + 1, cpu % 5, cpu % 3, cpu, 0]
    sysfs, procfs = build(host, tmp_path)
    assert (procfs / "net" / "softnet_stat").stat().st_size == 1024 * 135
    poll, _ = read(sysfs, procfs, ["ens1f0np0"])
    assert poll.errors == []
    table = poll.host["softnet"]
    assert [r.cpu for r in table] == list(range(1024))
    assert table[1000] == SoftnetCpu(1000, (7001, 0, 1, 1000, 0))
    rx = poll.parts["ens1f0np0"]["rxpath"]
    assert [r.cpu for r in rx.softnet] == list(range(512, 520))
    assert rx.softnet[3] == SoftnetCpu(515, (7 * 515 + 1, 0, 2, 515, 0))


def test_affinity_is_read_again_within_the_safety_period_or_when_the_irq_set_changes(tmp_path):
    """The layout is re-read every poll here (refresh 0), the affinities only every
    ``safety`` seconds (300), when the interface's interrupt set changes, or when an
    interrupt is taken outside them: an idle vector moved by a write shows within the
    period, and at once when a vector is added."""
    from fixture_rxpath import FixtureIrq
    now = [0.0]
    host = host_with(mlx5_nic())
    sysfs, procfs = build(host, tmp_path)
    src = InterruptSource(sysfs, procfs, refresh=0.0, safety=300.0, clock=lambda: now[0])

    def effective(irq: int) -> tuple[int, ...] | None:
        poll, _ = read(sysfs, procfs, ["ens1f0np0"], src=src)
        return {i.irq: i.effective for i in poll.parts["ens1f0np0"]["rxpath"].irqs}[irq]

    assert effective(152) == (9,)
    comp1 = host.nics[0].irqs[2]  # irq 152, idle
    comp1.affinity = comp1.effective = (3,)
    write_affinity(comp1, procfs)
    now[0] = 269.0
    assert effective(152) == (9,)  # within the period, nothing taken outside: kept
    now[0] = 271.0
    assert effective(152) == (3,)  # 0.9 x the period: read again
    comp1.affinity = comp1.effective = (4,)
    write_affinity(comp1, procfs)
    now[0] = 272.0
    assert effective(152) == (3,)
    # the driver adds a vector (a 9th channel): every affinity of the interface at once
    extra = FixtureIrq(159, "mlx5_comp8@pci:0000:17:00.0", (8,), (8,))
    host.nics[0].irqs.append(extra)
    write_affinity(extra, procfs)
    (sysfs / "bus" / "pci" / "devices" / "0000:17:00.0" / "msi_irqs" / "159").write_text("msix\n")
    (sysfs / "kernel" / "irq" / "159").mkdir()
    (sysfs / "kernel" / "irq" / "159" / "actions").write_text(extra.name + "\n")
    write_counts(host, sysfs, procfs)
    now[0] = 273.0
    assert effective(152) == (4,) and effective(159) == (8,)


def test_counts_through_kept_open_files_on_this_hosts_interrupts(tmp_path):
    """keep_open on this kernel's own /sys/kernel/irq: the busiest interrupt here (a
    fixture PCI function listing it in msi_irqs, the real /sys/kernel/irq and /proc/irq
    behind symlinks) is read through one kept-open per_cpu_count, re-read with pread at
    offset 0: each poll's counts lie between direct reads before and after it."""
    from fixture_rxpath import FixtureIrq, FixtureNic

    def direct(irq: int) -> tuple[int, ...]:
        text = Path(f"/sys/kernel/irq/{irq}/per_cpu_count").read_text()
        return parse_per_cpu_count(text, tuple(range(len(text.split(",")))))

    busiest = max((int(n) for n in os.listdir("/sys/kernel/irq")), key=lambda n: sum(direct(n)))
    cpus = len(direct(busiest))
    nic = FixtureNic("ens1f0np0", "0000:17:00.0", "mlx5_core", 0, tuple(range(cpus)), 4, 0,
                     [FixtureIrq(busiest, "irq", (0,), (0,))])
    sysfs, procfs = build(FixtureHost(cpus, {0: tuple(range(cpus))}, [nic]), tmp_path)
    for tree, real in ((sysfs / "kernel" / "irq", "/sys/kernel/irq"),
                       (procfs / "irq", "/proc/irq")):
        for entry in tree.iterdir():
            for f in entry.iterdir():
                f.unlink()
            entry.rmdir()
        tree.rmdir()
        tree.symlink_to(real)
    src = InterruptSource(sysfs, procfs, 30.0, keep_open=True)
    last = direct(busiest)
    for _ in range(3):
        with open(tmp_path / "io", "wb") as f:  # some disk I/O between polls
            f.write(b"x" * 65536)
            os.fsync(f.fileno())
        poll, _ = read(sysfs, procfs, ["ens1f0np0"], src=src)
        after = direct(busiest)
        assert poll.errors == []
        counts = poll.parts["ens1f0np0"]["rxpath"].irqs[0].counters
        assert all(a <= b <= c for a, b, c in zip(last, counts, after, strict=True))
        last = after
    assert src._files is not None and len(src._files) == 1
    src.close()
    assert len(src._files) == 0


@pytest.mark.parametrize("words", [13, 15])
def test_fixed_width_softnet_lines_convert_as_the_line_split_does(words):
    """The C-level conversion of the kernel's fixed-width lines (5.10-6.7: 13 words, 6.8+:
    15) gives what splitting each line gives, with and without the last newline; a line
    of another width (a word not %08x) falls back to the split."""
    from nicwatch.sources.interrupts import _parse_softnet_fixed
    rows = [[0xFFFFFFF0 - cpu, cpu, 3 * cpu, 0, 0, 0, 0, 0, 0, 5, 6, 0, cpu, 1, 2][:words]
            for cpu in range(40)]
    lines = [" ".join(f"{w:08x}" for w in row) for row in rows]
    text = "\n".join(lines)
    split = parse_softnet(text.replace(" ", "  "))  # the same words, not fixed-width
    assert _parse_softnet_fixed(text.replace(" ", "  ")) is None
    assert _parse_softnet_fixed(text) == _parse_softnet_fixed(text + "\n") == split
    assert split[39] == SoftnetCpu(39, (0xFFFFFFF0 - 39, 39, 117, 5, 6))
    odd = text.replace("00000005", "5", 1)
    assert _parse_softnet_fixed(odd) is None and parse_softnet(odd)[0].counters[3] == 5
    real = Path("/proc/net/softnet_stat").read_text()  # this kernel's, read once
    assert _parse_softnet_fixed(real) == parse_softnet(real.replace(" ", "  "))


def test_a_per_cpu_count_cut_at_a_page_is_read_from_proc_interrupts(tmp_path):
    """per_cpu_count_show (kernel/irq/irqdesc.c) prints with sysfs_emit_at, which stops at
    a page: on a 1,024-CPU host an interrupt taken everywhere millions of times prints
    ~11 kB, cut at 4,095 bytes, the last number maybe in half. Such a file (as the kernel
    leaves it) is not a parse error: that interrupt's counts come from its line of
    /proc/interrupts, which is never cut; the others stay on per_cpu_count."""
    import resource
    page = resource.getpagesize()
    nic = mlx5_nic(cpus=tuple(range(512, 520)), channels=2)
    busy = nic.irqs[1]
    busy.counts = {cpu: 1_000_000_000 + cpu for cpu in range(1024)}
    nic.irqs[2].counts = {513: 77}
    host = FixtureHost(1024, {0: tuple(range(512)), 1: tuple(range(512, 1024))}, [nic])
    sysfs, procfs = build(host, tmp_path)
    path = sysfs / "kernel" / "irq" / str(busy.irq) / "per_cpu_count"
    full = path.read_bytes()
    assert len(full) > page
    path.write_bytes(full[:page - 1])  # sysfs_emit_at: PAGE_SIZE - 1 characters, no newline
    poll, _ = read(sysfs, procfs, ["ens1f0np0"])
    assert poll.errors == []
    irqs = poll.parts["ens1f0np0"]["rxpath"].irqs
    assert irqs[1].counters == tuple(1_000_000_000 + cpu for cpu in range(1024))
    assert irqs[2].counters is not None and irqs[2].counters[513] == 77
