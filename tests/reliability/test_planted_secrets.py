"""Planted secrets: every format and every name of the registry, in every place a run writes, never
reach disk or a printed line (issue 23).

Formats are the built-in rules' (one sample each, ``tests.test_secrets.SAMPLES``); names are the
registry's (``cassette.secrets.registry``). Each is planted where a run writes: a plain and a compressed
cassette, a blob (a long tool result), a trace, a failed run's recording and a re-recording awaiting
review. Each written byte is searched for the raw secret, the scanner must report nothing on the written
files, and the printed outputs (the scan's findings, a miss) must hold no raw secret. Prints its counts.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import random
import string
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import get_plugin_manager
from cassette.plugins.manager import default_rules
from cassette.seam.redaction import redacted
from cassette.secrets import Scanner, redact_text, registry
from tests.test_secrets import SAMPLES

RNG = random.Random(20261223)
LOCATIONS = ("plain", "compressed", "blob", "trace", "failed", "pending")
STSB = Path("/work/shared/data/stsb-en-dev.csv")


def _value(n: int = 24) -> str:
    """A random credential-shaped value (mixed case and digits)."""
    alphabet = string.ascii_letters + string.digits
    while True:
        s = "".join(RNG.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s):
            return s


def _names() -> list[tuple[str, str]]:
    """(place, name) for every secret name of the registry, and the issue's names the recorder missed."""
    fields = sorted({*registry.SECRET_FIELDS, *registry.AMBIGUOUS_FIELDS, "api_token", "auth_token"})
    out = [("field", n) for n in fields]
    out += [("field", e) for e in registry.SECRET_FIELD_ENDINGS]  # a name that ends like one
    provided = [h for batch in get_plugin_manager().hook.cassette_secret_headers() for h in batch]
    out += [("header", h) for h in sorted({*registry.SECRET_HEADERS, *provided})]
    out += [("query", q) for q in sorted(registry.SECRET_QUERY)]
    return out


NAMES = _names()


@cassette.tool
def fetch(i: int) -> dict[str, Any]:
    """A tool that returns planted secret number ``i`` (see ``_plant``)."""
    return _PLANTS[i]


_PLANTS: list[dict[str, Any]] = []
_SECRETS: list[str] = []


def _plant() -> None:
    """Every format as a value in text, and every name holding a value where it goes."""
    if _PLANTS:
        return
    for s in SAMPLES:
        _PLANTS.append({"text": f"{s.key}={s.value}", "pad": "x" * 10})
        _SECRETS.append(s.secret)
    for place, name in NAMES:
        value = _value()
        if place == "field":
            _PLANTS.append({name: value, "extra_body": {name: value}})
        elif place == "header":
            _PLANTS.append({"request": {"headers": {name: value, "accept": "*/*"}}})
        else:
            _PLANTS.append({"url": f"https://api.example.com/v1/x?{name}={value}&page=2"})
        _SECRETS.append(value)


def _run(path: Path, location: str, blob: bool = False) -> None:
    options: dict[str, Any] = {"compress": location == "compressed"}
    if blob:
        options["blob_threshold"] = 64
    mode = "rerecord" if location == "pending" else "record"
    if location == "failed":
        with pytest.raises(RuntimeError):
            with cassette.using(path, mode=mode, **options):
                for i in range(len(_PLANTS)):
                    fetch(i)
                raise RuntimeError("the agent failed")
        return
    with cassette.using(path, mode=mode, **options):
        for i in range(len(_PLANTS)):
            fetch(i)


