"""The ``[[expect]]`` and ``[[consistent]]`` sections of the configuration file, parsed
into :class:`Expectations` (ConfigError naming the file and the key)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nicwatch.config import Config, Section, register_section
from nicwatch.consumers.checks.properties import CHECKS, PROPERTIES
from nicwatch.consumers.checks.values import MAX
from nicwatch.model import Sample
from nicwatch.values import ConfigError, did_you_mean, parse_regex
from nicwatch.values.regex import Regex, compile_regex

SECTIONS = ("expect", "consistent")
SELECTOR_KEYS = ("interfaces", "driver", "pci_address", "all")


@dataclass(frozen=True, slots=True)
class Selector:
    """Which interfaces a section applies to; every given criterion must match."""

    interfaces: str | None = None
    driver: str | None = None
    pci_address: str | None = None
    all: bool = False
    # the three patterns compiled once, RE2 (values.regex)
    _compiled: tuple[Regex | None, ...] = field(default=(), init=False, compare=False,
                                                repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(
            None if p is None else compile_regex(p)
            for p in (self.interfaces, self.driver, self.pci_address)))

    def selects(self, sample: Sample) -> bool:
        ident = sample.identity
        for regex, value in zip(self._compiled, (ident.device, ident.driver, ident.pci_address),
                                strict=True):
            if regex is not None and (value is None or not regex.fullmatch(value)):
                return False
        return not self.all or sample.netclass.device_path is not None

    def describe(self) -> str:
        parts = [f"{k} = {getattr(self, k)!r}" for k in SELECTOR_KEYS[:3]
                 if getattr(self, k) is not None]
        return ", ".join(parts + (["all = true"] if self.all else []))

    def as_table(self) -> dict[str, Any]:
        table: dict[str, Any] = {k: getattr(self, k) for k in SELECTOR_KEYS[:3]
                                 if getattr(self, k) is not None}
        if self.all:
            table["all"] = True
        return table


@dataclass(frozen=True, slots=True)
class Expect:
    """One ``[[expect]]`` table: ``wanted`` holds (property, value or MAX) in CHECKS order."""

    key: str  # "expect[1]"
    selector: Selector
    wanted: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Consistent:
    """One ``[[consistent]]`` table: ``checks`` are property names."""

    key: str  # "consistent[1]"
    group: str | None
    selector: Selector
    checks: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.key} ({self.group})" if self.group else self.key


@dataclass(frozen=True, slots=True)
class Expectations:
    path: str = ""
    expects: tuple[Expect, ...] = ()
    groups: tuple[Consistent, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.expects or self.groups)

    def as_table(self) -> dict[str, list[dict[str, Any]]]:
        """The TOML tables these expectations were parsed from, in canonical form."""
        table: dict[str, list[dict[str, Any]]] = {}
        if self.expects:
            table["expect"] = [
                {**e.selector.as_table(),
                 **{name: v if v == MAX else PROPERTIES[name].table(v) for name, v in e.wanted}}
                for e in self.expects]
        if self.groups:
            table["consistent"] = [
                {**({"group": g.group} if g.group else {}), **g.selector.as_table(),
                 "checks": list(g.checks)} for g in self.groups]
        return table


# --------------------------------------------------------------------------- parsing


def _fail(path: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: key {key!r}: {message}")


def _unknown(path: str, key: str, name: str, known: Sequence[str]) -> ConfigError:
    close = did_you_mean(name, known)
    hint = f"did you mean {close!r}? " if close else ""
    return _fail(path, key, f"unknown key ({hint}known: {', '.join(known)})")


def _tables(data: Mapping[str, Any], section: str, path: str) -> list[dict[str, Any]]:
    tables = data.get(section, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise _fail(path, section, f"expected an array of tables ([[{section}]]), "
                                   f"got {type(tables).__name__}")
    return tables


def _selector(table: dict[str, Any], key: str, path: str) -> Selector:
    values: dict[str, Any] = {}
    for name in SELECTOR_KEYS[:3]:
        if name in table:
            try:
                values[name] = parse_regex(table[name])
            except ValueError as e:
                raise _fail(path, f"{key}.{name}", str(e)) from None
    if "all" in table:
        if table["all"] is not True:
            raise _fail(path, f"{key}.all", f"expected true (leave it out otherwise), "
                                            f"got {table['all']!r}")
        values["all"] = True
    if not values:
        raise _fail(path, key, "no selector: set interfaces, driver, pci_address or all = true")
    return Selector(**values)


def _expect(table: dict[str, Any], key: str, path: str) -> Expect:
    known = (*SELECTOR_KEYS, *CHECKS)
    for name in table:
        if name not in known:
            raise _unknown(path, f"{key}.{name}", name, known)
    selector = _selector(table, key, path)
    wanted = []
    for name in CHECKS:
        if name in table:
            try:
                wanted.append((name, PROPERTIES[name].parse(table[name])))
            except ValueError as e:
                raise _fail(path, f"{key}.{name}", str(e)) from None
    if not wanted:
        raise _fail(path, key, f"no property to check: set at least one of {', '.join(CHECKS)}")
    return Expect(key, selector, tuple(wanted))


def _consistent(table: dict[str, Any], key: str, path: str) -> Consistent:
    known = ("group", *SELECTOR_KEYS, "checks")
    for name in table:
        if name not in known:
            raise _unknown(path, f"{key}.{name}", name, known)
    group = table.get("group")
    if group is not None and (not isinstance(group, str) or not group):
        raise _fail(path, f"{key}.group", f"expected a non-empty name, got {group!r}")
    checks = table.get("checks")
    if (not isinstance(checks, list) or not checks or len(set(checks)) != len(checks)
            or not all(isinstance(c, str) and c in PROPERTIES for c in checks)):
        raise _fail(path, f"{key}.checks", "expected a list of properties that must be equal "
                    f"across the group ({', '.join(CHECKS)}), each once; got {checks!r}")
    return Consistent(key, group, _selector(table, key, path), tuple(checks))


def parse_expectations(data: Mapping[str, Any], path: str) -> Expectations:
    """The ``[[expect]]`` and ``[[consistent]]`` tables of a parsed TOML document (other
    keys are left to nicwatch.config). Raises ConfigError naming ``path`` and the key."""
    expects = tuple(_expect(t, f"expect[{i}]", path)
                    for i, t in enumerate(_tables(data, "expect", path), 1))
    groups = tuple(_consistent(t, f"consistent[{i}]", path)
                   for i, t in enumerate(_tables(data, "consistent", path), 1))
    return Expectations(path, expects, groups)


# The section's owner declares it; nicwatch.config parses the file through it.
SECTION = Section("expectations", SECTIONS, parse_expectations, Expectations)
register_section(SECTION)


def expectations_of(config: Config) -> Expectations:
    """The expectations of a configuration (none without a file)."""
    expectations: Expectations = config.section(SECTION.name)
    return expectations
