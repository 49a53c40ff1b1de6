"""Anthropic through the seam: every Messages method records against the devserver and replays,
with the server stopped, into objects equal to the live ones, field by field.
"""

from __future__ import annotations

import inspect
import json
import pickle
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import pytest
from anthropic import Anthropic, AsyncAnthropic
from pydantic import BaseModel

import cassette
from cassette.testing.devserver import DevServer
from tests.sdk_generations import needs

MODEL = "claude-haiku-5-5"
USER: list[Any] = [{"role": "user", "content": "I was charged twice for order A1001"}]
SYSTEM = "You are a support agent for Acme."
TOOLS: list[Any] = [
    {
        "name": "lookup_order",
        "description": "Look up an order by its id",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    }
]


class Triage(BaseModel):
    category: str
    priority: str
    summary: str


Client = Anthropic | AsyncAnthropic
Scenario = Callable[[Any], Awaitable[Any]]


async def resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def drain(stream: Any) -> list[Any]:
    if hasattr(stream, "__aiter__"):
        return [item async for item in stream]
    return list(stream)


def dump(value: Any) -> Any:
    """SDK objects as plain data, with their class name, so equality means the same type and fields."""
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    if isinstance(value, BaseModel):
        return {"$type": type(value).__name__, **value.model_dump(warnings=False)}
    return value


def make_client(flavour: str, base_url: str, **options: Any) -> Client:
    cls = AsyncAnthropic if flavour == "async" else Anthropic
    options.setdefault("api_key", "sk-ant-test")
    options.setdefault("max_retries", 0)
    return cassette.instrument(cls(base_url=base_url, **options))


async def record_then_replay(
    flavour: str, scenario: Scenario, path: str = "c.json", **options: Any
) -> tuple[Any, Any, cassette.Session]:
    """Record ``scenario`` live, stop the server, replay it with a fresh client and another API key."""
    with DevServer() as srv:
        client = make_client(flavour, srv.anthropic_base_url, **options)
        with cassette.using(path, mode="record"):
            live = await scenario(client)
        received = len(srv.requests)
        assert received > 0
    replay_client = make_client(flavour, srv.anthropic_base_url, **{**options, "api_key": "sk-ant-other"})
    with cassette.using(path, mode="replay") as session:
        replayed = await scenario(replay_client)
    assert len(srv.requests) == received, "replay reached the server"
    assert not session.unused()
    return live, replayed, session


# --- scenarios ----------------------------------------------------------------------------------


async def create(c: Client) -> Any:
    m = await resolve(c.messages.create(model=MODEL, max_tokens=256, system=SYSTEM, messages=USER))
    assert m.content[0].type == "text"
    return m


async def create_tools(c: Client) -> Any:
    m = await resolve(c.messages.create(model=MODEL, max_tokens=256, messages=USER, tools=TOOLS))
    blocks = [b for b in m.content if b.type == "tool_use"]
    assert m.stop_reason == "tool_use" and blocks[0].name == "lookup_order"
    return m, blocks[0].input


async def tool_result_turn(c: Client) -> Any:
    """A tool call, its result sent back, and the final answer: two recorded calls."""
    first = await resolve(c.messages.create(model=MODEL, max_tokens=256, messages=USER, tools=TOOLS))
    use = next(b for b in first.content if b.type == "tool_use")
    messages = [
        *USER,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": '{"status": "shipped"}'}],
        },
    ]
    final = await resolve(c.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=TOOLS))
    assert final.stop_reason == "end_turn"
    return first, final


async def parse(c: Client) -> Any:
    needs(c.messages, "parse", "anthropic")
    m = await resolve(c.messages.parse(model=MODEL, max_tokens=256, messages=USER, output_format=Triage))
    assert isinstance(m.parsed_output, Triage)
    return m, m.parsed_output


async def create_stream(c: Client) -> Any:
    stream = await resolve(c.messages.create(model=MODEL, max_tokens=256, messages=USER, stream=True))
    events = await drain(stream)
    assert events[0].type == "message_start" and events[-1].type == "message_stop"
    return events


async def stream_helper(c: Client) -> Any:
    """``messages.stream(...)``: events, the text stream and the accumulated final message."""
    manager = c.messages.stream(model=MODEL, max_tokens=256, messages=USER, tools=TOOLS)
    if isinstance(c, AsyncAnthropic):
        async with manager as stream:  # type: ignore[union-attr]
            events = [e async for e in stream]
            final = await stream.get_final_message()
    else:
        with manager as stream:  # type: ignore[union-attr]
            events = list(stream)
            final = stream.get_final_message()
    assert any(b.type == "tool_use" for b in final.content)
    return events, final


