"""OpenAI through the seam: every SDK method records against the devserver and replays, with the
server stopped, into objects equal to the live ones, field by field.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

import cassette
from cassette.testing.devserver import DevServer
from tests.sdk_generations import needs

MODEL = "gpt-4o-mini"
USER = [{"role": "user", "content": "I was charged twice for order A1001"}]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by its id",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]
RESPONSES_TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "lookup_order",
        "description": "Look up an order by its id",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]
TRIAGE_SCHEMA = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": ["billing", "account", "other"]},
        "priority": {"type": "string"},
        "summary": {"type": "string"},
    },
    "required": ["category", "priority", "summary"],
    "additionalProperties": False,
}


class Triage(BaseModel):
    category: str
    priority: str
    summary: str


Client = OpenAI | AsyncOpenAI
Scenario = Callable[[Any], Awaitable[Any]]


# --- helpers: one scenario body serves the sync and the async client ---------------------------


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
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return {"$type": type(value).__name__, **value.model_dump(warnings=False)}
    return value


def make_client(flavour: str, base_url: str, **options: Any) -> Client:
    cls = AsyncOpenAI if flavour == "async" else OpenAI
    options.setdefault("api_key", "sk-test")
    options.setdefault("max_retries", 0)
    return cassette.instrument(cls(base_url=base_url, **options))


async def record_then_replay(
    flavour: str, scenario: Scenario, path: str = "c.json", **options: Any
) -> tuple[Any, Any, cassette.Session]:
    """Record ``scenario`` live, stop the server, replay it with a fresh client and another API key."""
    with DevServer() as srv:
        client = make_client(flavour, srv.openai_base_url, **options)
        with cassette.using(path, mode="record"):
            live = await scenario(client)
        received = len(srv.requests)
        assert received > 0
    replay_client = make_client(flavour, srv.openai_base_url, **{**options, "api_key": "sk-another-key"})
    with cassette.using(path, mode="replay") as session:
        replayed = await scenario(replay_client)
    assert len(srv.requests) == received, "replay reached the server"
    assert not session.unused()
    return live, replayed, session


# --- scenarios ----------------------------------------------------------------------------------


async def chat(c: Client) -> Any:
    r = await resolve(c.chat.completions.create(model=MODEL, messages=USER))  # type: ignore[arg-type]
    assert r.choices[0].message.content
    return r


async def chat_tools(c: Client) -> Any:
    r = await resolve(c.chat.completions.create(model=MODEL, messages=USER, tools=TOOLS))  # type: ignore[arg-type]
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "lookup_order"
    return r, json.loads(call.function.arguments)


async def chat_json_schema(c: Client) -> Any:
    r = await resolve(
        c.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "triage", "schema": TRIAGE_SCHEMA, "strict": True},
            },
        )
    )
    return r, json.loads(r.choices[0].message.content)


async def chat_n(c: Client) -> Any:
    r = await resolve(c.chat.completions.create(model=MODEL, messages=USER, n=3))  # type: ignore[arg-type]
    assert len(r.choices) == 3
    return r


async def chat_parse(c: Client) -> Any:
    needs(c.chat.completions, "parse", "openai")
    r = await resolve(c.chat.completions.parse(model=MODEL, messages=USER, response_format=Triage))  # type: ignore[arg-type]
    parsed = r.choices[0].message.parsed
    assert isinstance(parsed, Triage)
    return r, parsed


async def chat_stream(c: Client) -> Any:
    stream = await resolve(
        c.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    chunks = await drain(stream)
    assert len(chunks) > 2 and chunks[-1].usage is not None
    return chunks


async def chat_stream_tools(c: Client) -> Any:
    stream = await resolve(c.chat.completions.create(model=MODEL, messages=USER, tools=TOOLS, stream=True))  # type: ignore[arg-type]
    chunks = await drain(stream)
    assert any(ch.choices and ch.choices[0].delta.tool_calls for ch in chunks)
    return chunks


async def chat_stream_helper(c: Client) -> Any:
    """``chat.completions.stream(...)``: the SDK's accumulating helper, events and final completion."""
    needs(c.chat.completions, "stream", "openai")
    manager = c.chat.completions.stream(model=MODEL, messages=USER, response_format=Triage)  # type: ignore[arg-type]
    if isinstance(c, AsyncOpenAI):
        async with manager as stream:  # type: ignore[union-attr]
            events = [e async for e in stream]
            final = await stream.get_final_completion()
    else:
        with manager as stream:  # type: ignore[union-attr]
            events = list(stream)
            final = stream.get_final_completion()
    assert isinstance(final.choices[0].message.parsed, Triage)
    return events, final


