"""Real-world cassette shapes, each rebuilt here with invented content, imported and replayed offline.

Every fixture reproduces the *structure* of a cassette kind found in public repositories
(pydantic-ai, langchain, crewAI, litellm, ruby-openai, cassetter) — serializer quirks, header
spelling, body encodings — never their text. Each one is imported with `import_vcr` and then
replayed through the real OpenAI / Anthropic SDK (or a plain instrumented client) pointed at a
port where nothing listens: the imported interaction must be served, i.e. our key for the
recorded request equals the key of the live call that sends the same body.
"""

# The fixtures are recorder output: one JSON body per line, as the recorders write them.
# ruff: noqa: E501

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

import cassette
from cassette import CassetteImportError, ImportReport
from cassette.cli import main
from cassette.importers import import_cendor, import_vcr
from cassette.seam.transport import body_bytes

DEAD = "http://127.0.0.1:9"  # nothing listens: replay must not need the network


def _openai(base: str = "/v1") -> Any:
    from openai import OpenAI

    return cassette.instrument(OpenAI(base_url=DEAD + base, api_key="sk-replay", max_retries=0))


def _anthropic() -> Any:
    from anthropic import Anthropic

    return cassette.instrument(Anthropic(base_url=DEAD, api_key="replay", max_retries=0))


def _import(text: str | bytes, name: str = "recorded.yaml", **kwargs: Any) -> ImportReport:
    source = Path("third_party") / name
    source.parent.mkdir(exist_ok=True)
    if isinstance(text, str):
        source.write_text(textwrap.dedent(text))
    else:
        source.write_bytes(text)
    return import_vcr(source, "imported.json", **kwargs)


def _replaying() -> Any:
    return cassette.using("imported.json", mode="replay", unused="error", check_order="error")


def _chat(content: str, model: str = "gpt-4o-mini", created: int = 1) -> str:
    return json.dumps(
        {
            "id": f"chatcmpl-{created}",
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
        }
    )


# --- vcrpy's default YAML serializer -----------------------------------------------------------------


def test_folded_request_body_and_a_pretty_printed_json_response() -> None:
    """crewAI: a long body folded over lines in single quotes ('' for '), SDK headers, placeholders."""
    report = _import(
        """\
        interactions:
        - request:
            body: '{"messages":[{"role":"user","content":"Classify the ticket: the customer''s
              card was charged twice"}],"model":"gpt-4o-mini","response_format":{"type":"json_schema","json_schema":{"name":"Label","strict":true,"schema":{"type":"object","properties":{"label":{"type":"string"}},"required":["label"],"additionalProperties":false}}},"stream":false}'
            headers:
              User-Agent:
              - X-USER-AGENT-XXX
              authorization:
              - AUTHORIZATION-XXX
              content-type:
              - application/json
              x-stainless-helper-method:
              - beta.chat.completions.parse
            method: POST
            uri: https://api.openai.com/v1/chat/completions
          response:
            body:
              string: "{\\n  \\"id\\": \\"chatcmpl-9\\",\\n  \\"object\\":
                \\"chat.completion\\",\\n  \\"created\\": 9,\\n  \\"model\\": \\"gpt-4o-mini\\",\\n
                \\ \\"choices\\": [\\n    {\\n      \\"index\\": 0,\\n      \\"message\\": {\\"role\\":
                \\"assistant\\", \\"content\\": \\"{\\\\\\"label\\\\\\":\\\\\\"billing\\\\\\"}\\"},\\n
                \\     \\"finish_reason\\": \\"stop\\"\\n    }\\n  ]\\n}\\n"
            headers:
              Content-Type:
              - application/json
              Set-Cookie:
              - SET-COOKIE-XXX
            status:
              code: 200
              message: OK
        version: 1
        """
    )
    assert report.kinds == {"llm": 1} and report.notes == [] and report.format == "vcrpy yaml"
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"],
        "additionalProperties": False,
    }
    with _replaying():
        reply = _openai().chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "user", "content": "Classify the ticket: the customer's card was charged twice"}
            ],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Label", "strict": True, "schema": schema},
            },
            stream=False,
        )
    assert json.loads(reply.choices[0].message.content) == {"label": "billing"}


