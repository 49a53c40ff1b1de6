"""Every recipe in docs/frameworks.md names the test that runs it, and that test exists."""

from __future__ import annotations

from pathlib import Path

from tests.frameworks.recipes import recipes

ROOT = Path(__file__).resolve().parents[2]


def test_every_recipe_names_an_existing_test_that_runs_it() -> None:
    found = recipes()
    frameworks = ["openai_agents", "pydantic_ai", "langchain", "langchain_anthropic", "litellm"]
    assert {*frameworks, "llama_index", "instructor", "google_genai"} <= set(found)
    for name, (test_file, _) in found.items():
        source = (ROOT / test_file).read_text(encoding="utf-8")
        assert f'record_then_replay("{name}"' in source, (name, test_file)
