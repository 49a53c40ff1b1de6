"""The HTTP seam itself: httpx (legacy) and httpx2 clients, sync and async, pass-through with no
session, and `instrument()` handing back a routed copy while the caller's client stays as it was.
"""

from __future__ import annotations

import gc
import http.client
import inspect
import threading
import weakref
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
import pytest
from anthropic import Anthropic, AsyncAnthropic
from openai import AsyncAzureOpenAI, AsyncOpenAI, AzureOpenAI, OpenAI

import cassette
from cassette.testing.devserver import DevServer

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "I was charged twice"}]}
LIBS = {"httpx": httpx, "httpx2": httpx2}


async def resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def raw_client(lib: str, flavour: str, base_url: str) -> Any:
    make = cassette.async_http_client if flavour == "async" else cassette.http_client
    return make(lib=lib, base_url=base_url)


async def exchange(client: Any) -> list[Any]:
    """An LLM call, a plain GET and a streamed body, as raw HTTP: status, headers and bodies."""
    out: list[Any] = []
    chat = await resolve(client.post("/v1/chat/completions", json=CHAT))
    out.append((chat.status_code, chat.headers["content-type"], chat.json()))
    models = await resolve(client.get("/v1/models", params={"limit": "5"}))
    out.append((models.status_code, models.json()))
    missing = await resolve(client.post("/v1/nowhere", json={}))
    out.append((missing.status_code, missing.json()))
    body = {**CHAT, "stream": True}
    if isinstance(client, httpx.AsyncClient | httpx2.AsyncClient):
        async with client.stream("POST", "/v1/chat/completions", json=body) as response:
            out.append([line async for line in response.aiter_lines()])
    else:
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            out.append(list(response.iter_lines()))
    return out


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("lib", ["httpx", "httpx2"])
async def test_raw_clients_record_and_replay(lib: str, flavour: str) -> None:
    with DevServer() as srv:
        client = raw_client(lib, flavour, srv.url)
        assert isinstance(client, LIBS[lib].AsyncClient if flavour == "async" else LIBS[lib].Client)
        with cassette.using("c.json", mode="record"):
            live = await exchange(client)
        received = len(srv.requests)
    with cassette.using("c.json", mode="replay") as session:
        replayed = await exchange(raw_client(lib, flavour, srv.url))
    assert replayed == live
    assert len(srv.requests) == received
    assert session.stats()["served"] == {"llm": 2, "http": 2}
    kinds = [(i.kind, i.request.get("endpoint") or i.request.get("url")) for i in session.interactions]
    assert kinds[1] == ("http", f"{srv.url}/v1/models")
    assert session.interactions[1].request["query"] == [["limit", "5"]]


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("lib", ["httpx", "httpx2"])
async def test_no_session_passes_straight_through(lib: str, flavour: str) -> None:
    with DevServer() as srv:
        client = raw_client(lib, flavour, srv.url)
        response = await resolve(client.post("/v1/chat/completions", json=CHAT))
        assert response.status_code == 200 and response.json()["object"] == "chat.completion"
        sdk = make_sdk(OpenAI if flavour == "sync" else AsyncOpenAI, srv.openai_base_url)
        completion = await resolve(sdk.chat.completions.create(**CHAT))
        assert completion.choices[0].message.content
        assert len(srv.requests) == 2
    assert not list(srv.requests[0].path.split("?"))[1:]


def make_sdk(cls: Any, base_url: str, **options: Any) -> Any:
    options.setdefault("api_key", "sk-test")
    options.setdefault("max_retries", 0)
    return cassette.instrument(cls(base_url=base_url, **options))


# --- http_client() handed to an SDK -------------------------------------------------------------


@pytest.mark.parametrize(
    ("sdk", "lib"),
    [(OpenAI, "httpx2"), (OpenAI, "httpx"), (AsyncOpenAI, "httpx2"), (AsyncOpenAI, "httpx")],
    ids=["openai-httpx2", "openai-httpx", "async-openai-httpx2", "async-openai-httpx"],
)
async def test_openai_with_http_client(sdk: Any, lib: str) -> None:
    make = cassette.async_http_client if sdk is AsyncOpenAI else cassette.http_client
    with DevServer() as srv:
        client = sdk(base_url=srv.openai_base_url, api_key="sk-test", http_client=make(lib=lib))
        with cassette.using("c.json", mode="record"):
            live = await resolve(client.chat.completions.create(**CHAT))
    client = sdk(base_url=srv.openai_base_url, api_key="sk-test", http_client=make(lib=lib))
    with cassette.using("c.json", mode="replay"):
        replayed = await resolve(client.chat.completions.create(**CHAT))
    assert replayed.model_dump() == live.model_dump()


