"""Gaps closed in the secret scanner: one test per root cause, through the real Scanner, `cassette scan`
and the redactor.

- a NUL byte made a whole file "binary" and unscanned; binary data is now scanned in its printable runs
- a tool's bytes result (``{"$bytes": base64}``) was decoded by the redactor but not by the scanner,
  in the manifest or, when large, in the blob store
- a list under a keyword key (``"passwords": ["short", key]``) was missed when the file had no raw hit
- the generic rule capped values at 500 characters and wanted 12 distinct characters in a 12-character one
- a Bearer token of 40 or 64 hex characters was taken for a sha digest
- a YAML map under a plural secret name in text (``api_keys:`` then ``  prod: …``) was read by neither the
  scanner nor the recorder's redactor (nor, by the redactor, a YAML list under a keyword key)
- a value nested two maps deeper than a plural secret name (``{"passwords": {"prod": {"db": …}}}``)
- a numeric password or PIN (``"password": 48151623``, ``pin: 48151623``) was never a finding
- a secret in XML (``<password>…</password>``, AWS's ``<SecretAccessKey>``, ``<add key="ApiKey"
  value="…"/>``) was neither a finding nor redacted when a tool returned it

Every key is generated at run time from a seeded RNG: no literal secret lives in this file.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import random
import struct
import subprocess
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

import cassette
from cassette.cli import main
from cassette.plugins.manager import default_rules
from cassette.secrets import Scanner, fingerprint, redact_text
from cassette.secrets.registry import placeholder_value
from cassette.store.blobs import BlobStore
from tests.secret_helpers import ALNUM, random_key

RNG = random.Random(20261202)
HEX = "0123456789abcdef"
SCANNER = Scanner(default_rules())


def rs(n: int, alphabet: str = ALNUM) -> str:
    return random_key(RNG, n, alphabet)


def _scan_cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, object]]]:
    code = main(["scan", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out or "[]")


def _line_of(path: Path, needle: str) -> int:
    text = path.read_text()
    return text[: text.index(needle)].count("\n") + 1


# -- a NUL byte does not make text binary; binary data is scanned in its printable runs --------------------


def _png(*chunks: tuple[bytes, bytes], side: int = 256) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    head = chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 6, 0, 0, 0))
    pixels = chunk(b"IDAT", zlib.compress(RNG.randbytes(side * (4 * side + 1))))
    return (
        b"\x89PNG\r\n\x1a\n" + head + b"".join(chunk(k, b) for k, b in chunks) + pixels + chunk(b"IEND", b"")
    )


def test_a_text_blob_holding_a_nul_is_scanned(capsys: pytest.CaptureFixture[str]) -> None:
    key = f"ghp_{rs(36)}"
    blob = Path("tests/cassettes/.blobs/ab") / ("c" * 38)
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"\x00 tool output\nexit 0, token " + key.encode() + b"\n")
    code, found = _scan_cli("tests/cassettes", capsys=capsys)
    assert code == 1
    assert [(f["file"], f["line"], f["rule"]) for f in found] == [(str(blob), 2, "github-token")]
    assert key not in json.dumps(found)


@pytest.mark.parametrize(
    "encoding, bom",
    [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-16-le", b""), ("utf-16-be", b"")],
)
def test_a_file_saved_as_utf16_is_scanned_as_text(
    encoding: str, bom: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    # Windows tools (PowerShell's Out-File, Notepad's "Unicode") write .env files and logs this way
    key = f"ghp_{rs(36)}"
    aws = "AKIA" + rs(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    text = f"# deploy settings\r\nREGION=eu-west-1\r\nGITHUB_TOKEN={key}\r\nAWS_ACCESS_KEY_ID={aws}\r\n"
    Path("deploy.env").write_bytes(bom + text.encode(encoding))
    code, found = _scan_cli("deploy.env", capsys=capsys)
    assert code == 1
    assert sorted((f["line"], f["rule"]) for f in found) == [(3, "github-token"), (4, "aws-access-key-id")]
    assert key not in json.dumps(found)


def test_binary_data_is_scanned_in_its_printable_runs_only() -> None:
    key = f"ghp_{rs(36)}"
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("config/api_key.txt", RNG.randbytes(50_000))
        z.writestr("notes.txt", "password reset flow, token rotation and secret storage\n" * 50)
    clean = {
        "png": _png((b"tEXt", b"Software\x00cassette test suite, no key here")),
        "gzip": gzip.compress(RNG.randbytes(300_000)),
        "zip": archive.getvalue(),
        "random": RNG.randbytes(2_000_000),
    }
    # a string table puts names side by side: only key shapes are looked for, not values a name announces
    table = b"\x00secret_key:GetObjectAttributesRequestV2\x00"  # a finding in a text file
    clean["strings"] = RNG.randbytes(4000) + table + RNG.randbytes(99)
    for name, data in clean.items():
        assert b"\x00" in data[:8192]
        assert SCANNER.scan(data, f"blob.{name}") == [], name
    # a key in a PNG text chunk is in a printable run: found, on the line the file's newlines give it
    png = _png((b"tEXt", b"Comment\x00deploy with " + key.encode() + b"\n"))  # see the bytes test
    (finding,) = SCANNER.scan(png, "shot.png")
    assert finding.rule == "github-token"
    assert finding.fingerprint == fingerprint("github-token", key)
    assert finding.line == png[: png.index(key.encode())].count(b"\n") + 1


# -- a tool's bytes result is decoded, as the redactor decodes it -------------------------------------------


@cassette.tool
def read_file(name: str) -> bytes:
    return Path(name).read_bytes()


@pytest.mark.parametrize(
    "content, inner",
    [
        pytest.param(lambda key: f"HOME=/root\nOPENAI_API_KEY={key}\n".encode(), "", id="text"),
        pytest.param(
            lambda key: orjson.dumps({"profile": {"OPENAI_API_KEY": key}}),
            ".profile.OPENAI_API_KEY",
            id="json",
        ),
        # the key ends its text: the chunk's CRC after it is printable one time in four, and would extend it
        pytest.param(
            lambda key: _png((b"tEXt", b"Comment\x00" + key.encode() + b"\n"), side=4), "", id="binary"
        ),
    ],
)
def test_a_key_in_a_tool_bytes_result_is_found_at_the_line_of_its_base64(
    capsys: pytest.CaptureFixture[str], content: Callable[[str], bytes], inner: str
) -> None:
    key = f"sk-proj-{rs(58)}T3BlbkFJ{rs(58)}"
    data = content(key)
    Path("payload").write_bytes(data)
    with cassette.using("c.json", mode="record"):
        read_file("payload")
    doc = json.loads(Path("c.json").read_text())
    result = doc["interactions"][0]["response"]["result"]
    assert set(result) == {"$bytes"} and isinstance(result["$bytes"], str)  # small: kept in the manifest
    # as recorded: the redactor took the key out; the scan, decoding the same bytes, agrees
    assert key.encode() not in base64.b64decode(result["$bytes"])
    assert _scan_cli("c.json", capsys=capsys) == (0, [])
    # as an older version or a hand edit leaves it: the scan decodes the base64 and names its line
    encoded = base64.b64encode(data).decode()
    result["$bytes"] = encoded
    Path("c.json").write_text(json.dumps(doc, indent=2) + "\n")
    code, found = _scan_cli("c.json", capsys=capsys)
    assert code == 1
    assert [(f["rule"], f["path"], f["line"]) for f in found] == [
        (
            "openai-api-key",
            'interactions[0].response.result["$bytes"]' + inner,
            _line_of(Path("c.json"), encoded),
        )
    ]
    assert found[0]["fingerprint"] == fingerprint("openai-api-key", key)


def _git(*args: str) -> None:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
    subprocess.run(["git", *args], check=True, capture_output=True, env=env)


def test_a_key_in_a_large_bytes_result_is_found_in_its_blob_by_the_staged_scan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    key = f"sk-proj-{rs(58)}T3BlbkFJ{rs(58)}"
    payloads = {
        "shot.png": _png((b"tEXt", b"Comment\x00staging key " + key.encode() + b"\n")),
        "run.log": ("tool output line\n" * 100 + f"OPENAI_API_KEY={key}\n").encode(),
    }
    for name, data in payloads.items():
        Path(name).write_bytes(data)
    _git("init", "-q", ".")
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    manifest = Path("tests/cassettes/c.json")
    with cassette.using(manifest, mode="record"):
        for name in payloads:
            read_file(name)
    doc = json.loads(manifest.read_text())
    refs = [item["response"]["result"]["$bytes"] for item in doc["interactions"]]
    assert all(set(ref) == {"$blob"} for ref in refs)  # both moved to the blob store, as base64 text
    _git("add", "tests")
    assert _scan_cli("--staged", capsys=capsys) == (0, [])  # redacted as recorded
    # the bytes as an unredacted recording stored them: found in their blobs, named through the cassette
    store = BlobStore(manifest.parent / ".blobs")
    for ref, data in zip(refs, payloads.values(), strict=True):
        ref["$blob"] = store.put(base64.b64encode(data))
    manifest.write_text(json.dumps(doc, indent=2) + "\n")
    _git("add", "tests")
    code, found = _scan_cli("--staged", capsys=capsys)
    assert code == 1
    assert sorted((f["rule"], f["cassette"], f["path"]) for f in found) == [
        ("openai-api-key", str(manifest), "interactions[0].response.result.$bytes"),
        ("openai-api-key", str(manifest), "interactions[1].response.result.$bytes"),
    ]
    assert {f["fingerprint"] for f in found} == {fingerprint("openai-api-key", key)}
    assert key not in json.dumps(found)


# -- a list under a keyword key ----------------------------------------------------------------------------


def test_a_list_under_a_keyword_key_is_found_when_its_first_item_is_short() -> None:
    value = rs(20)
    usage = {"usage": {"prompt_tokens": 12, "completion_tokens": 3}, "max_tokens": 64}
    raw = orjson.dumps({**usage, "passwords": ["short", value]}, option=orjson.OPT_INDENT_2)
    (finding,) = SCANNER.scan(raw, "c.json")
    assert (finding.rule, finding.path, finding.line) == ("generic-secret", "passwords[1]", 9)
    assert finding.fingerprint == fingerprint("generic-secret", value)
    # lists of words under such keys are not findings
    words = {**usage, "tokens": ["Hello", ",", " world"], "secrets": ["db-password", "api-key"]}
    assert SCANNER.scan(orjson.dumps(words), "c.json") == []


# -- the generic rule: long values, short passwords --------------------------------------------------------


def test_a_generic_value_longer_than_500_characters_is_found_whole() -> None:
    value = _key(1200, ALNUM + "_-")
    for raw, name in (
        (orjson.dumps({"api_token": value}), "c.json"),
        (f"API_TOKEN={value}\n".encode(), ".env"),
    ):
        (finding,) = SCANNER.scan(raw, name)
        assert finding.rule == "generic-secret"
        assert finding.fingerprint == fingerprint("generic-secret", value)
    assert redact_text(f"api_token: {value}", default_rules()) == "api_token: <redacted:generic-secret>"
    # a long path or URL under such a name is still not one
    url = "https://auth.example.com/" + "/".join(["oauth2"] * 100)
    assert SCANNER.scan(orjson.dumps({"token_url": url}), "c.json") == []


def test_a_12_character_password_with_one_repeated_character_is_found() -> None:
    while True:
        chars = RNG.sample(ALNUM, 11)
        password = "".join(chars) + chars[3]
        upper, lower = sum(c.isupper() for c in password), sum(c.islower() for c in password)
        if upper >= 2 and lower >= 2 and upper + lower < 12:  # and a digit, as generators make them
            break
    (finding,) = SCANNER.scan(f"password={password}\n", ".env")
    assert finding.fingerprint == fingerprint("generic-secret", password)
    # names of that length are not: two repeats, or a word and a number
    for name in ("my-secret-v2", "prod-db-key-01", "production01", "Production01"):
        assert SCANNER.scan(f"secret_name={name}\n", ".env") == []


# -- Bearer tokens of 40 or 64 hex characters --------------------------------------------------------------


@pytest.mark.parametrize("length", [40, 64])
def test_a_hex_bearer_token_is_found_while_the_same_hex_as_a_digest_is_not(length: int) -> None:
    token = rs(length, HEX)
    headers = orjson.dumps({"headers": {"authorization": f"Bearer {token}"}})
    (finding,) = SCANNER.scan(headers, "c.json")
    assert (finding.rule, finding.path) == ("bearer-token", "headers.authorization")
    assert finding.fingerprint == fingerprint("bearer-token", token)
    assert [f.rule for f in SCANNER.scan(f"curl -H 'Authorization: Bearer {token}'\n", "run.log")] == [
        "bearer-token"
    ]
    assert redact_text(f"Bearer {token}", default_rules()) == "Bearer <redacted:bearer-token>"
    digests = {"etag": token, "commit": token, "refresh_token_sha": token, "note": f"sha {token}"}
    assert SCANNER.scan(orjson.dumps(digests), "c.json") == []
    assert SCANNER.scan(f"token={token}\n", ".env") == []


# -- a map under a plural secret name: each plain value is a secret, as the redactor holds it --------------


def _manifest(response: dict[str, object]) -> dict[str, object]:
    request = {"method": "POST", "url": "https://api.example.com/v1/run", "body": {"q": "hi"}}
    return {"version": 1, "interactions": [{"kind": "http", "request": request, "response": response}]}


@pytest.mark.parametrize("name", ["api_keys", "passwords", "secret_keys", "access_tokens", "dbPasswords"])
def test_each_value_of_a_map_under_a_plural_secret_name_is_a_finding(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    values = {"prod": rs(24), "staging": "short", "dev": _key(32, ALNUM + "_-")}
    usage = {"prompt_tokens": 12, "completion_tokens_details": {"reasoning_tokens": 0}}
    path = Path("c.json")
    path.write_text(json.dumps(_manifest({"usage": usage, "body": {name: values}}), indent=2) + "\n")
    code, found = _scan_cli(str(path), capsys=capsys)
    assert code == 1
    assert [(f["rule"], f["path"], f["line"]) for f in found] == [
        ("generic-secret", f"interactions[0].response.body.{name}.{env}", _line_of(path, values[env]))
        for env in ("prod", "dev")
    ]
    assert [f["fingerprint"] for f in found] == [
        fingerprint("generic-secret", values[env]) for env in ("prod", "dev")
    ]
    # the rule a value under the singular name gets, the redactor agreeing on which are secrets
    single = name[:-1]
    (one,) = SCANNER.scan(orjson.dumps({single: values["prod"]}), "one.json")
    assert (one.rule, one.fingerprint) == (found[0]["rule"], found[0]["fingerprint"])
    from cassette.plugins.redact_default import cassette_redact

    doc = {"body": {name: dict(values)}}
    cassette_redact(doc, "http", "response")
    assert set(doc["body"][name].values()) == {"<redacted>"}


def test_a_plural_map_inside_a_tool_call_s_arguments_and_a_list_still_found() -> None:
    keys = [rs(28), rs(28)]
    args = json.dumps({"api_keys": {"eu": keys[0], "us": keys[1]}})
    call = {"function": {"name": "deploy", "arguments": args}}
    doc = {"choices": [{"message": {"tool_calls": [call]}}], "passwords": keys}
    found = SCANNER.scan(json.dumps(doc, indent=2), "c.json")
    assert sorted((f.path or "", f.fingerprint) for f in found) == sorted(
        [
            (
                "choices[0].message.tool_calls[0].function.arguments.api_keys.eu",
                fingerprint("generic-secret", keys[0]),
            ),
            (
                "choices[0].message.tool_calls[0].function.arguments.api_keys.us",
                fingerprint("generic-secret", keys[1]),
            ),
            ("passwords[0]", fingerprint("generic-secret", keys[0])),
            ("passwords[1]", fingerprint("generic-secret", keys[1])),
        ]
    )


def test_maps_that_are_not_plural_secret_names_or_hold_ids_are_not_findings() -> None:
    ids = {
        "a": "chatcmpl-" + rs(29),
        "b": "3f2b8c1e-9a4d-4e7b-8c2a-1d5e6f7a8b9c",
        "c": "".join(RNG.choice(HEX) for _ in range(64)),
        "d": "".join(RNG.choice(HEX) for _ in range(40)),
    }
    word = rs(24)
    doc = {
        "api_keys": ids,  # ids, UUIDs and digests under a secret name are still not secrets
        "secrets": {"db": word},  # bare `secrets` as often names secrets as it holds them
        "tokens": {"first": word},  # a tokenizer's output: `token` alone is no secret's name
        "usage": {"completion_tokens_details": {"reasoning_tokens": 0, "note": word}},
        "api_keys_count": {"prod": word},
        "embeddings": {"passages": base64.b64encode(RNG.randbytes(6000)).decode()},
    }
    assert SCANNER.scan(json.dumps(doc, indent=2), "c.json") == []


# -- a YAML block list: every item, not only the first -------------------------------------------------------


def test_each_item_of_a_yaml_list_under_a_keyword_key_is_found_on_its_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys = [rs(24), _key(30, ALNUM + "_-"), rs(40)]
    text = (
        "service: billing\n"
        "credentials:\n"
        "  api_keys:\n"
        "    - short\n"  # the first item is no secret: the raw rule never reaches the others
        f"    - {keys[0]}\n"
        "    # rotated weekly\n"
        "\n"
        f"    - '{keys[1]}'\n"
        f'    - "{keys[2]}"\n'
        "  region: eu-west-1\n"
        "ids:\n"
        f"  - {rs(40)}\n"  # another list, not under a keyword key
    )
    path = Path("deploy.yaml")
    path.write_text(text)
    code, found = _scan_cli(str(path), capsys=capsys)
    assert code == 1
    assert [(f["rule"], f["line"]) for f in found] == [("generic-secret", n) for n in (5, 8, 9)]
    assert [f["fingerprint"] for f in found] == [fingerprint("generic-secret", k) for k in keys]
    assert not any(k in json.dumps(found) for k in keys)


def test_a_yaml_list_in_a_tool_output_inside_a_cassette_is_found_item_by_item() -> None:
    keys = [rs(24), rs(24)]
    output = f"$ cat config.yaml\ndb:\n  passwords:\n  - {keys[0]}\n  - {keys[1]}\n  pool: 5\n"
    raw = json.dumps(_manifest({"result": output}), indent=2)
    found = SCANNER.scan(raw, "c.json")
    assert [(f.rule, f.path) for f in found] == [("generic-secret", "interactions[0].response.result")] * 2
    assert [f.fingerprint for f in found] == [fingerprint("generic-secret", k) for k in keys]
    assert {f.line for f in found} == {raw[: raw.index("$ cat")].count("\n") + 1}


def test_yaml_lists_of_ids_words_and_numbers_are_not_findings() -> None:
    text = (
        "tokens:\n  - Hello\n  - ' world'\n"
        "x-ratelimit-remaining-tokens:\n  - '149984'\n  - 2025-01-01T00:00:00Z\n"
        "api_keys:\n"
        f"  - chatcmpl-{rs(29)}\n  - 3f2b8c1e-9a4d-4e7b-8c2a-1d5e6f7a8b9c\n"
        f"  - {''.join(RNG.choice(HEX) for _ in range(64))}\n"
        "  - ${OPENAI_API_KEY}\n  - process.env.OPENAI_API_KEY\n"
        "secret_refs:\n  - name: db\n    key: password\n  - name: api\n    key: token\n"
    )
    assert SCANNER.scan(text, "c.yaml") == []


def test_a_yaml_list_in_a_staged_file_is_found_item_by_item(capsys: pytest.CaptureFixture[str]) -> None:
    keys = [rs(24), rs(24)]
    _git("init", "-q", ".")
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    Path("ci.yml").write_text(f"env:\n  access_tokens:\n  - tiny\n  - {keys[0]}\n  - {keys[1]}\n")
    _git("add", "-A")
    code, found = _scan_cli("--staged", capsys=capsys)
    assert code == 1
    assert [(f["file"], f["line"], f["fingerprint"]) for f in found] == [
        ("ci.yml", 4, fingerprint("generic-secret", keys[0])),
        ("ci.yml", 5, fingerprint("generic-secret", keys[1])),
    ]


# -- a streamed response with an event in the blob store: the join reads it ----------------------------------


def _chunk(content: str, logprobs: bool = False) -> str:
    choice: dict[str, object] = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    if logprobs:  # per-token log probabilities: what makes one event large
        top = [{"token": rs(6), "logprob": -RNG.random(), "bytes": None} for _ in range(12)]
        choice["logprobs"] = {"content": [{"token": "x", "logprob": -0.01, "top_logprobs": top}]}
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return "data: " + json.dumps(chunk)


def _streamed_cassette(key: str, start_in_blob: bool = False) -> tuple[Path, Path]:
    """A cassette whose streamed response carries ``key`` in three deltas, the middle one (or, with
    ``start_in_blob``, the first) an event large enough for the writer to move to the blob store."""
    from cassette.store.refs import dehydrate

    cut = (12, 24) if not start_in_blob else (8, 20)
    text = f"Stored {key} for you." if not start_in_blob else f"{key} for you."
    pieces = [text[: cut[0]], text[cut[0] : cut[1]], text[cut[1] :]]
    big = 0 if start_in_blob else 1
    events = [_chunk(p, logprobs=n == big) for n, p in enumerate(pieces)] + ["data: [DONE]"]
    assert len(events[big].encode()) >= 512 and all(
        len(e.encode()) < 512 for n, e in enumerate(events) if n != big
    )
    manifest = Path("tests/cassettes/stream.json")
    store = BlobStore(manifest.parent / ".blobs")
    response = dehydrate({"status": 200, "events": events}, store, 512, chains=False)
    assert isinstance(response, dict)
    ref = response["events"][big]
    assert set(ref) == {"$blob"}  # the writer's reference
    manifest.write_text(json.dumps(_manifest(response), indent=2) + "\n")
    assert key[4:12] not in manifest.read_text()
    return manifest, store.path_for(ref["$blob"])


def test_a_key_split_around_a_blob_stored_event_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    key = f"ghp_{rs(36)}"
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    manifest, blob = _streamed_cassette(key)
    want = [
        (
            "github-token",
            "interactions[0].response.events[0].choices[0].delta.content",
            _line_of(manifest, '\\"content\\": \\"Stored ghp_'),
            fingerprint("github-token", key),
        )
    ]
    got = [(f.rule, f.path, f.line, f.fingerprint) for f in Scanner(default_rules()).scan_file(manifest)]
    assert got == want
    code, found = _scan_cli(str(manifest), capsys=capsys)
    assert code == 1
    assert [(f["rule"], f["path"], f["line"], f["fingerprint"]) for f in found] == want
    # a reader given to the scanner serves where the file is not on disk
    data = manifest.read_bytes()
    reader = BlobStore(blob.parent.parent).get
    assert [f.fingerprint for f in Scanner(default_rules(), blobs=reader).scan(data, "elsewhere.json")] == [
        want[0][3]
    ]
    assert Scanner(default_rules()).scan(data, "elsewhere.json") == []  # no store: only pieces
    # the blob gone: the pieces around it do not make the key, and nothing breaks
    blob.unlink()
    assert Scanner(default_rules()).scan_file(manifest) == []


def test_a_key_starting_in_a_blob_stored_event_is_on_the_line_of_its_reference() -> None:
    key = f"ghp_{rs(36)}"
    manifest, blob = _streamed_cassette(key, start_in_blob=True)
    (finding,) = Scanner(default_rules()).scan_file(manifest)
    assert finding.path == "interactions[0].response.events[0].choices[0].delta.content"
    assert finding.line == _line_of(manifest, blob.parent.name + blob.name)
    assert finding.fingerprint == fingerprint("github-token", key)


def test_the_staged_scan_joins_a_blob_stored_event(capsys: pytest.CaptureFixture[str]) -> None:
    key = f"ghp_{rs(36)}"
    _git("init", "-q", ".")
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    manifest, _ = _streamed_cassette(key)
    _git("add", "-A")
    code, found = _scan_cli("--staged", capsys=capsys)
    assert code == 1
    assert [(f["file"], f["rule"], f["path"], f["fingerprint"]) for f in found] == [
        (
            str(manifest),
            "github-token",
            "interactions[0].response.events[0].choices[0].delta.content",
            fingerprint("github-token", key),
        )
    ]


def test_a_key_split_over_events_that_are_all_in_the_blob_store_is_found() -> None:
    # log probabilities on every chunk: each event is large, the manifest holds references only
    from cassette.store.refs import dehydrate

    key = f"ghp_{rs(36)}"
    text = f"Your token is {key}, keep it."
    events = [_chunk(text[i : i + 10], logprobs=True) for i in range(0, len(text), 10)]
    manifest = Path("logprobs.json")
    store = BlobStore(Path(".blobs"))
    response = dehydrate({"status": 200, "events": events}, store, 512, chains=False)
    assert isinstance(response, dict) and all(set(e) == {"$blob"} for e in response["events"])
    manifest.write_text(json.dumps(_manifest(response), indent=2) + "\n")
    assert b"delta" not in manifest.read_bytes()
    (finding,) = Scanner(default_rules()).scan_file(manifest)
    assert (finding.rule, finding.path) == (
        "github-token",
        "interactions[0].response.events[1].choices[0].delta.content",
    )
    assert finding.line == _line_of(manifest, response["events"][1]["$blob"])
    assert finding.fingerprint == fingerprint("github-token", key)


# -- a YAML map under a plural secret name: each value, nested ones too, found and redacted -----------------


def _key(n: int, alphabet: str = ALNUM) -> str:
    """A random key that no rule takes for a placeholder (`xxxx` or `fake` come up by chance) and
    that does not start with `-` (read as a YAML list's dash)."""
    while True:
        key = rs(n, alphabet)
        if key[0] not in "-_" and not placeholder_value(key):
            return key


def _digits(n: int) -> str:
    """A random number of ``n`` digits (no leading zero: it is written as a JSON number too)."""
    return rs(1, "123456789") + rs(n - 1, "0123456789")


def _yaml_keys() -> tuple[list[str], str]:
    keys = [_key(24), _key(32, ALNUM + "_-"), _key(20), _key(28), _key(26)]
    text = (
        "service: billing\n"
        "api_keys:\n"
        f"  prod: {keys[0]}\n"
        "  # rotated weekly\n"
        "\n"
        f"  dev: '{keys[1]}'\n"
        "  staging: short\n"  # not shaped like a secret
        "passwords:\n"
        "  prod:\n"
        f'    db: "{keys[2]}"\n'  # two maps below the plural name
        "    replicas:\n"
        f"      - {keys[3]}\n"
        "  ci:\n"
        "    id: key_01HQ3K8V9XJ5M2N7P4R6S8T0W\n"  # a record's id, name and dates describe the key
        "    name: ci-deploy-key-2024\n"
        "    created_at: 2024-01-15T10:30:00Z\n"
        f"    value: {keys[4]}\n"
        "region: eu-west-1\n"
        "ids:\n"
        f"  prod: {rs(40)}\n"  # a map under a name that is no secret's
    )
    return keys, text


def test_each_value_of_a_yaml_map_under_a_plural_secret_name_is_found_on_its_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys, text = _yaml_keys()
    path = Path("deploy.yaml")
    path.write_text(text)
    code, found = _scan_cli(str(path), capsys=capsys)
    assert code == 1
    assert [(f["rule"], f["line"]) for f in found] == [("generic-secret", _line_of(path, k)) for k in keys]
    assert [f["fingerprint"] for f in found] == [fingerprint("generic-secret", k) for k in keys]
    assert not any(k in json.dumps(found) for k in keys)


def test_yaml_maps_that_are_not_secrets_are_not_findings() -> None:
    text = (
        "secrets:\n  db: Xk9mP2vL7qRt5nB8\n"  # bare `secrets` as often names them
        "tokens:\n  first: Hello\n"
        "api_keys_count:\n  prod: 123\n"
        "passwords:\n  prod: ${DB_PASSWORD}\n  dev: '{{ vault.dev }}'\n  ci: process.env.DB_PASSWORD\n"
        "access_tokens:\n"
        "  github:\n    url: https://github.com/acme/api\n    created: 1716239022\n"
        "    keyId: AbCdEf123456GhIjKl\n    next_page_token: Zm9vYmFyYmF6cXV4MTIz\n"
        "  gitlab:\n    - name: deploy\n      id: AbCdEf123456GhIjKl\n"  # a list of records
        "api_keys:\n  notes: |\n    prod: AbCdEf123456GhIjKl\n"  # a block scalar's text
        "  prod:\n"
        f"    - chatcmpl-{rs(29)}\n    - 3f2b8c1e-9a4d-4e7b-8c2a-1d5e6f7a8b9c\n"
    )
    assert SCANNER.scan(text, "c.yaml") == []


@cassette.tool
def cat_config(name: str) -> str:
    return Path(name).read_text()


def test_a_yaml_map_in_a_tool_output_is_found_and_the_recorder_redacts_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys, text = _yaml_keys()
    Path("deploy.yaml").write_text(text)
    # as an older version (or a hand edit) leaves it: found in the JSON string, on its line
    raw = json.dumps(_manifest({"result": text}), indent=2)
    found = SCANNER.scan(raw, "c.json")
    assert [(f.rule, f.path) for f in found] == [("generic-secret", "interactions[0].response.result")] * 5
    assert [f.fingerprint for f in found] == [fingerprint("generic-secret", k) for k in keys]
    # as recording writes it: every value taken out, the rest of the text kept
    with cassette.using("c.json", mode="record"):
        assert cat_config("deploy.yaml") == text
    recorded = Path("c.json").read_text()
    assert not any(k in recorded for k in keys)
    assert "ci-deploy-key-2024" in recorded and "staging: short" in recorded
    assert _scan_cli("c.json", capsys=capsys) == (0, [])
    # a YAML list under a keyword key, in text, is redacted item by item too
    listed = "api_keys:\n  - short\n" + "".join(f"  - {k}\n" for k in keys[:2])
    assert redact_text(listed, default_rules()) == (
        "api_keys:\n  - short\n" + "  - <redacted:generic-secret>\n" * 2
    )


def test_a_yaml_map_in_a_staged_file_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    keys = [_key(24), _key(24)]
    _git("init", "-q", ".")
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    Path("ci.yml").write_text(
        f"env:\n  access_tokens:\n    github: {keys[0]}\n    pypi:\n      upload: {keys[1]}\n"
    )
    _git("add", "-A")
    code, found = _scan_cli("--staged", capsys=capsys)
    assert code == 1
    assert [(f["file"], f["line"], f["fingerprint"]) for f in found] == [
        ("ci.yml", 3, fingerprint("generic-secret", keys[0])),
        ("ci.yml", 5, fingerprint("generic-secret", keys[1])),
    ]


# -- a value nested deeper than a plural secret name's map -------------------------------------------------


def _nested() -> tuple[dict[str, str], dict[str, object]]:
    keys = {
        "db": _key(24),
        "cache": _key(30, ALNUM + "_-"),
        "eu": _key(28),
        "us": _key(28),
        "value": _key(32),
        "aws": _key(40, ALNUM + "/+"),
    }
    doc: dict[str, object] = {
        "passwords": {"prod": {"db": keys["db"], "cache": {"primary": keys["cache"]}}},
        "api_keys": {
            "prod": {"regions": [keys["eu"], keys["us"]]},
            "ci": {  # a record of one key: its id, name and dates are not the key, its value is
                "id": "key_01HQ3K8V9XJ5M2N7P4R6S8T0W",
                "name": "ci-deploy-key-2024",
                "owner": "svc-deploy-42Xq",
                "created_at": "2024-01-15T10:30:00Z",
                "last_used_at": 1716239022,
                "scopes": ["read:models", "write:files"],
                "next_page_token": "Zm9vYmFyYmF6cXV4MTIz",
                "value": keys["value"],
            },
        },
        # a name that is no plural secret name, its leaf named like one: found by that name
        "credentials": {"aws": {"region": "eu-west-1", "secret_access_key": keys["aws"]}},
    }
    return keys, doc


def test_a_value_nested_deeper_than_a_plural_secret_name_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    keys, doc = _nested()
    path = Path("c.json")
    path.write_text(json.dumps(_manifest({"body": doc}), indent=2) + "\n")
    code, found = _scan_cli(str(path), capsys=capsys)
    assert code == 1
    at = "interactions[0].response.body."
    assert [(f["rule"], f["path"], f["line"], f["fingerprint"]) for f in found] == [
        (rule, at + where, _line_of(path, keys[name]), fingerprint(rule, keys[name]))
        for rule, where, name in [
            ("generic-secret", "passwords.prod.db", "db"),
            ("generic-secret", "passwords.prod.cache.primary", "cache"),
            ("generic-secret", "api_keys.prod.regions[0]", "eu"),
            ("generic-secret", "api_keys.prod.regions[1]", "us"),
            ("generic-secret", "api_keys.ci.value", "value"),
            ("aws-secret-access-key", "credentials.aws.secret_access_key", "aws"),
        ]
    ]
    # inside a tool call's arguments (JSON in JSON) too
    call = {
        "function": {"name": "deploy", "arguments": json.dumps({"passwords": {"prod": {"db": keys["db"]}}})}
    }
    (finding,) = SCANNER.scan(json.dumps({"tool_calls": [call]}, indent=2), "c.json")
    assert finding.path == "tool_calls[0].function.arguments.passwords.prod.db"


@cassette.tool
def list_credentials(service: str) -> dict[str, object]:
    return _nested_doc[0]


_nested_doc: list[dict[str, object]] = []


def test_the_recorder_redacts_a_value_nested_deeper_than_a_plural_secret_name() -> None:
    keys, doc = _nested()
    _nested_doc[:] = [doc]
    with cassette.using("c.json", mode="record"):
        list_credentials("billing")
    recorded = Path("c.json").read_text()
    assert not any(k in recorded for k in keys.values())
    result = json.loads(recorded)["interactions"][0]["response"]["result"]
    assert result["passwords"] == {"prod": {"db": "<redacted>", "cache": {"primary": "<redacted>"}}}
    assert result["api_keys"]["prod"] == {"regions": ["<redacted>", "<redacted>"]}
    record = result["api_keys"]["ci"]
    assert record["value"] == "<redacted>"
    ci = doc["api_keys"]["ci"]  # type: ignore[index]
    for field in ("id", "name", "owner", "created_at", "last_used_at", "scopes", "next_page_token"):
        assert record[field] == ci[field], field  # kept, with its type
    assert SCANNER.scan(recorded, "c.json") == []


# -- numeric passwords and PINs ----------------------------------------------------------------------------


def test_a_numeric_password_or_pin_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    pins = [_digits(8), _digits(9), _digits(6), _digits(10), _digits(7), _digits(8)]
    doc = {
        "usage": {"prompt_tokens": 123456, "total_tokens": 4815162},
        "db": {"password": int(pins[0]), "admin_passcode": pins[1]},
        "card": {"userPin": int(pins[2])},
        "passwords": {"backup": int(pins[3])},
    }
    path = Path("c.json")
    path.write_text(json.dumps(_manifest({"body": doc}), indent=2) + "\n")
    code, found = _scan_cli(str(path), capsys=capsys)
    assert code == 1
    at = "interactions[0].response.body."
    assert [(f["rule"], f["path"], f["line"]) for f in found] == [
        ("numeric-password", at + where, _line_of(path, pin))
        for where, pin in zip(
            ["db.password", "db.admin_passcode", "card.userPin", "passwords.backup"], pins, strict=False
        )
    ]
    assert [f["fingerprint"] for f in found] == [fingerprint("numeric-password", p) for p in pins[:4]]
    assert not any(p in json.dumps(found) for p in pins)
    # in YAML, an env file, a log line and a tool call's arguments
    text = f"db:\n  password: {pins[4]}\n  PIN: '{pins[5]}'\n"
    assert [(f.rule, f.line) for f in SCANNER.scan(text, "c.yaml")] == [
        ("numeric-password", 2),
        ("numeric-password", 3),
    ]
    for line in (f"DB_PASSWD={pins[4]}\n", f"sim_pin={pins[4]}\n", f"login ok, passcode: {pins[4]}\n"):
        (finding,) = SCANNER.scan(line, "run.log")
        assert finding.fingerprint == fingerprint("numeric-password", pins[4]), line
    args = json.dumps({"user": "ada", "pin": int(pins[5])})
    call = {"function": {"name": "unlock", "arguments": args}}
    (finding,) = SCANNER.scan(json.dumps({"tool_calls": [call]}, indent=2), "c.json")
    assert (finding.rule, finding.path) == ("numeric-password", "tool_calls[0].function.arguments.pin")


def test_numbers_under_other_names_are_not_findings() -> None:
    n = int(_digits(9))
    doc = {
        "max_tokens": n,
        "id": n,
        "timestamp": 1716239022,
        "total_tokens": n,
        "usage": {"prompt_tokens": n, "completion_tokens_details": {"reasoning_tokens": n}},
        "password_expiry_seconds": 7776000,
        "max_password_age": 7776000,
        "password_hash": n,
        "pincode": 560001,  # a postal code
        "pin_code": 560001,
        "spin": n,
        "mapping": n,
        "password": 123456,  # what examples put there
        "pin": 0,
        "user_pin": 12345,  # 5 digits: too short to matter
        "passwd": 1234567.5,
        "passwords": {"prod": {"created": 1716239022, "rotated_at": "2024-01-15T10:30:00Z"}},
        "api_keys": {"prod": {"ttl": n}},
    }
    assert SCANNER.scan(json.dumps(doc, indent=2), "c.json") == []
    text = "".join(f"{k}: {v}\n" for k, v in doc.items() if not isinstance(v, dict))
    text += f"SPIN: {n}\nPIN: 000000\nPinned: {n}\nshipping: {n}\nping: {n}\npassword: 2024-01-15\n"
    assert SCANNER.scan(text, "c.yaml") == []
    assert redact_text(text, default_rules()) == text


@cassette.tool
def unlock_device(serial: str) -> dict[str, object]:
    return dict(_unlock[0])


_unlock: list[dict[str, object]] = []


def test_the_recorder_redacts_a_numeric_password_or_pin() -> None:
    pins = [_digits(8), _digits(8), _digits(9)]
    _unlock[:] = [
        {
            "serial": "SN-0042",
            "user_pin": int(pins[0]),
            "passcode": pins[1],
            "log": f"unlocked with pin: {pins[2]}",
            "pin": "left",  # a setting that is no number
            "pincode": 560001,
            "retries": 3,
        }
    ]
    with cassette.using("c.json", mode="record"):
        unlock_device("SN-0042")
    recorded = Path("c.json").read_text()
    assert not any(p in recorded for p in pins)
    result = json.loads(recorded)["interactions"][0]["response"]["result"]
    assert result["user_pin"] == "<redacted>" and result["passcode"] == "<redacted>"
    assert result["log"] == "unlocked with pin: <redacted:numeric-password>"
    assert (result["pin"], result["pincode"], result["retries"]) == ("left", 560001, 3)
    assert SCANNER.scan(recorded, "c.json") == []


# -- XML: an element named like a secret, or a key/value attribute pair ---------------------------------


XML_SECRETS = [
    ("element", "<password>{v}</password>"),
    ("namespaced element with attributes", '<ns:ClientSecret type="basic">{v}</ns:ClientSecret>'),
    ("AWS STS answer", "<Credentials><AccessKeyId>ASIA</AccessKeyId><SecretAccessKey>{v}</SecretAccessKey>"),
    ("element over lines", "<settings>\n  <api_key>\n    {v}\n  </api_key>\n</settings>"),
    (".NET appSettings", '<appSettings><add key="Stripe.ApiKey" value="{v}" /></appSettings>'),
    ("Java properties", "<property name='jdbc.password' value='{v}'/>"),
]


@pytest.mark.parametrize(("layout", "xml"), XML_SECRETS, ids=[x[0] for x in XML_SECRETS])
def test_a_secret_in_xml_is_found_as_text_and_inside_a_json_string(layout: str, xml: str) -> None:
    value = rs(24, ALNUM + "+/_-")
    text = xml.format(v=value)
    for raw, name in ((text.encode(), "settings.xml"), (orjson.dumps({"result": text}), "c.json")):
        (finding,) = SCANNER.scan(raw, name)
        assert (finding.rule, finding.fingerprint) == ("xml-secret", fingerprint("xml-secret", value))
    assert value not in redact_text(text, default_rules())


def test_an_xml_entity_inside_the_secret_is_part_of_it() -> None:
    value = rs(10) + "&amp;" + rs(10)
    (finding,) = SCANNER.scan(f"<db><password>{value}</password></db>".encode(), "db.xml")
    assert finding.fingerprint == fingerprint("xml-secret", value)


@pytest.mark.parametrize(
    "xml",
    [
        "<NextToken>{v}{v}</NextToken>",  # AWS's pagination token: where a listing resumes
        "<nextPageToken>{v}</nextPageToken>",
        "<token>0b7f2a1c-3d4e-4f5a-8b6c-7d8e9f0a1b2c</token>",  # an id
        "<secretHash>" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08</secretHash>",
        "<password>****************</password>",
        "<password>${{DB_PASSWORD_PROD}}</password>",
        "<apiKey>your-api-key-here-please</apiKey>",
        "<tokenizer>{v}</tokenizer>",
        "<max_tokens>4096</max_tokens>",
        "<p>The password policy requires twelve characters</p>",
        '<add key="ApiKeyHeaderName" value="X-Api-Key" />',
    ],
)
def test_xml_that_holds_no_secret_is_not_a_finding(xml: str) -> None:
    text = xml.format(v=rs(20))
    assert SCANNER.scan(text.encode(), "a.xml") == []
    assert SCANNER.scan(orjson.dumps({"result": text}), "c.json") == []


def test_a_tool_returning_xml_with_a_secret_is_recorded_without_it(tmp_path: Path) -> None:
    password, api_key = rs(20), rs(32)

    @cassette.tool
    def read_settings(name: str) -> dict[str, str]:
        return {
            "maven": f"<settings><server><id>nexus</id><password>{password}</password></server></settings>",
            "web.config": f'<appSettings><add key="ApiKey" value="{api_key}"/></appSettings>',
        }

    path = tmp_path / "xml.json"
    with cassette.using(path, mode="record"):
        read_settings("prod")
    written = path.read_text()
    assert password not in written and api_key not in written
    assert written.count("<redacted:xml-secret>") == 2
    with cassette.using(path, mode="replay"):
        assert "<id>nexus</id><password><redacted:xml-secret></password>" in read_settings("prod")["maven"]
