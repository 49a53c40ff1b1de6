"""A replay miss shows where two long values differ, and which side is which."""

from __future__ import annotations

from pathlib import Path

import pytest
from openai import OpenAI

import cassette

CONTEXT = "Customer context: plan pro, region EU, tier gold, signup 2021. " * 3


def _ask(client: OpenAI, order: str) -> None:
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"{CONTEXT}Where is order {order}?"}]
    )


def test_a_miss_shows_two_long_prompts_where_they_differ(openai_client: OpenAI, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        _ask(openai_client, "A-1")
    dead = cassette.instrument(OpenAI(base_url="http://127.0.0.1:1/v1", api_key="x", max_retries=0))
    with pytest.raises(cassette.CassetteMiss) as caught, cassette.using(path, mode="replay"):
        _ask(dead, "A-2")
    message = str(caught.value)
    # before: both sides were cut at 70 characters from their start, so they read the same
    assert "it differs in (this call != recorded):" in message
    assert 'messages[0].content: "…' in message
    assert 'Where is order A-2?" != "…' in message and 'Where is order A-1?"' in message


# -- the diff masks secrets itself (issue 23) ------------------------------------------------------

OPENAI_KEY = (
    "sk-proj-" + "Qm7xT2vK9pL4wR8nZ3bY6cH1jF5dS0gAe4uI7oP2" + "T3BlbkFJ" + "Lk8jH6gF4dS2aQ9wE7rT5yU3iO1pZ0xC"
)
WEAK_TOKEN = "hunter2hunter2x"  # a `token` the recorder keeps (not random enough), a message must not print


@cassette.tool
def connect(user: str, token: str, note: str) -> str:
    return f"connected {user}"


def _miss(path: Path, **live: str) -> str:
    with pytest.raises(cassette.CassetteMiss) as caught, cassette.using(path, mode="replay"):
        connect(**live)
    return str(caught.value)


def test_the_nearest_call_diff_masks_a_live_secret(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        connect("alice", token="plain", note="hello")
    message = _miss(path, user="bob", token=WEAK_TOKEN, note=f"use {OPENAI_KEY}")
    assert "Nearest recorded tool call" in message
    assert WEAK_TOKEN not in message and OPENAI_KEY not in message
    assert 'arguments.user: "bob" != "alice"' in message  # what is not a secret is shown as it is
    assert f"…{WEAK_TOKEN[-4:]} (fingerprint " in message  # masked as the scanner masks a finding
    assert "use <redacted:openai-api-key>" in message  # the live side was redacted, then masked


def test_the_nearest_call_diff_masks_a_secret_the_recording_kept_raw(tmp_path: Path) -> None:
    # a recording made before a rule existed (or imported from another tool) holds the raw value
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        connect("alice", token="plain", note="hello")
    text = path.read_text()
    path.write_text(
        text.replace('"token": "plain"', f'"token": "{WEAK_TOKEN}"').replace(
            '"note": "hello"', f'"note": "key {OPENAI_KEY}"'
        )
    )
    assert WEAK_TOKEN in path.read_text()
    message = _miss(path, user="bob", token="other", note="hi")
    assert WEAK_TOKEN not in message and OPENAI_KEY not in message
    assert f"…{WEAK_TOKEN[-4:]} (fingerprint " in message
    assert f"sk-proj-…{OPENAI_KEY[-4:]} (fingerprint " in message
