"""Parse the text `ethtool -m DEV hex on` prints into a ModuleEeprom.

ethtool prints (ethtool.c dump_hex)::

    Offset          Values
    ------          ------
    0x0000:         03 04 07 10 00 00 00 00 00 00 00 06 67 00 00 00
    ...

Without ``page``/``bank``/``i2c`` arguments ethtool uses the legacy ioctl, which returns the
module's memory flat: SFF-8472 as A0h bytes 0-255 then A2h at 0x100; SFF-8636 and CMIS as
the lower half, then upper pages 00h, 01h, 02h, 03h at 0x80, 0x100, 0x180, 0x200 (CMIS: pages
00h-02h; kernels give no later page this way). With ``page N`` (netlink) it prints one
half page at its offset within the page (0x80 for an upper page), with no page header. So a
block of lines belongs to the page named on the command line before it: a line such as
``$ ethtool -m eth0 page 0x11 bank 0 hex on`` or a comment ``# page 0x11`` (``i2c 0x51``
alone: SFF-8472 A2h, offsets 0-255). Every ``Offset Values`` header starts a new block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nicwatch.model import ModuleEeprom
from nicwatch.normalize.module import CMIS, SFF8472, identify_byte

HALF = 128
ROW = re.compile(r"\s*0x([0-9a-fA-F]+)\s*:\s*(.*?)\s*$")
BYTE = re.compile(r"[0-9a-fA-F]{2}")
HEADER = re.compile(r"\s*Offset\s+Values\s*$")
RULE = re.compile(r"\s*-+\s+-+\s*$")
LOCATION = re.compile(r"\b(page|bank|i2c)\s+(0x[0-9a-fA-F]+|\d+)\b")
MAX_OFFSET = 0x10000


class DumpError(ValueError):
    """The text is not an `ethtool -m ... hex on` dump (one line, names the problem)."""


@dataclass
class Block:
    i2c: int | None
    page: int | None
    bank: int
    data: dict[int, int] = field(default_factory=dict)  # offset -> byte


@dataclass(frozen=True)
class Dump:
    eeprom: ModuleEeprom
    problems: tuple[str, ...]  # bytes that were read but cannot be placed (warnings)


def _location(line: str) -> dict[str, int] | None:
    """page/bank/i2c named on a command line (an `ethtool` invocation: none named means a
    flat dump) or a comment line (``#``: only when it names one); None for other lines."""
    stripped = line.strip()
    command = "ethtool" in stripped and not ROW.match(stripped)
    if not (command or stripped.startswith(("#", "$"))):
        return None
    found = {key: int(number, 0) for key, number in LOCATION.findall(stripped)}
    return found if found or command else {"comment": 1}


def _blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    pending: tuple[int | None, int | None, int] = (None, None, 0)  # i2c, page, bank
    current: Block | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or RULE.match(line):
            continue
        if HEADER.match(line):
            current = None  # the next row starts a new block
            continue
        location = _location(line)
        if location is not None:
            if "comment" not in location:
                pending = (location.get("i2c"), location.get("page"), location.get("bank", 0))
                current = None
            continue
        row = ROW.match(line)
        if row is None:
            raise DumpError(f"line {number}: not an `ethtool -m ... hex on` row "
                            f"(0xOFFSET: hh hh ...): {line.strip()[:60]!r}")
        tokens = row.group(2).split()
        bad = next((t for t in tokens if not BYTE.fullmatch(t)), None)
        if bad is not None:
            raise DumpError(f"line {number}: {bad[:20]!r} is not a hex byte")
        offset = int(row.group(1), 16)
        if offset + len(tokens) > MAX_OFFSET:
            raise DumpError(f"line {number}: offset 0x{offset:x} is beyond any module map")
        if current is None:
            current = Block(*pending)
            blocks.append(current)
        for i, token in enumerate(tokens):
            current.data[offset + i] = int(token, 16)
    if not any(b.data for b in blocks):
        raise DumpError("no `0xOFFSET: hh hh ...` rows (the output of `ethtool -m DEV hex on`)")
    return blocks


def _halves(data: dict[int, int], base: int) -> bytes | None:
    """The bytes of the half page at ``base``: its prefix up to the first byte not read."""
    out = bytearray()
    while len(out) < HALF and base + len(out) in data:
        out.append(data[base + len(out)])
    return bytes(out) if out else None


class _Builder:
    def __init__(self) -> None:
        self.lower: dict[int, bytes] = {}
        self.upper: dict[tuple[int, int, int], bytes] = {}
        self.placed: set[tuple[int, int]] = set()  # (block index, offset) taken

    def put(self, block_index: int, data: dict[int, int], base: int,
            key: int | tuple[int, int, int]) -> None:
        half = _halves(data, base)
        if half is None:
            return
        if isinstance(key, int):
            self.lower[key] = half
        else:
            self.upper[key] = half
        self.placed.update((block_index, base + i) for i in range(len(half)))


def _flat_pages(kind: str | None) -> list[tuple[int, int | tuple[int, int, int]]]:
    """(base offset, half key) of a flat dump of ``kind``: SFF-8472 A0h then A2h; the others
    the lower half, then upper pages 00h-03h (CMIS: 00h-02h) one after the other."""
    if kind == SFF8472:
        return [(0, 0x50), (0x80, (0x50, 0, 0)), (0x100, 0x51), (0x180, (0x51, 0, 0))]
    last_page = 2 if kind == CMIS else 3
    return [(0, 0x50)] + [(HALF * (page + 1), (0x50, 0, page)) for page in range(last_page + 1)]


def parse(text: str, read_at: float = 0.0) -> Dump:
    """The ModuleEeprom of a dump; raises DumpError for text that is not one."""
    blocks = _blocks(text)
    build = _Builder()
    # Explicitly located blocks first: they say where they belong.
    for index, block in enumerate(blocks):
        if block.page is None and block.i2c in (None, 0x50):
            continue
        i2c = 0x50 if block.i2c is None else block.i2c
        page = block.page or 0
        build.put(index, block.data, 0, i2c)
        build.put(index, block.data, HALF, (i2c, block.bank, page))
    # Flat blocks need the identifier to know the layout.
    identifier = None
    for block in blocks:
        if block.page is None and block.i2c in (None, 0x50) and 0 in block.data:
            identifier = block.data[0]
    if identifier is None and 0x50 in build.lower:
        identifier = build.lower[0x50][0]
    kind = identify_byte(identifier)
    for index, block in enumerate(blocks):
        if block.page is None and block.i2c in (None, 0x50):
            for base, key in _flat_pages(kind):
                build.put(index, block.data, base, key)
    flat_end = HALF * len(_flat_pages(kind))
    problems = []
    for index, block in enumerate(blocks):
        left = sorted(o for o in block.data if (index, o) not in build.placed)
        if not left:
            continue
        flat = block.page is None and block.i2c in (None, 0x50)
        why = ("past the pages a flat dump of this module holds (dump later pages with "
               "`ethtool -m DEV page N hex on`)" if flat and left[0] >= flat_end else
               "a half page is decoded from its first byte (offset 0x00 or 0x80) on, "
               "without gaps")
        problems.append(f"bytes at 0x{left[0]:04x}-0x{left[-1]:04x} ignored: {why}")
    return Dump(ModuleEeprom(lower=build.lower, upper=build.upper, read_at=read_at),
                tuple(problems))
