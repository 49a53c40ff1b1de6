"""The docs' examples run.

A fenced ``python`` block right after ``<!-- test: run -->`` is executed with the
local server up (``OPENAI_BASE_URL``/``OPENAI_API_KEY``, ``GOOGLE_GEMINI_BASE_URL``/``GEMINI_API_KEY``
point at it); after
``<!-- test: record-replay -->`` it is executed twice, the second time with the
server stopped, so it must replay from the cassettes the first run recorded.
Functions named ``test_*`` that a block defines are called after it runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cassette.testing.devserver import DevServer

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- test: (run|record-replay) -->\s*\n```python\n(.*?)```", re.S)


def _examples() -> list[Any]:
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for n, match in enumerate(BLOCK.finditer(text)):
            line = text[: match.start()].count("\n") + 2
            found.append(pytest.param(match.group(1), match.group(2), id=f"{doc.name}:{line}:{n}"))
    return found


def _run(code: str, name: str) -> None:
    namespace: dict[str, Any] = {"__name__": f"docs_example_{name}"}
    exec(compile(code, name, "exec"), namespace)
    for key, value in list(namespace.items()):
        if key.startswith("test_") and callable(value):
            value()


@pytest.mark.parametrize(("how", "code"), _examples())
def test_doc_example(
    how: str, code: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if "from google import genai" in code:
        pytest.importorskip("google.genai")  # the `gemini` extra (in `dev`)
    with DevServer() as srv:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.url)  # google-genai's base URL
        monkeypatch.setenv("GEMINI_API_KEY", "gemini-docs-example")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-example")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-example")
        _run(code, request.node.name)
        seen = len(srv.requests)
        srv.stop()
        if how == "record-replay":
            monkeypatch.delenv("OPENAI_API_KEY")
            monkeypatch.setenv("OPENAI_API_KEY", "no-key-needed-on-replay")
            monkeypatch.delenv("GEMINI_API_KEY")
            _run(code, request.node.name)
            assert len(srv.requests) == seen