async def responses(c: Client) -> Any:
    r = await resolve(c.responses.create(model=MODEL, instructions="Be brief.", input=USER[0]["content"]))
    assert r.output_text
    return r, r.output_text


async def responses_tools(c: Client) -> Any:
    r = await resolve(c.responses.create(model=MODEL, input=USER[0]["content"], tools=RESPONSES_TOOLS))
    calls = [item for item in r.output if item.type == "function_call"]
    assert calls and calls[0].name == "lookup_order"
    return r, json.loads(calls[0].arguments)


async def responses_parse(c: Client) -> Any:
    r = await resolve(c.responses.parse(model=MODEL, input=USER[0]["content"], text_format=Triage))
    assert isinstance(r.output_parsed, Triage)
    return r, r.output_parsed, r.output_text


async def responses_stream(c: Client) -> Any:
    events = await drain(
        await resolve(c.responses.create(model=MODEL, input=USER[0]["content"], stream=True))
    )
    assert events[-1].type == "response.completed"
    return events


async def responses_stream_helper(c: Client) -> Any:
    """``responses.stream(...)``: typed events and the accumulated final response."""
    manager = c.responses.stream(model=MODEL, input=USER[0]["content"], tools=RESPONSES_TOOLS)
    if isinstance(c, AsyncOpenAI):
        async with manager as stream:  # type: ignore[union-attr]
            events = [e async for e in stream]
            final = await stream.get_final_response()
    else:
        with manager as stream:  # type: ignore[union-attr]
            events = list(stream)
            final = stream.get_final_response()
    assert any(item.type == "function_call" for item in final.output)
    return events, final


async def embeddings(c: Client) -> Any:
    r = await resolve(c.embeddings.create(model="text-embedding-3-small", input=["refund", "password reset"]))
    assert len(r.data) == 2 and r.data[0].embedding
    return r


async def raw_response(c: Client) -> Any:
    raw = await resolve(c.chat.completions.with_raw_response.create(model=MODEL, messages=USER))  # type: ignore[arg-type]
    parsed = await resolve(raw.parse())
    # the bytes the SDK read, as the server wrote them (its spacing too), not re-encoded
    body = raw.http_response.content
    assert body.startswith(b'{\n  "') and body.endswith(b"}\n"), body[:80]  # OpenAI's indent
    return raw.status_code, raw.headers.get("x-request-id"), raw.headers.get("content-type"), parsed, body


async def streaming_response(c: Client) -> Any:
    """``with_streaming_response``: the body read line by line as the SDK hands it out."""
    manager = c.chat.completions.with_streaming_response.create(model=MODEL, messages=USER, stream=True)  # type: ignore[arg-type]
    if isinstance(c, AsyncOpenAI):
        async with manager as response:  # type: ignore[union-attr]
            lines = [line async for line in response.iter_lines()]
    else:
        with manager as response:  # type: ignore[union-attr]
            lines = list(response.iter_lines())
    assert lines[-1] == "data: [DONE]" or lines[-2] == "data: [DONE]"
    return response.status_code, lines


SCENARIOS: list[Scenario] = [
    chat,
    chat_tools,
    chat_json_schema,
    chat_n,
    chat_parse,
    chat_stream,
    chat_stream_tools,
    chat_stream_helper,
    responses,
    responses_tools,
    responses_parse,
    responses_stream,
    responses_stream_helper,
    embeddings,
    raw_response,
    streaming_response,
]


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
async def test_replay_equals_live(flavour: str, scenario: Scenario) -> None:
    live, replayed, session = await record_then_replay(flavour, scenario)
    assert dump(replayed) == dump(live)
    assert session.stats()["served"] == {"llm": 1}


# --- streams ------------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_stream_is_stored_event_by_event(flavour: str) -> None:
    live, _, _ = await record_then_replay(flavour, chat_stream)
    recorded = cassette.load_cassette("c.json").interactions[0]
    assert recorded.request["stream"] is True
    events = recorded.response["events"]
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
    assert len(events) == len(live) + 1  # one event per chunk, then [DONE]
    assert "incomplete" not in recorded.response


