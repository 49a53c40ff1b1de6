"""Default redaction on write: secret headers, query parameters and body fields by name (the names
of the secret registry, ``cassette.secrets.registry``), and the key formats of every
``cassette_secret_rules`` plugin by pattern anywhere in a string.

Ids, UUIDs, hashes and emails are left alone, so a run whose tool returns an id
that the next prompt repeats still replays (redaction never touches match keys).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

from cassette.config import load_config
from cassette.hookspecs import hookimpl
from cassette.plugins.manager import default_rules, get_plugin_manager
from cassette.secrets.engine import engine_for
from cassette.secrets.redact import redact_stream, redact_text
from cassette.secrets.registry import (
    PLACEHOLDER,
    SECRET_FIELDS,
    SECRET_HEADERS,
    SECRET_QUERY,
    ambiguous_field,
    describes,
    generic_value,
    numeric_secret,
    says_password,
    secret_field,
    secret_header,
    secret_plural,
)
from cassette.secrets.rules import SecretRule, rules_from_plugins

# `Bearer <token>` in any text, whatever the token's entropy; a token with a digit, so prose
# ("the bearer instrument") is left alone. Basic credentials are the `basic-auth` rule's (it decodes them).
_BEARER = re.compile(r"\b(Bearer|bearer|BEARER)\s+(?=[A-Za-z._~+/=-]*[0-9])([A-Za-z0-9._~+/=-]{8,})")


def _config_names() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    cfg = load_config()
    lower = lambda names: frozenset(n.lower() for n in names)  # noqa: E731
    return (
        SECRET_HEADERS | _plugin_headers() | lower(cfg.redact_headers),
        SECRET_FIELDS | lower(cfg.redact_fields),
        SECRET_QUERY | lower(cfg.redact_query),
    )


def _plugin_headers() -> frozenset[str]:
    """The header names every ``cassette_secret_headers`` plugin adds (a provider's own), lower-cased."""
    try:
        pm = get_plugin_manager()
    except Exception:  # a broken plugin config is reported where it is used; the registry's names hold
        return frozenset()
    known = _HEADERS.get("headers")
    if known is None or known[0] is not pm:
        names = frozenset(
            n.lower()
            for batch in pm.hook.cassette_secret_headers()
            for n in batch or ()
            if isinstance(n, str)
        )
        known = _HEADERS["headers"] = (pm, names)
    return known[1]


_HEADERS: dict[str, tuple[Any, frozenset[str]]] = {}


def _secret_rules() -> list[SecretRule]:
    """The rules of every ``cassette_secret_rules`` plugin (the built-ins if those cannot be had)."""
    rules = _RULES.get("rules")
    if rules is None:
        try:
            rules = rules_from_plugins(get_plugin_manager())
        except Exception:
            rules = default_rules()
        _RULES["rules"] = rules
    return rules


def _text_rules() -> Callable[[str], str]:
    rules = _secret_rules()
    return lambda text: redact_text(text, rules)


def _redact_stream(data: dict[str, Any]) -> None:
    """A secret split over a streamed response's deltas (no one event holds it): each channel's
    text is joined and scanned, and the secret cut out of every piece (see `redact_stream`)."""
    events = data.get("events")
    if type(events) is not list or len(events) < 2:
        return
    data["events"] = redact_stream(events, _secret_rules())


_RULES: dict[str, list[SecretRule]] = {}


def _secret_query(name: str, value: str, names: frozenset[str]) -> bool:
    low = name.lower()
    return bool(value) and value != PLACEHOLDER and (low in names or secret_field(low))


def _redact_url(url: str, names: frozenset[str]) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not any(_secret_query(k, v, names) for k, v in pairs):
        return url
    pairs = [(k, PLACEHOLDER if _secret_query(k, v, names) else v) for k, v in pairs]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(pairs, safe="<>"), parts.fragment))


# A URL with a query inside a text, up to a quote, a space or a bracket that ends it
_URL_IN_TEXT = re.compile(r"https?://[^\s'\"<>`]+?\?[^\s'\"<>`]+")
_QUERY_PAIR = re.compile(r"(?<=[?&])([^=&#]+)=([^&#]*)")


def _redact_query_in_place(url: str, names: frozenset[str]) -> str:
    """A URL found in a text with the value of each secret query parameter made the placeholder, the
    rest of it as written (not re-encoded: the text around it stays the same)."""

    def one(m: re.Match[str]) -> str:
        name, value = unquote_plus(m.group(1)), unquote_plus(m.group(2))
        return f"{m.group(1)}={PLACEHOLDER}" if _secret_query(name, value, names) else m.group()

    head, sep, rest = url.partition("?")
    return head + sep + _QUERY_PAIR.sub(one, sep + rest)[1:]


