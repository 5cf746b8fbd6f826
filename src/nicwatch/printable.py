"""Names from the kernel or from files, made safe to print on a terminal.

An interface name may hold any byte but ``/``, ``:`` and whitespace, escape sequences
included, and a snapshot file may hold anything at all: printed raw, a name could move the
cursor, retitle the window or hide the lines around it. Every human-readable output that
echoes such names (show, diff, check, the record report) passes through :func:`printable`.
A backslash is escaped too (``\\\\``), so a name with a real ESC (shown ``\\x1b``) and one
literally named ``\\x1b`` never print alike; :func:`shell_word` quotes a name for a command
line the same way, so a suggested command names the interface it was made for.
"""

from __future__ import annotations


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def printable(text: str, keep: str = "", backslash: bool = True) -> str:
    """``text`` with every character that is not printable (controls, escape, DEL, C1,
    format characters such as bidi overrides, line and paragraph separators) written as a
    Python-style ``\\xNN`` / ``\\uNNNN`` escape, and each backslash doubled; characters in
    ``keep`` (such as a newline between the lines of a whole report) stay as they are.
    ``backslash=False`` leaves backslashes alone: for a last pass over text whose names
    were already escaped (a table of escaped cells), which must not be escaped twice."""
    if text.isprintable() and (not backslash or "\\" not in text):
        return text
    return "".join(c if (c.isprintable() and (c != "\\" or not backslash)) or c in keep
                   else "\\\\" if c == "\\" else _escape(c) for c in text)


def shell_word(text: str) -> str:
    """``text`` as one shell word that is safe to print: single-quoted (as shlex.quote)
    when it is printable, else in bash's ANSI-C quoting (``$'hx\\x1b[2J'``), which the
    shell turns back into the very bytes of the name."""
    if text.isprintable():
        if text and all((c.isalnum() and c.isascii()) or c in "@%+=:,./-_" for c in text):
            return text
        return "'" + text.replace("'", "'\"'\"'") + "'"
    body = "".join("\\\\" if c == "\\" else "\\'" if c == "'" else
                   c if c.isprintable() else _escape(c) for c in text)
    return f"$'{body}'"