async def _first_two_chunks(c: Client) -> list[Any]:
    stream = await resolve(c.chat.completions.create(model=MODEL, messages=USER, stream=True))  # type: ignore[arg-type]
    if isinstance(c, AsyncOpenAI):
        it = stream.__aiter__()
        chunks = [await it.__anext__(), await it.__anext__()]
        await stream.close()
    else:
        it = iter(stream)
        chunks = [next(it), next(it)]
        stream.close()
    return chunks


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_abandoned_stream_is_recorded_as_received_and_replays_the_same(flavour: str) -> None:
    live, replayed, _ = await record_then_replay(flavour, _first_two_chunks)
    assert dump(replayed) == dump(live)
    recorded = cassette.load_cassette("c.json").interactions[0].response
    assert recorded["incomplete"] is True
    assert len(recorded["events"]) >= 2 and "data: [DONE]" not in recorded["events"]

    # reading on past what was received ends where the recording ends, as it did for the agent
    client = make_client(flavour, "http://127.0.0.1:9/v1")
    with cassette.using("c.json", mode="replay"):
        everything = await drain(
            await resolve(client.chat.completions.create(model=MODEL, messages=USER, stream=True))  # type: ignore[arg-type]
        )
    assert len(everything) == len(recorded["events"])
    assert dump(everything[:2]) == dump(live)


# --- errors -------------------------------------------------------------------------------------

ERRORS = {429: openai.RateLimitError, 400: openai.BadRequestError, 500: openai.InternalServerError}


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("status", sorted(ERRORS))
async def test_error_responses_replay_as_the_sdk_error(flavour: str, status: int) -> None:
    async def failing(c: Client) -> Any:
        with pytest.raises(ERRORS[status]) as info:
            await resolve(c.chat.completions.create(model=f"error-{status}", messages=USER))  # type: ignore[arg-type]
        e = info.value
        return type(e).__name__, e.status_code, e.message, e.body, e.code, e.type

    live, replayed, _ = await record_then_replay(flavour, failing, max_retries=2)
    assert replayed == live
    recorded = cassette.load_cassette("c.json").interactions
    assert [i.response["status"] for i in recorded] == [status]  # the server said: do not retry


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_retried_calls_replay_attempt_by_attempt(flavour: str) -> None:
    """Two 500s then a success, recorded by the SDK's retry loop, replay the same three attempts."""
    live, replayed, session = await record_then_replay(
        flavour,
        lambda c: resolve(c.chat.completions.create(model="flaky-2", messages=USER)),
        max_retries=2,
    )
    assert dump(replayed) == dump(live)
    assert [i.response["status"] for i in cassette.load_cassette("c.json").interactions] == [500, 500, 200]
    assert session.stats()["served"] == {"llm": 3}


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_miss_is_not_retried_nor_masked(flavour: str, monkeypatch: pytest.MonkeyPatch) -> None:
    await record_then_replay(flavour, chat)
    client = make_client(flavour, "http://127.0.0.1:9/v1", max_retries=3)
    sleeps: list[Any] = []

    def sleep(*args: Any, **kwargs: Any) -> Any:
        sleeps.append(args)
        return resolve(None) if flavour == "async" else None

    monkeypatch.setattr(client, "_sleep_for_retry", sleep, raising=False)  # openai < 1.7x: no such method
    with pytest.raises(cassette.CassetteMiss) as info, cassette.using("c.json", mode="replay") as session:
        await resolve(client.chat.completions.create(model="gpt-4.1", messages=USER))  # type: ignore[arg-type]
    assert not isinstance(info.value, openai.APIConnectionError)
    if len(session.misses) > 1:
        # openai before 2.2x retries any exception its HTTP client raises: the miss is met once per
        # attempt (docs/providers.md says so)
        assert len(session.misses) == 4 and any(m is info.value for m in session.misses)
        return
    assert len(session.misses) == 1 and session.misses[0] is info.value
    assert sleeps == []
    assert 'model: "gpt-4.1" != "gpt-4o-mini"' in str(info.value)


# --- what the match key holds -------------------------------------------------------------------

BASE: dict[str, Any] = {"model": MODEL, "messages": USER, "tools": TOOLS, "temperature": 0.2}


