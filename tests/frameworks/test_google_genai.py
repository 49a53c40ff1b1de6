"""google-genai with both HTTP clients (cassette.frameworks.google_genai_http_options): automatic
function calling, generate_content_stream, sync and async (docs/frameworks.md).

It runs in the core test environment too (google-genai is a dev dependency there, unpinned within
the `gemini` extra) and in the httpx2 framework venv of `.ci/frameworks` with the pinned version
docs/frameworks.md lists."""

from __future__ import annotations

import pytest

pytest.importorskip("google.genai", reason="google-genai is installed by the dev extra and .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay, tool_calls


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("google_genai", monkeypatch)
    assert endpoints(requests) == {("gemini", "generateContent"), ("gemini", "streamGenerateContent")}
    # each of the four asks is a function-calling round trip: a model call, the tool, a model call
    assert tool_calls(requests) == ["get_weather"] * 4
    assert sum(1 for r in requests if r.get("kind") == "llm") == 8
