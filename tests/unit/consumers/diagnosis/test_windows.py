"""Windows from steps: the counters whose peak a signature reads keep their peak."""

from __future__ import annotations

import inspect
import re

from nicwatch import metrics
from nicwatch.consumers.diagnosis import quantities
from nicwatch.consumers.diagnosis.windows import COUNTERS, PEAK_COUNTERS, Recent, Step
from nicwatch.model import SeriesKey


def test_every_peak_the_engine_reads_is_kept() -> None:
    source = inspect.getsource(quantities)
    read = {getattr(metrics, name).name
            for name in re.findall(r"_peak\(w, metrics\.([A-Z_]+)\.name", source)}
    for field in re.findall(r"_peak\(w, d\.(\w+)\)", source):
        read |= {getattr(d, field) for d in quantities.DIRECTIONS.values()}
    assert read and read <= PEAK_COUNTERS <= COUNTERS


def test_a_window_sums_steps_and_keeps_the_highest_poll() -> None:
    pause = SeriesKey("nic_tx_pause_duration_seconds_total", (("priority", "3"),))
    crc = SeriesKey("nic_rx_crc_errors_total")
    recent = Recent(30.0)
    for t, (p, c) in enumerate([(0.5, 1.0), (4.5, 0.0), (1.0, 2.0)], start=1):
        recent.add("eth0", Step(5.0 * t, 100.0 + t, 5.0, {pause: p, crc: c}, {}))
    w = recent.window("eth0")
    assert w is not None
    assert (w.seconds, w.deltas[pause], w.deltas[crc]) == (15.0, 6.0, 3.0)
    assert w.peaks == {pause: 0.9}  # 4.5 s paused in a 5 s poll; no peak kept for CRC
