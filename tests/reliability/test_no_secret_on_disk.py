"""No secret reaches disk: keys planted everywhere a run carries them are absent from every byte written.

For every supported provider key format a realistic fake key is built (seeded) and
planted, through the real OpenAI SDK and a plain httpx2 client, in: request headers,
query strings, JSON body fields, message text, tool-call argument strings (JSON inside
JSON, in the request and in the response), tool arguments and results, response
headers, streamed chunks and error bodies. A small stdlib HTTP server on loopback echoes
the key it is handed (header ``x-plant``) into every part of its responses.

After the recording, every file written (manifest and blobs) is searched for the raw
key, its JSON-escaped form and its random tail, and scanned with the project's own
scanner (`cassette.secrets.Scanner` with `default_rules()`). Keys that differ only in
the secret still get distinct match keys, and replay tells them apart.
"""

from __future__ import annotations

import base64
import json
import random
import string
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest
from reliability_support import has_module, iter_files, soak_mode

import cassette
from cassette import load_cassette

ALNUM = string.ascii_letters + string.digits


# --- realistic fake keys -------------------------------------------------------------------------------


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        low = s.lower()
        # real keys mix cases and digits; never let chance spell a placeholder word
        placeholder = any(w in low for w in ("xxxx", "fake", "dummy", "example", "test", "redact"))
        mixed = any(c.isupper() for c in s) and any(c.islower() for c in s)
        if not placeholder and (alphabet != ALNUM or mixed):
            return s


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_key(kind: str, rng: random.Random) -> str:
    """A key shaped like the real thing (lengths, alphabets, markers), random in its secret part."""
    a = ALNUM
    if kind == "openai-project":
        return "sk-proj-" + _pick(rng, a + "_-", 74) + "T3BlbkFJ" + _pick(rng, a + "_-", 74)
    if kind == "openai-service-account":
        return "sk-svcacct-" + _pick(rng, a + "_-", 74) + "T3BlbkFJ" + _pick(rng, a + "_-", 74)
    if kind == "anthropic":
        return "sk-ant-api03-" + _pick(rng, a + "_-", 93) + "AA"
    if kind == "aws-access-key-id":
        return "AKIA" + _pick(rng, string.ascii_uppercase + "234567", 16)
    if kind == "aws-secret-access-key":
        return "aws_secret_access_key=" + _pick(rng, a + "/+", 40)
    if kind == "google":
        return "AIza" + _pick(rng, a + "_-", 35)
    if kind == "github-classic":
        return "ghp_" + _pick(rng, a, 36)
    if kind == "github-fine-grained":
        return "github_pat_" + _pick(rng, a, 22) + "_" + _pick(rng, a, 59)
    if kind == "slack-bot":
        digits = string.digits
        return f"xoxb-{_pick(rng, digits, 12)}-{_pick(rng, digits, 13)}-{_pick(rng, a, 24)}"
    if kind == "slack-user":
        digits = string.digits
        ids = "-".join(_pick(rng, digits, n) for n in (12, 12, 13))
        return f"xoxp-{ids}-{_pick(rng, a, 32)}"
    if kind == "stripe-live":
        return "sk_live_" + _pick(rng, a, 99)
    if kind == "huggingface":
        return "hf_" + _pick(rng, string.ascii_letters, 34)
    if kind == "jwt":
        header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = _b64url(
            json.dumps({"sub": _pick(rng, a, 12), "iat": rng.randrange(10**9, 2 * 10**9)}).encode()
        )
        return f"{header}.{payload}.{_b64url(rng.randbytes(32))}"
    if kind == "bearer":
        return "Bearer " + _pick(rng, a + "._-", 48)
    if kind == "private-key":
        body = base64.b64encode(rng.randbytes(600)).decode()
        lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----"
    raise ValueError(kind)


