"""Gemini through the seam: the real google-genai SDK records against the devserver over real HTTP
and replays, with the server stopped and no credentials in the environment, into objects equal to
the live ones; keyed by method, model and body, so another base URL, port or API key replays."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

genai = pytest.importorskip("google.genai")

from google.genai import errors, types  # noqa: E402
from pydantic import BaseModel  # noqa: E402

import cassette  # noqa: E402
from cassette import HttpRequest, get_plugin_manager  # noqa: E402
from cassette.seam.transport import replay_parts  # noqa: E402
from cassette.testing.devserver import DevServer  # noqa: E402
from tests.cli_helpers import run_cli  # noqa: E402

MODEL = "gemini-2.5-flash"
KEY = "AIza" + "SyD8Kq2mXb7Lr4Tn9Vw1Zc6Ye3Ua5Po0Ijx"  # the shape of a real key: the scanner's rule knows it
OTHER_KEY = "AIza" + "SyQ3xW9vB2nM7kL4pR8tY1uI6oP5aS0dF2g"
NOWHERE = "http://127.0.0.1:9/gemini-proxy"  # nothing listens there: a replay that went out would fail
NO_RETRY = types.HttpRetryOptions(attempts=1)


@pytest.fixture(autouse=True)
def _no_google_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
    ):
        monkeypatch.delenv(name, raising=False)


def client(base_url: str, *, api_key: str = KEY, lib: str = "httpx2", **options: Any) -> Any:
    http = types.HttpOptions(
        base_url=base_url,
        httpx_client=cassette.http_client(lib=lib),
        httpx_async_client=cassette.async_http_client(lib=lib),
        **options,
    )
    return genai.Client(api_key=api_key, http_options=http)


def vertex(base_url: str, project: str = "acme-prod", location: str = "us-central1") -> Any:
    from google.oauth2.credentials import Credentials

    http = types.HttpOptions(base_url=base_url, httpx_client=cassette.http_client())
    token = Credentials(token="ya29." + "a0AfB_byC" * 12)  # not expired: the SDK sends it, refreshes nothing
    return genai.Client(
        vertexai=True, project=project, location=location, credentials=token, http_options=http
    )


def dump(value: Any) -> Any:
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, BaseModel):
        data = value.model_dump(exclude={"sdk_http_response", "automatic_function_calling_history"})
        return {"$type": type(value).__name__, **data}
    return value


def record_then_replay(scenario: Any, path: str = "gemini.json", **options: Any) -> tuple[Any, Any, Any]:
    """``scenario(client)`` live, then with the server stopped at another base URL and another key."""
    with DevServer() as srv:
        with cassette.using(path, mode="record"):
            live = scenario(client(srv.url, **options))
    with cassette.using(path, mode="replay") as session:
        replayed = scenario(client(NOWHERE, api_key=OTHER_KEY, **options))
    return live, replayed, session


def recorded(path: str = "gemini.json") -> list[Any]:
    return cassette.load_cassette(path).interactions


# --- the methods, sync and async, on httpx2 and httpx ---------------------------------------------------


@pytest.mark.parametrize("lib", ["httpx2", "httpx"])
def test_generate_stream_count_and_embed_replay_with_the_server_gone(lib: str) -> None:
    def scenario(c: Any) -> Any:
        config = types.GenerateContentConfig(system_instruction="You are a support agent.", temperature=0.2)
        answer = c.models.generate_content(
            model=MODEL, contents="I was charged twice for order A1001", config=config
        )
        stream = list(c.models.generate_content_stream(model=MODEL, contents="How do I reset my password?"))
        counted = c.models.count_tokens(model=MODEL, contents="How do I reset my password?")
        embedded = c.models.embed_content(model="text-embedding-004", contents=["refund", "password reset"])
        return dump([answer, stream, counted, embedded])

    live, replayed, session = record_then_replay(scenario, lib=lib)
    assert replayed == live
    assert "refund" in live[0]["candidates"][0]["content"]["parts"][0]["text"]
    endpoints = [(i.request["provider"], i.request["endpoint"], i.request["model"]) for i in recorded()]
    assert endpoints == [
        ("gemini", "generateContent", MODEL),
        ("gemini", "streamGenerateContent", MODEL),
        ("gemini", "countTokens", MODEL),
        ("gemini", "batchEmbedContents", "text-embedding-004"),
    ]
    # usage from usageMetadata: the answer's and the stream's totals; counting tokens spends none
    first, streamed = recorded()[0], recorded()[1]
    total = first.response["json"]["usageMetadata"]["totalTokenCount"]
    last = json.loads(streamed.response["events"][-1].removeprefix("data: "))
    assert session.stats()["tokens_saved"] == total + last["usageMetadata"]["totalTokenCount"] > 0


def test_async_calls_replay_too() -> None:
    async def calls(c: Any) -> Any:
        answer = await c.aio.models.generate_content(model=MODEL, contents="Cancel my subscription")
        chunks = [
            chunk async for chunk in await c.aio.models.generate_content_stream(model=MODEL, contents="Hi")
        ]
        return dump([answer, chunks])

    live, replayed, _ = record_then_replay(lambda c: asyncio.run(calls(c)))
    assert replayed == live and len(live[1]) > 1


def test_streamed_event_boundaries_are_kept() -> None:
    with DevServer() as srv:
        c = client(srv.url)
        with cassette.using("stream.json", mode="record"):
            live = [
                chunk.text
                for chunk in c.models.generate_content_stream(model=MODEL, contents="Where is B2002?")
            ]
    (stream,) = recorded("stream.json")
    assert len(stream.response["events"]) == len(live) > 2  # one recorded event per SSE event
    assert stream.response["events"][0].startswith('data: {"candidates"')
    with cassette.using("stream.json", mode="replay"):
        again = [
            chunk.text
            for chunk in client(NOWHERE).models.generate_content_stream(
                model=MODEL, contents="Where is B2002?"
            )
        ]
    assert again == live  # chunk by chunk, not one merged chunk


# --- what is in the key -------------------------------------------------------------------------------


def test_the_key_holds_method_model_and_body_not_the_host_port_version_or_api_key() -> None:
    keys = {}
    for port_run in range(2):
        with DevServer() as srv:
            base = srv.url if port_run == 0 else srv.url + "/proxy"
            version = "v1beta" if port_run == 0 else "v1"
            c = client(base, api_key=KEY if port_run == 0 else OTHER_KEY, api_version=version)
            with cassette.using(f"k{port_run}.json", mode="record"):
                c.models.generate_content(model=MODEL, contents="Where is my order B2002?")
        (only,) = recorded(f"k{port_run}.json")
        keys[port_run] = only.key
        assert "v1" not in json.dumps(only.request) and "127.0.0.1" not in json.dumps(only.request)
    assert keys[0] == keys[1]  # another port, path prefix, API version and key: the same call
    for name in ("k0.json", "k1.json"):
        text = Path(name).read_text()
        assert KEY not in text and OTHER_KEY not in text


def test_system_instruction_generation_config_tools_and_response_schema_are_in_the_key() -> None:
    class Ticket(BaseModel):
        category: str
        priority: str

    def ask(c: Any, **config: Any) -> Any:
        return c.models.generate_content(
            model=MODEL, contents="I was charged twice", config=types.GenerateContentConfig(**config)
        )

    base: dict[str, Any] = {"response_mime_type": "application/json", "response_schema": Ticket}
    with DevServer() as srv:
        with cassette.using("schema.json", mode="record"):
            live = ask(client(srv.url), **base)
    assert isinstance(live.parsed, Ticket)
    request = recorded("schema.json")[0].request
    assert request["generationConfig"]["responseSchema"]["properties"]["priority"]
    with cassette.using("schema.json", mode="replay"):
        assert ask(client(NOWHERE), **base).parsed == live.parsed
    for change in (
        {"system_instruction": "Answer in French."},
        {"temperature": 0.9},
        {"response_schema": {"type": "OBJECT", "properties": {"category": {"type": "STRING"}}}},
        {"tools": [types.Tool(function_declarations=[types.FunctionDeclaration(name="escalate")])]},
    ):
        with pytest.raises(cassette.CassetteMiss), cassette.using("schema.json", mode="replay"):
            ask(client(NOWHERE), **{**base, **change})


def test_the_query_key_is_redacted_and_out_of_the_key() -> None:
    """The REST API as any HTTP client speaks it: the API key in ``?key=``, not a header."""
    body = {"contents": [{"role": "user", "parts": [{"text": "Where is my order B2002?"}]}]}
    with DevServer() as srv, cassette.using("rest.json", mode="record"):
        http = cassette.http_client(base_url=srv.url)
        live = http.post(f"/v1beta/models/{MODEL}:generateContent?key={KEY}", json=body).json()
    (call,) = recorded("rest.json")
    assert (call.request["endpoint"], call.request["model"]) == ("generateContent", MODEL)
    assert "query" not in call.request and KEY not in Path("rest.json").read_text()
    with cassette.using("rest.json", mode="replay"):
        http = cassette.http_client(base_url="http://127.0.0.1:9")
        assert http.post(f"/v1/models/{MODEL}:generateContent?key={OTHER_KEY}", json=body).json() == live


def test_vertex_paths_replay_at_another_base_url_and_project() -> None:
    def ask(c: Any) -> Any:
        return dump(c.models.generate_content(model=MODEL, contents="How do I reset my password?"))

    with DevServer() as srv:
        with cassette.using("vertex.json", mode="record"):
            live = ask(vertex(srv.url))
        assert srv.requests[0].path.endswith(
            f"/projects/acme-prod/locations/us-central1/publishers/google/models/{MODEL}:generateContent"
        )
    (call,) = recorded("vertex.json")
    assert (call.request["endpoint"], call.request["model"]) == ("generateContent", MODEL)
    text = Path("vertex.json").read_text()
    assert "ya29." not in text and "acme-prod" not in text  # the bearer token is not stored, nor the project
    with cassette.using("vertex.json", mode="replay"):
        assert ask(vertex(NOWHERE, project="acme-staging", location="europe-west4")) == live


# --- function calling ---------------------------------------------------------------------------------


def test_manual_function_calling_round_trip() -> None:
    lookup = types.FunctionDeclaration(
        name="lookup_order",
        description="Look up an order by its id",
        parameters_json_schema={
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[lookup])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )

    def scenario(c: Any) -> Any:
        asked = types.Content(role="user", parts=[types.Part(text="Please look up order A1001")])
        first = c.models.generate_content(model=MODEL, contents=[asked], config=config)
        (call,) = first.function_calls
        result = types.Part.from_function_response(name=call.name, response={"status": "shipped"})
        answer = c.models.generate_content(
            model=MODEL,
            contents=[asked, first.candidates[0].content, types.Content(role="user", parts=[result])],
            config=config,
        )
        return dump([first, answer]), call.name, call.args, answer.text

    live, replayed, _ = record_then_replay(scenario)
    assert replayed == live
    _, name, args, text = live
    assert name == "lookup_order" and "order_id" in args and "shipped" in text
    second = recorded()[1].request
    assert second["contents"][-1]["parts"][0]["functionResponse"]["name"] == "lookup_order"


def test_automatic_function_calling_replays_the_tool_and_both_model_calls() -> None:
    ran: list[str] = []

    @cassette.tool
    def get_order_status(order_id: str) -> str:
        """The shipping status of an order."""
        ran.append(order_id)
        return f"order {order_id} shipped yesterday"

    def scenario(c: Any) -> Any:
        config = types.GenerateContentConfig(tools=[get_order_status])
        return c.models.generate_content(
            model=MODEL, contents="What is the order status of A1001?", config=config
        ).text

    live, replayed, session = record_then_replay(scenario)
    assert replayed == live and "shipped yesterday" in live
    assert [i.kind for i in recorded()] == ["llm", "tool", "llm"]
    assert ran == [ran[0]]  # the tool ran live once; replay served its recorded result
    assert session.stats()["served"] == {"llm": 2, "tool": 1}


# --- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "name"),
    [(429, errors.ClientError, "RESOURCE_EXHAUSTED"), (500, errors.ServerError, "INTERNAL")],
)
def test_recorded_errors_replay_as_the_sdks_own_exceptions(status: int, error: type, name: str) -> None:
    def scenario(c: Any) -> Any:
        with pytest.raises(error) as raised:
            c.models.generate_content(model=f"error-{status}", contents="hi")
        return raised.value.code, raised.value.status, raised.value.message

    live, replayed, _ = record_then_replay(scenario, retry_options=NO_RETRY)
    assert replayed == live and live[:2] == (status, name)


def test_a_retried_500_replays_the_retry() -> None:
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0, max_delay=0, jitter=0)

    def scenario(c: Any) -> Any:
        return c.models.generate_content(model="flaky-1", contents="Where is my order B2002?").text

    live, replayed, session = record_then_replay(scenario, retry_options=retry)
    assert replayed == live
    assert [i.response["status"] for i in recorded()] == [500, 200]
    assert session.stats()["served"] == {"llm": 2}


def test_a_miss_reaches_the_caller_untouched_and_is_not_retried() -> None:
    with DevServer() as srv, cassette.using("miss.json", mode="record"):
        client(srv.url).models.generate_content(model=MODEL, contents="Where is my order B2002?")
    retry = types.HttpRetryOptions(attempts=5, initial_delay=0, max_delay=0, jitter=0)
    missed: BaseException | None = None
    with pytest.raises(cassette.CassetteMiss), cassette.using("miss.json", mode="replay"):
        try:
            client(NOWHERE, retry_options=retry).models.generate_content(
                model=MODEL, contents="Something else"
            )
        except cassette.CassetteMiss as exc:
            missed = exc
    assert missed is not None and not isinstance(missed, errors.APIError)
    assert "gemini generateContent" in str(missed) and "contents" in str(missed)


class _Interactions(BaseHTTPRequestHandler):
    """Gemini's Interactions API, as far as one create goes: a 429 asking for a wait, then the answer."""

    calls: ClassVar[list[float]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.calls.append(time.monotonic())
        if len(self.calls) == 1:
            status, body = (
                429,
                {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}},
            )
        else:
            status, body = (
                200,
                {"id": "int_1", "status": "completed", "outputs": [{"type": "text", "text": "hi"}]},
            )
        data = json.dumps(body).encode()
        self.send_response(status)
        if status == 429:
            self.send_header("retry-after", "0.05")
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_recorded_interactions_retry_replays_without_its_wait() -> None:
    # google-genai's NextGen APIs (client.interactions, agents, ...) wait what `retry-after-ms`, else
    # `Retry-After`, says, however long: replay hands them `retry-after-ms: 1`
    _Interactions.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Interactions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with cassette.using("interactions.json", mode="record"):
            live = client(f"http://127.0.0.1:{server.server_port}").interactions.create(
                model=MODEL, input="hi"
            )
    finally:
        server.shutdown()
        server.server_close()
    waited = _Interactions.calls[1] - _Interactions.calls[0]
    assert waited >= 0.05  # recording: the SDK waited as the server asked
    doc = json.loads(Path("interactions.json").read_text())
    error = doc["interactions"][0]["response"]
    assert error["status"] == 429 and error["headers"]["retry-after"] == "0.05"
    error["headers"]["retry-after"] = "300"  # a server that asked for five minutes
    Path("interactions.json").write_text(json.dumps(doc))

    sent = HttpRequest(
        "POST", NOWHERE + "/v1beta/interactions", (("x-goog-api-client", "google-genai-sdk/3"),), b""
    )
    _, headers, _, _ = replay_parts(error, request=sent)
    assert ("retry-after-ms", "1") in headers and ("retry-after", "300") in headers  # read first: no wait
    with cassette.using("interactions.json", mode="replay", unused="error") as session:
        replayed = client(NOWHERE, api_key=OTHER_KEY).interactions.create(model=MODEL, input="hi")
    assert replayed.id == live.id == "int_1" and session.stats()["served"] == {"http": 2}


