"""Unpack ttar records (the text archive format of prometheus/procfs and node_exporter
fixtures: ``Directory:``, ``Path:`` + ``Lines:`` + content + ``Mode:``, ``SymlinkTo:``)
into a directory, so a peer's published sysfs fixture is a tree the sources read as files.
Lines starting with ``#`` outside a file's content are comments (the fixture headers)."""

from __future__ import annotations

import os
from pathlib import Path


def unpack(text: str, into: Path, strip: str = "fixtures/sys/") -> Path:
    """Write every record below ``into`` with the ``strip`` prefix removed from its path;
    returns ``into``."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(": ")
        if key == "Directory":
            (into / value.removeprefix(strip)).mkdir(parents=True, exist_ok=True)
        elif key == "Path":
            path = into / value.removeprefix(strip)
            path.parent.mkdir(parents=True, exist_ok=True)
            kind, _, arg = lines[i].partition(": ")
            i += 1
            if kind == "SymlinkTo":
                os.symlink(arg, path)
                continue
            if kind != "Lines":
                raise ValueError(f"ttar record {value}: {kind!r}")
            count = int(arg)
            content = lines[i:i + count]
            i += count
            data = "\n".join(content)
            if data.endswith("EOF"):  # ttar's mark of a file without a final newline
                path.write_text(data[:-3])
            else:
                path.write_text(data + ("\n" if count else ""))
        elif key == "Mode":
            continue
        else:
            raise ValueError(f"ttar line {i}: {line!r}")
    return into
