"""Canonical JSON: the bytes a key hashes and the parser every file is read with."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from cassette.core.compression import GZIP_MAGIC, gunzip

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


def json_or_text(text: Any) -> Any:
    """``text`` parsed as JSON (tool-call arguments, a structured answer), else as it is."""
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
