"""Replay never touches the network: a suite of replayed runs under a guard that fails any connect.

Each scenario (sync and async chat with a tool loop, sync and async streams, the
Responses API, embeddings, Anthropic plain and streamed, 8 threads in one session,
generic HTTP, a recorded 429) is recorded once against the dev server, which is then
stopped. Every replay runs inside ``block_network(allow_loopback=False)`` (the
pytest plugin's audit-hook guard: loopback blocked too) with no API key in the
environment, and an independent audit hook counts every ``socket.connect`` and DNS
look-up attempted meanwhile: the count must be zero and the results identical.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from reliability_support import FastDevServer, soak_mode

import cassette
from cassette import CassetteError, CassetteMiss, block_network

# --- an independent witness: every connect / DNS attempt while armed ------------------------------------

_NET_EVENTS = frozenset({"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto"})
_armed = threading.Event()
_attempts: list[tuple[str, str]] = []


def _witness(event: str, args: tuple[Any, ...]) -> None:
    if _armed.is_set() and event in _NET_EVENTS:
        _attempts.append((event, repr(args[1:] if event == "socket.connect" else args)[:120]))


sys.addaudithook(_witness)


@contextlib.contextmanager
def offline() -> Iterator[list[tuple[str, str]]]:
    """The project's guard (loopback blocked too), plus the witness's list of attempts."""
    assert "OPENAI_API_KEY" not in os.environ and "ANTHROPIC_API_KEY" not in os.environ
    _attempts.clear()
    with block_network(allow_loopback=False):
        _armed.set()
        try:
            yield _attempts
        finally:
            _armed.clear()


# --- the scenarios ------------------------------------------------------------------------------------------


@cassette.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "charged twice", "amount": 42}


@cassette.tool
async def lookup_order_async(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "refunded"}


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


@dataclass
class Clients:
    openai: Any
    async_openai: Any
    anthropic: Any
    async_anthropic: Any
    http: Any
    base: str


def make_clients(base: str) -> Clients:
    # a placeholder key: replay must not need a real one (and the environment has none)
    return Clients(
        cassette.instrument(openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=2)),
        cassette.instrument(openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=2)),
        cassette.instrument(anthropic.Anthropic(base_url=base, api_key="unused", max_retries=2)),
        cassette.instrument(anthropic.AsyncAnthropic(base_url=base, api_key="unused", max_retries=2)),
        cassette.http_client(),
        base,
    )


def sync_tool_loop(c: Clients) -> Any:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "I was charged twice for order A17"}]
    out = []
    for _ in range(3):
        r = c.openai.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        msg = r.choices[0].message
        out.append(msg.content)
        if not msg.tool_calls:
            break
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            result = lookup_order(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return out


async def async_tool_loop(c: Clients) -> Any:
    r = await c.async_openai.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Where is my refund for order B2?"}]
    )
    return [r.choices[0].message.content, await lookup_order_async("B2")]


def sync_stream(c: Clients) -> Any:
    stream = c.openai.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "I forgot my password"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    return [(ch.choices[0].delta.content if ch.choices else None, bool(ch.usage)) for ch in stream]


async def async_stream(c: Clients) -> Any:
    stream = await c.async_openai.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "cancel my subscription"}], stream=True
    )
    return [ch.choices[0].delta.content async for ch in stream if ch.choices]


def responses_api(c: Clients) -> Any:
    r = c.openai.responses.create(model="gpt-4o-mini", input="I was double charged")
    return r.output_text


def embeddings(c: Clients) -> Any:
    r = c.openai.embeddings.create(model="text-embedding-3-small", input=["refund", "password reset"])
    return [d.embedding[:4] for d in r.data]


def anthropic_messages(c: Clients) -> Any:
    m = c.anthropic.messages.create(
        model="claude-haiku-5-5", max_tokens=200, messages=[{"role": "user", "content": "refund please"}]
    )
    with c.anthropic.messages.stream(
        model="claude-haiku-5-5", max_tokens=200, messages=[{"role": "user", "content": "I am locked out"}]
    ) as stream:
        streamed = "".join(stream.text_stream)
    return [m.content[0].text, streamed]


async def async_anthropic(c: Clients) -> Any:
    m = await c.async_anthropic.messages.create(
        model="claude-haiku-5-5", max_tokens=200, messages=[{"role": "user", "content": "cancel my plan"}]
    )
    return m.content[0].text


def threads(c: Clients) -> Any:
    def one(n: int) -> Any:
        r = c.openai.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"order {n} was charged twice"}]
        )
        return [r.choices[0].message.content, lookup_order(f"T{n}")]

    with ThreadPoolExecutor(8) as pool:  # started inside the session
        return list(pool.map(one, range(16)))


def generic_http(c: Clients) -> Any:
    r = c.http.get(f"{c.base}/v1/models")
    return r.json()["data"][0]["id"]


def rate_limited(c: Clients) -> Any:
    try:
        c.openai.chat.completions.create(model="error-429", messages=[{"role": "user", "content": "hi"}])
    except openai.RateLimitError as exc:
        return [exc.status_code, exc.body]
    raise AssertionError("the recorded 429 was not raised")


SCENARIOS: dict[str, Callable[[Clients], Any]] = {
    f.__name__: f
    for f in (
        sync_tool_loop,
        async_tool_loop,
        sync_stream,
        async_stream,
        responses_api,
        embeddings,
        anthropic_messages,
        async_anthropic,
        threads,
        generic_http,
        rate_limited,
    )
}


async def run(scenario: Callable[[Clients], Any], clients: Clients) -> Any:
    result = scenario(clients)
    return await result if asyncio.iscoroutine(result) else result


@dataclass
class Recorded:
    dir: Path
    base: str
    results: dict[str, Any]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("offline")
    results: dict[str, Any] = {}

    async def record_all(base: str) -> None:
        clients = make_clients(base)  # async clients belong to this one event loop
        for name, scenario in SCENARIOS.items():
            with cassette.using(root / f"{name}.json", mode="record"):
                results[name] = await run(scenario, clients)

    with FastDevServer(seed=11) as srv:
        asyncio.run(record_all(srv.url))
        base = srv.url
    # the server is gone: even an unguarded connection would now be refused
    return Recorded(root, base, results)


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_replay_makes_no_connection(recorded: Recorded, name: str, counts: Any) -> None:
    clients = make_clients(recorded.base)
    repeats = 25 if soak_mode() else 3
    with offline() as attempts:
        for _ in range(repeats):
            with cassette.using(recorded.dir / f"{name}.json", mode="replay", check_order="off"):
                assert await run(SCENARIOS[name], clients) == recorded.results[name]
    assert attempts == [], f"replay tried the network: {attempts[:5]}"
    counts.update(replays=repeats, connects_attempted=len(attempts))


async def test_all_scenarios_at_once(recorded: Recorded, counts: Any) -> None:
    """Sync, async, streaming and threaded replays running concurrently, one guard over all."""
    clients = make_clients(recorded.base)

    async def one(name: str) -> Any:
        async with cassette.using(recorded.dir / f"{name}.json", mode="replay", check_order="off"):
            result = SCENARIOS[name](clients)
            return await result if asyncio.iscoroutine(result) else result

    async_names = [n for n in SCENARIOS if asyncio.iscoroutinefunction(SCENARIOS[n])]
    with offline() as attempts:
        results = await asyncio.gather(*(one(n) for n in async_names))
        for name in SCENARIOS:
            if name not in async_names and name != "threads":  # threads need the only active session
                with cassette.using(recorded.dir / f"{name}.json", mode="replay", check_order="off"):
                    assert SCENARIOS[name](clients) == recorded.results[name]
    assert results == [recorded.results[n] for n in async_names]
    assert attempts == []
    counts.update(scenarios=len(SCENARIOS), connects_attempted=len(attempts))


# --- the guard is real ------------------------------------------------------------------------------------


def test_the_guard_blocks_loopback_before_any_syscall() -> None:
    """Against a live server: a blocked connect is the guard's doing, not a refused port."""
    with FastDevServer(seed=1) as srv, offline():
        with pytest.raises(CassetteError, match="network"):
            socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        with pytest.raises(CassetteError):
            cassette.http_client().get(srv.url + "/v1/models")
        assert srv.requests == []


def test_the_witness_sees_a_connection_the_guard_lets_through() -> None:
    """The independent count would notice a leak: armed without the guard, it sees a real connect."""
    with FastDevServer(seed=1) as srv:
        _attempts.clear()
        _armed.set()
        try:
            socket.create_connection(("127.0.0.1", srv.port), timeout=5).close()
        finally:
            _armed.clear()
    assert any(event == "socket.connect" for event, _ in _attempts)


def test_a_miss_is_an_error_not_a_live_call(recorded: Recorded) -> None:
    clients = make_clients(recorded.base)
    with offline() as attempts:
        with pytest.raises(CassetteMiss):
            with cassette.using(recorded.dir / "responses_api.json", mode="replay"):
                clients.openai.responses.create(model="gpt-4o-mini", input="a question never recorded")
    assert attempts == []
