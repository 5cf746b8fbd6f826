"""Files that appear complete or not at all: a crash or a full disk never leaves a partial
snapshot, report or state file behind, and a file already in place stays as it was."""

from __future__ import annotations

import gzip
import os
import re
import stat
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, NoReturn, Self

from nicwatch.sources import errno_name

# A temporary file of an AtomicFile whose process was killed is removed by the next write
# to the same path once it is this old (by mtime: a long streaming write keeps it fresh).
STALE_TEMP_SECONDS = 600.0
# What nicwatch creates is its user's alone, whatever the umask (under umask 000 it used to
# be 0666 and 0777): files FILE_MODE, directories DIR_MODE. Only what is written to be
# installed for others (`nicwatch deploy --output`, generated docs) is SHARED_FILE_MODE /
# SHARED_DIR_MODE, never writable by group or others. A stricter umask narrows directories
# further; file modes are set exactly.
FILE_MODE = 0o600
DIR_MODE = 0o700
SHARED_FILE_MODE = 0o644
SHARED_DIR_MODE = 0o755


def make_dirs(path: str | os.PathLike[str], mode: int = DIR_MODE) -> None:
    """``path`` and its missing parents, each created ``mode`` (Path.mkdir(parents=True)
    makes the parents 0777 less the umask); existing directories are left as they are.
    OSError as mkdir raises it."""
    path = Path(path)
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode)
        except FileExistsError:
            if not directory.is_dir():
                raise


TEMP_MARK = "nicwatch-"  # in every temporary file's name: .NAME.nicwatch-XXXXXXXX.tmp


def remove_stale_temps(path: str | os.PathLike[str], older_than: float = STALE_TEMP_SECONDS,
                       any_target: bool = False) -> int:
    """Remove what an AtomicFile for ``path`` left behind when its process was killed:
    only regular files of this user in ``path``'s directory named exactly like its
    temporary files (``.NAME.nicwatch-XXXXXXXX.tmp``, or ``.NAME.XXXXXXXX.tmp`` as older
    versions named them), not modified for ``older_than`` seconds. ``any_target``: also
    those of every other NAME in the directory (nicwatch's mark in the name), so that a
    snapshot killed while writing a file never written again (`-o` names carry the time)
    is cleaned up by the next write into the same directory. Returns how many; never
    raises."""
    path = Path(path)
    name = re.escape(path.name)
    own = re.compile(rf"\.{name}\.(?:{TEMP_MARK})?[a-z0-9_]{{8}}\.tmp"
                     + (rf"|\..+\.{TEMP_MARK}[a-z0-9_]{{8}}\.tmp" if any_target else ""),
                     re.DOTALL)
    try:
        names = os.listdir(path.parent)
    except OSError:
        return 0
    now, removed = time.time(), 0
    for entry in names:
        if not own.fullmatch(entry):
            continue
        temp = path.parent / entry
        try:
            st = os.lstat(temp)
            if (stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
                    and now - st.st_mtime >= older_than):
                temp.unlink()
                removed += 1
        except OSError:
            continue
    return removed


class NotRegularFile(OSError):
    """An input path that is no regular file (a FIFO, a device, a socket, a directory)."""


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading if it is a regular file; NotRegularFile (its strerror
    naming the kind) otherwise. Opened without blocking: a FIFO nobody writes to would
    block open() forever (symlinks are followed, as any reader does)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFile(0, f"{kind}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class AtomicWriteError(Exception):
    """Writing a file failed; the message names the file and the reason."""


def describe(e: OSError) -> str:
    """"No space left on device (ENOSPC)": the reason, then the errno name."""
    if isinstance(e, NotRegularFile):
        return str(e.strerror)
    return f"{e.strerror or e} ({errno_name(e.errno)})" if e.errno else str(e)


class AtomicFile:
    """A file that appears at ``path`` complete or not at all.

    Data goes to a temporary file in the same directory (so the rename cannot cross file
    systems), which is fsynced, renamed over ``path``, and the directory fsynced. Any
    failure removes the temporary file and raises ``error`` (AtomicWriteError unless the
    caller names its own) naming ``path``;
    a file already at ``path`` stays as it was. ``compress`` writes gzip.
    """

    def __init__(self, path: str | os.PathLike[str], compress: bool = False,
                 error: type[Exception] = AtomicWriteError, mode: int = FILE_MODE) -> None:
        self.path = Path(path)
        self._error = error
        self._mode = mode
        remove_stale_temps(self.path, any_target=True)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.{TEMP_MARK}", suffix=".tmp",
                                       dir=self.path.parent)
        except OSError as e:
            raise self._error(f"{self.path}: cannot write: {describe(e)}") from None
        self._tmp = Path(tmp)
        self._committed = False
        self._file = os.fdopen(fd, "wb")
        self._gzip = gzip.GzipFile(fileobj=self._file, mode="wb", compresslevel=6,
                                   mtime=0) if compress else None

    def _failed(self, e: OSError) -> NoReturn:
        self.abort()
        existed = " (the existing file is unchanged)" if self.path.exists() else ""
        raise self._error(f"{self.path}: cannot write: {describe(e)}; nothing was "
                            f"written{existed}") from None

    def write(self, data: bytes | bytearray) -> None:
        try:
            (self._gzip or self._file).write(data)
        except OSError as e:
            self._failed(e)

    def commit(self) -> None:
        try:
            if self._gzip is not None:
                self._gzip.close()
            self._file.flush()
            os.fsync(self._file.fileno())
            os.fchmod(self._file.fileno(), self._mode)
            self._file.close()
            os.replace(self._tmp, self.path)
        except OSError as e:
            self._failed(e)
        self._committed = True
        try:
            dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as e:
            raise self._error(f"{self.path}: written, but syncing its directory failed: "
                                f"{describe(e)}") from None

    def abort(self) -> None:
        """Give up: close and remove the temporary file (never raises; nothing to do once
        committed)."""
        if self._committed:
            return
        for closer in (self._gzip, self._file):
            try:
                if closer is not None:
                    closer.close()
            except (OSError, ValueError):
                pass
        try:
            self._tmp.unlink()
        except OSError:
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


def write_atomic(path: str | os.PathLike[str], data: bytes | bytearray, compress: bool = False,
                 error: type[Exception] = AtomicWriteError, mode: int = FILE_MODE) -> None:
    with AtomicFile(path, compress, error, mode) as f:
        f.write(data)


def sync_generated(files: dict[Path, str], check: bool, shown_from: Path) -> int:
    """Bring generated files up to date (or, with ``check``, only report the stale ones):
    prints one line per stale file, relative to ``shown_from``; returns the exit status
    (1 when checking found a stale file)."""
    stale = []
    for path, text in files.items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path)
        if not check:
            write_atomic(path, text.encode(), mode=SHARED_FILE_MODE)
    for path in stale:
        print(f"{'stale' if check else 'wrote'}: {path.relative_to(shown_from)}")
    return 1 if check and stale else 0
