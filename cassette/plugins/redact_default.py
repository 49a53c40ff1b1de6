"""Default redaction on write: secret headers, query parameters and body fields by name,
and provider key formats by pattern anywhere in a string.

Ids, UUIDs, hashes and emails are left alone, so a run whose tool returns an id
that the next prompt repeats still replays (redaction never touches match keys).
"""

from __future__ import annotations

import re
from itertools import pairwise
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
    "passcode",
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
    from cassette.config import load_config

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
        from cassette.secrets.engine import default_rules
    except ImportError:  # pragma: no cover - the scanner ships with cassette
        return None
    rules = _RULES.get("rules")
    if rules is None:
        from cassette.plugins.manager import get_plugin_manager
        from cassette.secrets.engine import rules_from_plugins

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
    from cassette.secrets.engine import redact_text

    return lambda text: redact_text(text, rules)


def _redact_stream(data: dict[str, Any]) -> None:
    """A secret split over a streamed response's deltas (no one event holds it): each channel's
    text is joined and scanned, and the secret cut out of every piece (see `redact_stream`)."""
    events = data.get("events")
    rules = _secret_rules()
    if type(events) is not list or len(events) < 2 or rules is None:
        return
    from cassette.secrets.engine import redact_stream

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


# The words of a name: `db_password` -> db, password; `userPIN` -> user, pin; `createdAt` -> created, at.
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _last_word(name: Any) -> str:
    if not isinstance(name, str):
        return ""
    words = _WORDS.findall(name)
    return words[-1].lower() if words else ""


# The last word of a field that describes a secret rather than holds it, in a map nested inside a map
# named like secrets: `"api_keys": {"prod": {"id": …, "name": …, "created_at": …, "key": "…"}}` is a
# record of one key, whose id, name and dates are not the key (see `describes`).
DESCRIPTOR_WORDS = frozenset(
    {
        *("id", "ids", "uuid", "name", "names", "type", "kind", "description", "desc", "label", "labels"),
        *("title", "note", "notes", "comment", "comments", "status", "state", "enabled", "active"),
        *("region", "zone", "env", "environment", "scope", "scopes", "permission", "permissions"),
        *("role", "roles", "user", "username", "login", "owner", "email", "mail", "url", "uri", "link"),
        *("endpoint", "host", "hostname", "domain", "port", "path", "arn", "fingerprint", "prefix"),
        *("suffix", "hint", "algorithm", "alg", "format", "encoding", "version", "provider", "service"),
        *("source", "at", "on", "by", "date", "time", "timestamp", "created", "updated", "modified"),
        *("expires", "expiry", "expiration", "rotated", "count", "usage", "tag", "tags", "metadata"),
        *("team", "project", "org", "organization", "account", "tier", "plan", "ttl", "days", "length"),
        "size",
    }
)


def describes(name: Any) -> bool:
    """Whether a field in a record nested inside a map named like secrets describes the secret (its
    `id`, `name`, `created_at`, `owner`, `scopes`, …) rather than holds it."""
    return _last_word(name) in DESCRIPTOR_WORDS


# Names that say a value is a password or a PIN, so that a number under them is one (6 digits or more):
# `password`, `db_passwd`, `passcode`, `pin`, `userPIN`; not `pincode` (a postal code) nor `spin`.
NUMERIC_SECRET_WORDS = frozenset({"password", "passwords", "passwd", "passcode", "passcodes", "pin"})


def says_password(name: Any) -> bool:
    """Whether a field's name ends in password, passwd, passcode or the word pin (see `numeric_secret`)."""
    return _last_word(name) in NUMERIC_SECRET_WORDS


def numeric_secret(value: Any) -> bool:
    """A number, or a string of digits, of 6 digits or more: what a password or PIN field holds when its
    value is numeric. `000000` and `123456` are what examples put there and are not counted."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        digits = str(abs(value))
    elif isinstance(value, str):
        digits = value
    else:
        return False
    if not (6 <= len(digits) <= 64 and digits.isascii() and digits.isdigit()):
        return False
    steps = {(int(b) - int(a)) % 10 for a, b in pairwise(digits)}
    return steps not in ({0}, {1}, {9})


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
            if numeric_secret(v) and says_password(k):
                # `"pin": 48151623`, `"user_pin": "48151623"`: a PIN (`"pin": "left"` is a setting)
                value[k] = PLACEHOLDER
                continue
            if isinstance(v, list) and (_secret_field(low, fields) or _secret_plural(low)):
                # "passwords": ["…", "…"], "api_keys": […]: each plain item is one
                value[k] = [_item(item, fields, headers, query, text) for item in v]
                continue
            if isinstance(v, dict) and _secret_plural(low) and "$bytes" not in v:
                # "api_keys": {"prod": "…", "dev": "…"}: each plain value is one (a dict under a
                # singular name, "secret": {"name": …, "arn": …}, is as often its description), and
                # so is each string nested deeper, "passwords": {"prod": {"db": "…"}} (see `_plural_map`)
                value[k] = _plural_map(v, 1, says_password(k), fields, headers, query, text)
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
            or (_plain_secret(item) and _secret_field(low, fields))
            or (numeric_secret(item) and says_password(name))
        ):
            out[name] = _item(item, fields, headers, query, text)
        else:
            out[name] = _nested_item(item, depth, numeric, fields, headers, query, text)
    return out


def _keyword_name(name: Any) -> bool:
    """Whether a name holds a keyword of the secret rules (the scanner then reads its value by it)."""
    rules = _secret_rules()
    if rules is None or not isinstance(name, str):  # pragma: no cover - the scanner ships with cassette
        return False
    from cassette.secrets.engine import _engine_for

    return _engine_for(rules).has_keyword(name)


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
