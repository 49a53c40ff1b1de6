"""Matching a live request against recorded ones once keys miss: each redaction placeholder in the
live request (handed out by replay) stands for the text the recording holds there."""

from __future__ import annotations

import re
from typing import Any

from cassette.secrets.placeholders import placeholder_text

__all__ = ["wildcard_match"]

_WILDCARDS_MAX = 16  # more placeholders in one string: compared as written (bounds backtracking)


def _wildcard(text: str) -> re.Pattern[str] | None:
    """``text`` as a pattern in which each placeholder stands for any non-empty text; None if it
    holds no placeholder (or too many)."""
    parts = placeholder_text.split(text)
    if len(parts) < 2 or len(parts) > _WILDCARDS_MAX + 1:
        return None
    return re.compile("(?s:.+?)".join(re.escape(p) for p in parts))


def wildcard_match(live: Any, recorded: Any) -> bool:
    """Whether ``live`` (a request built from replayed, redacted data) matches ``recorded`` when
    each placeholder in its strings stands for the text the recording holds there.

    Example::

        wildcard_match({"q": "key <redacted> ok"}, {"q": "key disabled ok"})
    """
    if isinstance(live, str):
        if not isinstance(recorded, str):
            return False
        if live == recorded:
            return True
        pattern = _wildcard(live)
        return pattern is not None and pattern.fullmatch(recorded) is not None
    if isinstance(live, dict):
        return (
            isinstance(recorded, dict)
            and live.keys() == recorded.keys()
            and all(wildcard_match(v, recorded[k]) for k, v in live.items())
        )
    if isinstance(live, list):
        return (
            isinstance(recorded, list)
            and len(live) == len(recorded)
            and all(wildcard_match(a, b) for a, b in zip(live, recorded))
        )
    return bool(live == recorded and type(live) is type(recorded))
