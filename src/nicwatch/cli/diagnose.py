"""`nicwatch diagnose`: which diagnosis signatures hold, with their evidence (docs/diagnosis.md).

    nicwatch diagnose                        poll this host for --window seconds (default 30)
    nicwatch diagnose before.json after.json two snapshots
    nicwatch diagnose RECORD_DIR             a `nicwatch record` directory (its series)
    nicwatch diagnose INCIDENT_DIR           an incident directory (its history window)
    nicwatch diagnose history.json.gz        the daemon's history (`nicwatch history`)
    nicwatch diagnose --ethtool A.txt B.txt --driver mlx5_core --interval 10
    nicwatch diagnose A.txt B.txt --driver mlx5_core --interval 10
                                             two pasted `ethtool -S` outputs of one interface
    nicwatch diagnose --driver mlx5_core A.txt
                                             one: lifetime totals and ratios, no rate

Verdicts first, the evidence under each, then the signatures that could not be evaluated
and why; --json for the same as JSON. Exit status 0 when no signature holds (and for one
pasted reading, which claims none), 1 when some hold, 2 for usage errors and for input that
cannot be trusted (two outputs that are not one interface N seconds apart).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from nicwatch.cli import common
from nicwatch.snapshot.atomicfile import open_input

if TYPE_CHECKING:
    from nicwatch.consumers.diagnosis.engine import Verdict, Window
    from nicwatch.consumers.diagnosis.windows import Lifetime
    from nicwatch.model import CounterValue, SeriesKey
    from nicwatch.pasted import ethtool_text

SETTINGS = ("path.sysfs", "path.procfs", "interfaces.include", "interfaces.exclude",
            "log.level", "log.format")
MAX_WINDOW = 3600.0
MAX_INTERVAL = 86400.0 * 365
MAX_PASTE = 4 << 20  # bytes of one pasted `ethtool -S`


class UsageError(Exception):
    """One line on stderr, exit status 2."""


def _seconds(text: str) -> float:
    from nicwatch.values import ConfigError
    from nicwatch.values.units import parse_duration
    try:
        value = parse_duration(text)
    except (ConfigError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return float(value)


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    p = common.add_command(subparsers, "diagnose", description=__doc__.splitlines()[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="saved evidence: two snapshots, or one record directory, incident "
                        "directory or history file; with --driver, one or two pasted "
                        "`ethtool -S` text files; none: poll this host")
    p.add_argument("--window", type=_seconds, default=None, metavar="DURATION",
                   help="live: seconds to poll (default 30s); saved evidence: the last this "
                        "much of it (default: all)")
    p.add_argument("--ethtool", nargs="+", metavar="FILE",
                   help="two pasted `ethtool -S` outputs of one interface (- for standard "
                        "input once); needs --driver and --interval. One output alone: its "
                        "lifetime totals and ratios (no rate). Text files given as PATHs "
                        "with --driver are read the same way")
    p.add_argument("--driver", help="the driver of the pasted outputs (mlx5_core, ice, ...)")
    p.add_argument("--interval", dest="paste_interval", type=_seconds, metavar="DURATION",
                   help="time between the two pasted outputs (10s, 1m); live: between polls "
                        "(default: the configured interval, at most a sixth of the window)")
    p.add_argument("--rdma", nargs=2, metavar=("BEFORE", "AFTER"),
                   help="with --ethtool: `rdma statistic show` (or rdma -j) outputs taken "
                        "with the two `ethtool -S` ones: the RDMA hardware counters of the "
                        "interface's ports, read as live polling reads them")
    p.add_argument("--device", default="pasted", help="name for the pasted interface")
    p.add_argument("--speed", help="link speed of the pasted interface (100G, 400G), for "
                   "the pre-FEC bit error ratio and rates against line rate")
    p.add_argument("--lanes", type=int, choices=(1, 2, 4, 8), help="serdes lanes of the "
                   "pasted interface's link (ethtool shows Lanes:), with --speed and --fec for "
                   "each lane's pre-FEC bit error ratio")
    p.add_argument("--fec", choices=("rs", "baser", "llrs", "off"), help="the FEC mode in "
                   "use on the pasted interface (ethtool --show-fec: Active FEC encoding)")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    common.add_settings(p, SETTINGS)
    return p


def _paste(path: str) -> str:
    try:
        if path == "-":
            text = sys.stdin.read(MAX_PASTE + 1)
        else:
            with open_input(path) as f:
                text = f.read(MAX_PASTE + 1).decode("utf-8", "replace")
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror or e}") from None
    if len(text) > MAX_PASTE:
        raise UsageError(f"{path}: more than {MAX_PASTE >> 20} MiB; not an `ethtool -S` output")
    return text


def looks_like_text(path: str) -> bool:
    """Whether ``path`` is a pasted text (`ethtool -S`), not a snapshot (JSON, gzip)."""
    try:
        with open_input(path) as f:  # a FIFO is refused, not waited on
            head = f.read(4096)
    except OSError:
        return False  # the snapshot loader names the error
    if head.startswith(b"\x1f\x8b"):
        return False
    return not head.lstrip().startswith((b"{", b"["))


def _driver(args: argparse.Namespace) -> str:
    from nicwatch.normalize.drivers import TABLES
    if not args.driver:
        raise UsageError("--ethtool needs --driver (one of: " + ", ".join(sorted(TABLES)) + ")")
    if args.driver not in TABLES:
        raise UsageError(f"--driver {args.driver}: no table for it (known: "
                         + ", ".join(sorted(TABLES)) + ")")
    return str(args.driver)


def _read_stats(path: str, rdma: list[dict[str, dict[str, int]]] | None = None
                ) -> ethtool_text.EthtoolStats:
    """The `ethtool -S` statistics of a paste; ``rdma``: appended with the ports of any
    `rdma statistic show` lines pasted with them."""
    from nicwatch.pasted import ethtool_text
    text = _paste(path)
    stats = ethtool_text.parse(text)
    if (too_big := stats.oversized_message(path)) is not None:
        raise UsageError(too_big)
    if not stats.names:
        raise UsageError(f"{path}: no `ethtool -S` statistics in it")
    if rdma is not None:
        rdma.append(_rdma_lines(text, path))
    return stats


def _bus_info(text: str | None) -> str | None:
    """A PCI address from pasted `ethtool -i` bus-info (0000:04:00.0), else None."""
    import re
    if text and re.fullmatch(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]", text):
        return text.lower()
    return None


def _rdma_lines(text: str, path: str) -> dict[str, dict[str, int]]:
    """`rdma statistic show` lines pasted together with an `ethtool -S` output."""
    from nicwatch.pasted import rdma_text
    lines = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("link "))
    if not lines:
        return {}
    stats = rdma_text.parse(lines)
    if (too_big := stats.oversized_message(path)) is not None:
        raise UsageError(too_big)
    return {k: v for k, v in stats.ports.items() if v}


def _rdma(args: argparse.Namespace, pasted: Sequence[dict[str, dict[str, int]]]
          ) -> tuple[dict[SeriesKey, CounterValue], dict[SeriesKey, CounterValue]]:
    """The RDMA series of the two `rdma statistic show` outputs of --rdma, else of the
    `link DEV/PORT ...` lines pasted with the `ethtool -S` outputs (none: no RDMA)."""
    from nicwatch.consumers.diagnosis.windows import rdma_refusal, rdma_series
    from nicwatch.pasted import rdma_text
    if args.rdma:
        paths = list(args.rdma)
        if ("-" in args.ethtool and "-" in args.rdma) or args.rdma == ["-", "-"]:
            raise UsageError("--rdma: standard input can be only one of the outputs")
        sides = []
        for path in paths:
            stats = rdma_text.parse(_paste(path))
            if (too_big := stats.oversized_message(path)) is not None:
                raise UsageError(too_big)
            if not any(stats.ports.values()):
                why = f" ({stats.problems[0]})" if stats.problems else ""
                raise UsageError(f"{path}: no `rdma statistic show` counters in it{why}")
            sides.append(stats.ports)
    elif any(pasted):
        paths, sides = list(args.ethtool), list(pasted)
    else:
        return {}, {}
    refused = rdma_refusal(sides[0], sides[1])
    if refused is not None:
        raise UsageError(f"{paths[0]}, {paths[1]}: {refused}")
    return rdma_series(sides[0], args.driver), rdma_series(sides[1], args.driver)


def one_reading(args: argparse.Namespace) -> Lifetime:
    """One pasted output: what it says without a second one (windows.Lifetime)."""
    from nicwatch.consumers.diagnosis.windows import lifetime
    [path] = args.ethtool
    driver = _driver(args)
    stats = _read_stats(path)
    return lifetime(args.device, driver, stats.names, stats.values, path)


def from_ethtool(args: argparse.Namespace) -> tuple[list[Window], str]:
    from nicwatch.consumers.checks import parse_link_speed
    from nicwatch.consumers.diagnosis.windows import from_ethtool as window_of
    from nicwatch.consumers.diagnosis.windows import pair_refusal
    if len(args.ethtool) != 2:
        raise UsageError(f"--ethtool: {len(args.ethtool)} outputs; give one or two")
    a_path, b_path = args.ethtool
    if a_path == "-" and b_path == "-":
        raise UsageError("--ethtool: standard input can be only one of the two")
    _driver(args)
    if args.paste_interval is None or args.paste_interval <= 0:
        raise UsageError("--ethtool needs --interval, the time between the two outputs (10s)")
    if args.paste_interval > MAX_INTERVAL:
        raise UsageError(f"--interval {args.paste_interval:g}: more than a year")
    try:
        speed = parse_link_speed(args.speed) * 125_000.0 if args.speed else None
    except ValueError as e:
        raise UsageError(f"--speed: {e}") from None
    pasted_rdma: list[dict[str, dict[str, int]]] = []
    a, b = (_read_stats(p, pasted_rdma) for p in (a_path, b_path))
    refused = pair_refusal(args.driver, a.names, a.values, b.names, b.values,
                           args.paste_interval, speed)
    if refused is not None:
        raise UsageError(f"{a_path}, {b_path}: {refused}")
    pci = _bus_info(b.info.get("bus-info") or a.info.get("bus-info"))
    rdma_a, rdma_b = _rdma(args, pasted_rdma)
    window = window_of(args.device, args.driver, a.names, a.values, b.names, b.values,
                       args.paste_interval, speed, pci, lanes=args.lanes, fec=args.fec,
                       rdma_a=rdma_a, rdma_b=rdma_b)
    if not window.deltas:
        raise UsageError(f"{a_path}, {b_path}: no counter the {args.driver} table maps is in "
                         "both outputs")
    return [window], f"pasted ethtool -S of {args.device}, {args.paste_interval:g} s apart"


def from_paths(paths: list[str], seconds: float | None) -> tuple[list[Window], str]:
    from nicwatch.consumers.diagnosis.windows import from_snapshots
    from nicwatch.snapshot.files import SnapshotError, load
    files: list[Path] = []
    if len(paths) > 2:
        raise UsageError(f"{len(paths)} paths: give two snapshots, or one directory or file")
    if len(paths) == 1 and Path(paths[0]).is_dir():
        d = Path(paths[0])
        for name in ("series.json.gz", "history.json.gz"):  # record, incident
            if (d / name).is_file():
                files = [d / name]
                break
        else:
            raise UsageError(f"{d}: neither a record directory (series.json.gz) nor an "
                             "incident directory (history.json.gz)")
    else:
        files = [Path(p) for p in paths]
    snapshots = []
    for f in files:
        if f.is_dir():
            raise UsageError(f"{f}: a directory; give two snapshot files")
        try:
            snapshots.append(load(f))
        except SnapshotError as e:
            raise UsageError(str(e)) from None
    if sum(len(s.polls) for s in snapshots) < 2:
        raise UsageError(f"{files[0]}: holds one poll; give a second snapshot")
    hosts = {(s.host.boot_id) for s in snapshots}
    if len(hosts) > 1:
        raise UsageError("the snapshots are of different boots (or hosts): counters do not "
                         "continue across them")
    windows = from_snapshots(snapshots, seconds)
    return windows, " + ".join(str(f) for f in files)


class Progress:
    """On a terminal (stderr a TTY), the live window as it runs: one line rewritten each
    poll (seconds done of the window, interfaces polled, how many verdicts hold), and a
    line for each verdict when it first holds or stops holding. Nothing when stderr is not
    a terminal: piped and scripted output is unchanged."""

    CLEAR = "\r\x1b[K"

    def __init__(self, out: TextIO, seconds: float) -> None:
        self.out = out
        self.seconds = seconds
        self.held: dict[str, str] = {}  # label "device signature{scope}" -> title

    def update(self, elapsed: float, interfaces: int, verdicts: Sequence[Verdict]) -> None:
        from nicwatch.printable import printable
        now = {f"{v.device} {v.label}": v.title for v in verdicts if v.klass != "context"}
        lines = [f"{elapsed:4.0f} s  holds: {key} ({title})" for key, title in now.items()
                 if key not in self.held]
        lines += [f"{elapsed:4.0f} s  no longer holds: {key}" for key in self.held
                  if key not in now]
        self.held = now
        for line in lines:
            self.out.write(self.CLEAR + printable(line) + "\n")
        self.out.write(self.CLEAR + f"diagnosing: {min(elapsed, self.seconds):.0f} of "
                       f"{self.seconds:.0f} s, {interfaces} interface(s), "
                       f"{len(now)} verdict(s) holding")
        self.out.flush()

    def close(self) -> None:
        self.out.write(self.CLEAR)
        self.out.flush()


def live(args: argparse.Namespace, seconds: float) -> tuple[list[Window], list[Verdict], str]:
    from nicwatch.consumers.checks import expectations_of
    from nicwatch.consumers.diagnosis.consumer import Diagnosis
    from nicwatch.daemon import build_collector
    from nicwatch.tracker import Tracker
    config, _ = common.load_config(args)
    interval = args.paste_interval or min(config.interval, seconds / 6)
    if interval > seconds:
        raise UsageError(f"--interval {interval:g}: longer than the window ({seconds:g} s)")
    collector = build_collector(config)
    diagnosis = Diagnosis(expectations_of(config), window=seconds)
    tracker = Tracker()
    progress = Progress(sys.stderr, seconds) if sys.stderr.isatty() else None
    try:
        start = time.monotonic()
        while True:
            result = collector.poll()
            verdicts = diagnosis.update(result, tracker.update(result.samples), time.time())
            elapsed = time.monotonic() - start
            if progress is not None:
                progress.update(elapsed, len(result.samples), verdicts)
            if elapsed >= seconds - 1e-3:
                break
            time.sleep(max(0.0, min(interval, seconds - elapsed)))
    finally:
        collector.close()
        if progress is not None:
            progress.close()
    windows = [w for d in diagnosis.recent.devices()
               if (w := diagnosis.recent.window(d)) is not None]
    return windows, diagnosis.verdicts, f"this host, polled every {interval:g} s"


def run(args: argparse.Namespace) -> int:
    from nicwatch.consumers.diagnosis import render
    from nicwatch.consumers.diagnosis.engine import evaluate
    from nicwatch.values import ConfigError
    try:
        if args.window is not None and not 0 < args.window <= MAX_WINDOW:
            raise UsageError(f"--window {args.window:g}: between 0 and {MAX_WINDOW:g} seconds")
        if args.ethtool and args.paths:
            raise UsageError("--ethtool takes the two outputs itself; give no other path")
        if (not args.ethtool and args.paths and len(args.paths) <= 2
                and all(p == "-" or looks_like_text(p) for p in args.paths)):
            if not args.driver:
                raise UsageError(f"{args.paths[0]}: not a snapshot; for pasted `ethtool -S` "
                                 "output give --driver (and --interval for two)")
            args.ethtool = list(args.paths)  # pasted `ethtool -S` given as paths
        if args.rdma and (not args.ethtool or len(args.ethtool) != 2):
            raise UsageError("--rdma goes with two pasted `ethtool -S` outputs (--ethtool "
                             "BEFORE AFTER)")
        if args.ethtool and len(args.ethtool) == 1:
            life = one_reading(args)
            if args.json:
                print(json.dumps(render.lifetime_json(life), indent=1, allow_nan=False))
            else:
                sys.stdout.write(render.lifetime_text(life))
            return common.EXIT_OK
        if args.ethtool:
            windows, what = from_ethtool(args)
            verdicts = evaluate(windows)
        elif args.paths:
            windows, what = from_paths(args.paths, args.window)
            verdicts = evaluate(windows)
        else:
            windows, verdicts, what = live(args, args.window or 30.0)
    except (UsageError, ConfigError) as e:
        print(f"nicwatch diagnose: error: {e}", file=sys.stderr)
        return common.EXIT_USAGE
    if args.json:
        print(json.dumps(render.as_json(verdicts, windows, what), indent=1, allow_nan=False))
    else:
        sys.stdout.write(render.text(verdicts, windows, what))
    return common.EXIT_FAILURE if any(v.klass != "context" for v in verdicts) else common.EXIT_OK
