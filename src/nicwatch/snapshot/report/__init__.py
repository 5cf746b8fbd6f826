"""The report of a recorded run: a summary table per interface (text, and the same as
JSON) and a self-contained HTML page with inline SVG charts of throughput, PAUSE/PFC
frames and drops over the run. The page has no script and loads nothing, so it can be
mailed or attached to a ticket and opened anywhere.

The text summary looks like this::

    nwa40ab (veth, driver 1.0.0, no PCI address) over 5.21 s
      COUNTER                    DELTA              MEAN           PEAK
      nic_tx_bytes_total         10,420,000 B       16.0 Mb/s      21.3 Mb/s
      nic_tx_packets_total       10,000 packets     1.92k/s        2.55k/s
      PAUSE/PFC: none. Drops and errors: none.

Totals are the difference of the before and after snapshots (exact integers, flagged when
a counter was reset); mean is that total over the run's duration; peak is the highest rate
between two consecutive polls (the sampling interval), summed over a family's labels.
"""

from __future__ import annotations

from nicwatch.snapshot.report.numbers import (
    amount,
    duration,
    number,
    rate,
    si,
    symbol,
)
from nicwatch.snapshot.report.sections import (
    INTERFACE_SECTIONS,
    SECTIONS,
    STYLE,
    InterfaceSection,
    Section,
    _counters_text,
    html_report,
    json_report,
    text_report,
)
from nicwatch.snapshot.report.summary import (
    TRAFFIC,
    FamilyRow,
    InterfaceSummary,
    Report,
    Run,
    describe,
    health_family,
    labels_text,
    make_report,
    summarize,
    table,
)
from nicwatch.snapshot.report.svg import (
    _LEFT,
    _RIGHT,
    _TOP,
    COLORS,
    HEIGHT,
    MAX_POINTS,
    WIDTH,
    Drawn,
    charts,
    svg_chart,
)
from nicwatch.snapshot.report.timeline import (
    CHARTS,
    DROP_FAMILIES,
    PAUSE_FAMILIES,
    SHORT_SAMPLE_FRACTION,
    Chart,
    LabelledRates,
    Labels,
    Line,
    Rates,
    Timeline,
    family_rates,
    series_rates,
)

__all__ = [
    "CHARTS", "COLORS", "DROP_FAMILIES", "HEIGHT", "INTERFACE_SECTIONS", "MAX_POINTS",
    "PAUSE_FAMILIES", "SECTIONS", "SHORT_SAMPLE_FRACTION", "STYLE", "TRAFFIC", "WIDTH",
    "_LEFT", "_RIGHT", "_TOP", "Chart", "Drawn", "FamilyRow", "InterfaceSection",
    "InterfaceSummary", "LabelledRates", "Labels", "Line", "Rates", "Report", "Run", "Section",
    "Timeline", "_counters_text", "amount", "charts", "describe", "duration", "family_rates",
    "health_family", "html_report", "json_report", "labels_text", "make_report", "number",
    "rate", "series_rates", "si", "summarize", "svg_chart", "symbol", "table", "text_report",
]
