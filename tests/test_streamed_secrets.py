"""A secret split over the events of a streamed (SSE) response is redacted on write and found by the scan.

A model that echoes a key it saw streams it a few characters per event: in chat
``delta.content`` and ``delta.tool_calls[].function.arguments``, in the Responses API's
``response.output_text.delta`` / ``response.function_call_arguments.delta``, in Anthropic's
``text_delta`` / ``input_json_delta``. No single event holds the key. A stdlib server on
loopback streams a planted key that way to the real openai and anthropic SDKs; the written
cassette must hold no 8 characters of it, replay must hand the SDK as many chunks as were
recorded and still build valid final objects, and ``cassette scan`` must report a split key
in a cassette whose events were not redacted.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import cassette
from cassette import load_cassette
from cassette.cli import main
from tests.secret_helpers import ALNUM, random_key

RNG = random.Random(20261201)
GITHUB = "ghp_" + random_key(RNG, 36)
OPENAI = "sk-proj-" + random_key(RNG, 74) + "T3BlbkFJ" + random_key(RNG, 74)
ANTHROPIC = "sk-ant-api03-" + random_key(RNG, 93, ALNUM + "_-") + "AA"
PREFIXES = ("ghp_", "sk-proj-", "sk-ant-api03-")
TEXT_PIECE = 9  # each piece longer than the 8 characters the leak check looks for
ARGS_PIECE = 10


def secret_part(key: str) -> str:
    return next(key[len(p) :] for p in PREFIXES if key.startswith(p))


def leaks(data: str, key: str) -> list[str]:
    """Every 8-character substring of the key's secret part that is in ``data``."""
    secret = secret_part(key)
    return [secret[i : i + 8] for i in range(len(secret) - 7) if secret[i : i + 8] in data]


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


# --- a server that streams the key it holds in small pieces -------------------------------------------


def chat_events(key: str, final: bool) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [choice],
            }
        )

    out = [chunk({"role": "assistant", "content": ""})]
    text = f"Done: {key} is stored." if final else f"Storing {key} for you."
    out += [chunk({"content": p}) for p in pieces(text, TEXT_PIECE)]
    if not final:
        opening = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "store_key", "arguments": ""},
        }
        out.append(chunk({"tool_calls": [opening]}))
        arguments = json.dumps({"key": key, "note": "from the user"})
        for p in pieces(arguments, ARGS_PIECE):
            out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
    out.append(chunk({}, "stop" if final else "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return out


def responses_events(key: str) -> list[bytes]:
    text = f"Your key {key} is safe."
    arguments = json.dumps({"key": key})
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }
    call: dict[str, Any] = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_1",
        "name": "store_key",
        "arguments": arguments,
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "model": "m",
        "output": [message, call],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": 1.0,
        "top_p": 1.0,
        "metadata": {},
    }
    out: list[bytes] = []

    def emit(kind: str, **data: Any) -> None:
        out.append(sse({"type": kind, "sequence_number": len(out), **data}, kind))

    emit("response.created", response={**response, "status": "in_progress", "output": []})
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    emit(
        "response.output_item.added", output_index=0, item={**message, "content": [], "status": "in_progress"}
    )
    emit("response.content_part.added", **where, part={**message["content"][0], "text": ""})
    for p in pieces(text, TEXT_PIECE):
        emit("response.output_text.delta", **where, delta=p, logprobs=[])
    emit("response.output_text.done", **where, text=text, logprobs=[])
    emit("response.content_part.done", **where, part=message["content"][0])
    emit("response.output_item.done", output_index=0, item=message)
    emit(
        "response.output_item.added", output_index=1, item={**call, "arguments": "", "status": "in_progress"}
    )
    for p in pieces(arguments, ARGS_PIECE):
        emit("response.function_call_arguments.delta", item_id="fc_1", output_index=1, delta=p)
    emit("response.function_call_arguments.done", item_id="fc_1", output_index=1, arguments=arguments)
    emit("response.output_item.done", output_index=1, item=call)
    emit("response.completed", response=response)
    return out


def anthropic_events(key: str) -> list[bytes]:
    usage = {"input_tokens": 5, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    out = [sse({"type": "message_start", "message": message}, "message_start")]

    def delta(index: int, body: dict[str, Any]) -> None:
        out.append(sse({"type": "content_block_delta", "index": index, "delta": body}, "content_block_delta"))

    out.append(
        sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        )
    )
    for p in pieces(f"I will keep {key} safe.", TEXT_PIECE):
        delta(0, {"type": "text_delta", "text": p})
    out.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    block = {"type": "tool_use", "id": "toolu_01", "name": "store_key", "input": {}}
    out.append(
        sse({"type": "content_block_start", "index": 1, "content_block": block}, "content_block_start")
    )
    for p in ["", *pieces(json.dumps({"key": key}), ARGS_PIECE)]:
        delta(1, {"type": "input_json_delta", "partial_json": p})
    out.append(sse({"type": "content_block_stop", "index": 1}, "content_block_stop"))
    out.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 30},
            },
            "message_delta",
        )
    )
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return out


