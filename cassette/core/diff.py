"""Field-path differences between two JSON values, e.g. ``messages[2].content: "a" != "b"``."""

from __future__ import annotations

from typing import Any

_MISSING = object()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Map every leaf of a JSON value to its field path.

    Example::

        flatten({"messages": [{"role": "user"}]}) == {"messages[0].role": "user"}
    """
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict) and v:
            for k, child in v.items():
                stack.append((f"{path}.{k}" if path else str(k), child))
        elif isinstance(v, list) and v:
            for i, child in enumerate(v):
                stack.append((f"{path}[{i}]", child))
        else:
            out[path] = v
    return out


def _short(value: Any, width: int = 70) -> str:
    if value is _MISSING:
        return "(absent)"
    text = repr(value) if not isinstance(value, str) else '"' + value.replace("\n", "\\n") + '"'
    return text if len(text) <= width else text[: width - 1] + "…"


def field_diff(actual: Any, recorded: Any) -> list[tuple[str, Any, Any]]:
    """Paths whose leaves differ, in path order, as ``(path, actual, recorded)``."""
    fa, fr = flatten(actual), flatten(recorded)
    out = []
    for path in sorted(set(fa) | set(fr)):
        a, r = fa.get(path, _MISSING), fr.get(path, _MISSING)
        if a != r or type(a) is not type(r):
            out.append((path, a, r))
    return out


def _around(text: str, start: int, width: int) -> str:
    """``text[start:start + width]`` quoted, with ``…`` where it was cut."""
    piece = text[start : start + width].replace("\n", "\\n")
    return '"' + ("…" if start else "") + piece + ("…" if start + width < len(text) else "") + '"'


def _pair(a: Any, r: Any, width: int = 70, sep: str = " != ") -> str:
    """``a != r``; two long strings are shown around where they first differ, not from their start."""
    if not (isinstance(a, str) and isinstance(r, str)) or max(len(a), len(r)) <= width - 2:
        return f"{_short(a, width)}{sep}{_short(r, width)}"
    same = next((i for i, (x, y) in enumerate(zip(a, r)) if x != y), min(len(a), len(r)))
    start = 0 if same < width - 30 else same - 20
    return f"{_around(a, start, width - 10)}{sep}{_around(r, start, width - 10)}"


def format_diff(diffs: list[tuple[str, Any, Any]], limit: int = 8, *, sep: str = " != ") -> list[str]:
    """One line per differing field: ``path: <this call> != <recorded>`` (``sep`` between the two).

    Example::

        format_diff([("model", "a", "b")], sep=" → ") == ['model: "a" → "b"']
    """
    lines = [f"{path}: {_pair(a, r, sep=sep)}" for path, a, r in diffs[:limit]]
    if len(diffs) > limit:
        lines.append(f"… and {len(diffs) - limit} more differing fields")
    return lines
