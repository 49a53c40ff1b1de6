"""Drift over a re-recording whose interaction has a wrong shape inside: a review, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from cassette.cli import main

ANSWER = {"role": "assistant", "content": "Paris is the capital of France."}


def _manifest() -> dict[str, Any]:
    return {
        "version": 1,
        "interactions": [
            {
                "key": "a" * 64,
                "kind": "llm",
                "seq": 0,
                "request": {
                    "endpoint": "chat.completions",
                    "kind": "llm",
                    "provider": "openai",
                    "model": "gpt-4o-mini",
                    "messages": [{"role": "user", "content": "What is the capital of France?"}],
                },
                "response": {
                    "status": 200,
                    "headers": {"content-type": "application/json"},
                    "json": {
                        "object": "chat.completion",
                        "choices": [{"index": 0, "message": dict(ANSWER), "finish_reason": "stop"}],
                    },
                },
            }
        ],
    }


def _events(value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(inter: dict[str, Any]) -> None:
        inter["response"] = {"status": 200, "headers": {}, "events": value}

    return edit


def _request_emptied(inter: dict[str, Any]) -> None:
    inter["request"] = {}


def _message_a_string(inter: dict[str, Any]) -> None:
    inter["response"]["json"]["choices"][0]["message"] = "x"


def _tool_call_a_string(inter: dict[str, Any]) -> None:
    inter["response"]["json"]["choices"][0]["message"]["tool_calls"] = ["x"]


EDITS = {
    "events-null": _events(None),
    "events-number": _events(5),
    "request-empty": _request_emptied,
    "message-string": _message_a_string,
    "tool-call-string": _tool_call_a_string,
}


def _write(name: str | bytes, doc: dict[str, Any]) -> None:
    with open(name, "w" if isinstance(name, str) else "wb") as f:
        f.write(json.dumps(doc, indent=2) if isinstance(name, str) else json.dumps(doc).encode())


def _pending(edit: Callable[[dict[str, Any]], None], stem: str | bytes = "c") -> None:
    doc = _manifest()
    pending = _manifest()
    edit(pending["interactions"][0])
    if isinstance(stem, bytes):
        _write(stem + b".json", doc)
        _write(stem + b".pending.json", pending)
    else:
        _write(stem + ".json", doc)
        _write(stem + ".pending.json", pending)


@pytest.mark.parametrize("name", list(EDITS))
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_drift_pending_reviews_a_wrongly_shaped_rerecording(
    name: str, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _pending(EDITS[name])
    assert main(["drift", "--pending", "--format", fmt, "c.json"]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        [drift] = json.loads(out)
        assert drift["file"] == "c.json" and drift["error"] is None
        [item] = drift["items"]
        assert item["seq"] == 0 and item["label"] == "openai chat.completions gpt-4o-mini"
    else:
        assert "c.json" in out and "openai chat.completions gpt-4o-mini" in out
    if name == "request-empty":
        assert "request differs in (empty request)" in out
    else:
        assert "response changed" in out and "re-record" in out
    # the failing gate still works: a response drift cannot read is a regression to look at
    gate = "request" if name == "request-empty" else "regressions"
    assert main(["drift", "--pending", "--fail-on", gate, "c.json"]) == 1


def test_drift_pending_json_names_a_cassette_whose_name_is_not_utf8(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def answer(inter: dict[str, Any]) -> None:
        inter["response"]["json"]["choices"][0]["message"]["content"] = "Lyon is the capital of France."

    _pending(answer, stem=b"c\xff")
    _pending(answer)
    assert main(["drift", "--pending", "--format", "json", "."]) == 0
    files = sorted(d["file"] for d in json.loads(capsys.readouterr().out))
    assert files == ["c.json", "c\\xff.json"]  # the bad byte escaped; a normal name unchanged


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env)


@pytest.mark.parametrize("name", list(EDITS))
def test_the_pre_commit_drift_summary_reviews_a_wrongly_shaped_staged_cassette(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _git("init", "-q", "-b", "main", ".")
    _git("config", "user.name", "Test")
    _git("config", "user.email", "test@example.com")
    _git("config", "commit.gpgsign", "false")
    _write("c.json", _manifest())
    _git("add", "c.json")
    _git("commit", "-q", "-m", "cassette")
    doc = _manifest()
    EDITS[name](doc["interactions"][0])
    _write("c.json", doc)
    _git("add", "c.json")
    assert main(["drift", "--format", "json"]) == 0
    [drift] = json.loads(capsys.readouterr().out)
    assert drift["file"] == "c.json" and drift["error"] is None and len(drift["items"]) == 1