def _redact_bytes(value: dict[str, Any], text: Any) -> None:
    """A tool's ``bytes`` result (``{"$bytes": base64}``): its text is redacted like any string."""
    try:
        raw = base64.b64decode(value["$bytes"], validate=True)
    except (binascii.Error, ValueError, TypeError):
        return  # not base64: left as it is
    try:
        decoded, encoding = raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        # not UTF-8 (binary around text, a legacy encoding): latin-1 maps each byte to one
        # character and back, so only the bytes of a key (ASCII) are replaced
        decoded, encoding = raw.decode("latin-1"), "latin-1"
    clean = _walk(decoded, frozenset(), frozenset(), frozenset(), text)
    if clean != decoded:
        value["$bytes"] = base64.b64encode(clean.encode(encoding)).decode("ascii")


def _walk(
    value: Any, fields: frozenset[str], headers: frozenset[str], query: frozenset[str], text: Any
) -> Any:
    if isinstance(value, str):
        if "?" in value and "://" in value and not value.startswith(("http://", "https://")):
            # an error's message: `Client error '401' for url 'https://…?subscription-key=…'` (before
            # the text rules, whose placeholders would end the URL early)
            value = _URL_IN_TEXT.sub(lambda m: _redact_query_in_place(m.group(), query), value)
        if text is not None:
            value = text(value)
        if "earer " in value and _BEARER.search(value):
            value = _BEARER.sub(lambda m: f"{m.group(1)} {PLACEHOLDER}", value)
        if value.startswith(("http://", "https://")) and "?" in value:
            value = _redact_url(value, query)
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _walk(item, fields, headers, query, text)
        return value
    if isinstance(value, dict):
        if isinstance(value.get("$bytes"), str) and len(value) == 1:
            _redact_bytes(value, text)
            return value
        if text is not None and any(isinstance(k, str) and len(k) >= _KEY_MIN for k in value):
            _redact_keys(value, text)
        for k in list(value):
            low = k.lower() if isinstance(k, str) else k
            v = value[k]
            if low == "headers":
                _redact_headers(v, headers)
            if low == "query" and isinstance(v, list):
                value[k] = [
                    [p[0], PLACEHOLDER]
                    if isinstance(p, list) and len(p) == 2 and _secret_query(str(p[0]), str(p[1]), query)
                    else _walk(p, fields, headers, query, text)  # ?q=<a key> under an innocent name
                    for p in v
                ]
                continue
            if _plain_secret(v) and secret_field(low, fields):
                value[k] = PLACEHOLDER
                continue
            if isinstance(v, str) and ambiguous_field(low) and generic_value(v):
                # `"token": "…"`, `"key": "…"`, `"figma_token": "…"`: a secret when it looks like one
                # (a logprob's `"token": "Hello"` and a tokenizer's `"eos_token": "</s>"` do not)
                value[k] = PLACEHOLDER
                continue
            if numeric_secret(v) and says_password(k):
                # `"pin": 48151623`, `"user_pin": "48151623"`: a PIN (`"pin": "left"` is a setting)
                value[k] = PLACEHOLDER
                continue
            if isinstance(v, list) and (secret_field(low, fields) or secret_plural(low)):
                # "passwords": ["…", "…"], "api_keys": […]: each plain item is one
                value[k] = [_item(item, fields, headers, query, text) for item in v]
                continue
            if isinstance(v, dict) and secret_plural(low) and "$bytes" not in v:
                # "api_keys": {"prod": "…", "dev": "…"}: each plain value is one (a dict under a
                # singular name, "secret": {"name": …, "arn": …}, is as often its description), and
                # so is each string nested deeper, "passwords": {"prod": {"db": "…"}} (see `_plural_map`)
                value[k] = _plural_map(v, 1, says_password(k), fields, headers, query, text)
                continue
            value[k] = _walk(v, fields, headers, query, text)
        return value
    return value


def _redact_headers(headers: Any, names: frozenset[str]) -> None:
    """Headers as a map or as ``[name, value]`` pairs (an error's recorded request): each value under a
    secret header's name (see ``secret_header``) made the placeholder."""
    if isinstance(headers, dict):
        for h in list(headers):
            if isinstance(h, str) and secret_header(h.lower(), names):
                headers[h] = PLACEHOLDER
    elif isinstance(headers, list):
        for pair in headers:
            if (
                isinstance(pair, list)
                and len(pair) == 2
                and isinstance(pair[0], str)
                and secret_header(pair[0].lower(), names)
            ):
                pair[1] = PLACEHOLDER


# The shortest key format (an AWS key id) is 20 characters; a JSON key shorter than this holds none
_KEY_MIN = 16


