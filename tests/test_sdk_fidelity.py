"""Replay behaves as the live call did, in the corners the provider suites do not reach: the wait
the SDK computes before a recorded retry, the headers of an error it does not retry, and several
calls in flight at once. Real SDKs over HTTP to the devserver; replay runs with the network cut.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic import Anthropic, AsyncAnthropic
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

import cassette
from cassette import block_network
from cassette.testing.devserver import DevServer

USER: list[Any] = [{"role": "user", "content": "I was charged twice for order A1001"}]
DEAD_OPENAI = "http://127.0.0.1:9/v1"  # replay never connects: the guard below would fail it


def ask(client: OpenAI) -> Any:
    return client.chat.completions.create(model="gpt-4o-mini", messages=USER)


def waits(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The waits the SDK chose before each retry, as its own log says them."""
    found = (re.search(r" in ([0-9.]+) seconds", r.getMessage()) for r in caplog.records)
    return [float(m.group(1)) for m in found if m]


def http_date(seconds: float) -> str:
    return email.utils.formatdate(seconds, usegmt=True)


def replay_client(**options: Any) -> OpenAI:
    return cassette.instrument(OpenAI(base_url=DEAD_OPENAI, api_key="sk-other", **options))  # type: ignore[no-any-return]


def rewrite_first_headers(path: Path, headers: dict[str, str]) -> None:
    """Give the first recorded response the headers a real API (or a proxy) sent."""
    doc = json.loads(path.read_text())
    response = doc["interactions"][0]["response"]
    response["headers"] = {"content-type": "application/json", **headers}
    path.write_text(json.dumps(doc))


# --- retries: a recorded retry runs at once on replay, and a refused one is refused again -----------


@pytest.fixture
def retry_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="openai._base_client")
    caplog.set_level(logging.INFO, logger="anthropic._base_client")
    return caplog


@pytest.mark.parametrize(
    "headers",
    [
        # an HTTP date 20 s after the response was sent: openai waited 20 s live; on replay the date
        # is long past, and openai would back off 0.5-8 s instead (before: it slept that)
        {"date": "Tue, 01 Dec 2026 07:30:00 GMT", "retry-after": "Tue, 01 Dec 2026 07:30:20 GMT"},
        # a date with no recorded `date` to measure it from (an older or imported cassette)
        {"retry-after": "Tue, 01 Dec 2026 07:30:20 GMT"},
        {"retry-after": "-1"},  # openai backs off on a negative wait, and on one that is not finite
        {"retry-after": "inf"},
        {"retry-after": "nan"},
        {"retry-after-ms": "-5", "retry-after": "20"},  # the first number openai reads is the one it uses
    ],
    ids=["date", "date-without-reference", "negative", "inf", "nan", "negative-ms"],
)
def test_a_recorded_retry_runs_at_once_on_replay(
    headers: dict[str, str], tmp_path: Path, retry_log: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.json"
    with DevServer() as srv:
        srv.fail_next(1, 429)
        live = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=2))
        with cassette.using(path, mode="record"):
            answer = ask(live)
    rewrite_first_headers(path, headers)
    retry_log.clear()
    with block_network(), cassette.using(path, mode="replay", unused="error"):
        replayed = ask(replay_client(max_retries=2))
    assert replayed.id == answer.id
    assert waits(retry_log) == [0.001]


def test_a_retry_openai_refused_live_is_refused_on_replay(tmp_path: Path) -> None:
    """A 429 asking for a wait past two minutes by date: openai gives up live; weeks later the
    date is past, and without its recorded `date` the SDK would retry into a miss."""
    path = tmp_path / "c.json"
    with DevServer() as srv:
        srv.fail_next(1, 429, retry_after=http_date(time.time() + 600))
        live = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=2))
        with cassette.using(path, mode="record"):
            try:
                ask(live)
            except openai.RateLimitError:
                pass
            else:  # openai 1.x waits its own backoff instead and retries into a success
                pytest.skip(f"openai {openai.__version__} retries a 429 asking for a longer wait")
        assert len(srv.requests) == 1  # the SDK gave up without waiting
    recorded = cassette.load_cassette(path).interactions[0].response
    assert "date" in recorded["headers"]  # the moment the retry-after date is measured from
    # as if replayed a week later: both dates move back together, so the wait asked for stays 600 s
    week = 7 * 24 * 3600
    earlier = {
        key: http_date(email.utils.parsedate_to_datetime(value).timestamp() - week)
        for key, value in recorded["headers"].items()
        if key in ("date", "retry-after")
    }
    rewrite_first_headers(path, earlier)
    with block_network(), cassette.using(path, mode="replay", unused="error"):
        with pytest.raises(openai.RateLimitError) as caught:
            ask(replay_client(max_retries=2))
    assert caught.value.response.headers["retry-after"] == earlier["retry-after"]  # kept for the caller


