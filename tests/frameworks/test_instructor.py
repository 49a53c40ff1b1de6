"""instructor.from_openai over an instrumented client: a structured answer and partial streaming
(docs/frameworks.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("instructor", reason="instructor is installed by .ci/frameworks")

from tests.frameworks.recipes import endpoints, record_then_replay


def test_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = record_then_replay("instructor", monkeypatch)
    assert endpoints(requests) == {("openai", "chat.completions")}
    assert any(r.get("stream") for r in requests) and any(r.get("tools") for r in requests)