def test_gzip_binary_response_with_mixed_case_headers() -> None:
    """crewAI: Anthropic response gzip bytes as !!binary, Content-Encoding kept, header names in any case."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "SUCCESS"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    packed = base64.encodebytes(gzip.compress(json.dumps(message).encode())).decode()
    report = _import(
        textwrap.dedent(
            """\
            interactions:
            - request:
                body: '{"max_tokens":64,"messages":[{"role":"user","content":"Reply with just
                  the word: SUCCESS"}],"model":"claude-haiku-4-5","stream":false}'
                headers:
                  anthropic-version:
                  - '2023-06-01'
                  content-type:
                  - application/json
                method: POST
                uri: https://api.anthropic.com/v1/messages
              response:
                body:
                  string: !!binary |
            """
        )
        + textwrap.indent(packed, " " * 8)
        + textwrap.dedent(
            """\
                headers:
                  CF-RAY:
                  - 0000-XXX
                  Content-Encoding:
                  - gzip
                  Content-Type:
                  - application/json
                  Transfer-Encoding:
                  - chunked
                  anthropic-ratelimit-requests-remaining:
                  - '99'
                status:
                  code: 200
                  message: OK
            version: 1
            """
        )
    )
    recorded = cassette.load_cassette("imported.json").interactions[0].response
    assert "content-encoding" not in recorded["headers"] and recorded["json"]["id"] == "msg_1"
    assert report.kinds == {"llm": 1}
    with _replaying():
        reply = _anthropic().messages.create(
            model="claude-haiku-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": "Reply with just the word: SUCCESS"}],
            stream=False,
        )
    assert reply.content[0].text == "SUCCESS"


def test_a_plain_body_left_with_a_content_encoding_header_and_non_llm_calls_between() -> None:
    """crewAI: decode_compressed_response left `Content-Encoding: gzip` on plain text; telemetry in between."""
    embedding = {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": "AAAAAAAAgD8="}],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 2, "total_tokens": 2},
    }
    body = json.dumps(embedding, indent=2)
    _import(
        f"""\
        interactions:
        - request:
            body: '{{"input": ["refund policy"], "model": "text-embedding-3-small", "encoding_format":
              "base64"}}'
            headers:
              content-type:
              - application/json
            method: POST
            uri: https://api.openai.com/v1/embeddings
          response:
            body:
              string: {json.dumps(body)}
            headers:
              Content-Encoding:
              - gzip
              Content-Type:
              - application/json
            status:
              code: 200
              message: OK
        - request:
            body: '{{"batch": [{{"event": "init"}}], "api_key": "phc_invented"}}'
            headers:
              Content-Type:
              - application/json
            method: POST
            uri: https://telemetry.example.com/batch/
          response:
            body:
              string: '{{"status":"Ok"}}'
            headers:
              Content-Type:
              - application/json
            status:
              code: 200
              message: OK
        version: 1
        """
    )
    with _replaying():
        vectors = _openai().embeddings.create(
            model="text-embedding-3-small", input=["refund policy"], encoding_format="base64"
        )
        sent = cassette.http_client().post(
            "https://telemetry.example.com/batch/",
            content=b'{"batch": [{"event": "init"}], "api_key": "phc_invented"}',
            headers={"content-type": "application/json"},
        )
    assert vectors.data[0].embedding == "AAAAAAAAgD8=" and sent.json() == {"status": "Ok"}


# --- serializer variants ---------------------------------------------------------------------------------


def test_pydantic_ai_parsed_body_tools_and_a_literal_block_event_stream() -> None:
    """pydantic-ai: parsed_body on both sides, `|+` block-scalar SSE, `...` document end, multi-line cookie."""
    report = _import(
        """\
        interactions:
        - request:
            headers:
              content-type:
              - application/json
              cookie:
              - __cf_bm=invented-cookie-value-one;
                _cfuvid=invented-cookie-value-two
            method: POST
            parsed_body:
              messages:
              - content: Which warehouse ships order A1?
                role: user
              model: gpt-4o
              stream: false
              tool_choice: required
              tools:
              - function:
                  description: ''
                  name: lookup_order
                  parameters:
                    additionalProperties: false
                    properties:
                      order_id:
                        type: string
                    required:
                    - order_id
                    type: object
                  strict: true
                type: function
            uri: https://api.openai.com/v1/chat/completions
          response:
            headers:
              content-type:
              - application/json
            parsed_body:
              choices:
              - finish_reason: tool_calls
                index: 0
                message:
                  content: null
                  role: assistant
                  tool_calls:
                  - function:
                      arguments: '{"order_id": "A1"}'
                      name: lookup_order
                    id: call_1
                    type: function
              created: 1
              id: chatcmpl-1
              model: gpt-4o
              object: chat.completion
            status:
              code: 200
              message: OK
        - request:
            headers:
              content-type:
              - application/json
            method: POST
            parsed_body:
              messages:
              - content: Which warehouse ships order A1?
                role: user
              model: gpt-4o
              stream: true
              stream_options:
                include_usage: true
            uri: https://api.openai.com/v1/chat/completions
          response:
            body:
              string: |+
                data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":2,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Rotterdam"},"finish_reason":null}]}

                data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":2,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

                data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":2,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}

                data: [DONE]

            headers:
              content-type:
              - text/event-stream; charset=utf-8
            status:
              code: 200
              message: OK
        version: 1
        ...
        """
    )
    assert report.kinds == {"llm": 2}
    streamed = cassette.load_cassette("imported.json")
    assert streamed.hydrate(streamed.interactions[1].response)["events"][-1] == "data: [DONE]"
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "",
                "strict": True,
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": {"type": "string"}},
                    "required": ["order_id"],
                    "additionalProperties": False,
                },
            },
        }
    ]
    question = [{"role": "user", "content": "Which warehouse ships order A1?"}]
    client = _openai()
    with _replaying():
        call = client.chat.completions.create(
            model="gpt-4o", messages=question, tools=tools, tool_choice="required", stream=False
        )
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o", messages=question, stream=True, stream_options={"include_usage": True}
            )
        )
    assert call.choices[0].message.tool_calls[0].function.name == "lookup_order"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Rotterdam"
    assert chunks[-1].usage.total_tokens == 10


def test_langchain_gzipped_yaml_with_parallel_requests_and_responses() -> None:
    """langchain's CustomSerializer: yaml.safe_dump of {requests, responses} (bodies as !!binary), gzipped."""
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "gpt-4o-mini",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "pong", "annotations": []}],
            }
        ],
    }
    document = {
        "requests": [
            {
                "method": "POST",
                "uri": "https://api.openai.com/v1/responses",
                "body": json.dumps({"input": "ping", "model": "gpt-4o-mini"}).encode(),
                "headers": {"authorization": ["PLACEHOLDER"], "content-type": ["application/json"]},
            }
        ],
        "responses": [
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["application/json"]},
                "body": {"string": json.dumps(response).encode()},
            }
        ],
    }
    text = yaml.safe_dump(document)
    assert "!!binary" in text
    report = _import(gzip.compress(text.encode()), "TestResponses.test_invoke.yaml.gz")
    assert report.format == "vcrpy yaml, gzipped (requests/responses lists)" and report.kinds == {"llm": 1}
    with _replaying():
        assert _openai().responses.create(model="gpt-4o-mini", input="ping").output_text == "pong"

    document["responses"].append(document["responses"][0])
    with pytest.raises(CassetteImportError, match="1 requests but 2 responses"):
        _import(gzip.compress(yaml.safe_dump(document).encode()), "uneven.yaml.gz")


