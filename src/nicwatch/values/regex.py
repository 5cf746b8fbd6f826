"""User-supplied regular expressions: RE2 syntax, matched in linear time.

Every regular expression an operator writes (``--interfaces.include``/``exclude``,
``--collector.raw.include``/``exclude``, the ``interfaces``/``driver``/``pci_address`` of
an expectation, the ``device`` of a capture trigger) is checked by :func:`parse_regex` and
compiled by :func:`compile_regex`, both here, with Google's RE2 (the engine behind Go's
``regexp`` that Prometheus relabelling uses). RE2 never backtracks: matching takes time
linear in the text, so no pattern can pin a core (``(?:(?:[a-z0-9]*)*)*Z`` against a name
takes microseconds). The price is RE2's syntax: no backreferences (``\\1``), no lookaround
(``(?=``, ``(?!``, ``(?<=``), no possessive quantifiers, ``\\z`` rather than ``\\Z``,
counted repetition up to 1,000; ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII, as in Go.
A pattern matches the whole name (as Prometheus anchors relabel regexes).

Measured on the project's VM (``benchmarks/regex.py``): compiling costs 9-18 us (``re``:
80-150 us uncached); one full match of a statistic name 1.4 us against ``re``'s 0.15-0.19
us, so a :class:`Regex` remembers its answers for the names it has seen (interface and
statistic names repeat every poll).
"""

from __future__ import annotations

from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no annotations

MAX_PATTERN = 4096  # characters (also values.MAX_STRING)
MAX_MEMO = 4096  # names whose answer a Regex remembers; past that it forgets them all
# RE2's own memory budget for one compiled pattern (its default, 8 MiB): a pattern that needs
# more is refused when it is compiled, never matched slowly.
MAX_MEMORY = 8 << 20


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr for a bad pattern
    options.max_mem = MAX_MEMORY
    return options


def _message(e: Exception) -> str:
    detail = e.args[0] if e.args else e
    return detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 80 else repr(value[:80]) + "..."


def parse_regex(value: Any) -> str:
    """``value`` if it is a regular expression RE2 compiles (a string of at most
    MAX_PATTERN characters, no NUL); ValueError naming the problem otherwise."""
    return compile_regex(value).pattern


def compile_regex(value: Any) -> Regex:
    """The compiled form of a user's regular expression (ValueError when it is none)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a regular expression string, got {value!r:.80}")
    if len(value) > MAX_PATTERN:
        raise ValueError(f"regular expression longer than {MAX_PATTERN} characters")
    if "\0" in value:
        raise ValueError(f"regular expression with a NUL character: {_shown(value)}")
    return Regex(value)


class Regex:
    """One pattern in RE2 syntax, matched against whole strings. Equal to another Regex
    of the same pattern. ``fullmatch`` may be called from any thread."""

    __slots__ = ("_memo", "_set", "pattern")

    def __init__(self, pattern: str) -> None:
        options = _options()
        try:
            re2.compile(pattern, options)  # the error message, which a Set does not give
        except re2.error as e:
            raise ValueError(f"bad regular expression {_shown(pattern)}: {_message(e)} "
                             "(RE2 syntax, docs/failure-behaviour.md)") from None
        matcher = re2.Set.FullMatchSet(options)
        matcher.Add(pattern)
        matcher.Compile()
        self.pattern = pattern
        self._set = matcher
        self._memo: dict[str, bool] = {}

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches."""
        hit = self._memo.get(text)
        if hit is None:
            try:
                hit = self._set.Match(text) is not None
            except UnicodeEncodeError:  # a lone surrogate (a name that was not UTF-8)
                hit = self._set.Match(text.encode("utf-8", "surrogateescape")) is not None
            if len(self._memo) >= MAX_MEMO:
                self._memo.clear()
            self._memo[text] = hit
        return hit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Regex) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"
