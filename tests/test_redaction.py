"""Redaction on write: secrets never reach the files, and replay still works."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx2
from openai import OpenAI

import cassette
from cassette.testing.devserver import DevServer

CASSETTE = "tests/cassettes/secret.json"
OPENAI_KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5q" + "T3BlbkFJ" + "Zz8yXw7vUt6sRq5pOn4m"
AWS_KEY = "AKIA" + "QWERTYUIOPASDFGH"


def _files() -> str:
    return "".join(p.read_text(errors="replace") for p in Path("tests/cassettes").rglob("*") if p.is_file())


def test_api_key_header_and_secret_in_prompt_never_reach_disk(devserver: DevServer) -> None:
    client = cassette.instrument(
        OpenAI(base_url=devserver.openai_base_url, api_key=OPENAI_KEY, max_retries=0)
    )
    prompt = f"my aws key is {AWS_KEY}, please rotate it"
    with cassette.using(CASSETTE):
        live = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
    text = _files()
    assert OPENAI_KEY not in text and AWS_KEY not in text
    assert "<redacted" in text
    devserver.stop()
    with cassette.using(CASSETTE):  # the key hashed the un-redacted prompt: replay still matches
        again = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
    assert again.model_dump() == live.model_dump()


def test_keys_differing_only_in_the_secret_have_distinct_match_keys(devserver: DevServer) -> None:
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    with cassette.using(CASSETTE):
        for key in (AWS_KEY, AWS_KEY[:-1] + "Z"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"key {key}"}])
    keys = {i.key for i in cassette.load_cassette(CASSETTE).interactions}
    assert len(keys) == 2


def test_ids_uuids_hashes_and_emails_are_kept(devserver: DevServer) -> None:
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    keep = [
        "chatcmpl-9fTq2ZsXy8LmNoPq3RsTuVwXyZ",
        "3f2b8c1e-9d4a-4e7b-8c6d-1a2b3c4d5e6f",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "ada@example.com",
    ]
    with cassette.using(CASSETTE):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": " ".join(keep)}])
    text = _files()
    for value in keep:
        assert value in text


def test_secret_query_parameters_and_headers_of_plain_http_are_redacted(devserver: DevServer) -> None:
    client = cassette.http_client()
    with cassette.using(CASSETTE):
        client.get(f"{devserver.url}/v1/models?key=AIza{'x' * 35}&page=2", headers={"x-api-key": "hunter2"})
    doc = json.loads(Path(CASSETTE).read_text())
    request = doc["interactions"][0]["request"]
    assert ["key", "<redacted>"] in request["query"] and ["page", "2"] in request["query"]
    assert "AIza" not in _files()
    assert isinstance(client, httpx2.Client)


# Built at run time so this file holds no literal secret.
SESSION_TOKEN = "IQoJb3JpZ2luX2VjE" + "Hx9Kq2Lm7Np4Rs8Tv1Wy5Za3Bc6De0Fg" * 22
SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG" + "Qz8Rt2Yp6Lk4Jh0Gf3D"


@cassette.tool
def assume_role(role: str) -> dict[str, object]:
    """What boto's sts.assume_role hands back (shape only)."""
    return {
        "Credentials": {
            "AccessKeyId": "ASIA" + "QWERTYUIOPASDFGH",
            "SecretAccessKey": SECRET_ACCESS_KEY,
            "SessionToken": SESSION_TOKEN,
            "Expiration": "2026-11-30T12:00:00Z",
        },
        "db_password": "Pw4-" + "correct-horse-battery",
        "has_password": True,
        "password_policy_url": "https://example.com/policy",
    }


@cassette.tool
def read_env_file(name: str) -> bytes:
    return f"HOME=/root\nOPENAI_API_KEY={OPENAI_KEY}\n".encode()


def test_credentials_named_like_secrets_are_redacted_even_when_long_enough_for_a_blob() -> None:
    """STS hands back `SecretAccessKey` and a ~700-character `SessionToken`; a long value is moved
    to a blob without its field name, so the name must be judged before it is written."""
    with cassette.using(CASSETTE, mode="record"):
        live = assume_role("deployer")
    text = _files()
    for secret in (SESSION_TOKEN, SECRET_ACCESS_KEY, "correct-horse-battery"):
        assert secret not in text
    doc = json.loads(Path(CASSETTE).read_text())
    result = doc["interactions"][0]["response"]["result"]
    assert result["has_password"] is True  # a flag named like a secret is not one
    assert result["password_policy_url"] == "https://example.com/policy"
    assert result["Credentials"]["Expiration"] == "2026-11-30T12:00:00Z"
    with cassette.using(CASSETTE, mode="replay"):
        again = assume_role("deployer")
    assert again["Credentials"]["SessionToken"] == "<redacted>"  # type: ignore[index]
    assert again["has_password"] is live["has_password"]


