"""User regexes are RE2 (values/regex.py): linear time whatever the pattern, RE2's syntax as
the contract, one clear error for a pattern RE2 refuses, and every place a user's pattern
is matched goes through it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from nicwatch.collect import Selection
from nicwatch.config import ConfigError, build
from nicwatch.consumers.checks import Selector
from nicwatch.consumers.incidents import parse_capture
from nicwatch.normalize.drivers import veth
from nicwatch.normalize.engine import RawOptions, compile_plan
from nicwatch.values import parse_regex
from nicwatch.values.regex import MAX_MEMO, Regex, compile_regex

EVIL = "(?:(?:[a-z0-9]*)*)*Z"  # the issue's pattern: exponential for a backtracking engine


def test_the_issues_pattern_matches_in_microseconds_everywhere_a_user_regex_goes():
    name = "a" * 15  # IFNAMSIZ - 1: the longest interface name
    stat = "rx_queue_0_" + "a" * 21  # ETH_GSTRING_LEN - 1
    t0 = time.perf_counter()
    assert not Selection(include=EVIL).selects(name, True)
    assert Selection(exclude=EVIL).selects(name, True)
    plan = compile_plan("ethtool", (), (stat, "rx_bytes"), veth.TABLE,
                        RawOptions(True, EVIL + "|rx_bytes"))
    assert [e.key.labels for e in plan.counters] == [(("stat", "rx_bytes"),)]
    cap = parse_capture({"capture": {"trigger": [{"event": "link_down", "device": EVIL}]}},
                        "t.toml")
    assert not cap.triggers[0].matches_device(name)
    assert time.perf_counter() - t0 < 0.5


def test_a_backtracking_engine_would_have_hung_on_it():
    """What the engine change is for: the same match under `re`, given 3 s, does not end."""
    code = f"import re; re.fullmatch({EVIL!r}, 'a' * 30)"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], timeout=3)
    code = f"from nicwatch.values.regex import Regex; print(Regex({EVIL!r}).fullmatch('a' * 30))"
    assert subprocess.run([sys.executable, "-c", code], timeout=30, capture_output=True,
                          text=True, check=True).stdout == "False\n"


@pytest.mark.parametrize("pattern, problem", [
    (r"(a)\1", "invalid escape sequence: \\1"),  # backreference
    (r"(?=eth)eth0", "invalid perl operator: (?="),  # lookahead
    (r"eth\Z", "invalid escape sequence: \\Z"),
    ("a{1001}", "invalid repetition size"),
    ("(unclosed", "missing )"),
])
def test_what_re2_refuses_is_one_line_naming_it(pattern, problem):
    with pytest.raises(ValueError) as e:
        parse_regex(pattern)
    assert problem in str(e.value) and "\n" not in str(e.value) and "RE2" in str(e.value)


def test_nul_length_and_type_are_refused():
    for bad, why in (("eth\0", "NUL"), ("a" * 4097, "longer than 4096"), (5, "string")):
        with pytest.raises(ValueError, match=why):
            parse_regex(bad)


def test_a_bad_pattern_is_one_line_and_nothing_on_stderr(tmp_path):
    """RE2 logs its own error line on stderr unless told not to: the user sees one line."""
    config = tmp_path / "c.toml"
    config.write_text('[interfaces]\ninclude = "(a)\\\\1"\n')
    r = subprocess.run([str(__import__("pathlib").Path(sys.executable).with_name("nicwatch")),
                        "show", f"--config={config}"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "interfaces.include" in lines[0] and "\\1" in lines[0], r.stderr


def test_re2_semantics_are_gos():
    assert Regex(r"eth\d+").fullmatch("eth12")
    # ASCII digits only, as Go's \d: ARABIC-INDIC DIGITs ONE and TWO are not
    assert not Regex(r"eth\d+").fullmatch("eth\u0661\u0662")
    assert Regex("ens.*").fullmatch("ens1f0") and not Regex("ens").fullmatch("ens1f0")
    assert Regex("(?i)ENS.*").fullmatch("ens1")
    assert Regex("(?P<x>e)th0").fullmatch("eth0")  # Python's and Go's named group
    assert Regex(".*").fullmatch("e\udcffh0") in (True, False)  # not UTF-8: never raises


def test_answers_are_remembered_within_a_bound():
    r = compile_regex("x.*")
    for i in range(MAX_MEMO + 10):
        assert r.fullmatch(f"x{i}")
    assert len(r._memo) <= MAX_MEMO
    assert Regex("a") == Regex("a") and hash(Regex("a")) == hash(Regex("a"))


def test_config_and_expectations_refuse_what_re2_refuses(tmp_path):
    with pytest.raises(ConfigError, match=r"interfaces\.include"):
        build(None, {"interfaces.include": r"(a)\1"})
    with pytest.raises(ValueError, match="invalid perl operator"):
        Selector(interfaces="(?!eth)")
    config = tmp_path / "c.toml"
    config.write_text('[[capture.trigger]]\nevent = "link_down"\ndevice = "a\\u0000"\n')
    with pytest.raises(ConfigError, match="NUL"):
        build(str(config), {})