@pytest.mark.parametrize("sdk", [Anthropic, AsyncAnthropic])
async def test_anthropic_with_http_client(sdk: Any) -> None:
    make = cassette.async_http_client if sdk is AsyncAnthropic else cassette.http_client
    request = {"model": "claude-haiku-5-5", "max_tokens": 64, "messages": CHAT["messages"]}
    with DevServer() as srv:
        client = sdk(base_url=srv.anthropic_base_url, api_key="x", http_client=make())
        with cassette.using("c.json", mode="record"):
            live = await resolve(client.messages.create(**request))
    client = sdk(base_url=srv.anthropic_base_url, api_key="x", http_client=make())
    with cassette.using("c.json", mode="replay"):
        replayed = await resolve(client.messages.create(**request))
    assert replayed.model_dump() == live.model_dump()


# --- instrument() -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda url: OpenAI(base_url=url + "/v1", api_key="sk-a", max_retries=5, timeout=7.0),
        lambda url: AsyncOpenAI(base_url=url + "/v1", api_key="sk-a", max_retries=5, timeout=7.0),
        lambda url: Anthropic(base_url=url, api_key="sk-ant-a", max_retries=5, timeout=7.0),
        lambda url: AsyncAnthropic(base_url=url, api_key="sk-ant-a", max_retries=5, timeout=7.0),
        lambda url: AzureOpenAI(
            azure_endpoint=url, api_version="2024-10-21", api_key="az", max_retries=5, timeout=7.0
        ),
        lambda url: AsyncAzureOpenAI(
            azure_endpoint=url, api_version="2024-10-21", api_key="az", max_retries=5, timeout=7.0
        ),
    ],
    ids=["openai", "async-openai", "anthropic", "async-anthropic", "azure", "async-azure"],
)
def test_instrument_returns_a_routed_copy_and_leaves_the_original_alone(make: Any) -> None:
    original = make("http://127.0.0.1:9")
    http, transport = original._client, original._client._transport
    transport_type = type(transport)
    copy = cassette.instrument(original)

    assert type(copy) is type(original) and copy is not original
    assert copy.api_key == original.api_key and copy.base_url == original.base_url
    assert copy.max_retries == 5 and copy.timeout == original.timeout
    assert original._client is http and http._transport is transport and type(transport) is transport_type
    assert copy._client is not http
    assert type(copy._client._transport).__module__ == "cassette.seam.transport"
    assert copy._client._transport._wrapped is transport  # the caller's connection pool and settings


def test_the_original_client_is_never_recorded() -> None:
    with DevServer() as srv:
        original = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        copy = cassette.instrument(original)
        with cassette.using("c.json", mode="record") as session:
            original.chat.completions.create(**CHAT)
            copy.chat.completions.create(**CHAT)
        assert len(srv.requests) == 2
    assert [i.kind for i in session.interactions] == ["llm"]
    copy.close()
    assert not original._client.is_closed  # closing the copy leaves the caller's client open


def test_a_copy_outlives_the_client_it_came_from() -> None:
    """``instrument(OpenAI())`` drops the original at once; the SDK closes a collected client's pool."""
    with DevServer() as srv:
        original = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        gone = weakref.ref(original._client)
        copy = cassette.instrument(original)
        del original
        gc.collect()
        assert gone() is not None and not gone().is_closed  # type: ignore[union-attr]
        with cassette.using("c.json", mode="record"):
            for _ in range(3):
                copy.chat.completions.create(**CHAT)
        assert len(srv.requests) == 3


@pytest.mark.parametrize("lib", ["httpx", "httpx2"])
def test_instrument_a_raw_client(lib: str) -> None:
    mod = LIBS[lib]
    with DevServer() as srv:
        original = mod.Client(base_url=srv.url, headers={"x-team": "support"}, timeout=3.0)
        copy = cassette.instrument(original)
        assert isinstance(copy, mod.Client) and copy is not original
        assert copy.headers["x-team"] == "support" and copy.base_url == original.base_url
        with cassette.using("c.json", mode="record") as session:
            original.get("/v1/models")
            copy.get("/v1/models")
        assert len(srv.requests) == 2
    assert len(session.interactions) == 1


