"""`cassette.proxy`: a client given only a base URL is recorded and replayed through the seam.

The real anthropic and openai SDKs are pointed at the proxy's URL (their ``base_url``), record
against the local server, and replay with the server stopped and the network guard on (loopback
refused too: the proxy's own address is the only one that passes)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import gzip
import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anthropic import Anthropic, AsyncAnthropic
from openai import OpenAI

import cassette
from cassette.testing.devserver import DevServer
from tests.agent_helpers import TOOLS as OPENAI_TOOLS

ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7Lw2Xv9Kp4Rt6Yb8Nm3Hc5Jd1Fg0Sa" * 2
OPENAI_KEY = "sk-proj-" + "Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk8Lz0Xc" * 2
MODEL = "claude-sonnet-4-5"
# the OpenAI shape (tests/agent_helpers.py), and the same tool in Anthropic's
TOOLS = [
    {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
    for f in (tool["function"] for tool in OPENAI_TOOLS)
]
ASK = [{"role": "user", "content": "Where is order A-1?"}]


def claude_run(url: str, key: str) -> list[Any]:
    """A tool-calling round trip and a streamed call of the anthropic SDK, given only the base URL."""
    client = Anthropic(base_url=url, api_key=key, max_retries=0)
    first = client.messages.create(model=MODEL, max_tokens=256, messages=ASK, tools=TOOLS)  # type: ignore[arg-type]
    use = next(b for b in first.content if b.type == "tool_use")
    result = {"type": "tool_result", "tool_use_id": use.id, "content": '{"status": "shipped"}'}
    messages = [*ASK, {"role": "assistant", "content": first.content}, {"role": "user", "content": [result]}]
    final = client.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    with client.messages.stream(model=MODEL, max_tokens=256, messages=ASK) as stream:
        deltas = list(stream.text_stream)
        streamed = stream.get_final_message()
    return [first, final, deltas, streamed]


def gpt_run(url: str, key: str) -> list[Any]:
    client = OpenAI(base_url=url, api_key=key, max_retries=0)
    first = client.chat.completions.create(model="gpt-4o-mini", messages=ASK, tools=OPENAI_TOOLS)  # type: ignore[arg-type]
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    messages = [
        *ASK,
        first.choices[0].message.model_dump(),
        {"role": "tool", "tool_call_id": call.id, "content": "shipped"},
    ]
    final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=OPENAI_TOOLS)  # type: ignore[arg-type]
    chunks = list(client.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=True))
    return [first, final, [c.choices[0].delta.content for c in chunks if c.choices]]


def _comparable(results: list[Any]) -> list[Any]:
    return [r.model_dump() if hasattr(r, "model_dump") else r for r in results]


def test_anthropic_sdk_records_through_the_proxy_and_replays_with_the_server_stopped(
    devserver: DevServer,
) -> None:
    with cassette.using("cassettes/claude.json", mode="record") as session:
        with cassette.proxy(devserver.anthropic_base_url) as url:
            recorded = claude_run(url, ANTHROPIC_KEY)
    assert url.startswith("http://127.0.0.1:") and url != devserver.anthropic_base_url
    assert recorded[0].stop_reason == "tool_use" and recorded[1].stop_reason == "end_turn"
    assert len(recorded[2]) > 1  # the stream came event by event
    seen = len(devserver.requests)
    assert seen == 3 and [i.kind for i in session.interactions] == ["llm"] * 3
    assert session.interactions[2].response["events"]  # recorded as the stream it was
    assert session.unrouted == []  # the client's connection to the proxy is the seam's own
    devserver.stop()
    with cassette.block_network(), cassette.using("cassettes/claude.json", mode="replay") as replay:
        with cassette.proxy(devserver.anthropic_base_url) as url:
            replayed = claude_run(url, "no-key-needed-on-replay")
    assert _comparable(replayed) == _comparable(recorded)
    assert replay.stats()["served"] == {"llm": 3} and len(devserver.requests) == seen


def test_openai_sdk_keeps_the_upstream_base_path_and_replays(devserver: DevServer) -> None:
    with cassette.using("cassettes/gpt.json", mode="record"):
        with cassette.proxy(devserver.openai_base_url) as url:
            recorded = gpt_run(url, OPENAI_KEY)
    assert url.endswith("/v1")  # a drop-in for the upstream's base URL, path and all
    assert recorded[0].choices[0].finish_reason == "tool_calls" and recorded[1].choices[0].message.content
    devserver.stop()
    with cassette.block_network(), cassette.using("cassettes/gpt.json", mode="replay"):
        with cassette.proxy(devserver.openai_base_url) as url:
            replayed = gpt_run(url, "no-key-needed-on-replay")
    assert _comparable(replayed) == _comparable(recorded)


def test_no_api_key_the_client_sent_reaches_the_disk(devserver: DevServer) -> None:
    with cassette.using("cassettes/keys.json", mode="record"):
        with cassette.proxy(devserver.anthropic_base_url) as url:
            claude_run(url, ANTHROPIC_KEY)
        with cassette.proxy(devserver.openai_base_url) as url:
            gpt_run(url, OPENAI_KEY)
    assert devserver.requests  # the keys went upstream: the server was answered with them
    written = b"".join(p.read_bytes() for p in Path("cassettes").rglob("*") if p.is_file())
    assert ANTHROPIC_KEY.encode() not in written and OPENAI_KEY.encode() not in written
    assert ANTHROPIC_KEY[-12:].encode() not in written and OPENAI_KEY[-12:].encode() not in written


def test_a_miss_answers_the_client_and_fails_the_block_even_if_swallowed(devserver: DevServer) -> None:
    with (
        cassette.using("cassettes/miss.json", mode="record"),
        cassette.proxy(devserver.anthropic_base_url) as url,
    ):
        Anthropic(base_url=url, api_key="x", max_retries=0).messages.create(
            model=MODEL, max_tokens=64, messages=ASK
        )
    devserver.stop()
    seen: list[Exception] = []
    with pytest.raises(cassette.CassetteMiss) as raised:
        with (
            cassette.using("cassettes/miss.json", mode="replay"),
            cassette.proxy(devserver.anthropic_base_url) as url,
        ):
            client = Anthropic(base_url=url, api_key="x")  # retries on: the answer says not to retry
            try:
                client.messages.create(
                    model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "other"}]
                )
            except Exception as exc:  # an agent that swallows its client's errors
                seen.append(exc)
    assert "no recorded llm call" in str(raised.value)
    (error,) = seen
    assert getattr(error, "status_code", None) == 502 and "CassetteMiss" in str(error)
    assert "no recorded llm call" in str(error)


def test_concurrent_clients_are_each_recorded_and_replayed(devserver: DevServer) -> None:
    questions = [f"Where is order A-{n}?" for n in range(6)]

    def ask(url: str, question: str) -> str:
        client = Anthropic(base_url=url, api_key="x", max_retries=0)
        reply = client.messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": question}]
        )
        return str(reply.content[0].text)  # type: ignore[union-attr]

    def all_at_once(url: str) -> list[str]:
        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
            return list(pool.map(lambda q: ask(url, q), questions))

    with cassette.using("cassettes/many.json", mode="record") as session:
        with cassette.proxy(devserver.anthropic_base_url) as url:
            recorded = all_at_once(url)
    assert len(session.interactions) == 6
    devserver.stop()
    # which of six calls made at once reached the seam first was the scheduler's choice, each time
    replaying = cassette.using("cassettes/many.json", mode="replay", check_order="off")
    with cassette.block_network(), replaying as replay:
        with cassette.proxy(devserver.anthropic_base_url) as url:
            assert all_at_once(url) == recorded
    assert replay.stats()["served"] == {"llm": 6}


def test_an_async_client_streams_through_the_proxy(devserver: DevServer) -> None:
    import asyncio

    async def streamed(url: str) -> list[str]:
        client = AsyncAnthropic(base_url=url, api_key="x", max_retries=0)
        async with client.messages.stream(model=MODEL, max_tokens=64, messages=ASK) as stream:
            return [text async for text in stream.text_stream]

    with (
        cassette.using("cassettes/async.json", mode="record"),
        cassette.proxy(devserver.anthropic_base_url) as url,
    ):
        recorded = asyncio.run(streamed(url))
    devserver.stop()
    with cassette.block_network(), cassette.using("cassettes/async.json", mode="replay"):
        with cassette.proxy(devserver.anthropic_base_url) as url:
            assert asyncio.run(streamed(url)) == recorded


class _SlowEvents(BaseHTTPRequestHandler):
    """An upstream that sends one event, then waits for the test to say it arrived, then the next."""

    protocol_version = "HTTP/1.1"
    arrived = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for n, event in enumerate([b"data: first\n\n", b"data: second\n\n"]):
            if n:
                assert self.arrived.wait(10), "the first event never reached the client"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class _Gzipped(BaseHTTPRequestHandler):
    """An upstream that answers gzip-compressed JSON, as real APIs do when asked to."""

    protocol_version = "HTTP/1.1"
    body = b'{"ok": true, "items": [1, 2, 3]}'

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        data = gzip.compress(self.body)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def slow_upstream() -> Iterator[str]:
    with serving(_SlowEvents) as url:
        yield url


@pytest.mark.parametrize("recording", [True, False], ids=["recorded", "no-cassette"])
def test_a_compressed_answer_is_handed_on_decoded_with_its_own_length(recording: bool) -> None:
    block = cassette.using("cassettes/gzip.json", mode="record") if recording else contextlib.nullcontext()
    with serving(_Gzipped) as upstream, block, cassette.proxy(upstream) as url:
        response = httpx2.get(f"{url}/thing", headers={"accept-encoding": "gzip"})
    assert response.json() == {"ok": True, "items": [1, 2, 3]}
    assert "content-encoding" not in response.headers
    assert response.headers["content-length"] == str(len(_Gzipped.body))


def test_a_stream_is_relayed_as_each_event_arrives(slow_upstream: str) -> None:
    _SlowEvents.arrived.clear()
    with cassette.using("cassettes/sse.json", mode="record") as session, cassette.proxy(slow_upstream) as url:
        with httpx2.Client() as client, client.stream("GET", f"{url}/events") as response:
            events = []
            for line in response.iter_lines():  # the second event is sent only once the first arrived
                if line:
                    events.append(line)
                    _SlowEvents.arrived.set()
    assert events == ["data: first", "data: second"]
    assert session.interactions[0].response["events"] == ["data: first", "data: second"]


def test_an_unreachable_upstream_while_recording_names_the_next_step() -> None:
    with DevServer() as gone:
        pass  # a port that was just free: nothing listens there now
    with pytest.raises(
        cassette.UpstreamUnreachableError, match=r"cannot reach the upstream .* replay the cassette"
    ):
        with (
            cassette.using("cassettes/down.json", mode="record"),
            cassette.proxy(gone.anthropic_base_url) as url,
        ):
            with pytest.raises(Exception, match="502"):
                Anthropic(base_url=url, api_key="x").messages.create(model=MODEL, max_tokens=64, messages=ASK)


@pytest.mark.parametrize("upstream", ["api.anthropic.com", "ftp://example.com", "https://", 42])
def test_a_bad_upstream_url_is_refused_before_serving(upstream: Any) -> None:
    with pytest.raises(cassette.ProxyUpstreamError, match="not an http:// or https:// URL"):
        with cassette.proxy(upstream):
            pass


def test_with_no_cassette_the_proxy_passes_calls_through(devserver: DevServer) -> None:
    with cassette.proxy(devserver.anthropic_base_url) as url:
        reply = Anthropic(base_url=url, api_key="x", max_retries=0).messages.create(
            model=MODEL, max_tokens=64, messages=ASK
        )
    assert reply.content and len(devserver.requests) == 1
    assert json.loads(json.dumps(devserver.requests[0].body))["messages"] == ASK


def test_a_client_not_built_on_httpx_is_recorded_as_generic_http_at_the_upstream_url(
    devserver: DevServer,
) -> None:
    def models(url: str) -> bytes:
        with urllib.request.urlopen(f"{url}/models") as response:  # the stdlib's client: no httpx at all
            return bytes(response.read())

    with cassette.using("cassettes/urllib.json", mode="record") as session:
        with cassette.proxy(devserver.openai_base_url) as url:
            recorded = models(url)
    (interaction,) = session.interactions
    assert interaction.kind == "http" and devserver.openai_base_url in json.dumps(interaction.request)
    devserver.stop()
    with cassette.block_network(), cassette.using("cassettes/urllib.json", mode="replay"):
        with cassette.proxy(devserver.openai_base_url) as url:  # another port: the key has the upstream's
            assert models(url) == recorded


INNER = """
import os
import pytest
import cassette
from anthropic import Anthropic

