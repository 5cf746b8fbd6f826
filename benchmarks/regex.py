"""Cost of the user-regex engine (RE2, values/regex.py) against Python's ``re`` on the two
paths where a user's pattern meets many names; prints one JSON document.

  python benchmarks/regex.py [REPEATS]

* selection: ``--interfaces.include``/``exclude`` over 2,000 interface names, as every poll
  asks (``Selection.selects``; RE2 remembers each name's answer, so a poll after the first
  pays a dictionary lookup; ``first`` is the first poll's cost, without that memory);
* raw statistics: ``--collector.raw.include``/``exclude`` over the 4,900 statistic names
  of an mlx5-scale port, which runs when a driver's statistic list is first seen (the plan
  is then cached), per name;
* compile: one pattern, uncached (``re.compile`` of a pattern it has not seen; RE2 compiles
  every pattern once where it is used).

CPU time (``time.process_time``), median of REPEATS runs, microseconds.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from collections.abc import Callable

from nicwatch.collect import Selection
from nicwatch.values.regex import Regex

INTERFACES = [f"ens{i}f{j}np{j}" for i in range(1000) for j in range(2)]
STATS = ([f"rx_queue_{q}_{s}" for q in range(64) for s in
          ("packets", "bytes", "drops", "xdp_drop", "csum_err", "wqe_err", "buff_alloc_err")]
         + [f"tx_prio{p}_{s}_{q}" for p in range(8) for q in range(64) for s in
            ("pause", "pause_duration", "packets", "bytes", "discards", "errors", "ctrl")]
         )[:4900]
INCLUDE, EXCLUDE = r"(ens|enp)[0-9]+f[01].*", r".*f1np1"
RAW_INCLUDE, RAW_EXCLUDE = r"rx_.*_(drops|.*err)|tx_prio[0-9]_pause.*", r".*_ctrl_.*"


def median_us(f: Callable[[], object], repeats: int, per: int = 1) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.process_time()
        f()
        runs.append((time.process_time() - t0) / per * 1e6)
    return round(statistics.median(runs), 3)


def main(repeats: int) -> dict:
    sel = Selection(INCLUDE, EXCLUDE)

    def re_select() -> None:
        for n in INTERFACES:
            not re.fullmatch(EXCLUDE, n) and re.fullmatch(INCLUDE, n)

    def re2_first() -> None:
        inc, exc = Regex(INCLUDE), Regex(EXCLUDE)
        for n in INTERFACES:
            not exc.fullmatch(n) and inc.fullmatch(n)

    def re2_select() -> None:
        for n in INTERFACES:
            sel.selects(n, True)

    re2_select()  # the first poll, remembered from here on
    inc_re, exc_re = re.compile(RAW_INCLUDE), re.compile(RAW_EXCLUDE)

    def re_raw() -> None:
        for n in STATS:
            inc_re.fullmatch(n) and not exc_re.fullmatch(n)

    def re2_raw() -> None:
        inc, exc = Regex(RAW_INCLUDE), Regex(RAW_EXCLUDE)
        for n in STATS:
            inc.fullmatch(n) and not exc.fullmatch(n)

    counter = iter(range(10 ** 9))
    return {
        "selection_2000_interfaces_per_poll_us": {
            "re": median_us(re_select, repeats), "re2_first_poll": median_us(re2_first, repeats),
            "re2": median_us(re2_select, repeats)},
        "raw_include_exclude_per_name_us": {
            "re": median_us(re_raw, repeats, len(STATS)),
            "re2": median_us(re2_raw, repeats, len(STATS))},
        "compile_one_pattern_us": {
            "re": median_us(lambda: re.compile(RAW_INCLUDE + f"|x{next(counter)}"), repeats),
            "re2": median_us(lambda: Regex(RAW_INCLUDE), repeats)},
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 21), indent=1))
