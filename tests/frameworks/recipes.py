"""Runs a recipe of docs/frameworks.md as written: recording against the local server, then
replaying with the server stopped. The recipe's own asserts check the framework's answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import cassette
from cassette.testing.devserver import DevServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
RECIPE = re.compile(r"<!-- framework: (\w+) \(([^)]*)\) -->\s*\n```python\n(.*?)```", re.S)


def recipes() -> dict[str, tuple[str, str]]:
    """Recipe name -> (the test file that runs it, its code)."""
    return {m.group(1): (m.group(2), m.group(3)) for m in RECIPE.finditer(DOC.read_text(encoding="utf-8"))}


def _run(code: str, name: str) -> None:
    exec(compile(code, f"docs/frameworks.md:{name}", "exec"), {"__name__": f"recipe_{name}"})


def record_then_replay(name: str, monkeypatch: Any) -> list[dict[str, Any]]:
    """The recipe run twice; returns the requests of the interactions recorded."""
    code = recipes()[name][1]
    with DevServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_BASE", srv.openai_base_url)  # litellm's name for it
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.url)  # google-genai's; it adds the API version
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)  # google-genai prefers it to GEMINI_API_KEY
        monkeypatch.setenv("OPENAI_API_KEY", "sk-recipe")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-recipe")
        monkeypatch.setenv("GEMINI_API_KEY", "gemini-recipe")
        _run(code, name)
        seen = len(srv.requests)
        srv.stop()
        assert seen > 0
        monkeypatch.setenv("OPENAI_API_KEY", "no-key-needed-on-replay")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "no-key-needed-on-replay")
        monkeypatch.setenv("GEMINI_API_KEY", "no-key-needed-on-replay")
        _run(code, name)  # the server is stopped: everything comes from the cassette
        assert len(srv.requests) == seen
    requests = []
    for path in sorted(Path("tests/cassettes").glob("*.json")):
        requests += [i.request for i in cassette.load_cassette(path).interactions]
    assert requests, "the recipe recorded nothing"
    return requests


def tool_calls(requests: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in requests if r.get("kind") == "tool"]


def endpoints(requests: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(r.get("provider", ""), r.get("endpoint", "")) for r in requests if r.get("kind") == "llm"}