def test_an_event_stream_whose_headers_were_all_filtered() -> None:
    """langchain: `headers: {}` on a streamed Anthropic reply; the body is a double-quoted folded scalar."""
    report = _import(
        r"""
        interactions:
        - request:
            body: '{"max_tokens":256,"messages":[{"role":"user","content":"Name a cat."}],"model":"claude-haiku-4-5","stream":true}'
            headers:
              anthropic-version:
              - '2023-06-01'
              x-api-key:
              - PLACEHOLDER
            method: POST
            uri: https://api.anthropic.com/v1/messages
          response:
            body:
              string: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}
                \    }\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent:
                ping\ndata: {\"type\": \"ping\"}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Whiskers
                \\u2013 a tabby\"}  }\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent:
                message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":4}}\n\nevent:
                message_stop\ndata: {\"type\":\"message_stop\"    }\n\n"
            headers: {}
            status:
              code: 200
              message: OK
        version: 1
        """
    )
    assert [m for _, m in report.notes] == [report.notes[0][1]] and "event stream" in report.notes[0][1]
    recorded = cassette.load_cassette("imported.json")
    assert len(recorded.hydrate(recorded.interactions[0].response)["events"]) == 7
    with _replaying():
        stream = _anthropic().messages.create(
            model="claude-haiku-4-5",
            max_tokens=256,
            messages=[{"role": "user", "content": "Name a cat."}],
            stream=True,
        )
        text = "".join(e.delta.text for e in stream if e.type == "content_block_delta")
    assert text == "Whiskers – a tabby"


