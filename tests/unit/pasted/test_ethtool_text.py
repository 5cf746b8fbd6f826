"""Parsing pasted `ethtool -S` output: the shapes people paste in bug reports."""

from hypothesis import given
from hypothesis import strategies as st

from nicwatch.pasted.ethtool_text import parse


def test_header_and_ethtool_indentation():
    r = parse("NIC statistics:\n     rx_packets: 10\n     tx_packets: 20\n")
    assert r.names == ("rx_packets", "tx_packets") and r.values == (10, 20)
    assert r.problems == ()


def test_any_indentation_tabs_and_crlf():
    r = parse("rx_a: 1\r\n\t\trx_b: 2\r\n  rx_c:3\r\n")
    assert r.names == ("rx_a", "rx_b", "rx_c") and r.values == (1, 2, 3)


def test_names_containing_colons_take_the_value_after_the_last_one():
    r = parse("     [0]: rx_discards: 7\n     rxq12: rx_drops_no_frags: 8\n")
    assert r.names == ("[0]: rx_discards", "rxq12: rx_drops_no_frags")
    assert r.values == (7, 8)


def test_trailing_spaces_in_names_are_dropped():
    # Old mlx5 registered "tx_pause_storm_warning_events " with a trailing space.
    r = parse("     tx_pause_storm_warning_events : 3\n")
    assert r.names == ("tx_pause_storm_warning_events",) and r.values == (3,)


def test_blank_lines_and_comments_are_skipped():
    r = parse("\n# pasted from host a\nNIC statistics:\n\n   \n     rx_x: 1\n\n")
    assert r.names == ("rx_x",) and r.problems == ()


def test_unparsable_lines_are_reported_not_fatal():
    text = "NIC statistics:\n rx_ok: 1\ngarbage line\n rx_neg: -1\n rx_hex: 0x10\n rx_none:\n" \
           ": 5\n rx_big: 18446744073709551615\n rx_arabic: ٣\n"
    r = parse(text)
    assert r.names == ("rx_ok", "rx_big") and r.values == (1, 2**64 - 1)
    assert [(p.line, p.reason) for p in r.problems] == [
        (3, "not a 'name: value' line"),
        (4, "value is not a non-negative integer"),
        (5, "value is not a non-negative integer"),
        (6, "value is not a non-negative integer"),
        (7, "not a 'name: value' line"),
        (9, "value is not a non-negative integer"),
    ]
    assert str(r.problems[0]) == "line 3: not a 'name: value' line: 'garbage line'"


def test_duplicates_keep_the_first_value_and_are_reported():
    r = parse(" rx_compl: 5\n rx_other: 1\n rx_compl: 9\n")
    assert dict(zip(r.names, r.values, strict=False)) == {"rx_compl": 5, "rx_other": 1}
    assert [(p.line, p.reason) for p in r.problems] == [
        (3, "duplicate of line 1, first value kept")]


def test_ethtool_i_lines_are_recognised():
    text = "driver: mlx5_core\nversion: 6.8.0\nfirmware-version: 28.39.1002 (MT_0000000838)\n" \
           "bus-info: 0000:01:00.0\nsupports-statistics: yes\nNIC statistics:\n rx_x: 1\n"
    r = parse(text)
    assert r.info["driver"] == "mlx5_core" and r.info["bus-info"] == "0000:01:00.0"
    assert r.names == ("rx_x",) and r.problems == ()


def test_empty_input():
    r = parse("")
    assert r.names == () and r.values == () and r.problems == ()


@given(st.text())
def test_arbitrary_text_never_raises_and_accounts_for_every_line(text):
    r = parse(text)
    assert len(r.names) == len(r.values) == len(set(r.names))
    assert all(v >= 0 for v in r.values)
    lines = text.splitlines()
    assert all(1 <= p.line <= len(lines) for p in r.problems)


@given(st.lists(st.tuples(st.from_regex(r"[a-z\[\]0-9_.:-]{0,12}[a-z][a-z_.]{0,12}",
                                        fullmatch=True),
                          st.integers(0, 2**64 - 1)), max_size=30),
       st.sampled_from(["", " ", "     ", "\t"]))
def test_round_trip_of_well_formed_output(stats, indent):
    text = "NIC statistics:\n" + "".join(f"{indent}{n}: {v}\n" for n, v in stats)
    r = parse(text)
    first = {}
    for n, v in stats:
        first.setdefault(n.strip(), v)
    assert dict(zip(r.names, r.values, strict=False)) == first
