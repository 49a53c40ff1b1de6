"""langchain-openai with both HTTP clients (cassette.frameworks.langchain_clients):
bind_tools round trips, stream and astream, use_responses_api (docs/frameworks.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_openai", reason="langchain-openai is installed by .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay, tool_calls


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("langchain", monkeypatch)
    assert endpoints(requests) == {
        ("openai", "chat.completions"),
        ("openai", "responses"),
    }
    assert tool_calls(requests) == ["get_weather"] * 2
    # astream went through the async client: a streamed request of each model is in the cassette
    assert sum(1 for r in requests if r.get("stream")) >= 4
