"""Loading and saving a cassette: a manifest and its blobs, written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cassette.core.canonical import ordered_json
from cassette.core.compression import expand, gunzip, gzip_bytes, is_compressed
from cassette.core.layout import manifest_json, sorted_envelope
from cassette.core.model import Cassette, Interaction
from cassette.core.paths import resolve_path
from cassette.errors import (
    CassetteIOError,
    CassetteNotFoundError,
    CompressedDataError,
    NotRegularFileError,
)
from cassette.store.blobs import BlobStore, default_store_for
from cassette.store.files import atomic_write, not_regular_error, not_writable_error, read_regular
from cassette.store.lazy_index import scan_lazy
from cassette.store.manifest import FORMAT_VERSION, parse_manifest
from cassette.store.refs import dehydrate


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
        cassette = scan_lazy(data, p, store)
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
        sorted_envelope(
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
    doc = sorted_envelope(doc, 0)
    return ordered_json(doc) + b"\n" if compact else manifest_json(doc)


def save_cassette(cassette: Cassette, path: Path, threshold: int, *, compress: bool = False) -> None:
    """Write blobs then the manifest atomically. Interactions must be hydrated.

    ``compress`` writes the manifest as compact JSON, its responses inline, gzip-compressed;
    a compressed file that already holds the same manifest is left as it is (another zlib
    build may compress the same bytes differently: re-recording must not churn the file).
    """
    try:
        store = BlobStore(cassette.store or default_store_for(path))
        with store.writing():  # `cassette gc` keeps what it writes until the manifest is in place
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


def stored_compressed(path: Path) -> bool | None:
    """Whether the cassette at ``path`` is stored compressed; ``None`` when there is none to read.

    Example::

        stored_compressed(Path("tests/cassettes/triage.json"))  # True after `cassette compress`
    """
    try:
        with open(path, "rb") as f:
            return is_compressed(f.read(2))
    except OSError:
        return None


def _holds(path: Path, manifest: bytes) -> bool:
    """Whether ``path`` is a compressed cassette whose content is ``manifest`` already."""
    try:
        data = read_regular(path)
        return is_compressed(data) and gunzip(data) == manifest
    except (OSError, CompressedDataError):
        return False