KINDS = [
    "openai-project",
    "openai-service-account",
    "anthropic",
    "aws-access-key-id",
    "aws-secret-access-key",
    "google",
    "github-classic",
    "github-fine-grained",
    "slack-bot",
    "slack-user",
    "stripe-live",
    "huggingface",
    "jwt",
    "bearer",
    "private-key",
]


def change_one_character(key: str) -> str:
    """The same key with one character of its random part changed (same character class)."""
    i = len(key) * 2 // 3
    while not key[i].isalnum():
        i += 1
    c = key[i]
    pool = string.digits if c.isdigit() else string.ascii_uppercase if c.isupper() else string.ascii_lowercase
    return key[:i] + pool[(pool.index(c) + 1) % len(pool)] + key[i + 1 :]


def secret_part(key: str) -> str:
    """The part of a planted string that is the secret (what must never be written)."""
    for marker in ("aws_secret_access_key=", "Bearer "):
        if key.startswith(marker):
            return key[len(marker) :]
    return key


def fingerprints(key: str) -> list[bytes]:
    """Byte strings whose presence in a file means the key leaked: raw, JSON-escaped, its random tail."""
    secret = secret_part(key)
    found = {secret.encode(), json.dumps(secret)[1:-1].encode(), secret.replace("\n", "")[-20:].encode()}
    if "\n" in secret:  # each line of a private key block is a leak on its own
        found.update(line.encode() for line in secret.splitlines()[1:-1])
    return sorted(found)


# --- a server that echoes the key it is handed -----------------------------------------------------------


