"""`nicwatch module decode`: decode a saved module EEPROM dump into nic_module_* values.

Reads FILE (or standard input): the text of `ethtool -m DEV hex on` (flat, or per-page blocks
under their `ethtool -m DEV page N hex on` lines), `hexdump -C` or `xxd` of the bytes, SONiC
`sfputil show eeprom-hexdump`, or the raw bytes `ethtool -m DEV raw on` writes. It places the
bytes in the module's memory map (SFF-8472 SFP, SFF-8636 QSFP+/QSFP28, CMIS QSFP-DD/OSFP/...)
exactly as the daemon's decoder sees a module read by the kernel, and prints every value as
JSON ({metric, labels, value}, base units) or, with --table, a summary (module, state, flags
set, the weakest lane against its threshold) and per-lane and threshold tables in mW, dBm
and mA. A dump of only some pages decodes what those pages hold; values outside physical
bounds are named on standard error, not shown. Exit status: 0 decoded; 1 a
dump, but corrupt (a checksum fails: named on standard error, nothing from that page is
decoded) or nothing decodable in it (no lower page, or a module type nicwatch does not
decode); 2 not a dump, a bad page number, input over 4 MiB, or an unreadable file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from nicwatch.cli import common
from nicwatch.metrics import (
    MODULE_DATA_PATH_STATE,
    MODULE_FLAG,
    MODULE_INFO,
    MODULE_RX_POWER_THRESHOLD_WATTS,
    MODULE_RX_POWER_WATTS,
    MODULE_STATE,
    MODULE_SUPPLY_VOLTAGE_THRESHOLD_VOLTS,
    MODULE_TEMPERATURE_CELSIUS,
    MODULE_TEMPERATURE_THRESHOLD_CELSIUS,
    MODULE_TX_BIAS_AMPERES,
    MODULE_TX_BIAS_THRESHOLD_AMPERES,
    MODULE_TX_POWER_THRESHOLD_WATTS,
    MODULE_TX_POWER_WATTS,
    MODULE_VALUE_IMPLAUSIBLE,
    VDM_ESNR,
    VDM_PRE_FEC_BER,
)
from nicwatch.normalize.module import Checksum, ModuleValue, checksums, decode, identify
from nicwatch.normalize.module.common import identifier_name
from nicwatch.normalize.module.hexdump import Dump, DumpError, binary, parse, parse_raw

PROG = "nicwatch module decode"
# A dump is a few KiB per page: every page of a 4-bank CMIS module as sfputil text is about
# 700 KiB. Reading stops past this, so a wrong file costs no more memory than it.
MAX_INPUT = 4 << 20


def configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="a module EEPROM dump (default: standard input): `ethtool -m DEV hex "
                   "on` text (put each `ethtool -m DEV page N hex on` block under its command "
                   "line or a `# page N` line), `hexdump -C` or `xxd` of the bytes, SONiC "
                   "`sfputil show eeprom-hexdump`, or the bytes of `ethtool -m DEV raw on`")
    p.add_argument("--table", action="store_true",
                   help="print a summary and per-lane tables for people instead of JSON")
    p.add_argument("--all", action="store_true",
                   help="with --table, every value as its own row (flags that are clear too)")
    p.add_argument("--raw", action="store_true",
                   help="FILE is raw bytes (`ethtool -m DEV raw on`) even if it looks like text")
    return p


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    module = subparsers.add_parser(
        "module", help="pluggable transceiver modules (decode saved `ethtool -m` dumps)",
        description="Pluggable transceiver modules (SFP, QSFP, QSFP-DD, OSFP).")
    actions = module.add_subparsers(dest="action", required=True, parser_class=common.Parser)
    first = (__doc__ or "").splitlines()[0]
    return configure(actions.add_parser("decode", help=first.split(": ", 1)[1],
                                        description=first))


def _error(message: str, status: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def _read(stream: BinaryIO) -> bytes | None:
    """At most MAX_INPUT bytes; None when there are more."""
    data = stream.read(MAX_INPUT + 1)
    return None if len(data) > MAX_INPUT else data


def read_input(path: str) -> bytes | None:
    if path == "-":
        return _read(sys.stdin.buffer)
    with open(path, "rb") as f:
        return _read(f)


def rows(values: Sequence[ModuleValue]) -> list[dict[str, Any]]:
    return [{"metric": v.metric, "labels": v.labels, "value": v.value} for v in values]


# --- --table -------------------------------------------------------------------------------


def _dbm(watts: float) -> str:
    return f"{10 * math.log10(watts * 1000):.2f} dBm" if watts > 0 else "-inf dBm"


def _human(metric: str, value: float) -> str:
    if metric.endswith("_watts"):
        return f"{value * 1000:.4f} mW ({_dbm(value)})"
    if metric.endswith("_amperes"):
        return f"{value * 1000:.3f} mA"
    if metric.endswith("_celsius"):
        return f"{value:.2f} C"
    if metric.endswith("_volts"):
        return f"{value:.4f} V"
    if metric == MODULE_FLAG.name:
        return "set" if value else "clear"
    return ""


def _aligned(cells: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in cells]


def format_rows(data: Sequence[Mapping[str, Any]]) -> str:
    """Every value as a row (--table --all)."""
    cells = [("METRIC", "LABELS", "VALUE", "")] + [
        (r["metric"], ",".join(f"{k}={v}" for k, v in r["labels"].items()), f"{r['value']:g}",
         _human(r["metric"], r["value"])) for r in data]
    return "\n".join(_aligned(cells))


class _Values:
    """The decoded values looked up by family and labels."""

    def __init__(self, values: Sequence[ModuleValue]) -> None:
        self.values = values

    def get(self, metric: str, **labels: str) -> float | None:
        return next((v.value for v in self.values if v.metric == metric
                     and all(v.labels.get(k) == x for k, x in labels.items())), None)

    def each(self, metric: str) -> list[ModuleValue]:
        return [v for v in self.values if v.metric == metric]


QUANTITIES = (("temperature", MODULE_TEMPERATURE_THRESHOLD_CELSIUS.name),
              ("supply_voltage", MODULE_SUPPLY_VOLTAGE_THRESHOLD_VOLTS.name),
              ("tx_bias", MODULE_TX_BIAS_THRESHOLD_AMPERES.name),
              ("tx_power", MODULE_TX_POWER_THRESHOLD_WATTS.name),
              ("rx_power", MODULE_RX_POWER_THRESHOLD_WATTS.name))


def _weakest(v: _Values) -> str:
    """The lane whose rx power is nearest its low-warning threshold (or the lowest rx power
    when the module gives no threshold)."""
    lanes = v.each(MODULE_RX_POWER_WATTS.name)
    if not lanes:
        return ("no rx power (none in the pages read: a copper cable, page 01h not dumped, or "
                "no lane carries data)")
    low = v.get(MODULE_RX_POWER_THRESHOLD_WATTS.name, level="low_warning")
    kind = lanes[0].labels.get("type", "")

    def margin(x: ModuleValue) -> float:
        if x.value <= 0:
            return -math.inf
        return 10 * math.log10(x.value / low) if low else x.value

    worst = min(lanes, key=margin)
    text = f"rx lane {worst.labels['lane']}: {_human(worst.metric, worst.value)}, {kind}"
    if low:
        gap = margin(worst)
        where = "below" if gap < 0 else "above"
        text += (f"; {abs(gap):.1f} dB {where} its low warning {_human(worst.metric, low)}"
                 if math.isfinite(gap) else f"; dark, low warning {_human(worst.metric, low)}")
    return text


def summary(values: Sequence[ModuleValue], sums: Sequence[Checksum]) -> list[str]:
    """The lines that open --table: module, state, flags set, the weakest lane."""
    v = _Values(values)
    info = next((x.labels for x in values if x.metric == MODULE_INFO.name), None)
    if info:
        module = " ".join(x for x in (info["identifier"], info["vendor"], info["part"]) if x)
        extra = [f"serial {info['serial']}" if info["serial"] else "",
                 f"rev {info['revision']}" if info["revision"] else "",
                 f"firmware {info['firmware']}" if info["firmware"] else "", info["spec"]]
        module += "".join(f", {x}" for x in extra if x)
    else:
        module = "unknown (its identity page is corrupt or was not read)"
    bad = [c for c in sums if not c.valid]
    state = "corrupt: " + ", ".join(c.name for c in bad) + " fail" if bad else "ok"
    if sums and not bad:
        state += " (checksums " + ", ".join(c.name for c in sums) + " valid)"
    module_state = next((x.labels["state"] for x in v.each(MODULE_STATE.name) if x.value), None)
    if module_state:
        state += f"; module state {module_state}"
    paths: dict[str, list[str]] = {}
    for x in v.each(MODULE_DATA_PATH_STATE.name):
        paths.setdefault(x.labels["state"], []).append(x.labels["lane"])
    if paths and set(paths) != {"activated"}:
        state += "; data path " + ", ".join(f"{s} (lane {','.join(lanes)})"
                                             for s, lanes in paths.items())
    flags = [f"{x.labels['quantity']} {x.labels['level']}" +
             (f" lane {x.labels['lane']}" if x.labels["lane"] else "")
             for x in v.each(MODULE_FLAG.name) if x.value]
    implausible = [x.labels["quantity"] + (f" {x.labels['level']} threshold"
                                            if x.labels["level"] else "")
                   + (f" lane {x.labels['lane']}" if x.labels["lane"] else "")
                   for x in v.each(MODULE_VALUE_IMPLAUSIBLE.name)]
    temperature = v.get(MODULE_TEMPERATURE_CELSIUS.name)
    warn = v.get(MODULE_TEMPERATURE_THRESHOLD_CELSIUS.name, level="high_warning")
    lines = [("module", module), ("state", state),
             ("flags set", ", ".join(flags) or "none"), ("weakest", _weakest(v))]
    if temperature is not None:
        lines.append(("temperature", f"{temperature:.2f} C" +
                      (f" (high warning {warn:.2f} C)" if warn else "")))
    if implausible:
        lines.append(("implausible", ", ".join(implausible) + " (outside what the map can "
                      "express: not shown)"))
    width = max(len(k) for k, _ in lines)
    return [f"{k.ljust(width)}  {text}" for k, text in lines]


def lane_table(values: Sequence[ModuleValue]) -> list[str]:
    v = _Values(values)
    per_lane: dict[str, dict[str, str]] = {}
    for x in values:
        lane = x.labels.get("lane", "")
        if not lane:
            continue
        row = per_lane.setdefault(lane, {})
        if x.metric in (MODULE_RX_POWER_WATTS.name, MODULE_TX_POWER_WATTS.name,
                        MODULE_TX_BIAS_AMPERES.name):
            row[x.metric] = _human(x.metric, x.value)
        elif x.metric == MODULE_DATA_PATH_STATE.name:
            row["path"] = x.labels["state"]
        elif x.labels.get("side") == "media" and x.labels.get("stat", "current") == "current":
            if x.metric == VDM_PRE_FEC_BER.name:  # CMIS VDM, the module's own
                row["ber"] = f"{x.value:.1e}"
            elif x.metric == VDM_ESNR.name:
                row["esnr"] = f"{x.value:.2f} dB"
    vdm = [c for c in ("ber", "esnr") if any(c in row for row in per_lane.values())]
    rows_ = [[lane, row.get("path", "-"), *(row.get(metric, "-") for metric in (
        MODULE_RX_POWER_WATTS.name, MODULE_TX_POWER_WATTS.name, MODULE_TX_BIAS_AMPERES.name)),
              *(row.get(c, "-") for c in vdm)]
             for lane, row in sorted(per_lane.items(), key=lambda item: int(item[0]))]
    if not rows_:
        return []
    kind = next((x.labels.get("type", "") for x in v.each(MODULE_RX_POWER_WATTS.name)), "")
    titles = {"ber": "PRE-FEC BER (VDM, MEDIA)", "esnr": "ESNR (VDM, MEDIA)"}
    return _aligned([["LANE", "DATA PATH", f"RX POWER ({kind})" if kind else "RX POWER",
                      "TX POWER", "TX BIAS", *(titles[c] for c in vdm)], *rows_])


def threshold_table(values: Sequence[ModuleValue]) -> list[str]:
    v = _Values(values)
    order = ("high_alarm", "high_warning", "low_warning", "low_alarm")
    cells = []
    for quantity, metric in QUANTITIES:
        limits = [v.get(metric, level=level) for level in order]
        if any(x is not None for x in limits):
            cells.append([quantity, *("-" if x is None else _human(metric, x) for x in limits)])
    if not cells:
        return []
    return _aligned([["THRESHOLD", "HIGH ALARM", "HIGH WARNING", "LOW WARNING", "LOW ALARM"],
                     *cells])


def format_table(values: Sequence[ModuleValue], sums: Sequence[Checksum]) -> str:
    parts = [summary(values, sums), lane_table(values), threshold_table(values)]
    return "\n\n".join("\n".join(p) for p in parts if p)


# --- the command ---------------------------------------------------------------------------


def _parse(args: argparse.Namespace, data: bytes) -> Dump:
    if args.raw or binary(data):
        return parse_raw(data)
    return parse(data.decode("utf-8", errors="replace"))


def run(args: argparse.Namespace) -> int:
    try:
        data = read_input(args.file)
    except OSError as e:
        return _error(f"cannot read {args.file}: {e.strerror or e}", common.EXIT_USAGE)
    if data is None:
        return _error(f"{args.file}: more than {MAX_INPUT >> 20} MiB; a module EEPROM dump is "
                      "at most a few KiB per page", common.EXIT_USAGE)
    try:
        dump = _parse(args, data)
    except DumpError as e:
        return _error(f"{args.file}: {e}", common.EXIT_USAGE)
    for problem in dump.problems:
        print(f"{PROG}: warning: {problem}", file=sys.stderr)
    lower = dump.eeprom.lower.get(0x50)
    if not lower:
        return _error(f"{args.file}: no lower page of i2c address 0x50 (bytes 0x00-0x7f), "
                      "whose identifier byte says how to read the rest", common.EXIT_FAILURE)
    if identify(dump.eeprom) is None:
        return _error(f"{args.file}: module identifier 0x{lower[0]:02x} "
                      f"({identifier_name(lower[0])}) is not one nicwatch decodes (SFF-8472, "
                      "SFF-8636/8436 or CMIS)", common.EXIT_FAILURE)
    values = decode(dump.eeprom)
    sums = checksums(dump.eeprom)
    if args.table:
        print(format_rows(rows(values)) if args.all else format_table(values, sums))
    else:
        json.dump(rows(values), sys.stdout, indent=1)
        print()
    implausible = [v.labels for v in values if v.metric == MODULE_VALUE_IMPLAUSIBLE.name]
    if implausible:
        print(f"{PROG}: warning: values outside what the map can express are not shown: "
              + ", ".join(x["quantity"] + (f" {x['level']} threshold" if x["level"] else "")
                          for x in implausible[:12]) + (" ..." if len(implausible) > 12 else "")
              + " (the module's external calibration constants give them)", file=sys.stderr)
    bad = [c for c in sums if not c.valid]
    if bad:
        return _error(f"{args.file}: module EEPROM corrupt: " + "; ".join(
            f"{c.where} is 0x{c.stored:02x}, the bytes sum to 0x{c.computed:02x}" for c in bad)
            + "; nothing from a failing page is decoded", common.EXIT_FAILURE)
    return common.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(configure(common.Parser(prog=PROG)).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
