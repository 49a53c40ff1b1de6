"""Calls in flight at once (asyncio.gather, a thread pool) reach the seam in the scheduler's order,
which differs between the recording and each replay: they are marked `parallel` when recorded, and
replay checks the order of every other call only. A call made inside another of the same task (a
tool that asks a model) is nested, not parallel, and keeps its order checked.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

import cassette
from cassette import block_network
from cassette.testing.devserver import DevServer

DEAD = "http://127.0.0.1:9/v1"  # replay never connects


def _ask(client: Any, text: str) -> Any:
    return client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])


def _asked(inter: dict[str, Any]) -> str:
    return str(inter["request"]["messages"][-1]["content"])


def _recorded(path: Path) -> list[tuple[str, bool]]:
    """Each recorded call's question and whether it is marked parallel, in the recorded order."""
    doc = json.loads(path.read_text())
    return [(_asked(i), i.get("parallel") is True) for i in doc["interactions"]]


def _reorder(path: Path, order: list[str], *, keep_marks: bool = True) -> None:
    """Rewrite the recording as if its calls had reached the seam in ``order`` (the scheduler's)."""
    doc = json.loads(path.read_text())
    by_question = {_asked(i): i for i in doc["interactions"]}
    doc["interactions"] = [by_question[q] for q in order]
    for seq, inter in enumerate(doc["interactions"]):
        inter["seq"] = seq
        if not keep_marks:
            inter.pop("parallel", None)
    path.write_text(json.dumps(doc, indent=2))


async def _agent(client: AsyncOpenAI) -> list[str]:
    """Plan, three lookups at once, then a summary: the agent's own order is plan → * → summary."""
    out = [(await _ask(client, "plan")).choices[0].message.content]
    answers = await asyncio.gather(*(_ask(client, f"lookup {n}") for n in range(3)))
    out += [a.choices[0].message.content for a in answers]
    out.append((await _ask(client, "summary")).choices[0].message.content)
    return out


async def test_gathered_calls_are_marked_parallel_and_replay_in_any_order(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    with DevServer() as srv:
        client = cassette.instrument(AsyncOpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0))
        with cassette.using(path, mode="record"):
            live = await _agent(client)
    marks = dict(_recorded(path))
    assert marks == {"plan": False, "lookup 0": True, "lookup 1": True, "lookup 2": True, "summary": False}
    # the mark sits between `kind` and `request`: the cassette still opens without a whole parse
    assert type(cassette.load_cassette(path, lazy=True)).__name__ == "_LazyCassette"

    # the lookups reached the seam last-first when recorded; this replay sends them first-last
    _reorder(path, ["plan", "lookup 2", "lookup 1", "lookup 0", "summary"])
    replayer = cassette.instrument(AsyncOpenAI(base_url=DEAD, api_key="x", max_retries=0))
    with block_network(), cassette.using(path, mode="replay", check_order="error", unused="error"):
        assert await _agent(replayer) == live

    # without the marks, the same recording fails the order check: the marks are what lets it pass
    _reorder(path, ["plan", "lookup 2", "lookup 1", "lookup 0", "summary"], keep_marks=False)
    with pytest.raises(cassette.CassetteError, match="out of recorded order"):
        with block_network(), cassette.using(path, mode="replay", check_order="error"):
            await _agent(replayer)


async def test_the_order_of_the_calls_around_parallel_ones_is_still_checked(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    with DevServer() as srv:
        client = cassette.instrument(AsyncOpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0))
        with cassette.using(path, mode="record"):
            await _agent(client)
    # the summary recorded before the plan: the agent's order changed, and replay says so
    _reorder(path, ["summary", "lookup 0", "lookup 1", "lookup 2", "plan"])
    replayer = cassette.instrument(AsyncOpenAI(base_url=DEAD, api_key="x", max_retries=0))
    with pytest.raises(cassette.CassetteError, match="out of recorded order"):
        with block_network(), cassette.using(path, mode="replay", check_order="error"):
            await _agent(replayer)


