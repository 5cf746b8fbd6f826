"""Expectations evaluated against a poll's Samples: every check of every selected
interface (:func:`evaluate`), and the series of nic_expectation_violation and
nicwatch_expectation_checks (:func:`violation_series`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nicwatch import metrics
from nicwatch.consumers.checks.fixes import _down_hint, _pcie_unknown
from nicwatch.consumers.checks.parsing import Consistent, Expect, Expectations
from nicwatch.consumers.checks.properties import (
    CHECKS,
    PCIE_PROPERTIES,
    PROPERTIES,
    Property,
    _maximum,
)
from nicwatch.consumers.checks.values import MAX
from nicwatch.model import Labels, Sample
from nicwatch.normalize.pcie_verdict import HIDDEN_LINK_PARTNER, LINK_STATE

ABSENT = "absent"
CONSISTENT_PREFIX = "consistent_"

VIOLATION, CHECK_COUNT = metrics.EXPECTATION_VIOLATION, metrics.EXPECTATION_CHECKS
FAMILIES = (VIOLATION, CHECK_COUNT)


def _pcie_hint(prop: Property, sample: Sample, wanted: Any, actual: Any,
               peers: Sequence[Sample]) -> str:
    """Which side is below its own capability decides the hint: a card running at its own
    maximum, above what is expected, is not the broken one; a card whose maximum is below
    the expectation is a different model, not a bad link."""
    bdf = sample.identity.pci_address or "<pci address>"
    dev = sample.identity.device
    own_max = _maximum(prop, sample)
    if actual is None:
        if _pcie_unknown(sample, LINK_STATE):
            return (f"# hardware: the link state of {dev} is unknown (link down or in recovery, "
                    f"or the function in D3cold; nicwatch show); lspci -vv -s {bdf}")
        return f"# not reported: {dev} has no readable PCIe link; lspci -vv -s {bdf}"
    if actual > wanted:
        cause = (f"{dev} runs at {prop.show(actual)}, above the expected {prop.show(wanted)}: "
                 "its link is not the broken one")
        below = [p.identity.device for p in peers if p is not sample
                 and (a := prop.actual(p)) is not None and (m := _maximum(prop, p)) is not None
                 and a < m]
        if below:
            cause += f"; below their own maximum: {', '.join(below)} (nicwatch show)"
        elif peers:
            cause += "; the others run at their own maximum: different cards or slots"
        else:
            cause += "; update the expectation"
        return f"# hardware, not settable: {cause}"
    if own_max is not None and wanted > own_max:
        return (f"# hardware, not settable: the card's own maximum is {prop.show(own_max)}, "
                f"below {prop.show(wanted)}: a different card model, not a link fault; "
                f"lspci -vv -s {bdf}")
    if _pcie_unknown(sample, HIDDEN_LINK_PARTNER):
        return (f"# hardware, not settable: {dev} trained below the card's maximum and its "
                "link partner is the host's slot, which this VM cannot see: check on the host")
    return prop.fix(sample, wanted)


def _fix(prop: Property, sample: Sample, wanted: Any, actual: Any,
         peers: Sequence[Sample]) -> str | None:
    """The command (or hardware hint) for a failed check; a count above the driver's
    maximum is clamped to it, and the hint says so."""
    if prop.name in PCIE_PROPERTIES:
        return _pcie_hint(prop, sample, wanted, actual, peers)
    if actual is None:
        return _down_hint(sample)
    top = prop.maximum(sample) if prop.maximum else None
    if isinstance(wanted, int) and isinstance(top, int) and wanted > top:
        if actual == top:
            return (f"# not settable: {prop.show(wanted)} is above the maximum {prop.show(top)} "
                    "the driver reports, and it is already there")
        return (f"{prop.fix(sample, top)}  # the driver's maximum; {prop.show(wanted)} is "
                "above it")
    return prop.fix(sample, wanted)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check of one interface. ``expected`` and ``actual`` are short label strings;
    ``note`` says where ``expected`` came from when it is not a configured number ("max",
    a group majority); ``fix`` is a command for a failed check when one is known."""

    device: str
    check: str
    expected: str
    actual: str
    passed: bool
    rule: str
    note: str | None = None
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class CheckReport:
    results: tuple[CheckResult, ...]
    warnings: tuple[str, ...]
    configured: bool

    @property
    def violations(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed


def _result(sample: Sample, check: str, prop: Property, wanted: Any, actual: Any, rule: str,
            note: str | None, unresolved: str, peers: Sequence[Sample] = ()) -> CheckResult:
    """``wanted`` None: the expected value itself is unknown (shown as ``unresolved``).
    ``peers``: the consistency group the sample was compared with, if any."""
    passed = wanted is not None and actual == wanted
    fix = None if passed or wanted is None else _fix(prop, sample, wanted, actual, peers)
    return CheckResult(
        device=sample.identity.device, check=check,
        expected=unresolved if wanted is None else prop.show(wanted),
        actual=ABSENT if actual is None else prop.show(actual),
        passed=passed, rule=rule, note=note, fix=fix)


def _check(sample: Sample, expect: Expect, name: str, wanted: Any) -> CheckResult:
    prop = PROPERTIES[name]
    note = None
    if wanted == MAX:
        wanted = _maximum(prop, sample)
        note = "max" if wanted is not None else "max: not reported"
    actual = prop.actual(sample)
    if actual is not None and wanted is not None and prop.project is not None:
        actual = prop.project(actual, wanted)
    return _result(sample, name, prop, wanted, actual, expect.key, note, MAX)


def _reference(values: Sequence[Any]) -> Any:
    """The most common known value; a tie goes to the larger one."""
    counts = Counter(v for v in values if v is not None)
    if not counts:
        return None
    top = max(counts.values())
    return max(v for v, n in counts.items() if n == top)


def _check_group(group: Consistent, members: Sequence[Sample]) -> list[CheckResult]:
    results: list[CheckResult] = []
    for name in group.checks:
        prop = PROPERTIES[name]
        values = [prop.actual(s) for s in members]
        reference = _reference(values)
        agree = sum(v == reference for v in values) if reference is not None else 0
        note = (f"{agree}/{len(members)} agree" if reference is not None
                else "no member reports it")
        results.extend(_result(s, CONSISTENT_PREFIX + name, prop, reference, v, group.label,
                               note, "equal", members)
                       for s, v in zip(members, values, strict=True))
    return results


def evaluate(expectations: Expectations, samples: Sequence[Sample]) -> CheckReport:
    """Every check of every selected interface, sorted by device (pure; reads Samples)."""
    samples = sorted(samples, key=lambda s: s.identity.device)
    warnings = []
    chosen: dict[tuple[str, str], tuple[Sample, Expect, Any]] = {}
    for expect in expectations.expects:
        selected = [s for s in samples if expect.selector.selects(s)]
        if not selected:
            warnings.append(f"{expectations.path}: key {expect.key!r}: selects no interface "
                            f"({expect.selector.describe()})")
        for sample in selected:
            for name, wanted in expect.wanted:
                chosen[(sample.identity.device, name)] = (sample, expect, wanted)
    order = {name: i for i, name in enumerate(CHECKS)}
    results = []
    for device, name in sorted(chosen, key=lambda k: (k[0], order[k[1]])):
        sample, expect, wanted = chosen[(device, name)]
        results.append(_check(sample, expect, name, wanted))
    for group in expectations.groups:
        members = [s for s in samples if group.selector.selects(s)]
        if len(members) < 2:
            found = "no interface" if not members else f"only {members[0].identity.device}"
            warnings.append(f"{expectations.path}: key {group.key!r}: selects {found}, nothing "
                            f"to compare ({group.selector.describe()})")
        results.extend(_check_group(group, members))
    results.sort(key=lambda r: r.device)  # stable: per device, expect checks then groups
    return CheckReport(tuple(results), tuple(warnings), bool(expectations))


# --------------------------------------------------------------------------- metric series


def violation_series(report: CheckReport) -> list[tuple[str, Labels, float]]:
    """Series for :data:`FAMILIES`: (family, labels with device first, value). One
    ``nic_expectation_violation`` per distinct failed (device, check, expected, actual);
    ``nicwatch_expectation_checks`` for both results whenever expectations are configured."""
    if not report.configured:
        return []
    out: list[tuple[str, Labels, float]] = []
    seen: set[Labels] = set()
    for r in report.violations:
        labels = (("device", r.device), ("actual", r.actual), ("check", r.check),
                  ("expected", r.expected))
        if labels not in seen:
            seen.add(labels)
            out.append((VIOLATION.name, labels, 1.0))
    out.append((CHECK_COUNT.name, (("result", "fail"),), float(report.failed)))
    out.append((CHECK_COUNT.name, (("result", "pass"),), float(report.passed)))
    return out