def test_a_single_quoted_event_stream_and_a_text_block_list() -> None:
    """litellm: SSE kept in a single-quoted scalar (blank lines as line breaks), content as a block list."""
    _import(
        """\
        interactions:
        - request:
            body: '{"model": "claude-haiku-4-5", "messages": [{"role": "user", "content":
              [{"type": "text", "text": "Hello!"}]}], "max_tokens": 128, "stream": true}'
            headers:
              Content-Type:
              - application/json
              User-Agent:
              - litellm/1.0
            method: POST
            uri: https://api.anthropic.com/v1/messages
          response:
            body:
              string: 'event: message_start

                data: {"type": "message_start", "message": {"id": "msg_3", "type": "message",
                "role": "assistant", "model": "claude-haiku-4-5", "content": [], "stop_reason":
                null, "stop_sequence": null, "usage": {"input_tokens": 4, "output_tokens": 1}}}


                event: content_block_start

                data: {"type": "content_block_start", "index": 0, "content_block": {"type":
                "text", "text": ""}}


                event: content_block_delta

                data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta",
                "text": "Hi there"}}


                event: content_block_stop

                data: {"type": "content_block_stop", "index": 0}


                event: message_stop

                data: {"type": "message_stop"}


                '
            headers:
              Content-Type:
              - text/event-stream
            status:
              code: 200
              message: OK
        version: 1
        """
    )
    with _replaying():
        stream = _anthropic().messages.create(
            model="claude-haiku-4-5",
            max_tokens=128,
            messages=[{"role": "user", "content": "Hello!"}],
            stream=True,
        )
        assert "".join(e.delta.text for e in stream if e.type == "content_block_delta") == "Hi there"


# --- other recorders ---------------------------------------------------------------------------------