def test_a_tool_returning_bytes_has_its_text_redacted() -> None:
    with cassette.using(CASSETTE, mode="record"):
        assert OPENAI_KEY.encode() in read_env_file(".env")
    assert OPENAI_KEY not in _files()
    with cassette.using(CASSETTE, mode="replay"):
        replayed = read_env_file(".env")
    assert isinstance(replayed, bytes)
    assert replayed.startswith(b"HOME=/root\nOPENAI_API_KEY=") and OPENAI_KEY.encode() not in replayed
    assert b"redacted" in replayed


@cassette.tool
def read_binary_dump(name: str) -> bytes:
    return b"\xff\xfe\x00\x01 header " + OPENAI_KEY.encode() + b" \x80\x81 trailer"


def test_a_tool_returning_binary_bytes_around_a_key_has_only_the_key_redacted() -> None:
    # before: bytes that are not UTF-8 were stored as they came, key and all
    with cassette.using(CASSETTE, mode="record"):
        live = read_binary_dump("core")
    files = _files()
    assert OPENAI_KEY not in files and base64.b64encode(live).decode() not in files
    with cassette.using(CASSETTE, mode="replay"):
        replayed = read_binary_dump("core")
    assert replayed.startswith(b"\xff\xfe\x00\x01 header <redacted:") and replayed.endswith(
        b" \x80\x81 trailer"
    )


@cassette.tool
def rotate_credentials(service: str) -> dict[str, Any]:
    return {
        "service": service,
        "passwords": ["Xk9#mP2$vL7q", "Rt5!nB8@wQ3z"],
        "api_keys": [{"id": "key_1", "value": OPENAI_KEY}],
        "secrets": ["DB_PASSWORD", "STRIPE_KEY"],  # the names of secrets, kept
        "password_hints": 2,
    }


def test_the_items_of_a_list_named_like_secrets_are_redacted() -> None:
    # before: only a field holding one value was; a list under `passwords` reached disk
    with cassette.using(CASSETTE, mode="record"):
        rotate_credentials("billing")
    text = _files()
    assert "Xk9#mP2$vL7q" not in text and "Rt5!nB8@wQ3z" not in text and OPENAI_KEY not in text
    result = json.loads(Path(CASSETTE).read_text())["interactions"][0]["response"]["result"]
    assert result["passwords"] == ["<redacted>", "<redacted>"]
    assert result["api_keys"][0]["id"] == "key_1"
    assert result["secrets"] == ["DB_PASSWORD", "STRIPE_KEY"] and result["password_hints"] == 2


@cassette.tool
def service_config(service: str) -> dict[str, Any]:
    return {
        "service": service,
        "api_keys": {"prod": "q8Zr2LmT9vXw4KpN", "staging": "h3Jk9LmQ2wEr7TyU", "rotation": {"days": 30}},
        "secret": {"name": "billing/db", "arn": "arn:aws:secretsmanager:eu-west-1:123:secret:billing"},
        "tokens": {},
    }


def test_the_values_of_a_map_named_like_secrets_are_redacted() -> None:
    # before: `"api_keys": {"prod": "…"}` reached disk; only lists under such a name were redacted
    with cassette.using(CASSETTE, mode="record"):
        live = service_config("billing")
    text = _files()
    assert "q8Zr2LmT9vXw4KpN" not in text and "h3Jk9LmQ2wEr7TyU" not in text
    result = json.loads(Path(CASSETTE).read_text())["interactions"][0]["response"]["result"]
    assert result["api_keys"] == {"prod": "<redacted>", "staging": "<redacted>", "rotation": {"days": 30}}
    assert result["secret"] == live["secret"]  # a singular name's map describes a secret: kept
    assert result["tokens"] == {}
    with cassette.using(CASSETTE, mode="replay"):
        assert service_config("billing")["api_keys"]["prod"] == "<redacted>"