async def stream_text(c: Client) -> Any:
    manager = c.messages.stream(model=MODEL, max_tokens=256, system=SYSTEM, messages=USER)
    if isinstance(c, AsyncAnthropic):
        async with manager as stream:  # type: ignore[union-attr]
            pieces = [t async for t in stream.text_stream]
            final = await stream.get_final_message()
    else:
        with manager as stream:  # type: ignore[union-attr]
            pieces = list(stream.text_stream)
            final = stream.get_final_message()
    assert "".join(pieces) == final.content[0].text
    return pieces, final


async def raw_response(c: Client) -> Any:
    raw = await resolve(c.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=USER))
    parsed = await resolve(raw.parse())
    # the bytes the SDK read, as the server wrote them (its spacing too), not re-encoded
    body = raw.http_response.content
    assert body.startswith(b'{"id":"msg_'), body[:80]  # Anthropic's compact JSON
    return raw.status_code, raw.headers.get("request-id"), raw.headers.get("content-type"), parsed, body


async def streaming_response(c: Client) -> Any:
    manager = c.messages.with_streaming_response.create(
        model=MODEL, max_tokens=64, messages=USER, stream=True
    )
    if isinstance(c, AsyncAnthropic):
        async with manager as response:  # type: ignore[union-attr]
            lines = [line async for line in response.iter_lines()]
    else:
        with manager as response:  # type: ignore[union-attr]
            lines = list(response.iter_lines())
    assert "event: message_stop" in lines
    return response.status_code, lines


async def count_tokens(c: Client) -> Any:
    return await resolve(c.messages.count_tokens(model=MODEL, system=SYSTEM, messages=USER))


SCENARIOS: list[Scenario] = [
    create,
    create_tools,
    tool_result_turn,
    parse,
    create_stream,
    stream_helper,
    stream_text,
    raw_response,
    streaming_response,
    count_tokens,
]


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
async def test_replay_equals_live(flavour: str, scenario: Scenario) -> None:
    live, replayed, session = await record_then_replay(flavour, scenario)
    assert dump(replayed) == dump(live)
    assert session.stats()["served"]["llm"] >= 1


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_stream_is_stored_event_by_event(flavour: str) -> None:
    await record_then_replay(flavour, create_stream)
    recorded = cassette.load_cassette("c.json").interactions[0]
    assert recorded.request["stream"] is True
    names = [e.split("\n", 1)[0] for e in recorded.response["events"]]
    assert names[0] == "event: message_start" and names[-1] == "event: message_stop"
    assert "incomplete" not in recorded.response


async def _first_two_events(c: Client) -> list[Any]:
    stream = await resolve(c.messages.create(model=MODEL, max_tokens=256, messages=USER, stream=True))
    if isinstance(c, AsyncAnthropic):
        it = stream.__aiter__()
        events = [await it.__anext__(), await it.__anext__()]
        await stream.close()
    else:
        it = iter(stream)
        events = [next(it), next(it)]
        stream.close()
    return events


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_abandoned_stream_is_recorded_as_received_and_replays_the_same(flavour: str) -> None:
    live, replayed, _ = await record_then_replay(flavour, _first_two_events)
    assert dump(replayed) == dump(live)
    recorded = cassette.load_cassette("c.json").interactions[0].response
    assert recorded["incomplete"] is True
    assert not any(e.startswith("event: message_stop") for e in recorded["events"])


# --- errors -------------------------------------------------------------------------------------

