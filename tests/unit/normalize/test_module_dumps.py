"""The dump layouts `nicwatch module decode` reads (normalize.module.hexdump): `ethtool -m hex
on` (flat and per page, `page 0` as ethtool means it), `hexdump -C` and `xxd` of `ethtool -m raw
on` (with `*` lines), SONiC `sfputil show eeprom-hexdump`, raw bytes; the numbers of
page/bank/i2c; and bounds on what a dump can make the parser hold."""

from __future__ import annotations

import re
import subprocess
import tracemalloc

import pytest

from nicwatch.normalize.module import decode
from nicwatch.normalize.module.hexdump import MAX_BYTES, DumpError, binary, parse, parse_raw

from paths import FIXTURES

MODULE = FIXTURES / "module"
QSFP28 = MODULE / "qsfp28-fs-ir4-go-ethtool.txt"
FINISAR = MODULE / "sfp28-finisar-ftlf8536p4bcl-netdev.bin"


def ethtool_rows(data: bytes, start: int = 0) -> list[str]:
    """`ethtool -m ... hex on` rows of ``data`` as ethtool.c dump_hex prints them."""
    return [f"0x{start + i:04x}:\t\t" + " ".join(f"{b:02x}" for b in data[i:i + 16]) + " "
            for i in range(0, len(data), 16)]


def flat(path) -> bytes:
    out = bytearray()
    for line in path.read_text().splitlines():
        m = re.match(r"0x[0-9a-f]+:\s+(.*)$", line)
        if m:
            out += bytes.fromhex(m.group(1))
    return bytes(out)


def test_page_0_is_the_whole_flat_dump_as_ethtool_prints_it():
    """ethtool before 6.11 (module-eeprom.c: `!page && !bank && !i2c_address` falls back to
    the ioctl) prints the whole flat dump under `ethtool -m DEV page 0 hex on`; its pages
    01h-03h at 0x100-0x27f used to be dropped. ethtool 6.11+ prints bytes 0-127 of page 0
    there, placed the same way."""
    data = flat(QSFP28)
    assert len(data) == 640
    text = "$ ethtool -m eth0 page 0 hex on\nOffset\t\tValues\n------\t\t------\n" + "\n".join(
        ethtool_rows(data))
    dump = parse(text)
    assert dump.problems == ()
    assert set(dump.eeprom.upper) == {(0x50, 0, p) for p in range(4)}
    assert dump.eeprom.upper[(0x50, 0, 3)] == data[512:640]
    assert decode(dump.eeprom) == decode(parse(QSFP28.read_text()).eeprom)
    newer = parse("$ ethtool -m eth0 page 0 hex on\n" + "\n".join(ethtool_rows(data[:128])))
    assert newer.eeprom.lower == {0x50: data[:128]} and not newer.eeprom.upper


def test_hexdump_repeat_lines_stand_for_the_rows_they_skip():
    """hexdump -C prints `*` for lines equal to the one before; the Finisar dump's A0h
    0x60-0xff and A2h 0x180-0x1ff are such runs."""
    text = (MODULE / "sfp28-finisar-ftlf8536p4bcl-netdev.hexdump.txt").read_text()
    dump = parse(text)
    raw = FINISAR.read_bytes()
    assert dump.eeprom.lower[0x50] == raw[:128] and dump.eeprom.upper[(0x51, 0, 0)] == raw[384:]
    # Without its closing length line the last '*' stands for rows nobody knows.
    cut = text[:text.rindex("00000200")]
    problems = parse(cut).problems
    assert len(problems) == 1 and "'*' line ends the dump" in problems[0]


def test_xxd_of_real_bytes_including_its_grouping_options():
    raw = FINISAR.read_bytes()
    for flags in ([], ["-g1"], ["-g4"], ["-a"], ["-c", "8"]):
        out = subprocess.run(["xxd", *flags, str(FINISAR)], capture_output=True, text=True,
                             check=True).stdout
        e = parse(out).eeprom
        assert e.lower[0x50] + e.upper[(0x50, 0, 0)] + e.lower[0x51] + e.upper[(0x51, 0, 0)] \
            == raw, flags


def test_hexdump_c_of_the_bytes_as_the_tool_prints_it():
    out = subprocess.run(["hexdump", "-C", str(FINISAR)], capture_output=True, text=True,
                         check=True).stdout
    assert parse(out).eeprom == parse_raw(FINISAR.read_bytes()).eeprom


