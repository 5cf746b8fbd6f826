"""The report in its three forms (text, JSON, HTML): a list of sections, each rendered
by one function per format."""

from __future__ import annotations

import html
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nicwatch.printable import printable
from nicwatch.snapshot import rxreport
from nicwatch.snapshot.linkreport import link_line
from nicwatch.snapshot.report.numbers import duration
from nicwatch.snapshot.report.summary import (
    FamilyRow,
    InterfaceSummary,
    Report,
    _cells,
    _groups,
    _none,
    _provenance,
    _rows_with_parts,
    describe,
    labels_text,
    table,
)
from nicwatch.snapshot.report.svg import charts

# --------------------------------------------------------------------------- sections
#
# A report is a list of sections, each rendered by one function per format: SECTIONS for
# the whole report, INTERFACE_SECTIONS once per interface. A section that has nothing to
# say returns no lines. Add one with one line in either tuple.


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    text: Callable[[Report], list[str]]
    html: Callable[[Report], list[str]]


@dataclass(frozen=True, slots=True)
class InterfaceSection:
    name: str
    text: Callable[[Report, InterfaceSummary], list[str]]
    html: Callable[[Report, InterfaceSummary], list[str]]


def _verdict_text(r: Report) -> list[str]:
    from nicwatch.consumers.diagnosis.render import (
        report_section,  # the report opens with its verdict
    )
    return report_section(r.before, r.after)[:-1]


def _verdict_html(r: Report) -> list[str]:
    lines = _verdict_text(r)
    if not lines:
        return []
    return ['<section class="verdict"><h2>Verdict</h2><pre>',
            *(html.escape(x) for x in lines[2:]), "</pre></section>"]


def _provenance_text(r: Report) -> list[str]:
    return table([(k, v) for k, v in _provenance(r)])


def _provenance_html(r: Report) -> list[str]:
    e = html.escape
    return ['<table class="provenance">',
            *(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _provenance(r)),
            "</table>"]


def _flags_text(r: Report, s: InterfaceSummary) -> list[str]:
    return ["flagged: " + ", ".join(s.flags)] if s.flags else []


def _flags_html(r: Report, s: InterfaceSummary) -> list[str]:
    return [f'<p class="flag">flagged: {html.escape(", ".join(s.flags))}</p>'] if s.flags \
        else []


def _counters_text(r: Report, s: InterfaceSummary) -> list[str]:
    out = []
    for title, rows, counted in _groups(s):
        if not rows:
            if title != "Traffic and other counters":
                out.append(_none(title, counted))
            continue
        out += [*([""] if out else []), *table(
            [[f"  {title.upper()}", "DELTA", "MEAN", "PEAK"],
             *map(_cells, _rows_with_parts(rows))], frozenset({1, 2, 3}))]
    return out


def _counters_html(r: Report, s: InterfaceSummary) -> list[str]:
    e = html.escape
    out = []
    for title, rows, counted in _groups(s):
        if not rows:
            if title != "Traffic and other counters":
                out.append(f'<p class="none">{e(_none(title, counted))}</p>')
            continue
        out.append(f'<table class="counters"><caption>{e(title)}</caption><tr><th>counter</th>'
                   '<th class="n">delta</th><th class="n">mean</th><th class="n">peak</th></tr>')
        for row in _rows_with_parts(rows):
            cells = _cells(row)
            cls = "part" if row.labels else ("health" if row.health else "")
            name = labels_text(row.labels) if row.labels else row.family
            out.append(f'<tr class="{cls}"><td>{e(name)}</td>'
                       + "".join(f'<td class="n">{e(c)}</td>' for c in cells[1:]) + "</tr>")
        out.append("</table>")
    return out


def _charts_html(r: Report, s: InterfaceSummary) -> list[str]:
    return ['<div class="charts">',
            *(svg for _, svg in charts(r.timeline, s.device, r.marks, r.axis)), "</div>"]


def _link_text(r: Report, s: InterfaceSummary) -> list[str]:
    link = link_line(r.after, r.diff, s.device)
    return [link] if link else []


def _link_html(r: Report, s: InterfaceSummary) -> list[str]:
    link = link_line(r.after, r.diff, s.device)
    return [f'<p class="link">{html.escape(link)}</p>'] if link else []


def _rx_text(r: Report, s: InterfaceSummary) -> list[str]:
    return rxreport.text_lines(rxreport.summaries(r.diff, r.after).get(s.device))


def _rx_html(r: Report, s: InterfaceSummary) -> list[str]:
    section = rxreport.html_section(rxreport.summaries(r.diff, r.after).get(s.device))
    return [section] if section else []


def _interfaces_text(r: Report) -> list[str]:
    if not r.interfaces:
        return ["no interfaces selected (see --interfaces.include)"]
    out: list[str] = []
    for s in r.interfaces:
        out += [*([""] if out else []),
                f"{s.device} ({describe(s.identity)}) over {duration(s.seconds)}"]
        for section in INTERFACE_SECTIONS:
            out += ["  " + x if x else x for x in section.text(r, s)]
    return out


def _interfaces_html(r: Report) -> list[str]:
    e = html.escape
    out = []
    for s in r.interfaces:
        out.append(f'<section id="if-{e(s.device)}"><h2>{e(s.device)} '
                   f"<small>({e(describe(s.identity))}), {duration(s.seconds)}</small></h2>")
        for section in INTERFACE_SECTIONS:
            out += section.html(r, s)
        out.append("</section>")
    return out


