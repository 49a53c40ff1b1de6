"""The local OpenAI/Anthropic-compatible server, driven by the real SDKs over loopback HTTP."""

from __future__ import annotations

import base64
import json
import math
import struct
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Literal

import anthropic
import httpx2
import openai
import pytest
from anthropic import Anthropic, AsyncAnthropic
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

from cassette.testing.devserver import DevServer

CLAUDE = "claude-sonnet-4-6"
ORDER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order by id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}
WEATHER_TOOL_RESPONSES: Any = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
    "strict": True,
}
TRACK_TOOL_ANTHROPIC: Any = {
    "name": "track_order",
    "description": "Track a shipment.",
    "input_schema": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
}


class Ticket(BaseModel):
    category: Literal["billing", "shipping", "account", "general"]
    priority: Literal["low", "normal", "high"]
    reply: str
    refund: bool
    tags: list[str]
    customer_email: str | None


@pytest.fixture(scope="module")
def shared() -> Iterator[DevServer]:
    with DevServer() as server:
        yield server


@pytest.fixture
def srv(shared: DevServer) -> DevServer:
    """The module's server, with its request log emptied for this test."""
    shared.requests.clear()
    return shared


@pytest.fixture(scope="module")
def oai(shared: DevServer) -> Iterator[OpenAI]:
    with OpenAI(base_url=shared.openai_base_url, api_key="sk-test", max_retries=0) as client:
        yield client


@pytest.fixture(scope="module")
def claude(shared: DevServer) -> Iterator[Anthropic]:
    with Anthropic(base_url=shared.anthropic_base_url, api_key="x", max_retries=0) as client:
        yield client


@pytest.fixture(scope="module")
def oai_retrying(shared: DevServer) -> Iterator[OpenAI]:
    with OpenAI(base_url=shared.openai_base_url, api_key="sk-test", max_retries=2) as client:
        yield client


def user(text: str) -> Any:
    """A one-message conversation (typed loosely: each SDK wants its own TypedDict)."""
    return [{"role": "user", "content": text}]


# ---------------------------------------------------------------- OpenAI chat completions


def test_chat_answers_about_the_prompt_and_counts_the_request(srv: DevServer, oai: OpenAI) -> None:
    completion = oai.chat.completions.create(model="gpt-4o-mini", messages=user("I was charged twice!"))

    choice = completion.choices[0]
    assert "refund" in (choice.message.content or "")
    assert choice.finish_reason == "stop"
    assert completion.id.startswith("chatcmpl-")
    assert completion.system_fingerprint == srv.system_fingerprint
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    assert (
        completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert srv.requests == [
        ("POST", "/v1/chat/completions", {"model": "gpt-4o-mini", "messages": user("I was charged twice!")})
    ]


def test_chat_fallback_echoes_key_words(oai: OpenAI) -> None:
    completion = oai.chat.completions.create(
        model="gpt-4o-mini", messages=user("Explain photosynthesis briefly")
    )
    assert "photosynthesis" in (completion.choices[0].message.content or "")


def test_chat_calls_the_tool_the_prompt_suggests(oai: OpenAI) -> None:
    completion = oai.chat.completions.create(
        model="gpt-4o-mini", messages=user("Where is order #A-4412? It never arrived."), tools=[ORDER_TOOL]
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "lookup_order"
    assert json.loads(call.function.arguments) == {"order_id": "A-4412"}


def test_chat_answers_in_text_when_no_tool_fits_or_tool_choice_is_none(oai: OpenAI) -> None:
    unrelated = oai.chat.completions.create(
        model="gpt-4o-mini", messages=user("What is the capital of France?"), tools=[ORDER_TOOL]
    )
    refused = oai.chat.completions.create(
        model="gpt-4o-mini", messages=user("Look up order 12"), tools=[ORDER_TOOL], tool_choice="none"
    )
    assert "Paris" in (unrelated.choices[0].message.content or "")
    assert unrelated.choices[0].message.tool_calls is None
    assert refused.choices[0].finish_reason == "stop"


def test_chat_after_a_tool_result_answers_with_it(oai: OpenAI) -> None:
    first = oai.chat.completions.create(
        model="gpt-4o-mini", messages=user("I was charged twice on order 77"), tools=[ORDER_TOOL]
    )
    call = (first.choices[0].message.tool_calls or [])[0]
    messages = [
        *user("I was charged twice on order 77"),
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "order 77: two payments of $20"},
    ]
    final = oai.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[ORDER_TOOL])  # type: ignore[arg-type]

    text = final.choices[0].message.content or ""
    assert final.choices[0].finish_reason == "stop"
    assert "lookup_order" in text and "two payments of $20" in text and "refund" in text


