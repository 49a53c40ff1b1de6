"""Redaction on write: a copy of a request or response with every ``cassette_redact`` plugin applied."""

from __future__ import annotations

from typing import Any

from cassette.core.canonical import loads, ordered_json
from cassette.plugins.manager import get_plugin_manager

__all__ = ["redacted"]


def redacted(data: Any, kind: str, part: str) -> Any:
    """A copy of ``data`` with every redactor applied; ``data`` itself is untouched.

    Example::

        redacted({"headers": {"authorization": "Bearer sk-…"}}, "http", "request")
    """
    try:
        copy = _json_copy(data)
    except (TypeError, RecursionError):  # not plain JSON data: let the serialiser convert it
        copy = loads(ordered_json(data))
    get_plugin_manager().hook.cassette_redact(data=copy, kind=kind, part=part)
    return copy


def _json_copy(value: Any) -> Any:
    """A copy of plain JSON data whose containers are new and whose strings are shared.

    Strings are immutable, so redactors replace them rather than change them: a 50 MB
    response body is not duplicated (twice, through a JSON round trip) to be redacted.
    """
    if isinstance(value, str) or value is None or type(value) in (int, float, bool):
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError("non-string key")
            out[k] = _json_copy(v)
        return out
    if isinstance(value, list | tuple):
        return [_json_copy(v) for v in value]
    raise TypeError(type(value).__name__)
