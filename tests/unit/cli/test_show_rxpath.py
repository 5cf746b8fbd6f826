"""`nicwatch show`: the receive path table (queues, the CPUs of their interrupts, placement
against the NIC's node, the hot queue) on two-node fixture hosts in the kernel's formats."""

from __future__ import annotations

from nicwatch.cli.show import format_table

from fixture_rxpath import ice_nic, mlx5_nic, polled


def rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("DEVICE")
                and "HOT QUEUE" in line)
    out_rows = []
    for line in lines[head + 1:]:
        if not line.strip():
            break
        out_rows.append([c.strip() for c in line.split("  ") if c.strip()])
    return out_rows


def test_hot_queue_its_cpu_and_placement(tmp_path):
    nic = mlx5_nic()
    nic.irqs[3].affinity = nic.irqs[3].effective = (2,)  # channel 2 moved to node 0
    packets = [1000] * 7 + [13000]
    got = rows(format_table(polled(tmp_path, [nic, ice_nic()], packets)))
    assert got == [
        # the E810 port: its interrupts by name, no queue counters here (no ethtool -S)
        ["ens1f0", "-", "0-7", "8 local", "-"],
        ["ens1f0np0", "8", "2,8-9,11-15", "7 local, 1 remote",
         "7: 65% (5.2x fair), CPU 15 (irq)"]]


def test_an_even_busy_nic(tmp_path):
    got = rows(format_table(polled(tmp_path, [mlx5_nic()], [1_000_000] * 8)))
    assert got == [["ens1f0np0", "8", "8-15", "8 local", "0: 12% (1.0x fair), CPU 8 (irq)"]]


def test_narrow_terminals_get_the_same_facts(tmp_path):
    out = format_table(polled(tmp_path, [mlx5_nic()], [1000] * 7 + [13000]), width=60)
    block = out[out.index("    receive path"):]
    assert "rx queues 8" in block and "hot queue (since its counter started) 7: 65%" in \
        " ".join(block.split())
