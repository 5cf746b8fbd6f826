"""The ``[capture]`` section of the configuration file: its settings and its
``[[capture.trigger]]`` tables, parsed into :class:`Capture` (ConfigError naming the file
and the key)."""

from __future__ import annotations

import math
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nicwatch.config import Config, Section, register_section
from nicwatch.metrics import FAMILIES
from nicwatch.snapshot import report
from nicwatch.snapshot.atomicfile import describe
from nicwatch.values import MAX_STRING, ConfigError, bounded, show_bytes
from nicwatch.values.regex import Regex, compile_regex, parse_regex
from nicwatch.values.units import parse_duration, parse_size

SECTION = "capture"
EVENTS = ("pcie_degraded", "link_down", "identity_changed", "stat_set_changed")
STATE_EVENTS = ("pcie_degraded", "link_down")  # fire while the state lasts, once entered
DEFAULT_BEFORE = 120.0
DEFAULT_AFTER = 60.0
DEFAULT_MAX_BYTES = 256 << 20
DEFAULT_COOLDOWN = 0.0
DEFAULT_MAX_OPEN = 32
DEFAULT_MAX_PER_TRIGGER = 8
DEFAULT_PER_TRIGGER_WINDOW = 60.0
# Paths a capture directory may never be in: kernel file systems, where nothing can be kept
FORBIDDEN = ("/proc", "/sys", "/dev")


@dataclass(frozen=True, slots=True)
class Trigger:
    name: str  # the trigger label of nic_incidents_total
    family: str | None = None  # a canonical counter family ...
    rate_above: float | None = None  # ... whose rate (per second, base unit) exceeds this
    labels: tuple[tuple[str, str], ...] = ()  # only series with these labels
    device: str | None = None  # only interfaces whose name matches (RE2, values.regex)
    event: str | None = None  # or one of EVENTS
    _device: Regex | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_device", compile_regex(self.device) if self.device else None)

    def matches_device(self, device: str) -> bool:
        return self._device is None or self._device.fullmatch(device)

    def describe(self) -> str:
        if self.event:
            what = f"event {self.event}"
        else:
            assert self.family is not None
            unit = FAMILIES[self.family].unit
            what = f"{self.family}{_labels(self.labels)} above {report.rate(self.rate_above, unit)}"
        return what + (f" on devices matching {self.device!r}" if self.device else "")

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "rate_above": self.rate_above,
                "labels": dict(self.labels), "device": self.device, "event": self.event}


@dataclass(frozen=True, slots=True)
class Capture:
    directory: str | None = None  # None: "incidents" in the state directory
    before: float = DEFAULT_BEFORE
    after: float = DEFAULT_AFTER
    max_bytes: int = DEFAULT_MAX_BYTES
    cooldown: float = DEFAULT_COOLDOWN
    max_open: int = DEFAULT_MAX_OPEN
    max_per_trigger: int = DEFAULT_MAX_PER_TRIGGER
    per_trigger_window: float = DEFAULT_PER_TRIGGER_WINDOW
    triggers: tuple[Trigger, ...] = ()


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    labels = tuple(labels)
    return "{" + ",".join(f"{k}={v}" for k, v in labels) + "}" if labels else ""


