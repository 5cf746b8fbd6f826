"""Expectations: the configuration a host's NICs must have, checked against every poll.

A tuning service that predates a link silently skips it (the lab report's 1,024-entry ring
among 8,192s). So the property is named in the configuration file, and every poll checks
it against the interfaces that exist now. Two TOML sections, both arrays of tables:

``[[expect]]`` sets values. Selectors pick the interfaces (all given ones must match):
``interfaces`` (regex on the name), ``driver`` (regex), ``pci_address`` (regex), each
matched against the whole value, and ``all = true`` (every interface backed by a device).
Properties, any subset, each compared with the gauge of the same meaning in the Sample
(the full table is in docs/expectations.md): ``rx_ring``, ``tx_ring``, ``channels``
(a number or ``"max"``), ``mtu``, ``link_speed`` (``"400G"``), ``pcie_speed`` (GT/s,
``"gen4"`` or ``"max"``), ``pcie_width`` (lanes or ``"max"``), ``fec_mode``, ``pause_autoneg``,
``pause_rx``, ``pause_tx`` (booleans), ``pfc`` (exactly the priorities with PFC on,
``[3]``; gauge ``nic_pfc_enabled{priority}``) and the RoCE QoS profile: ``trust``
(``"dscp"``/``"pcp"``), ``dscp_map`` (``{ 26 = 3, 48 = 6 }``: each listed DSCP must map to
that priority; others are not compared), ``ecn`` (``[3]``: ECN on at both the reaction and
notification point of each listed priority), ``cnp_priority``, ``cnp_dscp`` and ``ets``
(``{ prio_tc = [...], tc_bw = [...], tsa = [...] }``, any subset of the three, eight values
each), ``sriov_vfs`` (VFs enabled on a PF, a number or ``"max"``; needs --collector.vfs) and
``devlink_health = "healthy"`` (every devlink health reporter of the port and its device),
``irq_numa_local = true`` (every queue interrupt delivered to CPUs of the NIC's NUMA node) and
``rx_queue_balance = "balanced"`` (no receive queue took more than RX_BALANCE_LIMIT times its
fair share of the packets its counters hold; docs/receive-path.md) and
``firmware_activated = true`` (no firmware image flashed and not activated: devlink dev info's
stored versions equal the running ones).
In a ``[[consistent]]`` group ``dscp_map``, ``ecn`` and ``ets`` compare the whole
map, set or table.

``"max"`` is the device's own maximum in the same poll (ring and channel maxima from the
driver; for PCIe the NIC function's capability, ``kind="max"`` at hop 0, not what the slot
allows: a lane-split slot must fail). ``channels`` counts combined channels, or rx channels
on drivers without combined ones (veth). When several ``[[expect]]`` sections set the same
property for one interface, the last one in the file wins, so a general section can be
followed by specific ones.

``[[consistent]]`` needs no numbers: every interface it selects must have the same value of
each property in ``checks`` (the check is named ``consistent_<property>``). The reference is
the most common value among the members; a tie goes to the larger value, since tuning
raises rings, MTU and speed. ``group`` names the group in messages.

Every check compares for equality. A property the kernel or driver does not report fails
with actual ``"absent"``: nothing is known to be right. A selector matching no interface is
a warning, not silence. Section indexes in messages count from 1: ``expect[2].rx_ring`` is
the ``rx_ring`` key of the second ``[[expect]]`` table.

Evaluation is pure: it reads Samples (gauges, identity, netclass), never the kernel.
"""

from __future__ import annotations

from nicwatch.consumers.checks.consumer import ExpectationChecks
from nicwatch.consumers.checks.evaluation import (
    ABSENT,
    CHECK_COUNT,
    CONSISTENT_PREFIX,
    FAMILIES,
    VIOLATION,
    CheckReport,
    CheckResult,
    evaluate,
    violation_series,
)
from nicwatch.consumers.checks.parsing import (
    SECTIONS,
    SELECTOR_KEYS,
    Consistent,
    Expect,
    Expectations,
    Selector,
    expectations_of,
    parse_expectations,
)
from nicwatch.consumers.checks.properties import CHECKS, PCIE_PROPERTIES, PROPERTIES, Property
from nicwatch.consumers.checks.readers import BALANCED, PRIORITIES, RX_BALANCE_LIMIT
from nicwatch.consumers.checks.values import (
    FEC_MODES,
    MAX,
    PCIE_GENERATIONS,
    PCIE_WIDTHS,
    RDMA_MTUS,
    parse_link_speed,
    show_link_speed,
)

__all__ = [
    "ABSENT", "BALANCED", "CHECKS", "CHECK_COUNT", "CONSISTENT_PREFIX", "FAMILIES",
    "FEC_MODES", "MAX", "PCIE_GENERATIONS", "PCIE_PROPERTIES", "PCIE_WIDTHS", "PRIORITIES",
    "PROPERTIES", "RDMA_MTUS", "RX_BALANCE_LIMIT", "SECTIONS", "SELECTOR_KEYS", "VIOLATION",
    "CheckReport", "CheckResult", "Consistent", "Expect", "ExpectationChecks", "Expectations",
    "Property", "Selector", "evaluate", "expectations_of", "parse_expectations",
    "parse_link_speed", "show_link_speed", "violation_series",
]