def _changed_tools() -> list[Any]:
    tools = json.loads(json.dumps(TOOLS))
    tools[0]["function"]["description"] = "Find an order"
    return tools


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"temperature": 0.7}, "temperature: 0.7 != 0.2"),
        (
            {"tools": _changed_tools()},
            'tools[0].function.description: "Find an order" != "Look up an order by its id"',
        ),
        ({"stream": True}, "stream: True != (absent)"),
        ({"tool_choice": "none"}, 'tool_choice: "none" != (absent)'),
        ({"max_tokens": 50}, "max_tokens: 50 != (absent)"),
        ({"messages": [{"role": "user", "content": "hello"}]}, 'messages[0].content: "hello" != '),
    ],
    ids=["temperature", "tools", "stream", "tool_choice", "max_tokens", "messages"],
)
def test_a_changed_request_misses_with_a_field_diff(change: dict[str, Any], expected: str) -> None:
    with DevServer() as srv:
        client = make_client("sync", srv.openai_base_url)
        with cassette.using("c.json", mode="record"):
            client.chat.completions.create(**BASE)
    with pytest.raises(cassette.CassetteMiss) as info, cassette.using("c.json", mode="replay"):
        client.chat.completions.create(**{**BASE, **change})
    message = str(info.value)
    assert expected in message
    assert str(Path("c.json").resolve()) in message


def test_transport_noise_is_not_in_the_key() -> None:
    """User ids, metadata, cache keys, API keys, headers and the host may change: the call still replays."""
    with DevServer() as srv:
        client = make_client("sync", srv.openai_base_url)
        with cassette.using("c.json", mode="record"):
            live = client.chat.completions.create(**BASE, user="alice", metadata={"run": "1"})
    other = make_client(
        "sync",
        "http://127.0.0.1:9/v1",
        api_key="sk-completely-different",
        organization="org-other",
        default_headers={"x-team": "support"},
    )
    with cassette.using("c.json", mode="replay"):
        replayed = other.chat.completions.create(
            **BASE,
            user="bob",
            metadata={"run": "2"},
            extra_body={"prompt_cache_key": "cache-7"},  # an argument of its own in openai >= 1.9x
            extra_headers={"Idempotency-Key": "abc", "X-Request-Id": "req_1"},
        )
    assert dump(replayed) == dump(live)


def test_the_stored_request_holds_what_changes_the_answer() -> None:
    with DevServer() as srv:
        client = make_client("sync", srv.openai_base_url)
        with cassette.using("c.json", mode="record"):
            client.chat.completions.create(**BASE, user="alice", response_format={"type": "json_object"})
    request = cassette.load_cassette("c.json").interactions[0].request
    assert request["provider"] == "openai" and request["endpoint"] == "chat.completions"
    assert set(request) == {
        "kind",
        "provider",
        "endpoint",
        "model",
        "messages",
        "tools",
        "temperature",
        "response_format",
    }


def test_the_model_named_in_the_path_is_in_the_key() -> None:
    """Legacy /v1/engines/<model>/ routes and Azure deployments name the model in the path, not the body."""
    from cassette import HttpRequest
    from cassette.plugins.providers.openai import cassette_http_request

    body = json.dumps({"prompt": "Say hi", "max_tokens": 5}).encode()

    def key(url: str, payload: bytes = body) -> dict[str, Any] | None:
        return cassette_http_request(request=HttpRequest("POST", url, (), payload))

    davinci = key("https://api.openai.com/v1/engines/davinci/completions")
    curie = key("https://api.openai.com/v1/engines/curie/completions")
    assert davinci is not None and curie is not None
    assert davinci["model"] == "davinci" and curie["model"] == "curie" and davinci != curie
    quoted = key("https://api.openai.com/v1/engines/text%2Dada/embeddings")
    assert quoted is not None and quoted["model"] == "text-ada"
    azure = key("https://acme.openai.azure.com/openai/deployments/support-gpt4o/completions?api-version=1")
    assert azure is not None and azure["model"] == "support-gpt4o"
    named = key(
        "https://api.openai.com/v1/engines/davinci/completions",
        json.dumps({"prompt": "Say hi", "model": "babbage"}).encode(),
    )
    assert named is not None and named["model"] == "babbage"  # a model in the body wins


# --- multipart uploads (audio transcription): the random boundary never reaches the key --------------

AUDIO = b"RIFF" + bytes(range(256)) * 8


