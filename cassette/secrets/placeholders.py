"""What redaction leaves where a secret was, and what follows from it.

The built-in redactors write ``<redacted>`` (a value under a secret's name) and ``<redacted:RULE_ID>``
(a secret found by a rule). A request that held a secret is also filed under the key of its redacted
form (:func:`redacted_key`), with every placeholder made alike; a value redacted by its name is
redacted wherever else the recording holds it (:func:`removed_values`, :func:`spread_redactions`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from cassette.core.canonical import canonical_json, sha256_hex
from cassette.secrets.registry import PLACEHOLDER

__all__ = [
    "PLACEHOLDER",
    "SPREAD_MIN",
    "placeholder_pattern",
    "placeholder_text",
    "redacted_key",
    "removed_values",
    "spread_redactions",
    "spreadable",
]

# `<redacted>` and `<redacted:RULE_ID>`, in canonical JSON bytes: does a request hold a placeholder?
placeholder_pattern = re.compile(rb"<redacted(?::[A-Za-z0-9_.-]{0,64})?>")
# ... and the same placeholders in text
placeholder_text = re.compile(placeholder_pattern.pattern.decode())


def redacted_key(request: dict[str, Any]) -> str:
    """The match key of an already redacted request, every redaction placeholder made the same.

    A replayed tool result, or model output, holds placeholders where the live run had
    secrets, so a request built from it cannot have the recorded key (the recorded key
    hashes the real secret). Redacting both sides and hashing them with the placeholders
    made alike lets such a request find its recording.

    Example::

        redacted_key({"q": "<redacted:github-token>"}) == redacted_key({"q": "<redacted>"})
    """
    return sha256_hex(placeholder_pattern.sub(PLACEHOLDER.encode(), canonical_json(request)))


SPREAD_MIN = 6  # a redacted value this long or longer (and not a bare word) is redacted elsewhere too


def spreadable(text: str) -> bool:
    """Whether a value redacted by its field's name is redacted wherever else the recording holds
    it (the next prompt, built from the tool result): 6 characters or more, and not a bare word,
    so letters with digits, symbols or spaces (``hunter2``, ``sess_9f8a7b``, ``correct horse
    battery``), 8 digits or more, or mixed case at 16 letters or more. A bare word (``postgres``,
    ``disabled``) is the field's value but also the word in every prompt that mentions it:
    replacing it there would change what the agent is asked and break replay.

    Example::

        spreadable("sess_9f8a7b") and not spreadable("postgres")
    """
    if len(text) < SPREAD_MIN:
        return False
    letters = sum(c.isalpha() for c in text)
    if letters == 0:
        return sum(c.isdigit() for c in text) >= 8  # a long numeric token, not a year or a count
    if letters < len(text):
        return True
    return len(text) >= 16 and not text.islower() and not text.isupper()


def removed_values(original: Any, redacted_value: Any, out: set[str]) -> None:
    """Add to ``out`` each value of ``original`` that redaction replaced whole by a placeholder.

    A field redacted by its name (``session_token``, ``passwords``) is a secret the text rules
    may not recognise elsewhere; `spread_redactions` removes it from the rest of the recording.

    Example::

        found: set[str] = set()
        removed_values({"token": "sess_9f8a7b"}, {"token": "<redacted>"}, found)  # found == {"sess_9f8a7b"}
    """
    if isinstance(original, dict) and isinstance(redacted_value, dict):
        for k, v in redacted_value.items():
            if k in original:
                removed_values(original[k], v, out)
    elif isinstance(original, list) and isinstance(redacted_value, list):
        if len(original) == len(redacted_value):
            for a, b in zip(original, redacted_value):
                removed_values(a, b, out)
    elif (
        isinstance(redacted_value, str)
        and isinstance(original, str | int | float)
        and not isinstance(original, bool)
        and placeholder_text.fullmatch(redacted_value)
    ):
        text = str(original)
        if spreadable(text) and not placeholder_text.fullmatch(text):
            out.add(text)


def spread_redactions(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` with every occurrence of each of ``secrets`` inside its strings made ``<redacted>``.

    Example::

        spread_redactions({"q": "use sess_9f8a7b"}, {"sess_9f8a7b"}) == {"q": "use <redacted>"}
    """
    ordered = sorted(set(secrets), key=len, reverse=True)  # a longer secret first: it may hold a shorter
    if not ordered:
        return value

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for secret in ordered:
                if secret in v:
                    v = v.replace(secret, PLACEHOLDER)
            return v
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value)
