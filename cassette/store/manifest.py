"""Manifests: parsing, loading and saving a cassette's JSON file."""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path
from typing import Any

import orjson

from cassette.core.canonical import loads
from cassette.core.compression import GZIP_MAGIC, expand
from cassette.core.model import KINDS, Cassette, Interaction
from cassette.errors import (
    CassetteShapeError,
    CorruptCassetteError,
    DuplicateKeyError,
    TruncatedCassetteError,
    UnsupportedVersionError,
)
from cassette.store.blobs import default_store_for
from cassette.store.refs import StoredCassette

FORMAT_VERSION = 1
READABLE_VERSIONS = (1,)


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
    compressed = data[:2] == GZIP_MAGIC
    data = expand(data, path)
    if not data.strip():
        if not data:
            raise TruncatedCassetteError(
                f"{path} is empty (an interrupted write or copy). Restore it from git or re-record it.",
                path=path,
            )
        held = f"expands to {len(data):,} bytes" if compressed else f"holds {len(data):,} bytes"
        raise CorruptCassetteError(
            f"{path} {held} of whitespace and no JSON: it is not a cassette (nothing cassette writes "
            "looks so). Restore it from git (git checkout -- <file>) or re-record it.",
            path=path,
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
    duplicate = duplicate_key(data, doc)
    if duplicate is not None:
        raise duplicate_key_error(path, duplicate)
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


class _Duplicate(Exception):
    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


def _distinct(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return found


_WHITESPACE = b" \t\n\r"
_UNPARSED: Any = object()


def duplicate_key(data: bytes | memoryview, doc: Any = _UNPARSED) -> str | None:
    """The first key some object in the JSON ``data`` gives twice, or None when every key is distinct.

    JSON parsers keep the last of two equal keys (orjson among them, which cannot tell): a cassette
    edited to hold ``"status": 200, "status": 500`` would replay one of them silently. Given
    ``doc``, ``data`` parsed, a file cassette wrote is cleared at C speed (about half a parse):
    ``doc`` written out compactly holds the same bytes as ``data`` once all spaces and newlines
    are dropped from both, which a key given twice (dropped from ``doc``) would break. Any other
    file is parsed again by the stdlib, which tells (about 2.5 times orjson's time). Replay's fast
    path (a manifest in cassette's own layout, read one interaction at a time) pays neither.

    Example::

        duplicate_key(b'{"a": 1, "a": 2}') == "a"
    """
    if doc is not _UNPARSED:
        try:
            if bytes(data).translate(None, _WHITESPACE) == orjson.dumps(doc).translate(None, _WHITESPACE):
                return None
        except TypeError:  # integers beyond 64 bits: the full check
            pass
    try:
        json.loads(bytes(data), object_pairs_hook=_distinct)
    except _Duplicate as dup:
        return dup.where
    except (ValueError, RecursionError):
        return None  # not JSON: the parse that follows or came first says so
    return None


def duplicate_key_error(path: Path, key: str, where: str = "") -> DuplicateKeyError:
    """The error for a manifest (or a JSON blob it references, ``where``) giving ``key`` twice."""
    inside = f" ({where})" if where else ""
    return DuplicateKeyError(
        f"{path}: an object{inside} gives the key {key[:80]!r} twice; a JSON reader would keep one of the "
        "two silently. The file was edited by hand or corrupted: restore it from git "
        "(git checkout -- <file>) or re-record it.",
        path=path,
    )


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
    return StoredCassette(
        path=path, interactions=interactions, store=store or default_store_for(path), meta=meta
    )