def test_ruby_vcr_http_interactions_with_a_ruby_binary_stream() -> None:
    """ruby-openai: `http_interactions`, lower-case method, body {encoding, string}, `!binary` SSE body."""
    events = [
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-chat",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello 😊"}, "finish_reason": None}]},
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-chat",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]  # fmt: skip
    stream = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    report = _import(
        f"""\
        ---
        http_interactions:
        - request:
            method: post
            uri: https://api.deepseek.example/v1/chat/completions
            body:
              encoding: UTF-8
              string: '{{"model":"deepseek-chat","messages":[{{"role":"user","content":"Hello!"}}],"stream":true}}'
            headers:
              Content-Type:
              - application/json
              Authorization:
              - Bearer <OPENAI_ACCESS_TOKEN>
          response:
            status:
              code: 200
              message: OK
            headers:
              Content-Type:
              - text/event-stream; charset=utf-8
              Set-Cookie:
              - a=1; path=/
              - b=2; path=/
            body:
              encoding: ASCII-8BIT
              string: !binary |-
                {base64.b64encode(stream.encode()).decode()}
          recorded_at: Fri, 14 Mar 2025 14:01:56 GMT
        recorded_with: VCR 6.1.0
        """,
        "streamed_chat.yml",
    )
    assert report.format == "ruby vcr yaml" and report.kinds == {"llm": 1}
    with _replaying():
        chunks = _openai().chat.completions.create(
            model="deepseek-chat", messages=[{"role": "user", "content": "Hello!"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello 😊"


def test_cassetter_typed_bodies_integer_status_and_unquoted_timestamps() -> None:
    """cassetter (pydantic-ai today): body {type: json, content}, `status: 404`, `recorded_at` unquoted."""
    report = _import(
        """\
        version: 1
        interactions:
        - request:
            method: POST
            uri: https://api.anthropic.com/v1/messages/count_tokens?beta=true
            headers:
              content-type:
              - application/json
            body:
              type: json
              content:
                messages:
                - content:
                  - text: hello
                    type: text
                  role: user
                model: claude-does-not-exist
                labels:
                  created: 2026-01-01
                  flag: on
          response:
            status: 404
            headers:
              content-type:
              - application/json
            body:
              type: json
              content:
                error:
                  message: 'model: claude-does-not-exist'
                  type: not_found_error
                type: error
          recorded_at: 2026-03-06T19:26:02.829948+00:00
        - request:
            method: POST
            uri: https://api.openai.com/v1/chat/completions
            body:
              type: json
              content:
                model: gpt-4o
                messages:
                - role: user
                  content: Hello!
          response:
            status: 200
            body:
              type: json
              content:
                id: chatcmpl-abc
                object: chat.completion
                created: 1
                model: gpt-4o
                choices:
                - index: 0
                  finish_reason: stop
                  message:
                    role: assistant
                    content: Hi there!
        """
    )
    assert report.format == "cassetter yaml" and report.kinds == {"llm": 2}
    first = cassette.load_cassette("imported.json").interactions[0].request
    assert first["labels"] == {"created": "2026-01-01", "flag": "on"}  # read as text, not date / bool
    from anthropic import NotFoundError

    with _replaying():
        with pytest.raises(NotFoundError, match="claude-does-not-exist"):
            _anthropic().beta.messages.count_tokens(
                model="claude-does-not-exist",
                messages=[{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
                extra_body={"labels": {"created": "2026-01-01", "flag": "on"}},
            )
        reply = _openai().chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Hello!"}]
        )
    assert reply.choices[0].message.content == "Hi there!"


def test_cassetter_text_binary_none_bodies_toml_and_other_protocols() -> None:
    """cassetter's conformance shapes: text / hex binary / none bodies; gRPC and WebSocket are listed."""
    report = _import(
        """\
        version: 1
        interactions:
        - request:
            method: PUT
            uri: https://files.example.com/blob
            headers: {}
            body:
              type: binary
              content: deadbeef00ff
          response:
            status: 201
            headers:
              content-type:
              - text/plain
            body:
              type: text
              content: "caf\\xE9 ✓"
        - request:
            method: GET
            uri: https://files.example.com/blob
            body:
              type: none
          response:
            status: 200
            headers:
              content-type:
              - application/octet-stream
            body:
              type: binary
              content: '00010203'
        grpc_interactions:
        - request:
            method: /demo.Greeter/SayHello
            body:
              type: binary
              content: 0a0568656c6c6f
          response:
            status_code: 0
        ws_interactions:
        - uri: wss://ws.example.com/stream
          frames: []
        """
    )
    assert [w for w, _ in report.skipped] == ["grpc_interactions 0", "ws_interactions 0"]
    with _replaying():
        client = cassette.http_client()
        put = client.put("https://files.example.com/blob", content=bytes.fromhex("deadbeef00ff"))
        got = client.get("https://files.example.com/blob")
    assert (put.status_code, put.text, got.content) == (201, "café ✓", b"\x00\x01\x02\x03")

    report = _import(
        """\
        version = 1

        [[interactions]]
        recorded_at = "2026-02-20T10:30:01Z"

        [interactions.request]
        method = "POST"
        uri = "https://api.openai.com/v1/chat/completions"
        body_type = "json"
        body_content = '{"model":"gpt-4o","messages":[{"role":"user","content":"Hello!"}],"seed":null}'

        [interactions.response]
        status = 200
        body_type = "json"
        body_content = '{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hi!"}}]}'
        """,
        "chat.toml",
        overwrite=True,
    )
    assert report.format == "cassetter toml"
    with _replaying():
        reply = _openai().chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Hello!"}], seed=None
        )
    assert reply.choices[0].message.content == "Hi!"


# --- providers and endpoints -------------------------------------------------------------------------


def test_azure_deployment_urls_responses_api_and_a_content_filter_stream() -> None:
    """crewAI: Azure deployment path + api-version (no model in the body), Azure Responses API."""
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    stream = "\n\n\n".join(
        "data: " + json.dumps(part)
        for part in [
            {"choices": [], "created": 0, "id": "", "model": "", "object": "",
             "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]},
            {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello"}}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
    ) + "\n\n\ndata: [DONE]\n\n\n"  # fmt: skip
    response = {
        "id": "resp_9",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "gpt-5.2-chat",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "Hello! \U0001f60a", "annotations": []}]},
        ],
    }  # fmt: skip
    _import(
        f"""\
        interactions:
        - request:
            body: '{{"messages": [{{"role": "user", "content": "Say hello"}}], "stream": true,
              "stream_options": {{"include_usage": true}}}}'
            headers:
              Content-Type:
              - application/json
              api-key:
              - X-API-KEY-XXX
            method: POST
            uri: https://example-resource.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-08-01-preview
          response:
            body:
              string: {json.dumps(stream)}
            headers:
              Content-Type:
              - text/event-stream; charset=utf-8
            status:
              code: 200
              message: OK
        - request:
            body: '{{"input":[{{"role":"user","content":"Say hello in one sentence."}}],"model":"gpt-5.2-chat"}}'
            headers:
              content-type:
              - application/json
            method: POST
            uri: https://example-resource.openai.azure.com/openai/v1/responses
          response:
            body:
              string: {json.dumps(json.dumps(response, indent=2))}
            headers:
              Content-Type:
              - application/json
            status:
              code: 200
              message: OK
        version: 1
        """
    )
    from openai import AzureOpenAI

    azure = cassette.instrument(
        AzureOpenAI(azure_endpoint=DEAD, api_key="replay", api_version="2024-08-01-preview", max_retries=0)
    )
    with _replaying():
        chunks = azure.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Say hello"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        reply = _openai("/openai/v1").responses.create(
            model="gpt-5.2-chat", input=[{"role": "user", "content": "Say hello in one sentence."}]
        )
    assert text == "Hello" and reply.output_text == "Hello! 😊"


def test_gemini_sse_binary_downloads_and_other_http_stay_http() -> None:
    """pydantic-ai / crewAI: Gemini `?alt=sse` (CRLF events, an llm call), a GET with `body: ''` returning image bytes."""
    image = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01"
    event = {
        "candidates": [{"content": {"parts": [{"text": "Paris"}], "role": "model"}, "finishReason": "STOP"}]
    }
    report = _import(
        f"""\
        interactions:
        - request:
            headers:
              content-type:
              - application/json
            method: POST
            parsed_body:
              contents:
              - parts:
                - text: Capital of France?
                role: user
              generationConfig:
                temperature: 0.0
            uri: https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse
          response:
            body:
              string: {json.dumps("data: " + json.dumps(event) + chr(13) + chr(10) * 1 + chr(13) + chr(10))}
            headers:
              content-type:
              - text/event-stream
            status:
              code: 200
              message: OK
        - request:
            body: ''
            headers:
              accept:
              - '*/*'
            method: GET
            uri: https://images.example.com/jpg/cat.jpg
          response:
            body:
              string: !!binary |
                {base64.b64encode(image).decode()}
            headers:
              content-type:
              - image/jpeg
            status:
              code: 200
              message: OK
        - request:
            body: '{{"messages": [{{"role": "user", "content": [{{"text": "Say hello"}}]}}]}}'
            headers:
              Content-Type:
              - application/json
            method: POST
            uri: https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A0/converse
          response:
            body:
              string: '{{"output":{{"message":{{"content":[{{"text":"Hello!"}}],"role":"assistant"}}}}}}'
            headers:
              Content-Type:
              - application/json
            status:
              code: 200
              message: OK
        version: 1
        """
    )
    assert report.kinds == {
        "llm": 2,
        "http": 1,
    }  # the Gemini and the Bedrock Converse calls are their providers'
    recorded = cassette.load_cassette("imported.json")
    assert len(recorded.hydrate(recorded.interactions[0].response)["events"]) == 1
    assert recorded.interactions[2].request["model"] == "anthropic.claude-v2:0"
    with _replaying():
        client = cassette.http_client()
        sse = client.post(
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            params={"alt": "sse"},
            json={"contents": [{"parts": [{"text": "Capital of France?"}], "role": "user"}],
                  "generationConfig": {"temperature": 0.0}},
        )  # fmt: skip
        jpeg = client.get("https://images.example.com/jpg/cat.jpg")
        converse = client.post(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A0/converse",
            json={"messages": [{"role": "user", "content": [{"text": "Say hello"}]}]},
        )
    assert json.loads(sse.text.strip()[len("data: ") :]) == event
    assert jpeg.content == image and converse.json()["output"]["message"]["content"][0]["text"] == "Hello!"


def test_anchors_redirects_repeats_null_bodies_and_default_ports() -> None:
    """PyYAML anchors/aliases, a 301 hop then its target, the same request twice (FIFO), `body: null`."""
    report = _import(
        """\
        interactions:
        - request:
            body: null
            headers: &id001
              Accept: ['*/*']
            method: GET
            uri: https://docs.example.com:443/old
          response:
            body: {string: ''}
            headers:
              Location: [https://docs.example.com/new]
            status: {code: 301, message: Moved Permanently}
        - request:
            body: null
            headers: *id001
            method: GET
            uri: https://docs.example.com/new
          response:
            body: {string: !!python/unicode 'moved here'}
            headers:
              Content-Type: [text/plain]
            status: {code: 200, message: OK}
        - request: &same
            body: '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "again"}]}'
            headers: {Content-Type: [application/json]}
            method: POST
            uri: https://api.openai.com/v1/chat/completions
          response:
            body: {string: '{"error": {"message": "slow down", "type": "rate_limit_error"}}'}
            headers: {Content-Type: [application/json]}
            status: {code: 429, message: Too Many Requests}
        - request: *same
          response:
            body: {string: 'REPLY'}
            headers: {Content-Type: [application/json]}
            status: {code: 200, message: OK}
        version: 1
        """.replace("'REPLY'", repr(_chat("second"))),
    )
    assert report.kinds == {"http": 2, "llm": 2}
    from openai import RateLimitError

    with _replaying():
        page = cassette.http_client(follow_redirects=True).get("https://docs.example.com/old")
        client = _openai()
        with pytest.raises(RateLimitError, match="slow down"):
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "again"}]
            )
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "again"}]
        )
    assert page.text == "moved here" and [r.status_code for r in page.history] == [301]
    assert reply.choices[0].message.content == "second"


