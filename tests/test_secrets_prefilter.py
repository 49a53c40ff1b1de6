"""The scanner's shortcuts find exactly what a full search finds, and shortened Anthropic keys are secrets.

The shortcuts (see ``cassette/_secrets.py``): literals of ``skip_base64`` rules are
looked for with the middle of long base64 runs cut out; the decoded JSON pass
covers only strings whose raw form holds a literal or that sit under a key
holding a keyword; a staged scan reads a blob only when its id is not cached.
Each is checked against the slow path on the same input. Keys are generated
from a seeded RNG: no literal secret lives in this file.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import re
import string
import subprocess
import uuid
from pathlib import Path

import orjson
import pytest

from cassette import SecretRule
from cassette.cli import main
from cassette.plugins.manager import default_rules
from cassette.secrets import Finding, Scanner, redact_text
from tests.secret_helpers import ALNUM, random_key
from tests.test_secrets import SAMPLES, Sample

RNG = random.Random(20261201)
URLSAFE = ALNUM + "_-"


def rs(n: int, alphabet: str = ALNUM) -> str:
    return random_key(RNG, n, alphabet)


def b64(n: int) -> str:
    """A base64 run of about ``n`` characters, like an embedding or an image."""
    return base64.b64encode(RNG.randbytes(n * 3 // 4)).decode().rstrip("=")


def _plain_rules() -> list[SecretRule]:
    """The built-in rules with the base64 shortcut off: literals are searched over the whole text."""
    return [dataclasses.replace(r, skip_base64=False) for r in default_rules()]


def _never_rule() -> SecretRule:
    # a rule with no literal makes the scanner decode and scan every JSON string (the slow path)
    return SecretRule(id="never", description="", prefixes=(), regex=re.compile(r"(?!x)x"))


def _rows(findings: list[Finding]) -> list[tuple[str, int, str | None, str]]:
    return [(f.rule, f.line, f.path, f.fingerprint) for f in findings]


FAST = Scanner(default_rules())
PLAIN = Scanner(_plain_rules())
FULL = Scanner([*default_rules(), _never_rule()])
ONE_LINE = [s for s in SAMPLES if "\n" not in s.value]


# -- base64 runs cut short ------------------------------------------------------------------------------


def test_every_builtin_rule_promises_to_skip_base64() -> None:
    assert all(r.skip_base64 for r in default_rules())


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.rule}:{s.key}" for s in SAMPLES])
def test_keys_next_to_long_base64_runs_are_found_as_by_a_full_search(sample: Sample) -> None:
    value = json.dumps(sample.value)[1:-1]  # as it sits in a JSON string (a PEM's newlines escaped)
    text = (
        f'{{"embedding": "{b64(3000)}",\n'
        f' "note": "{b64(900)}\\n{sample.key}={value}",\n'  # right after a run and an escaped newline
        f' "image": "data:image/png;base64,{b64(5000)}",\n'
        f' "env": "{sample.key}={value}\\n{b64(700)}"}}\n'  # right before a run
    )
    fast, plain = FAST.scan(text, "c.json"), PLAIN.scan(text, "c.json")
    assert _rows(fast) == _rows(plain)
    assert [f.rule for f in fast] == [sample.rule, sample.rule]
    assert FAST.scan(text, "c.txt", as_json=False) == PLAIN.scan(text, "c.txt", as_json=False)
    assert redact_text(text, FAST) == redact_text(text, PLAIN) != text


def test_a_keyword_at_the_end_of_a_long_run_is_still_looked_at() -> None:
    secret = rs(24, ALNUM + "!#%")
    # "…Token=value": the run's last characters spell the keyword, the value follows
    text = f"blob={b64(4000)}Token={secret}\n" + b64(6000) + "\n"
    fast = FAST.scan(text, "x.log")
    assert _rows(fast) == _rows(PLAIN.scan(text, "x.log"))
    assert [f.rule for f in fast] == ["generic-secret"]


def test_a_long_jwt_starting_a_run_is_found() -> None:
    head = base64.urlsafe_b64encode(b'{"alg":"RS256","typ":"JWT","kid":"' + b"k" * 300 + b'"}').decode()
    body = base64.urlsafe_b64encode(orjson.dumps({"sub": rs(12), "pad": rs(400)})).decode()
    token = f"{head.rstrip('=')}.{body.rstrip('=')}.{rs(86, URLSAFE)}"
    text = orjson.dumps({"embedding": b64(5000), "id_token": token, "more": b64(5000)}).decode()
    (finding,) = FAST.scan(text, "t.json")
    assert (finding.rule, finding.path) == ("jwt", "id_token")
    assert _rows([finding]) == _rows(PLAIN.scan(text, "t.json"))


def test_key_shapes_deep_inside_base64_are_not_findings_either_way() -> None:
    run = b64(4000)
    planted = run[:2000] + "AKIA" + "".join(RNG.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    text = orjson.dumps({"embedding": planted + run[2020:]}).decode()
    assert FAST.scan(text, "e.json") == PLAIN.scan(text, "e.json") == []


def test_a_plugin_rule_without_the_promise_is_searched_inside_runs() -> None:
    rule = SecretRule(
        id="acme-inner",
        description="a token that may sit inside base64",
        prefixes=("ACME",),
        regex=re.compile(r"ACME[0-9]{12}"),
    )
    run = b64(6000)
    text = run[:3000] + "ACME" + "".join(RNG.choice(string.digits) for _ in range(12)) + run[3000:]
    assert [f.rule for f in Scanner([*default_rules(), rule]).scan(text, "b.txt")] == ["acme-inner"]


# -- the decoded pass over strings holding a literal --------------------------------------------------


def _big_cassette(samples: list[Sample]) -> bytes:
    """A cassette where keys sit in every kind of place, among ids, UUIDs, digests and embeddings."""
    interactions = []
    for n, sample in enumerate(samples):
        arguments = orjson.dumps({"region": "eu-west-1", sample.key: sample.value}).decode()
        interactions.append(
            {
                "request": {
                    "headers": {"x-request-id": f"req_{rs(24)}", sample.key: sample.value},
                    "messages": [{"role": "user", "content": f"use {sample.key}={sample.value} please"}],
                    "metadata": {
                        "idempotency_key": str(uuid.UUID(int=RNG.getrandbits(128))),
                        "key": rs(64, "0123456789abcdef"),
                    },
                },
                "response": {
                    "choices": [
                        {
                            "message": {
                                "tool_calls": [{"id": f"call_{rs(24)}", "function": {"arguments": arguments}}]
                            }
                        }
                    ],
                    "data": [{"embedding": b64(4000)} for _ in range(2)],
                    # a list under a key holding a keyword: each value is read with that key as context
                    "passwords": [rs(20, ALNUM + "!#%") if n % 2 else "short", f"tok {n}"],
                    # JSON inside JSON inside a list under such a key
                    "secret_list": orjson.dumps([rs(22, ALNUM + "!#%")]).decode(),
                },
            }
        )
    return orjson.dumps({"version": 2, "interactions": interactions}, option=orjson.OPT_INDENT_2)


def test_the_decoded_pass_finds_what_decoding_every_string_finds() -> None:
    raw = _big_cassette(ONE_LINE)
    fast = FAST.scan(raw, "c.json")
    assert _rows(fast) == _rows(FULL.scan(raw, "c.json")) == _rows(PLAIN.scan(raw, "c.json"))
    paths = {(f.rule, f.path) for f in fast}
    for n, sample in enumerate(ONE_LINE):
        where = f"interactions[{n}]"
        key = sample.key if re.fullmatch(r"\w+", sample.key) else None
        args = f"{where}.response.choices[0].message.tool_calls[0].function.arguments"
        assert (sample.rule, f"{args}.{key}" if key else f'{args}["{sample.key}"]') in paths, sample
        assert (sample.rule, f"{where}.request.messages[0].content") in paths, sample
    assert {"interactions[1].response.passwords[0]", "interactions[0].response.secret_list[0]"} <= {
        f.path for f in fast if f.rule == "generic-secret"
    }


def test_an_escaped_literal_is_found_when_the_file_has_another_key() -> None:
    # "\u0073k-" and "\/" spell a key the raw text does not show; decoding every string finds it
    hidden = f"ghp_{rs(36)}"
    raw = (
        '{"a": "' + hidden.replace("g", "\\u0067", 1) + '", "b": "ghs_' + rs(36) + '", "c": "x\\/y"}'
    ).encode()
    assert [f.rule for f in FAST.scan(raw, "e.json")] == ["github-token", "github-token"]
    assert _rows(FAST.scan(raw, "e.json")) == _rows(FULL.scan(raw, "e.json"))


# -- shortened Anthropic keys ------------------------------------------------------------------------


@pytest.mark.parametrize("length", [20, 32, 48, 92, 95, 120])
def test_a_shortened_anthropic_key_is_found_and_redacted(length: int) -> None:
    key = f"sk-ant-api03-{rs(length, URLSAFE)}"
    text = f'client = Anthropic(api_key="{key}")  # from the docs\n'
    (finding,) = FAST.scan(text, "README.md")
    assert finding.rule == "anthropic-api-key" and key not in str(finding)
    assert redact_text(text, default_rules()) == text.replace(key, "<redacted:anthropic-api-key>")


def test_a_full_length_anthropic_key_is_still_found_whatever_its_letters() -> None:
    key = "sk-ant-api03-" + "a" * 93 + "AA"  # the documented shape is enough, as before
    assert [f.rule for f in FAST.scan(f"k={key}", "a.txt")] == ["anthropic-api-key"]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("sk-ant-api03-" + "Ab1" * 6 + "x", id="19-characters"),
        pytest.param("sk-ant-api03-...", id="elided"),
        pytest.param("sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxx", id="xxxx"),
        pytest.param("sk-ant-api03-your-api-key-goes-here-1234", id="your-key"),
        pytest.param("sk-ant-api03-abcdefghijklmnopqrstuvwxyz", id="alphabet"),
        pytest.param("sk-ant-api03-REDACTED", id="redacted"),
    ],
)
def test_anthropic_placeholders_are_left_alone(text: str) -> None:
    line = f"ANTHROPIC_KEY_HINT: {text}"
    assert redact_text(line, default_rules()) == line
    assert [f.rule for f in FAST.scan(line, "a.txt") if f.rule == "anthropic-api-key"] == []


# -- the staged scan reads only what its cache does not know ----------------------------------------


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def test_a_cached_staged_scan_reads_no_staged_blob(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    _git(tmp_path, "init", "-q", str(root))
    folder = root / "tests" / "cassettes"
    folder.mkdir(parents=True)
    key = f"sk-ant-api03-{rs(93, URLSAFE)}AA"
    for n in range(3):
        headers = {"x-api-key": key} if n == 1 else {"x-request-id": f"req_{rs(24)}"}
        doc = {
            "version": 2,
            "interactions": [{"request": {"headers": headers}, "response": {"e": b64(6000)}}],
        }
        (folder / f"c{n}.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    _git(root, "add", "tests")
    (root / "pyproject.toml").write_text("[tool.cassette]\n")
    import os

    os.chdir(root)
    assert main(["scan", "--staged", "--format", "json"]) == 1
    first = json.loads(capsys.readouterr().out)
    assert [(f["file"], f["rule"]) for f in first] == [("tests/cassettes/c1.json", "anthropic-api-key")]
    # with every staged object gone, only the cache can answer
    for line in _git(root, "ls-files", "-s").splitlines():
        sha = line.split()[1]
        (root / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    assert main(["scan", "--staged", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == first
