#!/usr/bin/env python3
"""Write deploy/nicwatch.toml from nicwatch's settings declaration (config.SETTINGS): every
key with its help and its default, commented out. With --check, exit 1 when the file
differs from what would be written."""

from __future__ import annotations

import sys
from pathlib import Path

from nicwatch.config import example_toml
from nicwatch.snapshot.atomicfile import write_atomic

TARGET = Path(__file__).resolve().parent / "nicwatch.toml"


def main(argv: list[str]) -> int:
    text = example_toml()
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET}: differs from the settings; run deploy/generate_config.py",
                  file=sys.stderr)
            return 1
        return 0
    write_atomic(TARGET, text.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