def generic_events(shape: str, key: str) -> list[bytes]:
    """A generic API's event stream carrying ``key`` split over its events (none holds it whole):

    - ``fragment``: one JSON document cut over events (``{"text":"my key is ghp_…`` / ``…"}``);
    - ``json``: an object per event whose ``text`` the client joins, cut mid-key;
    - ``text``: plain text (the first event's value over two ``data:`` lines).
    """
    if shape == "fragment":
        doc = json.dumps({"text": f"my key is {key}", "done": True}, separators=(",", ":"))
        cut = doc.index(key) + 11
        return [
            b"event: message\ndata: " + doc[:cut].encode() + b"\n\n",
            b"data: " + doc[cut:].encode() + b"\n\n",
        ]
    if shape == "json":
        text = f"Here it is: {key}. Keep it safe."
        out = [
            f"data: {json.dumps({'seq': n, 'text': p})}\n\n".encode() for n, p in enumerate(pieces(text, 10))
        ]
        return [*out, b"data: [DONE]\n\n"]
    first = b"data: Deploy notes:\ndata: the key is \n\n"  # a value over two lines, joined by a newline
    return [first, *(f"data: {p}\n\n".encode() for p in pieces(f"{key} for now", 10))]


class SplitHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SplitServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # a generic (non-provider) event stream: /events/<shape>
        events = generic_events(self.path.rsplit("/", 1)[-1], self.server.key)
        self.server.sent.append(events)
        self._stream(events)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        key = self.server.key
        if self.path.endswith("/chat/completions"):
            final = any(m.get("role") == "tool" for m in body.get("messages", []))
            events = chat_events(key, final)
        elif self.path.endswith("/responses"):
            events = responses_events(key)
        else:
            events = anthropic_events(key)
        self.server.sent.append(events)
        self._stream(events)

    def _stream(self, events: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")


class SplitServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), SplitHandler)
        self.key = GITHUB
        self.sent: list[list[bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def server() -> Iterator[SplitServer]:
    srv = SplitServer()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join()


def written(path: Path) -> str:
    """Every byte the recording wrote: the manifest and its blob store."""
    files = [path, *sorted((path.parent / ".blobs").rglob("*"))]
    return "".join(f.read_text("utf-8", "replace") for f in files if f.is_file())


# --- the agent: a streamed tool call carrying the key, the tool, a streamed answer echoing it ---------

TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "store_key",
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "note": {"type": "string"}},
            },
        },
    }
]


@cassette.tool
def store_key(key: str, note: str) -> dict[str, Any]:
    return {"stored": True, "length": len(key), "note": note}


def chat_agent(client: Any) -> dict[str, Any]:
    messages: list[Any] = [{"role": "user", "content": "please store my key"}]
    with client.chat.completions.stream(model="m", messages=messages, tools=TOOLS) as stream:
        first_chunks = sum(1 for event in stream if event.type == "chunk")
        first = stream.get_final_completion()
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
    result = store_key(**arguments)
    messages.append(
        {
            "role": "assistant",
            "content": first.choices[0].message.content,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
            ],  # type: ignore[union-attr]
        }
    )
    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    raw = client.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True)
    chunks = list(raw)
    return {
        "first_chunks": first_chunks,
        "first_text": first.choices[0].message.content,
        "arguments": arguments,
        "second_chunks": len(chunks),
        "second_text": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
    }


