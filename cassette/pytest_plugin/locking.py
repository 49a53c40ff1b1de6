"""Cross-process record locks: two xdist workers never record one cassette file at once."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cassette.config import Config
from cassette.core.paths import resolve_path
from cassette.seam.session import Mode, resolve_mode

_HELD: dict[str, int] = {}  # this process's record locks: a nested or leaked one must not self-deadlock
_HELD_LOCK = threading.Lock()


class RecordLock:
    """Held while a test records a cassette, so two processes (xdist workers) never record one file at once.

    Without it both would see the file missing, both would record, and the last writer would
    silently drop the other's recording. With it the second waits, then reads the cassette as
    the first left it, exactly as in a serial run. An OS file lock (``flock``; ``msvcrt.locking`` on
    Windows) in the temp dir: released by the OS if the worker dies, never left in the repo.
    """

    def __init__(self, path: Path) -> None:
        self.key = str(resolve_path(path))
        self.handle: Any = None
        with _HELD_LOCK:
            if self.key in _HELD:
                _HELD[self.key] += 1
                return
            _HELD[self.key] = 1
        try:
            self.handle = self._acquire()
        except BaseException:
            self._forget()
            raise

    def _acquire(self) -> Any:
        tag = str(os.getuid()) if hasattr(os, "getuid") else "user"
        folder = Path(tempfile.gettempdir()) / f"cassette-locks-{tag}"
        name = hashlib.sha256(self.key.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".lock"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            handle = open(folder / name, "a+b")  # noqa: SIM115 - held until release()
        except OSError:
            return None  # no usable temp dir: record unlocked, as before
        try:
            if sys.platform == "win32":
                import msvcrt  # deferred: Windows only

                while True:
                    try:
                        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                        break
                    except OSError:
                        time.sleep(0.05)
            else:
                import fcntl  # deferred: POSIX only

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except BaseException:
            handle.close()
            raise
        return handle

    def _forget(self) -> None:
        with _HELD_LOCK:
            count = _HELD.get(self.key, 0) - 1
            if count > 0:
                _HELD[self.key] = count
            else:
                _HELD.pop(self.key, None)

    def release(self) -> None:
        handle, self.handle = self.handle, None
        self._forget()
        if handle is not None:
            handle.close()  # closing drops the OS lock


def will_write(path: Path, mode: str | None, cfg: Config) -> bool:
    resolved = resolve_mode(mode, cfg)
    return resolved in (Mode.RECORD, Mode.RERECORD) or (resolved is Mode.AUTO and not path.exists())


def file_mark(path: Path) -> tuple[int, int, int, int] | None:
    """What is at ``path`` now. Every cassette write is an atomic rename of a new file: a new inode."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
