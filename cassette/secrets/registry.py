"""The one registry of secret *names*: what a header, a query parameter, a cookie, a JSON field, a
tool argument or a dict key is called when its value is a secret.

Both sides read it: the recorder's redaction (``plugins/redact_default.py``) replaces a value under
such a name before anything is written, and the scanner (:mod:`cassette.secrets.scan`, through the
keywords of :mod:`cassette.secrets.formats`) reads the value under such a name as the secret. The
key *formats* (provider key patterns) are the other half of the registry, in
:mod:`cassette.secrets.formats`.

Example::

    secret_field("db_password") and secret_header("x-vault-token") and not secret_field("max_tokens")
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise
from typing import Any

# What the recorder writes where a value stood under a secret's name.
PLACEHOLDER = "<redacted>"

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

_NAME_SEPARATORS = str.maketrans("", "", "_-. ")


def secret_field(low: Any, fields: frozenset[str] = SECRET_FIELDS) -> bool:
    """Whether a lower-cased field name holds a secret: one of ``fields`` or ending like a secret's."""
    if not isinstance(low, str):
        return False
    return low in fields or low.translate(_NAME_SEPARATORS).endswith(SECRET_FIELD_ENDINGS)


def secret_plural(low: Any) -> bool:
    """A list's name that is the plural of a secret's (`passwords`, `api_keys`); not bare `secrets`,
    which as often lists the names of secrets as the secrets themselves."""
    if not isinstance(low, str) or not low.endswith("s"):
        return False
    single = low[:-1].translate(_NAME_SEPARATORS)
    return single.endswith(SECRET_FIELD_ENDINGS) and not single.endswith("secret")


@lru_cache(maxsize=10_000)
def plural_secret_name(name: str) -> bool:
    """Whether a map's key is the plural of a secret's name (``api_keys``, ``passwords``): each plain
    value in the map is then a secret, for the recorder and the scanner alike."""
    return secret_plural(name.lower())


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


@lru_cache(maxsize=10_000)
def _describes(name: str) -> bool:
    return _last_word(name) in DESCRIPTOR_WORDS


def describes(name: Any) -> bool:
    """Whether a field in a record nested inside a map named like secrets describes the secret (its
    `id`, `name`, `created_at`, `owner`, `scopes`, …) rather than holds it."""
    return isinstance(name, str) and _describes(name)


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


# What docs, examples and templates put where a secret goes: a value holding one of these is not one.
PLACEHOLDER_MARKS = (
    "redacted",
    "example",
    "placeholder",
    "dummy",
    "changeme",
    "change_me",
    "your_",
    "your-",
    "yourkey",
    "xxxx",
    "****",
    "....",
    "sk-test",
    "fake",
    "<",
    "${",
    "{{",
)


def placeholder_value(s: str) -> bool:
    """Whether a value is an evident placeholder (``${DB_PASSWORD}``, ``<password>``, ``changeme``,
    ``your_api_key``, ``xxxx``), not a secret.

    Example::

        placeholder_value("${DB_PASSWORD}") and not placeholder_value("hunter2")
    """
    low = s.lower()
    return any(p in low for p in PLACEHOLDER_MARKS)
