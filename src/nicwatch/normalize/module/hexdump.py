"""Module EEPROM dumps as people save them, into a ModuleEeprom.

Layouts (one dump may mix blocks of several; each row is recognised by its offset column):

* ``ethtool -m DEV hex on`` (ethtool.c dump_hex): ``Offset Values`` header, then
  ``0x0000:  03 04 07 ...`` rows.
* ``hexdump -C`` and ``xxd`` of the bytes ``ethtool -m DEV raw on`` writes (or of a
  ``/sys/bus/i2c/devices/*/eeprom`` file): ``00000000  03 04 07 00 ...  |....|`` and
  ``00000000: 0304 0700 ...  ....``; a ``*`` line stands for lines repeating the one before
  it up to the next offset.
* SONiC ``sfputil show eeprom-hexdump``: ``EEPROM hexdump for port ...``, then sections
  ``Lower page 0h``, ``Upper page 11h`` (SFF-8636, CMIS) or ``A0h dump``, ``A2h dump (lower
  128 bytes)`` (SFF-8472) with ``00000080 44 44 11 11 ...  |DD..|`` rows at their offsets
  within the page.
* Raw bytes (:func:`parse_raw`): what ``ethtool -m DEV raw on`` writes, from offset 0.

Where a block belongs: without ``page``/``bank``/``i2c`` arguments ethtool uses the legacy
ioctl, which returns the memory flat: SFF-8472 as A0h bytes 0-255 then A2h at 0x100;
SFF-8636 and CMIS as the lower half, then upper pages 00h, 01h, 02h, 03h at 0x80, 0x100,
0x180, 0x200 (CMIS: pages 00h-02h; kernels give no later page this way). Raw bytes and their
hexdump/xxd are that flat layout. With ``page N`` (netlink) ethtool prints one half page at
its offset within the page (0x80 for an upper page), with no page header. So a block of rows
belongs to the page named before it: on an ``ethtool`` command line (``$ ethtool -m eth0
page 0x11 bank 0 hex on``), in a comment (``# page 0x11``; ``i2c 0x51`` alone: SFF-8472 A2h,
offsets 0-255) or in an sfputil section header. ``page 0`` (bank 0, i2c 0x50) is laid out
flat: ethtool before 6.11 treated page 0 as no page given and printed the whole flat dump,
later ethtool prints bytes 0-127 of page 0, which the flat layout places the same. Numbers
are decimal or 0x hex; a leading 0 is refused (ethtool reads 010 as octal 8).

Bounded: at most :data:`MAX_BYTES` bytes are placed, whatever the text repeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nicwatch.model import ModuleEeprom
from nicwatch.normalize.module import CMIS, SFF8472, identify_byte

HALF = 128
MAX_OFFSET = 0x10000  # past any flat layout or page offset
MAX_BYTES = 0x40000  # 256 KiB: every page of four banks and both addresses, twice over
LIMITS = {"page": 0xFF, "bank": 0xFF, "i2c": 0x7F}

ETHTOOL_ROW = re.compile(r"\s*0[xX]([0-9a-fA-F]+)\s*:\s*(.*?)\s*$")
XXD_ROW = re.compile(r"([0-9a-fA-F]{4,16}): (.*)$")
# hexdump -C (offset, two spaces) and sfputil (indent, offset, one space), ASCII in |...|
COLUMN_ROW = re.compile(r"\s*([0-9a-fA-F]{4,16})\s+((?:[0-9a-fA-F]{2}\s{1,2}){0,31}[0-9a-fA-F]{2})"
                        r"\s*(?:\|.*\|)?\s*$")
END_OFFSET = re.compile(r"\s*([0-9a-fA-F]{4,16})\s*$")  # hexdump's last line: the length
REPEAT = re.compile(r"\s*\*\s*$")
HEX_TOKEN = re.compile(r"(?:[0-9a-fA-F]{2})+")
BYTES = re.compile(r"(?:[0-9a-fA-F]{2}(?:\s+|$))*")  # whitespace-separated two-digit bytes
HEADER = re.compile(r"\s*Offset\s+Values\s*$")
RULE = re.compile(r"\s*-+\s+-+\s*$")
LOCATION = re.compile(r"\b(page|bank|i2c)\s+(0[xX][0-9a-fA-F]*|\d+)(?![\w.])")
# SONiC sfputil show eeprom-hexdump (sonic-utilities sfputil/main.py)
SFPUTIL_PORT = re.compile(r"\s*EEPROM hexdump for (?:port|module)\b")
SFPUTIL_PAGE = re.compile(r"\s*(Lower|Upper) page (?:0x)?([0-9a-fA-F]{1,2})h\s*$")
SFPUTIL_A0 = re.compile(r"\s*A0h dump\s*$")
SFPUTIL_A2 = re.compile(r"\s*A2h dump \((lower|upper) 128 bytes\)"
                        r"(?: page ([0-9a-fA-F]{1,2})h)?\s*$")
SFPUTIL_ERROR = re.compile(r"\s*Error: ")


class DumpError(ValueError):
    """The input is not a module EEPROM dump (one line, names the problem)."""


@dataclass
class Block:
    i2c: int | None
    page: int | None
    bank: int
    data: dict[int, int] = field(default_factory=dict)  # offset -> byte

    @property
    def flat(self) -> bool:
        """Laid out as the legacy ioctl's flat memory (no page, or page 0 of bank 0 and i2c
        0x50)."""
        return not self.page and not self.bank and self.i2c in (None, 0x50)


@dataclass(frozen=True)
class Dump:
    eeprom: ModuleEeprom
    problems: tuple[str, ...]  # bytes read but not placed, halves given twice (warnings)


def _number(word: str, what: str, number: int) -> int:
    if len(word) > 6:
        raise DumpError(f"line {number}: {what} {word[:12]}... is not a {what} number (at most "
                        f"0x{LIMITS[what]:x})")
    if word[:2].lower() == "0x":
        if len(word) == 2:
            raise DumpError(f"line {number}: {what} 0x without hex digits")
        value = int(word[2:], 16)
    elif len(word) > 1 and word[0] == "0":
        raise DumpError(f"line {number}: {what} {word!r}: a leading 0 is ambiguous (ethtool "
                        f"reads 010 as octal 8); write it as decimal or 0x hex")
    else:
        value = int(word)
    if value > LIMITS[what]:
        raise DumpError(f"line {number}: {what} {word} is beyond 0x{LIMITS[what]:x}")
    return value


def _location(line: str, number: int) -> dict[str, int] | None:
    """page/bank/i2c named on an `ethtool` command line (none named means a flat dump), on a
    comment line (``#``, ``$``: only when it names one) or an sfputil section header; {} for
    a line that starts a flat dump; None for other lines."""
    stripped = line.strip()
    sfputil = SFPUTIL_PAGE.match(stripped)
    if sfputil:
        return {"page": int(sfputil.group(2), 16)}
    if SFPUTIL_A0.match(stripped):
        return {"i2c": 0x50}
    a2 = SFPUTIL_A2.match(stripped)
    if a2:
        return {"i2c": 0x51, "page": int(a2.group(2) or "0", 16)}
    if SFPUTIL_PORT.match(stripped):
        return {}
    command = ("ethtool" in stripped or "hexdump" in stripped or "xxd" in stripped) \
        and not ETHTOOL_ROW.match(stripped)
    if not (command or stripped.startswith(("#", "$"))):
        return None
    found = {key: _number(word, key, number) for key, word in LOCATION.findall(stripped)}
    return found if found or command else {"comment": 1}


def _tokens(text: str, number: int) -> list[int]:
    out: list[int] = []
    for token in text.split():
        if not HEX_TOKEN.fullmatch(token):
            raise DumpError(f"line {number}: {token[:20]!r} is not a hex byte")
        out += bytes.fromhex(token)
    return out


def _row(line: str, number: int) -> tuple[int, list[int]] | None:
    """(offset, bytes) of a row in any of the layouts; None for a line that is no row."""
    row = ETHTOOL_ROW.match(line)
    if row:
        tokens = row.group(2).split()
        if not BYTES.fullmatch(row.group(2)):
            bad = next((t for t in tokens if not BYTES.fullmatch(t)), row.group(2))
            raise DumpError(f"line {number}: {bad[:20]!r} is not a hex byte")
        if len(row.group(1)) > 8:
            raise DumpError(f"line {number}: offset 0x{row.group(1)[:12]}... is beyond any "
                            "module map")
        return int(row.group(1), 16), list(bytes.fromhex(row.group(2)))
    row = XXD_ROW.match(line)
    if row:  # the hex area ends at the two spaces before the ASCII column
        return int(row.group(1), 16), _tokens(row.group(2).split("  ")[0], number)
    row = COLUMN_ROW.match(line)
    if row:
        return int(row.group(1), 16), list(bytes.fromhex(row.group(2)))
    return None


class _Scanner:
    """Lines -> blocks, with the bytes ``*`` lines stand for and a cap on the total."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.pending: dict[str, int | None] = {"i2c": None, "page": None, "bank": 0}
        self.current: Block | None = None
        self.last: tuple[int, list[int]] | None = None
        self.repeat = False
        self.total = 0
        self.problems: list[str] = []

    def locate(self, location: dict[str, int]) -> None:
        self.pending = {"i2c": location.get("i2c"), "page": location.get("page"),
                        "bank": location.get("bank", 0)}
        self.current, self.last, self.repeat = None, None, False

    def put(self, offset: int, data: list[int], number: int) -> None:
        if offset + len(data) > MAX_OFFSET:
            raise DumpError(f"line {number}: offset 0x{offset:x} is beyond any module map")
        if self.current is None:
            self.current = Block(self.pending["i2c"], self.pending["page"],
                                 self.pending["bank"] or 0)
            self.blocks.append(self.current)
        if self.repeat and self.last is not None:
            self._fill(offset, number)
        self.total += len(data)
        if self.total > MAX_BYTES:
            raise DumpError(f"line {number}: more than {MAX_BYTES // 1024} KiB of bytes, more "
                            "than any module's memory")
        self.current.data.update(zip(range(offset, offset + len(data)), data, strict=True))
        self.last, self.repeat = (offset, data), False

    def _fill(self, until: int, number: int) -> None:
        """The lines a ``*`` stood for: the last row repeated up to offset ``until``."""
        assert self.last is not None and self.current is not None
        start, data = self.last
        at = start + len(data)
        if not data or until < at:
            raise DumpError(f"line {number}: offset 0x{until:x} after a '*' line is not past "
                            f"the row it repeats (0x{start:x})")
        count = until - at
        self.total += count
        if self.total > MAX_BYTES:
            raise DumpError(f"line {number}: a '*' line stands for more than "
                            f"{MAX_BYTES // 1024} KiB, more than any module's memory")
        self.current.data.update((at + i, data[i % len(data)]) for i in range(count))
        self.repeat = False

    def end(self, offset: int, number: int) -> None:
        """hexdump's closing line: the length of the input."""
        if self.repeat and self.last is not None:
            self._fill(offset, number)
        self.last, self.repeat = None, False


def _blocks(text: str) -> tuple[list[Block], list[str]]:
    scan = _Scanner()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or RULE.match(line):
            continue
        if HEADER.match(line):
            scan.current, scan.last = None, None  # the next row starts a new block
            continue
        if SFPUTIL_ERROR.match(line):
            scan.problems.append(f"line {number}: {line.strip()[:100]}")
            continue
        if REPEAT.match(line):
            if scan.last is None:
                raise DumpError(f"line {number}: a '*' line with no row before it to repeat")
            scan.repeat = True
            continue
        row = _row(line, number)
        if row is not None:
            scan.put(*row, number)
            continue
        location = _location(line, number)
        if location is not None:
            if "comment" not in location:
                scan.locate(location)
            continue
        end = END_OFFSET.match(line)
        if end and scan.last is not None:
            scan.end(int(end.group(1), 16), number)
            continue
        raise DumpError(f"line {number}: not a row of a module EEPROM dump (`ethtool -m ... hex "
                        f"on`, hexdump -C, xxd or sfputil): {line.strip()[:60]!r}")
    if scan.repeat:
        scan.problems.append("a '*' line ends the dump without the length line after it: the "
                             "lines it stands for are not known")
    if not any(b.data for b in scan.blocks):
        raise DumpError("no rows of bytes (`ethtool -m DEV hex on`, `hexdump -C`, `xxd` or "
                        "`sfputil show eeprom-hexdump` output)")
    return scan.blocks, scan.problems


def _halves(data: dict[int, int], base: int) -> bytes | None:
    """The bytes of the half page at ``base``: its prefix up to the first byte not read."""
    out = bytearray()
    while len(out) < HALF and base + len(out) in data:
        out.append(data[base + len(out)])
    return bytes(out) if out else None


HalfKey = int | tuple[int, int, int]  # an i2c address (its lower half) or (i2c, bank, page)


class _Builder:
    def __init__(self) -> None:
        self.lower: dict[int, bytes] = {}
        self.upper: dict[tuple[int, int, int], bytes] = {}
        self.placed: set[tuple[int, int]] = set()  # (block index, offset) taken
        self.twice: list[str] = []

    def put(self, block_index: int, data: dict[int, int], base: int, key: HalfKey) -> None:
        half = _halves(data, base)
        if half is None:
            return
        if isinstance(key, int):
            known = self.lower.get(key)
            self.lower[key] = half
        else:
            known = self.upper.get(key)
            self.upper[key] = half
        if known is not None and known != half:
            self.twice.append(_name(key))
        self.placed.update((block_index, base + i) for i in range(len(half)))


def _name(key: HalfKey) -> str:
    if isinstance(key, int):
        return f"the lower half of i2c 0x{key:02x}"
    i2c, bank, page = key
    return f"page {page:02x}h" + (f" bank {bank}" if bank else "") + \
        ("" if i2c == 0x50 else f" of i2c 0x{i2c:02x}")


def flat_pages(kind: str | None) -> list[tuple[int, HalfKey]]:
    """(base offset, half key) of a flat dump of ``kind``: SFF-8472 A0h then A2h; the others
    the lower half, then upper pages 00h-03h (CMIS: 00h-02h) one after the other."""
    if kind == SFF8472:
        return [(0, 0x50), (0x80, (0x50, 0, 0)), (0x100, 0x51), (0x180, (0x51, 0, 0))]
    last_page = 2 if kind == CMIS else 3
    return [(0, 0x50)] + [(HALF * (page + 1), (0x50, 0, page)) for page in range(last_page + 1)]


def _identifier(blocks: list[Block]) -> int | None:
    for block in blocks:
        if block.flat and 0 in block.data:
            return block.data[0]
    return None


def _place(blocks: list[Block], problems: list[str], read_at: float) -> Dump:
    build = _Builder()
    kind = identify_byte(_identifier(blocks))
    flat_layout = flat_pages(kind)
    for index, block in enumerate(blocks):  # in order: a later block wins
        if block.flat:
            for base, key in flat_layout:
                build.put(index, block.data, base, key)
            continue
        i2c = 0x50 if block.i2c is None else block.i2c
        if block.page is None and i2c == 0x51:  # SFF-8472 A2h, offsets 0-255
            build.put(index, block.data, 0, 0x51)
            build.put(index, block.data, HALF, (0x51, 0, 0))
            continue
        if not block.page and not block.bank:
            build.put(index, block.data, 0, i2c)
        build.put(index, block.data, HALF, (i2c, block.bank, block.page or 0))
    out = list(problems)
    out += [f"{name} is given twice with different bytes (read at different times?): the "
            "last one is decoded" for name in dict.fromkeys(build.twice)]
    flat_end = HALF * len(flat_layout)
    for index, block in enumerate(blocks):
        left = sorted(o for o in block.data if (index, o) not in build.placed)
        if not left:
            continue
        why = ("past the pages a flat dump of this module holds (dump later pages with "
               "`ethtool -m DEV page N hex on`)" if block.flat and left[0] >= flat_end else
               "a half page is decoded from its first byte (offset 0x00 or 0x80) on, "
               "without gaps")
        out.append(f"bytes at 0x{left[0]:04x}-0x{left[-1]:04x} ignored: {why}")
    return Dump(ModuleEeprom(lower=build.lower, upper=build.upper, read_at=read_at), tuple(out))


def parse(text: str, read_at: float = 0.0) -> Dump:
    """The ModuleEeprom of a dump in any of the text layouts; raises DumpError for text that
    is not one."""
    blocks, problems = _blocks(text)
    return _place(blocks, problems, read_at)


def parse_raw(data: bytes, read_at: float = 0.0) -> Dump:
    """The ModuleEeprom of the bytes ``ethtool -m DEV raw on`` writes (the flat layout from
    offset 0); raises DumpError for more bytes than a flat dump holds."""
    if not data:
        raise DumpError("no bytes")
    if len(data) > MAX_OFFSET:
        raise DumpError(f"{len(data)} bytes: more than a module EEPROM dump holds "
                        f"({MAX_OFFSET // 1024} KiB)")
    return _place([Block(None, None, 0, dict(enumerate(data)))], [], read_at)


def binary(data: bytes) -> bool:
    """Whether ``data`` is raw EEPROM bytes rather than text: it has bytes no text dump has
    (NUL, control characters other than whitespace)."""
    return any(b < 0x09 or 0x0E <= b < 0x20 or b == 0x7F for b in data[:4096])
