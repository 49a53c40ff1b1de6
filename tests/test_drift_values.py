"""Drift a reviewer can act on: a request change shows its values old → new, ids the conversation only
echoes are no request change, a deleted cassette says what it held; `cassette view --drift --rev`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.cli import main
from cassette.review.drift import compare_cassettes
from cassette.testing.devserver import DevServer

from .test_view import Page
from .view_runs import SYSTEM, record_multi_turn

PATH = Path("tests/cassettes/refund.json")


def _record(seed: int, *, system: str = SYSTEM, mode: str = "record") -> None:
    with DevServer(seed=seed) as srv:
        record_multi_turn(PATH, srv, system=system, mode=mode)


def _items() -> dict[int, Any]:
    old, new = cassette.load_cassette(PATH), cassette.load_cassette(PATH.with_name("refund.pending.json"))
    return {i.seq: i for i in compare_cassettes(old, new)}


def test_echoed_tool_call_ids_are_not_request_changes() -> None:
    _record(1)
    _record(2, mode="rerecord")  # other seed: other tool-call ids, echoed by the next request
    old = json.loads(PATH.read_text())
    new = json.loads(PATH.with_name("refund.pending.json").read_text())
    ids = [
        [c["id"] for c in d["interactions"][0]["response"]["json"]["choices"][0]["message"]["tool_calls"]]
        for d in (old, new)
    ]
    assert ids[0] != ids[1]  # the ids did change, and the keys with them
    assert old["interactions"][3]["key"] != new["interactions"][3]["key"]
    items = _items()
    assert items, "the responses' ids changed at least"
    for item in items.values():  # whatever the wording did, no request changed
        assert item.category != "request", item
        assert not [f for f in item.fields if f.startswith("messages")], item.fields
        assert item.request_changes == []


def test_a_request_change_shows_its_values(capsys: pytest.CaptureFixture[str]) -> None:
    _record(1)
    _record(2, system="You are Acme's support agent. Refund only duplicate charges.", mode="rerecord")
    items = _items()
    first = items[0]
    assert first.category == "request"
    [change] = first.request_changes
    assert change.startswith('messages[0].content: "You are the support agent of Acme. Always')
    assert change.endswith('→ "You are Acme\'s support agent. Refund only duplicate charges."')
    # the later call repeats the prompt (a change) and echoes the new tool-call ids (not one)
    assert items[3].request_changes == [change]

    assert main(["drift", "--pending"]) == 0
    text = capsys.readouterr().out
    assert f"        {change}" in text and "tool_call_id" not in text
    assert main(["drift", "--pending", "--format", "markdown"]) == 0
    assert "<br>messages[0].content: " in capsys.readouterr().out
    assert main(["drift", "--pending", "--format", "json"]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert report["items"][0]["request_changes"] == [change]


def test_a_request_change_never_prints_a_secret(capsys: pytest.CaptureFixture[str]) -> None:
    _record(1)
    _record(1, mode="rerecord")
    key = "ghp_" + "x7Kq2LmN9pR4sT1vW8yZ3bC6dF0gH5jK2mP9"  # a hand edit put back what redaction took
    pending = PATH.with_name("refund.pending.json")
    doc = json.loads(pending.read_text())
    doc["interactions"][0]["request"]["messages"][1]["content"] = f"my token is {key}"
    pending.write_text(json.dumps(doc, indent=2))
    for fmt in ("text", "markdown", "json", "html"):
        assert main(["drift", "--pending", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "messages[1].content" in out and "my token is" in out, fmt
        assert key not in out and key[4:20] not in out, fmt
    assert "<redacted:github-token>" in Page(out).words


def _git(*args: str) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env).stdout


def test_a_deleted_cassette_says_what_it_held(capsys: pytest.CaptureFixture[str]) -> None:
    _git("init", "-q", "-b", "main", ".")
    _git("config", "user.name", "T")
    _git("config", "user.email", "t@example.com")
    _record(1)
    _git("add", "-A")
    _git("commit", "-q", "-m", "first")
    _record(2, system="You are the support agent of Acme.")
    _git("add", "-A")
    _git("commit", "-q", "-m", "second")

    # two revisions side by side
    assert main(["view", "--drift", "--rev", "HEAD~1..HEAD", str(PATH), "-o", "drift.html"]) == 0
    capsys.readouterr()
    page = Page(Path("drift.html").read_text())
    assert page.all("li", "pair")[0]["data-category"] == "request"
    assert len(page.all("article", "call")) == 10

    _git("rm", "-q", str(PATH))
    assert main(["drift", "--staged"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("tests/cassettes/refund.json: removed (was 5 interactions, ")
    assert "→ None" not in text and "no longer made" not in text  # one line, not one per call
    assert main(["drift", "--staged", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| `tests/cassettes/refund.json` | removed | was 5 |" in md and "→ None" not in md
    assert main(["drift", "--staged", "--format", "html"]) == 0
    html = Page(capsys.readouterr().out)
    assert "removed: removed (was 5 interactions)" in html.words
    assert [p["data-category"] for p in html.all("li", "pair")] == ["removed"] * 5