class EchoHandler(BaseHTTPRequestHandler):
    """OpenAI-shaped answers carrying the ``x-plant`` key in headers, text, tool calls, chunks, errors."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: EchoServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        key = self.headers.get("x-plant", "")
        self._send(200, f"results for {key}".encode(), "text/plain; charset=utf-8", key)

    def do_POST(self) -> None:
        key = self.headers.get("x-plant", "")
        n = self.server.count()
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw) if raw else {}
        path = urlsplit(self.path).path
        if path == "/hook":
            payload = {"received": key, "deep": {"list": [key, {"again": key}]}, "call": n}
            self._send(200, json.dumps(payload).encode(), "application/json", key)
            return
        if body.get("model") == "error-401":
            error = {
                "error": {
                    "message": f"Incorrect API key provided: {key}. Find your API key in your settings.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            }
            self._send(401, json.dumps(error).encode(), "application/json", key)
            return
        arguments = json.dumps({"token": key, "inner": json.dumps({"k": key})})
        tool_call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "store_secret", "arguments": arguments},
        }
        if body.get("stream"):
            self._stream(key, n, tool_call)
            return
        message = {
            "role": "assistant",
            "content": f"Echo (call #{n}): {key} " + "padding " * 60,
            "tool_calls": [tool_call],
        }
        completion = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model", "gpt-4o-mini"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        self._send(200, json.dumps(completion).encode(), "application/json", key)

    def _stream(self, key: str, n: int, tool_call: dict[str, Any]) -> None:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return b"data: " + json.dumps(data).encode() + b"\n\n"

        events = [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": f"Your token {key} works (call #{n})"}),
            chunk({"tool_calls": [{"index": 0, **tool_call}]}),
            chunk({}, "stop"),
            b"data: [DONE]\n\n",
        ]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("x-echo-token", key.replace("\n", " "))
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")

    def _send(self, status: int, data: bytes, content_type: str, key: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-echo-token", key.replace("\n", " "))  # header values cannot hold newlines
        self.send_header("set-cookie", f"session={secret_part(key).replace(chr(10), '')}; HttpOnly")
        self.end_headers()
        self.wfile.write(data)


class EchoServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), EchoHandler)
        self._n = 0
        self._lock = threading.Lock()

    def count(self) -> int:
        with self._lock:
            self._n += 1
            return self._n

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# --- planting -----------------------------------------------------------------------------------------------


@cassette.tool
def store_secret(token: str, note: dict[str, Any]) -> dict[str, Any]:
    """A tool whose arguments and result both carry the key (the result above the blob threshold)."""
    return {"stored": token, "echo": note, "log": f"saved token={token}; " + "ok " * 200, "list": [token]}


@dataclass
class Clients:
    sdk: Any
    http: Any
    base: str


def plant(clients: Clients, key: str) -> list[str]:
    """Every call of a run that carries ``key``; returns the places it was planted."""
    headers = {"x-plant": key.replace("\n", "\\n"), "x-custom-secret": secret_part(key).replace("\n", "")}
    arguments = json.dumps({"token": key, "inner": json.dumps({"api_key": key})})
    messages = [
        {"role": "system", "content": "You guard secrets. " * 40},
        {"role": "user", "content": f"Here is my key: {key} - please keep it."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "store_secret", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": json.dumps({"stored": key})},
    ]
    sdk = clients.sdk.with_options(default_headers=headers)
    places = []
    sdk.chat.completions.create(
        model="gpt-4o-mini",
        messages=messages,
        extra_body={"note": key, "nested": {"deep": [key]}},
        extra_query={"q": key},
    )
    places += ["message text", "tool-call arguments (JSON in JSON)", "tool message", "JSON body fields"]
    places += ["request headers", "query string (LLM call)", "response text", "response tool-call arguments"]
    places += ["response headers"]
    stream = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages[:2], stream=True)
    for _ in stream:
        pass
    places.append("streamed chunks")
    with pytest.raises(openai.AuthenticationError):
        sdk.chat.completions.create(model="error-401", messages=messages[:2])
    places.append("error body")
    clients.http.get(
        f"{clients.base}/search", params={"q": key, "api_key": secret_part(key)}, headers=headers
    )
    places += ["query string (HTTP)", "text response"]
    clients.http.post(
        f"{clients.base}/hook",
        json={"token": key, "data": {"deep": [key, {"k": key}]}, "description": f"the key is {key}"},
        headers=headers,
    )
    places += ["JSON body (HTTP)", "JSON response (HTTP)"]
    store_secret(key, {"copy": key, "json": json.dumps({"secret": key})})
    places += ["tool arguments", "tool result"]
    return places


@pytest.fixture(scope="module")
def clients(echo: EchoServer) -> Clients:
    sdk = cassette.instrument(openai.OpenAI(base_url=f"{echo.url}/v1", api_key="sk-none", max_retries=0))
    return Clients(sdk, cassette.http_client(), echo.url)


def keys_for_run() -> list[tuple[str, str]]:
    rng = random.Random(20261130)
    rounds = 8 if soak_mode() else 1
    return [(kind, make_key(kind, rng)) for _ in range(rounds) for kind in KINDS]


# --- the properties ---------------------------------------------------------------------------------------


def test_fake_keys_look_real_to_the_scanner() -> None:
    """Sanity check of the planted keys: the project's scanner recognises each one."""
    if not has_module("cassette.secrets"):
        pytest.skip("the secret scanner is missing (cassette/_secrets.py)")
    from cassette.plugins.manager import default_rules
    from cassette.secrets import Scanner

    scanner = Scanner(default_rules())
    for kind, key in keys_for_run():
        assert scanner.scan(key.encode(), as_json=False), f"{kind}: the scanner does not see {key[:12]}…"


def test_no_planted_key_reaches_any_written_byte(tmp_path: Path, clients: Clients, counts: Any) -> None:
    planted = keys_for_run()
    places: set[str] = set()
    for n, (kind, key) in enumerate(planted):
        with cassette.using(
            tmp_path / "cassettes" / f"{n:03}-{kind}.json", mode="record", blob_threshold=256
        ):
            places.update(plant(clients, key))
    files = list(iter_files(tmp_path))
    assert any(".blobs" in f.parts for f in files), "nothing went to the blob store"
    leaks = []
    for f in files:
        data = f.read_bytes()
        for kind, key in planted:
            for mark in fingerprints(key):
                if mark in data:
                    at = data.index(mark)
                    context = data[max(0, at - 80) : at].decode("utf-8", "replace")
                    leaks.append(f"{kind} in {f.relative_to(tmp_path)} after …{context!r}")
                    break
    counts.update(keys_planted=len(planted), formats=len(KINDS), places=len(places), files_checked=len(files))
    assert not leaks, "\n".join(leaks[:20])
    # and each cassette still replays (redaction never touches what matching needs)
    for n, (kind, key) in enumerate(planted):
        with cassette.using(tmp_path / "cassettes" / f"{n:03}-{kind}.json", mode="replay", check_order="off"):
            plant(clients, key)