def test_chat_json_schema_and_parse_with_a_pydantic_model(oai: OpenAI) -> None:
    parsed = oai.chat.completions.parse(
        model="gpt-4o-mini", messages=user("Hi, I was charged twice. jo@example.org"), response_format=Ticket
    )
    ticket = parsed.choices[0].message.parsed
    assert ticket is not None
    assert ticket.category == "billing" and ticket.priority == "high" and ticket.refund is True
    assert "refund" in ticket.reply and ticket.tags and ticket.customer_email == "jo@example.org"

    schema: Any = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    raw = oai.chat.completions.create(
        model="gpt-4o-mini",
        messages=user("Rate this from 1 to 5"),
        response_format={"type": "json_schema", "json_schema": {"name": "rating", "schema": schema}},
    )
    assert json.loads(raw.choices[0].message.content or "") == {"score": 1}


def test_chat_n_gives_n_distinct_rewordings(oai: OpenAI) -> None:
    completion = oai.chat.completions.create(model="gpt-4o-mini", messages=user("charged twice"), n=2)
    texts = [c.message.content for c in completion.choices]
    assert [c.index for c in completion.choices] == [0, 1]
    assert len(set(texts)) == 2 and all("refund" in (t or "") for t in texts)


def test_chat_stream_sends_sse_chunks_then_usage_then_done(srv: DevServer, oai: OpenAI) -> None:
    with httpx2.Client() as http:
        body = {
            "model": "gpt-4o-mini",
            "messages": user("hello"),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        raw = http.post(f"{srv.openai_base_url}/chat/completions", json=body).text
    assert raw.endswith("data: [DONE]\n\n")

    chunks = list(
        oai.chat.completions.create(
            model="gpt-4o-mini", messages=user("hello"), stream=True, stream_options={"include_usage": True}
        )
    )
    *deltas, last = chunks
    assert last.choices == [] and last.usage is not None and last.usage.completion_tokens > 0
    assert all(c.usage is None for c in deltas)
    assert deltas[-1].choices[0].finish_reason == "stop"
    assert "".join(c.choices[0].delta.content or "" for c in deltas).startswith(("Hello", "Hi"))
    assert len({c.id for c in chunks}) == 1


def test_chat_stream_helper_accumulates_tool_call_deltas(oai: OpenAI) -> None:
    with oai.chat.completions.stream(
        model="gpt-4o-mini", messages=user("Please look up order 5521"), tools=[ORDER_TOOL]
    ) as stream:
        kinds = {event.type for event in stream}
        final = stream.get_final_completion()
    assert "tool_calls.function.arguments.delta" in kinds
    (call,) = final.choices[0].message.tool_calls or []
    assert call.function.name == "lookup_order"
    assert json.loads(call.function.arguments) == {"order_id": "5521"}


async def test_async_chat_plain_and_streamed(srv: DevServer) -> None:
    async with AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0) as client:
        plain = await client.chat.completions.create(model="gpt-4o-mini", messages=user("reset my password"))
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=user("reset my password"), stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert "reset" in (plain.choices[0].message.content or "")
    assert "reset" in text
    assert len(srv.requests) == 2


# ---------------------------------------------------------------- OpenAI responses, embeddings, models


def test_responses_create_output_text(oai: OpenAI) -> None:
    response = oai.responses.create(model="gpt-4o-mini", input="What is the capital of France?")
    assert response.id.startswith("resp_") and response.status == "completed"
    assert "Paris" in response.output_text
    assert response.usage is not None and response.usage.output_tokens > 0


