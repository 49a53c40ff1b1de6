"""openai-agents through cassette.frameworks.openai_agents(): Responses and Chat Completions models,
Runner.run and Runner.run_streamed, a tool round trip each (the recipe in docs/frameworks.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("agents", reason="openai-agents is installed by .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay, tool_calls


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("openai_agents", monkeypatch)
    assert endpoints(requests) == {("openai", "responses"), ("openai", "chat.completions")}
    assert tool_calls(requests) == ["get_weather"] * 3  # run, chat model, streamed run
