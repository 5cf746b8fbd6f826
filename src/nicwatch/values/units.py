"""Durations and sizes as text: the one parser every flag, TOML key, web config key and CLI
argument uses, so ``1m30s`` means the same everywhere.

Durations follow the two grammars Prometheus users already write:

- Go's ``time.ParseDuration``: an optional sign, then one or more decimal numbers, each with
  an optional fraction and a unit, in any order: ``ns``, ``us`` (or ``µs`` U+00B5, ``μs``
  U+03BC), ``ms``, ``s``, ``m``, ``h``. ``1m30s``, ``1.5h``, ``100us``, ``0``.
- Prometheus' ``model.ParseDuration``: whole numbers with units from largest to smallest,
  each at most once: ``y`` (365 days), ``w``, ``d``, ``h``, ``m``, ``s``, ``ms``. ``2d``,
  ``1w``, ``1y``, ``4d1h``, ``0``.

Both reject anything else (a space, ``1.5d``, ``1h1d``) and anything longer than Go's
``time.Duration`` holds (2^63-1 ns, about 292 years). nicwatch's own settings accept a
string valid in either grammar, and a bare number of seconds (``5``, ``0.2``; TOML numbers
too). The web config file accepts exactly what exporter-toolkit does (:func:`go_duration`).

Sizes: a whole or decimal number with an optional unit. ``B``; SI units are powers of 1000
(``kB`` = ``KB``, ``MB``, ``GB``, ``TB``); IEC units are powers of 1024 (``KiB``, ``MiB``,
``GiB``, ``TiB``). ``1.5GiB``, ``64MiB``, ``500KB``. A bare number is bytes.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

NS_PER_SECOND = 10**9
MAX_NS = (1 << 63) - 1  # Go's time.Duration
_DIGITS = "0123456789"

GO_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9,
            "m": 60 * 10**9, "h": 3600 * 10**9}
# Prometheus' units with their required order (largest first).
PROMETHEUS_UNITS = {"y": 365 * 86400 * 10**9, "w": 7 * 86400 * 10**9, "d": 86400 * 10**9,
                    "h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6}
_PROM_ORDER = {u: i for i, u in enumerate(PROMETHEUS_UNITS)}


def go_duration(text: str) -> int:
    """Nanoseconds, by the rules of Go's ``time.ParseDuration`` (signed)."""
    bad = ValueError(f"expected a Go duration such as \"1m30s\" or \"100ms\", got {text!r}")
    s, neg = text, False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise bad
    total = 0
    while s:
        if s[0] != "." and s[0] not in _DIGITS:
            raise bad
        i = 0
        while i < len(s) and s[i] in _DIGITS:
            i += 1
        whole = int(s[:i]) if i else 0
        if whole > 1 << 63:
            raise ValueError(f"duration out of range: {text!r}")
        s, had_whole = s[i:], i > 0
        frac, scale, had_frac = 0, 1.0, False
        if s.startswith("."):
            s, j, overflow = s[1:], 0, False
            while j < len(s) and s[j] in _DIGITS:
                if not overflow:  # like Go: stop gaining precision, never fail
                    nxt = frac * 10 + int(s[j])
                    if frac > MAX_NS // 10 or nxt > 1 << 63:
                        overflow = True
                    else:
                        frac, scale = nxt, scale * 10
                j += 1
            s, had_frac = s[j:], j > 0
        if not (had_whole or had_frac):
            raise bad
        k = 0
        while k < len(s) and s[k] != "." and s[k] not in _DIGITS:
            k += 1
        unit = GO_UNITS.get(s[:k])
        if unit is None:
            what = f"unknown unit {s[:k]!r}" if k else "missing unit"
            raise ValueError(f"{what} in duration {text!r} (Go units: ns, us, ms, s, m, h)")
        s = s[k:]
        if whole > (1 << 63) // unit:
            raise ValueError(f"duration out of range: {text!r}")
        value = whole * unit
        if frac:
            value += int(float(frac) * (float(unit) / scale))  # Go's float arithmetic
        total += value
        if value > 1 << 63 or total > 1 << 63:
            raise ValueError(f"duration out of range: {text!r}")
    if not neg and total > MAX_NS:
        raise ValueError(f"duration out of range: {text!r}")
    return -total if neg else total