ERRORS = {429: anthropic.RateLimitError, 400: anthropic.BadRequestError, 500: anthropic.InternalServerError}


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("status", sorted(ERRORS))
async def test_error_responses_replay_as_the_sdk_error(flavour: str, status: int) -> None:
    async def failing(c: Client) -> Any:
        with pytest.raises(ERRORS[status]) as info:
            await resolve(c.messages.create(model=f"error-{status}", max_tokens=64, messages=USER))
        e = info.value
        return type(e).__name__, e.status_code, e.message, e.body, e.request_id

    live, replayed, _ = await record_then_replay(flavour, failing, max_retries=2)
    assert replayed == live
    assert [i.response["status"] for i in cassette.load_cassette("c.json").interactions] == [status]


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_retried_calls_replay_attempt_by_attempt(flavour: str) -> None:
    live, replayed, session = await record_then_replay(
        flavour,
        lambda c: resolve(c.messages.create(model="flaky-2", max_tokens=64, messages=USER)),
        max_retries=2,
    )
    assert dump(replayed) == dump(live)
    assert [i.response["status"] for i in cassette.load_cassette("c.json").interactions] == [500, 500, 200]
    assert session.stats()["served"] == {"llm": 3}


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_miss_is_not_retried_nor_masked(flavour: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """anthropic wraps unknown exceptions in a retried APIConnectionError; a miss must escape both."""
    await record_then_replay(flavour, create)
    client = make_client(flavour, "http://127.0.0.1:9", max_retries=3)
    sleeps: list[Any] = []

    def sleep(*args: Any, **kwargs: Any) -> Any:
        sleeps.append(args)
        return resolve(None) if flavour == "async" else None

    monkeypatch.setattr(client, "_sleep_for_retry", sleep, raising=False)  # not in every release
    with pytest.raises(cassette.CassetteMiss) as info, cassette.using("c.json", mode="replay") as session:
        await resolve(c_create(client, system="You are terse."))
    assert not isinstance(info.value, anthropic.APIConnectionError)
    if len(session.misses) > 1:
        # anthropic before 0.98 retries any exception its HTTP client raises: the miss is met once per
        # attempt (docs/providers.md says so)
        assert len(session.misses) == 4 and any(m is info.value for m in session.misses)
        return
    assert len(session.misses) == 1 and session.misses[0] is info.value
    assert sleeps == []
    assert 'system: "You are terse." != "You are a support agent for Acme."' in str(info.value)
    copy = pickle.loads(pickle.dumps(info.value))  # e.g. raised in a worker process
    assert type(copy) is cassette.CassetteMiss and str(copy) == str(info.value)


def c_create(client: Client, **changes: Any) -> Any:
    return client.messages.create(
        **{"model": MODEL, "max_tokens": 256, "system": SYSTEM, "messages": USER, **changes}
    )


# --- what the match key holds -------------------------------------------------------------------

BASE: dict[str, Any] = {
    "model": MODEL,
    "max_tokens": 256,
    "system": SYSTEM,
    "messages": USER,
    "tools": TOOLS,
    "stop_sequences": ["###"],
    "extra_body": {"temperature": 0.2},  # this SDK has no sampling arguments; the API still takes them
}


def _changed_tools() -> list[Any]:
    tools = json.loads(json.dumps(TOOLS))
    tools[0]["input_schema"]["properties"]["order_id"]["description"] = "e.g. A1001"
    return tools


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"extra_body": {"temperature": 0.7}}, "temperature: 0.7 != 0.2"),
        ({"stop_sequences": ["%%%"]}, 'stop_sequences[0]: "%%%" != "###"'),
        ({"tools": _changed_tools()}, 'tools[0].input_schema.properties.order_id.description: "e.g. A1001"'),
        ({"stream": True}, "stream: True != (absent)"),
        ({"max_tokens": 64}, "max_tokens: 64 != 256"),
        ({"tool_choice": {"type": "any"}}, 'tool_choice.type: "any" != (absent)'),
    ],
    ids=["temperature", "stop_sequences", "tools", "stream", "max_tokens", "tool_choice"],
)
def test_a_changed_request_misses_with_a_field_diff(change: dict[str, Any], expected: str) -> None:
    with DevServer() as srv:
        client = make_client("sync", srv.anthropic_base_url)
        with cassette.using("c.json", mode="record"):
            client.messages.create(**BASE)
    with pytest.raises(cassette.CassetteMiss) as info, cassette.using("c.json", mode="replay"):
        client.messages.create(**{**BASE, **change})
    assert expected in str(info.value)


def test_transport_noise_is_not_in_the_key() -> None:
    """Metadata, diagnostics, cache markers, API keys and headers may change: the call still replays."""
    with DevServer() as srv:
        client = make_client("sync", srv.anthropic_base_url)
        with cassette.using("c.json", mode="record"):
            live = client.messages.create(**BASE, metadata={"user_id": "alice"})
    other = make_client(
        "sync", "http://127.0.0.1:9", api_key="sk-ant-different", default_headers={"x-team": "support"}
    )
    with cassette.using("c.json", mode="replay"):
        replayed = other.messages.create(
            **{
                **BASE,
                "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
                # arguments of their own in newer releases: as the body they send, for every generation
                "extra_body": {
                    **BASE["extra_body"],
                    "diagnostics": {"previous_message_id": "msg_01XYZ"},
                    "cache_control": {"type": "ephemeral"},
                },
            },
            metadata={"user_id": "bob"},
            extra_headers={"anthropic-beta": "x", "Idempotency-Key": "k"},
        )
    assert dump(replayed) == dump(live)
    request = cassette.load_cassette("c.json").interactions[0].request
    assert request["provider"] == "anthropic" and request["endpoint"] == "messages"
    assert "metadata" not in request