def test_a_model_calls_recorded_retry_is_handed_back_as_recorded() -> None:
    # generate_content & co. retry after the SDK's own backoff (HttpRetryOptions, through tenacity)
    # and read no header: there is no recorded wait to rewrite (set initial_delay=0, jitter=0 in tests)
    error = {"status": 429, "headers": {"retry-after": "30", "content-type": "application/json"}, "json": {}}
    sent = HttpRequest("POST", NOWHERE + f"/v1beta/models/{MODEL}:generateContent", (), b"{}")
    _, headers, _, _ = replay_parts(error, request=sent)
    assert headers == [("retry-after", "30"), ("content-type", "application/json")]


# --- review: drift, show, scan -----------------------------------------------------------------------


def test_drift_reads_candidates_text_and_function_calls() -> None:
    tools = [types.Tool(function_declarations=[types.FunctionDeclaration(name="issue_refund")])]
    manual = types.AutomaticFunctionCallingConfig(disable=True)
    ask = {"model": MODEL, "contents": "I was charged twice for A1001"}
    with DevServer(seed=1) as srv, cassette.using("drift.json", mode="record"):
        client(srv.url).models.generate_content(**ask)
    with DevServer(seed=1) as srv, cassette.using("drift.json", mode="rerecord"):
        client(srv.url).models.generate_content(**ask)
    assert cassette.drift() == []
    with DevServer(seed=2) as srv, cassette.using("drift.json", mode="rerecord"):  # another rewording
        client(srv.url).models.generate_content(**ask)
    (item,) = cassette.drift()
    assert item.category == "reworded" and "charged twice" in item.excerpt, item

    output = get_plugin_manager().hook.cassette_response_output
    with DevServer(seed=1) as srv, cassette.using("calls.json", mode="record"):  # seeded: says "cancelled"
        client(srv.url).models.generate_content(
            model=MODEL,
            contents="I was charged twice for A1001",
            config=types.GenerateContentConfig(tools=tools, automatic_function_calling=manual),
        )
        list(client(srv.url).models.generate_content_stream(model=MODEL, contents="Cancel my subscription"))
    called, streamed = recorded("calls.json")
    said = output(kind="llm", response=called.response, request=called.request)
    assert said["tool_calls"] == [{"name": "issue_refund", "arguments": {}}] and said["finish"] == "STOP"
    said = output(kind="llm", response=streamed.response, request=streamed.request)
    assert "cancel" in said["text"].lower() and said["truncated"] is False
    cut = {**streamed.response, "events": streamed.response["events"][:1]}
    assert output(kind="llm", response=cut, request=streamed.request)["truncated"] is True


