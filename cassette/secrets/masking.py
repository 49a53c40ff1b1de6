"""Secrets shown masked in a message, as the scanner shows a finding: ``sk-proj-…xYz8 (fingerprint …)``.

What a message prints of a request (a replay miss's "nearest recorded call" diff) is masked here,
by the registry's names and the rules' formats, whatever redaction did before: a live value
the recorder would keep (a ``token`` that does not look random) or a recording made before a
rule existed still prints no secret.
"""

from __future__ import annotations

import re
from typing import Any

from cassette.secrets.engine import Rules, engine_for
from cassette.secrets.registry import (
    PLACEHOLDER,
    ambiguous_field,
    opaque_value,
    secret_field,
    secret_header,
    secret_plural,
)
from cassette.secrets.rules import fingerprint, mask

__all__ = ["masked_diff", "masked_text", "masked_value"]

# the rule id a value masked for its name is fingerprinted under (the scanner's for such a value)
NAME_RULE = "generic-secret"


def masked_text(text: str, rules: Rules, *, fingerprints: bool = True) -> str:
    """``text`` with each secret the rules find shown masked (with its fingerprint unless told not).

    Example::

        masked_text("key sk-proj-…", default_rules())  # 'key sk-proj-…xYz8 (fingerprint 1f2e…)'
    """
    engine = engine_for(rules)
    data = text.encode("utf-8", "surrogatepass")
    hits = engine.hits(data)
    if not hits:
        return text
    out: list[str] = []
    pos = 0
    for i, s, e in hits:
        rule = engine.rules[i]
        secret = data[s:e].decode("utf-8", "replace")
        out.append(data[pos:s].decode("utf-8", "replace"))
        shown = mask(rule, secret)
        out.append(f"{shown} (fingerprint {fingerprint(rule.id, secret)})" if fingerprints else shown)
        pos = e
    out.append(data[pos:].decode("utf-8", "replace"))
    return "".join(out)


_PLACEHOLDER = re.compile(r"<redacted(?::[A-Za-z0-9_.-]+)?>\Z")


def masked_value(name: str | None, value: Any, rules: Rules) -> Any:
    """A value as a message may show it: a string under a secret's name (``password``, ``api_key``,
    ``x-api-key``; ``token`` or ``key`` when it looks opaque) masked whole, any other string with the
    secrets the rules find in it masked; other values as they are.

    Example::

        masked_value("token", "hunter2hunter2x", default_rules())  # '…er2x (fingerprint …)'
    """
    if not isinstance(value, str) or not value or _PLACEHOLDER.match(value) or value == PLACEHOLDER:
        return value
    low = name.lower() if isinstance(name, str) else None
    if low is not None and (
        secret_field(low)
        or secret_header(low)
        or secret_plural(low)
        or (ambiguous_field(low) and opaque_value(value))
    ):
        tail = value[-4:] if len(value) >= 12 else ""
        return f"…{tail} (fingerprint {fingerprint(NAME_RULE, value)})"
    return masked_text(value, rules)


# the last name of a field path (`messages[0].arguments.token` -> `token`)
_LAST_NAME = re.compile(r"([^.\[\]]+)(?:\[\d+\])*\Z")


def masked_diff(diffs: list[tuple[str, Any, Any]], rules: Rules) -> list[tuple[str, Any, Any]]:
    """A field diff (``(path, this call, recorded)``, see ``cassette.core.diff``) with both sides'
    secrets masked, and any secret used as a key in the path.

    Example::

        format_diff(masked_diff(field_diff(live, recorded), rules))
    """
    out = []
    for path, a, r in diffs:
        m = _LAST_NAME.search(path)
        name = m.group(1) if m else None
        shown = masked_text(path, rules) if len(path) >= 16 else path
        out.append((shown, masked_value(name, a, rules), masked_value(name, r, rules)))
    return out