def test_calls_from_a_thread_pool_at_once_are_parallel(tmp_path: Path) -> None:
    """Four workers look an order up at once (each waits for the others inside the tool, so all four
    are in flight together when recorded); the model call before them keeps its place."""
    path = tmp_path / "pool.json"
    orders = [f"A{n}" for n in range(4)]
    together = threading.Barrier(len(orders))

    @cassette.tool
    def lookup(order: str) -> str:
        together.wait(timeout=30)  # recording only: a replayed tool does not run
        return f"{order}: shipped"

    def run(client: OpenAI) -> list[str]:
        first = str(_ask(client, "first").choices[0].message.content)
        with ThreadPoolExecutor(len(orders)) as pool:
            found = list(pool.map(lambda o: contextvars.copy_context().run(lookup, o), orders))
        return [first, *found]

    with DevServer() as srv:
        with cassette.using(path, mode="record"):
            live = run(cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0)))
    doc = json.loads(path.read_text())
    assert [(i["kind"], i.get("parallel", False)) for i in doc["interactions"]] == [
        ("llm", False),
        *[("tool", True)] * 4,
    ]
    # replayed with the lookups in the reverse of their recorded order
    doc["interactions"][1:] = doc["interactions"][:0:-1]
    for seq, inter in enumerate(doc["interactions"]):
        inter["seq"] = seq
    path.write_text(json.dumps(doc, indent=2))
    replayer = cassette.instrument(OpenAI(base_url=DEAD, api_key="x", max_retries=0))
    with block_network(), cassette.using(path, mode="replay", check_order="error", unused="error"):
        assert run(replayer) == live


def test_a_call_nested_in_a_tool_is_not_parallel(tmp_path: Path) -> None:
    """A tool that asks a model: the inner call is in flight while the tool is, in the same thread."""
    path = tmp_path / "nested.json"

    with DevServer() as srv:
        client = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0))

        @cassette.tool
        def research(topic: str) -> str:
            return str(_ask(client, f"research {topic}").choices[0].message.content)

        with cassette.using(path, mode="record"):
            _ask(client, "plan")
            research("refunds")
            _ask(client, "summary")
    doc = json.loads(path.read_text())
    assert [i["kind"] for i in doc["interactions"]] == ["llm", "tool", "llm", "llm"]
    assert not any("parallel" in i for i in doc["interactions"])


async def test_a_re_recording_whose_parallel_calls_came_in_another_order_has_no_drift(tmp_path: Path) -> None:
    """Before: the moved calls were paired with their neighbours and reported as changed requests."""
    from cassette.review.drift import diff_cassettes

    path = tmp_path / "agent.json"
    with DevServer() as srv:
        client = cassette.instrument(AsyncOpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0))
        with cassette.using(path, mode="record"):
            await _agent(client)
    again = tmp_path / "again.json"
    again.write_text(path.read_text())
    _reorder(path, ["plan", "lookup 0", "lookup 1", "lookup 2", "summary"])
    _reorder(again, ["plan", "lookup 2", "lookup 0", "lookup 1", "summary"])
    assert diff_cassettes(cassette.load_cassette(path), cassette.load_cassette(again)) == []

    # a lookup that really changed is still reported, and only it
    doc = json.loads(again.read_text())
    doc["interactions"][2]["response"]["json"]["choices"][0]["message"]["content"] = "Something else."
    again.write_text(json.dumps(doc, indent=2))
    (item,) = diff_cassettes(cassette.load_cassette(path), cassette.load_cassette(again))
    assert item.seq == 2 and item.kind == "llm"  # the new recording's lookup 0


async def test_a_traced_gather_is_promoted_with_its_parallel_marks(tmp_path: Path) -> None:
    """Production traffic has the same scheduler: the trace line says `parallel`, and so does the
    cassette promoted from it."""
    trace = tmp_path / "prod.jsonl"
    with DevServer() as srv:
        client = cassette.instrument(AsyncOpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0))
        with cassette.trace(trace) as traced:
            live = await _agent(client)
    expected = {"plan": False, "lookup 0": True, "lookup 1": True, "lookup 2": True, "summary": False}
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {_asked(line): line.get("parallel", False) for line in lines} == expected

    promoted = tmp_path / "promoted.json"
    cassette.promote(trace, to=promoted, run=traced.run)
    assert dict(_recorded(promoted)) == expected
    _reorder(promoted, ["plan", "lookup 2", "lookup 1", "lookup 0", "summary"])
    replayer = cassette.instrument(AsyncOpenAI(base_url=DEAD, api_key="x", max_retries=0))
    with block_network(), cassette.using(promoted, mode="replay", check_order="error", unused="error"):
        assert await _agent(replayer) == live


def test_cassette_show_marks_the_parallel_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cassette.cli import main

    path = tmp_path / "agent.json"
    with DevServer() as srv:
        client = cassette.instrument(AsyncOpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0))
        with cassette.using(path, mode="record"):
            asyncio.run(_agent(client))
    assert main(["show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.endswith("[parallel]") for line in lines] == [False, True, True, True, False]
    assert main(["show", "--json", str(path)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["parallel"] for r in rows] == [False, True, True, True, False]
