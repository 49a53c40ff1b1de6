"""Several sessions open at once, one per thread (an eval runner replaying its cases in parallel),
each with an agent that runs its tools on a thread pool. A worker thread started without its
context carries no session: with one session open it is served by it, with several it is an
`AmbiguousSessionError` that names every open cassette and the fix, never a silent pick; handed
its context (`contextvars.copy_context().run`) each worker's calls go to its own cassette.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import cassette

ran: list[str] = []


@cassette.tool
def lookup(case: str, item: int) -> str:
    ran.append(f"{case}/{item}")
    return f"{case}: item {item} shipped"


def plain_pool(case: str) -> list[str]:
    with ThreadPoolExecutor(3) as pool:
        return list(pool.map(lambda n: lookup(case, n), range(3)))


def pool_with_context(case: str) -> list[str]:
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(contextvars.copy_context().run, lookup, case, n) for n in range(3)]
        return [f.result() for f in futures]


def run_cases(tmp_path: Path, agent: Callable[[str], list[str]], mode: str) -> dict[str, Any]:
    """Two cases at once, each in its own thread with its own cassette, both open together."""
    both_open = threading.Barrier(2)
    results: dict[str, Any] = {}

    def case(name: str) -> None:
        with cassette.using(tmp_path / f"{name}.json", mode=mode, check_order="off"):
            both_open.wait(timeout=30)
            try:
                results[name] = agent(name)
            except Exception as exc:  # reported by the test thread
                results[name] = exc
            both_open.wait(timeout=30)  # neither closes before the other's calls are made

    threads = [threading.Thread(target=case, args=(name,)) for name in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.filterwarnings("ignore:.*recorded no calls")  # each agent failed before its first call
def test_a_worker_without_context_while_two_sessions_are_open_is_ambiguous(tmp_path: Path) -> None:
    ran.clear()
    results = run_cases(tmp_path, plain_pool, "record")
    for name in ("alpha", "beta"):
        error = results[name]
        assert isinstance(error, cassette.AmbiguousSessionError), error
        assert "contextvars.copy_context().run" in str(error)
        assert str(tmp_path / "alpha.json") in str(error) and str(tmp_path / "beta.json") in str(error)
    assert ran == []  # refused before the tool ran: nothing recorded into the wrong cassette


def test_workers_handed_their_context_record_and_replay_into_their_own_cassette(tmp_path: Path) -> None:
    ran.clear()
    recorded = run_cases(tmp_path, pool_with_context, "record")
    assert recorded == {name: [f"{name}: item {n} shipped" for n in range(3)] for name in ("alpha", "beta")}
    for name in ("alpha", "beta"):
        doc = json.loads((tmp_path / f"{name}.json").read_text())
        assert sorted(i["request"]["arguments"]["case"] for i in doc["interactions"]) == [name] * 3
    assert len(ran) == 6

    ran.clear()
    assert run_cases(tmp_path, pool_with_context, "replay") == recorded
    assert ran == []  # replayed: no tool ran


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_with_one_session_open_a_worker_without_context_is_its_own(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "one.json"
    if mode == "replay":
        with cassette.using(path, mode="record", check_order="off"):
            plain_pool("solo")
    ran.clear()
    with cassette.using(path, mode=mode, check_order="off", unused="error"):
        assert plain_pool("solo") == [f"solo: item {n} shipped" for n in range(3)]
    assert len(ran) == (3 if mode == "record" else 0)
