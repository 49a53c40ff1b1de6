"""pydantic-ai through cassette.frameworks.pydantic_ai_provider(): OpenAI chat and Responses models
and the Anthropic model, run and run_stream, a tool round trip each (docs/frameworks.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai", reason="pydantic-ai is installed by .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay, tool_calls


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("pydantic_ai", monkeypatch)
    assert endpoints(requests) == {
        ("openai", "chat.completions"),
        ("openai", "responses"),
        ("anthropic", "messages"),
    }
    assert tool_calls(requests) == ["get_weather"] * 6  # three models, run and run_stream
