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

import math
import re
from functools import lru_cache
from itertools import pairwise
from typing import Any

from cassette.secrets.rules import shannon_entropy

# What the recorder writes where a value stood under a secret's name.
PLACEHOLDER = "<redacted>"

# (a provider plugin adds its own headers through the `cassette_secret_headers` hook)
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-amz-security-token",
        "x-auth-token",
        "x-access-token",
        "ocp-apim-subscription-key",  # Azure API Management
        "private-token",  # GitLab
        "job-token",  # GitLab CI
        "x-vault-token",
        "x-github-token",
        "x-figma-token",
        "circle-token",
        "x-csrf-token",
        "x-xsrf-token",
        "x-postmark-server-token",
        "x-postmark-account-token",
        "x-shopify-access-token",
        "x-api-token",
        "x-auth-key",
        "x-goog-iam-authorization-token",
    }
)
# A header whose lower-cased name ends like one of these holds a secret too (`x-acme-token`).
SECRET_HEADER_ENDINGS = (
    "-token",
    "-api-key",
    "-apikey",
    "-secret",
    "-password",
    "-subscription-key",
    "-access-key",
    "-auth-key",
    "-session-id",
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
    "apitoken",
    "authtoken",
    "authkey",
    "bottoken",
    "bearertoken",
    "oauthtoken",
    "privatetoken",
    "subscriptionkey",
)
SECRET_QUERY = frozenset(
    {
        *("key", "api_key", "apikey", "api-key", "token", "access_token", "sig", "signature", "auth"),
        *("api_token", "auth_token", "refresh_token", "id_token", "client_secret", "password", "passwd"),
        *("x-amz-signature", "x-amz-security-token", "x-goog-signature", "code", "session", "sid"),
        "subscription-key",  # Azure API Management's key as a query parameter
    }
)

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


def secret_header(low: Any, headers: frozenset[str] = SECRET_HEADERS) -> bool:
    """Whether a lower-cased header name holds a secret: one of ``headers`` or ending like a secret's.

    Example::

        secret_header("x-vault-token") and secret_header("ocp-apim-subscription-key")
    """
    return isinstance(low, str) and (low in headers or low.endswith(SECRET_HEADER_ENDINGS))


# Names that hold a secret when their value looks like one (see `generic_value`): a bare `token` is
# also a logprob's token ("Hello") and a tokenizer's `eos_token` ("</s>"); a bare `key` a cache key.
AMBIGUOUS_FIELDS = frozenset({"token", "key", "auth", "credential", "credentials", "sessionid", "sid"})


def ambiguous_field(low: Any) -> bool:
    """Whether a lower-cased name holds a secret when its value is opaque and random enough: ``token``,
    ``key``, any other ``…token`` that does not name where a listing resumes or a CSRF token.

    Example::

        ambiguous_field("token") and ambiguous_field("figma_token") and not ambiguous_field("next_page_token")
    """
    if not isinstance(low, str):
        return False
    name = low.translate(_NAME_SEPARATORS)
    if name in AMBIGUOUS_FIELDS:
        return True
    if not name.endswith("token") or name.endswith(("maxtoken", "numtoken")):
        return False
    head = name[: -len("token")]
    return not any(head.endswith(w.rstrip("_")) for w in (*RESUME_WORDS, *NOT_CREDENTIAL_WORDS))


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


# -- what a value under an ambiguous name must look like to be a secret ------------------------------
# (`token`, `key`, a generic `*_secret` in text): not an id, UUID, digest, e-mail, URL, path or placeholder

# A page, sync or continuation token names where a listing resumes; an anti-forgery (CSRF) token is no
# credential: neither is a secret
RESUME_WORDS = ("page", "page_", "sync", "skip", "next", "next_", "continuation", "continuation_", "cursor")
NOT_CREDENTIAL_WORDS = ("csrf", "xsrf")

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_HEX = re.compile(r"[0-9a-fA-F]+\Z")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}\Z")
# Ids that LLM APIs put in responses; they are not secrets.
_ID_PREFIXES = (
    "apikey_",  # an admin API's id of a key (the key itself has another prefix)
    "chatcmpl-",
    "cmpl-",
    "msg_",
    "msg-",
    "call_",
    "resp_",
    "rs_",
    "fc_",
    "toolu_",
    "srvtoolu_",
    "run_",
    "thread_",
    "asst_",
    "file-",
    "file_",
    "batch_",
    "req_",
    "gen-",
    "org-",
    "proj_",
    "evt_",
    "ft-",
    "ftjob-",
    "vs_",
    "step_",
    "compl_",
)


def case_mixed(s: str) -> bool:
    return any(c.isupper() for c in s) and any(c.islower() for c in s)


# Code that reads a secret, not the secret: `process.env.ACME_API_KEY`, `settings.SECRET_KEY`.
_CODE_REFERENCE = re.compile(
    r"(?:(?i:process|os|settings|config|conf|cfg|env|self|this|app|window|import\.meta|deno|system)\."
    # or any object's UPPER_SNAKE attribute, the way code names an environment variable
    r"[\w.$]*|(?:[A-Za-z_$][\w$]*\.)+[A-Z][A-Z0-9]*_[A-Z0-9_]*)\Z"
)
_CODE_ROOT = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+\Z")