def test_show_and_scan_understand_a_gemini_cassette(capsys: pytest.CaptureFixture[str]) -> None:
    with DevServer() as srv, cassette.using("shown.json", mode="record"):
        client(srv.url).models.generate_content(model=MODEL, contents="Where is my order B2002?")
    code, shown, err = run_cli(capsys, "show", "shown.json")
    assert code == 0, err
    row = shown.splitlines()[1]
    assert f"gemini {MODEL}" in row and "user: Where is my order B2002?" in row, shown
    recorded_tokens = recorded("shown.json")[0].response["json"]["usageMetadata"]["totalTokenCount"]
    answer = recorded("shown.json")[0].response["json"]["candidates"][0]["content"]["parts"][0]["text"]
    assert f"->  {answer[:20]}" in row and row.endswith(f" {recorded_tokens} tok"), shown
    code, out, err = run_cli(capsys, "scan", "shown.json")
    assert code == 0, out + err  # nothing secret was written: not the header's key, not the query's

    # a Google key the model echoed, planted in the file by hand: the scanner names its rule
    Path("leaked.json").write_text(Path("shown.json").read_text().replace("B2002", KEY))
    code, out, err = run_cli(capsys, "scan", "leaked.json")
    assert code != 0 and "google-api-key" in out + err


def test_the_sdks_other_calls_are_keyed_by_path_not_base_url() -> None:
    def scenario(c: Any) -> Any:
        return dump(c.models.get(model=MODEL))

    with DevServer() as srv:
        srv_url = srv.url
        with cassette.using("get.json", mode="record"):
            with pytest.raises(errors.ClientError) as raised:  # the devserver has no such route: a 404
                scenario(client(srv_url, retry_options=NO_RETRY))
    (call,) = recorded("get.json")
    assert call.request == {
        "kind": "http",
        "method": "GET",
        "url": f"/models/{MODEL}",
        "sdk": "google-genai",
    }
    with cassette.using("get.json", mode="replay"):
        with pytest.raises(errors.ClientError) as again:
            scenario(client(NOWHERE, api_key=OTHER_KEY, retry_options=NO_RETRY))
    assert again.value.code == raised.value.code == 404
