"""Tokens a replay did not spend: read from a response's usage, a stream's included too."""

from __future__ import annotations

import orjson

from cassette.plugins.manager import tokens_of


def _chunk(**fields: object) -> str:
    return "data: " + orjson.dumps({"object": "chat.completion.chunk", **fields}).decode()


def test_a_stream_with_included_usage_counts_its_final_usage_once() -> None:
    # stream_options={"include_usage": True}: every chunk says "usage": null, the last one holds it
    events = [_chunk(choices=[{"delta": {"content": w}}], usage=None) for w in ("usage", " is", " fine")]
    events += [_chunk(choices=[], usage={"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})]
    events += ["data: [DONE]"]
    assert tokens_of({"status": 200, "events": events}) == 15
    spaced = [e.replace('"usage":null', '"usage": null') for e in events]
    assert tokens_of({"status": 200, "events": spaced}) == 15
    assert tokens_of({"status": 200, "events": events[:-2]}) == 0  # abandoned before its usage