def _written(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _raw(data: bytes) -> bytes:
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


@pytest.mark.parametrize("location", LOCATIONS)
def test_no_planted_secret_reaches_disk_or_the_scan(tmp_path: Path, location: str, counts: Any) -> None:
    _plant()
    root = tmp_path / "cassettes"
    root.mkdir()
    path = root / "c.json"
    if location == "trace":
        with cassette.trace(root / "run.jsonl"):
            for i in range(len(_PLANTS)):
                fetch(i)
    else:
        _run(path, location, blob=location == "blob")
    files = _written(root)
    assert files, "the run wrote nothing"
    leaks = []
    for f in files:
        data = _raw(f.read_bytes())
        leaks += [f"{f.name}: …{s[-4:]}" for s in _SECRETS if s.encode() in data]
    assert not leaks, leaks
    scanner = Scanner(default_rules())
    findings = [finding for f in files for finding in scanner.scan_file(f)]
    printed = "\n".join(map(str, findings))
    assert not any(s in printed for s in _SECRETS)
    assert findings == [], printed
    counts["formats"] = len(SAMPLES)
    counts["names"] = len(NAMES)
    counts["files"] = len(files)
    counts["planted"] = len(_SECRETS)


def test_the_planted_suite_covers_every_format_and_name(counts: Any) -> None:
    assert {s.rule for s in SAMPLES} == {r.id for r in default_rules()}
    for needed in ("token", "api_token", "auth_token", "key"):
        assert ("field", needed) in NAMES
    for needed in ("ocp-apim-subscription-key", "private-token", "x-vault-token", "x-github-token"):
        assert ("header", needed) in NAMES
    counts["formats x locations"] = len(SAMPLES) * len(LOCATIONS)
    counts["names x locations"] = len(NAMES) * len(LOCATIONS)


# -- secrets in every position ------------------------------------------------------------------


AKIA = "AKIA" + "QYLPMN5HHHFPZAM2"
GOOGLE = "AIza" + "SyD8Kq2mXb7Lr4Tn9Vw1Zc6Ye3Ua5Po0Ijx"
OPENAI = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL9nP2rS5uX8"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJib2IiLCJpYXQiOjE3MTYyMzkwMjJ9." + "Qk7m2RTdehjbC7Y0y6bEFZWbzYD"
OPENAI2 = "sk-proj-" + "Zq7wE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL9nP2rS5uX8"


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        pytest.param(
            f"https://b.s3.amazonaws.com/k?X-Amz-Credential={AKIA}/20250101/us-east-1/s3/aws4_request&X-Amz-Date=1",
            AKIA,
            id="presigned-s3",
        ),
        pytest.param(
            f"AWS4-HMAC-SHA256 Credential={AKIA}/20250101/us-east-1/s3/aws4_request", AKIA, id="sigv4"
        ),
        pytest.param(f"https://maps.example.com/api/{GOOGLE}/tile", GOOGLE, id="google-in-path"),
        pytest.param(f"q=1&key={GOOGLE}&x=2", GOOGLE, id="google-form"),
        pytest.param("postgres://app:Gr8-Horse-Battery@db:5432/prod", "Gr8-Horse-Battery", id="postgres-url"),
        pytest.param(f"key%3D{OPENAI}%26x%3D1", OPENAI, id="percent-encoded"),
        pytest.param("db:\n  password: hunter2\n", "hunter2", id="yaml-password"),
        pytest.param("Server=db;Uid=sa;Pwd=Summer2024!;", "Summer2024!", id="connection-string"),
        pytest.param(
            "PASSWORD=Gr\u00fc\u00dfe-Sommer-2024!x\n", "Gr\u00fc\u00dfe-Sommer-2024!x", id="dotenv"
        ),
    ],
)
def test_a_secret_in_any_position_is_redacted_and_found(value: str, secret: str) -> None:
    out = redacted({"text": value}, "tool", "response")
    assert secret not in out["text"], out
    assert Scanner(default_rules()).scan(value, "x.txt"), value


def test_a_secret_used_as_a_dict_key_is_redacted_and_never_printed() -> None:
    data = {OPENAI: {"env": "prod"}, "by_name": {OPENAI: "prod", OPENAI2: "dev"}}
    out = redacted(data, "tool", "response")
    text = repr(out)
    assert OPENAI not in text and OPENAI2 not in text
    assert len(out["by_name"]) == 2  # two such keys stay distinct
    import json

    findings = Scanner(default_rules()).scan(json.dumps(data), "c.json")
    assert findings and not any(OPENAI in str(f) or OPENAI2 in str(f) for f in findings)