def test_responses_function_call_then_function_call_output(oai: OpenAI) -> None:
    first = oai.responses.create(
        model="gpt-4o-mini", input="What's the weather in Berlin?", tools=[WEATHER_TOOL_RESPONSES]
    )
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Berlin", "unit": "celsius"}

    follow_up = oai.responses.create(
        model="gpt-4o-mini",
        input=[
            {"role": "user", "content": "What's the weather in Berlin?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "12C and rain"},
        ],
        tools=[WEATHER_TOOL_RESPONSES],  # type: ignore[list-item]
    )
    assert "12C and rain" in follow_up.output_text


def test_responses_stream_typed_events(oai: OpenAI) -> None:
    with oai.responses.stream(model="gpt-4o-mini", input="hello there") as stream:
        events = [event.type for event in stream]
        final = stream.get_final_response()
    assert events[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert "response.output_text.delta" in events and events[-1] == "response.completed"
    assert final.output_text.startswith(("Hello", "Hi"))


async def test_async_responses_stream_with_a_function_call(srv: DevServer) -> None:
    client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
    async with (
        client,
        client.responses.stream(
            model="gpt-4o-mini", input="weather forecast for Lyon", tools=[WEATHER_TOOL_RESPONSES]
        ) as stream,
    ):
        events = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert "response.function_call_arguments.delta" in events
    (call,) = final.output
    assert call.type == "function_call" and json.loads(call.arguments)["city"] == "Lyon"


def test_embeddings_are_deterministic_sized_and_base64_by_default(srv: DevServer, oai: OpenAI) -> None:
    texts = ["refund my double charge", "refund the double charge please", "the weather in Paris"]
    result = oai.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=64)
    again = oai.embeddings.create(
        model="text-embedding-3-small", input=texts[0], dimensions=64, encoding_format="float"
    )
    vectors = [d.embedding for d in result.data]

    assert srv.requests[0].body["encoding_format"] == "base64"  # the SDK asks for base64 unless told
    assert [len(v) for v in vectors] == [64, 64, 64]
    assert math.isclose(sum(x * x for x in vectors[0]), 1.0, rel_tol=1e-5)
    assert again.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)
    assert len(oai.embeddings.create(model="text-embedding-3-small", input="x").data[0].embedding) == 1536

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b))

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])


def test_embeddings_base64_wire_format_is_little_endian_float32(srv: DevServer) -> None:
    with httpx2.Client() as http:
        body = {
            "model": "text-embedding-3-small",
            "input": "hi",
            "dimensions": 4,
            "encoding_format": "base64",
        }
        data = http.post(f"{srv.openai_base_url}/embeddings", json=body).json()["data"][0]["embedding"]
    assert len(struct.unpack("<4f", base64.b64decode(data))) == 4


def test_models_list(oai: OpenAI, claude: Anthropic) -> None:
    assert "gpt-4o-mini" in [m.id for m in oai.models.list()]
    assert CLAUDE in [m.id for m in claude.models.list()]


# ---------------------------------------------------------------- Anthropic messages


def test_anthropic_messages_create_with_tool_use(claude: Anthropic) -> None:
    message = claude.messages.create(
        model=CLAUDE,
        max_tokens=256,
        messages=user("Where is my package? Order 881."),
        tools=[TRACK_TOOL_ANTHROPIC],
    )
    assert message.id.startswith("msg_01") and message.stop_reason == "tool_use"
    text, tool_use = message.content
    assert text.type == "text" and "track_order" in text.text
    assert (
        tool_use.type == "tool_use"
        and tool_use.name == "track_order"
        and tool_use.input == {"order_id": "881"}
    )

    conversation: Any = [
        *user("Where is my package? Order 881."),
        {"role": "assistant", "content": [block.model_dump() for block in message.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "in Leeds"}],
        },
    ]
    final = claude.messages.create(
        model=CLAUDE, max_tokens=256, tools=[TRACK_TOOL_ANTHROPIC], messages=conversation
    )
    assert final.stop_reason == "end_turn"
    assert final.content[0].type == "text" and "in Leeds" in final.content[0].text


def test_anthropic_stream_helpers(claude: Anthropic) -> None:
    with claude.messages.stream(model=CLAUDE, max_tokens=64, messages=user("hello")) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == final.content[0].text  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 1

    with claude.messages.stream(
        model=CLAUDE,
        max_tokens=64,
        messages=user("Where is my package? Order 9."),
        tools=[TRACK_TOOL_ANTHROPIC],
    ) as stream:
        kinds = [event.type for event in stream]
        tool_message = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "input_json" in kinds
    assert tool_message.content[-1].type == "tool_use" and tool_message.content[-1].input == {"order_id": "9"}