# --- what cannot be read is said, per file and per interaction -------------------------------------------


def test_unreadable_interactions_are_listed_one_by_one() -> None:
    source = """\
        interactions:
        - request: {method: POST, uri: 'https://x.example/a', body: {type: binary, content: not-hex}}
          response: {status: 200, body: {type: none}}
        - request: {uri: 'https://x.example/b'}
          response: {status: {code: 200}}
        - request: {method: GET, uri: 'https://x.example/c'}
          response: {status: {code: OK}}
        - request: {method: GET, uri: 'https://x.example/d'}
          response: {status: 200, headers: {content-encoding: [gzip]}, body: {string: !!binary //79}}
        - request: {method: GET, uri: 'https://x.example/e'}
          response: {status: 200, body: {string: 'fine'}}
        - request: {method: GET, uri: 'https://x.example/f'}
          response: {status: 200, headers: {content-encoding: [zstd]}, body: {string: !!binary KLUv/Q==}}
        - request: {method: GET, uri: 'https://x.example/g'}
          response: {status: 200, headers: {Content-Encoding: [br]}, body: {string: '{"stale": "header"}'}}
        version: 1
        """
    with pytest.raises(CassetteImportError) as info:
        _import(source)
    message = str(info.value)
    assert "5 interactions cannot be read, so nothing was written" in message
    assert "interaction 0: non-hexadecimal number" in message
    assert "interaction 1: the request needs string `method` and `uri`" in message
    assert "interaction 2: the response needs an integer status code" in message
    assert "interaction 3: the body does not decode as gzip" in message
    if importlib.util.find_spec("zstandard") is None:
        assert "interaction 5: the body is zstd-compressed; pip install zstandard to import it" in message
    else:
        assert "interaction 5: ZstdError" in message
    assert not Path("imported.json").exists()
    report = _import(source, skip_bad=True)
    assert report.interactions == 2 and [w for w, _ in report.skipped] == [
        f"interaction {i}" for i in (0, 1, 2, 3, 5)
    ]
    stale = cassette.load_cassette("imported.json").interactions[1].response
    # decoded by the recorder, header left behind; JSON with no content type reads back byte for byte
    assert stale["json"] == {"stale": "header"} and body_bytes(stale) == b'{"stale": "header"}'


