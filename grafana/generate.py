#!/usr/bin/env python3
"""Generate nicwatch's Grafana dashboards (classic dashboard JSON).

    .venv/bin/python grafana/generate.py          # rewrite grafana/*.json
    .venv/bin/python grafana/generate.py --check  # exit 1 if a committed dashboard is stale

Two dashboards, for file provisioning or "Import dashboard" (Grafana 10.4 to 13; Grafana 13
migrates classic JSON to its v2 schema on load):

* ``nicwatch-fleet.json``: which hosts and ports have PAUSE, drops, FEC trouble, a degraded
  PCIe link, a diagnosed cause, configuration drift or expectation violations right now, and
  the worst ports over time; table rows link to the drill-down.
* ``nicwatch-host.json``: one host's NICs: the diagnosed causes that hold, throughput,
  PAUSE/PFC per priority, drops and buffers, FEC and bit error ratio, rings and link
  configuration, the PCIe path, RDMA congestion (ECN, CNP) and errors, the NIC chip's
  temperature and firmware activation, and nicwatch itself.

Every panel reads the datasource from the ``datasource`` variable and every query selects
``job=~"$job", instance=~"$instance"`` (and ``device=~"$device"`` on the host dashboard), so
the dashboards work unchanged behind federation or a Thanos/Mimir global view. Rates use
``$__rate_interval``; throughput is in bits per second. Run it with the project's Python
(``.venv/bin/python``), which has nicwatch installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from nicwatch.snapshot.atomicfile import sync_generated

HERE = Path(__file__).resolve().parent
SCHEMA_VERSION = 39  # Grafana 10.4, the oldest release these dashboards are for
DS = {"type": "prometheus", "uid": "${datasource}"}
FLEET = 'job=~"$job", instance=~"$instance"'
HOST = 'job=~"$job", instance=~"$instance", device=~"$device"'
# RDMA ports: InfiniBand ports have no netdev and so no device label; they show whatever
# interfaces are chosen, RoCE ports with their netdev.
RDMA_HOST = 'job=~"$job", instance=~"$instance", device=~"(|$device)"'
RATE = "$__rate_interval"
HOST_UID = "nicwatch-host"
FLEET_UID = "nicwatch-fleet"
DRILL_DOWN = (f"/d/{HOST_UID}/nicwatch-host?${{__url_time_range}}&var-datasource=${{datasource}}"
              "&var-job=${__data.fields.job}&var-instance=${__data.fields.instance}"
              "&var-device=${__data.fields.device}")


# ------------------------------------------------------------------------------ building


def target(expr: str, legend: str = "", *, instant: bool = False, ref: str = "") -> dict:
    """A Prometheus query; ``instant`` ones are formatted as tables."""
    out = {"datasource": DS, "expr": expr, "refId": ref, "legendFormat": legend or "__auto",
           "range": not instant, "instant": instant}
    if instant:
        out["format"] = "table"
    return out


def _targets(targets: Sequence[dict]) -> list[dict]:
    return [{**t, "refId": t["refId"] or chr(ord("A") + i)} for i, t in enumerate(targets)]


def timeseries(title: str, description: str, unit: str, *targets: dict,
               negative_tx: bool = False, log_scale: bool = False, stack: bool = False,
               width: int = 12, height: int = 8) -> dict:
    custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
              "spanNulls": False, "axisSoftMin": 0 if not negative_tx else None,
              "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
    if log_scale:
        custom["scaleDistribution"] = {"type": "log", "log": 10}
    custom = {k: v for k, v in custom.items() if v is not None}
    overrides = []
    if negative_tx:  # transmit below the axis, receive above
        overrides.append({"matcher": {"id": "byRegexp", "options": ".* tx.*"},
                          "properties": [{"id": "custom.transform", "value": "negative-Y"}]})
    return {"type": "timeseries", "title": title, "description": description,
            "datasource": DS, "_size": (width, height),
            "fieldConfig": {"defaults": {"unit": unit, "custom": custom}, "overrides": overrides},
            "options": {"legend": {"displayMode": "table", "placement": "right",
                                   "calcs": ["mean", "max"], "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}},
            "targets": _targets(targets)}


def stat(title: str, description: str, expr: str, *, unit: str = "short",
         red_above: float | None = 0, width: int = 3, height: int = 4) -> dict:
    steps = [{"color": "green", "value": None}]
    if red_above is not None:
        steps.append({"color": "red", "value": red_above + 1e-9 if red_above == 0 else red_above})
    return {"type": "stat", "title": title, "description": description, "datasource": DS,
            "_size": (width, height),
            "fieldConfig": {"defaults": {"unit": unit, "thresholds": {"mode": "absolute",
                                                                      "steps": steps}},
                            "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                          "values": False},
                        "colorMode": "background", "graphMode": "none", "textMode": "value"},
            "targets": _targets([target(expr, instant=True)])}


def table(title: str, description: str, *targets: dict, units: dict[str, str] | None = None,
          rename: dict[str, str] | None = None, hide: Sequence[str] = (),
          drill_down: bool = False, width: int = 24, height: int = 8) -> dict:
    """An instant table; several targets are merged on their common labels. ``units`` and
    ``rename`` are by column name (``Value #A`` for target A's value)."""
    overrides = [{"matcher": {"id": "byName", "options": column},
                  "properties": [{"id": "unit", "value": unit}]}
                 for column, unit in (units or {}).items()]
    defaults: dict = {"custom": {"align": "auto", "filterable": True}}
    if drill_down:
        defaults["links"] = [{"title": "Open this NIC in the host dashboard", "url": DRILL_DOWN}]
    excluded = {"Time": True, "__name__": True, **dict.fromkeys(hide, True)}
    return {"type": "table", "title": title, "description": description, "datasource": DS,
            "_size": (width, height),
            "fieldConfig": {"defaults": defaults, "overrides": overrides},
            "options": {"showHeader": True, "cellHeight": "sm"},
            "transformations": [{"id": "merge", "options": {}},
                                {"id": "organize", "options": {"excludeByName": excluded,
                                                               "renameByName": rename or {}}}],
            "targets": _targets([{**t, "instant": True, "range": False, "format": "table"}
                                 for t in targets])}


def status_history(title: str, description: str, unit: str, steps: Sequence[tuple[str, float]],
                   *targets: dict, width: int = 12, height: int = 8) -> dict:
    """A status history: one row per series, each cell coloured by the threshold ``steps``
    (colour, lowest value; the first colour is the base below every step)."""
    colours = [{"color": steps[0][0], "value": None}]
    colours += [{"color": colour, "value": value} for colour, value in steps[1:]]
    return {"type": "status-history", "title": title, "description": description,
            "datasource": DS, "_size": (width, height),
            "fieldConfig": {"defaults": {"unit": unit, "decimals": 1,
                                         "color": {"mode": "thresholds"},
                                         "thresholds": {"mode": "absolute", "steps": colours},
                                         "custom": {"lineWidth": 0, "fillOpacity": 80}},
                            "overrides": []},
            "options": {"showValue": "never", "rowHeight": 0.9, "colWidth": 0.9,
                        "legend": {"showLegend": True, "displayMode": "list",
                                   "placement": "bottom"},
                        "tooltip": {"mode": "single", "sort": "none"}},
            "targets": _targets(targets)}


def row(title: str) -> dict:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def layout(panels: Sequence[dict]) -> list[dict]:
    """Assign ids and grid positions left to right, top to bottom (rows span the width)."""
    out, x, y, line_height = [], 0, 0, 0
    for panel_id, panel in enumerate(panels, start=1):
        panel = dict(panel)
        if panel["type"] == "row":
            y += line_height
            x, line_height = 0, 0
            panel["gridPos"] = {"h": 1, "w": 24, "x": 0, "y": y}
            y += 1
        else:
            width, height = panel.pop("_size")
            if x + width > 24:
                y += line_height
                x, line_height = 0, 0
            panel["gridPos"] = {"h": height, "w": width, "x": x, "y": y}
            x += width
            line_height = max(line_height, height)
        out.append({"id": panel_id, **panel})
    return out


def variable(name: str, label: str, query: str) -> dict:
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "definition": query, "query": query,
            "refresh": 2, "multi": True, "includeAll": True, "allValue": ".+", "current": {},
            "options": [], "regex": "", "sort": 1, "hide": 0}