# --- an error the SDK does not retry comes back with its headers as recorded ------------------------


def _headers_of(error: Any) -> dict[str, str]:
    return {k: v for k, v in error.response.headers.items() if k not in ("date", "transfer-encoding")}


@pytest.mark.parametrize("status", [409, 429, 500, 503])
def test_an_error_not_retried_keeps_its_headers_openai(status: int, tmp_path: Path) -> None:
    path = tmp_path / "c.json"

    def call(client: OpenAI) -> openai.APIStatusError:
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model=f"error-{status}", messages=USER)
        return caught.value

    with DevServer() as srv:
        live_client = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=2))
        with cassette.using(path, mode="record"):
            live = call(live_client)
    assert live.response.headers["x-should-retry"] == "false"
    with block_network(), cassette.using(path, mode="replay", unused="error"):
        replayed = call(replay_client(max_retries=2))
    assert type(replayed) is type(live)
    assert (replayed.status_code, replayed.body, replayed.request_id) == (
        live.status_code,
        live.body,
        live.request_id,
    )
    assert _headers_of(replayed) == _headers_of(live)  # before: an added retry-after-ms: 1


@pytest.mark.parametrize("status", [429, 500, 529])
def test_an_error_not_retried_keeps_its_headers_anthropic(status: int, tmp_path: Path) -> None:
    path = tmp_path / "c.json"

    def call(client: Anthropic) -> anthropic.APIStatusError:
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(model=f"error-{status}", max_tokens=16, messages=USER)
        return caught.value

    with DevServer() as srv:
        with cassette.using(path, mode="record"):
            live = call(cassette.instrument(Anthropic(base_url=srv.anthropic_base_url, api_key="x")))
    with block_network(), cassette.using(path, mode="replay", unused="error"):
        replayed = call(cassette.instrument(Anthropic(base_url="http://127.0.0.1:9", api_key="y")))
    assert type(replayed) is type(live)
    assert (replayed.status_code, replayed.body, replayed.request_id) == (
        live.status_code,
        live.body,
        live.request_id,
    )
    assert _headers_of(replayed) == _headers_of(live)


# --- several calls in flight at once ------------------------------------------------------------------


def dump(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    if isinstance(value, BaseModel):
        return {"$type": type(value).__name__, **value.model_dump(warnings=False)}
    return value


QUESTIONS = ["I was charged twice", "How do I reset my password?", "Cancel my subscription"]


async def in_flight(client: AsyncOpenAI, claude: AsyncAnthropic) -> list[Any]:
    async def chat(q: str) -> Any:
        return await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": q}]
        )

    async def stream(q: str) -> Any:
        chunks = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": q}],
            stream=True,
            stream_options={"include_usage": True},
        )
        return [chunk async for chunk in chunks]

    async def responses(q: str) -> Any:
        async with client.responses.stream(model="gpt-4o-mini", input=q) as events:
            return [e async for e in events], await events.get_final_response()

    async def embed(q: str) -> Any:
        return await client.embeddings.create(model="text-embedding-3-small", input=q)

    async def message(q: str) -> Any:
        async with claude.messages.stream(
            model="claude-haiku-5-5", max_tokens=64, messages=[{"role": "user", "content": q}]
        ) as events:
            return [t async for t in events.text_stream], await events.get_final_message()

    return await asyncio.gather(
        *[chat(q) for q in QUESTIONS],
        *[stream(q) for q in QUESTIONS[:2]],
        responses(QUESTIONS[2]),
        embed(QUESTIONS[0]),
        message(QUESTIONS[1]),
    )


async def test_calls_gathered_at_once_replay_each_its_own_answer(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with DevServer() as srv:
        clients = (
            cassette.instrument(AsyncOpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0)),
            cassette.instrument(AsyncAnthropic(base_url=srv.anthropic_base_url, api_key="x", max_retries=0)),
        )
        with cassette.using(path, mode="record"):
            live = await in_flight(*clients)
    # the order concurrent calls reach the transport is the scheduler's, not the agent's
    with block_network(), cassette.using(path, mode="replay", unused="error", check_order="off") as session:
        replayed = await in_flight(*clients)
    assert dump(replayed) == dump(live)
    assert session.stats()["served"] == {"llm": 8}
