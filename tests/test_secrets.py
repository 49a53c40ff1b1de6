"""The secret scanner and its built-in rules, on planted keys and on look-alikes that are not secrets.

Every key below is generated at run time from a seeded RNG: no literal secret
lives in this file, so our own pre-commit scan stays quiet on it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import re
import string
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import orjson
import pluggy
import pytest

from cassette import CassetteConfigError, SecretRule, hookspecs
from cassette.hookspecs import hookimpl
from cassette.plugins import secret_rules
from cassette.plugins.manager import default_rules
from cassette.plugins.providers import anthropic, openai
from cassette.secrets import Finding, Scanner, redact_text, rules_from_plugins
from tests.secret_helpers import ALNUM, random_key

RNG = random.Random(20261130)
HEX = "0123456789abcdef"


def rs(n: int, alphabet: str = ALNUM) -> str:
    return random_key(RNG, n, alphabet)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@dataclass(frozen=True)
class Sample:
    rule: str
    key: str  # the name it is stored under (env var, header, JSON field)
    value: str  # what is stored (may wrap the secret, e.g. "Bearer <secret>")
    secret: str  # what the rule reports


def _pem() -> str:
    body = "\n".join(rs(64, ALNUM + "+/") for _ in range(6))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def _jwt() -> str:
    head = b64url(b'{"alg":"HS256","typ":"JWT"}')
    body = b64url(orjson.dumps({"sub": rs(12), "name": "Ada", "iat": 1716239022}))
    return f"{head}.{body}.{rs(43, ALNUM + '_-')}"


def _samples() -> list[Sample]:
    def same(rule: str, key: str, secret: str) -> Sample:
        return Sample(rule, key, secret, secret)

    webhook = f"hooks.slack.com/services/T{rs(10, string.ascii_uppercase + string.digits)}/B{rs(10, string.ascii_uppercase + string.digits)}/{rs(24)}"  # noqa: E501
    bearer = rs(40, ALNUM + "._-")
    basic = base64.b64encode(f"deploy-bot:{rs(20)}".encode()).decode()
    db_password = rs(20)
    xml_password = rs(22, ALNUM + "!#%")
    sid = f"s%3A{rs(32, ALNUM + '_-')}.{rs(43, ALNUM)}%2B{rs(8)}"
    sas = f"{rs(20)}%2B{rs(20)}%3D"  # an Azure SAS signature, percent-encoded base64
    return [
        same("openai-api-key", "OPENAI_API_KEY", f"sk-proj-{rs(58)}T3BlbkFJ{rs(58)}"),
        same("openai-api-key", "OPENAI_ADMIN_KEY", f"sk-admin-{rs(58)}T3BlbkFJ{rs(58)}"),
        same("openai-api-key", "OPENAI_LEGACY_KEY", f"sk-{rs(20)}T3BlbkFJ{rs(20)}"),
        same("anthropic-api-key", "ANTHROPIC_API_KEY", f"sk-ant-api03-{rs(93, ALNUM + '_-')}AA"),
        same("anthropic-admin-key", "ANTHROPIC_ADMIN_KEY", f"sk-ant-admin01-{rs(93, ALNUM + '_-')}AA"),
        same("anthropic-oauth-token", "CLAUDE_CODE_OAUTH_TOKEN", f"sk-ant-oat01-{rs(100, ALNUM + '_-')}"),
        same("openrouter-api-key", "OPENROUTER_API_KEY", f"sk-or-v1-{rs(64, HEX)}"),
        same("google-api-key", "GEMINI_API_KEY", f"AIza{rs(35, ALNUM + '_-')}"),
        same("aws-access-key-id", "AWS_ACCESS_KEY_ID", "AKIA" + rs(16, string.ascii_uppercase + "234567")),
        same("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", rs(40, ALNUM + "/+")),
        same("aws-session-token", "AWS_SESSION_TOKEN", rs(320, ALNUM + "/+")),
        same("azure-ad-client-secret", "AZURE_CLIENT_SECRET", f"{rs(3)}8Q~{rs(34, ALNUM + '_~.-')}"),
        same("azure-openai-key", "api-key", rs(32, HEX)),
        same("github-token", "GITHUB_TOKEN", f"ghp_{rs(36)}"),
        same("github-fine-grained-pat", "GH_PAT", f"github_pat_{rs(82, ALNUM + '_')}"),
        same(
            "slack-token", "SLACK_BOT_TOKEN", f"xoxb-{rs(12, string.digits)}-{rs(13, string.digits)}-{rs(24)}"
        ),
        Sample("slack-webhook-url", "SLACK_WEBHOOK", "https://" + webhook, webhook),
        same("stripe-live-key", "STRIPE_KEY", f"sk_live_{rs(99)}"),
        same("stripe-test-key", "STRIPE_TEST_KEY", f"sk_test_{rs(99)}"),
        same("huggingface-token", "HF_TOKEN", f"hf_{rs(34, string.ascii_letters)}"),
        same("groq-api-key", "GROQ_API_KEY", f"gsk_{rs(52)}"),
        same("xai-api-key", "XAI_API_KEY", f"xai-{rs(80)}"),
        same("replicate-api-token", "REPLICATE_API_TOKEN", f"r8_{rs(37)}"),
        same("langsmith-api-key", "LANGSMITH_API_KEY", f"lsv2_pt_{rs(32, HEX)}_{rs(10, HEX)}"),
        same("perplexity-api-key", "PPLX_API_KEY", f"pplx-{rs(48)}"),
        same("private-key", "TLS_KEY", _pem()),
        same("jwt", "ID_TOKEN", _jwt()),
        same("cohere-api-key", "COHERE_API_KEY", rs(40)),
        same("deepseek-api-key", "DEEPSEEK_API_KEY", f"sk-{rs(32, HEX)}"),
        Sample("bearer-token", "Authorization", f"Bearer {bearer}", bearer),
        same("openai-api-key", "OPENAI_USER_KEY", f"sk-None-{rs(58)}T3BlbkFJ{rs(58)}"),
        same(
            "slack-token",
            "SLACK_APP_TOKEN",
            f"xapp-1-A{rs(10, string.ascii_uppercase + string.digits)}-{rs(13, string.digits)}-{rs(64, HEX)}",
        ),
        same("google-oauth-token", "GOOGLE_ACCESS_TOKEN", "ya29." + rs(150, ALNUM + "_-")),
        same("google-oauth-token", "GOOGLE_CLIENT_SECRET", "GOCSPX-" + rs(28, ALNUM + "_-")),
        Sample("basic-auth", "Authorization", f"Basic {basic}", basic),
        Sample("url-credentials", "DATABASE_URL", f"postgres://app:{db_password}@db:5432/prod", db_password),
        same("generic-secret", "db_password", rs(20, ALNUM + "!#%")),
        same("generic-secret", "gpg_passphrase", rs(24, ALNUM + "!#%")),
        same("numeric-password", "DB_PASSWORD", rs(9, string.digits)),
        same("numeric-password", "card_pin", rs(8, string.digits)),
        Sample("session-cookie", "Cookie", f"connect.sid={sid}; Path=/", sid),
        same("password-assignment", "DB_PASSWORD", "Summer2024!"),
        Sample("query-secret", "BLOB_URL", f"https://a.blob.core.windows.net/f?sv=2024&sig={sas}", sas),
        same("oauth-client-secret", "GITHUB_CLIENT_SECRET", rs(40, HEX)),
        Sample(
            "xml-secret",
            "MAVEN_SETTINGS",
            f"<server><password>{xml_password}</password></server>",
            xml_password,
        ),
    ]


SAMPLES = _samples()
IDS = [f"{s.rule}:{s.key}" for s in SAMPLES]


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(default_rules())


def _line_of(raw: bytes, secret: str) -> int:
    head = secret[:12].encode()
    at = raw.find(head)
    assert at >= 0
    return raw[:at].count(b"\n") + 1


def _key_path(key: str) -> str:
    return f".{key}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", key) else f"[{orjson.dumps(key).decode()}]"


def _assert_safe(finding: Finding, secret: str) -> None:
    assert secret not in finding.masked
    assert secret not in repr(finding) and secret not in str(finding)
    assert secret not in orjson.dumps(finding.to_json()).decode()
    assert re.fullmatch(r"[0-9a-f]{16}", finding.fingerprint)
    assert "…" in finding.masked


def _cassette(interactions: list[dict[str, object]]) -> bytes:
    return orjson.dumps({"version": 2, "interactions": interactions}, option=orjson.OPT_INDENT_2)


def _filler(i: int) -> dict[str, object]:
    return {
        "kind": "llm",
        "request": {"messages": [{"role": "user", "content": f"hello {i}"}], "model": "gpt-4o-mini"},
        "response": {"id": f"chatcmpl-{rs(29)}", "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
    }


# -- every rule, every place -------------------------------------------------------------------------------


def test_every_builtin_rule_has_a_sample() -> None:
    assert {r.id for r in default_rules()} == {s.rule for s in SAMPLES}


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_found_in_env_dump_with_line(scanner: Scanner, sample: Sample) -> None:
    text = f"HOME=/root\nPATH=/usr/bin:/bin\n{sample.key}={sample.value}\nLANG=C.UTF-8\n"
    findings = scanner.scan(text, ".env")
    assert [(f.rule, f.line, f.path) for f in findings] == [(sample.rule, 3, None)]
    assert findings[0].file == ".env"
    _assert_safe(findings[0], sample.secret)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_found_in_request_header(scanner: Scanner, sample: Sample) -> None:
    target = _filler(0)
    target["request"] = {"headers": {"content-type": "application/json", sample.key: sample.value}}
    raw = _cassette([target, _filler(1)])
    findings = scanner.scan(raw, "tests/cassettes/c.json")
    assert [(f.rule, f.path) for f in findings] == [
        (sample.rule, "interactions[0].request.headers" + _key_path(sample.key))
    ]
    assert findings[0].line == _line_of(raw, sample.secret)
    _assert_safe(findings[0], sample.secret)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_found_in_message_text(scanner: Scanner, sample: Sample) -> None:
    target = _filler(3)
    target["request"] = {
        "messages": [
            {"role": "system", "content": "You are a helpful agent."},
            {"role": "user", "content": f"Deploy it. Use\n{sample.key}={sample.value}\nand report back."},
        ]
    }
    raw = _cassette([_filler(0), _filler(1), _filler(2), target])
    findings = scanner.scan(raw, "c.json")
    assert [(f.rule, f.path) for f in findings] == [
        (sample.rule, "interactions[3].request.messages[1].content")
    ]
    assert findings[0].line == _line_of(raw, sample.secret)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_found_in_tool_call_arguments_json_inside_json(scanner: Scanner, sample: Sample) -> None:
    arguments = orjson.dumps({"region": "eu-west-1", sample.key: sample.value}).decode()
    target = _filler(1)
    target["response"] = {
        "choices": [
            {
                "message": {
                    "tool_calls": [{"id": "call_1", "function": {"name": "deploy", "arguments": arguments}}]
                }
            }
        ]
    }
    raw = _cassette([_filler(0), target])
    # the raw text holds the value escaped: \" around it, \n inside a PEM block
    assert b'\\"' + sample.key.encode() + b'\\"' in raw
    findings = scanner.scan(raw, "c.json")
    path = "interactions[1].response.choices[0].message.tool_calls[0].function.arguments" + _key_path(
        sample.key
    )
    assert [(f.rule, f.path) for f in findings] == [(sample.rule, path)]
    assert findings[0].line == _line_of(raw, sample.secret)
    _assert_safe(findings[0], sample.secret)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_found_in_yaml_cassette(scanner: Scanner, sample: Sample) -> None:
    value = orjson.dumps(sample.value).decode()  # a JSON string is a YAML double-quoted scalar
    text = (
        "interactions:\n"
        "- request:\n"
        "    method: POST\n"
        "    uri: https://api.example.com/v1/run\n"
        "    headers:\n"
        f"      {sample.key}: {value}\n"
        "  response:\n"
        "    status: {code: 200, message: OK}\n"
        "version: 1\n"
    )
    findings = scanner.scan(text, "cassettes/run.yaml")
    assert [(f.rule, f.line, f.path) for f in findings] == [(sample.rule, 6, None)]


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_redact_text_replaces_the_secret_only(sample: Sample) -> None:
    text = f"export {sample.key}={sample.value}  # set by ci"
    out = redact_text(text, default_rules())
    assert sample.secret not in out
    assert out == text.replace(sample.secret, f"<redacted:{sample.rule}>")


def test_all_samples_in_one_env_dump(scanner: Scanner) -> None:
    lines = [f"{s.key}={s.value}" for s in SAMPLES if "\n" not in s.value]
    findings = scanner.scan("\n".join(lines), "env.txt")
    expected = [(s.rule, i + 1) for i, s in enumerate(s for s in SAMPLES if "\n" not in s.value)]
    assert [(f.rule, f.line) for f in findings] == expected


# -- what is not a secret ------------------------------------------------------------------------------------


def _negatives() -> dict[str, object]:
    embedding = base64.b64encode(RNG.randbytes(6144)).decode()
    digest = hashlib.sha256(b"prompt").hexdigest()
    sha1 = hashlib.sha1(b"blob").hexdigest()
    ids = {
        "id": f"chatcmpl-{rs(29)}",
        "message_id": f"msg_{rs(24)}",
        "tool_call_id": f"call_{rs(24)}",
        "response_id": f"resp_{rs(48, HEX)}",
        "tool_use_id": f"toolu_{rs(24)}",
        "x-request-id": f"req_{rs(32, HEX)}",
    }
    return {
        "version": 2,
        "interactions": [
            {
                "request": {
                    "headers": {
                        "authorization": "Bearer <redacted>",
                        "x-api-key": "<redacted:anthropic-api-key>",
                        "api-key": "<REDACTED>",
                        "openai-organization": "org-" + rs(24),
                        "idempotency-key": str(uuid.UUID(int=RNG.getrandbits(128))),
                    },
                    "body": {
                        "api_key": "REDACTED",
                        "password": "********************",
                        "token": "sk-test",
                        "secret": "sk-test-1234",
                        "OPENAI_API_KEY": "sk-" + "x" * 48,
                        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
                        "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                        "password_reset_email": "ada.lovelace42@example.org",
                        "session_token": str(uuid.UUID(int=RNG.getrandbits(128))),
                        "next_page_token": str(uuid.UUID(int=RNG.getrandbits(128))),
                        "token_url": "https://auth.example.com/oauth2/token",
                        "api_key_hint": "sk-...your key here...",
                        "max_tokens": 4096,
                        "messages": [
                            {
                                "role": "user",
                                "content": (
                                    "Set OPENAI_API_KEY=sk-your-key-here, then compute the sha256 "
                                    f"{digest} and the blob {sha1}. Use token limits wisely; "
                                    "Authorization: Bearer <redacted:openai-api-key>."
                                ),
                            }
                        ],
                    },
                },
                "response": {
                    "body": {
                        **ids,
                        "sha256": digest,
                        "etag": f'"{sha1}"',
                        "blob": {"$blob": sha1},
                        "request_hash": digest,
                        "refresh_token_sha": digest,
                        "trace_id": uuid.UUID(int=RNG.getrandbits(128)).hex,
                        "data": [{"object": "embedding", "embedding": embedding}],
                        "usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290},
                    }
                },
            }
        ],
    }


def test_negatives_have_no_findings(scanner: Scanner) -> None:
    doc = _negatives()
    raw = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    assert scanner.scan(raw, "c.json") == []
    assert scanner.scan(raw, "c.txt", as_json=False) == []
    text = raw.decode()
    assert redact_text(text, default_rules()) is text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(str(uuid.UUID(int=RNG.getrandbits(128))), id="uuid"),
        pytest.param(hashlib.sha1(b"x").hexdigest(), id="sha1"),
        pytest.param(hashlib.sha256(b"x").hexdigest(), id="sha256"),
        pytest.param(f"chatcmpl-{rs(29)} msg_{rs(24)} call_{rs(24)} resp_{rs(40, HEX)}", id="ids"),
        pytest.param(base64.b64encode(RNG.randbytes(3000)).decode(), id="base64-embedding"),
        pytest.param("Authorization: Bearer <redacted>", id="bearer-placeholder"),
        pytest.param("api_key: <REDACTED>", id="REDACTED"),
        pytest.param("OPENAI_API_KEY=sk-test", id="sk-test"),
        pytest.param("write to ada.lovelace42@example.org", id="email"),
        pytest.param("password = ${DB_PASSWORD}", id="password-env-placeholder"),
        pytest.param("password: <password>", id="password-angle-placeholder"),
        pytest.param("password: ***", id="password-stars"),
        pytest.param("PASSWORD=changeme", id="password-changeme"),
        pytest.param("password: required", id="password-word"),
        pytest.param('{"nextPageToken": "CkAKHgoM' + rs(60) + '"}', id="pagination-token"),
        pytest.param('"$skiptoken": "' + rs(40) + '"', id="odata-skiptoken"),
        pytest.param("tokenizer: meta-llama/Llama-3.1-8B-Instruct", id="tokenizer-name"),
        pytest.param(
            "SecretArn: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/MyApp-AbCdEf", id="arn"
        ),
        pytest.param('{"api_key_id": "apikey_01Rj2N8SVvo6BePZj99NhmiT"}', id="anthropic-key-id"),
        pytest.param("const apiKey = process.env.OPENAI_API_KEY;", id="js-env-reference"),
        pytest.param("SECRET_KEY = settings.DJANGO_SECRET_KEY", id="python-settings-reference"),
        pytest.param("password = config.DB_PASSWORD2", id="config-reference"),
        pytest.param("Authorization: Basic dXNlcjpwYXNzd29yZA==", id="basic-user-password-placeholder"),
        pytest.param("a basic information request", id="basic-in-prose"),
        pytest.param("postgres://user:password@localhost:5432/app", id="url-placeholder-password"),
        pytest.param("redis://:${REDIS_PASSWORD}@cache:6379/0", id="url-env-password"),
        pytest.param("https://api.example.com:8443/v1@latest", id="url-port-not-password"),
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact_text(text, default_rules()) is text
    assert Scanner(default_rules()).scan(text, "x.txt") == []


@pytest.mark.parametrize(
    "raw",
    [
        # the key's first letter written as a JSON escape: no literal in the raw text
        pytest.param(lambda key: '{"a": "' + "\\u0067" + key[1:] + '"}', id="escaped-literal"),
        # json.dumps(ensure_ascii=True) writes the curly quote before the key as \u201c
        pytest.param(lambda key: json.dumps({"m": f"\u201c{key}\u201d"}), id="escaped-char-before"),
        pytest.param(
            lambda key: json.dumps({"arguments": json.dumps({"note": f"\u00ab{key}\u00bb"})}),
            id="escaped-twice-in-arguments",
        ),
    ],
)
def test_a_key_hidden_by_a_json_escape_is_found_in_a_file_holding_no_other(
    scanner: Scanner, raw: Callable[[str], str]
) -> None:
    key = f"ghp_{rs(36)}"
    text = raw(key)
    assert key not in text or "\\u" in text
    findings = scanner.scan(text.encode(), "c.json")
    assert [f.rule for f in findings] == ["github-token"]


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda key: f"https://proxy.example/keys/{key}/usage", id="url-path-segment"),
        pytest.param(lambda key: f"q=my+key+is+{key}+thanks", id="form-encoded"),
        pytest.param(lambda key: f"Authorization%3A%20token%20{key}%0A", id="percent-escaped"),
    ],
)
@pytest.mark.parametrize(
    "key",
    [
        pytest.param(f"ghp_{rs(36)}", id="github"),
        pytest.param(f"sk-proj-{rs(58)}T3BlbkFJ{rs(58)}", id="openai"),
        pytest.param(f"hf_{rs(34, string.ascii_letters)}", id="huggingface"),
    ],
)
def test_a_key_beside_a_slash_plus_or_percent_escape_is_found(
    scanner: Scanner, wrap: Callable[[str], str], key: str
) -> None:
    findings = scanner.scan(orjson.dumps({"url": wrap(key)}), "c.json")
    assert len(findings) == 1 and key not in findings[0].masked


def test_base64_embedding_containing_a_key_shape_is_not_a_finding(scanner: Scanner) -> None:
    # inside a base64 run a key prefix is just four base64 characters
    blob = base64.b64encode(RNG.randbytes(300)).decode()
    planted = blob[:100] + "AIza" + rs(35) + blob[139:]
    assert scanner.scan(orjson.dumps({"embedding": planted}), "e.json") == []


# -- reporting, allow-list, cache -------------------------------------------------------------------------


def test_masked_keeps_prefix_and_last_four() -> None:
    key = f"sk-proj-{rs(58)}T3BlbkFJ{rs(58)}"
    (finding,) = Scanner(default_rules()).scan(f"key={key}", "a.txt")
    assert finding.masked == f"sk-proj-…{key[-4:]}"
    assert finding.to_json() == {
        "file": "a.txt",
        "line": 1,
        "rule": "openai-api-key",
        "path": None,
        "masked": finding.masked,
        "fingerprint": finding.fingerprint,
    }


def test_fingerprint_is_stable_and_depends_on_rule_and_secret(scanner: Scanner) -> None:
    key = f"ghp_{rs(36)}"
    a = scanner.scan(f"t={key}", "a.txt")[0]
    b = scanner.scan(orjson.dumps({"x": [f"token {key}"]}), "b.json")[0]
    c = scanner.scan(f"t=ghp_{rs(36)}", "a.txt")[0]
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert a.fingerprint == hashlib.sha256(f"github-token\x00{key}".encode()).hexdigest()[:16]


def test_allowlist_by_fingerprint_drops_only_that_secret() -> None:
    one, two = f"ghp_{rs(36)}", f"ghp_{rs(36)}"
    text = f"a={one}\nb={two}\n"
    findings = Scanner(default_rules()).scan(text, "a.txt")
    assert len(findings) == 2
    allowed = Scanner(default_rules(), allowlist={findings[0].fingerprint})
    assert [(f.line, f.fingerprint) for f in allowed.scan(text, "a.txt")] == [(2, findings[1].fingerprint)]


def test_cache_by_content_id_restamps_the_file_name() -> None:
    scanner = Scanner(default_rules())
    data = f"k=hf_{rs(34, string.ascii_letters)}".encode()
    first = scanner.scan(data, "a.txt", content_id="blob1")
    # same id: the cached result is used (the content is not read again) under the new name
    again = scanner.scan(b"", "b.txt", content_id="blob1")
    assert [f.file for f in again] == ["b.txt"]
    assert [(f.rule, f.fingerprint) for f in again] == [(f.rule, f.fingerprint) for f in first]


def test_overlapping_rules_report_the_most_specific_once(scanner: Scanner) -> None:
    key = f"sk-ant-api03-{rs(93)}AA"
    text = f'{{"headers": {{"Authorization": "Bearer {key}", "x-api-key": "{key}"}}}}'
    findings = scanner.scan(text, "h.json")
    assert [(f.rule, f.path) for f in findings] == [
        ("anthropic-api-key", "headers.Authorization"),
        ("anthropic-api-key", 'headers["x-api-key"]'),
    ]


def test_json_in_json_in_json_reports_the_nested_path(scanner: Scanner) -> None:
    key = f"AIza{rs(35)}"
    args = orjson.dumps({"config": {"google_key": key}}).decode()
    body = orjson.dumps({"tool_calls": [{"function": {"arguments": args}}]}).decode()
    raw = orjson.dumps({"interactions": [{"response": {"body": body}}]})
    assert b'\\\\\\"' in raw  # escaped twice
    (finding,) = scanner.scan(raw, "c.json")
    assert finding.path == "interactions[0].response.body.tool_calls[0].function.arguments.config.google_key"
    assert finding.rule == "google-api-key" and finding.line == 1


def test_same_secret_twice_reports_each_line(scanner: Scanner) -> None:
    key = f"gsk_{rs(52)}"
    raw = _cassette([{"request": {"headers": {"authorization": f"Bearer {key}"}}} for _ in range(2)])
    findings = scanner.scan(raw, "c.json")
    assert [f.path for f in findings] == [
        "interactions[0].request.headers.authorization",
        "interactions[1].request.headers.authorization",
    ]
    assert findings[0].line < findings[1].line
    assert findings[0].fingerprint == findings[1].fingerprint


def test_secret_after_an_escaped_newline_is_found_in_raw_and_decoded(scanner: Scanner) -> None:
    key = f"xai-{rs(80)}"
    raw = orjson.dumps({"note": f"line one\n{key}"})
    assert b"\\n" + key[:4].encode() in raw
    (finding,) = scanner.scan(raw, "n.json")
    assert (finding.rule, finding.path) == ("xai-api-key", "note")


def test_non_ascii_text_keeps_line_numbers(scanner: Scanner) -> None:
    key = f"r8_{rs(37)}"
    text = f"naïve café ☕\nünïcödé 🎉 line\ntoken={key}\n"
    (finding,) = scanner.scan(text.encode(), "u.log")
    assert (finding.rule, finding.line) == ("replicate-api-token", 3)
    assert redact_text(text, default_rules()) == text.replace(key, "<redacted:replicate-api-token>")


def test_binary_content_has_no_findings(scanner: Scanner) -> None:
    # random and compressed bytes hold no run of printable text long enough to be scanned
    # (a key in such a run is found: see test_secrets_gaps.py)
    data = RNG.randbytes(200_000)
    for blob in (data, gzip.compress(data), zlib.compress(f"ghp_{rs(36)}\n".encode() * 500)):
        assert scanner.scan(blob, "blob.bin") == []


def test_invalid_json_falls_back_to_text(scanner: Scanner) -> None:
    key = f"pplx-{rs(48)}"
    text = '{"interactions": [\n  {"key": "' + key + '"\n'  # truncated
    (finding,) = scanner.scan(text, "broken.json")
    assert (finding.rule, finding.line, finding.path) == ("perplexity-api-key", 2, None)


def test_scan_file_reads_from_disk(tmp_path, scanner: Scanner) -> None:
    path = tmp_path / "trace.log"
    path.write_text(f"ok\nsent key sk_live_{rs(40)}\n")
    (finding,) = scanner.scan_file(path, display="trace.log")
    assert (finding.file, finding.line, finding.rule) == ("trace.log", 2, "stripe-live-key")


# -- rules from plugins -----------------------------------------------------------------------------------


class AcmePlugin:
    @hookimpl
    def cassette_secret_rules(self) -> list[SecretRule]:
        return [
            SecretRule(
                id="acme-token",
                description="Acme API token",
                prefixes=("acme_",),
                regex=re.compile(r"(?<![A-Za-z0-9_])acme_[A-Za-z0-9]{32}(?![A-Za-z0-9_])"),
                entropy=3.0,
            ),
            SecretRule(
                id="acme-pin",
                description="Acme PIN: no literal, searched over the whole text",
                prefixes=(),
                regex=re.compile(r"PIN#(\d{8})\b"),
            ),
        ]


def _manager(*plugins: object) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("cassette")
    pm.add_hookspecs(hookspecs)
    for builtin in (anthropic, openai, secret_rules):  # the key formats: the providers' and the registry's
        pm.register(builtin)
    for plugin in plugins:
        pm.register(plugin)
    return pm


def test_rules_from_plugins_adds_a_project_rule() -> None:
    rules = rules_from_plugins(_manager(AcmePlugin()))
    assert {"acme-token", "acme-pin", "openai-api-key"} <= {r.id for r in rules}
    token = f"acme_{rs(32)}"
    text = f'{{"t": "{token}", "n": "PIN#12345678", "g": "ghp_{rs(36)}"}}'
    findings = Scanner(rules).scan(text, "a.json")
    assert sorted(f.rule for f in findings) == ["acme-pin", "acme-token", "github-token"]
    assert redact_text(text, rules).count("<redacted:") == 3


def test_a_plugin_returning_something_else_is_a_config_error() -> None:
    class Bad:
        @hookimpl
        def cassette_secret_rules(self) -> list[object]:
            return ["sk-.*"]

    with pytest.raises(CassetteConfigError, match=r"expected cassette\.SecretRule"):
        rules_from_plugins(_manager(Bad()))


def test_a_non_ascii_regex_is_a_config_error() -> None:
    rule = SecretRule(id="u", description="", prefixes=("é",), regex=re.compile(r"é\w+"))
    with pytest.raises(CassetteConfigError, match="ASCII"):
        Scanner([rule])


def test_default_rules_match_the_hook() -> None:
    ids = [r.id for r in default_rules()]
    assert ids == [r.id for r in rules_from_plugins(_manager())]
    # each provider's formats first (the more specific ones), then the registry's, which run last
    assert ids[:5] == ["openai-api-key", "azure-openai-key", *(r.id for r in anthropic.RULES)]
    assert ids[5:] == [r.id for r in secret_rules.cassette_secret_rules()]


def test_a_dotted_random_value_is_still_a_secret_while_code_naming_one_is_not() -> None:
    scanner = Scanner(default_rules())
    found = scanner.scan("api_token = Xy7.kQ_9zTr4Lm2\n", "app.env")
    assert [f.rule for f in found] == ["generic-secret"]
    assert scanner.scan("api_token = self.API_TOKEN_VALUE\n", "app.py") == []
