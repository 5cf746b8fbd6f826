"""When a trigger fires: its rate crossed on a tracked poll, or its event happened (a
link down, a degraded PCIe link, a changed identity or stat set)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from nicwatch import metrics
from nicwatch.consumers.incidents.parsing import Trigger
from nicwatch.model import SeriesKey
from nicwatch.normalize.pcie_verdict import REASONS as PCIE_REASONS
from nicwatch.tracker import INTERFACE_REPLACED, STAT_SET_CHANGED, TrackedSample


@dataclass(frozen=True, slots=True)
class Firing:
    value: float  # the rate that crossed (per second, base unit), or the events counted
    labels: tuple[tuple[str, str], ...]  # of the series that crossed, or the event's detail
    events: int = 0  # kernel events this firing counts (carrier downs for link_down)


CARRIER_DOWNS = SeriesKey(metrics.CARRIER_DOWN_EVENTS.name, ())


@dataclass(slots=True)
class _DeviceState:
    link_down: bool | None
    carrier_downs: float | None  # the kernel's carrier_down_count, as tracked
    pcie_degraded: tuple[str, ...] | None
    resets: Mapping[str, int]
    identity: tuple[str | None, ...]


def _state(ts: TrackedSample) -> _DeviceState:
    """The link (down: True) from the Sample's state, and the PCIe degradation reasons (of
    nic_pcie_degraded, in its order) from its verdict."""
    s = ts.sample
    up, verdict = s.state.up, s.pcie_verdict
    degraded = (None if verdict is None else
                tuple(r for r in PCIE_REASONS if r in verdict.reasons))
    downs = ts.counters.get(CARRIER_DOWNS)
    ident = s.identity
    return _DeviceState(None if up is None else not up,
                        downs.value if downs is not None else None, degraded,
                        dict(ts.resets), (ident.pci_address, ident.perm_address, ident.driver,
                                          ident.firmware_version))


def _link_down(prev: _DeviceState | None, now: _DeviceState, is_open: bool) -> Firing | None:
    """The kernel counts every carrier loss (IFLA_CARRIER_DOWN_COUNT, from the RTM_GETLINK
    dump; sysfs carrier_down_count): a link that went down and up between two polls fired,
    and each loss is counted. Without the counter, entering the down state fires."""
    if prev is not None and prev.carrier_downs is not None and now.carrier_downs is not None:
        downs = int(now.carrier_downs - prev.carrier_downs)
        if downs > 0:
            return Firing(float(downs), (), downs)
        return Firing(0.0, ()) if now.link_down and is_open else None
    entered = prev is not None and prev.link_down is False
    if now.link_down and (entered or is_open):
        return Firing(1.0, (), 1 if entered else 0)
    return None


def evaluate(trigger: Trigger, ts: TrackedSample, prev: _DeviceState | None,
             now: _DeviceState | None, is_open: bool) -> Firing | None:
    """Whether ``trigger`` fires on this interface at this poll, and with what value
    (``now`` is None for a family trigger, which needs no state)."""
    if not trigger.matches_device(ts.sample.identity.device):
        return None
    if trigger.event is None:
        best: Firing | None = None
        wanted = set(trigger.labels)
        limit = trigger.rate_above if trigger.rate_above is not None else math.inf
        for key, t in ts.counters.items():
            if key.metric != trigger.family or t.rate is None or t.rate <= limit:
                continue
            if wanted <= set(key.labels) and (best is None or t.rate > best.value):
                best = Firing(t.rate, key.labels)
        return best
    assert now is not None
    if trigger.event == "link_down":
        return _link_down(prev, now, is_open)
    if trigger.event == "pcie_degraded":
        entered = prev is not None and prev.pcie_degraded == ()
        if now.pcie_degraded and (entered or is_open):
            return Firing(1.0, (("reason", ",".join(sorted(now.pcie_degraded))),),
                          1 if entered else 0)
        return None
    if prev is None:
        return None
    if trigger.event == "stat_set_changed":
        moved = now.resets.get(STAT_SET_CHANGED, 0) > prev.resets.get(STAT_SET_CHANGED, 0)
        return Firing(1.0, (), 1) if moved else None
    # identity_changed: the interface was replaced, or its PCI address, permanent MAC,
    # driver or firmware changed (an unknown value is no evidence)
    replaced = now.resets.get(INTERFACE_REPLACED, 0) > prev.resets.get(INTERFACE_REPLACED, 0)
    changed = [n for n, a, b in zip(("pci_address", "perm_address", "driver", "firmware"),
                                    prev.identity, now.identity, strict=False)
               if a is not None and b is not None and a != b]
    if replaced or changed:
        return Firing(1.0, (("changed", ",".join(changed or ["interface_replaced"])),), 1)
    return None
