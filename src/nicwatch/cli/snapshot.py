"""`nicwatch snapshot | diff | record | history`: counter snapshots with provenance, their
differences, recorded runs and the daemon's flight recorder (docs/snapshots.md).

    $ nicwatch snapshot --label before
    nicwatch-vm-20261129T103925Z-before.json
    $ nicwatch diff before.json after.json
    A  before.json  "before"  2026-11-29 10:39:25Z
    B  after.json   "after"   2026-11-29 10:39:26Z  (1.079 s later, same boot e9ac289f-...)
    host vm, kernel 6.18.44-fc-v657, booted 2026-11-29 09:55:38Z

    nwa10f764 (veth, driver 1.0, no PCI address) over 1.080 s
      KIND     COUNTER                       DELTA  PER SECOND
      counter  nic_tx_bytes_total      2,084,042 B   15.4 Mb/s
      counter  nic_tx_packets_total  2,001 packets     1.85k/s
      netdev   tx_bytes                  2,084,042     1.93M/s
      netdev   tx_packets                    2,001     1.85k/s

    (36 rows that did not change are hidden; --all shows them)
    $ nicwatch record -o run1 --interval 1s -- iperf3 -c 198.18.40.2 -t 10

Usage errors and unreadable snapshot files print one line and exit with status 2; a
failure to write or to reach the daemon exits with status 1. `record` exits with the
wrapped command's status (127 when it is not found, 128+N when signal N ended it); when
the recording itself fails (a full disk), with 1 if the command succeeded; with --baseline,
with 1 when the command succeeded and a health rate is worse than the baseline's.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from nicwatch.cli import common
from nicwatch.cli.common import EXIT_FAILURE, EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_USAGE
from nicwatch.config import SOURCE_SWITCH_KEYS
from nicwatch.metrics import RX_BYTES, TX_BYTES
from nicwatch.model import Labels
from nicwatch.printable import printable
from nicwatch.snapshot import compare, report
from nicwatch.snapshot.atomicfile import make_dirs
from nicwatch.snapshot.files import (
    COMPRESS_ABOVE,
    OK,
    Change,
    Diff,
    DiffError,
    InterfaceDiff,
    Poll,
    Row,
    SeriesWriter,
    Snapshot,
    SnapshotError,
    SnapshotTooLarge,
    build,
    check_label,
    decode,
    diff,
    encode,
    gunzip,
    poll_of,
    read_bounded,
    wants_gzip,
    when,
    write_atomic,
)
from nicwatch.sources.host import HostInfo, read_host
from nicwatch.sources.sysfs_net import list_interfaces
from nicwatch.tracker import (
    COUNTER_DECREASE,
    INTERFACE_REPLACED,
    VF_COUNTER_DECREASE,
    TrackedSample,
    Tracker,
)
from nicwatch.values import ConfigError, show_seconds

DEFAULT_URL = "http://127.0.0.1:10847"
# record samples every second by default: the daemon's 5 s sampled a 10 s run twice
RECORD_INTERVAL = 1.0
COLLECT_SETTINGS = ("path.sysfs", "path.procfs", "interfaces.include", "interfaces.exclude",
                    "collector.ethtool_netlink", "collector.module", "collector.vfs",
                    "log.level", "log.format",
                    *SOURCE_SWITCH_KEYS)


NO_INTERFACES = "no interfaces selected (see --interfaces.include)"


class UsageError(Exception):
    """Bad input: one line on stderr, exit status 2."""


# --------------------------------------------------------------------------- parsers


def _label(text: str) -> str:
    try:
        return check_label(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _since(text: str) -> str:
    """--since checked before anything connects; sent to the daemon as given."""
    from nicwatch.consumers.history import parse_since
    try:
        parse_since(text, time.time())
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("since: ")) from None
    return text


def _margin(text: str) -> float:
    from nicwatch.cli.compare import parse_margin
    return parse_margin(text)


def add_parser(subparsers: common.Subparsers) -> None:
    snap = common.add_command(
        subparsers, "snapshot",
        description="Poll once and save raw driver statistics, canonical counters, rings, "
                    "link and PCIe state with host, boot and kernel provenance.")
    common.add_settings(snap, COLLECT_SETTINGS)
    snap.add_argument("-o", "--output", metavar="FILE", help="where to write (default: "
                      "nicwatch-HOST-TIME[-LABEL].json, .json.gz above 1 MiB; .gz compresses; "
                      "- writes to standard output)")
    snap.add_argument("--label", type=_label, help="free text stored in the snapshot")

    d = common.add_command(
        subparsers, "diff",
        description="Deltas and per-second rates from A to B, health counters first. "
                    "Refuses across a reboot; flags resets and changed statistic sets. With "
                    "one many-poll file (a history or series), its first and last polls.")
    d.add_argument("a", metavar="A", help="the earlier snapshot (a file, or a record or "
                   "incident directory: its first snapshot)")
    d.add_argument("b", metavar="B", nargs="?", help="the later snapshot (a record or "
                   "incident directory: its last); without B, A's first and last")
    d.add_argument("--json", action="store_true", help="print JSON")
    d.add_argument("--all", action="store_true", help="also rows that did not change")

    rec = common.add_command(
        subparsers, "record",
        description="Snapshot before, sample every --interval while CMD runs, snapshot "
                    "after; write both snapshots, the time series and a report (text, JSON, "
                    "HTML with charts) to DIR. Exits with CMD's status.",
        usage="nicwatch record -o DIR [options] -- CMD [ARGS...]")
    common.add_settings(rec, ("interval", *COLLECT_SETTINGS), helps={
        "interval": f"Sampling interval while CMD runs (default {show_seconds(RECORD_INTERVAL)}; "
                    "a configuration file's interval is the daemon's and is not used here).",
    })
    rec.add_argument("-o", "--output", metavar="DIR", required=True,
                     help="directory for the results (created; must be empty)")
    rec.add_argument("--label", type=_label, help="free text stored in the snapshots")
    rec.add_argument("--baseline", metavar="DIR",
                     help="compare the run with an earlier one (a record directory, incident "
                          "directory or snapshot file): compare.txt/.json/.html in DIR, and "
                          "exit 1 when CMD succeeded but a health rate is worse than the "
                          "baseline's by more than --baseline-margin")
    rec.add_argument("--baseline-margin", type=_margin, metavar="PERCENT", default=None,
                     help="with --baseline: how much above the baseline's a health rate "
                          "(drops, errors, discards, PAUSE/PFC) may be (default "
                          "10%%; with a baseline of zero, any counted event is worse)")
    rec.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD",
                     help="the command to run, after --")

    hist = common.add_command(
        subparsers, "history",
        description="Fetch the daemon's in-memory history (GET /api/v1/history) and save it "
                    "in the snapshot format.")
    hist.add_argument("--web.url", dest="web_url", default=DEFAULT_URL, metavar="URL",
                      help=f"the daemon (default {DEFAULT_URL}; user:password@ for basic "
                           "auth)")
    hist.add_argument("--since", metavar="WHEN", type=_since,
                      help="a duration ago (10m, 1h30m, 2d), epoch seconds "
                      "or an ISO 8601 time (default: everything held)")
    hist.add_argument("--no-raw", dest="raw", action="store_false",
                      help="leave out raw driver statistics")
    hist.add_argument("-o", "--output", metavar="FILE", help="where to write (default: "
                      "nicwatch-HOST-TIME-history.json[.gz]; - for standard output)")


# --------------------------------------------------------------------------- snapshot


def default_name(host: HostInfo, t: float, label: str | None, size: int) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))
    parts = ["nicwatch", host.hostname or "host", stamp]
    if label:
        parts.append(label)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))
    return stem + (".json.gz" if size > COMPRESS_ABOVE else ".json")


def _write(data: bytes | bytearray, output: str | None, host: HostInfo, t: float,
           label: str | None) -> None:
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = output or default_name(host, t, label, len(data))
    write_atomic(path, data, wants_gzip(path))
    print(path)


def _check_output(output: str | None) -> None:
    """An -o FILE whose directory is missing or not writable is a usage error, found before
    anything is polled or fetched."""
    if output in (None, "-"):
        return
    parent = Path(output).parent
    if not parent.is_dir():
        raise UsageError(f"-o {output}: no directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"-o {output}: directory {parent} is not writable")


def cmd_snapshot(args: argparse.Namespace) -> int:
    from nicwatch.daemon import build_collector
    _check_output(args.output)
    config, _ = common.load_config(args)
    host = read_host(config.path_procfs)
    collector = build_collector(config)
    try:
        result = collector.first_poll()
    finally:
        collector.close()
    snap = build(host, [poll_of(result.samples, time.time(), time.monotonic(),
                                rdma=result.rdma)], args.label)
    if not snap.polls[0].interfaces:
        print(f"nicwatch: warning: {NO_INTERFACES}", file=sys.stderr)
    _write(encode(snap), args.output, host, snap.polls[0].time, args.label)
    return 0


# --------------------------------------------------------------------------- diff


def _labels(labels: Labels) -> str:
    return "{" + ",".join(f"{k}={v}" for k, v in labels) + "}" if labels else ""


def _shown(d: Diff, show_all: bool) -> Iterator[tuple[InterfaceDiff, list[Row]]]:
    """Per interface, the rows worth showing: everything that changed or was flagged."""
    for idiff in d.interfaces:
        yield idiff, [r for r in idiff.rows if show_all or r.status != OK or r.delta]


def _changes_shown(idiff: InterfaceDiff, show_all: bool) -> tuple[list[Change], list[Change]]:
    """(shown, first read) of an interface's value changes: the values of a family none of
    whose series A held are first read in B (Change.first_read), listed only with --all."""
    if show_all:
        return list(idiff.changes), []
    return ([c for c in idiff.changes if not c.first_read],
            [c for c in idiff.changes if c.first_read])


def _delta_cell(row: Row) -> str:
    if row.status != OK:
        return str(row.status).upper().replace("_", " ")
    return report.amount(row.delta, row.unit)


def _rate_cell(row: Row) -> str:
    return report.rate(row.rate, row.unit)  # the convention of record and incident reports


def format_diff(d: Diff, name_a: str, name_b: str, show_all: bool = False) -> str:
    def head(tag: str, name: str, label: str | None, t: float) -> list[str]:
        return [tag, name, f'"{label}"' if label else "(no label)", when(t)]
    boot = f"same boot {d.host_b.boot_id}" if not d.warnings else "boot unknown"
    rows = [head("A", name_a, d.label_a, d.time_a),
            head("B", name_b, d.label_b, d.time_b) + [f"({d.seconds:.3f} s later, {boot})"]]
    rows[0].append("")
    lines = report.table(rows)
    host = d.host_b
    lines.append(f"host {host.hostname or 'unknown'}, kernel {host.kernel_release or 'unknown'}"
                 f", booted {when(host.boot_time)}")
    lines += [f"warning: {w}" for w in d.warnings]
    hidden = 0
    for idiff, rows_shown in _shown(d, show_all):
        hidden += len(idiff.rows) - len(rows_shown)
        lines += ["", (f"{idiff.device} ({report.describe(idiff.after)}) over "
                       f"{idiff.seconds:.3f} s")]
        if INTERFACE_REPLACED in idiff.flags:
            lines.append("  ! interface replaced (new ifindex or driver): counters restarted, "
                         "no deltas")
        for source, added, removed in idiff.stat_set_changes:
            lines.append(f"  ! {source} statistic set changed ({added} names added, {removed} "
                         "removed): counters summed from driver statistics have no delta")
        if COUNTER_DECREASE in idiff.flags:
            n = sum(r.status == COUNTER_DECREASE and not r.name.startswith("nic_vf_")
                    for r in idiff.rows)
            lines.append(f"  ! {n} counter(s) went backwards (reset): no delta for them")
        if VF_COUNTER_DECREASE in idiff.flags:
            vfs = sorted({dict(r.labels).get("vf", "?") for r in idiff.rows
                          if r.status == COUNTER_DECREASE and r.name.startswith("nic_vf_")},
                         key=lambda v: (len(v), v))
            lines.append(f"  ! SR-IOV VF(s) {', '.join(vfs)}: counters restarted (VF "
                         "re-created): no delta for them")
        changes, first = _changes_shown(idiff, show_all)
        for c in changes:
            lines.append(f"  changed: {c.name}{_labels(c.labels)} "
                         f"{'-' if c.before is None else c.before} -> "
                         f"{'-' if c.after is None else c.after}")
        if first:
            families = list(dict.fromkeys(c.name for c in first))
            lines.append(f"  first read in B (none in A): {len(first)} value(s) of "
                         f"{len(families)} famil{'y' if len(families) == 1 else 'ies'} ("
                         + ", ".join(families[:4]) + (", ..." if len(families) > 4 else "")
                         + "); --all lists them")
        if not rows_shown:
            lines.append("  no counter changed")
        else:
            table = [["KIND", "COUNTER", "DELTA", "PER SECOND"]] + [
                [r.kind, ("! " if r.health and (r.delta or r.status != OK) else "")
                 + r.name + _labels(r.labels), _delta_cell(r), _rate_cell(r)]
                for r in rows_shown]
            lines += ["  " + x for x in report.table(table, frozenset({2, 3}))]
    for names, side in ((d.only_a, "only in A"), (d.only_b, "only in B")):
        if names:
            lines += ["", f"interfaces {side}: {', '.join(names)}"]
    if hidden:
        lines += ["", f"({hidden} rows that did not change are hidden; --all shows them)"]
    return printable("\n".join(lines), keep="\n", backslash=False) + "\n"


def diff_json(d: Diff, show_all: bool = False) -> dict[str, Any]:
    def host(h: HostInfo) -> dict[str, Any]:
        return {f: getattr(h, f) for f in h.__slots__}
    return {
        "a": {"label": d.label_a, "time": d.time_a, "host": host(d.host_a)},
        "b": {"label": d.label_b, "time": d.time_b, "host": host(d.host_b)},
        "seconds": d.seconds, "warnings": list(d.warnings),
        "interfaces": [{
            "device": idiff.device, "seconds": idiff.seconds, "flags": list(idiff.flags),
            "identity_before": {f: getattr(idiff.before, f) for f in idiff.before.__slots__},
            "identity_after": {f: getattr(idiff.after, f) for f in idiff.after.__slots__},
            "stat_set_changes": [{"source": s, "added": a, "removed": r}
                                 for s, a, r in idiff.stat_set_changes],
            "changes": [{"name": c.name, "labels": dict(c.labels), "before": c.before,
                         "after": c.after, "first_read": c.first_read}
                        for c in _changes_shown(idiff, show_all)[0]],
            "first_read": sorted({c.name for c in _changes_shown(idiff, show_all)[1]}),
            "rows": [{"kind": r.kind, "name": r.name, "labels": dict(r.labels),
                      "unit": r.unit, "health": r.health, "before": r.before,
                      "after": r.after, "delta": r.delta, "rate": r.rate, "status": r.status}
                     for r in rows],
        } for idiff, rows in _shown(d, show_all)],
        "only_in_a": list(d.only_a), "only_in_b": list(d.only_b),
    }


def cmd_diff(args: argparse.Namespace) -> int:
    # A is read from its first poll, B to its last (diff's rule); a record or incident
    # directory is read as compare and diagnose read it: its first and last snapshots.
    a, a_last = _load_pair(args.a)
    b = _load_pair(args.b)[1] if args.b else a_last
    if args.b is None and a is a_last and len(a.polls) < 2:
        raise UsageError(f"{args.a}: holds one poll; give a second snapshot to diff against")
    try:
        d = diff(a, b)
    except DiffError as e:
        raise UsageError(f"{args.a} -> {args.b or args.a}: {e}") from None
    if args.json:
        try:  # strict JSON: a value that is not finite is refused, never printed as Infinity
            text = json.dumps(diff_json(d, args.all), indent=1, allow_nan=False)
        except ValueError:
            raise UsageError(f"{args.a} -> {args.b or args.a}: a delta or rate is not a "
                             "finite number") from None
        print(text)
    else:
        sys.stdout.write(format_diff(d, args.a, args.b or args.a, args.all))
    return 0


def _load_pair(path: str) -> tuple[Snapshot, Snapshot]:
    """The first and last snapshots of a snapshot file, a record directory or an incident
    directory (compare.load_snapshots)."""
    try:
        first, last, _ = compare.load_snapshots(path)
    except compare.CompareError as e:
        raise UsageError(str(e)) from None
    return first, last


# --------------------------------------------------------------------------- record


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


class Progress:
    """Elapsed time and live rates on one terminal line (only when stderr is a terminal)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty()

    def show(self, elapsed: float, tracked: Sequence[TrackedSample]) -> None:
        if not self.enabled:
            return
        parts = [f"recording {int(elapsed // 60)}:{elapsed % 60:04.1f}"]
        for ts in tracked:
            rates = report.family_rates(ts)

            def total(families: Sequence[str],
                      rates: dict[str, float | None] = rates) -> float:
                return sum(rates.get(f) or 0.0 for f in families)
            parts.append(f"{ts.sample.identity.device}"
                         f" rx {report.si(8 * total([RX_BYTES.name]), 'b/s')}"
                         f" tx {report.si(8 * total([TX_BYTES.name]), 'b/s')}"
                         f" pause {report.si(total(report.PAUSE_FAMILIES), '/s')}"
                         f" drops {report.si(total(report.DROP_FAMILIES), '/s')}")
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns - 1
        except OSError:
            width = 79
        self.stream.write("\r\x1b[K" + "  ".join(parts)[:width])
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _prepare_dir(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        raise UsageError(f"{path}: not empty; record writes into a new or empty directory")
    try:
        make_dirs(path)
    except OSError as e:
        raise UsageError(f"{path}: cannot create directory: {e.strerror}") from None


class _Child:
    """CMD and the signals nicwatch passes on to it. Like time(1), interrupts from the
    terminal (which reach CMD too) do not stop the recording. A SIGTERM or SIGHUP sent to
    nicwatch goes to CMD, also one that arrives before CMD started (it is delivered right
    after), so a stopped run still gets its after snapshot and report."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self._pending: list[int] = []
        for sig in (signal.SIGTERM, signal.SIGHUP):  # caught: CMD starts with the default
            signal.signal(sig, self._forward)

    def _forward(self, number: int, _frame: FrameType | None) -> None:
        (self.process.send_signal(number) if self.process else self._pending.append(number))

    def start(self, argv: list[str]) -> int | None:
        """Start CMD; an exit status when it cannot be started."""
        try:
            self.process = subprocess.Popen(argv)
        except FileNotFoundError:
            print(f"nicwatch: error: {argv[0]}: command not found", file=sys.stderr)
            return EXIT_NOT_FOUND
        except PermissionError:
            print(f"nicwatch: error: {argv[0]}: permission denied", file=sys.stderr)
            return EXIT_NOT_EXECUTABLE
        for sig in (signal.SIGINT, signal.SIGQUIT):  # ignored only now: CMD must not inherit
            signal.signal(sig, signal.SIG_IGN)
        for number in self._pending:
            self.process.send_signal(number)
        return None


def cmd_record(args: argparse.Namespace) -> int:
    from nicwatch.daemon import build_collector
    argv = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not argv:
        raise UsageError("record: no command given; usage: nicwatch record -o DIR -- CMD "
                         "[ARGS...]")
    config, flags = common.load_config(args)
    if "interval" not in flags:
        config = replace(config, interval=RECORD_INTERVAL)
    out = Path(args.output)
    baseline = _baseline(args)
    if shutil.which(argv[0]) is None:
        print(f"nicwatch: error: {argv[0]}: command not found", file=sys.stderr)
        return EXIT_NOT_FOUND
    _prepare_dir(out)
    child = _Child()
    host = read_host(config.path_procfs)
    meta = {"record": {"command": argv, "interval": config.interval}}
    label = f"{args.label} " if args.label else ""
    collector = build_collector(config)
    tracker, timeline = Tracker(), report.Timeline(config.interval)  # merges a short last sample
    progress = Progress(sys.stderr)

    def sample(raw: bool) -> tuple[Poll, list[TrackedSample]]:
        result = collector.poll()
        samples = list(result.samples)
        t, m = time.time(), time.monotonic()
        tracked = tracker.update(samples)
        timeline.add(m, tracked, tracker.update_rdma(result.rdma))
        return poll_of(samples, t, m, raw, rdma=result.rdma), tracked

    series = None
    try:
        first, _ = sample(True)
        before = build(host, [first], label + "before", True, meta)
        before_name = _save_default(before, out, "before")
        series = SeriesWriter(out / "series.json.gz",
                              build(host, [], label + "series", False, meta))
        series.add(_without_raw(first))
        failed = child.start(argv)
        process = child.process
        if failed is not None or process is None:
            series.abort()
            return EXIT_FAILURE if failed is None else failed
        start = time.monotonic()
        next_slot = start + config.interval
        while True:
            try:
                process.wait(timeout=max(0.0, next_slot - time.monotonic()))
                break
            except subprocess.TimeoutExpired:
                pass
            poll, tracked = sample(False)
            series.add(poll)
            progress.show(time.monotonic() - start, tracked)
            next_slot += config.interval
            now = time.monotonic()
            if now > next_slot:  # a slow poll skips slots instead of piling up
                next_slot += (int((now - next_slot) // config.interval) + 1) * config.interval
        progress.clear()
        status = _exit_status(process.returncode)
        last, _ = sample(True)
        series.add(_without_raw(last))
        series.close()
        after = build(host, [last], label + "after", True,
                      {**meta, "record": {**meta["record"], "exit_status": status}})
        after_name = _save_default(after, out, "after")
        files = [before_name, after_name, "series.json.gz", "report.txt", "report.json",
                 "report.html"]
        if baseline is not None:
            files += ["compare.txt", "compare.json", "compare.html"]
        run = report.Run(tuple(argv), status, config.interval)
        rep = report.make_report(before, after, run, diff(before, after), timeline, files,
                                 context=_not_recorded(config.path_sysfs, first))
        text = report.text_report(rep)
        write_atomic(out / "report.txt", text.encode())
        write_atomic(out / "report.json", json.dumps(report.json_report(rep), indent=1).encode())
        write_atomic(out / "report.html", report.html_report(rep).encode())
        if baseline is not None:
            against, worse = _against_baseline(baseline, before, after, out,
                                               args.baseline_margin)
            text += against
            if status == 0 and worse:  # CMD's own failure comes first
                status = EXIT_FAILURE
    except SnapshotError as e:
        progress.clear()
        print(f"nicwatch: error: {e}", file=sys.stderr)
        if child.process is None:
            return EXIT_FAILURE
        if child.process.poll() is None:
            print("nicwatch: recording stopped; waiting for the command to finish",
                  file=sys.stderr)
        return _exit_status(child.process.wait()) or EXIT_FAILURE
    finally:
        collector.close()
        if series is not None:
            series.abort()  # no-op once committed; else no temporary file stays behind
    sys.stderr.write(text)
    return status


def _baseline(args: argparse.Namespace) -> compare.Side | None:
    """--baseline read before anything runs: a baseline that cannot be read is a usage
    error (exit 2), found before CMD starts."""
    if args.baseline is None:
        if args.baseline_margin is not None:
            raise UsageError("--baseline-margin: only with --baseline DIR")
        return None
    try:
        return compare.load_side(args.baseline)
    except compare.CompareError as e:
        raise UsageError(f"--baseline: {e}") from None


def _against_baseline(baseline: compare.Side, before: Snapshot, after: Snapshot, out: Path,
                      margin: float | None) -> tuple[str, bool]:
    """compare.txt/.json/.html of this run against the baseline; the text, headed, and
    whether a health rate is worse than the baseline's by more than the margin."""
    margin = compare.DEFAULT_MARGIN if margin is None else margin
    c = compare.compare(baseline, compare.side(before, after, str(out), "record"))
    text = compare.text(c, margin=margin)
    write_atomic(out / "compare.txt", text.encode())
    write_atomic(out / "compare.json",
                 json.dumps(compare.as_json(c, margin=margin), indent=1).encode())
    write_atomic(out / "compare.html", compare.html_page(c, margin).encode())
    return f"\nagainst the baseline {baseline.path}:\n" + text, bool(compare.worse(c, margin))


def _not_recorded(sysfs: str, poll: Poll) -> tuple[tuple[str, str], ...]:
    """The report's line naming this host's interfaces the selection left out (lo and veth
    by default: loopback traffic is not in the report), so that a missing interface reads
    as a choice, not as an interface that stayed idle."""
    try:
        present = list_interfaces(sysfs)  # the sources' one listing of class/net
    except OSError:
        return ()
    recorded = {i.device for i in poll.interfaces}
    left = [n for n in present if n not in recorded]
    if not left:
        return ()
    how = ("left out by the interface selection: by default only interfaces backed by a "
           "device; --interfaces.include selects by name")
    shown = ", ".join(left[:20]) + (f" and {len(left) - 20} more" if len(left) > 20 else "")
    return (("not recorded", f"{shown} ({how})"),)


def _without_raw(poll: Poll) -> Poll:
    return replace(poll, interfaces=tuple(replace(i, raw={}) for i in poll.interfaces))


def _save_default(snap: Snapshot, directory: Path, stem: str) -> str:
    data = encode(snap)
    name = f"{stem}.json.gz" if len(data) > COMPRESS_ABOVE else f"{stem}.json"
    write_atomic(directory / name, data, wants_gzip(name))
    return name


# --------------------------------------------------------------------------- history


def _request(url: str) -> urllib.request.Request:
    """A GET request; credentials in the URL (user:password@) become basic auth."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Accept": "application/json", "Accept-Encoding": "gzip"}
    if parts.username is not None:
        user, password = (urllib.parse.unquote(x or "") for x in (parts.username, parts.password))
        token = f"{user}:{password}"
        headers["Authorization"] = "Basic " + base64.b64encode(token.encode()).decode()
        url = _redacted(url)
    return urllib.request.Request(url, headers=headers)


def _redacted(url: str) -> str:
    """``url`` without credentials, for messages."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def fetch_history(base_url: str, since: str | None, raw: bool, timeout: float = 60.0) -> bytes:
    query = {k: v for k, v in (("since", since), ("raw", "true" if raw else "false")) if v}
    url = base_url.rstrip("/") + "/api/v1/history?" + urllib.parse.urlencode(query)
    shown = _redacted(base_url)
    try:
        with urllib.request.urlopen(_request(url), timeout=timeout) as response:
            return read_bounded(response, f"{shown} history")
    except urllib.error.HTTPError as e:
        raise SnapshotError(f"{shown}: HTTP {e.code}: {common.http_error_detail(e)}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise SnapshotError(f"{shown}: cannot reach the daemon: {reason} (is `nicwatch serve` "
                            "running there?)") from None


def cmd_history(args: argparse.Namespace) -> int:
    if not re.match(r"https?://", args.web_url):
        raise UsageError(f"--web.url: expected http://HOST:PORT or https://HOST:PORT, got "
                         f"{args.web_url!r}")
    _check_output(args.output)
    try:
        data = gunzip(fetch_history(args.web_url, args.since, args.raw),
                      f"{args.web_url} history")
    except SnapshotTooLarge as e:  # a limit, as documented: exit 2 (narrow it with --since)
        raise UsageError(f"{e}; narrow it with --since") from None
    snap = decode(data, f"{args.web_url} history")
    _write(data, args.output, snap.host, snap.polls[-1].time, "history")
    span = snap.polls[-1].time - snap.polls[0].time
    print(f"nicwatch: {len(snap.polls)} polls over {span:.0f} s "
          f"({when(snap.polls[0].time)} to {when(snap.polls[-1].time)})", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- entry points

COMMANDS = {"snapshot": cmd_snapshot, "diff": cmd_diff, "record": cmd_record,
            "history": cmd_history}


def run(args: argparse.Namespace) -> int:
    try:
        return COMMANDS[args.command](args)
    except (UsageError, ConfigError) as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SnapshotError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    p = common.Parser(prog="nicwatch")
    add_parser(p.add_subparsers(dest="command", required=True, parser_class=common.Parser))
    try:
        return run(p.parse_args(argv))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
