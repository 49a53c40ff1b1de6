"""llama-index's OpenAI with both HTTP clients (cassette.frameworks.llama_index_clients()):
predict_and_call's tool round trip and stream_complete (docs/frameworks.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.llms.openai", reason="llama-index is installed by .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay, tool_calls


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("llama_index", monkeypatch)
    assert ("openai", "chat.completions") in endpoints(requests)
    assert tool_calls(requests) == ["get_weather"]
