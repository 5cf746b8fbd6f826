"""Link physics between two polls: the pre-FEC bit error ratio of every lane against its
serdes rate, with the FEC code in a label, and the FEC histogram's margin
(normalize/linkphysics.py computes both from the tracker's rates; docs/link-physics.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.model import ExtraFamily, Labels, Sample, SeriesKey
from nicwatch.normalize.linkphysics import LinkPhysics, evaluate

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample


class _Rates(Mapping[SeriesKey, "float | None"]):
    """The tracker's per-second rate of every counter of one interface, read where asked:
    evaluate() looks at them only for a link with a known lane rate, so an interface
    without one (a veth, a link down) builds no mapping of its ~100 counters each poll."""

    __slots__ = ("_counters",)

    def __init__(self, counters: Mapping[SeriesKey, Any]) -> None:
        self._counters = counters

    def __getitem__(self, key: SeriesKey) -> float | None:
        rate: float | None = self._counters[key].rate
        return rate

    def __iter__(self) -> Iterator[SeriesKey]:
        return iter(self._counters)

    def __len__(self) -> int:
        return len(self._counters)

    def items(self) -> Iterator[tuple[SeriesKey, float | None]]:  # type: ignore[override]
        return ((key, value.rate) for key, value in self._counters.items())


def rates_of(tracked: TrackedSample) -> Mapping[SeriesKey, float | None]:
    """The tracker's per-second rate of every counter of one interface."""
    return _Rates(tracked.counters)


def physics_of(tracked: Sequence[TrackedSample]) -> dict[str, LinkPhysics]:
    """Device -> its link physics over the last poll, for interfaces with a lane rate."""
    out = {}
    for ts in tracked:
        physics = evaluate(ts.sample, rates_of(ts))
        if physics.rate is not None:
            out[ts.sample.identity.device] = physics
    return out


class LinkPhysicsConsumer(BaseConsumer):
    """A :class:`~nicwatch.consumers.Consumer`: nic_pre_fec_ber, the lane bit rate and the
    FEC margin of every interface whose link mode has a known lane rate."""

    def __init__(self) -> None:
        self.physics: dict[str, LinkPhysics] = {}
        self._families: list[ExtraFamily] = []

    @classmethod
    def open(cls, config: object, host: object = None,
             services: Services | None = None) -> LinkPhysicsConsumer:
        return cls()

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        self.physics = physics_of(tracked)
        ber: list[tuple[Labels, float]] = []
        rate: list[tuple[Labels, float]] = []
        margin: list[tuple[Labels, float]] = []
        for device in sorted(self.physics):
            p = self.physics[device]
            dev: Labels = (("device", device),)
            if p.rate is not None:
                rate.append((dev, p.rate.bits_per_second / 8))
            for lane in sorted(p.ber, key=_lane_order):
                ber.append((dev + (("fec", p.fec or "unknown"), ("lane", lane)), p.ber[lane]))
            for lane in sorted(p.margin, key=_lane_order):
                margin.append((dev + (("lane", lane),), float(p.margin[lane])))
        self._families = [metrics.extra(metrics.PRE_FEC_BER, tuple(ber)),
                          metrics.extra(metrics.LANE_BIT_RATE, tuple(rate)),
                          metrics.extra(metrics.FEC_MARGIN, tuple(margin))]

    def families(self) -> list[ExtraFamily]:
        return self._families


def _lane_order(lane: str) -> tuple[int, int]:
    return (0, int(lane)) if lane.isdigit() else (1, 0)


def with_physics(tracked: Sequence[TrackedSample]) -> list[Sample]:
    """The tracked interfaces' Samples with their nic_pre_fec_ber series among the gauges,
    for the views that read one Sample (``nicwatch check``'s fec_lane_ber, ``show``)."""
    out = []
    for ts in tracked:
        physics = evaluate(ts.sample, rates_of(ts))
        if not physics.ber:
            out.append(ts.sample)
            continue
        gauges = dict(ts.sample.gauges)
        for lane, value in physics.ber.items():
            gauges[SeriesKey(metrics.PRE_FEC_BER.name,
                             (("fec", physics.fec or "unknown"), ("lane", lane)))] = value
        out.append(dataclasses.replace(ts.sample, gauges=gauges))
    return out