def test_sfputil_sections_place_pages_and_a2h():
    """sonic-utilities sfputil/main.py: CMIS/SFF-8636 `Lower page 0h` (offsets 0x00-0x7f) and
    `Upper page Nh` (0x80-0xff); SFF-8472 `A0h dump` (0x00-0xff), `A2h dump (lower 128
    bytes)` (0x00-0x7f); rows `{indent}{offset:08x} {8 bytes}  {8 bytes} |ascii|`."""
    raw = FINISAR.read_bytes()

    def rows(data: bytes, start: int) -> list[str]:
        return [f"        {start + i:08x} " + " ".join(f"{b:02x}" for b in data[i:i + 8]) + "  "
                + " ".join(f"{b:02x}" for b in data[i + 8:i + 16]) + " |" + "." * 16 + "|"
                for i in range(0, len(data), 16)]

    text = "\n".join(["EEPROM hexdump for port Ethernet256", "        A0h dump",
                      *rows(raw[:256], 0), "", "        A2h dump (lower 128 bytes)",
                      *rows(raw[256:384], 0)])
    e = parse(text).eeprom
    assert e.lower == {0x50: raw[:128], 0x51: raw[256:384]} and e.upper == {
        (0x50, 0, 0): raw[128:256]}
    hisense = parse((MODULE / "qsfp-cmis-hisense-aoc-sonic.sfputil.txt").read_text()).eeprom
    assert set(hisense.upper) == {(0x50, 0, 0), (0x50, 0, 0x11)}
    assert hisense.upper[(0x50, 0, 0x11)][:4] == bytes.fromhex("44441111")


def test_raw_bytes_are_the_flat_layout():
    e = parse_raw(FINISAR.read_bytes()).eeprom
    assert set(e.lower) == {0x50, 0x51} and e.lower[0x50][20:36] == b"FINISAR CORP.   "
    assert binary(FINISAR.read_bytes()) and not binary(QSFP28.read_bytes())
    with pytest.raises(DumpError, match="more than a module EEPROM dump holds"):
        parse_raw(bytes(0x10001))


@pytest.mark.parametrize("line, needle", [
    ("# page 08", "page '08': a leading 0 is ambiguous"),
    ("$ ethtool -m eth0 page 09 hex on", "page '09': a leading 0"),
    ("# page 0x11 bank 010", "bank '010': a leading 0"),
    ("# page " + "9" * 5000, "page 999999999999... is not a page number"),
    ("# page 0x" + "f" * 5000, "is not a page number"),
    ("# page 256", "page 256 is beyond 0xff"),
    ("# i2c 0x80", "i2c 0x80 is beyond 0x7f"),
    ("# page 0x", "page 0x without hex digits"),
])
def test_bad_page_numbers_are_one_clear_error(line, needle):
    """Before: `# page 08`, `page 09`, `bank 010` and a 5,000-digit page raised ValueError."""
    with pytest.raises(DumpError) as caught:
        parse(line + "\n0x0080:\t\t00 11 22 33\n")
    message = str(caught.value)
    assert needle in message and "\n" not in message and len(message) < 200, message


def test_numbers_as_ethtool_reads_them():
    data = bytes(range(128))
    for word, page in (("0x11", 0x11), ("17", 17), ("0X1f", 0x1F), ("0", 0)):
        e = parse(f"$ ethtool -m eth0 page {word} hex on\n" + "\n".join(
            ethtool_rows(data, 128))).eeprom
        assert e.upper == {(0x50, 0, page): data}, word


def test_what_a_dump_can_make_the_parser_hold_is_bounded():
    """A `*` line after a row with a far offset behind it, or many blocks of rows, would
    place unbounded bytes; the parser refuses past MAX_BYTES (256 KiB) and holds little."""
    with pytest.raises(DumpError, match=r"'\*' line stands for more than 256 KiB"):
        parse("00000000  00 01 02 03 04 05 06 07  08 09 0a 0b 0c 0d 0e 0f  |................|\n*"
              "\n00ffff00\n" + "".join(f"# page {p}\n00ffff00  00\n*\n00ffffff\n"
                                       for p in range(1, 200)))
    block = "\n".join(ethtool_rows(bytes(128), 128))
    text = "".join(f"# page {p} bank {b}\n{block}\n" for b in range(12) for p in range(256))
    tracemalloc.start()
    with pytest.raises(DumpError, match="more than 256 KiB of bytes"):
        parse(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(text) > 1_400_000 and peak < 64 * 1024 * 1024, peak
    assert MAX_BYTES == 256 * 1024


def test_a_star_before_any_row_or_not_forward_is_an_error():
    with pytest.raises(DumpError, match="no row before it"):
        parse("*\n")
    with pytest.raises(DumpError, match="is not past the row it repeats"):
        parse("00000010  00 01  |..|\n*\n00000000\n")
