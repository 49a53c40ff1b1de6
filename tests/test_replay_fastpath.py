"""The replay fast paths keep pluggy's and hydrate's behaviour: wrappers, tracing, partial
argument lists and plugins registered mid-run still apply; a response with blob references is
still hydrated when the seam skips the copy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cassette import HttpRequest, get_plugin_manager, hookimpl
from cassette.core.model import holds_refs
from cassette.plugins.manager import normalize_http

CHAT = HttpRequest(
    "POST",
    "https://api.openai.com/v1/chat/completions",
    (("content-type", "application/json"),),
    b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "user": "u1"}',
)


@pytest.fixture
def registered() -> Iterator[list[Any]]:
    plugins: list[Any] = []
    yield plugins
    pm = get_plugin_manager()
    for plugin in plugins:
        pm.unregister(plugin)


def _register(registered: list[Any], plugin: Any) -> None:
    get_plugin_manager().register(plugin)
    registered.append(plugin)


def test_builtin_providers_answer_as_through_pluggy() -> None:
    kind, normalized = normalize_http(CHAT)
    direct = get_plugin_manager().hook.cassette_http_request(request=CHAT)
    assert kind == "llm"
    assert normalized == direct
    assert "user" not in normalized  # the provider's noise list applied


def test_a_normaliser_registered_mid_run_applies_to_the_next_request(registered: list[Any]) -> None:
    before = normalize_http(CHAT)[1]

    class Tag:
        @hookimpl
        def cassette_normalize(self, request: dict[str, Any], kind: str) -> None:
            request["tagged"] = kind

    _register(registered, Tag())
    assert "tagged" not in before
    assert normalize_http(CHAT)[1]["tagged"] == "llm"


def test_a_normaliser_taking_only_the_request_still_runs(registered: list[Any]) -> None:
    class OnlyRequest:
        @hookimpl
        def cassette_normalize(self, request: dict[str, Any]) -> None:
            request["seen"] = True

    _register(registered, OnlyRequest())
    assert normalize_http(CHAT)[1]["seen"] is True


def test_a_wrapper_provider_still_wraps_the_answer(registered: list[Any]) -> None:
    class Wrap:
        @hookimpl(wrapper=True)
        def cassette_http_request(self, request: HttpRequest) -> Any:
            result = yield
            return {**result, "wrapped": True}

    _register(registered, Wrap())
    assert normalize_http(CHAT)[1]["wrapped"] is True


def test_hook_tracing_sees_every_call() -> None:
    pm = get_plugin_manager()
    seen: list[str] = []
    undo = pm.add_hookcall_monitoring(lambda name, impls, kw: seen.append(name), lambda *a: None)
    try:
        normalize_http(CHAT)
    finally:
        undo()
    assert seen == ["cassette_http_request", "cassette_normalize"]
    normalize_http(CHAT)  # untraced again: the direct path resumes
    assert len(seen) == 2


def test_a_provider_that_recognises_first_still_wins(registered: list[Any]) -> None:
    class Mine:
        @hookimpl(tryfirst=True)
        def cassette_http_request(self, request: HttpRequest) -> dict[str, Any]:
            return {"kind": "http", "mine": True}

    _register(registered, Mine())
    kind, normalized = normalize_http(CHAT)
    assert (kind, normalized.get("mine")) == ("http", True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"status": 200, "json": {"id": "chatcmpl-1", "choices": [{"message": {}}]}}, False),
        ({"status": 200, "events": ["data: {}", "data: [DONE]"]}, False),
        ({"status": 200, "events": ["data: {}", {"$blob": "a" * 40}]}, True),
        ({"json": {"choices": [{"$blob": "a" * 40, "$json": True}]}}, True),
        ({"json": {"$literal": {"$blob": "not a ref"}}}, True),
        ({"$blob": "a" * 40}, True),
        ({"json": {"big": 2**70}}, True),  # orjson cannot write it: hydrate decides
        ("plain", False),
    ],
)
def test_holds_refs_never_misses_a_reference(value: Any, expected: bool) -> None:
    assert holds_refs(value) is expected


def test_a_replay_does_not_keep_what_it_served_alive(openai_client: Any) -> None:
    """Each served response dies with its call, as the bare SDK's does: kept, 1,000 replayed calls
    would hold 1,000 parsed responses and the collector would walk them again and again."""
    import gc

    import cassette

    questions = [f"question {i}: where is parcel {i}?" for i in range(60)]

    def ask_all() -> None:
        for q in questions:
            openai_client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": q}]
            )

    with cassette.using("many.json", mode="record"):
        ask_all()
    with cassette.using("many.json", mode="replay"):
        ask_all()  # warm: every import, cache and pool the calls use
    with cassette.using("many.json", mode="replay"):
        gc.collect()
        before = len(gc.get_objects())
        ask_all()
        gc.collect()
        grown = len(gc.get_objects()) - before
    assert grown < 3 * len(questions), grown  # kept, each response would be ten objects or more


@pytest.mark.parametrize("lib", ["httpx", "httpx2"])
def test_a_request_off_the_wire_reads_as_a_plain_one(lib: str) -> None:
    """The seam decodes a request's headers only when a plugin asks for them all; what a plugin
    reads is what the plain `HttpRequest` holds (with httpx, httpx2, and headers that keep their
    pairs some other way)."""
    import importlib

    # a unit of the seam (allowlisted in tests/test_public_surface.py): the lazy request it builds off
    # the wire is never handed out whole, and the odd URLs and header objects below cannot be sent
    from cassette.seam.transport import _raw_request

    wire = importlib.import_module(lib).Request(
        "POST",
        "https://api.openai.com/v1/chat/completions?x=1",
        headers=[
            ("Content-Type", "application/json"),
            ("X-Twice", "a"),
            ("x-twice", "b"),
            ("X-Lat", "caf\xe9".encode("latin-1")),
        ],
        content=b'{"model": "m"}',
    )
    request = _raw_request(wire, wire.read())
    plain = HttpRequest(
        "POST",
        "https://api.openai.com/v1/chat/completions?x=1",
        tuple((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in wire.headers.raw),
        b'{"model": "m"}',
    )
    for name in ("content-type", "CONTENT-TYPE", "x-twice", "X-Lat", "x-lat ", "absent", "ünïcode", ""):
        assert request.header(name) == plain.header(name), name
    assert request.header("x-twice") == "a"  # the first of a header given twice
    assert request.path == plain.path == "/v1/chat/completions"
    assert "headers" not in vars(request) and "url" not in vars(request)  # nothing decoded yet
    assert request.headers == plain.headers
    assert ("content-type", "application/json") in request.headers and ("x-lat", "caf\xe9") in request.headers
    assert (request.method, request.url, request.body) == (plain.method, plain.url, plain.body)
    assert hash(request) == hash(request) and repr(request).startswith("_WireRequest(method='POST'")
    with pytest.raises(AttributeError):
        request.method = "GET"  # type: ignore[misc]  # frozen, as HttpRequest is

    for url in (
        "https://h.example/openai/deployments/a%2Fb%20c/chat/completions?api-version=1",
        "https://h.example",
        "https://h.example/?q=1",
        "https://h.example/v1/x/#frag",
        "https://h.example/caf%C3%A9/messages",
    ):
        odd = importlib.import_module(lib).Request("POST", url)
        assert _raw_request(odd, b"").path == HttpRequest("POST", str(odd.url), (), b"").path, url

    class OnlyRaw:  # a headers object with only the public API
        raw = wire.headers.raw

    other = _raw_request(type("R", (), {"method": "POST", "url": wire.url, "headers": OnlyRaw()})(), b"")
    assert other.url == plain.url
    for name in ("content-type", "X-TWICE", "x-lat", "absent"):
        assert other.header(name) == plain.header(name), name


def test_a_replayed_body_reaches_the_sdk_as_a_network_response_does(openai_client: Any) -> None:
    """Replay hands the client a stream with its length, as a network transport does: read whole,
    read as a stream (``with_streaming_response``), timed (``elapsed``), the bytes are the recorded ones."""
    import cassette

    def both() -> tuple[bytes, bytes, str | None]:
        whole = openai_client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "where is parcel 7?"}]
        )
        assert whole.http_response.elapsed.total_seconds() >= 0
        with openai_client.chat.completions.with_streaming_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "where is parcel 8?"}]
        ) as streamed:
            chunks = b"".join(streamed.iter_bytes())
        return whole.http_response.content, chunks, whole.headers.get("content-length")

    with cassette.using("raw.json", mode="record"):
        live = both()
    with cassette.using("raw.json", mode="replay"):
        replayed = both()
    assert replayed == live and live[2] == str(len(live[0]))


async def test_an_async_replayed_body_reaches_the_sdk_whole(async_openai_client: Any) -> None:
    import cassette

    async def ask() -> tuple[bytes, str]:
        raw = await async_openai_client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "where is parcel 9?"}]
        )
        return raw.http_response.content, raw.parse().choices[0].message.content or ""

    with cassette.using("araw.json", mode="record"):
        live = await ask()
    with cassette.using("araw.json", mode="replay"):
        assert await ask() == live


@pytest.mark.parametrize("anthropic_header", [False, True])
def test_no_request_is_claimed_by_both_built_in_model_providers(anthropic_header: bool) -> None:
    """OpenAI's provider is asked before Anthropic's (most traffic is OpenAI-shaped); the order
    is free only because no request is one both recognise: every endpoint of each, as either SDK
    sends it (Anthropic's carries ``anthropic-version``)."""
    from cassette.plugins.providers import anthropic as provider_anthropic
    from cassette.plugins.providers import openai as provider_openai

    # every endpoint each provider claims is its own private table, and nothing public lists them
    # (allowlisted in tests/test_public_surface.py)
    paths = [f"/v1/{suffix}" for suffix in provider_openai._ENDPOINTS]
    paths += [f"/openai/deployments/d/{suffix}" for suffix in provider_openai._ENDPOINTS]
    paths += list(provider_anthropic._ENDPOINTS)
    headers = (("content-type", "application/json"),)
    if anthropic_header:
        headers += (("anthropic-version", "2023-06-01"),)
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "input": "x", "prompt": "p"}'
    claimed = 0
    for path in paths:
        request = HttpRequest("POST", "https://api.example.com" + path, headers, body)
        answers = [p.cassette_http_request(request) for p in (provider_openai, provider_anthropic)]
        assert sum(a is not None for a in answers) <= 1, (path, answers)
        claimed += any(a is not None for a in answers)
    assert claimed >= len(provider_anthropic._ENDPOINTS)  # the loop did look at claimed requests
    names = [i.plugin_name for i in get_plugin_manager().hook.cassette_http_request.get_hookimpls()]
    assert names.index("cassette.plugins.providers.openai") > names.index(
        "cassette.plugins.providers.anthropic"
    )


@pytest.mark.parametrize(
    "noise", [frozenset({"user", "metadata"}), {"user", "metadata"}, ["user", "metadata"], ()]
)
def test_llm_request_drops_the_noise_however_a_plugin_gives_it(noise: Any) -> None:
    """A provider plugin may pass its noise names as a frozenset (as documented), a set, a list or
    a tuple: each drops the same fields, and the caller's body is left as it was."""
    from cassette.plugins.providers.wire import llm_request

    body = {"model": "m", "user": "u1", "messages": []}
    out = llm_request("acme", "generate", body, noise)
    kept = {"model", "messages"} | ({"user"} if not noise else set())
    assert set(out) == kept | {"kind", "provider", "endpoint"}
    assert body == {"model": "m", "user": "u1", "messages": []}
    clean = llm_request("acme", "generate", {"model": "m"}, noise)
    assert clean == {"model": "m", "kind": "llm", "provider": "acme", "endpoint": "generate"}