def _redact_keys(value: dict[str, Any], text: Callable[[str], str]) -> None:
    """A secret used as a map's key (``{KEY: {...}}``) made its placeholder in place, order kept; two
    such keys stay distinct (``<redacted:RULE>``, ``<redacted:RULE.2>``)."""
    renamed: dict[str, str] = {}
    for k in value:
        if isinstance(k, str) and len(k) >= _KEY_MIN:
            new = text(k)
            if new != k:
                n = 1
                unique = new
                while unique in value or unique in renamed.values():
                    n += 1
                    unique = f"{new[:-1]}.{n}>" if new.endswith(">") else f"{new}.{n}"
                renamed[k] = unique
    if renamed:
        items = list(value.items())
        value.clear()
        value.update((renamed.get(k, k), v) for k, v in items)


def _item(
    item: Any, fields: frozenset[str], headers: frozenset[str], query: frozenset[str], text: Any
) -> Any:
    """One item of a list or map named like secrets: a plain value is a secret, else walked."""
    if _plain_secret(item):
        return PLACEHOLDER
    return _walk(item, fields, headers, query, text)


def _plural_map(
    node: dict[str, Any],
    depth: int,
    numeric: bool,
    fields: frozenset[str],
    headers: frozenset[str],
    query: frozenset[str],
    text: Any,
) -> dict[str, Any]:
    """A map under a plural secret name (``depth`` 1) or nested in one (2 and more), redacted.

    Each value of the map itself is a secret (a string, or a number of 6 digits or more). Deeper,
    every string is one, in maps and in lists of strings at any depth ("passwords": {"prod": {"db":
    "…"}}), but for a field that describes the secret (``describes``: `id`, `name`, `created_at`,
    …) or whose name holds a secret rule's keyword (`token`, `password`: judged by that name, as the
    scanner reads it), and what a list of records holds (each record is walked by its own names). A
    number deeper
    than the map's values is one only when the plural name says password, passcode or PIN
    (``numeric``), as a timestamp or a size in a key's record must keep its type for replay.
    """
    out: dict[str, Any] = {}
    for name, item in node.items():
        low = name.lower() if isinstance(name, str) else name
        if depth > 1 and (describes(name) or _keyword_name(name)):
            # judged by its own name, as anywhere else: a record's `id`, `name`, `next_page_token`
            out[name] = _walk({name: item}, fields, headers, query, text)[name]
        elif isinstance(item, dict) and "$bytes" not in item:
            out[name] = _plural_map(item, depth + 1, numeric, fields, headers, query, text)
        elif isinstance(item, list):
            out[name] = [_nested_item(x, depth + 1, numeric, fields, headers, query, text) for x in item]
        elif (
            depth == 1
            or (_plain_secret(item) and secret_field(low, fields))
            or (numeric_secret(item) and says_password(name))
        ):
            out[name] = _item(item, fields, headers, query, text)
        else:
            out[name] = _nested_item(item, depth, numeric, fields, headers, query, text)
    return out


def _keyword_name(name: Any) -> bool:
    """Whether a name holds a keyword of the secret rules (the scanner then reads its value by it)."""
    return isinstance(name, str) and engine_for(_secret_rules()).has_keyword(name)


def _nested_item(
    item: Any,
    depth: int,
    numeric: bool,
    fields: frozenset[str],
    headers: frozenset[str],
    query: frozenset[str],
    text: Any,
) -> Any:
    """A value nested deeper than the values of a map named like secrets (see `_plural_map`)."""
    if isinstance(item, str) and _plain_secret(item):
        return PLACEHOLDER
    if numeric and numeric_secret(item):
        return PLACEHOLDER
    if isinstance(item, list):
        return [_nested_item(x, depth, numeric, fields, headers, query, text) for x in item]
    return _walk(item, fields, headers, query, text)


def _plain_secret(value: Any) -> bool:
    """Whether a value under a secret's name is one: a non-empty string, or a number of 6 digits or
    more (a PIN, a numeric password). `has_password: true`, `api_key: 0` (off) and `retries: 3`
    are settings: replaced by a string, they would change type on replay."""
    if isinstance(value, str):
        return value not in ("", PLACEHOLDER)
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) >= 100_000
    if isinstance(value, float):
        return abs(value) >= 100_000 and value == value  # not nan
    return False


@hookimpl
def cassette_redact(data: Any, kind: str, part: str) -> None:
    headers, fields, query = _config_names()
    if part == "response" and isinstance(data, dict) and "events" in data:
        # first: a piece that holds a secret's start whole would lose only that part to the text rules
        _redact_stream(data)
    _walk(data, fields, headers, query, _text_rules())