def test_a_key_split_over_chat_deltas_never_reaches_disk_and_the_run_replays(
    tmp_path: Path, server: SplitServer
) -> None:
    path = tmp_path / "chat.json"
    live = cassette.instrument(openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-x", max_retries=0))
    with cassette.using(path, mode="record"):
        recorded = chat_agent(live)
    assert GITHUB in recorded["first_text"] and recorded["arguments"]["key"] == GITHUB  # the live run saw it
    assert len(server.sent) == 2
    on_disk = written(path)
    assert not leaks(on_disk, GITHUB), "pieces of the key are still on disk"
    assert "<redacted:github-token>" in on_disk

    dead = cassette.instrument(openai.OpenAI(base_url="http://127.0.0.1:1/v1", api_key="sk-x", max_retries=0))
    with cassette.using(path, mode="replay"):
        replayed = chat_agent(dead)
    assert len(server.sent) == 2  # nothing reached the network
    assert replayed["first_chunks"] == recorded["first_chunks"] == len(server.sent[0]) - 1  # all but [DONE]
    assert replayed["second_chunks"] == recorded["second_chunks"]
    placeholder = "<redacted:github-token>"
    assert replayed["first_text"] == recorded["first_text"].replace(GITHUB, placeholder)
    assert replayed["arguments"] == {"key": placeholder, "note": "from the user"}  # still valid JSON
    assert replayed["second_text"] == recorded["second_text"].replace(GITHUB, placeholder)


def test_a_key_split_over_responses_api_deltas_is_redacted_and_replays(
    tmp_path: Path, server: SplitServer
) -> None:
    server.key = OPENAI
    path = tmp_path / "responses.json"

    def run(client: openai.OpenAI) -> tuple[int, Any]:
        with client.responses.stream(model="m", input="hi") as stream:
            count = sum(1 for _ in stream)
            return count, stream.get_final_response()

    live = cassette.instrument(openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-x", max_retries=0))
    with cassette.using(path, mode="record"):
        count, final = run(live)
    assert OPENAI in final.output_text
    assert not leaks(written(path), OPENAI)
    dead = cassette.instrument(openai.OpenAI(base_url="http://127.0.0.1:1/v1", api_key="sk-x", max_retries=0))
    with cassette.using(path, mode="replay"):
        again, replayed = run(dead)
    assert again == count == len(server.sent[0])
    assert replayed.output_text == "Your key <redacted:openai-api-key> is safe."
    call = replayed.output[1]
    assert json.loads(call.arguments) == {"key": "<redacted:openai-api-key>"}


def test_a_key_split_over_anthropic_deltas_is_redacted_and_replays(
    tmp_path: Path, server: SplitServer
) -> None:
    server.key = ANTHROPIC
    path = tmp_path / "anthropic.json"

    def run(client: anthropic.Anthropic) -> tuple[int, Any]:
        with client.messages.stream(
            model="claude", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as s:
            count = sum(1 for _ in s)
            return count, s.get_final_message()

    live = cassette.instrument(anthropic.Anthropic(base_url=server.url, api_key="sk-x", max_retries=0))
    with cassette.using(path, mode="record"):
        count, final = run(live)
    assert ANTHROPIC in final.content[0].text and final.content[1].input == {"key": ANTHROPIC}
    assert not leaks(written(path), ANTHROPIC)
    dead = cassette.instrument(
        anthropic.Anthropic(base_url="http://127.0.0.1:1", api_key="sk-x", max_retries=0)
    )
    with cassette.using(path, mode="replay"):
        again, replayed = run(dead)
    assert again == count
    assert replayed.content[0].text == "I will keep <redacted:anthropic-api-key> safe."
    assert replayed.content[1].input == {"key": "<redacted:anthropic-api-key>"}  # the partial JSON assembles


def test_an_ordinary_stream_is_stored_exactly_as_it_came(tmp_path: Path, server: SplitServer) -> None:
    """No secret, no churn: every event is the server's bytes, however its JSON was laid out."""
    server.key = "not-a-secret-at-all, just words"
    client = cassette.instrument(openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-x", max_retries=0))
    anthropic_client = cassette.instrument(
        anthropic.Anthropic(base_url=server.url, api_key="sk-x", max_retries=0)
    )
    path = tmp_path / "plain.json"
    with cassette.using(path, mode="record"):
        list(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
        with client.responses.stream(model="m", input="hi") as stream:
            list(stream)
        with anthropic_client.messages.stream(
            model="c", max_tokens=9, messages=[{"role": "user", "content": "x"}]
        ) as s:
            list(s)
    recorded = load_cassette(path)
    assert len(server.sent) == len(recorded.interactions) == 3
    for interaction, sent in zip(recorded.interactions, server.sent, strict=True):
        events = recorded.hydrate(interaction.response)["events"]
        assert events == [e.decode().rstrip("\n") for e in sent]


# --- the scan -------------------------------------------------------------------------------------------


def unredacted_cassette(tmp_path: Path, server: SplitServer, name: str) -> Path:
    """A recording whose streamed events are put back as the server sent them (as a cassette written
    before this redaction, or edited by hand, holds them)."""
    path = tmp_path / name
    client = cassette.instrument(openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-x", max_retries=0))
    with cassette.using(path, mode="record"):
        list(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    doc = json.loads(path.read_text())
    doc["interactions"][0]["response"]["events"] = [e.decode().rstrip("\n") for e in server.sent[-1]]
    path.write_text(json.dumps(doc, indent=2) + "\n")
    assert leaks(path.read_text(), GITHUB)  # the pieces are there, no event holds the key whole
    assert GITHUB not in path.read_text()
    return path


def test_cassette_scan_reports_a_key_split_over_events(
    tmp_path: Path, server: SplitServer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = unredacted_cassette(tmp_path, server, "leaky.json")
    assert main(["scan", "--format", "json", str(path)]) == 1
    found = json.loads(capsys.readouterr().out)
    assert [f["rule"] for f in found] == ["github-token"]
    # where it starts: the first content piece after the role chunk, "Storing g", ends with the key's "g"
    assert found[0]["path"] == "interactions[0].response.events[1].choices[0].delta.content"
    assert found[0]["file"] == str(path)
    lines = path.read_text().splitlines()
    assert '\\"content\\": \\"Storing g\\"' in lines[found[0]["line"] - 1]
    assert found[0]["masked"] == "ghp_…" + GITHUB[-4:]

    redacted = tmp_path / "clean.json"
    client = cassette.instrument(openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-x", max_retries=0))
    with cassette.using(redacted, mode="record"):
        list(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    assert main(["scan", str(redacted)]) == 0


def test_the_pre_commit_scan_of_staged_files_reports_a_split_key(
    tmp_path: Path, server: SplitServer, capsys: pytest.CaptureFixture[str]
) -> None:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path))

    def git(*args: str) -> None:
        subprocess.run(["git", *args], check=True, capture_output=True, env=env)

    git("init", "-q", "-b", "main", ".")
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    unredacted_cassette(tmp_path, server, "leaky.json")
    git("add", "-A")
    assert main(["scan", "--staged"]) == 1
    out = capsys.readouterr().out
    assert "leaky.json" in out and "github-token" in out and "events[1]" in out


# --- a generic (non-provider) event stream ----------------------------------------------------------


def _read_stream(client: Any, url: str) -> list[str]:
    with client.stream("GET", url) as response:
        return [line for line in response.iter_lines() if line]


def _data(lines: list[str]) -> str:
    """The stream's text as a client assembles it: each event's ``text`` where every event is a JSON
    object, else the ``data:`` values joined (``[DONE]`` left out)."""
    values = [line.removeprefix("data:").removeprefix(" ") for line in lines if line.startswith("data:")]
    values = [v for v in values if v != "[DONE]"]
    try:
        return "".join(json.loads(v)["text"] for v in values)
    except (ValueError, TypeError, KeyError):
        return "".join(values)


@pytest.mark.parametrize("shape", ["fragment", "json", "text"])
@pytest.mark.parametrize("key", [GITHUB, OPENAI], ids=["github", "openai"])
def test_a_key_split_over_a_generic_streams_events_is_redacted_and_found(
    tmp_path: Path, server: SplitServer, shape: str, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx

    server.key = key
    client = cassette.instrument(httpx.Client())
    url = f"{server.url}/events/{shape}"
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        live = _read_stream(client, url)
    assert key in _data(live)  # the client got the real stream
    recorded = load_cassette(path)
    assert recorded.interactions[0].request["kind"] == "http"
    events = recorded.hydrate(recorded.interactions[0].response)["events"]
    assert len(events) == len(server.sent[-1])  # event for event: replay hands out as many
    assert leaks(written(path), key) == []
    with cassette.using(path, mode="replay"):
        replayed = _read_stream(client, url)
    data = _data(replayed)
    assert "<redacted:" in data and not leaks(data, key)
    if shape == "fragment":  # the document the client assembles is still JSON
        assert json.loads(data)["text"].startswith("my key is <redacted:")
    capsys.readouterr()
    assert main(["scan", str(path)]) == 0

    # a recording whose events are put back as the server sent them: the scan joins them
    doc = json.loads(path.read_text())
    doc["interactions"][0]["response"]["events"] = [e.decode().rstrip("\n") for e in server.sent[-1]]
    path.write_text(json.dumps(doc, indent=2) + "\n")
    assert key not in path.read_text() and leaks(path.read_text(), key)
    assert main(["scan", "--format", "json", str(path)]) == 1
    found = json.loads(capsys.readouterr().out)
    assert len(found) == 1 and found[0]["path"].startswith("interactions[0].response.events[")
    assert key not in json.dumps(found) and found[0]["masked"].endswith(key[-4:])


def test_an_ordinary_generic_stream_is_stored_exactly_as_it_came(tmp_path: Path, server: SplitServer) -> None:
    import httpx

    server.key = "not-a-secret-at-all, just words"
    client = cassette.instrument(httpx.Client())
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        for shape in ("fragment", "json", "text"):
            _read_stream(client, f"{server.url}/events/{shape}")
    recorded = load_cassette(path)
    for interaction, sent in zip(recorded.interactions, server.sent, strict=True):
        assert recorded.hydrate(interaction.response)["events"] == [e.decode().rstrip("\n") for e in sent]
