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
