"""Parse `ethtool -S` output as people paste it into bug reports.

ethtool prints ``NIC statistics:`` and then one ``     name: value`` line per statistic.
Pastes lose or change the indentation, keep trailing spaces that some drivers put in names,
mix in blank lines, comments or the output of `ethtool -i`, and sometimes repeat a line.
Names may themselves contain ``: `` (bnxt ``[0]: rx_discards``, be2net ``rxq0: rx_bytes``), so
the value is what follows the last colon.

Nothing here raises on bad input: a line that is not a statistic is reported in
``problems`` and skipped; a repeated name keeps its first value and is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADER = "NIC statistics:"

# `ethtool -i` keys; a paste that includes them is not a problem, and `driver` is useful.
DRVINFO_KEYS = frozenset({
    "driver", "version", "firmware-version", "expansion-rom-version", "bus-info",
    "supports-statistics", "supports-test", "supports-eeprom-access",
    "supports-register-dump", "supports-priv-flags",
})


@dataclass(frozen=True, slots=True)
class Problem:
    """A line that was skipped: 1-based ``line`` number, the ``text`` and why."""

    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}: {self.text.strip()!r}"


@dataclass(frozen=True, slots=True)
class EthtoolStats:
    """Statistic names and values in the order they appeared."""

    names: tuple[str, ...]
    values: tuple[int, ...]
    problems: tuple[Problem, ...] = ()
    info: dict[str, str] = field(default_factory=dict)  # `ethtool -i` lines, if pasted


def _value(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdecimal() and text.isascii() else None


def parse(text: str) -> EthtoolStats:
    names: list[str] = []
    values: list[int] = []
    problems: list[Problem] = []
    info: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped == HEADER or stripped.startswith("#"):
            continue
        name, colon, rest = stripped.rpartition(":")
        name = name.strip()
        if not colon or not name:
            problems.append(Problem(number, line, "not a 'name: value' line"))
            continue
        value = _value(rest)
        key, _, setting = stripped.partition(":")
        if value is None and key.strip() in DRVINFO_KEYS:
            info.setdefault(key.strip(), setting.strip())
            continue
        if value is None:
            problems.append(Problem(number, line, "value is not a non-negative integer"))
            continue
        if name in first_line:
            problems.append(Problem(number, line, f"duplicate of line {first_line[name]}, "
                                                  "first value kept"))
            continue
        first_line[name] = number
        names.append(name)
        values.append(value)
    return EthtoolStats(tuple(names), tuple(values), tuple(problems), info)
