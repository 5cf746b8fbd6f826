"""`nicwatch check`: poll once and check every interface against the configured expectations.

Prints every check (or JSON), for gating a benchmark, a CI job or a provisioning run.

Exit status: 0 every check passed; 1 a check failed, or the expectations selected no
interface at all (nothing checked is not a pass); 2 a usage or configuration error, or a
file without ``[[expect]]`` / ``[[consistent]]`` tables. nicwatch never changes a NIC: the
FIX column is the command that would, for a person or a provisioning tool to run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from nicwatch import config, log
from nicwatch.cli import common
from nicwatch.collect import Collector
from nicwatch.config import SOURCE_SWITCH_KEYS
from nicwatch.consumers.checks import CheckReport, Expectations, evaluate, expectations_of
from nicwatch.consumers.linkphysics import with_physics
from nicwatch.model import Sample, SourceError
from nicwatch.printable import printable
from nicwatch.tracker import Tracker
from nicwatch.values import ConfigError

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = common.EXIT_OK, common.EXIT_FAILURE, common.EXIT_USAGE
CHECK_SETTINGS = ("path.sysfs", "path.procfs", "interfaces.include", "interfaces.exclude",
                  "collector.ethtool_netlink", "collector.vfs", "collector.receive_path",
                  "log.level", "log.format",
                  *SOURCE_SWITCH_KEYS)


def configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    common.add_settings(p, CHECK_SETTINGS)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    return configure(common.add_command(
        subparsers, "check",
        description=__doc__.splitlines()[0]))


def format_report(report: CheckReport, errors: Sequence[tuple[str, SourceError]] = ()) -> str:
    """The table of every check (if any), a summary line, then warnings and source errors."""
    head = ("RESULT", "DEVICE", "CHECK", "EXPECTED", "ACTUAL", "RULE", "FIX")
    # The FIX command is printable already: its names are quoted by printable.shell_word,
    # which a second escape would turn into another name.
    rows = [head] + [(*(printable(c) for c in (
        "pass" if r.passed else "FAIL", r.device, r.check,
        f"{r.expected} ({r.note})" if r.note else r.expected, r.actual, r.rule)),
        printable(r.fix or "", backslash=False)) for r in report.results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in rows] if report.results else []
    lines.append(summary(report))
    lines.extend(f"warning: {w}" for w in report.warnings)
    lines.extend(f"warning: {device or 'all'}: {e.source} failed: {e.kind}: {e.message}"
                 for device, e in errors)
    return printable("\n".join(lines), keep="\n", backslash=False)


def summary(report: CheckReport) -> str:
    if not report.results:
        return "nothing checked: no expectation selected an interface"
    failed = report.failed
    devices = sorted({r.device for r in report.violations})
    tail = f" on {', '.join(devices)}" if devices else ""
    return f"{len(report.results)} checks: {report.passed} passed, {failed} failed{tail}"


def report_json(report: CheckReport, expectations: Expectations,
                errors: Sequence[tuple[str, SourceError]] = ()) -> dict[str, Any]:
    return {
        "passed": exit_status(report) == EXIT_PASS,
        "checks": {"pass": report.passed, "fail": report.failed},
        "results": [{"device": r.device, "check": r.check,
                     "result": "pass" if r.passed else "fail", "expected": r.expected,
                     "actual": r.actual, "note": r.note, "rule": r.rule, "fix": r.fix}
                    for r in report.results],
        "warnings": list(report.warnings),
        "source_errors": [{"device": d, "source": e.source, "kind": e.kind,
                           "message": e.message} for d, e in errors],
        "config": expectations.path,
        "expectations": expectations.as_table(),
    }


def exit_status(report: CheckReport) -> int:
    return EXIT_PASS if report.results and not report.failed else EXIT_FAIL


# Checks that need a rate, hence two polls this far apart (seconds).
RATE_CHECKS = frozenset({"fec_lane_ber"})
RATE_WINDOW = 1.0


def _needs_rates(expectations: Expectations) -> bool:
    names = {name for expect in expectations.expects for name, _ in expect.wanted}
    names.update(name for group in expectations.groups for name in group.checks)
    return not RATE_CHECKS.isdisjoint(names)


def check_once(collector: Collector, expectations: Expectations,
               window: float = RATE_WINDOW,
               sleep: Callable[[float], None] = time.sleep,
               ) -> tuple[CheckReport, tuple[tuple[str, SourceError], ...]]:
    """Poll once with ``collector`` (closing it) and evaluate; also the poll's source errors.
    A check that needs a rate (RATE_CHECKS: the pre-FEC BER) polls twice, ``window``
    seconds apart, through the daemon's tracker."""
    try:
        result = collector.poll()
        samples: Sequence[Sample] = result.samples
        if _needs_rates(expectations):
            tracker = Tracker()
            tracker.update(result.samples)
            sleep(window)
            result = collector.poll()
            samples = with_physics(tracker.update(result.samples))
    finally:
        collector.close()
    return evaluate(expectations, samples), result.errors


def run(args: argparse.Namespace) -> int:
    import nicwatch.consumers.registry  # noqa: F401  (registers every section)
    from nicwatch.daemon import build_collector
    flags = {s.key: getattr(args, s.key) for s in config.SETTINGS
             if getattr(args, s.key, None) is not None}
    try:
        settings = config.build(args.config, flags)
    except ConfigError as e:
        print(f"nicwatch check: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    expectations = expectations_of(settings)
    if not expectations:
        where = args.config or "no --config FILE given"
        print(f"nicwatch check: error: {where}: no [[expect]] or [[consistent]] tables to "
              "check (see docs/expectations.md)", file=sys.stderr)
        return EXIT_USAGE
    log.configure(settings.log_level, settings.log_format)
    report, errors = check_once(build_collector(settings), expectations)
    if args.json:
        json.dump(report_json(report, expectations, errors), sys.stdout, indent=1)
        print()
    else:
        print(format_report(report, errors))
    return exit_status(report)


def main(argv: Sequence[str] | None = None) -> int:
    return run(configure(common.Parser(prog="nicwatch check")).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
