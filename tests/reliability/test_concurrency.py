"""Concurrency: many writers, many threads, many tasks - no corruption, no lost or doubled call.

- 8 processes x 50 recordings into one blob store at once, every second recording
  of each writer bringing a new payload that all 8 write at about the same moment:
  every manifest verifies and holds exactly what its writer recorded, every blob
  hashes to its name, no temp file is left behind.
- 16 threads inside one session (a ThreadPoolExecutor started inside it: its threads
  do not inherit the context variable, the core falls back to the single active
  session) call the LLM and tools concurrently: every call is recorded exactly once,
  and replays correctly from 16 threads whatever the completion order.
- Two asyncio tasks with two cassettes, awaits interleaved call by call: each
  cassette holds only its own calls, and both replay concurrently.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import concurrency_child
import pytest
from openai import AsyncOpenAI, OpenAI
from reliability_support import FastDevServer, check_store, hydrate_all, soak_mode

import cassette

CHILD = Path(__file__).with_name("concurrency_child.py")


# --- 8 processes, one store ------------------------------------------------------------------------------


def test_processes_sharing_one_blob_store(tmp_path: Path, counts: Any) -> None:
    writers, per_writer = 8, (500 if soak_mode() else 50)
    store = tmp_path / "store"
    with FastDevServer(seed=3) as srv:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(CHILD),
                    str(tmp_path),
                    str(store),
                    srv.openai_base_url,
                    str(w),
                    str(per_writer),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
            )
            for w in range(writers)
        ]
        for p in procs:  # every writer imported everything and waits: then all start at once
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", p.communicate()[1]
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0 and out.strip() == "done", err
    checked = 0
    for w in range(writers):
        for n in range(per_writer):
            path = tmp_path / f"w{w}" / f"{n}.json"
            interactions = hydrate_all(path, store)
            assert [req["kind"] for req, _ in interactions] == ["tool", "llm", "tool"], path
            (fetch_req, fetch_res), (llm_req, llm_res), (_, sum_res) = interactions
            assert fetch_req["arguments"] == {"worker": w, "n": n}
            shared = concurrency_child.shared_payload(concurrency_child.shared_key(n))
            want = {"shared": shared, "own": concurrency_child.own_payload(w, n)}
            assert fetch_res["result"] == want, path
            assert llm_req["messages"][0]["content"] == "refund policy: " + shared
            assert llm_res["status"] == 200 and llm_res["json"]["choices"], path
            assert sum_res["result"] == want["own"][::-1]
            checked += 1
    report = check_store(store)
    assert not report.bad, report.bad[:5]
    assert not report.temps, f"temp files left by writers that finished: {report.temps[:5]}"
    counts.update(
        processes=writers,
        recordings=writers * per_writer,
        manifests_verified=checked,
        blobs=report.blobs,
        shared_payloads=per_writer // 2,
    )


# --- 16 threads, one session ------------------------------------------------------------------------------


@cassette.tool
def lookup(order: int) -> dict[str, Any]:
    # uneven work, so threads finish in a different order than they started
    digest = order
    for _ in range((order * 7919) % 3000):
        digest = (digest * 31 + 7) % 1_000_003
    return {"order": order, "digest": digest, "note": f"status of order {order} " * 30}


def one_task(client: Any, order: int) -> tuple[str, dict[str, Any], str]:
    question = f"Where is order number {order}? It was charged twice."
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    result = lookup(order)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"order {order} refund"}], stream=True
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    return str(answer.choices[0].message.content), result, streamed


def run_threads(client: Any, tasks: int) -> dict[int, tuple[str, dict[str, Any], str]]:
    with ThreadPoolExecutor(16) as pool:  # started inside the session: no context variable in its threads
        futures = {order: pool.submit(one_task, client, order) for order in range(tasks)}
        return {order: f.result() for order, f in futures.items()}


def test_sixteen_threads_in_one_session(tmp_path: Path, counts: Any) -> None:
    rounds, tasks = (20 if soak_mode() else 2), 40
    with FastDevServer(seed=5) as srv:
        # retries on: a connection the loaded dev server resets is retried, and must still be recorded once
        client = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-none", max_retries=2))
        for r in range(rounds):
            path = tmp_path / f"threads-{r}.json"
            before = len(srv.requests)
            with cassette.using(path, mode="record"):
                recorded = run_threads(client, tasks)
            assert len(srv.requests) - before >= 2 * tasks
            served = len(srv.requests)
            c = cassette.load_cassette(path)
            assert len(c.interactions) == 3 * tasks, "a call was lost or recorded twice"
            requests = [json.dumps(c.hydrate(i.request), sort_keys=True) for i in c.interactions]
            assert len(set(requests)) == len(requests), "a call was recorded twice"
            assert [i.seq for i in c.interactions] == list(range(3 * tasks))
            assert not any(c.hydrate(i.response).get("incomplete") for i in c.interactions)
            with cassette.using(path, mode="replay", check_order="off") as session:
                replayed = run_threads(client, tasks)
            assert replayed == recorded
            assert not session.unused()
            assert len(srv.requests) == served, "replay went to the server"
    counts.update(
        threads=16, rounds=rounds, calls_recorded=rounds * 3 * tasks, calls_replayed=rounds * 3 * tasks
    )


# --- asyncio tasks, two cassettes -------------------------------------------------------------------------


@cassette.tool
async def fetch_ticket(task: str, step: int) -> str:
    await asyncio.sleep(0)  # a real suspension point inside the tool, not a timing
    return f"ticket {task}-{step} " * 40


class Baton:
    """Strict alternation between tasks: task i may make call k only after the other made call k-1."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.turn = 0
        self.changed = asyncio.Condition()

    async def wait(self, name: str) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: self.names[self.turn % len(self.names)] == name)

    async def done(self) -> None:
        async with self.changed:
            self.turn += 1
            self.changed.notify_all()