def prometheus_duration(text: str) -> int:
    """Nanoseconds, by the rules of Prometheus' ``model.ParseDuration`` (never negative)."""
    bad = ValueError(f"expected a Prometheus duration such as \"2d\" or \"1h30m\", got {text!r}")
    if text == "0":
        return 0
    if not text:
        raise bad
    s, total, last = text, 0, -1
    while s:
        i = 0
        while i < len(s) and s[i] in _DIGITS:
            i += 1
        if i == 0:
            raise bad
        value, s = int(s[:i]), s[i:]
        k = 0
        while k < len(s) and s[k] not in _DIGITS:
            k += 1
        if k == 0:
            raise bad
        unit, s = s[:k], s[k:]
        if unit not in PROMETHEUS_UNITS:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r} (Prometheus units: "
                             "y, w, d, h, m, s, ms)")
        if _PROM_ORDER[unit] <= last:  # largest unit first, each once
            raise bad
        last = _PROM_ORDER[unit]
        total += value * PROMETHEUS_UNITS[unit]
        if total > MAX_NS:
            raise ValueError(f"duration out of range: {text!r}")
    return total


_BARE_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def duration_ns(text: str, bare_seconds: bool = True) -> int:
    """Nanoseconds from a Go or a Prometheus duration (or, with ``bare_seconds``, a plain
    number of seconds such as ``5`` or ``0.2``). Never negative."""
    if not isinstance(text, str):
        raise ValueError(f"expected a duration such as \"5s\", got {text!r}")
    if bare_seconds and _BARE_SECONDS.fullmatch(text):
        ns = int(Fraction(text) * NS_PER_SECOND)
        if ns > MAX_NS:
            raise ValueError(f"duration out of range: {text!r}")
        return ns
    errors = []
    for grammar in (go_duration, prometheus_duration):
        try:
            ns = grammar(text)
        except ValueError as e:
            errors.append(str(e))
            continue
        if ns < 0:
            raise ValueError(f"duration must not be negative, got {text!r}")
        return ns
    if any("out of range" in e for e in errors):
        raise ValueError(f"duration out of range (at most 292 years): {text!r}")
    raise ValueError(f"expected a duration such as \"5s\", \"1m30s\", \"100ms\" or \"2d\", "
                     f"got {text!r}")


def parse_duration(value: Any, allow_zero: bool = False) -> float:
    """Seconds from a setting: a number of seconds (TOML) or a duration string."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected a duration such as \"5s\", got {value!r}")
    if isinstance(value, str):
        seconds = duration_ns(value) / NS_PER_SECOND
    elif not math.isfinite(value):
        raise ValueError(f"expected a finite duration, got {value!r}")
    else:
        seconds = float(value)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"duration must be positive, got {value!r}")
    return seconds


def format_duration(ns: int) -> str:
    """The shortest usual spelling of ``ns`` nanoseconds that :func:`duration_ns` reads
    back exactly: Prometheus' form for whole milliseconds (``1d2h``, ``2w``, ``1y``), Go's
    otherwise (``1.5us``, ``1m0.000000001s``)."""
    if ns < 0:
        raise ValueError(f"negative duration {ns}")
    if ns == 0:
        return "0s"
    if ns % 10**6 == 0:
        out, rest = [], ns
        for unit, mult in PROMETHEUS_UNITS.items():
            if unit in ("y", "w") and rest % mult:
                continue  # like Prometheus: 90d, not 12w6d
            if rest >= mult:
                out.append(f"{rest // mult}{unit}")
                rest %= mult
        return "".join(out)
    if ns < 10**9:  # like Go: 1.5µs, 20.000001ms (spelled with the ASCII "us")
        for unit, mult in (("ms", 10**6), ("us", 10**3), ("ns", 1)):
            if ns >= mult:
                return _decimal(ns, mult) + unit
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    head = (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "")
    return head + _decimal(rest, 10**9) + "s"


def _decimal(value: int, mult: int) -> str:
    whole, frac = divmod(value, mult)
    digits = len(str(mult)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".") if frac else str(whole)


SIZE_UNITS = {"B": 1, "kB": 1000, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4,
              "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([A-Za-z]*)")


def parse_size(value: Any) -> int:
    """Bytes from an integer or a string such as "64MiB", "1.5GiB", "500KB": a whole,
    positive number of bytes."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"expected a size such as \"64MiB\", got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        m = _SIZE.fullmatch(value)
        if not m or m.group(2) not in ("", *SIZE_UNITS):
            raise ValueError(f"expected a size such as \"64MiB\", \"1.5GiB\" or \"500KB\" "
                             f"(units B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), got {value!r}")
        exact = Fraction(m.group(1)) * SIZE_UNITS[m.group(2) or "B"]
        if exact.denominator != 1:
            raise ValueError(f"size must be a whole number of bytes, got {value!r}")
        size = int(exact)
    if size <= 0:
        raise ValueError(f"size must be positive, got {value!r}")
    return size


def format_size(size: int) -> str:
    """``size`` bytes in the largest IEC unit that divides it exactly (``64MiB``)."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if size and size % SIZE_UNITS[unit] == 0:
            return f"{size // SIZE_UNITS[unit]}{unit}"
    return f"{size}B"
