"""The one sysfs attribute read every sysfs source goes through.

An attribute is read with os.open/os.read (a buffered file object costs more than the read
itself), non-blocking so that a stray FIFO under a fixture root cannot hang a poll, and at
most MAX_ATTRIBUTE_BYTES: a sysfs attribute is at most a page, and pages are up to 64 KiB
(arm64, ppc64). What the attribute cannot say comes back as a problem, never raised: absent
is no problem; unreadable, oversized, not UTF-8 or empty is. Running out of file descriptors
or memory (OWN_FAULTS) is the daemon's own trouble, not the attribute's: it raises, so the
poll fails visibly instead of every interface looking empty.
"""

from __future__ import annotations

import errno
import os

from nicwatch.sources import errno_name

MAX_ATTRIBUTE_BYTES = 65536
OWN_FAULTS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


def describe_os_error(exc: OSError) -> str:
    """``"EINVAL (Invalid argument)"``: errno name first, stable enough to count by."""
    name = errno_name(exc.errno) if exc.errno else type(exc).__name__
    return f"{name} ({exc.strerror or exc})"


def read_attribute(path: str | os.PathLike[str]) -> tuple[str | None, str | None]:
    """``(stripped text, None)``, or ``(None, problem)``, or ``(None, None)`` when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            data = os.read(fd, MAX_ATTRIBUTE_BYTES + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno in OWN_FAULTS:
            raise
        return None, describe_os_error(exc)
    if len(data) > MAX_ATTRIBUTE_BYTES:
        return None, f"larger than {MAX_ATTRIBUTE_BYTES} bytes"
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, "not UTF-8"
    if not text:
        return None, "empty"
    return text, None