def _unmatched(r: Report) -> list[str]:
    return [f"interfaces seen {side}: {', '.join(names)}" for names, side in (
        (r.diff.only_a, "before only"), (r.diff.only_b, "after only")) if names]


SECTIONS: tuple[Section, ...] = (
    Section("verdict", _verdict_text, _verdict_html),  # consumers/diagnosis/render.py
    Section("provenance", _provenance_text, _provenance_html),
    Section("interfaces", _interfaces_text, _interfaces_html),
    Section("unmatched", _unmatched,
            lambda r: [f"<p>{html.escape(x)}</p>" for x in _unmatched(r)]),
)
INTERFACE_SECTIONS: tuple[InterfaceSection, ...] = (
    InterfaceSection("flags", _flags_text, _flags_html),
    InterfaceSection("charts", lambda r, s: [], _charts_html),  # the story first, then numbers
    InterfaceSection("counters", _counters_text, _counters_html),
    InterfaceSection("link", _link_text, _link_html),  # snapshot/linkreport.py
    InterfaceSection("receive path", _rx_text, _rx_html),  # snapshot/rxreport.py
)


def text_report(r: Report) -> str:
    lines = [r.heading]
    for section in SECTIONS:
        part = section.text(r)
        if part:
            lines += ["", *part]
    return printable("\n".join(lines), keep="\n", backslash=False) + "\n"


def _row_json(row: FamilyRow) -> dict[str, Any]:
    return {"family": row.family, "unit": row.unit, "health": row.health, "delta": row.delta,
            "status": row.status, "mean_per_second": row.mean, "peak_per_second": row.peak}


def json_report(r: Report) -> dict[str, Any]:
    from nicwatch.consumers.diagnosis.render import report_json
    rx = rxreport.summaries(r.diff, r.after)
    return {
        "verdict": report_json(r.before, r.after),
        **({"command": list(r.run.argv), "exit_status": r.run.exit_status,
            "interval": r.run.interval} if r.run else {"title": r.title}),
        "context": dict(r.context),
        "started": r.diff.time_a, "ended": r.diff.time_b,
        "seconds": r.diff.seconds, "files": list(r.files),
        "host": {"hostname": r.after.host.hostname, "boot_id": r.after.host.boot_id,
                 "boot_time": r.after.host.boot_time,
                 "kernel_release": r.after.host.kernel_release},
        "nicwatch_version": r.after.nicwatch_version,
        "marks": [{"name": name, "seconds": t} for name, t in r.marks],
        "interfaces": [{
            "device": s.device, "seconds": s.seconds, "flags": list(s.flags),
            "identity": {f: getattr(s.identity, f) for f in s.identity.__slots__},
            "counters": [{**_row_json(row), "by_label": [
                {"labels": dict(p.labels), **_row_json(p)} for p in row.parts]}
                for row in s.rows],
            "receive_path": rxreport.json_value(rx.get(s.device)),
        } for s in r.interfaces],
        "only_before": list(r.diff.only_a), "only_after": list(r.diff.only_b),
    }


STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1320px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
code { font: 13px ui-monospace, monospace; background: #f3f3f3; padding: 0 .2em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
caption { text-align: left; font-weight: 600; padding: .2em 0; }
th, td { padding: .15em .6em; text-align: left; border-bottom: 1px solid #e4e4e4;
         white-space: nowrap; }
table.provenance td { white-space: normal; max-width: 1100px; }  /* free text: a long
   command or interface list wraps rather than widen the page */
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.health td:first-child { font-weight: 600; }
tr.part td:first-child { padding-left: 2em; color: #444; }
tr.worse td { color: #b00; font-weight: 600; }
p.flag { color: #b00; font-weight: 600; }
section.verdict pre { white-space: pre-wrap; overflow-wrap: anywhere; }  /* a long `next:`
   line wraps at the page's width, indentation kept, rather than run past it */
p.none { color: #555; }
div.charts { display: flex; flex-wrap: wrap; gap: 0 16px; }
svg.chart { display: block; margin: 1em 0; }
svg .title { font-size: 13px; font-weight: 600; }
svg .grid { stroke: #e4e4e4; }
svg .ylabel { font-size: 11px; text-anchor: end; fill: #555; }
svg .xlabel { font-size: 11px; text-anchor: middle; fill: #555; }
svg .xlabel.end { text-anchor: end; }
svg .legend { font-size: 11px; fill: #333; }
svg .series { fill: none; stroke-width: 1.5; }
svg .series.dashed { stroke-width: 2.5; stroke-opacity: .6; }
svg line.mark { stroke: #000; stroke-dasharray: 2 3; }
svg text.mark { font-size: 11px; fill: #000; }
svg text.mark.end { text-anchor: end; }
svg .none { font-size: 13px; text-anchor: middle; fill: #999; }
"""


def html_report(r: Report) -> str:
    e = html.escape
    summary = (f"<p><code>{e(shlex.join(r.run.argv))}</code> exited with status "
               f"{r.run.exit_status} after {duration(r.diff.seconds)}.</p>") if r.run else ""
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(r.heading)}</title>",
           f"<style>{STYLE}</style></head><body>",
           f"<h1>{e(r.heading if not r.run else 'nicwatch record')}</h1>",
           summary]
    for section in SECTIONS:
        out += section.html(r)
    out.append("</body></html>\n")
    return "\n".join(out)
