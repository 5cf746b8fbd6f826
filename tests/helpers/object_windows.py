"""The diagnosis windows before running totals (nicwatch/consumers/diagnosis/windows.py's
Recent at 603c709, verbatim): every window summed over its steps. The reference
tests/unit/consumers/diagnosis/test_windows_equivalence.py holds the running totals to; remove
it with that test once they have run a release."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from nicwatch.consumers.diagnosis.engine import Window
from nicwatch.consumers.diagnosis.windows import PEAK_COUNTERS, Step, notes_of
from nicwatch.model import SeriesKey


class Recent:
    """The steps of each interface within the last ``seconds`` (None: all of them)."""

    def __init__(self, seconds: float | None = 30.0) -> None:
        self.seconds = seconds
        self._steps: dict[str, deque[Step]] = {}

    def add(self, device: str, step: Step) -> None:
        steps = self._steps.setdefault(device, deque())
        steps.append(step)
        if self.seconds is not None:
            # keep the steps that end within the window (at least the newest)
            while len(steps) > 1 and steps[0].monotonic <= step.monotonic - self.seconds:
                steps.popleft()

    def keep(self, devices: Iterable[str]) -> None:
        wanted = set(devices)
        for device in [d for d in self._steps if d not in wanted]:
            del self._steps[device]

    def reset(self, device: str) -> None:
        self._steps.pop(device, None)

    def devices(self) -> list[str]:
        return sorted(self._steps)

    def window(self, device: str, extra_gauges: Mapping[SeriesKey, float] | None = None
               ) -> Window | None:
        steps = self._steps.get(device)
        if not steps:
            return None
        seconds = sum(s.seconds for s in steps)
        deltas: dict[SeriesKey, float] = {}
        peaks: dict[SeriesKey, float] = {}
        for s in steps:
            for key, inc in s.increments.items():
                deltas[key] = deltas.get(key, 0.0) + inc
                if s.seconds > 0 and key.metric in PEAK_COUNTERS:
                    rate = inc / s.seconds
                    if rate > peaks.get(key, -1.0):
                        peaks[key] = rate
        gauges = dict(steps[-1].gauges)
        if extra_gauges:
            gauges.update(extra_gauges)
        return Window(device, seconds, deltas, peaks, gauges, len(steps) + 1, steps[-1].wall,
                      notes_of(steps), steps[-1].pci_address)


