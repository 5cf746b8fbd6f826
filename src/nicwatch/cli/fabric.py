"""`nicwatch fabric --prometheus URL`: the fleet view from the operator's Prometheus
(docs/fabric.md, "The fabric view"). Each link with both ends (host, port, neighbour), each
end's health rates, diagnosis verdicts and firing alerts, and the ports off their role's
norm (the fleet drift rules), read through Prometheus' HTTP API only: instant queries of the
series the daemons export and of the nicwatch-fabric recording rules, and the rule list to
tell whether those rules are loaded. Text, --json or an HTML page (--html FILE).

Exit 0 when nothing holds; 1 when something does (a firing alert, a verdict, a DCBX
mismatch, errors at one end of a link only, a port off its role's norm, a nicwatch target
down, none at all, the fabric rules not loaded) or when Prometheus cannot be read (one
line); 2 for a bad flag."""

from __future__ import annotations

import argparse
import base64
import html
import http.client
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from nicwatch import metrics
from nicwatch.cli import common
from nicwatch.printable import printable
from nicwatch.values import ConfigError, parse_duration, show_bytes

# What one answer of Prometheus may hold before it is refused unread: the largest instant
# query here is one series per port (a 10,000-port fabric's answers are a few MiB).
MAX_ANSWER = 16 << 20
TIMEOUT = 60.0  # for all the queries of one view together (--timeout)
CHUNK = 1 << 16
PORT = ("instance", "device")

RATES = {  # per port, summed over priorities, lanes and queues
    "rx_crc_errors": (metrics.RX_CRC_ERRORS,),
    "fec_uncorrectable": (metrics.FEC_UNCORRECTABLE_BLOCKS,),
    "rx_pause": (metrics.RX_PAUSE_FRAMES, metrics.RX_PFC_FRAMES),
    "tx_pause": (metrics.TX_PAUSE_FRAMES, metrics.TX_PFC_FRAMES),
    "rx_drops": (metrics.RX_OUT_OF_BUFFER_DROPS, metrics.RX_DISCARDS),
}
RATE_HEADERS = {"rx_crc_errors": "RX CRC/s", "fec_uncorrectable": "FEC UNC/s",
                "rx_pause": "RX PAUSE/s", "tx_pause": "TX PAUSE/s", "rx_drops": "RX DROPS/s"}
RECEIVE_NOTES = {"not_permitted": "no CAP_NET_RAW", "firmware_agent": "firmware LLDP agent",
                 "failed": "receive failed", "starting": "starting"}


class Unreadable(Exception):
    """Prometheus could not be read, or its answer is not what its API sends (exit 1)."""


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    p = common.add_command(
        subparsers, "fabric",
        description="The fabric from the operator's Prometheus (its HTTP API only): each link "
        "with both ends, each end's health rates, diagnosis verdicts and firing alerts, and the "
        "ports whose configuration differs from their role's (the nicwatch-fabric rules). "
        "Exit 0 nothing holds, 1 something holds or Prometheus cannot be read, 2 usage.")
    p.add_argument("--prometheus", metavar="URL", required=True,
                   help="Prometheus' base URL (http://HOST:9090; user:password@ for basic "
                   "auth; a path prefix such as /prometheus is kept)")
    p.add_argument("--selector", metavar="MATCHERS", default='job="nicwatch"',
                   help="label matchers of the nicwatch targets (default: job=\"nicwatch\", "
                   "as labels.nicwatch_selector in thresholds.toml)")
    p.add_argument("--window", metavar="DURATION", default="5m",
                   help="the window of the rates (default 5m)")
    p.add_argument("--timeout", metavar="DURATION", default="60s",
                   help="how long all of Prometheus' answers may take together (default 60s)")
    p.add_argument("--json", action="store_true", help="print the view as JSON")
    p.add_argument("--html", metavar="FILE", help="also write the view as an HTML page "
                   "(atomically)")
    return p