def test_a_transcription_upload_replays_and_its_file_is_kept_as_a_digest(tmp_path: Path) -> None:
    path = tmp_path / "transcribe.json"
    with DevServer(seed=3) as srv:
        live = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))
        with cassette.using(path, mode="record"):
            said = live.audio.transcriptions.create(
                model="whisper-1", file=("call.wav", AUDIO), language="en"
            )
    # each upload gets a fresh random boundary, and the recorded host is gone: it still matches
    replay = cassette.instrument(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test", max_retries=0))
    with cassette.using(path, mode="replay"):
        again = replay.audio.transcriptions.create(model="whisper-1", file=("call.wav", AUDIO), language="en")
    assert type(again) is type(said) and again == said and "order" in again.text
    request = cassette.load_cassette(path).interactions[0].request
    assert request["endpoint"] == "audio.transcriptions" and request["language"] == "en"
    assert request["file"].pop("content_type")  # guessed from the name by httpx: audio/x-wav here
    assert request["file"] == {
        "filename": "call.wav",
        "size": len(AUDIO),
        "sha256": hashlib.sha256(AUDIO).hexdigest(),
    }
    assert b"RIFF" not in path.read_bytes()  # the audio itself is not stored
    other = AUDIO[:-1] + b"!"
    with pytest.raises(cassette.CassetteMiss, match=r"file\.sha256"), cassette.using(path, mode="replay"):
        replay.audio.transcriptions.create(model="whisper-1", file=("call.wav", other), language="en")


def test_a_generic_multipart_post_matches_across_boundaries(tmp_path: Path) -> None:
    from cassette.seam.transport import default_lib

    httpx2 = pytest.importorskip(default_lib())  # or httpx, beside an SDK generation built on it

    path = tmp_path / "upload.json"
    files = {"attachment": ("notes.txt", b"order A1001 was charged twice", "text/plain")}
    with DevServer(seed=3) as srv:
        url = srv.openai_base_url.replace("/v1", "/upload")
        with httpx2.Client(transport=cassette.transport()) as http, cassette.using(path, mode="record"):
            first = http.post(url, data={"ticket": "T-9"}, files=files)
        with httpx2.Client(transport=cassette.transport()) as http, cassette.using(path, mode="replay"):
            second = http.post(url, data={"ticket": "T-9"}, files=files)
    assert (second.status_code, second.json()) == (first.status_code, first.json())
    recorded = cassette.load_cassette(path).interactions[0].request
    assert recorded["multipart"] == [
        {"name": "ticket", "text": "T-9"},
        {
            "name": "attachment",
            "content_type": "text/plain",
            "filename": "notes.txt",
            "size": 29,
            "sha256": hashlib.sha256(b"order A1001 was charged twice").hexdigest(),
        },
    ]


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        pytest.param(
            'multipart/form-data; boundary="a b"',
            b'--a b\r\nContent-Disposition: form-data; name="q"\r\n\r\nhi\r\n--a b--\r\n',
            [{"name": "q", "text": "hi"}],
            id="quoted boundary",
        ),
        pytest.param(
            "multipart/form-data; boundary=x",
            b"--x\r\nContent-Disposition: form-data; name=\"f\"; filename*=utf-8''na%C3%AFve.txt\r\n"
            b"\r\n\xff\xfe\r\n--x--",
            [
                {
                    "name": "f",
                    "filename": "naïve.txt",
                    "size": 2,
                    "sha256": hashlib.sha256(b"\xff\xfe").hexdigest(),
                }
            ],
            id="RFC 5987 filename",
        ),
        pytest.param(
            "multipart/form-data; boundary=x",
            b'--x\r\nContent-Disposition: form-data; name="q"\r\n\r\nhi\r\n',
            None,
            id="no closing delimiter",
        ),
        pytest.param("multipart/form-data", b"--x\r\n\r\n--x--", None, id="no boundary"),
        pytest.param("application/json", b"{}", None, id="not multipart"),
    ],
)
def test_multipart_parts_reads_uploads_and_refuses_what_it_cannot(
    content_type: str, body: bytes, expected: Any
) -> None:
    from cassette import HttpRequest
    from cassette.plugins.providers.wire import form_fields, multipart_parts

    parts = multipart_parts(HttpRequest("POST", "https://x.test/up", (("content-type", content_type),), body))
    assert parts == expected
    if parts:
        assert set(form_fields(parts)) == {p["name"] for p in parts}


def test_form_fields_keep_every_value_of_a_repeated_name() -> None:
    from cassette.plugins.providers.wire import form_fields

    parts = [
        {"name": "image[]", "filename": "a.png", "size": 1, "sha256": "0"},
        {"name": "tag", "text": "x"},
        {"name": "tag", "text": "y"},
        {"name": "tag", "text": "z"},
        {"name": "mask[]", "filename": "m.png", "size": 2, "sha256": "1"},
    ]
    assert form_fields(parts) == {
        "image[]": [{"filename": "a.png", "size": 1, "sha256": "0"}],
        "tag": ["x", "y", "z"],
        "mask[]": [{"filename": "m.png", "size": 2, "sha256": "1"}],
    }