async def test_async_anthropic_create_and_stream(srv: DevServer) -> None:
    async with AsyncAnthropic(base_url=srv.anthropic_base_url, api_key="x", max_retries=0) as client:
        message = await client.messages.create(
            model=CLAUDE, max_tokens=64, messages=user("I was charged twice")
        )
        async with client.messages.stream(
            model=CLAUDE, max_tokens=64, messages=user("charged twice")
        ) as stream:
            final = await stream.get_final_message()
    assert message.content[0].type == "text" and "refund" in message.content[0].text
    assert final.content[0].type == "text" and "refund" in final.content[0].text


# ---------------------------------------------------------------- errors on demand


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, openai.RateLimitError), (400, openai.BadRequestError), (500, openai.InternalServerError)],
)
def test_openai_errors_on_demand(
    srv: DevServer, oai_retrying: OpenAI, status: int, error: type[openai.APIStatusError]
) -> None:
    with pytest.raises(error) as caught:  # x-should-retry: false, so the SDK does not retry
        oai_retrying.chat.completions.create(model=f"error-{status}", messages=user("hi"))
    assert caught.value.status_code == status
    assert isinstance(caught.value.body, dict) and set(caught.value.body) == {
        "message",
        "type",
        "param",
        "code",
    }
    assert len(srv.requests) == 1
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "0"
        assert caught.value.body["code"] == "rate_limit_exceeded"


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (500, anthropic.InternalServerError, "api_error"),
    ],
)
def test_anthropic_errors_on_demand(
    srv: DevServer, claude: Anthropic, status: int, error: type[anthropic.APIStatusError], kind: str
) -> None:
    with pytest.raises(error) as caught:
        claude.messages.create(
            model=CLAUDE, max_tokens=8, messages=user("hi"), extra_headers={"x-devserver-error": str(status)}
        )
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error" and body["error"]["type"] == kind


def test_invalid_requests_get_the_providers_error(oai: OpenAI, claude: Anthropic) -> None:
    with pytest.raises(openai.BadRequestError, match="messages"):
        oai.chat.completions.create(model="gpt-4o-mini", messages=[])
    with pytest.raises(anthropic.NotFoundError):
        claude.get("/v1/nowhere", cast_to=object)


def test_transient_failures_then_success_with_sdk_retries(srv: DevServer, oai_retrying: OpenAI) -> None:
    client = oai_retrying
    srv.fail_next(2, status=503)
    assert client.chat.completions.create(model="gpt-4o-mini", messages=user("hi")).choices
    flaky = client.chat.completions.create(model="flaky-2", messages=user("hi"))
    assert flaky.model == "flaky-2"
    assert len(srv.requests) == 6


# ---------------------------------------------------------------- variation, determinism, lifecycle


def test_unseeded_servers_vary_and_seeded_servers_repeat() -> None:
    def run(seed: int | None) -> list[dict[str, object]]:
        with DevServer(seed=seed) as server, OpenAI(base_url=server.openai_base_url, api_key="k") as client:
            chat = client.chat.completions.create(model="gpt-4o-mini", messages=user("charged twice"), n=3)
            response = client.responses.create(model="gpt-4o-mini", input="hello")
            return [chat.model_dump(), response.model_dump()]

    a, b = run(None), run(None)
    assert a[0]["id"] != b[0]["id"] and a[0]["system_fingerprint"] != b[0]["system_fingerprint"]
    assert a[1]["id"] != b[1]["id"]
    seeded = run(42)
    assert run(42) == seeded
    assert run(43) != seeded


def test_stop_refuses_later_connections_even_on_a_kept_alive_client() -> None:
    server = DevServer().start()
    with OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0) as client:
        client.models.list()  # leaves a kept-alive connection in the pool
        server.stop()
        with pytest.raises(openai.APIConnectionError):
            client.models.list()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(server.url + "/v1/models")


def test_cli_prints_its_address_and_serves() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cassette.devserver", "--port", "0", "--seed", "3"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("cassette devserver listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1]
        with OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
            assert (
                "Paris"
                in client.responses.create(model="gpt-4o-mini", input="capital of France?").output_text
            )
    finally:
        proc.terminate()
        proc.wait()
