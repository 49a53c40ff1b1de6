"""Redaction never breaks replay: a request rebuilt from redacted data finds its recording.

A tool result (or model output) that held a secret is stored, and so replayed, with a
placeholder; an agent that puts it into its next prompt sends a request that differs
from the live one. The recording keeps a second key, of its redacted request, and
replay falls back to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

import cassette
from cassette.testing.devserver import DevServer

TOKEN = "a8f5f167f44f4964e6c998dee827110c"  # what a session token looks like: the redactor takes it


def _dead_client() -> OpenAI:
    # replay must not need the server: nothing listens on port 1
    return cassette.instrument(OpenAI(base_url="http://127.0.0.1:1/v1", api_key="sk-test", max_retries=0))


@cassette.tool
def get_account(user: str) -> dict[str, str]:
    return {"user": user, "plan": "pro", "session_token": TOKEN}


def _agent(client: OpenAI) -> str:
    account = get_account("bob")
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "summarise: " + json.dumps(account)}]
    )
    return reply.choices[0].message.content or ""


def test_a_prompt_built_from_a_redacted_tool_result_replays(openai_client: OpenAI, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        live = _agent(openai_client)
    text = path.read_text()
    assert TOKEN not in text  # the secret never reaches disk
    doc = json.loads(text)
    tool, llm = doc["interactions"]
    assert "redacted_key" in llm and llm["redacted_key"] != llm["key"]
    assert "redacted_key" not in tool  # its request (the user name) held no secret
    # the field between `kind` and `request` does not stop replay from opening the file by its keys
    assert type(cassette.load_cassette(path, lazy=True)).__name__ == "_LazyCassette"

    with cassette.using(path, mode="replay", unused="error") as session:
        # the tool replays its redacted result, so this prompt says <redacted> where the token was
        assert _agent(_dead_client()) == live
    assert session.stats()["served"] == {"tool": 1, "llm": 1}


def test_a_secret_that_differs_on_replay_is_a_miss(devserver: DevServer, tmp_path: Path) -> None:
    # recorded with one key in the prompt, replayed in CI where another (or a dummy) is set
    recorded = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t" + "T3BlbkFJ" + "Uv1wXy4zAb7cDe0fGh3iJk6l"
    other = "sk-proj-" + "Zy9xWv8uTs7rQp6oNm5lKj4i" + "T3BlbkFJ" + "Hg3fEd2cBa1zYx0wVu9tSr8q"
    path = tmp_path / "c.json"

    def ask(client: OpenAI, key: str) -> str:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"is {key} still valid?"}]
        )
        return reply.choices[0].message.content or ""

    live_client = cassette.instrument(
        OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)
    )
    with cassette.using(path, mode="record"):
        live = ask(live_client, recorded)
    assert recorded not in path.read_text()
    # a different real secret where the recording's is redacted is a miss, not the recorded answer
    with pytest.raises(cassette.CassetteMiss) as miss:
        with cassette.using(path, mode="replay"):
            ask(_dead_client(), other)
    message = str(miss.value)
    assert "reads the same once redacted" in message and "not served" in message
    assert recorded not in message and other not in message
    with cassette.using(path, mode="replay"):  # the recorded secret replays
        assert ask(_dead_client(), recorded) == live


def test_a_request_that_differs_beyond_its_secrets_is_still_a_miss(
    openai_client: OpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        _agent(openai_client)

    @cassette.tool(name="get_account")
    def get_other_account(user: str) -> dict[str, str]:
        return {"user": user, "plan": "pro", "session_token": TOKEN}

    with pytest.raises(cassette.CassetteMiss, match="summarise briefly"), cassette.using(path, mode="replay"):
        account = get_other_account("bob")
        _dead_client().chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "summarise briefly: " + json.dumps(account)}],
        )


def test_each_recorded_call_is_served_once_through_either_key(openai_client: OpenAI, tmp_path: Path) -> None:
    # the same prompt twice: each replayed call takes the next recording, none is served twice
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        first, second = _agent(openai_client), _agent(openai_client)
    with pytest.raises(cassette.CassetteMiss, match="called 3 times"), cassette.using(path, mode="replay"):
        client = _dead_client()
        assert (_agent(client), _agent(client)) == (first, second)
        _agent(client)  # a third time: both recordings are used up


@cassette.tool
def get_creds(user: str) -> dict[str, Any]:
    return {
        "user": user,
        "session_token": "tok_" + user * 3,
        "passwords": ["hunter2", "correct horse battery"],
    }


def _creds_agent(client: OpenAI) -> str:
    creds = get_creds("alice")
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Summarise: " + json.dumps(creds)}]
    )
    return reply.choices[0].message.content or ""


def test_a_value_redacted_by_its_field_name_is_redacted_where_the_agent_copied_it(
    openai_client: OpenAI, tmp_path: Path
) -> None:
    # before: the tool's record said <redacted>, but the next prompt kept the values in plain text
    # (no text rule knows their shape), and replay, built from the redacted result, missed
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        live = _creds_agent(openai_client)
    files = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    for secret in ("tok_alicealicealice", "hunter2", "correct horse battery"):
        assert secret not in files, secret
    assert "alice" in files  # the user name (not under a secret's name) is kept
    with cassette.using(path, mode="replay", unused="error"):
        assert _creds_agent(_dead_client()) == live


@cassette.tool
def get_db_config(name: str) -> dict[str, Any]:
    # a default password that is also a word: the engine's name, and the prompt's
    return {
        "host": "localhost",
        "engine": "postgres",
        "user": "postgres",
        "db_password": "postgres",
        "secret": 0,
    }


def _dba_agent(client: OpenAI) -> tuple[dict[str, Any], str]:
    cfg = get_db_config("orders")
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are a DBA assistant for postgres databases."},
            {
                "role": "user",
                "content": f"The orders database runs {cfg['engine']} as {cfg['user']}. Tune it.",
            },
        ],
    )
    return cfg, reply.choices[0].message.content or ""


def test_a_redacted_value_that_is_a_bare_word_is_not_redacted_elsewhere(
    openai_client: OpenAI, tmp_path: Path
) -> None:
    # before: `postgres` under db_password was replaced in the engine, the user and the prompts,
    # so the tool replayed other values than it returned and the next call missed
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        live_cfg, live = _dba_agent(openai_client)
    with cassette.using(path, mode="replay", unused="error"):
        cfg, answer = _dba_agent(_dead_client())
    assert answer == live
    assert cfg == {**live_cfg, "db_password": "<redacted>"}  # only the password; `secret: 0` is a setting


@cassette.tool
def get_settings(user: str) -> dict[str, Any]:
    return {"user": user, "two_factor": "enabled", "api_key": "disabled"}


def _settings_agent(client: OpenAI) -> str:
    s = get_settings("bob")
    ask = f"My api access is {s['api_key']} and 2fa is {s['two_factor']}. Why is my api access disabled?"
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": ask}])
    return reply.choices[0].message.content or ""


def test_a_redacted_bare_word_copied_into_the_next_prompt_replays(
    openai_client: OpenAI, tmp_path: Path
) -> None:
    # `"api_key": "disabled"` is redacted in its field but not spread (a bare word, also in the
    # prompt's own text), so the replayed tool result puts <redacted> where the recording has
    # "disabled"; replay matches it with the placeholder standing for the recorded text
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        live = _settings_agent(openai_client)
    stored = json.loads(path.read_text())["interactions"]
    assert stored[0]["response"]["result"]["api_key"] == "<redacted>"
    assert "My api access is disabled and" in stored[1]["request"]["messages"][0]["content"]
    with cassette.using(path, mode="replay", unused="error", check_order="error"):
        assert _settings_agent(_dead_client()) == live
    # a request that differs elsewhere still misses
    with pytest.raises(cassette.CassetteMiss), cassette.using(path, mode="replay", unused="off"):
        s = get_settings("bob")
        _dead_client().chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"My api access is {s['api_key']}."}]
        )
