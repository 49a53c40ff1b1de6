"""Files: atomic writes, compressed cassettes, and reading only regular files."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from cassette.errors import (
    CassetteIOError,
    NotRegularFileError,
)

TMP_SUFFIX = ".tmp"


# --- atomic files ---------------------------------------------------------------------------------


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves the old file or the new one, never a torn one.

    A FIFO, socket or device at ``path`` raises `NotRegularFileError`: the rename would put a
    file in its place (``/dev/null`` made a regular file).
    """
    refuse_special(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")
    try:
        with _created(tmp) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


# How often a write makes its folder again after another process removed it (see `_created`).
_FOLDER_TRIES = 8


def _created(tmp: Path) -> BinaryIO:
    """``tmp`` opened for writing, its folder made first.

    `cassette gc` removes a blob folder it leaves empty, and may do so between the ``mkdir``
    and the ``open`` of a recording writing a new blob there: the folder is made again and
    the open retried (as git does when `git prune` empties an object folder), a few times.
    """
    for _ in range(_FOLDER_TRIES - 1):
        # FileExistsError: the folder was there for mkdir and gone when it checked it is one
        with contextlib.suppress(FileNotFoundError, FileExistsError):
            tmp.parent.mkdir(parents=True, exist_ok=True)
            return open(tmp, "wb")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    return open(tmp, "wb")


# --- reading files that must be regular -----------------------------------------------------------

# A manifest larger than this is refused before it is read: far above any real cassette (they hold
# references, payloads live in blobs), low enough that a bad `st_size` cannot ask for all memory.
MAX_MANIFEST_BYTES = 4 * 2**30
_NONBLOCK = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def refuse_special(path: str | os.PathLike[str]) -> None:
    """Raise `NotRegularFileError` when ``path`` itself (not a symlink's target) is a FIFO, socket or device.

    Nothing there, a regular file, a directory or a symlink passes: writing over a symlink
    replaces the link, never what it points to.
    """
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return  # nothing there (or a name the write itself will refuse, with its own error)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
        raise NotRegularFileError(path, file_kind(mode))


def file_kind(mode: int) -> str:
    """What a non-regular file is, for a message: ``"a FIFO (named pipe)"``, ``"a character device"``..."""
    for check, kind in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if check(mode):
            return kind
    return "not a regular file"


def read_regular(path: str | os.PathLike[str], *, limit: int | None = MAX_MANIFEST_BYTES) -> bytes:
    """The bytes of ``path`` (symlinks followed), which must be a regular file of at most ``limit`` bytes.

    One ``open`` (non-blocking, so a FIFO cannot stall it), one ``fstat``, one read sized
    from it. A FIFO, socket or device raises `NotRegularFileError` instead of blocking or
    reading forever; a directory raises `IsADirectoryError`, as `open` does; other failures
    raise the `OSError` that ``open`` raised. A file that grows while it is read is read to
    its end.

    Example::

        data = read_regular("tests/cassettes/triage.json")
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        try:  # a socket (or a device with no driver behind it) cannot be opened: say which it is
            mode = os.stat(path).st_mode
        except OSError:
            raise exc from None
        raise NotRegularFileError(path, file_kind(mode)) from None
    with open(fd, "rb", buffering=0) as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
            raise NotRegularFileError(path, file_kind(info.st_mode))
        if limit is not None and info.st_size > limit:
            raise OSError(
                errno.EFBIG,
                f"it is {info.st_size} bytes, over the {limit}-byte limit for a cassette file",
                os.fspath(path),
            )
        return fh.readall()


def not_regular_error(path: Path, exc: NotRegularFileError) -> CassetteIOError:
    """The `CassetteIOError` for a manifest path that holds a FIFO, a socket or a device."""
    return CassetteIOError(
        f"cannot read the cassette {str(path.absolute())!r}: {not_regular_reason(path, exc)}. "
        "Remove it, then restore the cassette from git (git checkout -- the file) or re-record it.",
        path=path,
    )


def not_writable_error(path: Path, exc: NotRegularFileError) -> CassetteIOError:
    """The `CassetteIOError` for a cassette path to be written that holds a FIFO, a socket or a device."""
    return CassetteIOError(
        f"cannot write the cassette {str(path.absolute())!r}: {not_regular_reason(path, exc)}, and "
        "recording would replace it. Point the cassette at another path (or remove that file), then "
        "record again.",
        path=path,
    )


def not_regular_reason(path: Path, exc: NotRegularFileError) -> str:
    """``"it is a FIFO (named pipe), not a regular file"``, naming a symlink's target when it is one."""
    try:
        target = f"a symlink to {os.readlink(path)}, which is " if os.path.islink(path) else ""
    except OSError:
        target = ""
    return f"it is {target}{exc.kind}, not a regular file"
