"""The JSON layout cassette writes: a manifest's bytes, stable and diff-friendly."""

from __future__ import annotations

from itertools import repeat
from typing import Any

import orjson

from cassette.core.canonical import pretty_json

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


def sorted_envelope(value: dict[str, Any], depth: int) -> dict[str, Any]:
    """Sort the keys of the manifest's own objects (top level, interactions, request and response).

    Payloads below them keep their original key order: a tool result that user
    code serialises into the next prompt must come back exactly as it was.
    """
    out = {}
    for k in sorted(value):
        v = value[k]
        out[k] = sorted_envelope(v, depth - 1) if depth > 0 and isinstance(v, dict) else v
    return out
