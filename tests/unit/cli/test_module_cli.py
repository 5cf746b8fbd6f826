"""`nicwatch module decode` on the real dumps of tests/fixtures/module: the text layout of
`ethtool -m DEV hex on` (flat ioctl dumps, per-page netlink blocks under their command line),
partial dumps, --table, and bad input (one line, exit 2; a dump with nothing decodable: 1)."""

from __future__ import annotations

import json
import math
import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.cli.main import main as nicwatch
from nicwatch.normalize.module import decode
from nicwatch.normalize.module.hexdump import DumpError, parse

from hostd import NICWATCH
from paths import FIXTURES

MODULE = FIXTURES / "module"
DR8 = MODULE / "osfp-800g-dr8-juniper.txt"


def run(capsys, *argv: str, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        import io
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status = nicwatch(["module", "decode", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def series(rows) -> dict[tuple, float]:
    return {(r["metric"], tuple(sorted(r["labels"].items()))): r["value"] for r in rows}


def test_json_is_the_decoders_values(capsys):
    status, out, err = run(capsys, str(DR8))
    assert status == 0 and err == ""
    rows = json.loads(out)
    expected = decode(parse(DR8.read_text()).eeprom)
    assert rows == [{"metric": v.metric, "labels": v.labels, "value": v.value} for v in expected]
    got = series(rows)
    assert got[("nic_module_rx_power_watts", (("lane", "1"),))] == 0x4232 / 10_000_000
    assert len([r for r in rows if r["metric"] == "nic_module_tx_bias_amperes"]) == 8


def test_standard_input(capsys, monkeypatch):
    text = (MODULE / "sfp-oem-10g-lr-go-ethtool.txt").read_text()
    status, out, _ = run(capsys, stdin=text, monkeypatch=monkeypatch)
    assert status == 0
    assert series(json.loads(out))[("nic_module_tx_bias_amperes", (("lane", "1"),))] == (
        0x464D * 2 / 1_000_000)


def test_table_for_people(capsys):
    status, out, err = run(capsys, str(DR8), "--table")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["METRIC", "LABELS", "VALUE"]
    # 0x4232 x 0.1 uW = 1.6946 mW = 2.29 dBm
    assert any(re.fullmatch(r"nic_module_rx_power_watts\s+lane=1\s+0\.0016946\s+"
                            r"1\.6946 mW \(2\.29 dBm\)", line) for line in lines), out
    assert any("nic_module_temperature_celsius" in line and "57.93 C" in line for line in lines)


def test_the_source_printout_holds_the_same_bytes():
    """The CMIS fixtures were laid out from a switch's printout (*.source.txt): both give
    the same bytes for every page."""
    for name in ("osfp-800g-dr8-juniper", "osfp-800g-aec-credo"):
        pages, current = {}, None
        for line in (MODULE / f"{name}.source.txt").read_text().splitlines():
            header = re.match(r"\s*(?:QSFP-DD )?(Lower Page|Upper Page ([0-9a-f]+)h):", line)
            if header:
                current = -1 if header.group(1) == "Lower Page" else int(header.group(2), 16)
                pages[current] = b""
                continue
            row = re.match(r"\s*0x[0-9a-f]{2}:((?: ?[0-9a-f]{2}){16})\s*$", line)
            if row and current is not None:
                pages[current] += bytes.fromhex(row.group(1))
        e = parse((MODULE / f"{name}.txt").read_text()).eeprom
        assert e.lower[0x50] == pages.pop(-1)
        pages.pop(3, None)  # printed by the switch; a kernel's flat dump stops at page 02h
        assert {k[2]: v for k, v in e.upper.items()} == pages


def test_only_the_lower_half(capsys, tmp_path):
    """A dump of only bytes 0x00-0x7f (ethtool -m DEV length 128 hex on): identity from the
    lower page and the module monitors, nothing from pages it lacks."""
    lines = DR8.read_text().splitlines()
    first = [line for line in lines if re.match(r"0x00[0-7]0:", line)]
    f = tmp_path / "lower.txt"
    f.write_text("Offset\t\tValues\n------\t\t------\n" + "\n".join(first) + "\n")
    status, out, err = run(capsys, str(f))
    assert status == 0 and err == ""
    metrics = {r["metric"] for r in json.loads(out)}
    assert metrics == {"nic_module_info", "nic_module_temperature_celsius",
                       "nic_module_supply_voltage_volts", "nic_module_flag"}


def test_per_page_blocks_under_their_command_lines(capsys, tmp_path):
    """netlink dumps: `ethtool -m DEV page 0x11 hex on` prints offsets 0x80-0xff with no page
    header; the command line (or a `# page` comment) before the block places it."""
    text = DR8.read_text()
    flat, _, pages = text.partition("$ ethtool -m eth0 page 0x10 hex on")
    page11 = pages.partition("$ ethtool -m eth0 page 0x11 hex on")[2]
    rows = [line for line in flat.splitlines() if re.match(r"0x0(0|1)[0-9a-f]0:", line)]
    lower, page0, page1 = rows[:8], rows[8:16], rows[16:24]
    # page 01h, flat at 0x100-0x17f, as `page 0x01` prints it: at 0x80-0xff
    shift = [f"0x{int(line[2:6], 16) - 0x80:04x}{line[6:]}" for line in page1]
    f = tmp_path / "paged.txt"
    f.write_text("\n".join([
        "$ ethtool -m swp1 hex on offset 0 length 256", *lower, *page0,
        "# page 0x01", "Offset\t\tValues", "------\t\t------", *shift,
        "$ sudo ethtool -m swp1 page 0x11 bank 0 hex on", page11.strip()]) + "\n")
    status, out, err = run(capsys, str(f))
    assert status == 0 and err == ""
    got = series(json.loads(out))
    want = {k: v for k, v in series(
        {"metric": v.metric, "labels": v.labels, "value": v.value}
        for v in decode(parse(text).eeprom)).items()
        if not k[0].endswith("threshold_celsius") and "threshold" not in k[0]}
    assert {k: v for k, v in got.items() if "threshold" not in k[0]} == want
    assert not any("threshold" in k[0] for k in got)  # page 02h was not in this dump


def test_bytes_it_cannot_place_are_named_on_stderr(capsys, tmp_path):
    f = tmp_path / "long.txt"
    f.write_text(DR8.read_text().split("$ ethtool -m eth0 page 0x10")[0]
                 + "0x0200:\t\t" + "00 " * 16 + "\n")
    status, out, err = run(capsys, str(f))
    assert status == 0 and json.loads(out)
    assert err.count("\n") == 1 and "0x0200-0x020f ignored" in err and "page N" in err


@pytest.mark.parametrize("text, needle", [
    ("", "no `0xOFFSET: hh hh ...` rows"),
    ("Offset\t\tValues\n------\t\t------\n", "no `0xOFFSET"),
    ("Identifier : 0x03 (SFP)\n", "line 1: not an `ethtool -m ... hex on` row"),
    ("0x0000:\t\t03 04 zz 10\n", "line 1: 'zz' is not a hex byte"),
    ("0x0000:\t\t03 04 107 10\n", "'107' is not a hex byte"),
    ("0xffffff:\t\t03\n", "beyond any module map"),
    ("\x00\xff\xfe garbage\n", "line 1"),
])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, text, needle):
    f = tmp_path / "bad.txt"
    f.write_text(text, errors="surrogateescape")
    status, out, err = run(capsys, str(f))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err


def test_nothing_decodable_is_exit_1(capsys, tmp_path):
    xfp = tmp_path / "xfp.txt"
    xfp.write_text("0x0000:\t\t06 " + "00 " * 15 + "\n")
    status, out, err = run(capsys, str(xfp))
    assert status == 1 and out == "" and err.count("\n") == 1
    assert "identifier 0x06 (0x06) is not one nicwatch decodes" in err
    upper_only = tmp_path / "upper.txt"
    upper_only.write_text("# page 0x11\n0x0080:\t\t44 44 44 44\n")
    status, out, err = run(capsys, str(upper_only))
    assert status == 1 and "no lower page of i2c address 0x50" in err


def test_unreadable_file_and_usage(capsys):
    status, _, err = run(capsys, "/nonexistent/dump.txt")
    assert status == 2 and "cannot read /nonexistent/dump.txt" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as e:
        nicwatch(["module"])
    assert e.value.code == 2


def test_console_script_and_closed_pipe():
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {NICWATCH} module decode '{DR8}' "
                        "--table | head -1"], capture_output=True, text=True, timeout=60)
    assert r.stderr == "" and r.stdout.startswith("METRIC") and r.returncode in (0, 141)
    p = subprocess.Popen([NICWATCH, "module", "decode", str(DR8)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()
    assert p.stderr.read() == b"" and p.wait(timeout=60) == 141


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_is_a_dump_or_one_clear_error(text):
    try:
        dump = parse(text)
    except DumpError as e:
        assert "\n" not in str(e) and str(e)
    else:
        decode(dump.eeprom)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 0x2ff), st.binary(min_size=1, max_size=16)),
                min_size=1, max_size=40),
       st.sampled_from(["", "# page 0x11\n", "$ ethtool -m x i2c 0x51 hex on\n",
                        "$ ethtool -m x page 3 bank 1 hex on\n"]),
       st.sampled_from([0x03, 0x11, 0x18, 0x19, 0x0d]))
def test_random_rows_place_and_decode_without_error(rows, header, identifier):
    text = f"0x0000:\t\t{identifier:02x}\n" + header + "".join(
        f"0x{offset:04x}:\t\t{' '.join(f'{b:02x}' for b in data)}\n" for offset, data in rows)
    dump = parse(text)
    for half in (*dump.eeprom.lower.values(), *dump.eeprom.upper.values()):
        assert 0 < len(half) <= 128
    for v in decode(dump.eeprom):
        assert math.isfinite(v.value)