def datasource_variable() -> dict:
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "query": "prometheus", "current": {}, "options": [], "regex": "", "refresh": 1,
            "hide": 0}


def dashboard(uid: str, title: str, description: str, variables: Sequence[dict],
              panels: Sequence[dict], links: Sequence[dict]) -> dict:
    return {
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "description": description,
        "editable": True,
        "graphTooltip": 1,
        "id": None,
        "links": list(links),
        "panels": layout(panels),
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "tags": ["nicwatch", "network", "rdma"],
        "templating": {"list": [datasource_variable(), *variables]},
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "utc",
        "title": title,
        "uid": uid,
        "version": 1,
    }


def _link(title: str, uid: str) -> dict:
    return {"title": title, "type": "link", "url": f"/d/{uid}?${{__url_time_range}}"
            "&${datasource:queryparam}&${job:queryparam}&${instance:queryparam}",
            "icon": "dashboard", "targetBlank": False, "keepTime": False,
            # Grafana's schema requires these (their defaults), as Grafana exports them.
            "asDropdown": False, "includeVars": False, "tags": [], "tooltip": ""}


def _rx_tx(metric: str, selector: str, scale: str = "") -> tuple[dict, dict]:
    return (target(f"rate(nic_rx_{metric}{{{selector}}}[{RATE}]){scale}", "{{device}} rx"),
            target(f"rate(nic_tx_{metric}{{{selector}}}[{RATE}]){scale}", "{{device}} tx"))


# ------------------------------------------------------------------------------ dashboards

JOB = variable("job", "Job", "label_values(nicwatch_build_info, job)")
INSTANCE = variable("instance", "Host", 'label_values(nicwatch_build_info{job=~"$job"}, instance)')
DEVICE = variable("device", "Interface",
                  'label_values(nic_info{job=~"$job", instance=~"$instance"}, device)')
PORT_COLUMNS = ("job", "instance", "device")