def test_instrument_something_else_says_what_to_do() -> None:
    with pytest.raises(cassette.UninstrumentableClientError) as info:
        cassette.instrument(object())
    assert "http_client=cassette.http_client()" in str(info.value)
    assert isinstance(info.value, TypeError)


# --- Azure OpenAI -------------------------------------------------------------------------------


class _AzureToDevserver(httpx2.BaseTransport):
    """The caller's own transport: maps Azure deployment URLs onto the devserver's OpenAI routes."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.inner = httpx2.HTTPTransport()
        self.seen: list[str] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(str(request.url))
        path = request.url.path.split("/deployments/", 1)[1].split("/", 1)[1]
        request.url = httpx2.URL(f"{self.base}/v1/{path}")
        return self.inner.handle_request(request)


def test_azure_client_records_and_replays_by_deployment() -> None:
    with DevServer() as srv:
        own = _AzureToDevserver(srv.url)
        azure = AzureOpenAI(
            azure_endpoint="https://acme.openai.azure.com",
            api_version="2024-10-21",
            api_key="azure-key",
            max_retries=0,
            http_client=httpx2.Client(transport=own),
        )
        client = cassette.instrument(azure)
        with cassette.using("c.json", mode="record"):
            live = client.chat.completions.create(model="support-gpt4o", messages=CHAT["messages"])
        assert own.seen == [
            "https://acme.openai.azure.com/openai/deployments/support-gpt4o/chat/completions"
            "?api-version=2024-10-21"
        ]
    request = cassette.load_cassette("c.json").interactions[0].request
    assert request["provider"] == "openai" and request["model"] == "support-gpt4o"
    with cassette.using("c.json", mode="replay"):
        replayed = client.chat.completions.create(model="support-gpt4o", messages=CHAT["messages"])
    assert replayed.model_dump() == live.model_dump()
    assert len(own.seen) == 1


# --- proxies and mounted transports -------------------------------------------------------------


class _Forwarder(BaseHTTPRequestHandler):
    """A plain-HTTP forward proxy: requests arrive with an absolute URL and are passed on."""

    protocol_version = "HTTP/1.1"
    seen: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        target = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "host")}
        upstream.request(self.command, target.path or "/", body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for k, v in answer.getheaders():
            if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()


@pytest.fixture
def proxy() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forwarder)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_instrument_keeps_the_callers_proxy(
    proxy: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SDK client picks its proxy up from the environment; its routed copy records through it."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    with DevServer() as srv:
        client = make_sdk(OpenAI, srv.openai_base_url)
        with cassette.using("c.json", mode="record"):
            live = client.chat.completions.create(**CHAT)
        assert proxy.seen == [f"{srv.openai_base_url}/chat/completions"]  # type: ignore[attr-defined]
        assert len(srv.requests) == 1
    proxy.shutdown()
    with cassette.using("c.json", mode="replay"):
        replayed = make_sdk(OpenAI, srv.openai_base_url).chat.completions.create(**CHAT)
    assert replayed.model_dump() == live.model_dump()


@pytest.mark.parametrize("lib", ["httpx", "httpx2"])
def test_http_client_puts_the_seam_in_front_of_a_proxy(lib: str) -> None:
    """A proxy is a mounted transport that would take every request; replay must still win."""
    with DevServer() as srv:
        with cassette.using("c.json", mode="record"):
            live = cassette.http_client(lib=lib, base_url=srv.url).post("/v1/chat/completions", json=CHAT)
    dead_proxy = cassette.http_client(lib=lib, base_url=srv.url, proxy="http://127.0.0.1:9")
    with cassette.using("c.json", mode="replay"):
        replayed = dead_proxy.post("/v1/chat/completions", json=CHAT)
    assert replayed.json() == live.json()


class _Counting(httpx2.BaseTransport):
    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.calls = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        return self.inner.handle_request(request)


def test_instrument_keeps_mounts_auth_and_params() -> None:
    with DevServer() as srv:
        mounted = _Counting()
        original = httpx2.Client(
            base_url=srv.url, mounts={f"http://127.0.0.1:{srv.port}": mounted}, params={"tenant": "acme"}
        )
        copy = cassette.instrument(original)
        assert copy.params == original.params
        with cassette.using("c.json", mode="record") as session:
            copy.get("/v1/models")
        assert mounted.calls == 1 and original._mounts[next(iter(original._mounts))] is mounted
    assert session.interactions[0].request["query"] == [["tenant", "acme"]]
