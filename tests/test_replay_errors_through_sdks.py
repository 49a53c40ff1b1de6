"""A replay error other than a miss reaches the caller as itself, through either SDK.

anthropic wraps any exception that is not its own in a retried ``APIConnectionError``:
a missing blob or a damaged record was reported as "Connection error", then, on the
retry, as a miss ("called 2 times but recorded only once").
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from anthropic import Anthropic, AsyncAnthropic
from openai import OpenAI

import cassette
from cassette.testing.devserver import DevServer

SYSTEM = "You are a support agent for a hardware shop. " * 40  # long enough to be a blob


def _anthropic_call(client: Any) -> Any:
    return client.messages.create(
        model="claude-haiku-4-5", max_tokens=64, system=SYSTEM, messages=[{"role": "user", "content": "hi"}]
    )


def _openai_call(client: Any) -> Any:
    return client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}],
    )


def _record(path: Path, make: Callable[[str], Any], call: Callable[[Any], Any], base: str) -> None:
    with cassette.using(path, mode="record"):
        call(cassette.instrument(make(base)))


CLIENTS = {
    # default retries: the SDK would retry what it takes for a connection error
    "anthropic": (lambda base: Anthropic(base_url=base, api_key="x"), _anthropic_call, "anthropic_base_url"),
    "openai": (lambda base: OpenAI(base_url=base, api_key="x"), _openai_call, "openai_base_url"),
}


@pytest.mark.parametrize("sdk", CLIENTS)
def test_a_missing_blob_is_reported_as_itself(sdk: str, devserver: DevServer, tmp_path: Path) -> None:
    make, call, attr = CLIENTS[sdk]
    path = tmp_path / "c.json"
    _record(path, make, call, getattr(devserver, attr))
    shutil.rmtree(tmp_path / ".blobs")
    client = cassette.instrument(make("http://127.0.0.1:1"))
    with (
        pytest.raises(cassette.MissingBlobError) as caught,
        cassette.using(path, mode="replay", unused="off"),
    ):
        call(client)
    assert str(path) in str(caught.value) and "called 2 times" not in str(caught.value)
    # still pickles as the plain class (pytest-xdist sends errors between processes)
    assert type(pickle.loads(pickle.dumps(caught.value))) is cassette.MissingBlobError


@pytest.mark.parametrize("damage", [{"headers": ["a"]}, {"events": [1, 2, 3]}, {"status": "200"}])
def test_a_damaged_recorded_response_is_a_shape_error_through_anthropic(
    damage: dict[str, Any], devserver: DevServer, tmp_path: Path
) -> None:
    make, call, _ = CLIENTS["anthropic"]
    path = tmp_path / "c.json"
    _record(path, make, call, devserver.anthropic_base_url)
    doc = json.loads(path.read_text())
    response = doc["interactions"][0]["response"]
    if "events" in damage:
        response.pop("json", None)
    response.update(damage)
    path.write_text(json.dumps(doc))
    with pytest.raises(cassette.CassetteShapeError, match="cannot be replayed"):
        with cassette.using(path, mode="replay", unused="off"):
            call(cassette.instrument(make("http://127.0.0.1:1")))


async def test_async_anthropic_reports_a_missing_blob_as_itself(devserver: DevServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    _record(path, CLIENTS["anthropic"][0], _anthropic_call, devserver.anthropic_base_url)
    shutil.rmtree(tmp_path / ".blobs")
    client = cassette.instrument(AsyncAnthropic(base_url="http://127.0.0.1:1", api_key="x"))
    with pytest.raises(cassette.MissingBlobError):
        async with cassette.using(path, mode="replay", unused="off"):
            await _anthropic_call(client)


def _rate_limited_then_answered(devserver: DevServer, path: Path, retry_after: str) -> str:
    """Record a 429 then the answer the SDK's retry got; give the 429 a real server's retry-after."""
    devserver.fail_next(1, 429)
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="x", max_retries=2))
    with cassette.using(path, mode="record"):
        answer = _openai_call(client).choices[0].message.content
    doc = json.loads(path.read_text())
    limited = doc["interactions"][0]["response"]
    assert limited["status"] == 429
    limited["headers"] = {"content-type": "application/json", "retry-after": retry_after}  # as api.openai.com
    path.write_text(json.dumps(doc))
    return str(answer)


def test_a_recorded_rate_limit_is_retried_at_once_on_replay(devserver: DevServer, tmp_path: Path) -> None:
    # before: the SDK slept the recorded retry-after (up to a minute) on every replay
    path = tmp_path / "c.json"
    answer = _rate_limited_then_answered(devserver, path, "20")
    dead = "http://127.0.0.1:1/v1"
    with cassette.using(path, mode="replay", unused="off"):
        with pytest.raises(openai.RateLimitError) as caught:
            _openai_call(cassette.instrument(OpenAI(base_url=dead, api_key="x", max_retries=0)))
    headers = caught.value.response.headers
    assert headers["retry-after"] == "20" and headers["retry-after-ms"] == "1"  # what the SDK waits
    with cassette.using(path, mode="replay", unused="error"):
        client = cassette.instrument(OpenAI(base_url=dead, api_key="x", max_retries=2))
        assert _openai_call(client).choices[0].message.content == answer


def test_a_wait_the_sdk_would_refuse_is_left_as_recorded(devserver: DevServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    _rate_limited_then_answered(devserver, path, "3600")  # an hour: the SDK gives up instead of waiting
    dead = "http://127.0.0.1:1/v1"
    with pytest.raises(openai.RateLimitError) as caught, cassette.using(path, mode="replay", unused="off"):
        _openai_call(cassette.instrument(OpenAI(base_url=dead, api_key="x", max_retries=2)))
    assert "retry-after-ms" not in caught.value.response.headers


def test_anthropic_retries_a_recorded_rate_limit_at_once_whatever_it_said(
    devserver: DevServer, tmp_path: Path
) -> None:
    # anthropic waits whatever it is told (an hour, a date): every wait is made instant for it
    path = tmp_path / "c.json"
    devserver.fail_next(1, 429)
    call = _anthropic_call
    with cassette.using(path, mode="record"):
        answer = call(
            cassette.instrument(Anthropic(base_url=devserver.anthropic_base_url, api_key="x"))
        ).content
    doc = json.loads(path.read_text())
    doc["interactions"][0]["response"]["headers"] = {"retry-after": "Wed, 21 Oct 2035 07:28:00 GMT"}
    path.write_text(json.dumps(doc))
    with cassette.using(path, mode="replay", unused="error"):
        client = cassette.instrument(Anthropic(base_url="http://127.0.0.1:1", api_key="x", max_retries=2))
        assert call(client).content == answer