def test_files_that_are_not_vcrpy_cassettes_say_what_they_are() -> None:
    Path("ours.json").write_text(
        json.dumps(
            {
                "version": 1,
                "interactions": [{"seq": 0, "kind": "http", "key": "k", "request": {}, "response": {}}],
            }
        )
    )
    Path("cendor.json").write_text(json.dumps({"version": 2, "entries": []}))
    Path("vcr.yaml").write_text("interactions: []\nversion: 1\n")
    Path("tagged.yaml").write_text("interactions:\n- !!python/object:vcr.request.Request {}\n")
    cases = [
        (
            lambda: import_vcr("ours.json", "x.json"),
            "is already a cassette (format version 1): there is nothing",
        ),
        (lambda: import_cendor("ours.json", "x.json"), "is already a cassette"),
        (
            lambda: import_vcr("cendor.json", "x.json"),
            "run `cassette import cendor cendor.json --to NEW.json`",
        ),
        (lambda: import_cendor("vcr.yaml", "x.json"), "run `cassette import vcr vcr.yaml --to NEW.json`"),
        (lambda: import_vcr("tagged.yaml", "x.json"), "uses a YAML tag the importer does not read"),
    ]
    for call, expected in cases:
        with pytest.raises(CassetteImportError, match=expected.replace("(", r"\(").replace(")", r"\)")):
            call()


