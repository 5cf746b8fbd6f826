"""Numbers for people: SI prefixes, amounts in their unit, rates, durations."""

from __future__ import annotations

import math


def si(value: float | None, unit: str = "") -> str:
    """``value`` with an SI prefix and three significant digits: ``9.41 Gb/s``, ``1.2k/s``."""
    if value is None or (type(value) is float and not math.isfinite(value)):  # ints: exact
        return "-"
    space = " " if unit[:1].isalpha() else ""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{space}{prefix}{unit}"
    return f"{value:.3g}{space}{unit}"


_SYMBOLS = {"bytes": "B"}


def symbol(unit: str) -> str:
    """The short form of a family's unit where there is one (bytes: B)."""
    return _SYMBOLS.get(unit, unit)


def amount(value: float | None, unit: str) -> str:
    """A counter difference, exact: ``10,420,000 B``, ``1.834567 seconds``."""
    if value is None:
        return "-"
    text = number(value)
    unit = symbol(unit)
    return f"{text} {unit}" if unit else text


def number(value: float) -> str:
    """A count in the report's one format: whole numbers with thousands separators however
    large (a scaled counter is a float: ``128,009,000,000``, never ``1.28009e+11``), other
    values to six significant digits, never in exponent form."""
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    if value.is_integer():
        return f"{int(value):,}"
    if abs(value) >= 1e5:
        return f"{value:,.0f}"
    digits = max(0, 5 - math.floor(math.log10(abs(value)))) if value else 0
    return f"{value:,.{digits}f}".rstrip("0").rstrip(".")


def duration(seconds: float | None) -> str:
    """A length of time for people, in one format everywhere: ``3.2 s``, ``34 s``,
    ``1m55s``, ``2h05m`` (the exact seconds are in the JSON)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    if seconds < 59.5:
        return f"{round(seconds)} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"


def rate(value: float | None, unit: str) -> str:
    """A per-second rate for people: bytes as bits/s, time paused as a percentage."""
    if value is None:
        return "-"
    if unit == "bytes":
        return si(value * 8, "b/s")
    if unit == "seconds":
        return f"{value * 100:.3g}% of the time"
    return si(value, "/s")