def test_evident_placeholders_are_not_passwords() -> None:
    for text in ("password: ${DB_PASSWORD}", "password: <password>", "password: ***", "PASSWORD=changeme"):
        assert redact_text(text, default_rules()) == text
        assert Scanner(default_rules()).scan(text, "x.txt") == []


# -- redaction never corrupts prose --------------------------------------------------------------

PROSE = [
    "a basic descriptor for something",
    "Basic information requests are answered within a day.",
    "The bearer of this letter is a friend.",
    "Here is a basic overview: first the session starts, then the token count is checked.",
    "Use the password manager your team prefers; never share passwords in chat.",
    "Set max_tokens to 256 and temperature to 0.2 for a short answer.",
    "sessions = [s for s in sessions if s.active]",
    "The key insight is that the secret sauce is consistency.",
]


def test_redaction_leaves_ordinary_text_alone(counts: Any) -> None:
    texts = list(PROSE)
    if STSB.is_file():  # the calibration sentences, read in place
        with STSB.open(newline="") as f:
            for row in csv.reader(f):
                texts.extend(row[:2])
    changed = [t for t in texts if redacted({"content": t}, "llm", "response")["content"] != t]
    counts["texts"] = len(texts)
    counts["redactions"] = len(changed)
    assert changed == []


# -- a wrong secret is a miss --------------------------------------------------------------------


@cassette.tool
def login(user: str, password: str) -> dict[str, Any]:
    return {"ok": password == "CorrectHorse42!battery"}


