"""Canonical JSON, the content-addressed blob store, and reading/writing manifests.

The store knows nothing of HTTP: it stores JSON values and byte strings.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import json
import os
import re
import secrets
import stat
import struct
import zlib
from functools import cached_property
from itertools import repeat
from operator import getitem
from pathlib import Path
from typing import Any, cast

import orjson

from cassette._config import resolve_path
from cassette._errors import (
    CassetteIOError,
    CassetteNotFoundError,
    CassetteShapeError,
    CorruptCassetteError,
    InvalidBlobRefError,
    MissingBlobError,
    TamperedBlobError,
    TruncatedCassetteError,
    UnsupportedVersionError,
)
from cassette._model import KINDS, Cassette, Interaction

FORMAT_VERSION = 1
READABLE_VERSIONS = (1,)
BLOB_DIR_NAME = ".blobs"
TMP_SUFFIX = ".tmp"
_BLOB_ID = re.compile(r"[0-9a-f]{40}")


# --- canonical JSON -------------------------------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """Compact JSON with sorted keys: the bytes that match keys and blob ids are computed from.

    Example::

        canonical_json({"b": 1, "a": [1, 2]}) == b'{"a":[1,2],"b":1}'
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers beyond 64 bits, non-str keys: the stdlib handles them
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def json_safe(value: Any) -> Any:
    """``value`` with every string one JSON can hold: a file name that is not UTF-8 (read from the
    disk as surrogate escapes) keeps its bad bytes as ``\\xff`` escapes (``c\\xff.json``); any other
    lone surrogate becomes ``\\udXXX``. Strings that are valid already are the same objects."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            try:
                return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            except UnicodeEncodeError:
                return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """``value`` as two-space indented JSON text and a newline, the CLI's ``--format json`` output;
    strings JSON cannot hold are escaped first (`json_safe`)."""
    return orjson.dumps(json_safe(value), option=orjson.OPT_INDENT_2).decode() + "\n"


def ordered_json(value: Any) -> bytes:
    """Compact JSON keeping every object's key order (payloads: user code can observe the order)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def pretty_json(value: Any) -> bytes:
    """The manifest layout: two-space indent, trailing newline, key order as given."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"
    except TypeError:
        return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()


# A manifest line holds a small object or array whole when it fits in this many columns (UTF-8 bytes:
# a line of non-ASCII text is expanded a little earlier, never later).
MANIFEST_WIDTH = 100


def manifest_json(doc: dict[str, Any]) -> bytes:
    """The manifest layout: one field of the envelope per line, small values kept on one line.

    The top level, the ``interactions`` list and each interaction are always
    expanded (one field per line, two-space indent); below them an object or
    array whose ``{"a": 1, "b": [2]}`` form fits within `MANIFEST_WIDTH` columns
    stays on one line, a bigger one is expanded the same way. Key order is kept
    as given; a trailing newline ends the file.

    Example::

        manifest_json({"interactions": [], "version": 1}) == b'{\n  "interactions": [],\n  "version": 1\n}\n'
    """
    try:
        out: list[bytes] = []
        _lay(doc, 0, 0, out, 3)
    except TypeError:  # integers beyond 64 bits, non-str keys: the stdlib's layout
        return pretty_json(doc)
    out.append(b"\n")
    return b"".join(out)


def _lay(value: Any, indent: int, used: int, out: list[bytes], expand: int) -> None:
    """Append ``value`` laid out at ``indent``; ``used`` columns of its first line are taken."""
    is_dict = isinstance(value, dict)
    if not (is_dict or isinstance(value, list)):
        out.append(orjson.dumps(value))
        return
    if not value:
        out.append(b"{}" if is_dict else b"[]")
        return
    if expand <= 0:
        flat = _flat(value, MANIFEST_WIDTH - used - 1)  # - 1: the comma that may follow
        if flat is not None:
            out.append(flat)
            return
    pad = b"\n" + b" " * (indent + 2)
    sep = (b"{" if is_dict else b"[") + pad
    for k, v in value.items() if is_dict else zip(repeat(None), value):
        out.append(sep)
        taken = indent + 2
        if k is not None:
            key = orjson.dumps(k) + b": "
            out.append(key)
            taken += len(key)
        _lay(v, indent + 2, taken, out, expand - 1)
        sep = b"," + pad
    out.append(b"\n" + b" " * indent + (b"}" if is_dict else b"]"))


def _flat(value: Any, room: int) -> bytes | None:
    """``value`` on one line with a space after each comma and colon, or None if it exceeds ``room``."""
    if len(orjson.dumps(value)) > room:  # the compact form is a lower bound: most values stop here
        return None
    flat = _spaced(value)
    return flat if len(flat) <= room else None


def _spaced(value: Any) -> bytes:
    if isinstance(value, dict):
        return b"{" + b", ".join(orjson.dumps(k) + b": " + _spaced(v) for k, v in value.items()) + b"}"
    if isinstance(value, list):
        return b"[" + b", ".join(_spaced(v) for v in value) + b"]"
    return orjson.dumps(value)


def _sorted_envelope(value: dict[str, Any], depth: int) -> dict[str, Any]:
    """Sort the keys of the manifest's own objects (top level, interactions, request and response).

    Payloads below them keep their original key order: a tool result that user
    code serialises into the next prompt must come back exactly as it was.
    """
    out = {}
    for k in sorted(value):
        v = value[k]
        out[k] = _sorted_envelope(v, depth - 1) if depth > 0 and isinstance(v, dict) else v
    return out


def loads(data: bytes | memoryview) -> Any:
    """Parse JSON (a compressed cassette's too); falls back to the stdlib for integers orjson cannot hold.

    A gzip stream that is damaged raises `CompressedDataError`, a `ValueError` as bad JSON's is.
    """
    if data[:2] == GZIP_MAGIC:
        data = gunzip(bytes(data))
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "Integer" not in str(exc) and "number" not in str(exc).lower():
            raise
        return json.loads(bytes(data))


try:  # CPython's own SHA-256 (3.11: _sha256, 3.12 on: _sha2), absent from builds without it
    from _sha256 import sha256 as _builtin_sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - another Python
    try:
        from _sha2 import sha256 as _builtin_sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        _builtin_sha256 = hashlib.sha256
# Below this many bytes a key is hashed by CPython's own SHA-256: OpenSSL 3 fetches its implementation
# on every new hash (a provider lookup under a lock), which between an SDK's calls, with its tables
# out of the CPU's caches, costs more than hashing a request of a few KB; above it OpenSSL's
# vectorised hash wins. The digest is the same either way.
_SMALL_HASH = 8192


def sha256_hex(data: bytes) -> str:
    """The hex SHA-256 of ``data``, by whichever implementation is faster for its size."""
    return (_builtin_sha256 if len(data) <= _SMALL_HASH else hashlib.sha256)(data).hexdigest()


def request_key(request: Any) -> str:
    """The match key: sha256 of the canonical JSON of a normalised, un-redacted request."""
    # `sha256_hex(canonical_json(request))` in one call: every replayed call computes one
    try:
        data = orjson.dumps(request, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        data = canonical_json(request)
    return (_builtin_sha256 if len(data) <= _SMALL_HASH else hashlib.sha256)(data).hexdigest()


# --- atomic files ---------------------------------------------------------------------------------


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves the old file or the new one, never a torn one.

    A FIFO, socket or device at ``path`` raises `NotRegularFileError`: the rename would put a
    file in its place (``/dev/null`` made a regular file).
    """
    refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")
    try:
        with open(tmp, "wb") as fh:
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


# --- compressed cassettes ------------------------------------------------------------------------

# A cassette written with `compress = true` is its manifest's JSON in one gzip member (RFC 1952).
# Readers tell it by its first two bytes: JSON never starts with 0x1f. The header is fixed (no time,
# no name, OS "unknown"), so the same manifest gives the same file on every machine whose zlib
# compresses alike, and a save whose content did not change leaves the file as it is.
GZIP_MAGIC = b"\x1f\x8b"
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # deflate, no flags, mtime 0, best, OS unknown
# what a compressed cassette may expand to: far above any real one, low enough not to exhaust memory
MAX_INFLATED_BYTES = 2**30


class CompressedDataError(ValueError):
    """A compressed cassette that cannot be expanded; ``truncated`` when its gzip data ends early."""

    def __init__(self, reason: str, *, truncated: bool = False) -> None:
        super().__init__(reason)
        self.truncated = truncated


def is_compressed(data: bytes | memoryview) -> bool:
    """Whether ``data`` is a compressed cassette (a gzip stream), not JSON."""
    return data[:2] == GZIP_MAGIC


def gzip_bytes(data: bytes) -> bytes:
    """``data`` as one gzip member at level 9 with a fixed header: what `compress = true` writes.

    Example::

        gunzip(gzip_bytes(b'{"version": 1}')) == b'{"version": 1}'
    """
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    body = deflate.compress(data) + deflate.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def gunzip(data: bytes, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """The bytes inside one gzip member; `CompressedDataError` when it is damaged, cut short or too big."""
    # the trailer's size (mod 2**32): one past the limit is a bomb, or a file cut short or damaged,
    # whose last bytes are not a trailer. Which one is found inflating it without keeping the bytes:
    # a bomb costs time, not memory
    if len(data) >= 18 and int.from_bytes(data[-4:], "little") > limit:
        _inflate_counting(data, limit)
    inflate = zlib.decompressobj(wbits=31)  # gzip only; checks the header, the CRC and the length
    try:
        out = inflate.decompress(data, limit + 1)
    except zlib.error as exc:
        raise CompressedDataError(f"its gzip data is damaged ({exc})") from None
    except MemoryError:  # a limit on this process's memory below what it expands to
        raise CompressedDataError("it expands to more than this process has memory for") from None
    if len(out) > limit:
        raise CompressedDataError(f"it expands to more than {limit:,} bytes, more than a cassette may hold")
    if not inflate.eof:
        raise CompressedDataError("its gzip data ends early", truncated=True)
    if inflate.unused_data:
        raise CompressedDataError(f"{len(inflate.unused_data):,} bytes follow the end of its gzip data")
    return out


_COUNT_STEP = 16 * 2**20


def _inflate_counting(data: bytes, limit: int) -> None:
    """Inflate ``data`` (one gzip member) ``_COUNT_STEP`` bytes at a time, keeping none of it: the
    `CompressedDataError` `gunzip` would raise, found without holding what it expands to."""
    inflate = zlib.decompressobj(wbits=31)
    size, pending = 0, data
    try:
        while not inflate.eof:
            piece = inflate.decompress(pending, _COUNT_STEP)
            size += len(piece)
            if size > limit:
                raise CompressedDataError(
                    f"it expands to more than {limit:,} bytes, more than a cassette may hold"
                )
            pending = inflate.unconsumed_tail
            if not pending and len(piece) < _COUNT_STEP:
                break  # every byte read and nothing more to write: the data ends early
    except zlib.error as exc:
        raise CompressedDataError(f"its gzip data is damaged ({exc})") from None


def salvage(data: bytes, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """As much of a damaged gzip stream as inflates, for the secret scan: a file that does not
    expand whole may still hold a key in what does (cut short, a bad CRC, bytes after its end,
    several members). Whatever follows the last member that could be read is kept as it is.

    Example::

        salvage(gzip_bytes(b"key=...")[:-8]) == b"key=..."  # the trailer cut off
    """
    for room in (limit, limit // 16):
        try:
            return _salvaged(data, room)
        except MemoryError:  # more than this process has memory for: a sixteenth of it, or nothing
            continue
    return b""


def _salvaged(data: bytes, limit: int) -> bytes:
    out: list[bytes] = []
    rest = data
    while rest[:2] == GZIP_MAGIC and sum(map(len, out)) <= limit:
        room = limit + 1 - sum(map(len, out))
        try:
            inflated, rest = _member(rest, room, 4096)
        except zlib.error:  # damaged: again a byte at a time, to keep all that precedes the damage
            try:
                inflated, rest = _member(rest, room, 1, out)
            except zlib.error:
                return b"".join(out)
        out.append(inflated)
        if rest is None:
            return b"".join(out)  # cut short
    out.append(rest)
    return b"".join(out)[: limit + 1]


def _member(data: bytes, room: int, step: int, keep: list[bytes] | None = None) -> tuple[bytes, Any]:
    """Inflate the gzip member at the start of ``data``, ``step`` bytes at a time: (what it holds,
    the bytes after it, or None when it is cut short). With ``keep``, what inflates before a
    `zlib.error` is appended to it first."""
    inflate = zlib.decompressobj(wbits=31)
    pieces: list[bytes] = []
    at = size = 0
    try:
        while at < len(data) and not inflate.eof and size < room:
            pending = data[at : at + step]
            at += len(pending)
            while pending and not inflate.eof and size < room:
                piece = inflate.decompress(pending, room - size)
                pieces.append(piece)
                size += len(piece)
                pending = inflate.unconsumed_tail
    except zlib.error:
        if keep is not None:
            keep.append(b"".join(pieces))
        raise
    return b"".join(pieces), (inflate.unused_data + data[at:]) if inflate.eof else None


def expand(data: bytes, path: Path) -> bytes:
    """A manifest's JSON bytes: ``data`` itself, or what it expands to when it is compressed.

    A compressed file that cannot be expanded raises `TruncatedCassetteError` (cut short) or
    `CorruptCassetteError`, naming ``path``.
    """
    if data[:2] != GZIP_MAGIC:
        return data
    try:
        return gunzip(data)
    except CompressedDataError as exc:
        error = TruncatedCassetteError if exc.truncated else CorruptCassetteError
        what = "it was truncated" if exc.truncated else "it was damaged"
        raise error(
            f"{path} is a compressed cassette, but {exc}: {what}. "
            "Restore it from git (git checkout -- <file>) or re-record it.",
            path=path,
        ) from None


# --- reading files that must be regular -----------------------------------------------------------

# A manifest larger than this is refused before it is read: far above any real cassette (they hold
# references, payloads live in blobs), low enough that a bad `st_size` cannot ask for all memory.
MAX_MANIFEST_BYTES = 4 * 2**30
_NONBLOCK = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFileError(OSError):
    """An `OSError` for a path that is a FIFO, a socket or a device (``kind`` says which)."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__()
        self.filename = os.fspath(path)
        self.strerror = f"not a regular file: it is {kind}"
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


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
        if not isinstance(blob_id, str) or not _BLOB_ID.fullmatch(blob_id):
            if manifest is not None:
                raise invalid_ref_error(manifest, blob_id)
            raise InvalidBlobRefError(
                f"invalid blob reference {str(blob_id)[:80]!r} (expected 40 lower-case hex digits) "
                f"for store {self.root}. The manifest was edited by hand or corrupted; re-record it.",
                path=self.root,
            )
        return self.root / blob_id[:2] / blob_id[2:]

    def put(self, data: bytes) -> str:
        blob_id = git_blob_id(data)
        target = self.path_for(blob_id)
        if not target.exists():
            atomic_write(target, data)
        return blob_id

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


# --- blob references in JSON values ---------------------------------------------------------------


def dehydrate(value: Any, store: BlobStore, threshold: int, *, chains: bool = True) -> Any:
    """Move large strings and large objects inside lists to the store, leaving ``{"$blob": id}``.

    A string of ``threshold`` UTF-8 bytes or more becomes a text blob; an object
    inside a list (a chat message, a tool schema) whose JSON is that large becomes
    a JSON blob ``{"$blob": id, "$json": true}``. With ``chains`` (requests), a list
    of objects directly under ``value`` (``messages``, ``input``, ``tools``) becomes
    a chain (`_chain`). Identical payloads share one blob, so a conversation that
    repeats its history costs O(turns), not O(turns²). Responses keep their lists
    (tool calls, choices) in the manifest: they are not repeated, so a chain would
    only split them into small files a reviewer cannot read.

    Example::

        dehydrate({"content": "x" * 600}, store, 512) == {"content": {"$blob": "<id>"}}
    """
    if threshold <= 0:
        return value
    if not chains or not isinstance(value, dict) or "$blob" in value or "$literal" in value:
        return _dehydrate(value, store, threshold, in_list=False)
    out = {}
    for k, v in value.items():
        if (
            isinstance(v, list)
            and len(v) >= CHAIN_MIN
            and all(isinstance(x, dict) for x in v)
            and len(ordered_json(v)) >= threshold
        ):
            out[k] = _chain(v, store, threshold)
        else:
            out[k] = _dehydrate(v, store, threshold, in_list=False)
    return out


def _dehydrate(value: Any, store: BlobStore, threshold: int, *, in_list: bool) -> Any:
    if isinstance(value, str):
        if len(value) * 4 < threshold:  # cheap bound before encoding
            return value
        data = value.encode("utf-8", "surrogatepass")
        if len(data) >= threshold:
            return {"$blob": store.put(data)}
        return value
    if isinstance(value, list):
        return [_dehydrate(v, store, threshold, in_list=True) for v in value]
    if isinstance(value, dict):
        if "$blob" in value or "$literal" in value:  # user data that looks like a reference
            return {"$literal": {k: _dehydrate(v, store, threshold, in_list=False) for k, v in value.items()}}
        out = {k: _dehydrate(v, store, threshold, in_list=False) for k, v in value.items()}
        if in_list:
            data = ordered_json(out)
            if len(data) >= threshold:
                return {"$blob": store.put(data), "$json": True}
        return out
    return value


CHAIN_MIN = 4  # request lists of this many objects or more (messages, input items, tools) become chains
CHAIN_MAX = 1_000_000


def _chain(items: list[Any], store: BlobStore, threshold: int) -> dict[str, Any]:
    """Store a list of objects as a hash chain of JSON blobs, one node per item.

    Node ``i`` is ``{"item": items[i], "prev": <ref to node i-1> | null}``, so a
    request that repeats the previous request's history plus two new messages
    adds two nodes: a conversation costs O(turns) on disk, not O(turns²). The
    manifest keeps ``{"$blob": <last node>, "$json": true, "$chain": len}``.
    """
    prev: dict[str, Any] | None = None
    for item in items:
        node = {"item": _dehydrate(item, store, threshold, in_list=False), "prev": prev}
        prev = {"$blob": store.put(ordered_json(node)), "$json": True}
    assert prev is not None
    return {**prev, "$chain": len(items)}


def invalid_ref_error(manifest: Path, blob_id: Any) -> InvalidBlobRefError:
    """The error for a ``{"$blob": …}`` whose id is not a blob id, naming the manifest that holds it."""
    return InvalidBlobRefError(
        f"{manifest}: invalid blob reference {str(blob_id)[:80]!r} (expected 40 lower-case hex digits). "
        f"The manifest was edited by hand or corrupted: restore it from git (git checkout -- {manifest}) "
        "or re-record the cassette.",
        path=manifest,
    )


def _chain_length(ref: dict[str, Any], manifest: Path) -> int:
    length = ref.get("$chain")
    if isinstance(length, bool) or not isinstance(length, int) or not 0 < length <= CHAIN_MAX:
        raise InvalidBlobRefError(
            f"{manifest}: a chain reference has length {length!r:.80}. Restore the cassette from git "
            "or re-record it.",
            path=manifest,
        )
    return length


def _chain_link(node_ref: Any, manifest: Path) -> Any:
    """The blob id a chain link names; a link that is not a JSON blob reference is refused."""
    if not isinstance(node_ref, dict) or not node_ref.get("$json"):
        raise InvalidBlobRefError(
            f"{manifest}: a chain node links to {node_ref!r:.80}, not to a JSON blob. Restore the "
            "cassette and its blob store from git or re-record the cassette.",
            path=manifest,
        )
    return node_ref.get("$blob")


def _chain_node(node: Any, node_id: Any, manifest: Path) -> dict[str, Any]:
    if not isinstance(node, dict) or node.keys() != {"item", "prev"}:
        held = type(node).__name__ if not isinstance(node, dict) else f"the fields {sorted(node)!r:.80}"
        raise TamperedBlobError(
            f"{manifest}: blob {node_id} is not a chain node (an object with `item` and `prev` only; "
            f"it holds {held}). Restore the blob store from git or re-record the cassette.",
            path=manifest,
        )
    return node


def _chain_count_error(manifest: Path, found: int, length: int) -> TamperedBlobError:
    if found > length:
        what = f"a chain is longer than the {length} items its reference declares"
    else:
        what = f"a chain has {found} items, its reference declares {length}"
    return TamperedBlobError(
        f"{manifest}: {what}. Restore the blob store from git or re-record the cassette.", path=manifest
    )


def walk_chain(ref: dict[str, Any], read_json: Any, manifest: Path) -> list[Any]:
    """The items of a chain reference, first to last; ``read_json(id)`` returns a verified node."""
    length = _chain_length(ref, manifest)
    items: list[Any] = []
    node_ref: Any = ref
    while node_ref is not None:
        if len(items) >= length:
            raise _chain_count_error(manifest, length + 1, length)
        node_id = _chain_link(node_ref, manifest)
        node = _chain_node(read_json(node_id), node_id, manifest)
        items.append(node["item"])
        node_ref = node["prev"]
    if len(items) != length:
        raise _chain_count_error(manifest, len(items), length)
    items.reverse()
    return items


def hydrate(value: Any, cassette: Cassette) -> Any:
    """Resolve every blob reference in ``value`` against the cassette's store.

    Blob contents are verified against their id when first read, then cached on
    the cassette, so a system prompt shared by every call is read once.
    """
    store = BlobStore(cassette.store) if cassette.store else None
    try:
        return _hydrate(value, store, cassette.path, 0, cassette.blob_cache, _Expansion(cassette.path))
    except RecursionError:
        raise CassetteShapeError(
            f"{cassette.path}: a recorded value nests too deeply to replay. Re-record the cassette.",
            path=cassette.path,
        ) from None


# One hydrated value may repeat a blob, but a few small blobs referencing each other many times
# would expand exponentially: past the floor, expansion may not exceed this multiple of the distinct bytes.
EXPANSION_FLOOR = 16 * 1024 * 1024
EXPANSION_RATIO = 64


class _Expansion:
    """Bytes resolved from blobs while hydrating one value (a reference bomb stops here)."""

    __slots__ = ("distinct", "manifest", "seen", "spent")

    def __init__(self, manifest: Path) -> None:
        self.manifest = manifest
        self.spent = 0
        self.distinct = 0
        self.seen: set[str] = set()

    def spend(self, blob_id: str, size: int) -> None:
        size = max(size, 1024)  # each resolution costs work, however small the blob
        if blob_id not in self.seen:
            self.seen.add(blob_id)
            self.distinct += size
        self.spent += size
        if self.spent > EXPANSION_FLOOR and self.spent > EXPANSION_RATIO * self.distinct:
            raise InvalidBlobRefError(
                f"{self.manifest}: its blob references expand to over {self.spent // 2**20} MiB from "
                f"{self.distinct} bytes of blobs (references to references, a reference bomb). "
                "Re-record the cassette.",
                path=self.manifest,
            )


def _hydrate(
    value: Any,
    store: BlobStore | None,
    manifest: Path,
    depth: int,
    cache: dict[str, Any],
    budget: _Expansion | None = None,
) -> Any:
    if budget is None:
        budget = _Expansion(manifest)
    if isinstance(value, list):
        return [_hydrate(v, store, manifest, depth, cache, budget) for v in value]
    if not isinstance(value, dict):
        return value
    if "$blob" in value:
        blob_id = value["$blob"]
        if store is None:
            raise MissingBlobError(
                f"{manifest} references blob {blob_id!r} but has no blob store. Re-record the cassette.",
                path=manifest,
            )
        if set(value) - {"$blob", "$json", "$chain"}:
            raise InvalidBlobRefError(
                f"{manifest}: a blob reference has unexpected fields {sorted(value)}. "
                "Re-record the cassette.",
                path=manifest,
            )
        if not isinstance(blob_id, str):
            raise invalid_ref_error(manifest, blob_id)  # (and keeps a list out of the cache key)
        is_json = bool(value.get("$json"))
        if "$chain" in value and store is not None:
            chain_store = store

            def read_node(node_id: Any) -> Any:
                hit = cache.get(node_id) if isinstance(node_id, str) else None
                if hit is None or not hit[0]:
                    data = chain_store.get(node_id, manifest=manifest)
                    hit = (True, _decode_blob(data, node_id, manifest, True), len(data))
                    cache[node_id] = hit
                budget.spend(node_id, hit[2])
                return hit[1]

            items = walk_chain(value, read_node, manifest)
            return [_hydrate(item, store, manifest, depth + 1, cache, budget) for item in items]
        cached = cache.get(blob_id)
        if cached is None or cached[0] != is_json:
            data = store.get(blob_id, manifest=manifest)
            cached = (is_json, _decode_blob(data, blob_id, manifest, is_json), len(data))
            cache[blob_id] = cached
        budget.spend(blob_id, cached[2])
        if not is_json:
            return cached[1]
        if depth > 32:
            raise InvalidBlobRefError(
                f"{manifest}: blob references nest deeper than 32 levels. Re-record the cassette.",
                path=manifest,
            )
        return _hydrate(cached[1], store, manifest, depth + 1, cache, budget)
    if "$literal" in value and len(value) == 1 and isinstance(value["$literal"], dict):
        return {k: _hydrate(v, store, manifest, depth, cache, budget) for k, v in value["$literal"].items()}
    return {k: _hydrate(v, store, manifest, depth, cache, budget) for k, v in value.items()}


def _decode_blob(data: bytes, blob_id: str, manifest: Path, is_json: bool) -> Any:
    if is_json:
        try:
            return loads(data)
        except (ValueError, RecursionError) as exc:
            raise TamperedBlobError(
                f"{manifest}: JSON blob {blob_id} does not parse ({exc}). Re-record the cassette.",
                path=manifest,
            ) from None
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise TamperedBlobError(
            f"{manifest}: text blob {blob_id} is not UTF-8. Re-record the cassette.", path=manifest
        ) from None


_REF_FIELDS = frozenset(("$blob", "$json", "$chain"))


def check_refs(
    value: Any, cassette: Cassette, verified: dict[str, int] | None = None, store: BlobStore | None = None
) -> None:
    """Make sure every blob ``value`` needs is present and intact: those it references, and theirs.

    JSON blobs are read and their own references followed; a chain is walked node by node,
    each checked for its shape, and its length against the one its reference declares.
    Nothing is rebuilt. ``verified`` remembers, across calls, each blob that checked out with
    everything below it (a text blob as 0, a JSON blob as -1, a chain node as the length of
    the chain it ends): a chain is walked back only to the first node already checked, so
    consecutive requests sharing a history read only their new nodes. What a call checks is
    added to ``verified`` only when all of ``value`` checks out. ``store``, if given, is the
    cassette's store read by every call (else one is made for this call).

    Example::

        check_refs(cassette.interactions[0].request, cassette)  # raises MissingBlobError, ...
    """
    manifest = cassette.path
    done: dict[str, int] = {} if verified is None else verified
    new: dict[str, int] = {}  # checked by this call, kept only if the whole value checks out
    cache = cassette.blob_cache

    def read(blob_id: str, is_json: bool) -> Any:
        nonlocal store
        hit = cache.get(blob_id)
        if hit is not None and (hit[0] or not is_json):  # JSON that parsed is valid UTF-8 text too
            return hit[1]
        if store is None:
            if cassette.store is None:
                raise MissingBlobError(
                    f"{manifest} references blob {blob_id!r} but has no blob store. Re-record the cassette.",
                    path=manifest,
                )
            store = BlobStore(cassette.store)
        data = store.get(blob_id, manifest=manifest)
        decoded = _decode_blob(data, blob_id, manifest, is_json)
        if not is_json:  # text (a system prompt) is kept for hydration; parsed nodes are not needed
            cache[blob_id] = (False, decoded, len(data))
        return decoded

    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
            continue
        if not isinstance(v, dict):
            continue
        if "$blob" not in v:
            if "$literal" in v and len(v) == 1 and isinstance(v["$literal"], dict):
                v = v["$literal"]  # user data: a "$blob" key inside it is not a reference
            stack.extend(v.values())
            continue
        blob_id = v["$blob"]
        if not isinstance(blob_id, str):
            raise invalid_ref_error(manifest, blob_id)
        if not v.keys() <= _REF_FIELDS:
            raise InvalidBlobRefError(
                f"{manifest}: a blob reference has unexpected fields {sorted(v)}. Restore the cassette "
                "from git or re-record it.",
                path=manifest,
            )
        if not v.get("$json"):
            if blob_id not in done and blob_id not in new and blob_id not in cache:
                read(blob_id, False)
                new[blob_id] = 0
        elif "$chain" not in v:
            if not (done.get(blob_id) or new.get(blob_id)):  # unknown, or checked as text only
                stack.append(read(blob_id, True))
                new[blob_id] = -1  # its references are on the stack: checked before this call ends
        else:
            length = _chain_length(v, manifest)
            walked: list[str] = []  # node ids, last to first, down to one already checked
            below = 0  # the length of the chain ending at that node
            node_id: Any = blob_id
            while True:
                if not isinstance(node_id, str):
                    raise invalid_ref_error(manifest, node_id)
                known = done.get(node_id) or new.get(node_id)
                if known is not None and known > 0:
                    below = known
                    break
                if len(walked) >= length:
                    raise _chain_count_error(manifest, length + 1, length)
                node = _chain_node(read(node_id, True), node_id, manifest)
                walked.append(node_id)
                stack.append(node["item"])
                prev = node["prev"]
                if prev is None:
                    break
                node_id = _chain_link(prev, manifest)
            if below + len(walked) != length:
                raise _chain_count_error(manifest, below + len(walked), length)
            for n, node_id in enumerate(reversed(walked), below + 1):
                new[node_id] = n
    done.update(new)


def _ref_known(data: bytes, at: int, stop: int, verified: dict[str, int], cache: dict[str, Any]) -> int:
    """Where the blob reference whose ``"$blob"`` key is written at ``data[at:]`` (before ``stop``,
    in valid JSON) ends, if it is one `check_refs` has checked with everything below it, by the
    same rules; 0 if not (let it check)."""
    if data[at - 1] != 0x7B:  # not written on one line: the key must still open its object
        brace = data.rfind(b"{", max(at - 256, 0), at)
        if brace < 0 or not data[brace + 1 : at].isspace():
            return 0
    found = _MANIFEST_REF.match(data, at, stop)
    if found is None:
        return 0
    raw_id, is_json, chain = found.groups()
    blob_id = raw_id.decode("ascii")
    if chain is not None:
        known = verified.get(blob_id) == int(chain)  # a checked chain ending at this node, as long
    elif is_json is not None:
        known = bool(verified.get(blob_id))  # -1: a JSON blob; n > 0: a chain node, JSON too
    else:
        known = blob_id in verified or blob_id in cache
    return found.end() if known else 0


def holds_refs(value: Any) -> bool:
    """Whether hydrating ``value`` could change it: it may hold a blob reference or ``$literal``.

    Read from the compact JSON at C speed (a string that merely says ``"$blob"`` answers True,
    which only costs a needless hydration); a value answering False is its own hydrated form.

    Example::

        holds_refs({"json": {"id": "chatcmpl-1"}}) is False
    """
    if isinstance(value, dict) and "$blob" not in value and "$literal" not in value:
        return any(_holds_refs(v) for v in value.values())
    return _holds_refs(value)


def _holds_refs(value: Any) -> bool:
    if isinstance(value, list) and set(map(type, value)) <= {str}:  # SSE events: no JSON to write out
        return False
    if value is None or isinstance(value, str | int | float):
        return False
    try:
        data = orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, too deep: let hydrate decide
        return True
    return b'"$blob"' in data or b'"$literal"' in data


# --- manifests ------------------------------------------------------------------------------------


def _shape_error(path: Path, what: str) -> CassetteShapeError:
    return CassetteShapeError(
        f"{path} is not a cassette manifest: {what}. If it came from another tool, convert it with "
        "`cassette import`; otherwise delete it and re-record.",
        path=path,
    )


# Another recorder's file passed where a cassette is expected: what it is, and the import that converts it.
_YAML_OR_TOML_HEAD = re.compile(
    rb"\A(?:\s*(?:---|#[^\n]*))*\s*(?:interactions\s*:|http_interactions\s*:|requests\s*:|"
    rb"responses\s*:|version\s*[:=]|recorded_with\s*:|\[\[\s*interactions\s*\]\])"
)


def _foreign_error(path: Path, data: bytes, doc: Any = None) -> CassetteShapeError | None:
    """A `CassetteShapeError` naming the `cassette import` command, when ``data`` is another tool's file."""
    what = command = None
    if doc is None:
        if data[:2] == b"\x1f\x8b":
            what, command = (
                "a gzip-compressed file (langchain stores vcrpy cassettes as .yaml.gz)",
                "vcr",
            )
        elif _YAML_OR_TOML_HEAD.match(data.removeprefix(b"\xef\xbb\xbf")):
            what, command = "a vcrpy / pytest-recording, cassetter or Ruby VCR cassette (YAML or TOML)", "vcr"
    elif isinstance(doc, dict):
        items = doc.get("interactions")
        first = next((i for i in items if isinstance(i, dict)), None) if isinstance(items, list) else None
        if isinstance(doc.get("entries"), list) and items is None:
            what, command = "a cendor-cassette file (`entries`)", "cendor"
        elif isinstance(doc.get("http_interactions"), list):
            what, command = "a Ruby VCR cassette (`http_interactions`)", "vcr"
        elif first is not None and "key" not in first and "uri" in (first.get("request") or {}):
            what, command = "a vcrpy / pytest-recording cassette saved as JSON", "vcr"
    if what is None:
        return None
    return CassetteShapeError(
        f"{path} is not a cassette manifest: it is {what}. Convert it once with "
        f"`cassette import {command} {path} --to NEW.json`, then point cassette.use / using at NEW.json.",
        path=path,
    )


def parse_manifest(data: bytes, path: Path, store: Path | None = None) -> Cassette:
    """Parse manifest bytes into a `Cassette`, raising a specific `CassetteError` for each bad input."""
    # Parsing allocates many objects and no cycles: collector passes would only re-scan them (~2-3x slower).
    paused = gc.isenabled()
    gc.disable()
    try:
        return _parse_manifest(data, path, store)
    finally:
        if paused:
            gc.enable()


def _parse_manifest(data: bytes, path: Path, store: Path | None) -> Cassette:
    data = expand(data, path)
    if not data.strip():
        raise TruncatedCassetteError(
            f"{path} is empty (an interrupted write or copy). Restore it from git or re-record it.", path=path
        )
    try:
        doc = loads(data)
    except (ValueError, RecursionError) as exc:
        foreign = _foreign_error(path, data)
        if foreign is not None:
            raise foreign from None
        text = str(exc)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptCassetteError(
                f"{path} is not UTF-8 text. Restore it from git or re-record it.", path=path
            ) from None
        pos = getattr(exc, "pos", None)
        at_end = isinstance(pos, int) and pos >= len(data.rstrip())
        if at_end or (pos is None and _looks_truncated(data)):
            raise TruncatedCassetteError(
                f"{path} ends in the middle of its JSON ({text}): it was truncated. "
                "Restore it from git (git checkout -- <file>) or re-record it.",
                path=path,
            ) from None
        raise CorruptCassetteError(
            f"{path} is not valid JSON ({text}). Restore it from git or re-record it.", path=path
        ) from None
    if not isinstance(doc, dict):
        raise _shape_error(path, f"the top level is a {type(doc).__name__}, not an object")
    foreign = _foreign_error(path, data, doc)
    if foreign is not None:
        raise foreign
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise _shape_error(path, "no integer `version` field")
    if version not in READABLE_VERSIONS:
        hint = (
            "it was written by a newer cassette release; upgrade cassette (pip install -U cassette)"
            if version > FORMAT_VERSION
            else "no release of cassette wrote that version; restore the file from git or re-record it"
        )
        raise UnsupportedVersionError(
            f"{path} has format version {version}; this release reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}: {hint}.",
            path=path,
        )
    return _read_v1(doc, path, store)


def _looks_truncated(data: bytes) -> bool:
    stripped = data.rstrip()
    depth = 0
    in_str = False
    escape = False
    for b in stripped:
        if in_str:
            if escape:
                escape = False
            elif b == 0x5C:
                escape = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x7B, 0x5B):
            depth += 1
        elif b in (0x7D, 0x5D):
            depth -= 1
    return depth > 0 or in_str


def _read_item(item: Any, i: int, path: Path) -> Interaction:
    if not isinstance(item, dict):
        raise _shape_error(path, f"interactions[{i}] is not an object")
    seq, kind, key = item.get("seq"), item.get("kind"), item.get("key")
    request, response = item.get("request"), item.get("response")
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise _shape_error(path, f"interactions[{i}].seq is not an integer")
    if not isinstance(kind, str) or not isinstance(key, str):
        raise _shape_error(path, f"interactions[{i}] needs string `kind` and `key`")
    if kind not in KINDS:
        raise _shape_error(path, f"interactions[{i}].kind is {kind[:40]!r}, not one of {', '.join(KINDS)}")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise _shape_error(path, f"interactions[{i}] needs object `request` and `response`")
    extra = {}
    if len(item) > 5:  # fields of its own (`parallel`, `redacted_key`...): all but the five above
        extra = item.copy()
        del extra["seq"], extra["kind"], extra["key"], extra["request"], extra["response"]
    return Interaction(seq, kind, key, request, response, extra)


def _read_v1(doc: dict[str, Any], path: Path, store: Path | None) -> Cassette:
    items = doc.get("interactions")
    if not isinstance(items, list):
        raise _shape_error(path, "no `interactions` list")
    interactions = [_read_item(item, i, path) for i, item in enumerate(items)]
    meta = {k: v for k, v in doc.items() if k not in ("version", "interactions")}
    return Cassette(path=path, interactions=interactions, store=store or default_store_for(path), meta=meta)


# --- opening for replay: index first, parse each interaction when it is used -----------------------
#
# Replay needs only each interaction's key, kind and seq to build its index. A manifest in the
# layout we write (interactions at a fixed indent, envelope fields sorted, one per line) is cut at
# its interaction boundaries with bytes.find; each interaction's JSON is parsed when it is first
# served or inspected. Any other layout (hand-written, compact, extra top-level fields) is parsed
# whole, as before.

_LAZY_HEAD = b'{\n  "interactions": [\n    {\n      "'
_LAZY_TAILS = (b'\n    }\n  ],\n  "version": 1\n}\n', b'\n    }\n  ],\n  "version": 1\n}')
# In valid JSON of this layout only the end of one interaction and the start of the next read so:
# raw newlines cannot sit inside strings, and nothing else is indented by four.
_LAZY_SEP = b'\n    },\n    {\n      "'
_LAZY_KEY = b'key": "'  # each piece starts so, then 64 characters of key, then `kind`
_LAZY_SEQ = b'\n      "seq": '
# the bytes after the key: its closing quote, `kind`, and the start of the next field (`request`, or
# `redacted_key` in a call whose request held a secret), cut to one length for every kind
_LAZY_KINDS = {(b'",\n      "kind": "' + k.encode() + b'",\n      "')[:30]: k for k in KINDS}
_LAZY_FIELD = b'\n      "'  # an interaction's own field starts a line at this indent (nothing else does)
_LAZY_RESPONSE = _LAZY_FIELD + b'response": '
_HEAD_LEN = 109  # an interaction's head: its key and kind, from just after its first '"'
# The scan looks for the separator less its last byte, the '"' that opens the first field (a needle
# ending in a space is found ~18% faster in this text), and takes each head from that quote on.
_LAZY_FIND = _LAZY_SEP[:-1]
_SCAN_PREFIX, _SCAN_KEY, _SCAN_KIND = b'"' + _LAZY_KEY, slice(8, 72), slice(72, 102)
_SEP_LEN = len(_LAZY_SEP)


# A blob reference as the manifest writes it (on one line or expanded), from its "$blob" key on: a
# text blob, a JSON blob, or a chain's last node.
_MANIFEST_REF = re.compile(
    rb'"\$blob":\s*"([0-9a-f]{40,64})"(?:,\s*"\$json":\s*(true)(?:,\s*"\$chain":\s*([1-9][0-9]{0,8}))?)?\s*\}'
)


# An interaction this large (bytes of JSON) is parsed with the collector paused: its thousands of new
# objects would set off collections that find nothing. A smaller one is not worth the calls.
_PAUSE_GC_OVER = 64 * 1024


class _LazySource:
    """A manifest's bytes, shared by its lazy interactions, and where its last interaction ends.

    An interaction is known by where its fields start (``at``, just after its '{"') and end
    (``end``, the newline before its '}'): the next one's start less the separator, or the
    end of the list for the last one.
    """

    __slots__ = ("data", "end", "path")

    def __init__(self, data: bytes, end: int, path: Path) -> None:
        self.data = data
        self.end = end
        self.path = path

    def seq(self, at: int, end: int) -> int | None:
        """The ``seq`` of the interaction at ``at`` read from its own line, or None (then parse it)."""
        seq_at = self.data.rfind(_LAZY_SEQ, at, end)
        text = self.data[seq_at + len(_LAZY_SEQ) : end]  # the last field, on its own line
        return int(text) if seq_at >= 0 and text.isdigit() and len(text) <= 18 else None

    def parse(self, at: int, end: int, i: int, key: str, kind: str, seq: int | None = None) -> Interaction:
        """Interaction ``i``, checked against the key and kind the scan read."""
        # the object itself, braces included: '{\n      "' before `at`, '\n    }' after its fields
        text = memoryview(self.data)[at - 9 : end + 6]
        # no cycles are built (see parse_manifest): a large one is parsed with the collector paused
        paused = len(text) > _PAUSE_GC_OVER and gc.isenabled()
        if paused:
            gc.disable()
        try:
            try:
                item = orjson.loads(text)  # the manifest was expanded whole when opened: plain JSON here
            except orjson.JSONDecodeError:
                item = loads(text)  # integers beyond 64 bits, or the error
        except (ValueError, RecursionError) as exc:
            raise CorruptCassetteError(
                f"{self.path}: interactions[{i}] is not valid JSON ({exc}). "
                "Restore the file from git (git checkout -- <file>) or re-record it.",
                path=self.path,
            ) from None
        finally:
            if paused:
                gc.enable()
        parsed = _read_item(item, i, self.path)
        if (parsed.kind, parsed.key) != (kind, key) or (seq is not None and parsed.seq != seq):
            # the scan and the parser read different values: a field given twice (hand-edited)
            raise _shape_error(self.path, f"interactions[{i}] gives `seq`, `kind` or `key` twice")
        return parsed


class _LazyInteraction(Interaction):
    """An interaction known by its key and kind; the rest is read from the manifest on first use.

    ``seq``, ``request``, ``response`` and ``extra`` are missing from the instance until
    then: reading ``seq`` reads its line, reading any other parses the interaction's JSON
    (once), so a bad interaction raises the same `CassetteError` the whole-file parse
    would, when it is used.
    """

    def __init__(self, key: str, kind: str, source: _LazySource, at: int, end: int, i: int) -> None:
        self.key = key
        self.kind = kind
        self._source = source
        self._at = at
        self._end = end
        self._i = i

    def __getattr__(self, name: str) -> Any:
        if name not in ("seq", "request", "response", "extra"):
            raise AttributeError(name)
        source, at = self._source, self._at
        if name == "seq":
            seq = source.seq(at, self._end)
            if seq is not None:
                self.seq = seq
                return seq
        parsed = source.parse(at, self._end, self._i, self.key, self.kind, self.__dict__.get("seq"))
        self.__dict__.update(
            seq=parsed.seq, request=parsed.request, response=parsed.response, extra=parsed.extra
        )
        return self.__dict__[name]


class _LazyCassette(Cassette):
    """A manifest opened for replay: each interaction's key, kind and place, nothing parsed yet.

    `item` parses one interaction when it is served. ``interactions``, asked for by
    anything else (a miss being explained, `unused`, a report), is built on first use
    as `_LazyInteraction` s, each parsed only when read.
    """

    def __init__(
        self,
        path: Path,
        store: Path,
        source: _LazySource,
        keys: list[str],
        kinds: list[str],
        starts: list[int],
    ) -> None:
        super().__init__(path=path, store=store)
        del self.interactions  # built when first asked for
        self._source, self._keys, self._kinds, self._starts = source, keys, kinds, starts
        self._items: dict[int, Interaction] = {}

    # a property, not __getattr__: a class with __getattr__ slows every attribute read of its instances
    @cached_property
    def interactions(self) -> list[Interaction]:  # type: ignore[override]
        source, items = self._source, self._items
        built = [
            items.get(i) or _LazyInteraction(key, kind, source, at, self._end(i), i)
            for i, (key, kind, at) in enumerate(zip(self._keys, self._kinds, self._starts, strict=True))
        ]
        return built

    def match_keys(self) -> list[str]:
        return self._keys

    def redacted_keys(self) -> dict[str, list[int]]:
        if "interactions" not in self.__dict__ and b'"redacted_key"' not in self._source.data:
            return {}  # no request of this cassette held a secret: nothing to parse
        return super().redacted_keys()

    def served_refs(self, i: int, verified: dict[str, int]) -> tuple[bool, bool]:
        """`Cassette.served_refs`, read from interaction ``i``'s text (nothing parsed or re-encoded).

        Its fields sit one per line at this indent: the request's text runs from the head to
        the response's line, the response's from there on. A blob reference or ``$literal`` is
        a key ``"$blob"`` / ``"$literal"`` (a string merely holding those words is written
        escaped, ``\\"$blob\\"``): every ``$`` is looked at, found at C speed. Text holding a
        ``\\u`` escape could spell either key otherwise, so it is left to the full check; so is a
        request whose reference comes after the response's line (a field given twice).
        """
        if "interactions" in self.__dict__:
            return super().served_refs(i, verified)
        at, end = self._starts[i], self._end(i)
        data = self._source.data
        find = data.find
        response = find(_LAZY_RESPONSE, at + _HEAD_LEN, end)
        escape = find(b"\\", at, end)  # one byte: found at C speed; most interactions have none
        if response < 0 or (escape >= 0 and find(b"\\u", escape, end) >= 0):
            return False, True  # not where this layout puts it, or a key may be written escaped
        checked, holds = True, False
        dollar = find(b"$", at, end)
        while dollar >= 0:
            if data[dollar - 1] == 0x22:  # a string starts with it: a key, or a value such as "$5"
                if data.startswith(b'$blob"', dollar):  # a "$blob" key
                    if dollar > response:  # the response's own (hydrated, which checks it), or a
                        checked, holds = False, True  # request given again after it: the full check
                    elif checked:
                        past = _ref_known(data, dollar - 1, response, verified, self.blob_cache)
                        if past:
                            dollar = past - 1  # its "$json" and "$chain" keys are its own
                        else:
                            checked = False
                elif data.startswith(b'$literal"', dollar):
                    return False, True
            dollar = find(b"$", dollar + 1, end)
        return checked, holds

    def _end(self, i: int) -> int:
        """Where interaction ``i``'s fields end: where the separator before the next one starts."""
        starts = self._starts
        return starts[i + 1] - _SEP_LEN if i + 1 < len(starts) else self._source.end

    def _parse(self, i: int) -> Interaction:
        return self._source.parse(self._starts[i], self._end(i), i, self._keys[i], self._kinds[i])

    def release(self, i: int) -> None:
        # a replay serves each call once: kept, every parsed response would stay alive to the end,
        # and the collector would walk them all again and again (the floor's objects die at once)
        self._items.pop(i, None)

    def take(self, i: int) -> Interaction:
        built = self.__dict__.get("interactions")
        if built is not None:
            self._items.pop(i, None)
            return built[i]
        inter = self._items.pop(i, None)
        if inter is None:  # parsed for serving only: not kept
            inter = self._parse(i)
        return inter

    def item(self, i: int) -> Interaction:
        built = self.__dict__.get("interactions")
        if built is not None:
            return built[i]
        inter = self._items.get(i)
        if inter is None:
            inter = self._parse(i)
            self._items[i] = inter
        return inter


def _scan_lazy(data: bytes, path: Path, store: Path | None) -> Cassette | None:
    """A `_LazyCassette` when ``data`` is in the layout we write, else None."""
    if not data.startswith(_LAZY_HEAD):
        return None
    for tail in _LAZY_TAILS:
        if data.endswith(tail):
            break
    else:
        return None
    end = len(data) - len(tail)
    # one pass over the bytes, copying only each interaction's first line or two: where its fields
    # start (just after '{"') and its head, which holds the key and kind; an interaction is at
    # least its key and kind long
    find, step, at = data.find, len(_LAZY_SEP), len(_LAZY_HEAD)
    starts, heads = [at], [data[at - 1 : at + _HEAD_LEN]]
    add_start, add_head = starts.append, heads.append
    while (at := find(_LAZY_FIND, at + 100, end)) >= 0:
        at += step
        add_start(at)
        add_head(data[at - 1 : at + _HEAD_LEN])  # from the quote the needle left out
    if not all(map(bytes.startswith, heads, repeat(_SCAN_PREFIX))):
        return None  # a field sorted before `key`, or no '"' where the separator's last byte goes
    cut: Any = getitem  # C-level calls through map: typeshed's signatures do not fit bytes slicing
    kinds: list[str] = list(map(cast(Any, _LAZY_KINDS.get), map(cut, heads, repeat(_SCAN_KIND)), repeat("")))
    if "" in kinds:
        return None  # a key that is not 64 characters, another kind...
    # the key's characters are taken as they stand: the parse on first use checks them
    keys: list[str] = list(map(bytes.decode, map(cut, heads, repeat(_SCAN_KEY)), repeat("latin-1")))
    source = _LazySource(data, end, path)
    return _LazyCassette(path, store or default_store_for(path), source, keys, kinds, starts)


def load_cassette(path: str | os.PathLike[str], store: Path | None = None, *, lazy: bool = False) -> Cassette:
    """Read a cassette manifest (blobs stay referenced until hydrated).

    ``lazy=True`` (replay) reads each interaction's key, kind and seq only, and parses
    an interaction's request and response when they are first read; a bad interaction
    then raises its `CassetteError` at that moment instead of here.

    Example::

        cassette = load_cassette("tests/cassettes/triage.json")
        len(cassette.interactions)
    """
    p = Path(path)
    try:
        data = read_regular(p)
    except NotRegularFileError as exc:  # a FIFO would block, /dev/zero would fill memory
        raise not_regular_error(p, exc) from None
    except FileNotFoundError:
        raise CassetteNotFoundError(
            f"no cassette at {resolve_path(p)}. Record it first: run with CASSETTE_MODE=record "
            "(or mode='auto', which records when the file is missing).",
            path=p,
        ) from None
    except IsADirectoryError:
        raise CassetteNotFoundError(
            f"{resolve_path(p)} is a directory, not a cassette file. Point to the cassette's .json file "
            "(a directory of cassettes is read by `cassette verify` or `cassette ls`).",
            path=p,
        ) from None
    except NotADirectoryError:
        raise CassetteNotFoundError(
            f"no cassette at {p.absolute()}: part of its directory path is a file, not a directory. "
            "Fix the cassette path (or move that file away), then record it.",
            path=p,
        ) from None
    except (OSError, ValueError) as exc:  # no permission, a name too long, a NUL byte, an I/O error
        reason = getattr(exc, "strerror", None) or exc
        raise CassetteIOError(
            f"cannot read the cassette {str(p.absolute())!r} ({reason}). Check the path and its "
            "permissions, or restore the file from git.",
            path=p,
        ) from None
    if lazy:
        data = expand(data, p)
        cassette = _scan_lazy(data, p, store)
        if cassette is not None:
            return cassette
    return parse_manifest(data, p, store)


def manifest_bytes(cassette: Cassette, store: BlobStore, threshold: int, *, compact: bool = False) -> bytes:
    """Write the cassette's blobs and return its manifest bytes (blobs first: a crash never dangles).

    ``compact`` (a compressed cassette's) keeps every response in the manifest, where it
    compresses best beside the rest (nothing in a response is shared), and lays the JSON out
    compact; requests still share their long payloads through the store.
    """
    doc: dict[str, Any] = dict(cassette.meta)
    doc["version"] = FORMAT_VERSION
    doc["interactions"] = [
        _sorted_envelope(
            Interaction(
                i.seq,
                i.kind,
                i.key,
                dehydrate(i.request, store, threshold),
                dehydrate(i.response, store, 0 if compact else threshold, chains=False),
                i.extra,
            ).to_json(),
            1,
        )
        for i in cassette.interactions
    ]
    doc = _sorted_envelope(doc, 0)
    return ordered_json(doc) + b"\n" if compact else manifest_json(doc)


def save_cassette(cassette: Cassette, path: Path, threshold: int, *, compress: bool = False) -> None:
    """Write blobs then the manifest atomically. Interactions must be hydrated.

    ``compress`` writes the manifest as compact JSON, its responses inline, gzip-compressed;
    a compressed file that already holds the same manifest is left as it is (another zlib
    build may compress the same bytes differently: re-recording must not churn the file).
    """
    try:
        store = BlobStore(cassette.store or default_store_for(path))
        data = manifest_bytes(cassette, store, threshold, compact=compress)
        if compress:
            if _holds(path, data):
                return
            data = gzip_bytes(data)
        atomic_write(path, data)
    except NotRegularFileError as exc:
        raise not_writable_error(path, exc) from None
    except OSError as exc:  # a file where a directory should be, no permission, a full disk...
        where = exc.filename if exc.filename is not None else path
        reason = (
            "a file stands where a directory is needed"
            if isinstance(exc, FileExistsError | NotADirectoryError)
            else exc.strerror or exc
        )
        raise CassetteIOError(
            f"cannot write the cassette {path}: {where} cannot be created or written "
            f"({reason}). Fix the cassette path or the directory's permissions, then "
            "record again.",
            path=path,
        ) from None


def _holds(path: Path, manifest: bytes) -> bool:
    """Whether ``path`` is a compressed cassette whose content is ``manifest`` already."""
    try:
        data = read_regular(path)
        return is_compressed(data) and gunzip(data) == manifest
    except (OSError, CompressedDataError):
        return False
