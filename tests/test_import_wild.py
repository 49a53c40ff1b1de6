"""Recorder shapes found in public repositories, rebuilt around their quirk and replayed through the SDKs.

- weave (wandb/weave: tests/integrations/openai/test_openai_images.py) patches vcrpy's httpx stub to
  store every request body as base64 text and adds an ``X-VCR-Body-Base64: true`` request header that
  never went over the wire (tests/integrations/openai/cassettes/test_openai_images/*.yaml).
- cendor-core (cendorhq/cendor-libs: packages/cendor-core/src/cendor/core/instrument.py) records
  ``responses.create`` as well as ``chat.completions.create``, with ``provider: "openai"`` and the
  call's ``input`` under ``messages``; cendor-cassette 1.1.1 adds ``response_type: "envelope"`` for a
  ``with_raw_response`` call, whose ``response`` is the decoded HTTP body.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import CassetteImportError
from cassette.importers import import_cendor, import_vcr

DEAD = "http://127.0.0.1:9"  # nothing listens: replay must not need the network

# a 1x1 PNG, the upload
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNg+M8AAAICAQB7CYF4AAAAAElFTkSuQmCC"
)
EDITED = {
    "created": 1750925034,
    "data": [{"b64_json": "aGVsbG8="}],
    "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30},
}


def _openai() -> Any:
    from openai import OpenAI

    return cassette.instrument(OpenAI(base_url=DEAD + "/v1", api_key="sk-replay", max_retries=0))


def _edit(client: Any) -> Any:
    return client.images.edit(
        model="gpt-image-1",
        image=("image.png", io.BytesIO(PNG), "image/png"),
        prompt="Add a red circle",
        size="256x256",
        quality="low",
    )


def _uploaded_bytes() -> tuple[bytes, str]:
    """The multipart body and content type the OpenAI SDK sends for `_edit` (its boundary is random)."""
    import httpx2
    from openai import OpenAI

    sent: dict[str, Any] = {}

    def handler(request: Any) -> Any:
        sent["body"], sent["type"] = request.read(), request.headers["content-type"]
        return httpx2.Response(200, json=EDITED)

    _edit(OpenAI(api_key="sk-x", http_client=httpx2.Client(transport=httpx2.MockTransport(handler))))
    return sent["body"], sent["type"]


def _weave_cassette(body: str, content_type: str) -> str:
    """A cassette as weave's patched vcrpy writes it: the body as base64 text, flagged by a header."""
    lines = "\n".join("        " + body[i : i + 76] for i in range(0, len(body), 76))
    return f"""interactions:
- request:
    body: ''
    headers:
      X-VCR-Body-Base64:
      - 'true'
      host:
      - raw.githubusercontent.com
    method: GET
    uri: https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json
  response:
    body:
      string: '{{"gpt-image-1": {{"mode": "image_generation"}}}}'
    headers:
      Content-Type:
      - text/plain; charset=utf-8
    status:
      code: 200
      message: OK
- request:
    body: >-
{lines}
    headers:
      X-VCR-Body-Base64:
      - 'true'
      accept:
      - application/json
      content-type:
      - {content_type}
      user-agent:
      - OpenAI/Python 1.91.0
    method: POST
    uri: https://api.openai.com/v1/images/edits
  response:
    body:
      string: '{json.dumps(EDITED)}'
    headers:
      Content-Type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""


def test_a_body_stored_as_base64_under_weaves_flag_header_is_the_upload_replayed() -> None:
    body, content_type = _uploaded_bytes()
    Path("edit.yaml").write_text(_weave_cassette(base64.b64encode(body).decode(), content_type))
    report = import_vcr("edit.yaml", "imported.json")
    assert report.skipped == [] and report.kinds == {"http": 1, "llm": 1}
    with cassette.using("imported.json", mode="replay", unused="error", check_order="error"):
        # the flagged GET (an empty body) replays too: the flag header was never part of the request
        prices = cassette.http_client().get(
            "https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json"
        )
        assert prices.json() == {"gpt-image-1": {"mode": "image_generation"}}
        reply = _edit(_openai())
        assert reply.data[0].b64_json == "aGVsbG8="
    stored = json.loads(Path("imported.json").read_text())
    assert all("x-vcr-body-base64" not in json.dumps(i["request"]).lower() for i in stored["interactions"])


def test_a_flagged_body_that_is_not_base64_is_named_not_imported_as_text() -> None:
    Path("edit.yaml").write_text(_weave_cassette("not base64 at all!", "application/json"))
    with pytest.raises(CassetteImportError) as raised:
        import_vcr("edit.yaml", "imported.json")
    message = str(raised.value)
    assert "interaction 1" in message and "X-VCR-Body-Base64" in message and "base64" in message
    assert not Path("imported.json").exists()


# --- cendor-cassette: a Responses API call, and a raw-response envelope -----------------------------

QUESTION = [{"role": "user", "content": "Reply with exactly: pong"}]
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1778037177,
    "status": "completed",
    "model": "gpt-5.5-2026-04-23",
    "output": [
        {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "text": "pong"}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 11,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 16,
    },
}


def _cendor_file(*entries: dict[str, Any]) -> str:
    Path("old.json").write_text(json.dumps({"version": 2, "entries": list(entries)}, indent=2))
    return "old.json"


def _llm_entry(response: Any, *, stream: bool = False, response_type: str = "object") -> dict[str, Any]:
    return {
        "seq": 0,
        "kind": "llm",
        "request_hash": "0" * 64,
        "request": {
            "kind": "llm",
            "provider": "openai",
            "model": "gpt-5.5",
            "messages": QUESTION,
            "stream": stream,
        },
        "response": response,
        "response_type": response_type,
    }


def test_a_cendor_responses_api_call_replays_through_responses_create() -> None:
    report = import_cendor(_cendor_file(_llm_entry(RESPONSE)), "imported.json")
    assert report.skipped == [] and report.kinds == {"llm": 1}
    notes = " ".join(note for _, note in report.notes)
    assert "Responses API" in notes and "input='...'" in notes  # the string/list ambiguity is named
    with cassette.using("imported.json", mode="replay", unused="error"):
        reply = _openai().responses.create(model="gpt-5.5", input=QUESTION)
    assert reply.output_text == "pong" and reply.usage.total_tokens == 16


def test_a_streamed_cendor_responses_api_call_replays_event_by_event() -> None:
    item = RESPONSE["output"][0]
    chunks = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {**RESPONSE, "status": "in_progress", "output": []},
        },
        {
            "type": "response.output_text.delta",
            "sequence_number": 1,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "pong",
            "logprobs": [],
        },
        {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item},
        {"type": "response.completed", "sequence_number": 3, "response": RESPONSE},
    ]
    import_cendor(_cendor_file(_llm_entry(chunks, stream=True)), "imported.json")
    with cassette.using("imported.json", mode="replay", unused="error"):
        stream = _openai().responses.create(model="gpt-5.5", input=QUESTION, stream=True)
        events = list(stream)
    assert [e.type for e in events] == [c["type"] for c in chunks]
    assert events[-1].response.output_text == "pong"


def test_a_cendor_envelope_entry_is_the_http_body_itself_and_serves_with_raw_response() -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "recorded"}}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12},
    }
    entry = _llm_entry(body, response_type="envelope")
    entry["request"]["model"] = "gpt-4o-mini"
    report = import_cendor(_cendor_file(entry), "imported.json")
    # the payload is the decoded body, not a model_dump() of an SDK object: no stand-in note
    assert not any("model_dump" in note for _, note in report.notes)
    with cassette.using("imported.json", mode="replay", unused="error"):
        raw = _openai().chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=QUESTION)
    assert raw.status_code == 200 and raw.parse().choices[0].message.content == "recorded"


# wandb/weave: tests/integrations/anthropic/cassettes/anthropic_test/test_beta_anthropic_parse.yaml
# (anthropic 0.75, `beta.messages.parse(output_format=Greeting)`), its headers trimmed
_PARSE_BODY = (
    '{"max_tokens":128,"messages":[{"role":"user","content":"Return JSON"}],"model":"claude-haiku-4-5",'
    '"output_format":{"schema":{"type":"object","title":"Greeting","properties":{"greeting":{"type":'
    '"string","title":"Greeting"}},"additionalProperties":false,"required":["greeting"]},'
    '"type":"json_schema"}}'
)
_PARSE_REPLY = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": '{"greeting":"hello"}'}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}


def _parse_cassette(body: str) -> Path:
    source = Path("recorded.yaml")
    source.write_text(
        json.dumps(
            {
                "interactions": [
                    {
                        "request": {
                            "body": body,
                            "headers": {
                                "anthropic-version": ["2023-06-01"],
                                "anthropic-beta": ["structured-outputs-2025-11-13"],
                                "content-type": ["application/json"],
                            },
                            "method": "POST",
                            "uri": "https://api.anthropic.com/v1/messages?beta=true",
                        },
                        "response": {
                            "body": {"string": json.dumps(_PARSE_REPLY)},
                            "headers": {"Content-Type": ["application/json"]},
                            "status": {"code": 200, "message": "OK"},
                        },
                    }
                ],
                "version": 1,
            }
        )
    )
    return source


def test_an_older_anthropic_sdks_output_format_is_named_as_moved() -> None:
    """anthropic 0.7x sent `output_format`; today's SDK sends `output_config.format`: the report says so."""
    report = import_vcr(_parse_cassette(_PARSE_BODY), "imported.json")
    assert [where for where, _ in report.notes] == ["interaction 0"]
    note = report.notes[0][1]
    assert "`output_format`" in note and "`output_config.format`" in note and "Re-record" in note
    # moved as the note says, the recording has no note and today's SDK call replays from it
    moved = _PARSE_BODY.replace('"output_format":', '"output_config":{"format":')[:-1] + "}}"
    assert import_vcr(_parse_cassette(moved), "again.json").notes == []
    from anthropic import Anthropic
    from pydantic import BaseModel

    class Greeting(BaseModel):
        greeting: str

    client = cassette.instrument(Anthropic(base_url=DEAD, api_key="sk-ant-replay", max_retries=0))
    with cassette.using("again.json", mode="replay", unused="error"):
        reply = client.beta.messages.parse(
            max_tokens=128,
            messages=[{"role": "user", "content": "Return JSON"}],
            model="claude-haiku-4-5",
            output_format=Greeting,
            betas=["structured-outputs-2025-11-13"],
        )
    assert reply.parsed_output == Greeting(greeting="hello")
