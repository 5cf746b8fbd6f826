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
import resource

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
    return decode_attribute(data)


def decode_attribute(data: bytes,
                     limit: int = MAX_ATTRIBUTE_BYTES) -> tuple[str | None, str | None]:
    """What :func:`read_attribute` makes of the bytes an attribute read gave (and
    :func:`read_records` of a file's, with its ``limit``)."""
    if len(data) > limit:
        return None, f"larger than {limit} bytes"
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, "not UTF-8"
    if not text:
        return None, "empty"
    return text, None


def descriptor_share(divisor: int) -> int:
    """``1/divisor`` of the process's file descriptor limit (the soft RLIMIT_NOFILE): how many
    files one source may keep open, so that all of them together leave room for the sockets,
    the HTTP server and the files read as usual. The RDMA source and the receive path take a
    quarter each, the PCIe source an eighth, hwmon a sixteenth."""
    return max(0, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // divisor)


class OpenAttributes:
    """Attributes read every poll, kept open and re-read with ``pread`` at offset 0: a
    read at offset 0 of a sysfs file starts a fresh ``show()`` (fs/seq_file.c
    seq_read_iter resets its iterator when ``ki_pos`` is 0), so the value is as current as
    an open-read-close, without the open and the close. At most ``limit`` files are kept
    open (the rest read as usual); a file that fails to open or read is closed and read
    through :func:`read_attribute`, which names what is wrong with it (a removed file's
    stale descriptor answers ENODEV: then it is absent)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._fds: dict[str, int] = {}

    def read(self, path: str) -> tuple[str | None, str | None]:
        data = self.read_bytes(path)
        return read_attribute(path) if data is None else decode_attribute(data)

    def read_bytes(self, path: str) -> bytes | None:
        """The attribute's bytes through its kept-open file; None when it has none (the
        limit) or the open or the read failed (then read it with :func:`read_attribute`,
        which says why)."""
        fd = self._fds.get(path)
        if fd is None:
            if len(self._fds) >= self.limit:
                return None
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                return None
            self._fds[path] = fd
        try:
            return os.pread(fd, MAX_ATTRIBUTE_BYTES + 1, 0)
        except OSError:
            self.close(path)
            return None

    def close(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close_all(self, under: str = "") -> None:
        """Close the files whose path starts with ``under`` (all by default)."""
        for path in [p for p in self._fds if p.startswith(under)]:
            self.close(path)

    def __len__(self) -> int:
        return len(self._fds)


def read_records(path: str | os.PathLike[str], limit: int) -> tuple[str | None, str | None]:
    """A procfs file of one record per line (``/proc/net/softnet_stat``: one line per online
    CPU) read to its end, as :func:`read_attribute` answers. One ``read()`` of a seq_file
    returns at most the records that fit in its buffer, one page (fs/seq_file.c
    seq_read_iter stops when the next record overflows ``m->size``, PAGE_SIZE until a single
    record needs more): a single read of a 256-CPU softnet_stat gives its first 30 lines
    (4 KiB). So this reads until end of file, at most ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno in OWN_FAULTS:
            raise
        return None, describe_os_error(exc)
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            chunk = os.read(fd, MAX_ATTRIBUTE_BYTES)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        if exc.errno in OWN_FAULTS:
            raise
        return None, describe_os_error(exc)
    finally:
        os.close(fd)
    return decode_attribute(chunks[0] if len(chunks) == 1 else b"".join(chunks), limit)
