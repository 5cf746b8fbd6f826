"""Inline SVG charts of a run's rates: no script, nothing loaded."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from nicwatch.snapshot.report.numbers import duration, si
from nicwatch.snapshot.report.timeline import CHARTS, Chart, Labels, Timeline, _DeviceSeries

WIDTH, HEIGHT = 640, 250
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 16, 40, 34
_LEGEND_ROW = 14
MAX_POINTS = 600  # longer series are cut into buckets that keep their highest rate
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#17becf")


def _axis(maximum: float, ticks: int = 5) -> tuple[float, float]:
    """A tick step of 1, 2 or 5 x 10^n and the axis end, a whole number of steps at or
    above ``maximum`` (1 when there is nothing to show)."""
    if not maximum > 0:
        return 0.2, 1.0
    rough = maximum / ticks
    exponent = math.floor(math.log10(rough))
    step = next(m * 10.0 ** exponent for m in (1, 2, 5, 10) if m * 10.0 ** exponent >= rough)
    return step, step * math.ceil(maximum / step - 1e-9)


def _bucketed(times: Sequence[float],
              values: Sequence[float]) -> tuple[list[float], list[float]]:
    if len(values) <= MAX_POINTS:
        return list(times), list(values)
    size = math.ceil(len(values) / MAX_POINTS)
    xs: list[float] = []
    ys: list[float] = []
    for start in range(0, len(values), size):
        chunk = [v for v in values[start:start + size] if not math.isnan(v)]
        xs.append(times[min(start + size, len(times)) - 1])
        ys.append(max(chunk) if chunk else math.nan)
    return xs, ys


@dataclass(frozen=True, slots=True)
class Drawn:
    """One line of a chart: its legend, values per poll, and whether it is dashed."""

    name: str
    values: Sequence[float]
    dashed: bool = False


def _legend(names: Sequence[str]) -> list[tuple[float, float]]:
    """Where each legend entry goes: rows that wrap at the chart's width."""
    out, x, y = [], float(_LEFT), 33.0
    for name in names:
        width = 24 + 6.5 * len(name)
        if x > _LEFT and x + width > WIDTH - _RIGHT:
            x, y = float(_LEFT), y + _LEGEND_ROW
        out.append((x, y))
        x += width
    return out


