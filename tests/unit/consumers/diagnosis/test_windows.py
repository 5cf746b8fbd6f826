"""Windows from steps: the counters whose peak a signature reads keep their peak."""

from __future__ import annotations

import inspect
import re

from nicwatch import metrics
from nicwatch.consumers.diagnosis import quantities
from nicwatch.consumers.diagnosis.measures import Window
from nicwatch.consumers.diagnosis.windows import COUNTERS, GAUGES, PEAK_COUNTERS, Recent, Step
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


class _Seen(dict):
    """A window's index or gauges that note every family a quantity looks up."""

    def __init__(self, items: dict, seen: set[str]) -> None:
        super().__init__(items)
        self.seen = seen

    def _note(self, key: object) -> None:
        self.seen.add(key if isinstance(key, str) else key.metric)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)


def _looked_up(w: Window, quantity: str, scope: str | None) -> set[str]:
    seen: set[str] = set()
    traced = Window(w.device, w.seconds, w.deltas, w.peaks, _Seen(dict(w.gauges), seen))
    object.__setattr__(traced, "index", _Seen(dict(w.index), seen))
    quantities.QUANTITIES[quantity](traced, scope)
    return seen


def _windows() -> list[Window]:
    """An empty window, one with every series a window keeps under every label a quantity
    asks for, and the same without packet, duration or byte counters (the fallbacks)."""
    labels = [(), (("priority", "3"),), (("priority", "global"),), (("tc", "0"),),
              (("lane", "0"),), (("cpu", "0"),), (("ring", "rx"),)]
    deltas = {SeriesKey(m, lab): 10.0 for m in COUNTERS for lab in labels}
    gauges = {SeriesKey(m, lab): 1.0 for m in GAUGES for lab in labels
              if m != metrics.PFC_ENABLED.name or lab[:1] == (("priority", "3"),)}
    gauges[SeriesKey(metrics.LINK_SPEED_BYTES_PER_SECOND.name)] = 12.5e9
    gauges[SeriesKey(metrics.LINK_LANES.name)] = 4.0
    gauges[SeriesKey(metrics.FEC_MODE_INFO.name, (("active", "rs"), ("configured", "rs")))] = 1
    gauges[SeriesKey(metrics.MODULE_RX_POWER_THRESHOLD_WATTS.name,
                     (("level", "low_warning"), ("type", "")))] = 0.5
    out = [Window("eth0", 5.0, {}, {}, {}), Window("eth0", 5.0, deltas, deltas, gauges)]
    for dropped in (("packets", "duration", "nic_phy_rx_bytes"), ("packets", "bytes")):
        kept = {k: v for k, v in deltas.items() if not any(d in k.metric for d in dropped)}
        out.append(Window("eth0", 5.0, kept, kept, gauges))
    return out


def test_every_quantity_reads_only_what_it_declares() -> None:
    """windows.COUNTERS is derived from the declarations (quantities.READS): a quantity that
    reads a family it does not declare would find it missing from every live window."""
    assert set(quantities.READS) == set(quantities.QUANTITIES)
    undeclared = {}
    for name in quantities.QUANTITIES:
        seen: set[str] = set()
        for w in _windows():
            for scope in (None, "3", "global", "tc0", "0"):
                seen |= _looked_up(w, name, scope)
        assert seen, name  # the tracing sees the lookups
        if extra := seen - set(quantities.READS[name]):
            undeclared[name] = sorted(extra)
    assert undeclared == {}
    read = {n for names in quantities.READS.values() for n in names}
    assert {n for n in read if n in metrics.EXPORTED
            and metrics.EXPORTED[n].type == "counter"} <= COUNTERS