def fleet() -> dict:
    panels = [
        row("Now"),
        stat("Hosts", "Hosts whose nicwatch is scraped.",
             f"count(nicwatch_build_info{{{FLEET}}})", red_above=None),
        stat("Ports", "Interfaces nicwatch polls on those hosts.",
             f"count(nic_info{{{FLEET}}})", red_above=None),
        stat("nicwatch down", "Scrape targets of these jobs that fail (up == 0).",
             f"count(up{{{FLEET}}} == 0) or vector(0)"),
        stat("Ports dropping", "Ports with out-of-buffer drops or port discards now.",
             f"count(rate(nic_rx_out_of_buffer_drops_total{{{FLEET}}}[{RATE}]) > 0 "
             f"or rate(nic_rx_discards_total{{{FLEET}}}[{RATE}]) > 0) or vector(0)"),
        stat("Firing NIC alerts", "nicwatch alerts firing for these hosts (ALERTS series "
             "of the rules in deploy/prometheus).",
             f'count(ALERTS{{alertstate="firing", alertname=~"Nic.*", {FLEET}}}) or vector(0)'),
        stat("PCIe degraded", "Ports whose PCIe link trained below its width or speed, or "
             "cannot carry the line rate (nic_pcie_degraded).",
             f"count(max without (reason) (nic_pcie_degraded{{{FLEET}}}) == 1) or vector(0)"),
        stat("Expectation violations", "Failed expectation checks (nic_expectation_violation; "
             "configure expectations to use it, see docs/expectations.md).",
             f"count(nic_expectation_violation{{{FLEET}}}) or vector(0)"),
        stat("NIC identity changes", "NICs (by permanent MAC) seen at a new PCI address or "
             "under a new name within the dashboard's time range (nic_identity_changes_total).",
             f"sum(increase(nic_identity_changes_total{{{FLEET}}}[$__range])) or vector(0)"),
        table(
            "Port health now",
            "Per port, over the last 5 minutes (recording rules of deploy/prometheus): the "
            "largest share of time a priority was paused by the peer (rx) or pausing it (tx), "
            "out-of-buffer and discard ratios, pre-FEC bit error ratio, uncorrectable FEC "
            "codewords per second, PCIe degraded (1) and expectation violations. Click a row "
            "to open the NIC.",
            target(f"device:nic_rx_paused_ratio:rate5m{{{FLEET}}}"),
            target(f"device:nic_tx_paused_ratio:rate5m{{{FLEET}}}"),
            target(f"device:nic_rx_out_of_buffer_ratio:rate5m{{{FLEET}}}"),
            target(f"device:nic_rx_discard_ratio:rate5m{{{FLEET}}}"),
            target(f"device:nic_pre_fec_ber:rate5m{{{FLEET}}}"),
            target(f"device:nic_fec_uncorrectable_blocks:rate5m{{{FLEET}}}"),
            target(f"max without (reason) (nic_pcie_degraded{{{FLEET}}})"),
            target(f"count without (check, expected, actual) "
                   f"(nic_expectation_violation{{{FLEET}}}) or 0 * nic_link_up{{{FLEET}}}"),
            units={"Value #A": "percentunit", "Value #B": "percentunit",
                   "Value #C": "percentunit", "Value #D": "percentunit", "Value #E": "sci",
                   "Value #F": "cps"},
            rename={"Value #A": "paused by peer", "Value #B": "pausing peer",
                    "Value #C": "out of buffer", "Value #D": "discards",
                    "Value #E": "pre-FEC BER", "Value #F": "FEC lost/s",
                    "Value #G": "PCIe degraded", "Value #H": "violations"},
            drill_down=True, height=10),
        row("Diagnosis (docs/diagnosis.md)"),
        diagnosis_table(FLEET, drill_down=True),
        row("Configuration drift"),
        table(
            "Ports that differ from their peers",
            "Ring sizes, MTU and PCIe width compared with the median of all ports of the "
            "same driver and link speed across every scraped host (NicConfigDiffersFromPeers; "
            "groups of three or more).",
            target(f"device:nic_peer_property:outlier{{{FLEET}}}"),
            target("peer_group:nic_peer_property:median and on (driver, link_speed_gbps, "
                   f"property) device:nic_peer_property:outlier{{{FLEET}}}"),
            rename={"Value #A": "this port", "Value #B": "peers (median)",
                    "link_speed_gbps": "Gb/s"}, drill_down=True,
            width=12),
        table(
            "Degraded PCIe links",
            "Ports whose PCIe link trained below what card and slot support (width, speed) "
            "or whose path carries less than the line rate (ceiling_below_line_rate).",
            target(f"nic_pcie_degraded{{{FLEET}}} == 1"),
            hide=("Value",), drill_down=True, width=12),
        table(
            "Expectation violations",
            "Every failed expectation check: the property, what was expected and what the "
            "port has. `nicwatch check` on the host prints the command that fixes it.",
            target(f"nic_expectation_violation{{{FLEET}}}"),
            hide=("Value",), drill_down=True, width=12),
        row("Worst ports"),
        timeseries(
            "Time paused by the peer (worst priority)",
            "Share of time the link partner held a priority of the port paused (rx). Steady "
            "PAUSE means ECN is not keeping up: look downstream.", "percentunit",
            target("topk(10, max without (priority) (rate(nic_rx_pause_duration_seconds_total"
                   f"{{{FLEET}}}[{RATE}])))", "{{instance}} {{device}}")),
        timeseries(
            "Time pausing the peer (worst priority)",
            "Share of time the port held its link partner paused (tx): this host cannot drain "
            "what it receives.", "percentunit",
            target("topk(10, max without (priority) (rate(nic_tx_pause_duration_seconds_total"
                   f"{{{FLEET}}}[{RATE}])))", "{{instance}} {{device}}")),
        timeseries(
            "Out-of-buffer drops",
            "Packets dropped because the receive ring had no free descriptor.", "pps",
            target(f"topk(10, rate(nic_rx_out_of_buffer_drops_total{{{FLEET}}}[{RATE}]))",
                   "{{instance}} {{device}}")),
        timeseries(
            "Port discards",
            "Received packets the port buffer discarded before they reached the host.", "pps",
            target(f"topk(10, rate(nic_rx_discards_total{{{FLEET}}}[{RATE}]))",
                   "{{instance}} {{device}}")),
        timeseries(
            "Pre-FEC bit error ratio",
            "Corrected bits per bit on the line. Healthy PAM4 links sit around 1e-8 to 1e-6; "
            "the IEEE limit for 50G PAM4 lanes is 2.4e-4.", "sci",
            target(f"topk(10, rate(nic_fec_corrected_bit_errors_total{{{FLEET}}}[{RATE}]) "
                   f"/ (8 * nic_link_speed_bytes_per_second{{{FLEET}}}))",
                   "{{instance}} {{device}}"),
            log_scale=True),
        timeseries(
            "Throughput per host",
            "Physical port traffic including RDMA, summed over each host's ports; transmit "
            "below the axis.", "bps",
            target(f"sum without (device) (rate(nic_phy_rx_bytes_total{{{FLEET}}}[{RATE}])) * 8",
                   "{{instance}} rx"),
            target(f"sum without (device) (rate(nic_phy_tx_bytes_total{{{FLEET}}}[{RATE}])) * 8",
                   "{{instance}} tx"),
            negative_tx=True),
        row("RDMA ports"),
        table(
            "RDMA ports with faults",
            "RDMA ports (InfiniBand ports without a netdev included) with link downs, link "
            "error recoveries, symbol errors, receive errors or failed QPs within the time "
            "range, and counters standing at their maximum now (saturated, blind until "
            "cleared). Ports without any are not listed.",
            target(f"increase(nic_rdma_link_downed_total{{{FLEET}}}[$__range]) > 0"),
            target(f"increase(nic_rdma_link_error_recoveries_total{{{FLEET}}}[$__range]) > 0"),
            target(f"increase(nic_rdma_symbol_errors_total{{{FLEET}}}[$__range]) > 0"),
            target(f"increase(nic_rdma_rx_errors_total{{{FLEET}}}[$__range]) > 0"),
            target(f"increase(nic_rdma_req_transport_retries_exceeded_total{{{FLEET}}}"
                   f"[$__range]) > 0"),
            target(f"count without (counter) (nic_rdma_portcounters_saturated{{{FLEET}}} == 1)"),
            rename={"Value #A": "link downed", "Value #B": "link recoveries",
                    "Value #C": "symbol errors", "Value #D": "receive errors",
                    "Value #E": "failed QPs", "Value #F": "saturated counters"},
            width=12, height=10),
        timeseries(
            "RDMA retransmissions, worst 10",
            "Ack timeouts (the sender retransmitted) per RDMA port, the ten highest: packets "
            "lost in a fabric that should be lossless (NicRdmaRetransmissions).", "cps",
            target(f"topk(10, rate(nic_rdma_local_ack_timeout_errors_total{{{FLEET}}}[{RATE}]))",
                   "{{instance}} {{rdma_device}}/{{port}}"),
            width=12, height=10),
        row("nicwatch"),
        timeseries(
            "Age of the served poll",
            "How old the poll behind each scrape was (NicwatchPollsStale fires above 4 poll "
            "intervals).", "s",
            target(f"timestamp(nicwatch_last_poll_timestamp_seconds{{{FLEET}}}) - "
                   f"nicwatch_last_poll_timestamp_seconds{{{FLEET}}}", "{{instance}}"),
            width=8),
        timeseries(
            "Poll duration",
            "Time of the last poll by stage (read, normalize, track, render).", "s",
            target(f"nicwatch_poll_duration_seconds{{{FLEET}}}", "{{instance}} {{stage}}"),
            stack=True, width=8),
        timeseries(
            "Source errors",
            "Failed kernel reads per second by source and interface.", "cps",
            # No errors yet means no series: show that as zero.
            target(f"sum without (device) (rate(nicwatch_source_errors_total{{{FLEET}}}[{RATE}])) "
                   f"or 0 * nicwatch_interfaces{{{FLEET}}}", "{{instance}} {{source}}"),
            width=8),
        incidents_table(),
    ]
    return dashboard(FLEET_UID, "nicwatch / Fleet",
                     "Which hosts and NIC ports have PAUSE, drops, FEC trouble, degraded PCIe "
                     "or configuration drift right now.", [JOB, INSTANCE], panels,
                     [_link("NIC drill-down", HOST_UID)])


INCIDENT_LIST = "http://${__data.fields.instance}/api/v1/incidents"


def incidents_table() -> dict:
    """Incidents the daemons captured (nic_incidents_total), each row linking to that
    daemon's incident list."""
    panel = table(
        "Incidents captured",
        "Incidents each nicwatch opened when a [[capture.trigger]] of its config fired, by "
        "trigger, within the dashboard's time range, and the ports with one open now. A row "
        "links to "
        "that daemon's incident list (GET /api/v1/incidents; `nicwatch incidents show ID` "
        "prints one's report). Empty when no trigger is configured or none fired.",
        target(f"sum by (job, instance, trigger) (increase(nic_incidents_total{{{FLEET}}}"
               "[$__range]))", ref="A"),
        target(f"sum by (job, instance) (nicwatch_incident_open{{{FLEET}}})", ref="B"),
        rename={"Value #A": "incidents", "Value #B": "open now"},
        units={"Value #A": "short", "Value #B": "short"}, height=6)
    panel["fieldConfig"]["defaults"]["links"] = [
        {"title": "Incident list of this nicwatch", "url": INCIDENT_LIST, "targetBlank": True}]
    return panel


def diagnosis_table(selector: str, *, drill_down: bool = False) -> dict:
    """The diagnosis verdicts that hold now (nic_diagnosis, docs/diagnosis.md): per device,
    signature and priority or lane, since when and for how long."""
    return table(
        "Diagnosis: causes that hold now",
        "The signatures nicwatch's diagnosis finds holding on each port over its last 30 s "
        "of polls (nic_diagnosis == 1), per PFC priority or serdes lane where the signature "
        "is, with the time it has held since (nic_diagnosis_since_timestamp_seconds; a "
        "daemon restart starts it again) and how long that is. config_drift is context, "
        "never a cause by itself. `nicwatch diagnose` on the host lists each verdict's "
        "evidence and next check; docs/diagnosis.md the thresholds. Empty while nothing "
        "holds.",
        target(f"nic_diagnosis{{{selector}}} == 1", ref="A"),
        target(f"nic_diagnosis_since_timestamp_seconds{{{selector}}} * 1000", ref="B"),
        target(f"time() - nic_diagnosis_since_timestamp_seconds{{{selector}}}", ref="C"),
        rename={"Value #B": "holding since", "Value #C": "held for"},
        units={"Value #B": "dateTimeAsIso", "Value #C": "s"}, hide=["Value #A"],
        drill_down=drill_down, height=7)


