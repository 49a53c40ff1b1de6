"""Default redaction on write: secret headers, query parameters and body fields by name,
and provider key formats by pattern anywhere in a string.

Ids, UUIDs, hashes and emails are left alone, so a run whose tool returns an id
that the next prompt repeats still replays (redaction never touches match keys).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from cassette.hookspecs import hookimpl

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "anthropic-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "x-amz-security-token",
        "x-auth-token",
        "x-access-token",
    }
)
SECRET_FIELDS = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "password",
        "passwd",
        "secret",
        "client_secret",
        "access_token",
        "refresh_token",
        "id_token",
        "private_key",
        "secret_key",
        "aws_secret_access_key",
        "authorization",
    }
)
# A field whose name, lower-cased without separators, ends like one of these holds a secret too:
# `db_password`, `SecretAccessKey` (STS), `SessionToken`, `x_client_secret`, `githubAccessToken`.
SECRET_FIELD_ENDINGS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "secretkey",
    "secretaccesskey",
    "sessiontoken",
    "securitytoken",
    "apikey",
    "accesstoken",
    "refreshtoken",
    "privatekey",
)
SECRET_QUERY = frozenset({"key", "api_key", "apikey", "api-key", "token", "access_token", "sig", "signature"})
PLACEHOLDER = "<redacted>"

_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})")


def _config_names() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    from cassette._config import load_config

    cfg = load_config()
    lower = lambda names: frozenset(n.lower() for n in names)  # noqa: E731
    return (
        SECRET_HEADERS | lower(cfg.redact_headers),
        SECRET_FIELDS | lower(cfg.redact_fields),
        SECRET_QUERY | lower(cfg.redact_query),
    )


def _secret_rules() -> Any:
    """The rules of every ``cassette_secret_rules`` plugin (the built-ins if those cannot be had)."""
    try:
        from cassette._secrets import default_rules
    except ImportError:  # pragma: no cover - the scanner ships with cassette
        return None
    rules = _RULES.get("rules")
    if rules is None:
        from cassette._plugins import get_plugin_manager
        from cassette._secrets import rules_from_plugins

        try:
            rules = rules_from_plugins(get_plugin_manager())
        except Exception:
            rules = default_rules()
        _RULES["rules"] = rules
    return rules


def _text_rules() -> Any:
    rules = _secret_rules()
    if rules is None:  # pragma: no cover - the scanner ships with cassette
        return None
    from cassette._secrets import redact_text

    return lambda text: redact_text(text, rules)


def _redact_stream(data: dict[str, Any]) -> None:
    """A secret split over a streamed response's deltas (no one event holds it): each channel's
    text is joined and scanned, and the secret cut out of every piece (see `redact_stream`)."""
    events = data.get("events")
    rules = _secret_rules()
    if type(events) is not list or len(events) < 2 or rules is None:
        return
    from cassette._secrets import redact_stream

    data["events"] = redact_stream(events, rules)


_RULES: dict[str, Any] = {}


def _redact_url(url: str, names: frozenset[str]) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not any(k.lower() in names for k, _ in pairs):
        return url
    pairs = [(k, PLACEHOLDER if k.lower() in names else v) for k, v in pairs]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(pairs, safe="<>"), parts.fragment))


_NAME_SEPARATORS = str.maketrans("", "", "_-. ")


def _secret_field(low: Any, fields: frozenset[str]) -> bool:
    if not isinstance(low, str):
        return False
    return low in fields or low.translate(_NAME_SEPARATORS).endswith(SECRET_FIELD_ENDINGS)


def _secret_plural(low: Any) -> bool:
    """A list's name that is the plural of a secret's (`passwords`, `api_keys`); not bare `secrets`,
    which as often lists the names of secrets as the secrets themselves."""
    if not isinstance(low, str) or not low.endswith("s"):
        return False
    single = low[:-1].translate(_NAME_SEPARATORS)
    return single.endswith(SECRET_FIELD_ENDINGS) and not single.endswith("secret")


def _redact_bytes(value: dict[str, Any], text: Any) -> None:
    """A tool's ``bytes`` result (``{"$bytes": base64}``): its text is redacted like any string."""
    import base64
    import binascii

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
        if text is not None:
            value = text(value)
        if ("earer " in value or "asic " in value) and _BEARER.search(value):
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
        for k in list(value):
            low = k.lower() if isinstance(k, str) else k
            v = value[k]
            if low == "headers" and isinstance(v, dict):
                for h in list(v):
                    if h.lower() in headers:
                        v[h] = PLACEHOLDER
            if low == "query" and isinstance(v, list):
                value[k] = [
                    [p[0], PLACEHOLDER]
                    if isinstance(p, list) and len(p) == 2 and str(p[0]).lower() in query
                    else _walk(p, fields, headers, query, text)  # ?q=<a key> under an innocent name
                    for p in v
                ]
                continue
            if _plain_secret(v) and _secret_field(low, fields):
                value[k] = PLACEHOLDER
                continue
            if isinstance(v, list) and (_secret_field(low, fields) or _secret_plural(low)):
                # "passwords": ["…", "…"], "api_keys": […]: each plain item is one
                value[k] = [_item(item, fields, headers, query, text) for item in v]
                continue
            if isinstance(v, dict) and _secret_plural(low) and "$bytes" not in v:
                # "api_keys": {"prod": "…", "dev": "…"}: each plain value is one (a dict under a
                # singular name, "secret": {"name": …, "arn": …}, is as often its description)
                value[k] = {name: _item(item, fields, headers, query, text) for name, item in v.items()}
                continue
            value[k] = _walk(v, fields, headers, query, text)
        return value
    return value


def _item(
    item: Any, fields: frozenset[str], headers: frozenset[str], query: frozenset[str], text: Any
) -> Any:
    """One item of a list or map named like secrets: a plain value is a secret, else walked."""
    if _plain_secret(item):
        return PLACEHOLDER
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
