"""Values of settings: the error every bad setting raises and the parsers of one value each.

Kept apart from config so that modules config reads their sections with (checks) can use
the same parsers and error without importing config."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

# the one parser of durations and sizes (values/units.py), offered here beside the other
# parsers of one value
from nicwatch.values.units import parse_duration as parse_duration
from nicwatch.values.units import parse_size as parse_size

DEFAULT_PORT = 10847
MAX_STRING = 4096  # paths and regular expressions
MAX_NAMES = 1024  # lists of statistic names


class ConfigError(Exception):
    """A bad setting; the message names where it came from (file and key, or flag)."""


def did_you_mean(name: str, known: Sequence[str]) -> str | None:
    """The known key a misspelt ``name`` most likely meant: the closest whole key (difflib's
    ratio at least 0.75: ``intervall`` -> ``interval``), else the key whose last dotted part
    is closest (a key outside its table: ``listen_adress`` -> ``web.listen_address``)."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    if close:
        return close[0]
    tails: dict[str, str] = {}
    for key in known:
        tails.setdefault(key.rsplit(".", 1)[-1], key)
    close = difflib.get_close_matches(name.rsplit(".", 1)[-1], list(tails), n=1, cutoff=0.75)
    return tails[close[0]] if close else None


def parse_regex(value: Any) -> str:
    """``value`` if RE2 compiles it, else ValueError: every user regex is RE2
    (values/regex.py, imported on first use so that `nicwatch --help` does not load RE2)."""
    from nicwatch.values import regex

    return regex.parse_regex(value)


def parse_listen_address(value: Any) -> str:
    """"host:port", ":port" (all addresses) or "[v6]:port"; returns it unchanged if valid."""
    split_listen_address(value)
    return str(value)


def split_listen_address(value: Any) -> tuple[str, int]:
    m = re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\[\]]*):(\d{1,5})", str(value))
    if not m or not 0 <= int(m.group(2)) <= 65535:
        raise ValueError(f"expected HOST:PORT such as \":{DEFAULT_PORT}\" or "
                         f"\"127.0.0.1:{DEFAULT_PORT}\", got {value!r}")
    host = m.group(1).strip("[]") or "0.0.0.0"
    return host, int(m.group(2))


def parse_str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    if len(value) > MAX_STRING or "\0" in value:
        raise ValueError(f"expected a path of at most {MAX_STRING} characters without NUL, "
                         f"got {value[:60]!r}")
    return value


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"expected true or false, got {value!r}")


def parse_names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of statistic names, got {value!r}")
    if len(value) > MAX_NAMES or any(len(v) > MAX_STRING for v in value):
        raise ValueError(f"expected at most {MAX_NAMES} statistic names")
    return tuple(value)


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if value not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {value!r}")
        return str(value)
    return parse


def show_seconds(v: float) -> str:
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if v >= size and v % size == 0:
            return f"{v / size:g}{unit}"
    return f"{v * 1000:g}ms"


def show_bytes(v: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= size and v % size == 0:
            return f"{v // size:g}{unit}"
    return f"{v:g}B"


def bounded(parse: Callable[[Any], Any], low: float, high: float,
            show: Callable[[float], str] = show_seconds) -> Callable[[Any], Any]:
    """``parse``, then refuse a value outside [low, high] (NaN and infinities included),
    naming the bounds in the value's own unit."""
    def parse_bounded(value: Any) -> Any:
        try:
            v = parse(value)
            ok = math.isfinite(v) and low <= v <= high
        except OverflowError:  # an integer too large for a float
            ok = False
        if not ok:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
            raise ValueError(f"must be between {show(low)} and {show(high)}, got {shown}")
        return v
    return parse_bounded