def host() -> dict:
    rx_paused = f"rate(nic_rx_pause_duration_seconds_total{{{HOST}}}[{RATE}])"
    tx_paused = f"rate(nic_tx_pause_duration_seconds_total{{{HOST}}}[{RATE}])"
    panels = [
        row("Diagnosis (docs/diagnosis.md)"),
        diagnosis_table(HOST),
        row("Throughput"),
        timeseries(
            "Physical port (including RDMA)",
            "Bits per second on the wire, RDMA included (phy counters); transmit below the "
            "axis.", "bps",
            target(f"rate(nic_phy_rx_bytes_total{{{HOST}}}[{RATE}]) * 8", "{{device}} rx"),
            target(f"rate(nic_phy_tx_bytes_total{{{HOST}}}[{RATE}]) * 8", "{{device}} tx"),
            negative_tx=True),
        timeseries(
            "Kernel netdev traffic",
            "Bits per second through the kernel network stack (RDMA bypasses it); transmit "
            "below the axis.", "bps", *_rx_tx("bytes_total", HOST, " * 8"), negative_tx=True),
        timeseries(
            "Line rate used",
            "Physical receive and transmit rate as a share of the negotiated link speed.",
            "percentunit",
            target(f"rate(nic_phy_rx_bytes_total{{{HOST}}}[{RATE}]) / "
                   f"nic_link_speed_bytes_per_second{{{HOST}}}", "{{device}} rx"),
            target(f"rate(nic_phy_tx_bytes_total{{{HOST}}}[{RATE}]) / "
                   f"nic_link_speed_bytes_per_second{{{HOST}}}", "{{device}} tx")),
        timeseries(
            "Poll-to-poll rate (nicwatch)",
            "nicwatch's own highest rate between consecutive polls (5 s by default) within "
            "its peak window, maximum within each point: shows bursts that the "
            "scrape-interval rate averages away.", "bps",
            target(f"max_over_time(nic_phy_rx_bytes_peak_per_second{{{HOST}}}[$__interval]) * 8",
                   "{{device}} rx"),
            target(f"max_over_time(nic_phy_tx_bytes_peak_per_second{{{HOST}}}[$__interval]) * 8",
                   "{{device}} tx"),
            negative_tx=True),
        timeseries("Packets", "Kernel netdev packets per second.", "pps",
                   *_rx_tx("packets_total", HOST), negative_tx=True, width=24, height=6),
        row("PAUSE / PFC"),
        timeseries(
            "Time paused by the peer (rx), per priority",
            "Share of time the link partner held this port's transmitter paused, per priority "
            "(priority=\"global\": 802.3x). The congestion is downstream.", "percentunit",
            target(rx_paused, "{{device}} prio {{priority}}")),
        timeseries(
            "Time pausing the peer (tx), per priority",
            "Share of time this port held its link partner paused: the host cannot drain its "
            "receive buffers (rings, CPU, PCIe).", "percentunit",
            target(tx_paused, "{{device}} prio {{priority}}")),
        timeseries(
            "PFC frames per priority",
            "PFC pause frames received (above the axis) and sent (below).", "pps",
            target(f"rate(nic_rx_pfc_frames_total{{{HOST}}}[{RATE}])",
                   "{{device}} rx prio {{priority}}"),
            target(f"rate(nic_tx_pfc_frames_total{{{HOST}}}[{RATE}])",
                   "{{device}} tx prio {{priority}}"),
            negative_tx=True),
        timeseries(
            "PFC frame bursts (nicwatch peak)",
            "Highest poll-to-poll PFC frame rate within nicwatch's peak window, so a burst "
            "shorter than the scrape interval stays visible.", "pps",
            target(f"nic_rx_pfc_frames_peak_per_second{{{HOST}}}",
                   "{{device}} rx prio {{priority}}"),
            target(f"nic_tx_pfc_frames_peak_per_second{{{HOST}}}",
                   "{{device}} tx prio {{priority}}"),
            negative_tx=True),
        timeseries(
            "Link-level PAUSE frames",
            "802.3x PAUSE frames (XOFF and XON, never PFC) received and sent; on ConnectX "
            "ports without 802.3x pause, the 802.3 PAUSE control counter instead, labelled "
            "\"may include PFC\" (it rises with PFC on PFC-only ports; docs/field-notes.md).",
            "pps", *(target(f"label_replace(rate(nic_{d}_pause_frames_total{{{HOST}}}[{RATE}]), "
                            f"\"counter\", \"802.3x\", \"\", \"\") or label_replace("
                            f"rate(nic_{d}_pause_ctrl_frames_total{{{HOST}}}[{RATE}]), "
                            f"\"counter\", \"PAUSE ctrl, may include PFC\", \"\", \"\")",
                            f"{{{{device}}}} {d} {{{{counter}}}}") for d in ("rx", "tx")),
            negative_tx=True),
        timeseries(
            "Pause storm events",
            "Pause storm watchdog events (mlx5 warning/error, bnxt continuous/resume). An "
            "error means the NIC stopped sending PAUSE.", "short",
            target(f"increase(nic_pause_storm_events_total{{{HOST}}}[{RATE}])",
                   "{{device}} {{kind}}")),
        row("Drops and buffers"),
        timeseries(
            "Drop ratios",
            "Out-of-buffer drops per netdev packet received, and port discards per packet "
            "received (netdev and RDMA).", "percentunit",
            target(f"rate(nic_rx_out_of_buffer_drops_total{{{HOST}}}[{RATE}]) / "
                   f"(rate(nic_rx_out_of_buffer_drops_total{{{HOST}}}[{RATE}]) + "
                   f"rate(nic_rx_packets_total{{{HOST}}}[{RATE}]))", "{{device}} out of buffer"),
            target(f"rate(nic_rx_discards_total{{{HOST}}}[{RATE}]) / "
                   f"(rate(nic_rx_discards_total{{{HOST}}}[{RATE}]) + "
                   f"rate(nic_rx_packets_total{{{HOST}}}[{RATE}]) + "
                   f"(sum without (rdma_device, port) (rate(nic_rdma_rx_packets_total{{{HOST}}}"
                   f"[{RATE}])) or 0 * rate(nic_rx_packets_total{{{HOST}}}[{RATE}])))",
                   "{{device}} discards")),
        timeseries(
            "Drops and discards",
            "Out-of-buffer drops (the ring had no descriptor), port discards (the port buffer "
            "overflowed) and netdev drops.", "pps",
            target(f"rate(nic_rx_out_of_buffer_drops_total{{{HOST}}}[{RATE}])",
                   "{{device}} out of buffer"),
            target(f"rate(nic_rx_discards_total{{{HOST}}}[{RATE}])", "{{device}} rx discards"),
            target(f"rate(nic_tx_discards_total{{{HOST}}}[{RATE}])", "{{device}} tx discards"),
            target(f"rate(nic_rx_dropped_total{{{HOST}}}[{RATE}])", "{{device}} rx dropped")),
        timeseries(
            "Receive buffer almost full",
            "Times per second the port receive buffer passed its threshold (mlx5: 85%).",
            "cps", target(f"rate(nic_rx_buffer_almost_full_events_total{{{HOST}}}[{RATE}])",
                          "{{device}}")),
        timeseries(
            "Softirq load on the NIC's CPUs",
            "Share of time the CPUs local to the NIC spent in softirq (max: the busiest). A "
            "saturated core means full rings, out-of-buffer drops and sent PAUSE.",
            "percentunit",
            target(f"nic_local_cpu_softirq_ratio{{{HOST}}}", "{{device}} {{stat}}")),
        row("Physical layer and FEC"),
        timeseries(
            "Pre-FEC bit error ratio",
            "Bits FEC corrected per bit on the line (line rate, not traffic: idle codewords "
            "are corrected too).", "sci",
            target(f"rate(nic_fec_corrected_bit_errors_total{{{HOST}}}[{RATE}]) / "
                   f"(8 * nic_link_speed_bytes_per_second{{{HOST}}})", "{{device}}"),
            log_scale=True),
        timeseries(
            "FEC codewords per lane",
            "Codewords FEC corrected, and those it could not (lost frames).", "cps",
            target(f"rate(nic_fec_corrected_blocks_total{{{HOST}}}[{RATE}])",
                   "{{device}} lane {{lane}} corrected"),
            target(f"rate(nic_fec_uncorrectable_blocks_total{{{HOST}}}[{RATE}])",
                   "{{device}} lane {{lane}} uncorrectable"),
            log_scale=True),
        timeseries(
            "CRC and symbol errors",
            "Frames with a bad FCS, symbol errors during carrier, and PCS symbol errors FEC "
            "did not correct.", "cps",
            target(f"rate(nic_rx_crc_errors_total{{{HOST}}}[{RATE}])", "{{device}} CRC"),
            target(f"rate(nic_rx_symbol_errors_total{{{HOST}}}[{RATE}])", "{{device}} symbol"),
            target(f"rate(nic_rx_pcs_symbol_errors_total{{{HOST}}}[{RATE}])",
                   "{{device}} PCS symbol")),
        timeseries(
            "Link down events",
            "Link-down events counted by the NIC and carrier losses seen by the kernel.",
            "short",
            target(f"increase(nic_link_down_events_total{{{HOST}}}[{RATE}])", "{{device}} NIC"),
            target(f"increase(nic_carrier_down_events_total{{{HOST}}}[{RATE}])",
                   "{{device}} carrier")),
        row("Link physics (docs/link-physics.md)"),
        timeseries(
            "Pre-FEC bit error ratio per lane",
            "nic_pre_fec_ber: bit errors FEC corrected on each lane per bit the lane carries at "
            "its serdes rate (53.125 Gb/s for a 50G PAM4 lane), lane \"total\" the port. One "
            "lane far above the others is one fiber, cable lane or module lane; the total can "
            "hide it. Alert thresholds by FEC code: RS(544,514) 2.4e-5, RS(528,514) 5e-6.",
            "sci",
            target(f"nic_pre_fec_ber{{{HOST}}}", "{{device}} lane {{lane}} ({{fec}})"),
            log_scale=True),
        status_history(
            "Pre-FEC bit error ratio by lane (heat map)",
            "nic_pre_fec_ber of each lane over time, one row per lane, coloured by decade: "
            "green below 1e-6, yellow from 1e-6, orange from 5e-6 (the RS(528,514) alert "
            "threshold), red from 2.4e-5 (the RS(544,514) alert threshold, a decade below what "
            "that code corrects). The lane that stays red while its neighbours are green is "
            "the one to chase; the port's total is on the panel beside.", "sci",
            [("green", 0), ("yellow", 1e-6), ("orange", 5e-6), ("red", 2.4e-5)],
            target(f'nic_pre_fec_ber{{{HOST}, lane!="total"}}', "{{device}} lane {{lane}}")),
        timeseries(
            "FEC margin (symbols left in the worst codeword)",
            "nic_fec_margin_symbols: the FEC code's correction limit (15 symbols for "
            "RS(544,514), 7 for RS(528,514)) minus the highest histogram bin that grew in the "
            "last poll (kernel 6.18 FEC histogram). 0: codewords at the limit, uncorrectable "
            "ones next.", "short",
            target(f"nic_fec_margin_symbols{{{HOST}}}", "{{device}} lane {{lane}}")),
        table(
            "Why the link is down",
            "nic_link_down_reason: the driver's extended link state while the link is down "
            "(ethtool netlink LINKSTATE_GET: autoneg, link_training_failure, "
            "bad_signal_integrity, no_cable, cable_issue, module, overheat ...; empty while the "
            "link is up), and the link downs in the dashboard's time range (the NIC's own "
            "count, else the carrier's).",
            target(f"nic_link_down_reason{{{HOST}}} or 0 * nic_carrier{{{HOST}}}"),
            target(f"increase(nic_link_down_events_total{{{HOST}}}[$__range])"
                   f" or increase(nic_carrier_down_events_total{{{HOST}}}[$__range])"),
            rename={"Value #B": "link downs in range"}, hide=("Value #A", "job"), height=6),
        row("Optics (pluggable modules, --collector.module)"),
        timeseries(
            "Module rx power per lane",
            "Optical power each lane of the module receives, in dBm (10 log10 of mW), with the "
            "module's own low-warning threshold; -Inf: a dark lane. The legend names what the "
            "module measures (average power or OMA, 1-3 dB apart): compare lanes and modules "
            "of one type only. A CMIS lane whose data path is not activated has no line. Read "
            "every --collector.module.interval, not every poll.", "dBm",
            target(f"10 * log10(nic_module_rx_power_watts{{{HOST}}} * 1000)",
                   "{{device}} lane {{lane}} ({{type}})"),
            target(f"10 * log10(nic_module_rx_power_threshold_watts{{{HOST}, "
                   f"level=\"low_warning\"}} * 1000)", "{{device}} low warning ({{type}})")),
        timeseries(
            "Module tx power per lane",
            "Optical power each lane's laser transmits, in dBm, with the module's low-warning "
            "threshold.", "dBm",
            target(f"10 * log10(nic_module_tx_power_watts{{{HOST}}} * 1000)",
                   "{{device}} lane {{lane}}"),
            target(f"10 * log10(nic_module_tx_power_threshold_watts{{{HOST}, "
                   f"level=\"low_warning\"}} * 1000)", "{{device}} low warning")),
        timeseries(
            "Module temperature",
            "Module temperature as the module measures it, with its own high-warning "
            "threshold.", "celsius",
            target(f"nic_module_temperature_celsius{{{HOST}}}", "{{device}}"),
            target(f"nic_module_temperature_threshold_celsius{{{HOST}, level=\"high_warning\"}}",
                   "{{device}} high warning")),
        timeseries(
            "Module pre-FEC BER per lane (CMIS VDM)",
            "nic_module_vdm_pre_fec_ber{stat=\"current\"}: the pre-FEC bit error ratio the "
            "module itself measures on each lane's input (media: from the fiber or cable; host: "
            "from this NIC), with the module's own high-warning threshold. Only modules that "
            "advertise VDM (CMIS 5, most 400-800G optics); read every "
            "--collector.module.interval.", "sci",
            target(f'nic_module_vdm_pre_fec_ber{{{HOST}, stat="current"}}',
                   "{{device}} lane {{lane}} {{side}}"),
            target(f'max by (job, instance, device, side) (nic_module_vdm_pre_fec_ber_threshold'
                   f'{{{HOST}, stat="current", level="high_warning"}})',
                   "{{device}} {{side}} high warning"),
            log_scale=True),
        table(
            "Modules",
            "The module in each port, the age of the values shown (time since its EEPROM was "
            "read) and the state of the last read (ok, unsupported, absent, not_permitted, "
            "busy: the module's firmware is being flashed, failed, corrupt: a checksum of the "
            "EEPROM fails and nothing from that page is shown).",
            target(f"nic_module_info{{{HOST}}}", instant=True),
            target(f"time() - nic_module_read_timestamp_seconds{{{HOST}}}", instant=True),
            target(f"nic_module_read_state{{{HOST}}} == 1", instant=True),
            units={"Value #B": "s"}, rename={"Value #B": "age"},
            hide=("job", "Value #A", "Value #C"), width=12),
        row("Configuration"),
        table(
            "Rings, channels, MTU and speed",
            "Configured ring sizes (and the driver's maximum), combined channels, MTU and "
            "link speed.",
            target(f'nic_ring_descriptors{{{HOST}, ring="rx"}}'),
            target(f'nic_ring_max_descriptors{{{HOST}, ring="rx"}}'),
            target(f'nic_ring_descriptors{{{HOST}, ring="tx"}}'),
            target(f"nic_channels{{{HOST}}}"),
            target(f"nic_mtu_bytes{{{HOST}}}"),
            target(f"nic_link_speed_bytes_per_second{{{HOST}}} * 8"),
            units={"Value #F": "bps"}, hide=("ring", "type"),
            rename={"Value #A": "rx ring", "Value #B": "rx ring max", "Value #C": "tx ring",
                    "Value #D": "channels", "Value #E": "MTU", "Value #F": "speed"},
            width=12),
        table(
            "Identity and FEC mode",
            "Driver, firmware, PCI address, permanent MAC and RDMA device of each interface; "
            "its FEC mode; and how often its PCI address or name changed in the time range.",
            target(f"nic_info{{{HOST}}}"),
            target(f"nic_fec_mode_info{{{HOST}}}"),
            target(f"increase(nic_identity_changes_total{{{HOST}}}[$__range])"),
            hide=("Value #A", "Value #B"), rename={"Value #C": "identity changes in range"},
            width=12),
        table(
            "Flow control configuration",
            "Priorities with PFC on (DCB), and 802.3x global PAUSE per direction (1 = on; "
            "next to PFC it stops every priority).",
            target(f"nic_pfc_enabled{{{HOST}}} == 1"),
            target(f"nic_pause_enabled{{{HOST}}}"),
            hide=("Value #A",), rename={"Value #B": "802.3x PAUSE"}, width=12, height=6),
        table(
            "Expectation violations",
            "Failed expectation checks for these interfaces (configure expectations, see "
            "docs/expectations.md).",
            target(f"nic_expectation_violation{{{HOST}}}"), hide=("Value",), width=12,
            height=6),
        row("PCIe"),
        table(
            "PCIe path",
            "Each device on the NIC's path (hop 0 the NIC, then upstream ports to the root "
            "port): trained (current) and capable (max) speed and width.",
            target(f"nic_pcie_link_speed_gts{{{HOST}}}"),
            target(f"nic_pcie_link_width{{{HOST}}}"),
            rename={"Value #A": "GT/s", "Value #B": "lanes"}, width=12, height=10),
        table(
            "PCIe verdict",
            "Degraded (1) by width, speed (any link on the path) or a ceiling below the line "
            "rate; unknown (1) when a link cannot be read or is out of sight (a VM); and "
            "whether the slot limits the card (a platform fact, not a fault).",
            target(f"nic_pcie_degraded{{{HOST}}}"),
            target(f"nic_pcie_verdict_unknown{{{HOST}}}"),
            target(f"nic_pcie_slot_limited{{{HOST}}}"),
            rename={"Value #A": "degraded", "Value #B": "unknown", "Value #C": "slot limited"},
            width=12, height=10),
        timeseries(
            "PCIe ceiling and line rate",
            "Usable bandwidth of the narrowest PCIe link on the path against the summed line "
            "rate of the ports that share it. Below the line rate the NIC cannot run at full "
            "speed.", "bps",
            target(f"nic_pcie_bandwidth_ceiling_bytes_per_second{{{HOST}}} * 8",
                   "{{device}} PCIe ceiling"),
            target(f"nic_pcie_shared_line_rate_bytes_per_second{{{HOST}}} * 8",
                   "{{device}} line rate")),
        timeseries(
            "PCIe AER errors",
            "Advanced Error Reporting errors of each device on the path, by severity.",
            "short",
            target(f"increase(nic_pcie_aer_errors_total{{{HOST}}}[{RATE}])",
                   "{{device}} hop {{hop}} {{severity}}")),
        row("Device health (devlink)"),
        table(
            "Health reporters",
            "devlink health reporters of each interface's device and devlink port (mlx5: fw, "
            "fw_fatal, vnic on the device; tx, rx on the port): state (healthy, error, "
            "unknown), errors and recoveries within the dashboard's time range, age of the "
            "stored dump. Empty on drivers or kernels without devlink.",
            target(f"nic_devlink_health_reporter_state{{{HOST}}} == 1"),
            target(f"increase(nic_devlink_health_errors_total{{{HOST}}}[$__range])"),
            target(f"increase(nic_devlink_health_recoveries_total{{{HOST}}}[$__range])"),
            target(f"time() - nic_devlink_health_last_dump_timestamp_seconds{{{HOST}}}"),
            rename={"Value #B": "errors", "Value #C": "recoveries", "Value #D": "dump age"},
            units={"Value #D": "s"}, hide=("job", "Value #A"), width=12, height=8),
        timeseries(
            "Health reporter errors",
            "Errors the driver reported to each devlink health reporter (each one a fault it "
            "detected and usually recovered from by resetting queues or the device).",
            "short",
            target(f"increase(nic_devlink_health_errors_total{{{HOST}}}[{RATE}])",
                   "{{device}} {{reporter}}"),
            height=8),
        row("NIC chip and firmware (docs/link-physics.md)"),
        timeseries(
            "NIC chip temperature",
            "Each sensor of the NIC chip as its driver's hwmon device reports it (mlx5: asic "
            "and the module in the cage, ModuleN; bnxt_en and ice: temp1), with the critical "
            "threshold the driver reports (legend 'crit'). "
            "NicAsicTemperatureHigh fires within 5 C of it.",
            "celsius",
            target(f"nic_asic_temperature_celsius{{{HOST}}}", "{{device}} {{sensor}}"),
            target(f'nic_asic_temperature_threshold_celsius{{{HOST}, level="critical"}}',
                   "{{device}} {{sensor}} crit"),
            width=12, height=8),
        table(
            "Firmware flashed, not activated",
            "devlink dev info of each interface's devlink instance: 1 where the stored "
            "(flashed) version of a component differs from the running one, 0 where they "
            "match; the versions beside it. Activate with devlink dev reload ... action "
            "fw_activate or a cold reboot. Empty without devlink info.",
            target(f"nic_firmware_activation_pending{{{HOST}}}"),
            target(f'nic_firmware_info{{{HOST}, slot=~"running|stored"}}'),
            rename={"Value #A": "pending"}, hide=("job", "Value #B"), width=12, height=8),
        row("Receive path (docs/receive-path.md)"),
        timeseries(
            "Busiest receive queue against its fair share",
            "The busiest receive queue's share of the packets between two polls, divided by "
            "the fair share (1 / the queues in use): 1 is an even spread, N one queue of N "
            "taking all. NicRxQueueImbalance fires above 2 for 15 minutes. Absent below 1,000 "
            "packets in a poll.", "short",
            target(f'nic_rx_queue_imbalance_ratio{{{HOST}, window="poll"}}', "{{device}}"),
            width=8),
        timeseries(
            "Softirq share of the CPUs serving each NIC",
            "Share of the serving CPUs' time in softirq between polls (their interrupts' "
            "effective affinity and their RPS CPUs): the busiest (max) and the mean, and the "
            "busiest of those that ran out of budget (squeezed). Squeezed near 1: a core "
            "cannot keep up (NicReceiveCpuSaturated). Per CPU: --collector.detail=queue.",
            "percentunit",
            target(f"nic_irq_cpu_softirq_ratio{{{HOST}}}", "{{device}} {{stat}}"),
            target(f"nic_rx_cpu_squeezed_softirq_ratio{{{HOST}}}", "{{device}} squeezed"),
            width=8),
        timeseries(
            "Serving CPUs out of budget or dropping",
            "CPUs serving each NIC (/proc/net/softnet_stat, all NICs together) whose receive "
            "softirq stopped with packets left (time_squeeze rose) or whose backlog dropped "
            "packets, between the last two polls. Per CPU: --collector.detail=queue.", "short",
            target(f"nic_rx_cpus_squeezed{{{HOST}}}", "{{device}} squeezed"),
            target(f"nic_rx_cpus_dropping{{{HOST}}}", "{{device}} dropping"),
            width=8),
        table(
            "Hot queue and interrupt placement",
            "The busiest receive queue of the last poll with the CPUs that served it and its "
            "share of the packets, and the NIC's queue interrupts by placement against its "
            "NUMA node (remote: NicIrqOffNumaNode).",
            target(f"nic_rx_queue_busiest_info{{{HOST}}}"),
            target(f'nic_irqs{{{HOST}, placement="remote"}}'),
            target(f'nic_irqs{{{HOST}, placement="local"}}'),
            rename={"Value #A": "share", "Value #B": "remote irqs", "Value #C": "local irqs"},
            units={"Value #A": "percentunit"}, hide=("job", "placement"), height=6),
        row("RDMA"),
        timeseries(
            "RDMA traffic", "Bits per second through the RDMA port; transmit below the axis.",
            "bps", target(f"rate(nic_rdma_rx_bytes_total{{{HOST}}}[{RATE}]) * 8",
                          "{{device}} {{rdma_device}} rx"),
            target(f"rate(nic_rdma_tx_bytes_total{{{HOST}}}[{RATE}]) * 8",
                   "{{device}} {{rdma_device}} tx"),
            negative_tx=True, width=8),
        timeseries(
            "Congestion control: ECN and CNP",
            "ECN-marked RoCE packets received, CNPs sent as notification point and handled as "
            "reaction point. Rising under load is the control loop working.", "pps",
            target(f"rate(nic_rdma_ecn_marked_packets_total{{{HOST}}}[{RATE}])",
                   "{{device}} ECN marked"),
            target(f"rate(nic_rdma_cnp_sent_total{{{HOST}}}[{RATE}])", "{{device}} CNP sent"),
            target(f"rate(nic_rdma_cnp_handled_total{{{HOST}}}[{RATE}])",
                   "{{device}} CNP handled"),
            width=8),
        timeseries(
            "RDMA transport errors",
            "Out-of-sequence packets, NAK sequence errors, ack timeouts (retransmissions) and "
            "ICRC errors: drops in a fabric that should be lossless.", "cps",
            target(f"rate(nic_rdma_out_of_sequence_total{{{HOST}}}[{RATE}])",
                   "{{device}} out of sequence"),
            target(f"rate(nic_rdma_packet_seq_errors_total{{{HOST}}}[{RATE}])",
                   "{{device}} sequence errors"),
            target(f"rate(nic_rdma_local_ack_timeout_errors_total{{{HOST}}}[{RATE}])",
                   "{{device}} ack timeouts"),
            target(f"rate(nic_rdma_icrc_errors_total{{{HOST}}}[{RATE}])", "{{device}} ICRC"),
            width=8),
        timeseries(
            "RDMA link errors (IB PortCounters)",
            "Per RDMA port, InfiniBand ports without a netdev included: symbol errors, link "
            "error recoveries, link downs, receive errors and excessive buffer overruns "
            "(NicRdmaSymbolErrors, NicRdmaLinkErrorRecovery, NicRdmaLinkDowned, "
            "NicRdmaReceiveErrors, NicRdmaBufferOverrun). A counter standing at its maximum "
            "shows no rate: see the table.", "cps",
            target(f"rate(nic_rdma_symbol_errors_total{{{RDMA_HOST}}}[{RATE}])",
                   "{{rdma_device}}/{{port}} {{device}} symbol errors"),
            target(f"rate(nic_rdma_link_error_recoveries_total{{{RDMA_HOST}}}[{RATE}])",
                   "{{rdma_device}}/{{port}} {{device}} link recoveries"),
            target(f"rate(nic_rdma_link_downed_total{{{RDMA_HOST}}}[{RATE}])",
                   "{{rdma_device}}/{{port}} {{device}} link downed"),
            target(f"rate(nic_rdma_rx_errors_total{{{RDMA_HOST}}}[{RATE}])",
                   "{{rdma_device}}/{{port}} {{device}} receive errors"),
            target(f"rate(nic_rdma_excessive_buffer_overrun_errors_total{{{RDMA_HOST}}}"
                   f"[{RATE}])", "{{rdma_device}}/{{port}} {{device}} buffer overruns"),
            width=8),
        timeseries(
            "RDMA retries and failed QPs",
            "RNR NAKs (the remote receiver had nothing posted), and requester QPs that ran out "
            "of transport or RNR retries and failed (NicRdmaRnrNakRetries, "
            "NicRdmaTransportRetriesExceeded).", "cps",
            target(f"rate(nic_rdma_rnr_nak_retry_errors_total{{{RDMA_HOST}}}[{RATE}])",
                   "{{rdma_device}}/{{port}} {{device}} RNR NAKs"),
            target(f"rate(nic_rdma_req_transport_retries_exceeded_total{{{RDMA_HOST}}}"
                   f"[{RATE}])", "{{rdma_device}}/{{port}} {{device}} transport retries exceeded"),
            target(f"rate(nic_rdma_req_rnr_retries_exceeded_total{{{RDMA_HOST}}}[{RATE}])",
                   "{{rdma_device}}/{{port}} {{device}} RNR retries exceeded"),
            width=8),
        table(
            "RDMA ports",
            "Every RDMA port of the host: driver, link layer (InfiniBand ports have no "
            "netdev), state, rate, and how many of its IB PortCounters stand at their maximum "
            "(saturated: their increase is unknown until cleared with perfquery -R; "
            "NicRdmaCounterSaturated).",
            target(f"nic_rdma_port_info{{{RDMA_HOST}}}"),
            target(f"nic_rdma_port_rate_bytes_per_second{{{RDMA_HOST}}} * 8"),
            target(f"count without (counter) (nic_rdma_portcounters_saturated{{{RDMA_HOST}}} == 1) "
                   f"or 0 * nic_rdma_port_active{{{RDMA_HOST}}}"),
            hide=("Value #A", "node_guid"),
            rename={"Value #B": "rate", "Value #C": "saturated counters"},
            units={"Value #B": "bps"}, width=8),
        row("RoCE QoS: PFC next to ECN"),
        timeseries(
            "PFC, ECN marks and CNPs per port",
            "PFC frames (all priorities, both directions) next to ECN-marked RoCE packets and "
            "CNPs. ECN marks and CNPs rising under load is the control loop working; PFC "
            "rising steadily means ECN is not doing its job (lower the ECN thresholds, do not "
            "tune PFC up). PFC without any ECN marks: check ECN on the RoCE priority below.",
            "pps",
            target(f"sum by (device) (rate(nic_rx_pfc_frames_total{{{HOST}}}[{RATE}]) "
                   f"+ on (device, priority) rate(nic_tx_pfc_frames_total{{{HOST}}}[{RATE}]))",
                   "{{device}} PFC frames"),
            target(f"sum by (device) (rate(nic_rdma_ecn_marked_packets_total{{{HOST}}}[{RATE}]))",
                   "{{device}} ECN marked"),
            target(f"sum by (device) (rate(nic_rdma_cnp_sent_total{{{HOST}}}[{RATE}]))",
                   "{{device}} CNP sent"),
            target(f"sum by (device) (rate(nic_rdma_cnp_handled_total{{{HOST}}}[{RATE}]))",
                   "{{device}} CNP handled"),
            width=12, height=8),
        table(
            "Configured profile: trust, CNP and ToS",
            "Trust mode (dcbnl), the priority and DSCP of the CNPs the port sends and the RoCE "
            "ToS byte (rdma_cm default, vendor mlx5 forced traffic class). Empty cells: not "
            "exposed by this driver (docs/roce-qos.md).",
            target(f"nic_qos_trust_info{{{HOST}}}"),
            target(f"nic_roce_cnp_priority{{{HOST}}}"),
            target(f"nic_roce_cnp_dscp{{{HOST}}}"),
            target(f"max by (job, instance, device) (nic_rdma_default_roce_tos{{{HOST}}})"),
            target(f"max by (job, instance, device) (nic_rdma_traffic_class{{{HOST}}})"),
            hide=("Value #A",),
            rename={"Value #B": "CNP priority", "Value #C": "CNP DSCP",
                    "Value #D": "default RoCE ToS", "Value #E": "traffic class"},
            width=12, height=8),
        table(
            "DSCP to priority",
            "The DCB application table's DSCP entries: the priority each mapped DSCP gets. "
            "RoCE's DSCP must land on the lossless/ECN priority, and the same on every host "
            "and the switch.",
            target(f"nic_qos_dscp_priority{{{HOST}}}"),
            rename={"Value": "priority"}, width=8, height=8),
        table(
            "ECN enabled (DCQCN)",
            "Priorities with RoCE ECN on, at the reaction point (rp) and notification point "
            "(np); vendor mlx5 driver only. The RoCE priority needs both.",
            target(f"nic_roce_ecn_enabled{{{HOST}}} == 1"),
            hide=("Value",), width=8, height=8),
        table(
            "ETS",
            "Traffic class of each priority and each class's bandwidth share (dcbnl ETS).",
            target(f"nic_ets_priority_tc{{{HOST}}}"),
            rename={"Value": "traffic class"}, width=8, height=8),
        row("SR-IOV VFs (--collector.vfs)"),
        timeseries(
            "VF drops, worst 10",
            "Packets the NIC dropped for (rx) or from (tx) each SR-IOV VF of the PFs "
            "(IFLA_VF_STATS, as the PF driver counts them), the ten highest rates. A VF with "
            "nothing bound to it drops whatever arrives for it. Empty without "
            "--collector.vfs (docs/sriov.md).", "pps",
            target(f"topk(10, rate(nic_vf_rx_dropped_total{{{HOST}}}[{RATE}]))",
                   "{{device}} vf {{vf}} rx dropped"),
            target(f"topk(10, rate(nic_vf_tx_dropped_total{{{HOST}}}[{RATE}]))",
                   "{{device}} vf {{vf}} tx dropped"),
            width=8),
        timeseries(
            "VF traffic, top 10",
            "Bits per second of the ten busiest VFs; transmit below the axis. VF traffic "
            "switched inside the NIC (VF to VF) never reaches the wire.", "bps",
            target(f"topk(10, rate(nic_vf_rx_bytes_total{{{HOST}}}[{RATE}])) * 8",
                   "{{device}} vf {{vf}} rx"),
            target(f"topk(10, rate(nic_vf_tx_bytes_total{{{HOST}}}[{RATE}])) * 8",
                   "{{device}} vf {{vf}} tx"),
            negative_tx=True, width=8),
        table(
            "VFs per PF",
            "SR-IOV VFs enabled (sysfs sriov_numvfs), the device's maximum (sriov_totalvfs), "
            "how many the PF's link reply describes this poll (reported) and how many of "
            "those have no counters (no_counters: a driver without VF statistics); reported "
            "below enabled, or no_counters above 0: VFs without counters "
            "(NicSriovVfsUnreported).",
            target(f"max by (job, instance, device) (nic_sriov_vfs{{{HOST}, state=\"enabled\"}})"),
            target(f"max by (job, instance, device) (nic_sriov_vfs{{{HOST}, state=\"total\"}})"),
            target(f"max by (job, instance, device) "
                   f"(nic_sriov_vfs{{{HOST}, state=\"reported\"}})"),
            target(f"max by (job, instance, device) "
                   f"(nic_sriov_vfs{{{HOST}, state=\"no_counters\"}})"),
            rename={"Value #A": "enabled", "Value #B": "total", "Value #C": "reported",
                    "Value #D": "no_counters"},
            width=8, height=8),
        row("nicwatch"),
        timeseries(
            "Poll duration", "Time of the last poll by stage.", "s",
            target('nicwatch_poll_duration_seconds{job=~"$job", instance=~"$instance"}',
                   "{{instance}} {{stage}}"),
            stack=True, width=8),
        timeseries(
            "Source errors and counter resets",
            "Failed kernel reads by source, and counter resets nicwatch detected (driver "
            "reload, changed statistic set, replaced interface).", "short",
            # Both families appear with the first error or reset: until then, zero.
            target(f"increase(nicwatch_source_errors_total{{{HOST}}}[{RATE}]) "
                   f"or 0 * nic_link_up{{{HOST}}}", "{{device}} {{source}} errors"),
            target(f"increase(nic_stat_resets_total{{{HOST}}}[{RATE}]) "
                   f"or 0 * nic_link_up{{{HOST}}}", "{{device}} reset: {{reason}}"),
            width=8),
        timeseries(
            "Age of the served poll", "How old the poll behind each scrape was.", "s",
            target('timestamp(nicwatch_last_poll_timestamp_seconds{job=~"$job", '
                   'instance=~"$instance"}) - nicwatch_last_poll_timestamp_seconds{job=~"$job", '
                   'instance=~"$instance"}', "{{instance}}"),
            width=8),
    ]
    return dashboard(HOST_UID, "nicwatch / Host and NIC",
                     "One host's NICs: throughput, PAUSE/PFC per priority, drops, FEC, "
                     "configuration, PCIe path and RDMA congestion.",
                     [JOB, INSTANCE, DEVICE], panels, [_link("Fleet overview", FLEET_UID)])


DASHBOARDS = {"nicwatch-fleet.json": fleet, "nicwatch-host.json": host}


# ------------------------------------------------------------------------------ output


def render(dash: dict) -> str:
    return json.dumps(dash, indent=2, sort_keys=False) + "\n"


def iter_targets(dash: dict) -> Iterator[tuple[dict, dict]]:
    """(panel, target) for every query of every panel, rows included."""
    for panel in dash["panels"]:
        for inner in (panel, *panel.get("panels", ())):
            for t in inner.get("targets", ()):
                yield inner, t


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="only report dashboards that differ; exit 1 if any does")
    args = p.parse_args(argv)
    files = {HERE / name: render(build()) for name, build in DASHBOARDS.items()}
    return sync_generated(files, args.check, HERE.parent)


if __name__ == "__main__":
    sys.exit(main())