def svg_chart(title: str, unit: str, times: Sequence[float],
              lines: Sequence[tuple[str, Sequence[float]] | Drawn],
              marks: Sequence[tuple[str, float]] = (),
              axis: str = "time since the start of the run") -> str:
    """A line chart of rates over time as an inline SVG element. The time axis ends at the
    last poll; ``marks`` are vertical lines at moments (an incident's onset and close)."""
    drawn = [d if isinstance(d, Drawn) else Drawn(*d) for d in lines]
    places = _legend([d.name for d in drawn])
    top_px = _TOP + (places[-1][1] - 33 if places else 0)
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - top_px - _BOTTOM
    finite = [v for d in drawn for v in d.values if not math.isnan(v)]
    y_step, top = _axis(max(finite, default=0.0))
    last = max(times, default=0.0)
    x_step, _ = _axis(last)
    end = last if last > 0 else 1.0

    def x(t: float) -> float:
        return _LEFT + plot_w * t / end

    def y(v: float) -> float:
        return top_px + plot_h * (1 - v / top)

    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} '
            f'{HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
            f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>'),
           f'<text x="{_LEFT}" y="16" class="title">{html.escape(title)} ({unit})</text>']
    for i in range(round(top / y_step) + 1):
        value = i * y_step
        out.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y(value):.1f}" '
                   f'y2="{y(value):.1f}" class="grid"/><text x="{_LEFT - 6}" '
                   f'y="{y(value) + 4:.1f}" class="ylabel">{si(value)}</text>')
    for i in range(int(end / x_step + 1e-9) + 1):
        out.append(f'<text x="{x(i * x_step):.1f}" y="{HEIGHT - _BOTTOM + 16}" '
                   f'class="xlabel">{duration(i * x_step).replace(".0 s", " s")}</text>')
    out.append(f'<text x="{WIDTH - _RIGHT}" y="{HEIGHT - 4}" class="xlabel end">'
               f"{html.escape(axis)}</text>")
    for i, (name, t) in enumerate(marks):
        if 0 <= t <= end:
            # labels one row apart (an onset and a close may be close), left of the line
            # near the right edge
            left = x(t) > WIDTH - _RIGHT - 60
            out.append(f'<line class="mark" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top_px}" '
                       f'y2="{top_px + plot_h}"/><text class="mark{" end" if left else ""}" '
                       f'x="{x(t) + (-3 if left else 3):.1f}" y="{top_px + 10 + 12 * i}">'
                       f"{html.escape(name)}</text>")
    order = sorted(range(len(drawn)), key=lambda i: not drawn[i].dashed)  # dashed first
    for i in order:
        d, color, (lx, ly) = drawn[i], COLORS[i % len(COLORS)], places[i]
        dash = ' stroke-dasharray="6 4"' if d.dashed else ""
        out.append(f'<line x1="{lx:.1f}" x2="{lx + 14:.1f}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="3"{dash}/><text x="{lx + 18:.1f}" '
                   f'y="{ly}" class="legend">{html.escape(d.name)}</text>')
        xs, ys = _bucketed(times, d.values)
        segment: list[str] = []
        cls = "series dashed" if d.dashed else "series"
        for t, v in (*zip(xs, ys, strict=False), (0.0, math.nan)):  # a NaN ends the last segment
            if math.isnan(v):
                if segment:
                    out.append(f'<polyline class="{cls}" stroke="{color}"{dash} '
                               f'points="{" ".join(segment)}"/>')
                    if len(segment) == 1:
                        px, py = segment[0].split(",")
                        out.append(f'<circle cx="{px}" cy="{py}" r="3" fill="{color}"/>')
                segment = []
            else:
                segment.append(f"{x(t):.1f},{y(v):.1f}")
    if not any(finite):
        note = "no activity" if drawn else "not counted by this interface"
        out.append(f'<text x="{_LEFT + plot_w / 2}" y="{top_px + plot_h / 2}" '
                   f'class="none">{note}</text>')
    out.append("</svg>")
    return "".join(out)


def _short(labels: Labels) -> str:
    """A label set in a legend: ``prio 3``, ``tc 2``, else ``k=v``."""
    words = {"priority": "prio", "traffic_class": "tc", "tc": "tc", "lane": "lane"}
    return " ".join(f"{words[k]} {v}" if k in words else f"{k}={v}" for k, v in labels)


def _chart_lines(series: _DeviceSeries, chart: Chart) -> list[Drawn]:
    """A line per family, or per label set of it that moved (which priority, lane or
    traffic class): never a sum that hides which one it was."""
    out = []
    for line in chart.lines:
        parts = [series.rates[f] for f in line.families if f in series.rates]
        if not parts:
            continue
        labelled = [(labels, values) for (family, labels), values in series.series.items()
                    if family in line.families and any(v > 0 for v in values)]
        if labelled:
            out += [Drawn(f"{line.label} {_short(labels)}", [line.scale * v for v in values],
                          line.dashed) for labels, values in labelled]
        else:
            out.append(Drawn(line.label, [line.scale * sum(vs) for vs in zip(*parts,
                                                                              strict=False)],
                             line.dashed))
    return out


def charts(timeline: Timeline, device: str, marks: Sequence[tuple[str, float]] = (),
           axis: str = "time since the start of the run") -> list[tuple[Chart, str]]:
    """The SVG charts of one interface: every chart, with a line per family it has (per
    label set where the family's series moved by label)."""
    series = timeline.devices.get(device)
    if series is None:
        return []
    return [(chart, svg_chart(chart.title, chart.unit, series.seconds,
                              _chart_lines(series, chart), marks, axis)) for chart in CHARTS]
