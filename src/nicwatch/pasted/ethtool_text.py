"""Parse `ethtool -S` output as people paste it into bug reports.

ethtool prints ``NIC statistics:`` and then one ``     name: value`` line per statistic.
Pastes lose or change the indentation, keep trailing spaces that some drivers put in names,
mix in blank lines, comments or the output of `ethtool -i`, and sometimes repeat a line.
Names may themselves contain ``: `` (bnxt ``[0]: rx_discards``, be2net ``rxq0: rx_bytes``), so
the value is what follows the last colon.

Nothing here raises on bad input: a line that is not a statistic is reported in
``problems`` and skipped; a repeated name keeps its first value and is reported. A value
no 64-bit counter can hold (above 2^64-1: ethtool prints u64) is not a reading of a NIC:
it is left out and named in ``oversized`` (the name and the value's digit count), so the
commands refuse the paste with one line instead of failing on it (Python's int() refuses
strings of more than 4,300 digits, float() overflows near 309).
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADER = "NIC statistics:"
U64_MAX = (1 << 64) - 1
U64_DIGITS = len(str(U64_MAX))  # 20

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
    # statistics whose value exceeds 2^64-1: (name, its value's digit count), first 1-based
    oversized: tuple[tuple[str, int], ...] = ()

    def oversized_message(self, where: str) -> str | None:
        """One line naming the first value no 64-bit counter holds, None when all fit."""
        if not self.oversized:
            return None
        name, digits = self.oversized[0]
        more = f" (and {len(self.oversized) - 1} more)" if len(self.oversized) > 1 else ""
        return (f"{where}: {name} has a {digits:,}-digit value, more than a 64-bit counter "
                f"holds (2^64-1 = {U64_MAX:,}){more}: not an `ethtool -S` reading")


def _digits(text: str) -> str | None:
    text = text.strip()
    return text if text.isdecimal() and text.isascii() else None


def _fits(digits: str) -> bool:
    """Whether the decimal ``digits`` are at most 2^64-1, without converting a long string
    (int() of more than 4,300 digits raises)."""
    digits = digits.lstrip("0") or "0"
    return len(digits) < U64_DIGITS or (len(digits) == U64_DIGITS and int(digits) <= U64_MAX)


def parse(text: str) -> EthtoolStats:
    names: list[str] = []
    values: list[int] = []
    problems: list[Problem] = []
    info: dict[str, str] = {}
    first_line: dict[str, int] = {}
    oversized: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped == HEADER or stripped.startswith("#"):
            continue
        name, colon, rest = stripped.rpartition(":")
        name = name.strip()
        if not colon or not name:
            problems.append(Problem(number, line, "not a 'name: value' line"))
            continue
        digits = _digits(rest)
        if digits is not None and not _fits(digits):
            oversized.append((name, len(digits.lstrip("0"))))
            continue
        value = None if digits is None else int(digits)
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
    return EthtoolStats(tuple(names), tuple(values), tuple(problems), info, tuple(oversized))
