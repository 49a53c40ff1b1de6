"""litellm through its client_session / aclient_session globals (cassette.frameworks.litellm()) and
a per-call client=: a tool round trip each, and a streamed acompletion (docs/frameworks.md)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list fetched at import
pytest.importorskip("litellm", reason="litellm is installed by .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay, tool_calls


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("litellm", monkeypatch)
    assert endpoints(requests) == {("openai", "chat.completions")}
    assert tool_calls(requests) == ["get_weather"] * 2