def _fail(path: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: key {key!r}: {message}")


def _count(low: int, high: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"expected a whole number from {low} to {high}, got {value!r:.40}")
        return value
    return parse


def check_directory(value: Any) -> str:
    """A capture directory the daemon can keep incidents in: a path string of at most
    MAX_STRING characters without NUL, not an existing non-directory, not in a kernel file
    system (/proc, /sys, /dev: ``/proc/self`` resolves into /proc). ValueError otherwise.
    Checked when the configuration is read, so a reload refuses it before applying anything."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a directory, got {value!r:.80}")
    if len(value) > MAX_STRING or "\0" in value:
        raise ValueError(f"expected a path of at most {MAX_STRING} characters without NUL, "
                         f"got {value[:60]!r}")
    real = os.path.realpath(value)
    if any(real == p or real.startswith(p + "/") for p in FORBIDDEN):
        raise ValueError(f"{value!r} is in a kernel file system ({real}): incidents cannot "
                         "be kept there")
    try:
        st = os.stat(value)
    except FileNotFoundError:
        return value  # created at the first write
    except OSError as e:
        raise ValueError(f"{value!r}: {describe(e)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{value!r} exists and is not a directory")
    return value


_TRIGGER_KEYS = ("name", "family", "rate_above", "labels", "device", "event")
# Bounds, like every setting's (docs/failure-behaviour.md): a day of history around an
# onset at most (the history holds a week), a directory from 1 MiB to 1 TiB; caps from 1.
_SETTINGS: dict[str, Callable[[Any], Any] | None] = {
    "directory": check_directory, "before": bounded(parse_duration, 1, 86400),
    "after": bounded(parse_duration, 0.1, 86400),
    "max_bytes": bounded(parse_size, 1 << 20, 1 << 40, show_bytes),
    "cooldown": bounded(lambda v: parse_duration(v, allow_zero=True), 0, 7 * 86400),
    "max_open": _count(1, 1024), "max_per_trigger": _count(1, 1024),
    "per_trigger_window": bounded(parse_duration, 1, 86400),
    "trigger": None}


def _label_value(value: Any) -> str:
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or len(text) > 200 or not text.isprintable():
        raise ValueError(f"expected a short printable label value, got {value!r:.60}")
    return text


def _trigger(table: Mapping[str, Any], key: str, path: str) -> Trigger:
    unknown = set(table) - set(_TRIGGER_KEYS)
    if unknown:
        raise _fail(path, f"{key}.{sorted(unknown)[0]}",
                    f"unknown key (known: {', '.join(_TRIGGER_KEYS)})")
    family, event = table.get("family"), table.get("event")
    if (family is None) == (event is None):
        raise _fail(path, key, "a trigger needs either family (with rate_above) or event")
    device = table.get("device")
    if device is not None:
        try:
            device = parse_regex(device)
        except ValueError as e:
            raise _fail(path, f"{key}.device", str(e)) from None
    if event is not None:
        if event not in EVENTS:
            raise _fail(path, f"{key}.event", f"unknown event {str(event)[:60]!r} (known: "
                                              f"{', '.join(EVENTS)})")
        for extra in ("rate_above", "labels"):
            if extra in table:
                raise _fail(path, f"{key}.{extra}", "only for a family trigger")
        return Trigger(_name(table, key, path, event), event=event, device=device)
    spec = FAMILIES.get(family) if isinstance(family, str) else None
    if spec is None or spec.type != "counter" or not isinstance(family, str):
        raise _fail(path, f"{key}.family", f"{str(family)[:80]!r} is not a canonical counter "
                                           "family (docs/metrics.md lists them)")
    rate = table.get("rate_above")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) \
            or rate < 0:
        raise _fail(path, f"{key}.rate_above", "expected a number of "
                    f"{spec.unit or 'events'} per second, 0 or more, got {rate!r:.40}")
    labels = table.get("labels", {})
    if not isinstance(labels, dict):
        raise _fail(path, f"{key}.labels", "expected a table of label values such as "
                                           "{ priority = \"3\" }")
    values: dict[str, str] = {}
    for label, value in labels.items():
        if label not in spec.labels:
            raise _fail(path, f"{key}.labels", f"{family} has no label {label[:60]!r} (its "
                                               f"labels: {', '.join(spec.labels) or 'none'})")
        try:
            values[label] = _label_value(value)
        except ValueError as e:
            raise _fail(path, f"{key}.labels.{label}", str(e)) from None
    pairs = tuple(sorted(values.items()))
    return Trigger(_name(table, key, path, family + _labels(pairs)), family, float(rate),
                   pairs, device)


def _name(table: Mapping[str, Any], key: str, path: str, default: str) -> str:
    name = table.get("name", default)
    if not isinstance(name, str) or not name or len(name) > 200 or not name.isprintable():
        raise _fail(path, f"{key}.name", f"expected a short printable name, got {name!r:.60}")
    return name


def parse_capture(data: Mapping[str, Any], path: str) -> Capture:
    """The ``[capture]`` section of a parsed TOML document (other keys are left to
    nicwatch.config). Raises ConfigError naming ``path`` and the key."""
    section = data.get(SECTION, {})
    if not isinstance(section, dict):
        raise _fail(path, SECTION, "expected a table ([capture])")
    values: dict[str, Any] = {}
    for key, raw in section.items():
        if key not in _SETTINGS:
            raise _fail(path, f"{SECTION}.{str(key)[:60]}",
                        f"unknown key (known: {', '.join(_SETTINGS)})")
        parse = _SETTINGS[key]
        if parse is None:  # the triggers, below
            continue
        try:
            values[key] = parse(raw)
        except ValueError as e:
            raise _fail(path, f"{SECTION}.{key}", str(e)) from None
    tables = section.get("trigger", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise _fail(path, f"{SECTION}.trigger", "expected an array of tables "
                                                "([[capture.trigger]])")
    triggers = tuple(_trigger(t, f"{SECTION}.trigger[{i}]", path)
                     for i, t in enumerate(tables, 1))
    names = Counter(t.name for t in triggers)
    if dup := [n for n, c in names.items() if c > 1]:
        raise _fail(path, f"{SECTION}.trigger", f"two triggers named {dup[0]!r}; give one a "
                                                "name = \"...\"")
    return Capture(triggers=triggers, **values)


# The section's owner declares it; nicwatch.config parses the file through it.
CONFIG_SECTION = Section("capture", (SECTION,), parse_capture, Capture)
register_section(CONFIG_SECTION)


def capture_of(config: Config) -> Capture:
    """The incident capture of a configuration (no trigger without a file)."""
    capture: Capture = config.section(CONFIG_SECTION.name)
    return capture