def ask(text):
    with cassette.proxy(os.environ["DEVSERVER_URL"]) as url:
        client = Anthropic(base_url=url, api_key="sk-test", max_retries=0)
        reply = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": text}]
        )
    return reply.content[0].text

@pytest.mark.cassette
def test_asks():
    assert ask(os.environ.get("QUESTION", "hello"))
"""


def test_under_the_pytest_plugin_a_replaying_run_serves_the_proxy_and_fails_on_a_miss(
    pytester: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEVSERVER_URL", devserver.url)
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nasyncio_default_fixture_loop_scope = "function"\n')
    pytester.makepyfile(test_agent=INNER)
    pytester.runpytest_inprocess().assert_outcomes(passed=1)
    devserver.stop()
    seen = len(devserver.requests)
    replayed = pytester.runpytest_inprocess("--cassette-mode=replay")  # the run-wide network guard is on
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*replayed: 1 cassette(s), 1 LLM calls served*"])
    monkeypatch.setenv("QUESTION", "something never recorded")
    missed = pytester.runpytest_inprocess("--cassette-mode=replay")
    missed.assert_outcomes(failed=1)
    missed.stdout.fnmatch_lines(["*CassetteMiss*"])
    assert len(devserver.requests) == seen


def test_each_proxy_serves_the_session_it_was_entered_in_while_two_are_active(devserver: DevServer) -> None:
    both_open = threading.Barrier(2, timeout=10)  # two sessions active at once: a thread alone is ambiguous

    def agent(name: str) -> None:
        with cassette.using(f"cassettes/{name}.json", mode="record"), cassette.proxy(devserver.url) as url:
            both_open.wait()
            client = Anthropic(base_url=url, api_key="x", max_retries=0)
            client.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": name}])
            both_open.wait()

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(agent, "alpha"), pool.submit(agent, "beta")]:
            done.result()
    for name in ("alpha", "beta"):
        (interaction,) = cassette.load_cassette(f"cassettes/{name}.json").interactions
        assert interaction.request["messages"] == [{"role": "user", "content": name}]
