"""The content-addressed blob store: blobs named by their git blob id."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cassette.core.paths import resolve_path
from cassette.errors import (
    CassetteIOError,
    InvalidBlobRefError,
    MissingBlobError,
    TamperedBlobError,
)
from cassette.store.files import MAX_MANIFEST_BYTES, TMP_SUFFIX, atomic_write

BLOB_DIR_NAME = ".blobs"
BLOB_ID = re.compile(r"[0-9a-f]{40}")
# A recording in progress: `.recording.<pid>.<hex>.tmp` in the store's top folder, made before its
# first blob is written or touched and removed once its manifest is in place (see `BlobStore.writing`).
WRITER_PREFIX = ".recording"


# --- blob store -----------------------------------------------------------------------------------


def git_blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints)."""
    h = hashlib.sha1(b"blob %d\x00" % len(data))  # git's own object id, not a security hash
    h.update(data)
    return h.hexdigest()


class BlobStore:
    """Content-addressed files ``<root>/<id[:2]>/<id[2:]>``, ids being git blob ids.

    Writes are idempotent and atomic, so any number of processes may write the
    same blob at once. Reads verify the hash and never leave the store.

    Example::

        store = BlobStore(Path("tests/cassettes/.blobs"))
        blob_id = store.put(b"a long system prompt ...")
        assert store.get(blob_id) == b"a long system prompt ..."
    """

    # set by `writing`: the marker of the recording in progress, made before its first blob
    _marking = False
    _marker: Path | None = None

    def __init__(self, root: Path) -> None:
        # hydrate() builds one per call: re-parsing a Path costs more than the blob lookup itself
        self.root = root if isinstance(root, Path) else Path(root)
        # the store's own real path, kept once a read succeeded: resolving it costs a system call
        # per path component, as much as the rest of a read (replay reads a few blobs per call)
        self._real_root: str | None = None

    def path_for(self, blob_id: str, *, manifest: Path | None = None) -> Path:
        """Where blob ``blob_id`` lives; an id that is not 40 lower-case hex digits is refused.

        ``manifest``, the cassette holding the reference, is what the error names: the reference
        is wrong there, not in the store.
        """
        if not isinstance(blob_id, str) or not BLOB_ID.fullmatch(blob_id):
            if manifest is not None:
                raise invalid_ref_error(manifest, blob_id)
            raise InvalidBlobRefError(
                f"invalid blob reference {str(blob_id)[:80]!r} (expected 40 lower-case hex digits) "
                f"for store {self.root}. The manifest was edited by hand or corrupted; re-record it.",
                path=self.root,
            )
        return self.root / blob_id[:2] / blob_id[2:]

    def put(self, data: bytes) -> str:
        """Store ``data`` under its id; a blob already there is touched (its mtime is this use's).

        `cassette gc` keeps a blob touched after it started, so a recording that re-uses an
        old, unreferenced blob never loses it to a gc running at the same moment.
        """
        blob_id = git_blob_id(data)
        target = self.path_for(blob_id)
        if self._marking and self._marker is None:
            self._marker = _writer_marker(self.root)
        if not _touched(target):
            atomic_write(target, data)
        return blob_id

    @contextlib.contextmanager
    def writing(self) -> Iterator[BlobStore]:
        """Mark a recording in progress for `cassette gc` while it writes its blobs, then its manifest.

        A marker file ``.recording.<pid>.<hex>.tmp`` is made in the store before the first
        blob is written (or touched) and removed when the block ends; gc keeps every blob
        modified after the oldest live marker started, so blobs written for a manifest not
        yet saved are never taken for garbage. No blob written: no marker, no store made.

        Example::

            with store.writing():
                manifest = manifest_bytes(cassette, store, 512)
                atomic_write(path, manifest)
        """
        self._marking = True
        try:
            yield self
        finally:
            self._marking = False
            marker, self._marker = self._marker, None
            if marker is not None:
                with contextlib.suppress(OSError):
                    marker.unlink()

    def has(self, blob_id: str) -> bool:
        return self.path_for(blob_id).is_file()

    def get(self, blob_id: str, *, manifest: Path | None = None) -> bytes:
        target = self.path_for(blob_id, manifest=manifest)
        where = f" (referenced by {manifest})" if manifest else ""
        try:
            real_root = self._real_root or os.path.realpath(self.root)
            real = _unlinked(real_root, blob_id)
            if real is None:  # a symlink in the store: where does it lead?
                real = os.path.realpath(target)
                if os.path.commonpath([real_root, real]) != real_root:
                    raise TamperedBlobError(
                        f"blob {blob_id} in {self.root}{where} resolves outside the store (a symlink?). "
                        "Remove it and re-record the cassette.",
                        path=manifest or target,
                    )
            # O_NONBLOCK: a FIFO planted under a blob name must not block the reader forever
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
            with open(fd, "rb") as fh:
                info = os.fstat(fh.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise MissingBlobError(
                        f"blob {blob_id} in {self.root}{where} is not a regular file. "
                        "Remove it and re-record the cassette.",
                        path=manifest or target,
                    )
                if info.st_size > MAX_MANIFEST_BYTES:  # a planted (sparse) giant: never read whole
                    raise MissingBlobError(
                        f"blob {blob_id} in {self.root}{where} is {info.st_size:,} bytes, over the "
                        f"{MAX_MANIFEST_BYTES:,} a cassette file may hold: cassette did not write it. "
                        "Remove it and re-record the cassette.",
                        path=manifest or target,
                    )
                data = fh.read()
            self._real_root = real_root
        except FileNotFoundError:
            raise MissingBlobError(
                f"blob {blob_id} is missing from {self.root}{where}. Commit the store's files "
                "(git add the .blobs directory) or re-record the cassette.",
                path=manifest or target,
            ) from None
        except OSError as exc:  # a directory, a symlink loop, no permission, an I/O error
            raise MissingBlobError(
                f"blob {blob_id} in {self.root}{where} cannot be read ({exc.strerror or exc}). "
                "Re-record the cassette.",
                path=manifest or target,
            ) from None
        if git_blob_id(data) != blob_id:
            raise TamperedBlobError(
                f"blob {blob_id} in {self.root}{where} does not match its hash: it was modified. "
                "Restore it from git (git checkout -- the blob) or re-record the cassette.",
                path=manifest or target,
            )
        return data


def _touched(path: Path) -> bool:
    """Set an existing blob's mtime to now; False when there is no blob there (write it)."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    except OSError:  # a read-only store (someone else's files): there it is, as it was
        return path.is_file()
    return True


def _writer_marker(root: Path) -> Path:
    """Make this recording's marker in the store ``root`` (made if need be) and return its path."""
    root.mkdir(parents=True, exist_ok=True)
    marker = root / f"{WRITER_PREFIX}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}"
    with open(marker, "xb"):
        pass
    return marker


def _unlinked(real_root: str, blob_id: str) -> str | None:
    """The blob's path under the store's real path when neither its folder nor its file is a symlink.

    Then it is its own real path: two ``lstat`` calls instead of `os.path.realpath`'s one per
    path component, which cost as much as the read itself. None: resolve it in full.
    """
    if os.name != "posix":  # a Windows junction is no symlink to lstat
        return None
    folder = os.path.join(real_root, blob_id[:2])
    path = os.path.join(folder, blob_id[2:])
    if stat.S_ISLNK(os.lstat(folder).st_mode) or stat.S_ISLNK(os.lstat(path).st_mode):
        return None
    return path


def default_store_for(cassette_path: Path) -> Path:
    """Where a cassette's blobs live when nothing says otherwise.

    The nearest existing ``.blobs`` directory among the cassette's ancestors up
    to the project root (a directory holding ``.git`` or ``pyproject.toml``),
    else ``<cassette dir>/.blobs``.
    """
    try:
        parent = resolve_path(cassette_path).parent
        for d in (parent, *parent.parents):
            if (d / BLOB_DIR_NAME).is_dir():
                return d / BLOB_DIR_NAME
            if (d / ".git").exists() or (d / "pyproject.toml").exists():
                break
    except OSError as exc:  # a name too long, no permission to look
        raise CassetteIOError(
            f"cannot look for the blob store of {cassette_path} ({exc.strerror or exc}). "
            "Fix the cassette path or its directory's permissions.",
            path=cassette_path,
        ) from None
    return parent / BLOB_DIR_NAME


def invalid_ref_error(manifest: Path, blob_id: Any) -> InvalidBlobRefError:
    """The error for a ``{"$blob": …}`` whose id is not a blob id, naming the manifest that holds it."""
    return InvalidBlobRefError(
        f"{manifest}: invalid blob reference {str(blob_id)[:80]!r} (expected 40 lower-case hex digits). "
        f"The manifest was edited by hand or corrupted: restore it from git (git checkout -- {manifest}) "
        "or re-record the cassette.",
        path=manifest,
    )
