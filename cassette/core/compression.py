"""Compressed cassettes: deterministic gzip, bounded inflation, salvage of a damaged stream."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

from cassette.errors import (
    CompressedDataError,
    CorruptCassetteError,
    TruncatedCassetteError,
)

# --- compressed cassettes ------------------------------------------------------------------------

# A cassette written with `compress = true` is its manifest's JSON in one gzip member (RFC 1952).
# Readers tell it by its first two bytes: JSON never starts with 0x1f. The header is fixed (no time,
# no name, OS "unknown"), so the same manifest gives the same file on every machine whose zlib
# compresses alike, and a save whose content did not change leaves the file as it is.
GZIP_MAGIC = b"\x1f\x8b"
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # deflate, no flags, mtime 0, best, OS unknown
# what a compressed cassette may expand to: far above any real one, low enough not to exhaust memory
MAX_INFLATED_BYTES = 2**30


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