# ------------------------------------------------------------------------- Prometheus


@dataclass
class Prometheus:
    base: str  # without credentials
    auth: str | None = None
    deadline: float = math.inf  # time.monotonic() by which every answer must be read

    @classmethod
    def from_url(cls, url: str, timeout: float = TIMEOUT) -> Prometheus:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--prometheus: expected http://HOST:PORT or https://HOST:PORT, "
                              f"got {printable(url)!r}")
        auth = None
        if parts.username is not None:
            token = ":".join(urllib.parse.unquote(x or "") for x in (parts.username,
                                                                      parts.password))
            auth = "Basic " + base64.b64encode(token.encode()).decode()
        netloc = parts.netloc.rpartition("@")[2]
        return cls(parts._replace(netloc=netloc, query="", fragment="").geturl().rstrip("/"),
                   auth, time.monotonic() + timeout)

    def _left(self, path: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Unreadable(f"{self.base}: no whole answer to {path} in time (--timeout)")
        return left

    def _read(self, response: Any, path: str) -> bytes:
        """The answer's body, at most MAX_ANSWER + 1 bytes, by the deadline: a server that
        drips its answer a byte at a time is cut off there, not after each byte's timeout."""
        chunks, size = [], 0
        while size <= MAX_ANSWER:
            self._left(path)
            chunk = response.read1(min(CHUNK, MAX_ANSWER + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)

    def get(self, path: str, query: dict[str, str] | None = None) -> Any:
        """The ``data`` of a successful API answer; Unreadable with one line otherwise."""
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self.auth:
            request.add_header("Authorization", self.auth)
        try:
            with urllib.request.urlopen(request, timeout=self._left(path)) as response:
                body = self._read(response, path)
        except urllib.error.HTTPError as e:
            # Prometheus answers a bad query with 400 and its JSON error: name it
            try:
                body = e.read(common.MAX_ERROR_BODY)
                detail = printable(str(json.loads(body)["error"]).split("\n", 1)[0])
            except (ValueError, KeyError, TypeError, RecursionError, OSError,
                    http.client.HTTPException):
                detail = printable(str(e.reason))
            finally:
                e.close()
            raise Unreadable(f"{self.base}: HTTP {e.code} for {path}: {detail}") from None
        except TimeoutError:
            raise Unreadable(f"{self.base}: no whole answer to {path} in time "
                             "(--timeout)") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise Unreadable(f"{self.base}: cannot reach Prometheus: "
                             f"{printable(str(reason))}") from None
        if len(body) > MAX_ANSWER:
            raise Unreadable(f"{self.base}: the answer to {path} is larger than "
                             f"{show_bytes(MAX_ANSWER)}; refused unread")
        try:
            answer = json.loads(body)
            if not isinstance(answer, dict) or answer.get("status") != "success":
                raise ValueError
            return answer["data"]
        except (ValueError, KeyError, RecursionError):
            raise Unreadable(f"{self.base}: the answer to {path} is not a Prometheus API "
                             "answer (is this Prometheus' URL?)") from None

    def query(self, expr: str) -> list[tuple[dict[str, str], float]]:
        """An instant query's vector: (labels, value) per series."""
        data = self.get("/api/v1/query", {"query": expr})
        try:
            if data["resultType"] != "vector" or not isinstance(data["result"], list):
                raise TypeError
            out = []
            for r in data["result"]:
                labels = r["metric"]
                if not isinstance(labels, dict) or not all(
                        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
                    raise TypeError
                out.append((labels, float(r["value"][1])))
            return out
        except (KeyError, TypeError, IndexError, ValueError):
            raise Unreadable(f"{self.base}: the answer to the query {expr[:60]!r} is not an "
                             "instant vector") from None

    def rule_groups(self) -> set[str]:
        data = self.get("/api/v1/rules", {"type": "record"})
        try:
            return {str(g["name"]) for g in data["groups"]}
        except (KeyError, TypeError):
            raise Unreadable(f"{self.base}: the answer to /api/v1/rules is not a rule "
                             "list") from None


# ----------------------------------------------------------------------------- view


def port_of(labels: dict[str, str], prefix: str = "") -> tuple[str, str]:
    instance, device = (labels.get(prefix + key, "") for key in PORT)
    return instance, device


@dataclass
class End:
    instance: str
    device: str
    neighbour: dict[str, str] = field(default_factory=dict)
    lldp: str = ""
    role: str = ""
    rates: dict[str, float] = field(default_factory=dict)
    verdicts: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)


@dataclass
class Link:
    a: tuple[str, str]
    b: tuple[str, str]
    verdict: str = ""  # "" or what the two ends' counters say together


@dataclass
class Drift:
    instance: str
    device: str
    role: str
    property: str
    value: str
    norm: str
    ports: int
    norm_ports: int


@dataclass
class View:
    prometheus: str
    time: float
    window: str
    targets: int
    down: list[str]
    rules_loaded: bool
    ports: dict[tuple[str, str], End]
    links: list[Link]
    drift: list[Drift]
    fleet_alerts: list[str]
    problems: list[str]


def build_view(prom: Prometheus, selector: str, window: str) -> View:
    sel = selector
    up = prom.query(f"up{{{sel}}}")
    rules_loaded = "nicwatch-fabric" in prom.rule_groups()
    ports: dict[tuple[str, str], End] = {}

    def end(key: tuple[str, str]) -> End:
        if key not in ports:
            ports[key] = End(*key)
        return ports[key]

    for labels, _ in prom.query(f"{metrics.LLDP_RECEIVE_STATE.name}{{{sel}}} == 1"):
        end(port_of(labels)).lldp = labels.get("state", "")
    for labels, _ in prom.query(f"{metrics.LLDP_NEIGHBOR_INFO.name}{{{sel}}}"):
        end(port_of(labels)).neighbour = {
            k: labels.get(k, "") for k in ("chassis_id", "port_id", "system_name",
                                           "port_description")}
    for labels, _ in prom.query(f"{metrics.FABRIC_ROLE.name}{{{sel}}}"):
        end(port_of(labels)).role = labels.get("role", "")
    for labels, _ in prom.query(f"{metrics.DIAGNOSIS.name}{{{sel}}} == 1"):
        where = labels.get("priority") or labels.get("lane")
        end(port_of(labels)).verdicts.append(
            labels.get("signature", "?") + (f" ({where})" if where else ""))
    for labels, _ in prom.query(f"{metrics.LLDP_PEER_DCBX_MISMATCH.name}{{{sel}}} == 1"):
        end(port_of(labels)).mismatches.append(labels.get("setting", "?"))
    fleet_alerts = []
    for labels, _ in prom.query('ALERTS{alertstate="firing",alertname=~"Nic.*"}'):
        name = labels.get("alertname", "?")
        detail = ", ".join(f"{k}={labels[k]}" for k in ("property", "setting", "signature",
                                                       "priority", "value") if k in labels)
        shown = name + (f" ({detail})" if detail else "")
        if labels.get("device") and labels.get("instance"):
            end(port_of(labels)).alerts.append(shown)
        else:
            fleet_alerts.append(shown + (f" on {labels['instance']}"
                                         if labels.get("instance") else ""))
    links_seen: dict[frozenset[tuple[str, str]], Link] = {}
    if rules_loaded:
        for labels, _ in prom.query(f"link:nic_lldp_peer:info{{{sel}}}"):
            a, b = port_of(labels), port_of(labels, "peer_")
            end(a), end(b)
            first, second = sorted((a, b))
            links_seen.setdefault(frozenset((a, b)), Link(first, second))
    for name, families in RATES.items():
        names = "|".join(f.name for f in families)
        expr = (f"sum by (instance, device) (rate({{__name__=~\"{names}\",{sel}}}"
                f"[{window}]))")
        for labels, value in prom.query(expr):
            key = port_of(labels)
            if key in ports and math.isfinite(value):
                ports[key].rates[name] = value
    drift: list[Drift] = []
    if rules_loaded:
        norms = {(lb.get("role", ""), lb.get("property", "")): lb.get("value", "")
                 for lb, _ in prom.query("role:nic_fabric_property_value:majority")}
        counts = {(lb.get("role", ""), lb.get("property", ""), lb.get("value", "")): int(v)
                  for lb, v in prom.query("role:nic_fabric_property_value:ports")}
        totals = {(lb.get("role", ""), lb.get("property", "")): int(v)
                  for lb, v in prom.query("role:nic_fabric_property:ports")}
        for labels, _ in prom.query(
                f"max by (instance, device, role, property, value) "
                f"(device:nic_fabric_property:info{{{sel}}})"):
            group = (labels.get("role", ""), labels.get("property", ""))
            if group in norms and labels.get("value") != norms[group]:
                drift.append(Drift(*port_of(labels), *group, labels.get("value", ""),
                                   norms[group], totals.get(group, 0),
                                   counts.get((*group, norms[group]), 0)))
                end(port_of(labels))
    drift.sort(key=lambda d: (d.role, d.property, d.instance, d.device))
    links = sorted(links_seen.values(), key=lambda link: (link.a, link.b))
    for link in links:
        link.verdict = one_sided(ports[link.a], ports[link.b])
    down = sorted(labels.get("instance", "?") for labels, value in up if value == 0)
    problems = _problems(len(up), down, rules_loaded, ports, links, drift, fleet_alerts)
    return View(prom.base, time.time(), window, len(up), down, rules_loaded, ports, links,
                drift, fleet_alerts, problems)


def one_sided(a: End, b: End) -> str:
    """Receive errors at one end of a link only: the other end's transmitter, its optics or
    the fibre towards the receiving end."""
    def errors(e: End) -> float | None:
        got = [e.rates[k] for k in ("rx_crc_errors", "fec_uncorrectable") if k in e.rates]
        return sum(got) if got else None
    ea, eb = errors(a), errors(b)
    if ea is None or eb is None:
        return ""
    for rx, tx, n in ((a, b, ea), (b, a, eb)):
        if n > 0 and (eb if rx is a else ea) == 0:
            return (f"errors one-sided: {rx.instance}/{rx.device} receives {n:.3g}/s, "
                    f"{tx.instance}/{tx.device} none: {tx.instance}/{tx.device}'s transmitter, "
                    "its optics or the fibre towards "
                    f"{rx.instance}/{rx.device}")
    return ""


def _problems(targets: int, down: list[str], rules_loaded: bool,
              ports: dict[tuple[str, str], End], links: list[Link], drift: list[Drift],
              fleet_alerts: list[str]) -> list[str]:
    out = []
    if not targets:
        out.append("no nicwatch target in Prometheus (check --selector and its scrape "
                   "configuration)")
    out += [f"nicwatch target {instance} is down" for instance in down]
    if not rules_loaded:
        out.append("the nicwatch-fabric rules are not loaded: links are not joined and drift "
                   "is not found (`nicwatch deploy rules`)")
    for key in sorted(ports):
        e = ports[key]
        where = f"{e.instance}/{e.device}"
        out += [f"{where}: diagnosis {v}" for v in e.verdicts]
        out += [f"{where}: disagrees with its link peer on {m}" for m in e.mismatches]
        out += [f"{where}: alert {a} firing" for a in e.alerts]
        if e.lldp == "failed":
            out.append(f"{where}: LLDP receive failed")
    out += [f"link {'/'.join(link.a)} - {'/'.join(link.b)}: {link.verdict}" for link in links
            if link.verdict]
    out += [f"{d.instance}/{d.device}: {d.property} {d.value} where {d.norm_ports} of the "
            f"{d.ports} {d.role} ports have {d.norm}" for d in drift]
    out += [f"alert {a} firing" for a in fleet_alerts]
    return out


# --------------------------------------------------------------------------- output


def _rate(e: End, key: str) -> str:
    return f"{e.rates[key]:.3g}" if key in e.rates else "-"


def _neighbour(e: End) -> str:
    n = e.neighbour
    if not n:
        return "-"
    name = n.get("system_name") or n.get("chassis_id", "")
    return f"{name} {n.get('port_description') or n.get('port_id', '')}".strip()


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    rows = [[printable(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in [headers, *rows]]


def _port_rows(view: View) -> list[list[str]]:
    rows = []
    for key in sorted(view.ports):
        e = view.ports[key]
        lldp = RECEIVE_NOTES.get(e.lldp, e.lldp) or "-"
        notes = e.verdicts + [f"DCBX MISMATCH {m}" for m in e.mismatches] + e.alerts
        rows.append([e.instance, e.device, e.role or "-", lldp, _neighbour(e),
                     *(_rate(e, k) for k in RATES), "; ".join(notes) or "-"])
    return rows


PORT_HEADERS = ["HOST", "PORT", "ROLE", "LLDP", "NEIGHBOUR", *RATE_HEADERS.values(),
                "VERDICTS / ALERTS"]


def text(view: View) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(view.time))
    lines = [f"Fabric from {view.prometheus} at {when} (rates over {view.window}); "
             f"{view.targets} nicwatch target(s), {len(view.down)} down", ""]
    lines.append(f"LINKS ({len(view.links)}, both ends a nicwatch port)")
    if view.links:
        lines += _table(["HOST A", "PORT A", "HOST B", "PORT B", "A SEES", "B SEES", "VERDICT"],
                        [[*link.a, *link.b, _neighbour(view.ports[link.a]),
                          _neighbour(view.ports[link.b]), link.verdict or "-"]
                         for link in view.links])
    else:
        lines.append("none")
    lines += ["", f"PORTS ({len(view.ports)})"]
    lines += _table(PORT_HEADERS, _port_rows(view)) if view.ports else ["none"]
    lines += ["", f"DRIFT ({len(view.drift)} port settings off their role's norm)"]
    if view.drift:
        lines += _table(["HOST", "PORT", "ROLE", "SETTING", "VALUE", "ROLE'S NORM"],
                        [[d.instance, d.device, d.role, d.property, d.value,
                          f"{d.norm} ({d.norm_ports} of {d.ports} ports)"] for d in view.drift])
    else:
        lines.append("none")
    lines += ["", f"PROBLEMS ({len(view.problems)})"]
    lines += [f"- {printable(p)}" for p in view.problems] or ["none: healthy"]
    return "\n".join(lines) + "\n"


def as_json(view: View) -> dict[str, Any]:
    return {
        "prometheus": view.prometheus, "time": view.time, "window": view.window,
        "targets": view.targets, "down": view.down, "rules_loaded": view.rules_loaded,
        "links": [{"a": {"instance": link.a[0], "device": link.a[1]},
                   "b": {"instance": link.b[0], "device": link.b[1]},
                   "verdict": link.verdict} for link in view.links],
        "ports": [asdict(view.ports[k]) for k in sorted(view.ports)],
        "drift": [asdict(d) for d in view.drift],
        "fleet_alerts": view.fleet_alerts,
        "problems": view.problems, "healthy": not view.problems,
    }


def _html_table(headers: list[str], rows: list[list[str]], bad: set[int] | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        f"<tr{' class=bad' if bad and i in bad else ''}>"
        + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for i, row in enumerate(rows))
    return f"<table><tr>{head}</tr>{body}</table>"


def html_page(view: View) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(view.time))
    link_rows = [[*link.a, *link.b, _neighbour(view.ports[link.a]),
                  _neighbour(view.ports[link.b]), link.verdict or "-"] for link in view.links]
    port_rows = _port_rows(view)
    bad_ports = {i for i, row in enumerate(port_rows) if row[-1] != "-"}
    status = (f"{len(view.problems)} problem(s)" if view.problems else "healthy")
    parts = [
        "<!DOCTYPE html><html><head><meta charset=utf-8><title>nicwatch fabric</title>",
        "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;"
        "margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
        "tr.bad td{background:#fdd}.ok{color:#070}.bad{color:#a00}</style></head><body>",
        f"<h1>nicwatch fabric: <span class={'bad' if view.problems else 'ok'}>"
        f"{html.escape(status)}</span></h1>",
        f"<p>From {html.escape(view.prometheus)} at {when}, rates over "
        f"{html.escape(view.window)}; {view.targets} nicwatch target(s), "
        f"{len(view.down)} down.</p>",
        "<h2>Problems</h2>",
        ("<ul>" + "".join(f"<li>{html.escape(p)}</li>" for p in view.problems) + "</ul>"
         if view.problems else "<p>none</p>"),
        f"<h2>Links ({len(view.links)})</h2>",
        _html_table(["host A", "port A", "host B", "port B", "A sees", "B sees", "verdict"],
                    link_rows, {i for i, link in enumerate(view.links) if link.verdict}),
        f"<h2>Ports ({len(view.ports)})</h2>",
        _html_table(PORT_HEADERS, port_rows, bad_ports),
        f"<h2>Drift ({len(view.drift)})</h2>",
        _html_table(["host", "port", "role", "setting", "value", "role's norm"],
                    [[d.instance, d.device, d.role, d.property, d.value,
                      f"{d.norm} ({d.norm_ports} of {d.ports} ports)"] for d in view.drift],
                    set(range(len(view.drift)))),
        "</body></html>\n",
    ]
    return "\n".join(parts)


# ---------------------------------------------------------------------------- run


SELECTOR = re.compile(r'\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*')


def _selector(value: str) -> str:
    if not all(SELECTOR.fullmatch(m) for m in _split(value)):
        raise ConfigError(f"--selector: expected label matchers such as job=\"nicwatch\", "
                          f"got {printable(value)!r}")
    return value.strip()


def _split(value: str) -> list[str]:
    """Matchers split at the commas outside quotes."""
    out, cur, quoted, escaped = [], "", False, False
    for c in value:
        if c == "," and not quoted:
            out.append(cur)
            cur = ""
            continue
        cur += c
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
    return [*out, cur]


def run(args: argparse.Namespace) -> int:
    try:
        timeout = parse_duration(args.timeout)
    except ValueError:
        raise ConfigError(f"--timeout: expected a duration such as 60s, got "
                          f"{printable(args.timeout)!r}") from None
    prom = Prometheus.from_url(args.prometheus, timeout)
    selector = _selector(args.selector)
    try:
        parse_duration(args.window)
        if not re.fullmatch(r"[0-9]+(ms|s|m|h|d)", args.window):
            raise ValueError
    except ValueError:
        raise ConfigError(f"--window: expected a duration such as 5m, got "
                          f"{printable(args.window)!r}") from None
    try:
        view = build_view(prom, selector, args.window)
    except Unreadable as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return common.EXIT_FAILURE
    if args.html:
        from nicwatch.snapshot.atomicfile import AtomicWriteError, write_atomic
        try:
            write_atomic(args.html, html_page(view).encode())
        except AtomicWriteError as e:
            print(f"nicwatch: error: --html: {e}", file=sys.stderr)
            return common.EXIT_FAILURE
    if args.json:
        print(json.dumps(as_json(view), indent=1, allow_nan=False))
    else:
        sys.stdout.write(text(view))
    return common.EXIT_FAILURE if view.problems else common.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    p = common.Parser(prog="nicwatch")
    add_parser(p.add_subparsers(dest="command", required=True, parser_class=common.Parser))
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