_OTHER_TOOLS = [
    ("vcr.yaml", b"interactions:\n- request: {method: GET, uri: 'https://x'}\nversion: 1\n", "vcr"),
    ("commented.yaml", b"# recorded by pytest-recording\n---\ninteractions: []\n", "vcr"),
    ("ruby.yml", b"---\nhttp_interactions: []\nrecorded_with: VCR 6.1.0\n", "vcr"),
    ("cassetter.toml", b"version = 1\n\n[[interactions]]\n", "vcr"),
    ("lc.yaml.gz", gzip.compress(b"requests: []\nresponses: []\n", mtime=0), "vcr"),
    (
        "vcr.json",
        b'{"interactions": [{"request": {"uri": "https://x", "method": "GET"}}], "version": 1}',
        "vcr",
    ),
    ("ruby.json", b'{"http_interactions": [], "recorded_with": "rVCR 0.1.5"}', "vcr"),
    ("cendor1.json", b'{"version": 1, "entries": []}', "cendor"),
    ("cendor2.json", b'{"version": 2, "entries": []}', "cendor"),
]


@pytest.mark.parametrize(("name", "content", "command"), _OTHER_TOOLS, ids=[c[0] for c in _OTHER_TOOLS])
def test_replaying_another_tools_file_names_the_import_command(
    name: str, content: bytes, command: str
) -> None:
    Path(name).write_bytes(content)
    with pytest.raises(cassette.CassetteShapeError) as info:
        with cassette.using(name, mode="replay"):
            pass
    message = str(info.value)
    assert message.startswith(str(Path(info.value.path or "")))
    assert re.search(rf"`cassette import {command} \S*{re.escape(name)} --to NEW\.json`", message)


def test_cli_imports_a_mixed_tree_and_names_each_file_it_cannot_convert(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = Path("legacy")
    (tree / "test_models").mkdir(parents=True)
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    plain = yaml.safe_dump(
        {
            "interactions": [
                {
                    "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                                "body": json.dumps(chat), "headers": {}},
                    "response": {"status": {"code": 200, "message": "OK"},
                                 "headers": {"Content-Type": ["application/json"]}, "body": {"string": _chat("hey")}},
                }
            ],
            "version": 1,
        }
    )  # fmt: skip
    (tree / "test_models" / "test_chat.yaml").write_text(plain)
    (tree / "test_models" / "test_chat_gz.yaml.gz").write_bytes(gzip.compress(plain.encode()))
    (tree / "test_models" / "test_broken.yaml").write_text("interactions: [\n")
    assert main(["import", "pytest-recording", str(tree), "--to", "tests/cassettes"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("1 interaction (1 llm)") == 2
    assert (
        "test_broken.yaml is not valid YAML" in captured.err and "1 of 3 files not converted" in captured.err
    )
    for name in ("test_chat", "test_chat_gz"):
        with cassette.using(f"tests/cassettes/test_models/{name}.json", mode="replay", unused="error"):
            reply = _openai().chat.completions.create(**chat)
        assert reply.choices[0].message.content == "hey"

    (tree / "test_models" / "test_chat.yml").write_text(plain)
    assert main(["import", "vcr", str(tree), "--to", "elsewhere", "--force"]) == 2
    assert "several files would become the same cassette" in capsys.readouterr().err


def test_a_windows_edited_cassette_with_a_byte_order_mark_and_crlf_lines() -> None:
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "a folded\nquestion"}]}
    text = yaml.safe_dump(
        {
            "interactions": [
                {
                    "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                                "body": json.dumps(chat), "headers": {"Content-Type": ["application/json"]}},
                    "response": {"status": {"code": 200, "message": "OK"},
                                 "headers": {"Content-Type": ["application/json"]}, "body": {"string": _chat("ok")}},
                }
            ],
            "version": 1,
        },
        width=40,
    )  # fmt: skip
    _import(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    with _replaying():
        assert _openai().chat.completions.create(**chat).choices[0].message.content == "ok"
    Path("bom.yaml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    with pytest.raises(cassette.CassetteShapeError, match="cassette import vcr"):
        with cassette.using("bom.yaml", mode="replay"):
            pass