def test_the_projects_scanner_finds_nothing_in_what_was_written(
    tmp_path: Path, clients: Clients, counts: Any
) -> None:
    if not has_module("cassette.secrets"):
        pytest.skip("the secret scanner is missing (cassette/_secrets.py)")
    from cassette.plugins.manager import default_rules
    from cassette.secrets import Scanner

    planted = keys_for_run()
    for n, (kind, key) in enumerate(planted):
        with cassette.using(
            tmp_path / "cassettes" / f"{n:03}-{kind}.json", mode="record", blob_threshold=256
        ):
            plant(clients, key)
    scanner = Scanner(default_rules())
    findings = [str(f) for path in iter_files(tmp_path) for f in scanner.scan_file(path)]
    counts.update(files_scanned=len(list(iter_files(tmp_path))), findings=len(findings))
    assert not findings, "\n".join(findings[:20])


def test_keys_differing_only_in_the_secret_get_distinct_match_keys(
    tmp_path: Path, clients: Clients, counts: Any
) -> None:
    """Redaction happens on write only: two calls whose keys differ in one character never collapse."""
    rng = random.Random(7)
    path = tmp_path / "twins.json"
    twins = []
    for kind in KINDS:
        key = make_key(kind, rng)
        twin = change_one_character(key)
        twins.append((kind, key, twin))
    with cassette.using(path, mode="record", blob_threshold=256):
        for _kind, key, twin in twins:
            for k in (key, twin):
                clients.sdk.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": f"key {k}"}]
                )
                store_secret(k, {})
    recorded = load_cassette(path)
    by_pair = [recorded.interactions[i : i + 4] for i in range(0, len(recorded.interactions), 4)]
    for (kind, _key, _twin), (llm_a, tool_a, llm_b, tool_b) in zip(twins, by_pair):
        assert llm_a.key != llm_b.key, f"{kind}: two LLM calls collapsed into one match key"
        assert tool_a.key != tool_b.key, f"{kind}: two tool calls collapsed into one match key"
        assert recorded.hydrate(llm_a.request) == recorded.hydrate(llm_b.request), (
            f"{kind}: the key was not redacted"
        )
    # replay, twins in reverse order: each call gets its own answer back (the echo numbers its calls)
    with cassette.using(path, mode="replay", check_order="off"):
        for n, (_kind, key, twin) in reversed(list(enumerate(twins))):
            for m, k in ((1, twin), (0, key)):
                answer = clients.sdk.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": f"key {k}"}]
                )
                want = int(recorded.hydrate(by_pair[n][2 * m].response)["json"]["id"].split("-")[1])
                assert answer.id == f"chatcmpl-{want}"
                store_secret(k, {})
    counts.update(twin_pairs=len(twins), distinct_keys=2 * len(twins))


def test_api_keys_in_headers_never_enter_the_match_key(tmp_path: Path, clients: Clients) -> None:
    """The other side of it: rotating the API key (a header) must not break replay."""
    path = tmp_path / "rotate.json"
    first = clients.sdk.with_options(api_key=make_key("openai-project", random.Random(1)))
    second = clients.sdk.with_options(api_key=make_key("openai-project", random.Random(2)))
    with cassette.using(path, mode="record"):
        first.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}])
    with cassette.using(path, mode="replay"):
        second.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}])