async def agent(client: Any, path: Path, mode: str, name: str, steps: int, baton: Baton | None) -> list[str]:
    out: list[str] = []
    async with cassette.using(path, mode=mode, check_order="off" if baton is None else "warn"):
        for step in range(steps):
            if baton:
                await baton.wait(name)
            answer = await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[
                    {"role": "user", "content": f"I am {name}, step {step}: my order was charged twice"}
                ],
            )
            out.append(str(answer.choices[0].message.content))
            out.append(await fetch_ticket(name, step))
            if baton:
                await baton.done()
    return out


async def test_asyncio_tasks_keep_their_cassettes_apart(tmp_path: Path, counts: Any) -> None:
    steps, rounds = 6, (10 if soak_mode() else 2)
    with FastDevServer(seed=9) as srv:
        client = cassette.instrument(
            AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-none", max_retries=0)
        )
        for r in range(rounds):
            paths = {name: tmp_path / f"{name}-{r}.json" for name in ("alice", "bob")}
            for lockstep in (True, False):
                baton = Baton(list(paths)) if lockstep else None
                recorded = await asyncio.gather(
                    *(agent(client, p, "record", name, steps, baton) for name, p in paths.items())
                )
                for name, path in paths.items():
                    c = cassette.load_cassette(path)
                    assert len(c.interactions) == 2 * steps
                    for inter in c.interactions:
                        text = json.dumps(c.hydrate(inter.request))
                        assert name in text, f"{path} holds a call of the other task: {text[:200]}"
                baton = Baton(list(paths)) if lockstep else None
                replayed = await asyncio.gather(
                    *(agent(client, p, "replay", name, steps, baton) for name, p in paths.items())
                )
                assert replayed == recorded
    counts.update(tasks=2, rounds=rounds * 2, calls_per_task=2 * steps)


def _session_of_a_bare_thread() -> Any:
    """What `cassette.current_session()` answers in a thread that carries no context: the single
    active session, ``None`` when there is none, or the `AmbiguousSessionError` of several."""
    answer: list[Any] = []

    def ask() -> None:
        try:
            answer.append(cassette.current_session())
        except cassette.AmbiguousSessionError as exc:
            answer.append(exc)

    thread = threading.Thread(target=ask)  # a new thread starts with an empty context
    thread.start()
    thread.join()
    return answer[0]


@pytest.fixture(autouse=True)
def _no_stray_sessions() -> Any:
    """Each test starts and ends with no active session (the thread fallback needs exactly one)."""
    assert _session_of_a_bare_thread() is None
    yield
    assert _session_of_a_bare_thread() is None


def test_a_bare_thread_sees_the_one_active_session(tmp_path: Path) -> None:
    """The check above could fail: with a session open, a bare thread is handed that session."""
    with cassette.using(tmp_path / "one.json", mode="record") as session:
        assert _session_of_a_bare_thread() is session
