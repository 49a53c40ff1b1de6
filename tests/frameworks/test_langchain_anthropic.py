"""langchain-anthropic through cassette.proxy (it takes no client, only a base URL): bind_tools
round trips, stream and astream (docs/frameworks.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_anthropic", reason="langchain-anthropic is installed by .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay, tool_calls


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("langchain_anthropic", monkeypatch)
    assert endpoints(requests) == {("anthropic", "messages")}  # first-class, as an SDK call
    assert tool_calls(requests) == ["get_weather"]
    # stream and astream went through the sync and the async client: both streamed requests recorded
    assert sum(1 for r in requests if r.get("stream")) == 2
    assert sum(1 for r in requests if r.get("kind") == "llm") == 4