def opaque_value(s: str, *, digest_shaped: bool = False) -> bool:
    """A bearer/generic value that is not an id, UUID, digest, e-mail, URL, path, ARN, placeholder
    or a line of code naming where the secret lives (``process.env.ACME_API_KEY``).

    ``digest_shaped=True`` accepts 40, 64 or 128 hex characters, which is a sha digest
    anywhere but after ``Bearer``, where it is a token."""
    if placeholder_value(s) or s.startswith(_ID_PREFIXES) or _UUID.match(s) or _EMAIL.match(s):
        return False
    if s.startswith("arn:") or (_CODE_ROOT.match(s) and _CODE_REFERENCE.match(s)):
        return False
    if "://" in s or s.startswith(("/", "./", "../", "~/")):
        return False
    if not digest_shaped and _HEX.match(s) and len(s) in (40, 64, 128):  # sha1 / sha256 / sha512 digests
        return False
    has_alpha = any(c.isalpha() for c in s)
    has_digit = any(c.isdigit() for c in s)
    return has_alpha and (has_digit or case_mixed(s))


# The entropy a generic value needs: 3.5 bits a character, which a 12-character value reaches only
# with 12 distinct characters. A random 12-character password often repeats one (3.42 bits), so a
# value that looks generated (see _generated) may fall short by up to 0.3 bit of the most its length
# allows: one repeat in 12 characters. Names (`production01`, `Production01`) stay out.
_GENERIC_ENTROPY = 3.5


def _generated(s: str) -> bool:
    """Two or more upper-case and lower-case letters and a digit: what a password generator makes."""
    upper = sum(c.isupper() for c in s)
    lower = sum(c.islower() for c in s)
    return upper >= 2 and lower >= 2 and any(c.isdigit() for c in s)


# A name in code, without a digit: `TokenEndpointAuth`, `FirstPartyMessagesAPI.count_tokens`,
# `HTTPBasicAuthHandler`: capitalised words, acronyms and lower-case words, joined by `.` or `_`
_SNAKE_NAME = re.compile(r"_?[A-Za-z][a-z]*(?:_[a-z0-9]+){2,}\Z|_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}\Z")
_WORDS_PART = re.compile(r"(?:[A-Z]{2,}(?=[A-Z][a-z])|[A-Z]+[a-z]{2,}|[a-z]{2,}|[A-Z]{2,})+\Z")


def _code_name(s: str) -> bool:
    if _SNAKE_NAME.match(s) or s.startswith("urn:"):
        return True  # `max_tokens_per_1_minute`, `urn:…:token-type:x509`
    return not any(c.isdigit() for c in s) and all(
        _WORDS_PART.match(part) for part in re.split(r"[._]+", s.strip("._")) if part
    )


def generic_value(s: str) -> bool:
    """A value under a key-like name: opaque (see :func:`opaque_value`) and random enough for its length."""
    bits = shannon_entropy(s)
    if bits < _GENERIC_ENTROPY and (bits < math.log2(max(len(s), 1)) - 0.3 or not _generated(s)):
        return False
    return opaque_value(s) and not _code_name(s)


def session_value(s: str) -> bool:
    """A session cookie's value: 16 characters or more, opaque (letters with digits or mixed case; a
    signed id's `%3A`, `--` and `.` included), not a placeholder nor a UUID (a request id).

    Example::

        session_value("s%3AQk7wlhaAsT-Y_1iRsps9Bvo.Qk702wl58q") and not session_value("<SESSION>")
    """
    if placeholder_value(s) or _UUID.match(s.strip("\"'")):
        return False
    return opaque_value(s, digest_shaped=True) and shannon_entropy(s) >= 3.0


# What docs and examples put where a password goes (compared lower-cased, quotes stripped)
NOT_PASSWORDS = frozenset(
    {
        *("pass", "password", "passwd", "pwd", "secret", "user", "username", "token", "x", "none", "null"),
        *("nil", "true", "false", "required", "optional", "string", "str", "hidden", "masked", "empty"),
        *("redacted", "unset", "default", "changeme", "change_me", "example", "sample", "test", "dummy"),
    }
)


def password_value(s: str) -> bool:
    """Whether the value after a password's name in text is one: 4 characters or more with a letter, and a
    digit or a symbol, whatever its entropy (``hunter2``, ``Summer2024!``); not an evident placeholder
    (``${DB_PASSWORD}``, ``<password>``, ``***``, ``changeme``, ``%(pw)s``), a path, a URL, a call or
    a line of code naming where the password lives (``os.environ["DB_PASSWORD"]``).

    Example::

        password_value("hunter2") and not password_value("${DB_PASSWORD}") and not password_value("***")
    """
    if not 4 <= len(s) <= 128 or s.lower() in NOT_PASSWORDS or placeholder_value(s):
        return False
    if s.startswith(("%", "$", "{", "<", "(", "[", "/", "./", "~", "*", "#")) or "://" in s:
        return False
    if set(s) <= {"*", "x", "X", ".", "•", "-", "_", "?"} or s.endswith(("(", ")", "]")):
        return False
    if _CODE_ROOT.match(s) or s.isdigit():  # code (`settings.DB_PASSWORD`); digits: numeric-password's
        return False
    # a letter, and a digit or a symbol: `user_pass` and `key_password` are names in code
    return any(c.isalpha() for c in s) and any(c.isdigit() or c in _PASSWORD_SYMBOLS for c in s)


_PASSWORD_SYMBOLS = frozenset("!#$%*+-./:=?@^|~")
