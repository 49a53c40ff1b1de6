"""A JSON body replays as the bytes the server wrote: its spacing, indent, escapes, final newline.

The body is stored parsed (readable, redactable, diffable) with a ``json_layout`` that writes it
back; ``with_raw_response`` then hands the caller the recorded bytes, not a re-encoding.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from openai import OpenAI

import cassette
from cassette.seam.transport import body_bytes, body_record

VALUE: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Café — refund of 12.50 € issued", "refusal": None},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16, "score": 4.5e-05},
    "empty": {},
    "none": [],
}

# the layouts servers write: orjson/FastAPI compact, Python's default, OpenAI's indent, escapes
LAYOUTS: dict[str, tuple[bytes, str | None]] = {
    "orjson compact": (orjson.dumps(VALUE), None),
    "python spaced": (json.dumps(VALUE, ensure_ascii=False).encode(), "spaced"),
    "python spaced, ascii": (json.dumps(VALUE).encode(), "spaced+ascii"),
    "python compact (1e-05, not 1e-5)": (
        json.dumps(VALUE, ensure_ascii=False, separators=(",", ":")).encode(),
        "compact",
    ),
    "indent 2 and a newline (OpenAI's, written by orjson)": (
        orjson.dumps(VALUE, option=orjson.OPT_INDENT_2) + b"\n",
        "indent2+newline",
    ),
    "indent 2 by Python's json (4.5e-05, not 4.5e-5)": (
        (json.dumps(VALUE, ensure_ascii=False, indent=2) + "\n").encode(),
        "indent2+newline+py",
    ),
    "indent 4, ascii": (json.dumps(VALUE, indent=4).encode(), "indent4+ascii"),
    "compact and a newline": (
        json.dumps(VALUE, ensure_ascii=False, separators=(",", ":")).encode() + b"\n",
        "compact+newline",
    ),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_each_layout_is_named_and_rebuilt_byte_for_byte(name: str) -> None:
    body, layout = LAYOUTS[name]
    record = body_record("application/json", body)
    assert record["json"] == VALUE
    assert record.get("json_layout") == layout
    assert body_bytes(record) == body


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": 1,  "b": 2}',  # two spaces once: no layout writes it
        b'{"a":1.50}',  # a float written with a trailing zero
        b'{\n\t"a": 1\n}',  # tabs
    ],
)
def test_a_layout_none_rebuilds_replays_compact_with_the_same_value(body: bytes) -> None:
    record = body_record("application/json", body)
    assert "json_layout" not in record
    assert orjson.loads(body_bytes(record)) == orjson.loads(body)


class _Server(ThreadingHTTPServer):
    body = b""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize(
    "name", ["indent 2 and a newline (OpenAI's, written by orjson)", "python spaced, ascii", "orjson compact"]
)
def test_with_raw_response_replays_the_recorded_bytes(name: str, server: _Server, tmp_path: Path) -> None:
    server.body = LAYOUTS[name][0]
    client = cassette.instrument(
        OpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="sk-test", max_retries=0)
    )
    path = tmp_path / "layout.json"

    def call() -> tuple[bytes, str, str | None]:
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "refund?"}]
        )
        completion = raw.parse()
        return (
            raw.http_response.content,
            completion.choices[0].message.content or "",
            raw.headers.get("content-length"),
        )

    with cassette.using(path, mode="record"):
        live = call()
    server.shutdown()  # replay must not need it
    with cassette.using(path, mode="replay"):
        replayed = call()
    assert replayed == live
    assert live[0] == LAYOUTS[name][0] and live[1].startswith("Café")
    # the manifest keeps the parsed body, readable, with the layout beside it
    response = json.loads(path.read_text())["interactions"][0]["response"]
    assert response.get("json_layout") == LAYOUTS[name][1]


def test_an_imported_openai_cassette_replays_openais_own_bytes(tmp_path: Path) -> None:
    """A real vcrpy cassette of api.openai.com (indent 2, final newline) imports with its layout,
    and ``with_raw_response`` hands back the bytes OpenAI sent."""
    import yaml

    from cassette.importers import import_vcr

    source = Path(__file__).parent / "data" / "thirdparty" / "openinference_empty_headers.yaml"
    sent = yaml.safe_load(source.read_text())["interactions"][0]["response"]["body"]["string"].encode()
    import_vcr(source, tmp_path / "imported.json")
    response = json.loads((tmp_path / "imported.json").read_text())["interactions"][0]["response"]
    assert response["json_layout"] == "indent2+newline"
    client = cassette.instrument(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-replay", max_retries=0))
    with cassette.using(tmp_path / "imported.json", mode="replay"):
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-2024-08-06",
            messages=[{"name": "user", "role": "user", "content": "What is the capital of France?"}],
            stream=False,
        )
    assert raw.http_response.content == sent
    assert raw.parse().choices[0].message.content == "The capital of France is Paris."
