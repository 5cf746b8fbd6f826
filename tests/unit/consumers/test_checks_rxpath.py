"""The receive path's checks, irq_numa_local and rx_queue_balance, on fixture hosts in the
kernel's formats (tests/helpers/fixture_rxpath.py: a two-node host, a ConnectX-7 port on node 1
with its netdev queue -> NAPI -> irq records, an E810 port known by its interrupt names)."""

from __future__ import annotations

import tomllib

import pytest

from nicwatch.consumers.checks import (
    RX_BALANCE_LIMIT,
    CheckResult,
    evaluate,
    parse_expectations,
)
from nicwatch.model import Sample
from nicwatch.values import ConfigError

from fixture_rxpath import ice_nic, mlx5_nic, polled

EXPECT = "[[expect]]\nall = true\nirq_numa_local = true\nrx_queue_balance = 'balanced'\n"


poll = polled


def checked(text: str, samples: list[Sample]) -> dict[tuple[str, str], CheckResult]:
    report = evaluate(parse_expectations(tomllib.loads(text), "host.toml"), samples)
    return {(r.device, r.check): r for r in report.results}


def test_a_busy_well_placed_nic_passes_both(tmp_path):
    """Healthy and busy: eight completion vectors on the node-1 CPUs of a node-1 ConnectX-7,
    8.2 million packets over eight queues, the busiest 1.4x its fair share."""
    packets = [1_400_000, 1_100_000, 1_000_000, 1_000_000, 1_000_000, 900_000, 900_000,
               900_000]
    got = checked(EXPECT, poll(tmp_path, [mlx5_nic()], packets))
    assert got[("ens1f0np0", "irq_numa_local")].passed
    assert got[("ens1f0np0", "irq_numa_local")].actual == "local"
    assert got[("ens1f0np0", "rx_queue_balance")].passed
    assert got[("ens1f0np0", "rx_queue_balance")].actual == "balanced"


def test_irqs_of_a_node_1_nic_pinned_to_node_0_fail_naming_them_and_the_fix(tmp_path):
    nic = mlx5_nic(cpus=tuple(range(8)))  # on node 1, its vectors spread over CPUs 0-7
    got = checked(EXPECT, poll(tmp_path, [nic], [1000] * 8))[("ens1f0np0", "irq_numa_local")]
    assert not got.passed
    assert got.actual == "remote: irq 151-158 on node 0, NIC on node 1"
    assert got.fix is not None
    steps = got.fix.split("  # ")[0].split("; ")
    assert steps == [f"echo {8 + i} > /proc/irq/{151 + i}/smp_affinity_list" for i in range(8)]
    assert "CPUs 8-15" in got.fix and "irqbalance" in got.fix


def test_one_vector_off_the_node_among_local_ones(tmp_path):
    nic = mlx5_nic()
    nic.irqs[3].affinity = nic.irqs[3].effective = (2,)  # completion vector 2 on CPU 2
    got = checked(EXPECT, poll(tmp_path, [nic]))[("ens1f0np0", "irq_numa_local")]
    assert got.actual == "remote: irq 153 on node 0, NIC on node 1"
    assert got.fix is not None and got.fix.startswith("echo 8 > /proc/irq/153/smp_affinity_list")


def test_interrupts_known_by_name_only(tmp_path):
    """An E810 port on node 0 (no netdev records: its queues by the ice-<if>-TxRx-<n> names):
    local; its misc vector, not a queue's, spread over all CPUs, does not count."""
    nic = ice_nic()
    nic.irqs[0].affinity = nic.irqs[0].effective = tuple(range(16))
    got = checked("[[expect]]\ninterfaces = 'ens1f0'\nirq_numa_local = true\n",
                  poll(tmp_path, [nic]))
    assert got[("ens1f0", "irq_numa_local")].actual == "local"
    nic.irqs[5].affinity = nic.irqs[5].effective = (3, 12)  # queue 4 over both nodes
    got = checked("[[expect]]\ninterfaces = 'ens1f0'\nirq_numa_local = true\n",
                  poll(tmp_path / "again", [nic]))
    assert got[("ens1f0", "irq_numa_local")].actual == \
        "remote: irq 205 on several nodes, NIC on node 0"


def test_one_queue_taking_most_packets_fails_naming_queue_and_cpu(tmp_path):
    packets = [1000] * 7 + [13000]  # queue 7: 65% of 20,000 packets, 5.2x its fair share
    got = checked(EXPECT, poll(tmp_path, [mlx5_nic()], packets))[
        ("ens1f0np0", "rx_queue_balance")]
    assert not got.passed
    assert got.actual == "queue 7 above 2x fair, CPU 15"
    assert got.fix is not None and got.fix.startswith(
        "ethtool -x ens1f0np0; ethtool -X ens1f0np0 equal 8  # queue 7 took 65% of 20000 "
        "packets, 5.2x its fair share")


@pytest.mark.parametrize("busiest, passes", [(2800, True), (2801, False)])
def test_the_balance_limit_is_inclusive(tmp_path, busiest, passes):
    # 2,800 of 11,200 packets is 0.25, exactly RX_BALANCE_LIMIT x the fair share of 8 queues
    packets = [busiest] + [1200] * 7
    got = checked(EXPECT, poll(tmp_path, [mlx5_nic()], packets))[
        ("ens1f0np0", "rx_queue_balance")]
    assert RX_BALANCE_LIMIT == 2.0
    assert got.passed is passes


def test_idle_and_unreported_are_not_balanced(tmp_path):
    got = checked(EXPECT, poll(tmp_path, [mlx5_nic()], [10] * 8))
    assert got[("ens1f0np0", "rx_queue_balance")].actual == "too few packets"
    assert not got[("ens1f0np0", "rx_queue_balance")].passed
    # the E810 port has neither qstats nor an ethtool -S here: no queue counters at all
    got = checked(EXPECT, poll(tmp_path / "ice", [mlx5_nic(), ice_nic()], [1000] * 8))
    assert got[("ens1f0", "rx_queue_balance")].actual == "absent"


@pytest.mark.parametrize("text, needle", [
    ("irq_numa_local = false", "expected true"),
    ("irq_numa_local = 'yes'", "expected true"),
    ("rx_queue_balance = 2", "balanced"),
])
def test_only_the_healthy_value_is_accepted(text, needle):
    with pytest.raises(ConfigError) as e:
        parse_expectations(tomllib.loads(f"[[expect]]\nall = true\n{text}\n"), "host.toml")
    assert needle in str(e.value) and text.split(" ")[0] in str(e.value)
