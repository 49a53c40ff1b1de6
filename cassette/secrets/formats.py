"""The key *formats* of the secret registry: key patterns of services, plus generic shapes.

Formats follow the services' published key shapes and gitleaks' rule set.
Rules are ordered most specific first: when two rules match the same text, the
earlier one reports it (a ``Bearer ghp_...`` header is a GitHub token, not a
bearer token). Every regex refuses to start or end inside a longer token or a
base64 run, so ids, hashes and embeddings are not findings; the same property
lets the scanner skip the middle of long base64 runs (``skip_base64``): each
rule needs a boundary before its literal, or a separator within a few
characters after its keyword (``=``, ``:``, a space after ``Bearer``).

The names under which a value is a secret are the registry's other half
(:mod:`cassette.secrets.registry`). These rules reach the scanner and the
recorder through the ``cassette_secret_rules`` hook (the built-in plugin
``cassette.plugins.secret_rules`` returns them, after the ones each provider plugin
returns for its own keys, which it builds with the public helpers at the end of this
module); ``cassette.plugins.manager.default_rules`` is every built-in plugin's rules
where no configured plugin manager is at hand.
"""

from __future__ import annotations

import base64
import binascii
import re

from cassette.secrets.registry import (
    NOT_CREDENTIAL_WORDS,
    RESUME_WORDS,
    SECRET_QUERY,
    case_mixed,
    generic_value,
    numeric_secret,
    opaque_value,
    password_value,
    placeholder_value,
    session_value,
)
from cassette.secrets.rules import SecretRule, shannon_entropy

# Not inside a longer token or a base64 run; an escaped \n, \t or \r just before is a boundary.
_L = r"(?:(?<=\\[nrtbf])|(?<![A-Za-z0-9_+/-]))"
_R = r"(?![A-Za-z0-9_+/-])"
# For a key whose prefix holds a character no standard base64 run has (`_`, `-`, `.`: ghp_, sk-,
# ya29.), a `/` or `+` beside it cannot put it inside such a run: a key in a URL path
# (`/keys/ghp_…/usage`), in form-encoded text (`my+key+is+ghp_…`) or after a %XX escape is found.
_LX = r"(?:(?<=\\[nrtbf])|(?<=%[0-9A-Fa-f]{2})|(?<![A-Za-z0-9_-]))"
_RX = r"(?![A-Za-z0-9_-])"
# Between a key and its value: quotes (escaped or not), an operator, a YAML list dash.
_SEP = r"""[\\"'`]{0,8}\s{0,4}(?:=>|:=|[:=])[\s\\"'`\[-]{0,16}"""
# A generic secret value: printable ASCII, no quotes, brackets, commas or spaces.
_VALUE = r"[A-Za-z0-9!#$%&*+\-./:=?@^_|~]"
# ... which in a form body or a query string ends where the next `&name=` starts
_FORM_END = r"(?!&[A-Za-z0-9_.%\[\]-]{1,64}=)"
# The rest of a name after its keyword: `_ID`, `.prod`, a bracket of a form field (`user[password]`,
# `user%5Bpassword%5D`)
_NAME_REST = r"(?:[\w.-]|\]|%5[Dd]){0,24}"


def _mixed(s: str) -> bool:
    """Upper case, lower case and a digit: what real random keys have and dummies lack."""
    return any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)


def _notplaceholder_value(s: str) -> bool:
    return not placeholder_value(s)


def _aws_id(s: str) -> bool:
    return not s.endswith("EXAMPLE")


def _aws_secret(s: str) -> bool:
    return "EXAMPLE" not in s and any(c.isupper() for c in s) and any(c.islower() for c in s)


def _slack_token(s: str) -> bool:
    if s.startswith("xoxd-"):  # a browser session: random, percent-escaped base64
        return case_mixed(s) and not placeholder_value(s)
    return re.search(r"\d{6,}", s) is not None and not placeholder_value(s)


