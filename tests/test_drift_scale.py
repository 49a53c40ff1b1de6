"""Drift output at the size of a real suite: 300 cassettes changed the same way, a few otherwise."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cassette import Cassette, Interaction
from cassette.cli import main
from cassette.core.canonical import request_key
from cassette.hooks.drift import MARKDOWN_LIMIT, drift_staged, render_markdown, render_text
from cassette.store.cassettes import save_cassette

SAME = 300  # cassettes whose system prompt changed the same way
OTHERS = 4  # cassettes changed each in its own way


def _git(*args: str) -> None:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
    subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env)


def _write(path: Path, system: str, question: str, answer: str) -> None:
    request: dict[str, Any] = {
        "provider": "openai",
        "endpoint": "/v1/chat/completions",
        "model": "gpt-4o-mini",
        "body": {
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        },
    }
    response = {
        "status": 200,
        "json": {
            "id": f"chatcmpl-{abs(hash((system, question))) % 10**8}",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
        },
    }
    inter = Interaction(0, "llm", request_key(request), request, response)
    save_cassette(Cassette(path=path, interactions=[inter]), path, 1 << 20)


@pytest.fixture
def big_change() -> None:
    """A git repo of 304 committed cassettes; re-recordings of all of them staged."""
    _git("init", "-q", "-b", "main", ".")
    _git("config", "user.name", "T")
    _git("config", "user.email", "t@example.com")
    root = Path("tests/cassettes")
    root.mkdir(parents=True)
    names = [f"test_case_{n:03}.json" for n in range(SAME + OTHERS)]
    for n, name in enumerate(names):
        _write(root / name, "You are a support agent.", f"Question {n}?", f"Answer number {n}.")
    _git("add", "-A")
    _git("commit", "-q", "-m", "recorded")
    for n, name in enumerate(names[:SAME]):  # the system prompt changed, the answers did not
        _write(root / name, "You are a terse support agent.", f"Question {n}?", f"Answer number {n}.")
    for n, name in enumerate(names[SAME:], SAME):  # each question changed its own way
        _write(root / name, "You are a support agent.", f"Question {n} rephrased {n}?", f"Answer {n}.")
    _git("add", "-A")


def test_three_hundred_changed_cassettes_read_as_one_group(
    big_change: None, capsys: pytest.CaptureFixture[str]
) -> None:
    drifts = drift_staged()
    assert len(drifts) == SAME + OTHERS
    text = render_text(drifts)
    lines = text.splitlines()
    assert len(lines) <= 60, text
    assert lines[0].startswith(f"{SAME} cassettes changed the same way (request body.messages[0].content")
    assert '"You are a support agent." → "You are a terse support agent."' in text
    assert f"… and {SAME - 5} more cassette(s) (`cassette drift --staged --all` lists them all)" in text
    for n in range(SAME, SAME + OTHERS):  # the distinct changes are each shown
        assert f"tests/cassettes/test_case_{n:03}.json: modified" in text

    # --all lists every file
    assert main(["drift", "--staged", "--all"]) == 0
    every = capsys.readouterr().out
    assert all(f"test_case_{n:03}.json" in every for n in range(SAME + OTHERS))

    markdown = render_markdown(drifts)
    assert len(markdown) < MARKDOWN_LIMIT
    assert (
        f"{SAME + OTHERS} cassette(s) changed ({SAME} of them in 1 group(s) changed the same way)" in markdown
    )
    assert f"`tests/cassettes/test_case_000.json` and {SAME - 1} more, changed the same way" in markdown
    assert f"{SAME} cassettes changed the same way (request body.messages[0].content" in markdown
    assert markdown.count("<details>") == markdown.count("</details>")


def test_markdown_stays_under_the_comment_limit_when_every_change_differs(tmp_path: Path) -> None:
    from cassette.hooks.drift import CassetteDrift
    from cassette.review.drift import DriftItem

    # 2,000 cassettes each with its own long change: far more than a comment holds
    drifts = [
        CassetteDrift(
            f"tests/cassettes/t{n}.json",
            "modified",
            1,
            1,
            [DriftItem(0, "llm", "modified", "changed", ["x"], reason=f"answer {n} " + "word " * 40)],
        )
        for n in range(2000)
    ]
    markdown = render_markdown(drifts, more="cassette drift --rev main.. --all")
    assert len(markdown) < MARKDOWN_LIMIT
    assert "more changed cassette(s) are not in the table" in markdown
    assert "`cassette drift --rev main.. --all` lists every change" in markdown
    assert markdown.rstrip().endswith("</details>")  # the legend closes it, whole
    text = render_text(drifts, more="cassette drift --all")
    assert len(text.splitlines()) <= 30
    assert (
        text.splitlines()[-1] == "… and 1990 more changed cassette(s) (`cassette drift --all` lists them all)"
    )
