"""Durations and sizes: Go's time.ParseDuration and Prometheus' model.ParseDuration rules
(cases from their documentation and test tables), one parser used by every flag, TOML key,
web config key and `history --since`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nicwatch.config import build
from nicwatch.values.units import (
    MAX_NS,
    duration_ns,
    format_duration,
    format_size,
    go_duration,
    parse_duration,
    parse_size,
    prometheus_duration,
)

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
S, MS, US, H, D = 10**9, 10**6, 10**3, 3600 * 10**9, 86400 * 10**9


@pytest.mark.parametrize("text, ns", [  # Go's time_test.go parseDurationTests, in part
    ("0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S), ("-5s", -5 * S),
    ("+5s", 5 * S), ("-0", 0), ("+0", 0), ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS),
    ("5.s", 5 * S), (".5s", 500 * MS), ("1.0s", S), ("1.00s", S), ("1.004s", S + 4 * MS),
    ("100.00100s", 100 * S + MS), ("10ns", 10), ("11us", 11 * US), ("12µs", 12 * US),
    ("12μs", 12 * US), ("13ms", 13 * MS), ("14s", 14 * S), ("15m", 15 * 60 * S),
    ("16h", 16 * H), ("3h30m", 3 * H + 30 * 60 * S), ("10.5s4m", 4 * 60 * S + 10500 * MS),
    ("-2m3.4s", -(2 * 60 * S + 3400 * MS)), ("1h2m3s4ms5us6ns", H + 2 * 60 * S + 3 * S
                                                                + 4 * MS + 5 * US + 6),
    ("39h9m14.425s", 39 * H + 9 * 60 * S + 14425 * MS), ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * 60 * S), ("9007199254740993ns", 2**53 + 1),
    ("9223372036854775807ns", MAX_NS), ("9223372036.854775807s", MAX_NS),
    ("-9223372036854775808ns", -(1 << 63)), ("0.100000000000000000000h", 6 * 60 * S),
    ("1s1s", 2 * S),
])
def test_go_duration(text, ns):
    assert go_duration(text) == ns


@pytest.mark.parametrize("text", ["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "3000000h",
                                  "9223372036854775808ns", "9223372036854775.808us",
                                  "1 s", " 1s", "1s ", "1.5.5s", "1sec", "\u0661s"])
def test_go_duration_refuses(text):
    with pytest.raises(ValueError):
        go_duration(text)


@pytest.mark.parametrize("text, ns", [  # prometheus/common model/time_test.go, in part
    ("0", 0), ("0w", 0), ("0s", 0), ("324ms", 324 * MS), ("3s", 3 * S), ("5m", 300 * S),
    ("1h", H), ("4d", 4 * D), ("4d1h", 4 * D + H), ("14d", 14 * D), ("3w", 21 * D),
    ("3w2d1h", 23 * D + H), ("10y", 3650 * D), ("1y1w1d1h1m1s1ms", 373 * D + H + 61 * S + MS),
])
def test_prometheus_duration(text, ns):
    assert prometheus_duration(text) == ns


@pytest.mark.parametrize("text", ["", "1", "1.5h", "1h1d", "1s1s", "-1s", "1us", "1 d", "d",
                                  "300y"])
def test_prometheus_duration_refuses(text):
    with pytest.raises(ValueError):
        prometheus_duration(text)


@pytest.mark.parametrize("text, seconds", [
    ("1m30s", 90), ("2d", 172800), ("1w", 604800), ("1y", 31536000), ("100ms", 0.1),
    ("100us", 1e-4), ("100µs", 1e-4), ("1.5h", 5400), ("5", 5), ("0.2", 0.2), (5, 5),
    (0.25, 0.25),
])
def test_settings_accept_either_grammar_and_bare_seconds(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("value, needle", [
    ("0", "positive"), ("0s", "positive"), (0, "positive"), ("-1s", "negative"),
    ("1.5d", "expected a duration"), ("1h1d", "expected a duration"), ("5 parsecs", "5 parsecs"),
    (float("nan"), "finite"), (float("inf"), "finite"), (True, "expected a duration"),
    ("300y", "out of range"), ("", "expected a duration"),
])
def test_settings_refuse(value, needle):
    with pytest.raises(ValueError, match=needle):
        parse_duration(value)


@given(st.integers(min_value=0, max_value=MAX_NS))
def test_format_then_parse_round_trips(ns):
    text = format_duration(ns)
    assert duration_ns(text, bare_seconds=False) == ns


@given(st.integers(min_value=0, max_value=MAX_NS // MS))
def test_whole_milliseconds_format_like_prometheus(ms):
    text = format_duration(ms * MS)
    assert prometheus_duration(text) == ms * MS if text != "0s" else True


@given(st.text(alphabet="0123456789.+-hmsunµμdwy", max_size=12))
def test_grammars_never_crash_and_agree_where_they_overlap(text):
    results = []
    for grammar in (go_duration, prometheus_duration):
        try:
            results.append(grammar(text))
        except ValueError:
            results.append(None)
    go, prom = results
    if go is not None and prom is not None:
        assert go == prom


@pytest.mark.parametrize("text, size", [
    ("64MiB", 64 << 20), ("1.5GiB", 3 << 29), ("500KB", 500_000), ("500kB", 500_000),
    ("1GB", 10**9), ("2TiB", 2 << 40), ("4096", 4096), ("4096B", 4096), (1024, 1024),
    ("0.5KiB", 512),
])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "0B", "-1", "1.5", "1 MiB", "1mib", "1Mi", "MiB",
                                  "1e3", True, 1.5])
def test_sizes_refuse(text):
    with pytest.raises(ValueError):
        parse_size(text)


@given(st.integers(min_value=1, max_value=1 << 50))
def test_size_round_trips(size):
    assert parse_size(format_size(size)) == size


def test_every_duration_setting_takes_go_and_prometheus_spellings(tmp_path):
    f = tmp_path / "n.toml"
    f.write_text('interval = "1m30s"\n[history]\nwindow = "1d"\nmax_bytes = "1.5GiB"\n'
                 '[rates]\npeak_window = "2m"\n')
    c = build(str(f), {"interval": "100ms"})
    assert (c.interval, c.history_window, c.history_max_bytes, c.rates_peak_window) == (
        0.1, 86400.0, 3 << 29, 120.0)


def test_bad_duration_flag_is_one_line_exit_2():
    r = subprocess.run([NICWATCH, "serve", "--history.window", "1.5d"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "--history.window" in r.stderr and "'1.5d'" in r.stderr


def test_history_since_takes_both_grammars_and_epoch_seconds():
    from nicwatch.consumers.history import parse_since
    now = 2_000_000_000.0
    assert parse_since("1h30m", now) == now - 5400
    assert parse_since("2d", now) == now - 172800
    assert parse_since("100ms", now) == pytest.approx(now - 0.1)
    assert parse_since("0", now) == 0.0  # a bare number is epoch seconds, "0" included
    for bad in ("10q", "1.2.3", "nan", "inf", "1.5d"):
        with pytest.raises(ValueError, match="since"):
            parse_since(bad, now)
