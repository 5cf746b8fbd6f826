"""Names from the kernel or from files, made safe to print on a terminal.

An interface name may hold any byte but ``/``, ``:`` and whitespace, escape sequences
included, and a snapshot file may hold anything at all: printed raw, a name could move the
cursor, retitle the window or hide the lines around it. Every human-readable output that
echoes such names (show, diff, check, the record report) passes through :func:`printable`.
"""

from __future__ import annotations


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character that is not printable (controls, escape, DEL, C1,
    format characters such as bidi overrides, line and paragraph separators) written as a
    Python-style ``\\xNN`` / ``\\uNNNN`` escape; characters in ``keep`` (such as a newline
    between the lines of a whole report) stay as they are."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else _escape(c) for c in text)