def test_a_wrong_password_is_a_miss_not_the_recorded_answer(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        assert login("bob", "CorrectHorse42!battery") == {"ok": True}
    assert "CorrectHorse42!battery" not in path.read_text()
    with pytest.raises(cassette.CassetteMiss) as miss:
        with cassette.using(path, mode="replay"):
            login("bob", "WrongHorse42!donkey")
    message = str(miss.value)
    assert "WrongHorse42!donkey" not in message and "CorrectHorse42!battery" not in message
    assert "not served" in message
    with cassette.using(path, mode="replay"):
        assert login("bob", "CorrectHorse42!battery") == {"ok": True}


# -- a recorded HTTP error's request ------------------------------------------------------------

ERR_SECRETS = {name: _value(32) for name in ("auth", "x-api-key", "azure", "gitlab", "query", "code", "sdk")}


def _fail_with_secrets(base: str) -> None:
    """Raise an HTTPStatusError whose request carries secret headers and secret query parameters."""
    import httpx

    headers = {
        "authorization": f"Bearer {ERR_SECRETS['auth']}",
        "x-api-key": ERR_SECRETS["x-api-key"],
        "ocp-apim-subscription-key": ERR_SECRETS["azure"],
        "private-token": ERR_SECRETS["gitlab"],
    }
    query = f"subscription-key={ERR_SECRETS['query']}&code={ERR_SECRETS['code']}&page=2"
    with httpx.Client(headers=headers) as client:
        client.get(f"{base}/v1/no-such-endpoint?{query}").raise_for_status()


@cassette.tool
def call_partner(base: str) -> str:
    _fail_with_secrets(base)
    return "unreachable"


@cassette.tool
def ask_model(base: str) -> str:
    from openai import OpenAI

    client = OpenAI(
        base_url=base,
        api_key=OPENAI,
        max_retries=0,
        default_headers={"ocp-apim-subscription-key": ERR_SECRETS["sdk"]},
        default_query={"api-key": ERR_SECRETS["sdk"]},
    )
    client.models.list()
    return "unreachable"


def test_a_recorded_http_error_keeps_no_secret_of_its_request(
    tmp_path: Path, devserver: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx
    import openai

    secrets = [*ERR_SECRETS.values(), OPENAI]
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        with pytest.raises(httpx.HTTPStatusError):
            call_partner(devserver.url)
        devserver.fail_next(1, 401)
        with pytest.raises(openai.AuthenticationError) as live:
            ask_model(devserver.openai_base_url)
    assert ERR_SECRETS["sdk"] in str(live.value.request.url)  # the live error is the real one
    written = b"".join(_raw(f.read_bytes()) for f in _written(tmp_path))
    assert [s[-4:] for s in secrets if s.encode() in written] == []
    assert Scanner(default_rules()).scan_file(path) == []

    with cassette.using(path, mode="replay"):
        with pytest.raises(httpx.HTTPStatusError) as partner:
            call_partner(devserver.url)
        with pytest.raises(openai.AuthenticationError) as sdk:
            ask_model(devserver.openai_base_url)
    shown = []
    for exc in (partner.value, sdk.value):
        shown += [str(exc), repr(exc), str(exc.request.url), repr(dict(exc.request.headers))]
        print(exc)
    shown.append(capsys.readouterr().out)
    assert [s[-4:] for s in secrets if any(s in text for text in shown)] == []
    assert "subscription-key=<redacted>" in str(partner.value)  # the message's URL, redacted in place
    assert partner.value.request.headers["ocp-apim-subscription-key"] == "<redacted>"


# -- a PEM key in a multipart upload ------------------------------------------------------------

PEM = next(s for s in SAMPLES if s.rule == "private-key").secret


def _pem_leaks(data: bytes) -> list[str]:
    """Each line of the PEM key's body found in ``data``, as written, JSON-escaped or percent-escaped."""
    text = data.decode("utf-8", "replace")
    forms = (text, text.replace("\\n", "\n"), text.replace("%0A", "\n").replace("%0D", "\r"))
    body = [line for line in PEM.splitlines() if "-----" not in line]
    return [line[-6:] for line in body if any(line in form for form in forms)]


def _upload(devserver: Any, openai_client: Any) -> None:
    import httpx

    http = cassette.instrument(httpx.Client())
    http.post(  # a generic (kind: http) upload: a field and a file whose name holds the key
        f"{devserver.url}/upload/keys",
        data={"note": PEM},
        files={"key": (PEM, PEM.encode(), "application/x-pem-file"), "also": (None, f"key:\n{PEM}")},
    )
    openai_client.audio.transcriptions.create(  # an SDK's upload: its prompt field and its file's name
        model="whisper-1", prompt=PEM, file=(f"{PEM}.wav", b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav")
    )


@pytest.mark.parametrize("location", ["plain", "failed", "pending"])
def test_a_pem_key_in_a_multipart_field_or_filename_never_reaches_disk(
    tmp_path: Path, location: str, devserver: Any, openai_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from cassette.cli import main

    path = tmp_path / "c.json"
    if location == "pending":
        with cassette.using(path, mode="record"):
            _upload(devserver, openai_client)
    mode = "rerecord" if location == "pending" else "record"
    with pytest.raises(RuntimeError) if location == "failed" else contextlib.nullcontext():
        with cassette.using(path, mode=mode):
            _upload(devserver, openai_client)
            if location == "failed":
                raise RuntimeError("the agent failed")
    files = _written(tmp_path)
    assert any(f.name.endswith(f".{location}.json") for f in files) or location == "plain"
    assert {f.name: _pem_leaks(_raw(f.read_bytes())) for f in files} == {f.name: [] for f in files}
    assert [finding for f in files for finding in Scanner(default_rules()).scan_file(f)] == []
    capsys.readouterr()
    if location != "failed":
        assert main(["show", str(path)]) == 0
    if location == "plain":  # redacted where it was, so the upload still replays by its parts
        text = path.read_text()
        assert '"filename": "<redacted:private-key>"' in text and '"prompt": "<redacted:private-key>"' in text
        assert '"filename": "<redacted:private-key>.wav"' in text
    assert main(["scan", str(tmp_path)]) == 0
    assert _pem_leaks(capsys.readouterr().out.encode()) == []


def test_the_scan_finds_a_pem_key_in_a_raw_multipart_body() -> None:
    import httpx

    request = httpx.Request(
        "POST",
        "https://files.example.com/upload",
        data={"note": PEM},
        files={"key": (PEM, b"x", "text/plain")},
    )
    body = request.read().decode()
    findings = Scanner(default_rules()).scan(body, "body.txt")
    assert {f.rule for f in findings} == {"private-key"} and len(findings) == 2  # the field, the filename
    assert _pem_leaks("\n".join(map(str, findings)).encode()) == []


# -- a key partly \u-escaped in JSON text -------------------------------------------------------

AKIA_ESCAPED = "AKIA\\u0049OSF" + AKIA[8:]  # the text spells AKIAIOSF… with one letter escaped
ESCAPED_JSON = (
    '{"openai": "sk-\\u0070roj-' + OPENAI[8:] + '", "aws": "' + AKIA_ESCAPED + '", '
    '"quoted": "\\u201c' + GOOGLE + '\\u201d", "password": "Gr\\u00fc\\u00dfe-Sommer-2024!x"}'
)
ESCAPED_TAILS = (OPENAI[8:], AKIA[8:], GOOGLE[4:], "-Sommer-2024!x")  # what is not escaped of each


@cassette.tool
def export_settings() -> str:
    """A tool returning JSON text it wrote itself, a key partly \\u-escaped in it."""
    return ESCAPED_JSON


@pytest.mark.parametrize("location", ["plain", "compressed", "trace", "failed", "pending"])
def test_a_key_partly_unicode_escaped_in_json_text_never_reaches_disk(tmp_path: Path, location: str) -> None:
    root = tmp_path / "cassettes"
    root.mkdir()
    path = root / "c.json"
    if location == "trace":
        with cassette.trace(root / "run.jsonl"):
            assert export_settings() == ESCAPED_JSON  # the caller still gets the real text
    else:
        if location == "pending":
            with cassette.using(path, mode="record"):
                export_settings()
        with pytest.raises(RuntimeError) if location == "failed" else contextlib.nullcontext():
            with cassette.using(
                path,
                mode="rerecord" if location == "pending" else "record",
                compress=location == "compressed",
            ):
                assert export_settings() == ESCAPED_JSON
                if location == "failed":
                    raise RuntimeError("the agent failed")
    files = _written(root)
    data = b"".join(_raw(f.read_bytes()) for f in files)
    assert [t[-4:] for t in ESCAPED_TAILS if t.encode() in data] == []
    assert b"<redacted:openai-api-key>" in data and b"<redacted:aws-access-key-id>" in data
    assert [finding for f in files for finding in Scanner(default_rules()).scan_file(f)] == []


def test_the_scan_finds_a_key_partly_unicode_escaped() -> None:
    scanner = Scanner(default_rules())
    # in a text file (a YAML cassette's body), in a JSON cassette's string, in a generic stream's event
    event = 'data: {"text": "sk-\\u0070roj-' + OPENAI[8:] + '!"}'
    cassette_doc = {"interactions": [{"request": {}, "response": {"events": [event, 'data: {"text": "."}']}}]}
    import json

    for content, name in (
        (ESCAPED_JSON, "settings.txt"),
        (f"body:\n  string: '{ESCAPED_JSON}'\n", "vcr.yaml"),
        (json.dumps({"result": ESCAPED_JSON}), "c.json"),
        (json.dumps(cassette_doc), "stream.json"),
    ):
        findings = scanner.scan(content, name)
        rules = {f.rule for f in findings}
        assert "openai-api-key" in rules, (name, findings)
        if name != "stream.json":
            assert {"aws-access-key-id", "google-api-key", "password-assignment"} <= rules, (name, findings)
        printed = "\n".join(map(str, findings))
        assert [t[-6:] for t in ESCAPED_TAILS if t in printed] == []
        masked = {f.masked for f in findings}
        assert f"sk-proj-…{OPENAI[-4:]}" in masked  # the mask and fingerprint are of the decoded key
    assert redact_text(ESCAPED_JSON, default_rules()) == (
        '{"openai": "<redacted:openai-api-key>", "aws": "<redacted:aws-access-key-id>", '
        '"quoted": "\\u201c<redacted:google-api-key>\\u201d", "password": "<redacted:password-assignment>"}'
    )
