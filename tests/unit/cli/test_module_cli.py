"""`nicwatch module decode` on the real dumps of tests/fixtures/module: the text layout of
`ethtool -m DEV hex on` (flat ioctl dumps, per-page netlink blocks under their command line),
`hexdump -C`/`xxd` of `ethtool -m raw on` bytes, SONiC sfputil and the raw bytes themselves,
partial dumps, --table (a summary first), corrupt dumps (exit 1 naming the checksum) and bad
input (one line, exit 2, bounded memory; a dump with nothing decodable: 1)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.cli.main import main as nicwatch
from nicwatch.normalize.module import decode
from nicwatch.normalize.module.hexdump import DumpError, parse

from fixture_vdm import vdm_pages
from hostd import NICWATCH
from paths import FIXTURES

MODULE = FIXTURES / "module"
DR8 = MODULE / "osfp-800g-dr8-juniper.txt"


def run(capsys, *argv: str, stdin: str | bytes | None = None, monkeypatch=None):
    if stdin is not None:
        import io
        data = stdin.encode() if isinstance(stdin, str) else stdin
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
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
    assert got[("nic_module_rx_power_watts", (("lane", "1"), ("type", "average")))] == (
        0x4232 / 10_000_000)
    assert len([r for r in rows if r["metric"] == "nic_module_tx_bias_amperes"]) == 8


def test_standard_input(capsys, monkeypatch):
    text = (MODULE / "sfp-oem-10g-lr-go-ethtool.txt").read_text()
    status, out, _ = run(capsys, stdin=text, monkeypatch=monkeypatch)
    assert status == 0
    assert series(json.loads(out))[("nic_module_tx_bias_amperes", (("lane", "1"),))] == (
        0x464D * 2 / 1_000_000)


def test_table_opens_with_a_summary(capsys):
    """--table: module, state, flags set and the weakest lane against its threshold first,
    then one row per lane and one per thresholded quantity, not 192 rows of mostly `clear`."""
    status, out, err = run(capsys, str(DR8), "--table")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == ("module       OSFP JUNIPER-1G1 740-174932, serial 1G1TK1AA350AZ, rev 01, "
                        "firmware 0.13, CMIS 5.1")
    assert lines[1] == ("state        ok (checksums page_00h, page_01h, page_02h valid); module "
                        "state ready")
    assert lines[2] == "flags set    none"
    # Page 11h rx power 186-201: the weakest is lane 7, 0x29d3 x 0.1 uW = 1.0707 mW (0.30
    # dBm), against the page 02h low warning 0x071b = 0.1819 mW (-7.40 dBm): 7.7 dB above it.
    assert lines[3] == ("weakest      rx lane 7: 1.0707 mW (0.30 dBm), average; 7.7 dB above its "
                        "low warning 0.1819 mW (-7.40 dBm)")
    assert lines[4].startswith("temperature  57.93 C (high warning 73.00 C)")
    assert len(lines) < 30
    lane1 = next(line for line in lines if line.startswith("1 "))
    assert lane1.split()[:4] == ["1", "activated", "1.6946", "mW"]
    assert any(line.startswith("rx_power") and "0.1819 mW (-7.40 dBm)" in line for line in lines)
    status, every, _ = run(capsys, str(DR8), "--table", "--all")
    rows = every.splitlines()
    assert rows[0].split() == ["METRIC", "LABELS", "VALUE"] and len(rows) > 150
    assert any(re.fullmatch(r"nic_module_rx_power_watts\s+lane=1,type=average\s+0\.0016946\s+"
                            r"1\.6946 mW \(2\.29 dBm\)", line) for line in rows), every


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
                       "nic_module_supply_voltage_volts", "nic_module_flag", "nic_module_state",
                       "nic_module_firmware_info"}  # the active image: lower bytes 39-40


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
        if "threshold" not in k[0] and k != ("nic_module_checksum_valid",
                                             (("checksum", "page_02h"),))}
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
    ("", "no rows of bytes"),
    ("Offset\t\tValues\n------\t\t------\n", "no rows of bytes"),
    ("Identifier : 0x03 (SFP)\n", "line 1: not a row of a module EEPROM dump"),
    ("0x0000:\t\t03 04 zz 10\n", "line 1: 'zz' is not a hex byte"),
    ("0x0000:\t\t03 04 107 10\n", "'107' is not a hex byte"),
    ("0xffffff:\t\t03\n", "beyond any module map"),
    ("0x" + "f" * 5000 + ":\t\t03\n", "beyond any module map"),
    ("\x01\xff\xfe garbage\n" * 9000, "more than a module EEPROM dump holds"),
    ("# page 08\n0x0080:\t\t00\n", "line 1: page '08': a leading 0 is ambiguous"),
    ("$ ethtool -m eth0 page 09 hex on\n0x0080:\t\t00\n", "page '09'"),
    ("# page 0x11 bank 010\n0x0080:\t\t00\n", "bank '010'"),
    ("# page " + "7" * 5000 + "\n0x0080:\t\t00\n", "is not a page number"),
])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, text, needle):
    f = tmp_path / "bad.txt"
    f.write_text(text, errors="surrogateescape")
    status, out, err = run(capsys, str(f))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err
    assert len(err) < 300


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
    assert r.stderr == "" and r.stdout.startswith("module ") and r.returncode in (0, 141)
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


# --- other layouts, corrupt dumps, bounded input ----------------------------------------------

FINISAR = MODULE / "sfp28-finisar-ftlf8536p4bcl-netdev.bin"


@pytest.mark.parametrize("name", ["sfp28-finisar-ftlf8536p4bcl-netdev.bin",
                                  "sfp28-finisar-ftlf8536p4bcl-netdev.hexdump.txt",
                                  "sfp28-finisar-ftlf8536p4bcl.xxd.txt"])
def test_raw_bytes_hexdump_and_xxd_decode_alike(capsys, name):
    status, out, err = run(capsys, str(MODULE / name))
    assert status == 0 and err == ""
    got = series(json.loads(out))
    assert got[("nic_module_rx_power_watts", (("lane", "1"), ("type", "average")))] == (
        0x0AC6 / 10_000_000)
    assert got[("nic_module_checksum_valid", (("checksum", "cc_dmi"),))] == 1


def test_raw_bytes_on_standard_input(capsys, monkeypatch):
    """`ethtool -m eth0 raw on | nicwatch module decode`: binary, recognised as such."""
    status, out, _ = run(capsys, stdin=FINISAR.read_bytes(), monkeypatch=monkeypatch)
    assert status == 0 and json.loads(out)
    # --raw takes even printable bytes as bytes: an identifier 03 and spaces fail both A0h sums.
    status, out, err = run(capsys, "--raw", stdin=b"\x03" + b" " * 200, monkeypatch=monkeypatch)
    assert status == 1 and "CC_BASE (A0h byte 63, over bytes 0-62) is 0x20" in err
    assert "CC_EXT (A0h byte 95, over bytes 64-94) is 0x20" in err


def test_sfputil_dump_decodes_and_warns_of_the_lower_page_read_twice(capsys):
    status, out, err = run(capsys, str(MODULE / "qsfp-cmis-hisense-aoc-sonic.sfputil.txt"),
                           "--table")
    assert status == 0
    assert err.strip() == ("nicwatch module decode: warning: the lower half of i2c 0x50 is given "
                           "twice with different bytes (read at different times?): the last "
                           "one is decoded")
    assert out.startswith("module       QSFP (CMIS) Hisense DEF8504-2C02-MB3")


def test_a_corrupt_dump_names_its_checksum_and_exits_1(capsys, tmp_path):
    """One byte of the vendor name flipped (0x4f 'O' -> 0x4e 'N' in the OEM SFP): CC_BASE no
    longer matches; no identity is decoded, and the exit status says so."""
    text = (MODULE / "sfp-oem-10g-lr-go-ethtool.txt").read_text()
    assert "0x0010:\t\t00 00 00 00 4f 45 4d 20" in text
    bad = tmp_path / "bad.txt"
    bad.write_text(text.replace("0x0010:\t\t00 00 00 00 4f 45 4d 20",
                                "0x0010:\t\t00 00 00 00 4e 45 4d 20"))
    status, out, err = run(capsys, str(bad))
    assert status == 1 and err.count("\n") == 1
    assert ("module EEPROM corrupt: CC_BASE (A0h byte 63, over bytes 0-62) is 0x4f, the bytes "
            "sum to 0x4e") in err
    got = series(json.loads(out))
    assert got[("nic_module_checksum_valid", (("checksum", "cc_base"),))] == 0
    assert not any(k[0] == "nic_module_info" for k in got)
    status, out, err = run(capsys, str(bad), "--table")
    assert status == 1 and re.search(r"^state\s+corrupt: cc_base fail$", out, re.M), out
    assert re.match(r"module\s+unknown \(its identity page is corrupt", out)


def test_eighty_megabytes_on_standard_input_cost_little(tmp_path):
    """80 MB on standard input took 2 GB before; reading stops past 4 MiB: exit 2, one line,
    and the process stays far below the input's size.

    The peak is measured through a small launcher: a child's ru_maxrss includes the peak of
    the process it was forked from (the kernel keeps the old image's high-water mark across
    exec), and pytest's own process grows past 100 MB over a whole run."""
    launcher = ("import os, subprocess, sys\n"
                "p = subprocess.Popen(sys.argv[2:])\n"
                "_, status, usage = os.wait4(p.pid, 0)\n"
                "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
                "sys.exit(os.waitstatus_to_exitcode(status))\n")
    peak = tmp_path / "maxrss"
    p = subprocess.Popen([sys.executable, "-c", launcher, str(peak), NICWATCH, "module",
                          "decode"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    line = b"0x0000:\t\t" + b"00 " * 16 + b"\n"
    try:
        for _ in range(80_000_000 // len(line)):
            p.stdin.write(line)
        p.stdin.close()
    except BrokenPipeError:
        pass  # it stopped reading, as it should
    err = p.stderr.read().decode()
    assert p.wait() == 2 and err.count("\n") == 1, err
    assert "more than 4 MiB; a module EEPROM dump is at most a few KiB per page" in err
    maxrss = int(peak.read_text())
    assert maxrss < 100 * 1024, maxrss  # KiB: under 100 MB


def test_implausible_calibration_is_named_not_printed(capsys, tmp_path):
    """The OEM SFP made externally calibrated (A0h 92 = 58, CC_EXT resealed) with a
    temperature slope of 128 (A2h 84-85 = 80 00, CC_DMI resealed): 1,146,880 C is no
    measurement; exit 0, one warning line, no temperature in the output."""
    from nicwatch.model import ModuleEeprom

    from fixture_module import resealed
    e = parse((MODULE / "sfp-oem-10g-lr-go-ethtool.txt").read_text()).eeprom
    a0, a2 = bytearray(e.lower[0x50]), bytearray(e.lower[0x51])
    a0[92], a2[84], a2[85] = 0x58, 0x80, 0x00
    odd = resealed(ModuleEeprom({0x50: bytes(a0), 0x51: bytes(a2)}, e.upper, 0.0))
    flat = odd.lower[0x50] + odd.upper[(0x50, 0, 0)] + odd.lower[0x51] + odd.upper[(0x51, 0, 0)]
    f = tmp_path / "odd.bin"
    f.write_bytes(flat)
    status, out, err = run(capsys, str(f))
    assert status == 0 and err.count("\n") == 1
    assert "values outside what the map can express are not shown: temperature" in err
    got = series(json.loads(out))
    assert ("nic_module_value_implausible", (("lane", ""), ("level", ""),
                                             ("quantity", "temperature"))) in got
    assert not [k for k in got if k[0] == "nic_module_temperature_celsius"]


def test_vdm_pages_pasted_as_ethtool_page_blocks_decode_into_the_table(capsys, tmp_path):
    # The real DR8 dump followed by its spec-built VDM pages (tests/helpers/fixture_vdm.py),
    # each as `ethtool -m eth0 page 0xNN hex on` prints the upper half of a page.
    text = DR8.read_text()
    for page, data in vdm_pages().items():
        text += f"$ ethtool -m eth0 page {page:#04x} hex on\nOffset\t\tValues\n------\t\t------\n"
        text += "".join(f"0x{0x80 + at:04x}:\t\t" + " ".join(f"{b:02x}" for b in data[at:at + 16])
                        + " \n" for at in range(0, 128, 16))
    dump = tmp_path / "dr8-vdm.txt"
    dump.write_text(text)
    status, out, err = run(capsys, str(dump), "--table")
    assert status == 0 and err == "", err
    assert "vdm_pre_fec_ber_media_current high_alarm lane 5" in out
    header = next(line for line in out.splitlines() if line.startswith("LANE"))
    assert "PRE-FEC BER (VDM, MEDIA)" in header and "ESNR (VDM, MEDIA)" in header
    lane5 = next(line.split() for line in out.splitlines() if line.startswith("5 "))
    assert lane5[-3:] == ["3.2e-04", "15.25", "dB"]
