"""rx_cpu_saturated on one CPU at a time, and blind where NAPI does not run in softirq
(issue #38 item 14). Expected verdicts written before the code.

The softirq share (nic_rx_cpu_softirq_ratio{cpu}) and the softnet pressure
(nic_rx_cpu_time_squeeze_total{cpu} + nic_rx_cpu_dropped_total{cpu}) are per CPU: a CPU
saturated in softirq whose NAPI polls never run out of budget is busy, not saturated, and a
squeeze on a CPU at 40 % softirq is no saturation either. The signature holds when one CPU
has both. Numbers: a 30 s window of a port served by CPUs 2 and 5."""

from __future__ import annotations

from nicwatch.consumers.diagnosis.engine import Window, evaluate
from nicwatch.model import Napi, NetdevQueues, SeriesKey

S = 30.0


def key(metric: str, **labels: str) -> SeriesKey:
    return SeriesKey(metric, tuple(sorted(labels.items())))


def window(share: dict[str, float], squeeze: dict[str, float],
           extra: dict[SeriesKey, float] | None = None) -> Window:
    deltas = {key("nic_rx_cpu_time_squeeze_total", cpu=c): r * S for c, r in squeeze.items()}
    deltas.update({key("nic_rx_cpu_dropped_total", cpu=c): 0.0 for c in squeeze})
    gauges = {key("nic_rx_cpu_softirq_ratio", cpu=c): v for c, v in share.items()}
    gauges.update(extra or {})
    return Window("enp1s0np0", S, deltas, {}, gauges)


def held(w: Window) -> set[str]:
    return {v.label for v in evaluate([w])}


def test_saturation_and_squeeze_on_different_cpus_is_not_saturation() -> None:
    """CPU 2 at 95 % softirq without a squeeze, CPU 5 at 40 % squeezed 50 times a second."""
    assert held(window({"2": 0.95, "5": 0.40}, {"2": 0.0, "5": 50.0})) == set()


def test_saturation_with_its_own_squeeze_holds_and_names_that_cpu() -> None:
    w = window({"2": 0.95, "5": 0.40}, {"2": 20.0, "5": 0.0})
    assert held(w) == {"rx_cpu_saturated"}
    (v,) = evaluate([w])
    series = {e.series for e in v.evidence}
    assert 'nic_rx_cpu_softirq_ratio{cpu="2"}' in series
    assert 'nic_rx_cpu_time_squeeze_total{cpu="2"}' in series
    assert not any('cpu="5"' in s for s in series)


def test_a_second_saturated_cpu_with_the_squeeze_is_found() -> None:
    """CPU 2 busiest in softirq without a squeeze; CPU 5 at 92 % and squeezed: CPU 5 is the
    saturated one."""
    w = window({"2": 0.97, "5": 0.92}, {"2": 0.0, "5": 8.0})
    assert held(w) == {"rx_cpu_saturated"}
    (v,) = evaluate([w])
    assert all('cpu="2"' not in e.series for e in v.evidence)


def test_threaded_napi_makes_the_signature_blind() -> None:
    """With threaded NAPI (napi/<dev>-<id> kthreads) the receive work is process time, not
    softirq: the softirq share says nothing of it, so the verdict is unknown, never held
    and never cleared on that evidence."""
    w = window({"2": 0.95}, {"2": 20.0}, {key("nic_rx_napi_threaded"): 8.0})
    assert held(w) == set()
    (v,) = [v for v in evaluate([w], all_verdicts=True) if v.signature == "rx_cpu_saturated"]
    assert all(r.held is None for r in v.conditions if r.condition.required)


def test_threaded_napis_are_counted_from_napi_get() -> None:
    from nicwatch.consumers.diagnosis.consumer import threaded_napis
    assert threaded_napis(None) is None
    assert threaded_napis(NetdevQueues((), None)) is None
    softirq = NetdevQueues((), (Napi(8193, 120, None), Napi(8194, 121, None)))
    assert threaded_napis(softirq) == 0
    threaded = NetdevQueues((), (Napi(8193, 120, 4242), Napi(8194, 121, 4243)))
    assert threaded_napis(threaded) == 2