def _basic_credentials(s: str) -> bool:
    """A Basic value that decodes to ``user:password`` text with a real password."""
    try:
        text = base64.b64decode(s + "=" * (-len(s) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    _user, colon, password = text.partition(":")
    return bool(colon) and text.isprintable() and _url_password(password)


# what docs and examples put where a password goes
_NOT_PASSWORDS = frozenset({"pass", "password", "passwd", "pwd", "secret", "user", "username", "token", "x"})


def _url_password(s: str) -> bool:
    """A password in a URL or Basic credentials that is not a placeholder (``pass``, ``****``, ``${DB}``)."""
    if len(s) < 3 or s.lower() in _NOT_PASSWORDS or placeholder_value(s) or set(s) <= {"*", "x", "X", "."}:
        return False
    return not s.startswith(("%", "$", "{", "<"))


# A name that holds a credential (`ACME_API_KEY`, `client_secret`, `SessionToken`, `db_password`)
_KEY_NAME = (
    r"(?i:api[_-]?key|secret|"
    # a page, sync or continuation token names where a listing resumes: not a credential
    + "".join(f"(?<!(?i:{w}))" for w in (*RESUME_WORDS, *NOT_CREDENTIAL_WORDS))
    + "".join(f"(?<!(?i:{w}[_-]))" for w in NOT_CREDENTIAL_WORDS)
    + r"token(?!iz|type)|passw(?:or)?d|passphrase|passcode|access[_-]?key|auth[_-]?key)"
)
_KEY_WORDS = (
    "api_key",
    "api-key",
    "apikey",
    "secret",
    "token",
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "access_key",
    "access-key",
    "accesskey",
    "auth_key",
    "auth-key",
    "authkey",
)


def _query_value(s: str) -> bool:
    """Opaque (not an id, UUID or digest: a SigV4 signature is hex, a SAS `sig` base64) and random."""
    return opaque_value(s) and shannon_entropy(s) >= 3.0


# The registry's query parameter names that no rule above reads by name (`sig`, `code`, `session`…)
_QUERY_ONLY = sorted(
    (n for n in SECRET_QUERY if not re.search(r"(?i)api[_-]?key|secret|token|passw|access[_-]?key", n)),
    key=lambda n: (-len(n), n),
)
_QUERY_VALUE = r"[A-Za-z0-9%+\-./:=@_~]"  # up to `&`, `#`, a quote or a space
_QUERY_NAMES = "(?i:" + "|".join(re.escape(n) for n in _QUERY_ONLY) + ")"
# An XML element's text may hold an entity (`&amp;`): `;` is part of the value there.
_XML_VALUE = r"[A-Za-z0-9!#$%&*+\-./:;=?@^_|~]"
_XML_SPACE = r"(?:\s|\\[nrt]){0,8}"


def _bearer_token(s: str) -> bool:
    """What follows ``Bearer``: an opaque token, hex ones included (API tokens are often 40 or 64 hex)."""
    return opaque_value(s, digest_shaped=True)


# A cookie's value: what RFC 6265 allows, percent-escapes and base64 included, up to `;`, `,` or a space.
_COOKIE_VALUE = r"[A-Za-z0-9!#$%*+\-./:=?@^_|~]"
# Between a password's name and its value: `:` (YAML), `=` (.env, a connection string), quotes.
_PASSWORD_SEP = r"""[\\"'`]{0,8}[ \t]{0,4}(?:=>|:=|[:=])[ \t\\"'`]{0,8}"""
# A password's value: no blank, quote, `;` (connection strings), `&` (forms) or `,` (lists).
_PASSWORD_VALUE = r"[A-Za-z0-9!#$%*+\-./:=?@^_|~\x80-\xff]"  # UTF-8 bytes: `Grüße-Sommer-2024!`


def _client_secret(s: str) -> bool:
    """An OAuth client secret: opaque with a digit, hex of any length included (GitHub's are 40 hex,
    Slack's 32); `session_create_params.ClientSecret` is a type in code."""
    if not opaque_value(s, digest_shaped=True) or shannon_entropy(s) < 3.0:
        return False
    return re.fullmatch(r"[0-9a-fA-F]+", s) is not None or any(c.isdigit() for c in s)


def _rule(
    id: str,
    description: str,
    pattern: str,
    prefixes: tuple[str, ...] = (),
    keywords: tuple[str, ...] = (),
    **kw: object,
) -> SecretRule:
    return SecretRule(
        id=id,
        description=description,
        prefixes=prefixes,
        keywords=keywords,
        regex=re.compile(pattern),
        skip_base64=True,
        **kw,  # type: ignore[arg-type]
    )


RULES: list[SecretRule] = [
    _rule(
        "openrouter-api-key",
        "OpenRouter API key (sk-or-v1-)",
        _LX + r"(sk-or-v1-[a-f0-9]{64})" + _RX,
        prefixes=("sk-or-v1-",),
    ),
    _rule(
        "google-api-key",
        "Google / Gemini API key (AIza + 35)",
        # or a segment of a URL path (`/AIza…/tile`): a `/` on both sides
        r"(?:" + _L + r"(AIza[0-9A-Za-z_-]{35})" + _R + r"|(?<=/)(AIza[0-9A-Za-z_-]{35})(?=[/?#]))",
        prefixes=("AIza",),
        entropy=3.0,
    ),
    _rule(
        "aws-access-key-id",
        "AWS access key id (AKIA / ASIA + 16)",
        # `Credential=AKIA…/20250101/us-east-1/s3/aws4_request` (SigV4, a presigned URL): a `/` and a date
        _L + r"((?:AKIA|ASIA)[A-Z2-7]{16})(?:" + _R + r"|(?=/[0-9]{8}/))",
        prefixes=("AKIA", "ASIA"),
        entropy=3.0,
        validate=_aws_id,
    ),
    _rule(
        "aws-secret-access-key",
        "AWS secret access key (40 characters next to its name or to an access key id)",
        r"(?:(?i:(?:aws_?)?secret_?access_?key|secret-access-key|aws_secret(?:_key)?)[\w.-]{0,10}"
        + _SEP
        + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        + r"|(?:AKIA|ASIA)[A-Z2-7]{16}[^A-Za-z0-9/+=][\s\S]{0,200}?(?<![A-Za-z0-9/+])"
        + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=]))",
        prefixes=("AKIA", "ASIA"),
        keywords=("secret_access_key", "secretaccesskey", "secret-access-key", "aws_secret"),
        entropy=3.5,
        validate=_aws_secret,
    ),
    _rule(
        "aws-session-token",
        "AWS session token (STS)",
        r"(?:(?i:(?:aws_?)?session_?token|security[_-]?token)[\w.-]{0,10}"
        + _SEP
        + r"([A-Za-z0-9/+=]{100,2000}))(?![A-Za-z0-9/+=])",
        keywords=("session_token", "sessiontoken", "security_token", "security-token"),
        entropy=4.0,
        window=2600,
    ),
    _rule(
        "azure-ad-client-secret",
        "Microsoft Entra ID (Azure AD) client secret (xxx8Q~…)",
        r"(?<![A-Za-z0-9_~.])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])",
        prefixes=("Q~",),
        entropy=3.0,
        lookbehind=4,
    ),
    _rule(
        "github-token",
        "GitHub token (ghp_, gho_, ghs_, ghu_, ghr_ + 36)",
        _LX + r"(gh[pousr]_[A-Za-z0-9]{36})" + _RX,
        prefixes=("ghp_", "gho_", "ghs_", "ghu_", "ghr_"),
        entropy=3.0,
    ),
    _rule(
        "github-fine-grained-pat",
        "GitHub fine-grained personal access token (github_pat_ + 82)",
        _LX + r"(github_pat_[A-Za-z0-9_]{82})" + _RX,
        prefixes=("github_pat_",),
        entropy=3.0,
    ),
    _rule(
        "slack-token",
        "Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxe-, app-level xapp-, browser session xoxd-)",
        _LX + r"((?:xox[bpoase]|xapp)-[0-9A-Za-z-]{10,250}|xoxd-[0-9A-Za-z%-]{20,500})" + _RX,
        prefixes=("xoxb-", "xoxp-", "xoxa-", "xoxo-", "xoxs-", "xoxe-", "xapp-", "xoxd-"),
        entropy=3.0,
        validate=_slack_token,
    ),
    _rule(
        "slack-webhook-url",
        "Slack incoming webhook URL",
        r"(hooks\.slack\.com\\?/(?:services\\?/T[A-Z0-9]{6,}\\?/B[A-Z0-9]{6,}\\?/[A-Za-z0-9]{16,}"
        r"|(?:workflows|triggers)\\?/[A-Za-z0-9+_/\\-]{20,}))",
        prefixes=("hooks.slack.com",),
    ),
    _rule(
        "stripe-live-key",
        "Stripe live secret or restricted key (sk_live_, rk_live_)",
        _LX + r"([sr]k_live_[A-Za-z0-9]{20,247})" + _RX,
        prefixes=("sk_live_", "rk_live_"),
        entropy=3.0,
    ),
    _rule(
        "stripe-test-key",
        "Stripe test-mode secret or restricted key (sk_test_, rk_test_): it can use the test account",
        _LX + r"([sr]k_test_[A-Za-z0-9]{20,247})" + _RX,
        prefixes=("sk_test_", "rk_test_"),
        entropy=3.0,
    ),
    _rule(
        "huggingface-token",
        "Hugging Face access token (hf_ + 34)",
        _LX + r"(hf_[A-Za-z]{34})" + _RX,
        prefixes=("hf_",),
        entropy=3.0,
        validate=case_mixed,
    ),
    _rule(
        "groq-api-key",
        "Groq API key (gsk_)",
        _LX + r"(gsk_[A-Za-z0-9]{48,52})" + _RX,
        prefixes=("gsk_",),
        entropy=3.5,
    ),
    _rule(
        "xai-api-key",
        "xAI API key (xai-)",
        _LX + r"(xai-[A-Za-z0-9]{70,90})" + _RX,
        prefixes=("xai-",),
        entropy=3.5,
    ),
    _rule(
        "replicate-api-token",
        "Replicate API token (r8_)",
        _LX + r"(r8_[A-Za-z0-9]{37})" + _RX,
        prefixes=("r8_",),
        entropy=3.0,
        validate=case_mixed,
    ),
    _rule(
        "langsmith-api-key",
        "LangSmith API key (lsv2_pt_, lsv2_sk_)",
        _LX + r"(lsv2_(?:pt|sk)_[a-z0-9]{32}_[a-z0-9]{10})" + _RX,
        prefixes=("lsv2_pt_", "lsv2_sk_"),
        entropy=3.0,
    ),
    _rule(
        "perplexity-api-key",
        "Perplexity API key (pplx-)",
        _LX + r"(pplx-[A-Za-z0-9]{40,60})" + _RX,
        prefixes=("pplx-",),
        entropy=3.5,
    ),
    _rule(
        "private-key",
        "Private key block (-----BEGIN … PRIVATE KEY-----)",
        r"(-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]{32,20000}?"
        r"-----END[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----)",
        prefixes=("-----BEGIN",),
        window=22000,
    ),
    _rule(
        "jwt",
        "JSON Web Token (eyJ….eyJ….signature)",
        r"(?:"
        + _L
        + r"(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
        + _R
        # or a segment of a URL path (`/verify/eyJ…/`)
        + r"|(?<=/)(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})(?=[/?#]))",
        prefixes=("eyJ",),
        window=8192,
    ),
    _rule(
        "cohere-api-key",
        "Cohere API key (40 characters under a COHERE_API_KEY / CO_API_KEY name)",
        r"(?i:(?:cohere[\w.-]{0,30}?|co_api_)key)[\w.-]{0,10}" + _SEP + r"([A-Za-z0-9]{40})(?![A-Za-z0-9])",
        # the match starts at the provider's name: anchoring there skips every other "key"
        keywords=("cohere", "co_api_key"),
        entropy=3.5,
        validate=_mixed,
    ),
    _rule(
        "deepseek-api-key",
        "DeepSeek API key (sk- + 32 hex under a DEEPSEEK_API_KEY name)",
        r"(?i:deepseek[\w.-]{0,30}?key)[\w.-]{0,10}" + _SEP + r"(sk-[a-f0-9]{32})(?![A-Za-z0-9])",
        keywords=("deepseek",),
        entropy=3.0,
    ),
    _rule(
        "google-oauth-token",
        "Google OAuth access token (ya29.) or client secret (GOCSPX-)",
        _LX + r"(ya29\.[A-Za-z0-9_-]{20,2048}|GOCSPX-[A-Za-z0-9_-]{28})" + _RX,
        prefixes=("ya29.", "GOCSPX-"),
        entropy=3.5,
    ),
    _rule(
        "basic-auth",
        "HTTP Basic credentials (Authorization: Basic base64(user:password))",
        r"(?i:basic)[ \t]+([A-Za-z0-9+/]{8,1024}={0,2})(?![A-Za-z0-9+/=])",
        keywords=("basic",),
        validate=_basic_credentials,
        window=1100,
    ),
    _rule(
        "url-credentials",
        "Password in a URL (scheme://user:password@host)",
        r"://[^\s:/@\"'\\<>]{0,64}:([^\s:/@\"'\\<>]{3,128})@[A-Za-z0-9\[]",
        prefixes=("://",),
        validate=_url_password,
        window=200,
    ),
    _rule(
        "bearer-token",
        "Bearer token (Authorization: Bearer …)",
        r"(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{16,4096}=*)(?![A-Za-z0-9._~+/=-])",
        keywords=("bearer",),
        entropy=3.0,
        validate=_bearer_token,
        window=4200,
    ),
    _rule(
        "numeric-password",
        "Numeric password, passcode or PIN (6+ digits under a name ending in password, passcode or pin)",
        # the name ends at the keyword: `password_expiry: 7776000`, `max_tokens`, `pincode` (a postal
        # code) and `spin` are not it; `pin` is a word of its own (`pin`, `card_pin`, `userPin`, `PIN`)
        r"(?:(?i:passw(?:or)?d|passcode)s?|(?<![A-Za-z])(?i:pin)|(?<=[a-z])P(?:in|IN))"
        + _SEP
        + r"([0-9]{6,64})(?![A-Za-z0-9_]|\.[0-9])",
        # `pin` with what can follow a name: the bare word is in every `mapping` and `shipping`
        keywords=("password", "passwd", "passcode", 'pin"', "pin'", "pin:", "pin=", "pin\\", "pin`"),
        validate=numeric_secret,  # not `000000`, `123456`, `987654`
        window=200,
    ),
    _rule(
        "generic-secret",
        "Value of a field named like a key, secret, token or password",
        # not inside an ARN or a path (`arn:aws:secretsmanager:…:secret:prod/db`)
        r"(?<![:/])"
        + _KEY_NAME
        + _NAME_REST
        + _SEP
        + "((?:"
        + _FORM_END
        + _VALUE
        + "){12,4096})(?!"
        + _FORM_END
        + _VALUE
        + "|[(\\[])",
        keywords=_KEY_WORDS,
        validate=generic_value,
        window=4200,
    ),
    _rule(
        "xml-secret",
        "Text of an XML element, or value of a key/value attribute pair, named like a key, secret, "
        'token or password (<password>…</password>, <SecretAccessKey>, <add key="ApiKey" value="…"/>)',
        # the element's name (a namespace prefix, attributes after it), then its text up to `</`;
        # inside a JSON string its quotes are escaped and its line breaks are `\n`
        r"<[\w.:-]{0,24}?"
        + _KEY_NAME
        + r"[\w.-]{0,24}(?:\s[^<>]{0,200})?>"
        + _XML_SPACE
        + "("
        + _XML_VALUE
        + "{12,4096})"
        + _XML_SPACE
        + "</"
        # .NET and Java config: <add key="DbPassword" value="…"/>, <property name="jdbc.password" value="…"/>
        + r"|(?i:key|name)\s{0,4}=\s{0,4}\\?[\"'][\w.:-]{0,24}?"
        + _KEY_NAME
        + r"[\w.-]{0,24}\\?[\"']\s{1,8}(?i:value)\s{0,4}=\s{0,4}\\?[\"']("
        + _XML_VALUE
        + r"{12,4096})\\?[\"']",
        keywords=_KEY_WORDS,
        validate=generic_value,
        window=4400,
        lookbehind=64,  # the match starts at the `<` or `key="` before the name's keyword
    ),
    _rule(
        "oauth-client-secret",
        "OAuth client secret (client_secret=…, clientSecret: …), hex ones included",
        r"(?i:client[_-]?secret)"
        + _NAME_REST
        + _SEP
        + "((?:"
        + _FORM_END
        + _VALUE
        + "){16,4096})(?!"
        + _FORM_END
        + _VALUE
        + ")",
        keywords=("client_secret", "client-secret", "clientsecret"),
        validate=_client_secret,
        window=4200,
    ),
    _rule(
        "session-cookie",
        "Session cookie (connect.sid, <app>.sid, _session_id, <app>_session, JSESSIONID, sessionid)",
        # the name ends in a session word, `=` follows at once (cookie syntax), the value runs to `;`
        r"(?i:(?<!account)sid|sess(?:ion)?(?:[_.-]?id)?)=("
        + _COOKIE_VALUE
        + "{16,4096})(?!"
        + _COOKIE_VALUE
        + ")",
        keywords=("sid=", "sess"),
        validate=session_value,
        window=4200,
    ),
    _rule(
        "query-secret",
        "Value of a URL query parameter named as the recorder redacts it (?sig=, ?code=, ?key=, "
        "?subscription-key=, ?session=, …) in text: an opaque value of 16 characters or more",
        # the registry's query names the other rules do not already read by name
        r"(?<=[?&])"
        + _QUERY_NAMES
        + "=((?:"
        + _FORM_END
        + _QUERY_VALUE
        + "){16,4096})(?!"
        + _QUERY_VALUE
        + ")",
        keywords=tuple(f"{name}=" for name in _QUERY_ONLY),
        validate=_query_value,
        window=4200,
        lookbehind=1,
    ),
    _rule(
        "password-assignment",
        "Password in text or config (password: hunter2, pwd=Summer2024!, DB_PASSWORD=…) whatever its entropy",
        r"(?i:passw(?:or)?d|(?<![A-Za-z])pwd|passphrase)(?:[\w.-]|\]|%5[Dd]){0,24}"
        + _PASSWORD_SEP
        + "("
        + _PASSWORD_VALUE
        + "{4,128})(?!"
        + _PASSWORD_VALUE
        + "|[(\\[])",
        keywords=("password", "passwd", "pwd", "passphrase"),
        validate=password_value,
        window=300,
    ),
]


# For the key formats a provider plugin returns from its own ``cassette_secret_rules``: the same
# boundaries and separators as the rules above, so its rules skip base64 runs as these do.
KEY_START = _LX  # not inside a longer token (a `/`, `+` or %XX escape before it is a boundary)
KEY_END = _RX
ASSIGN = _SEP  # between a name and its value: quotes, `=`/`:`, a YAML dash
key_rule = _rule  # a SecretRule with `skip_base64=True` from a regex text
mixed_case = _mixed  # upper case, lower case and a digit
