"""SSE framing has one copy (`cassette.core.sse`): a stream cut as it arrives, chunk by chunk, is
cut as the whole body is, and an event reads the same whoever reads it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cassette.core import sse

_PIECES = st.sampled_from(
    ["data: ", "event: x", "{}", "é", "\n", "\r", "\n\n", "\r\n\r\n", "\r\r", ": c", "a"]
)


@given(st.lists(_PIECES, max_size=40), st.lists(st.integers(min_value=1, max_value=7), max_size=40))
def test_a_stream_fed_in_any_chunks_is_cut_as_its_whole_body(pieces: list[str], sizes: list[int]) -> None:
    body = "".join(pieces).encode()
    splitter = sse.Splitter()
    events: list[str] = []
    at = 0
    for size in sizes:  # chunks that may end inside a blank line or a UTF-8 character
        events += splitter.feed(body[at : at + size])
        at += size
    events += splitter.feed(body[at:])
    rest = splitter.rest()
    assert [*events, *([rest] if rest else [])] == sse.split(body.decode())


def test_the_module_examples_hold() -> None:
    events = sse.split("event: ping\ndata: {}\n\ndata: [DONE]\n\n")
    assert events == ["event: ping\ndata: {}", "data: [DONE]"]
    assert sse.fields(events[0]) == ("ping", "{}")
    assert sse.to_chunks(events) == [b"event: ping\ndata: {}\n\n", b"data: [DONE]\n\n"]
    live = sse.Splitter()
    assert live.feed(b"data: 1\n\nda") == ["data: 1"]
    assert live.feed(b"ta: 2\n\n") == ["data: 2"]
    assert live.rest() == ""
    assert sse.parsed(['event: ping\ndata: {"a": 1}', "data: [DONE]", ": comment", 7]) == [("ping", {"a": 1})]


def test_fields_follow_the_sse_rules() -> None:
    assert sse.fields("data:x") == (None, "x")  # no space: the value as it is
    assert sse.fields("data:  x") == (None, " x")  # one space dropped, not two
    assert sse.fields("data: a\ndata: b\nid: 3") == (None, "a\nb")  # data lines joined
    assert sse.fields(": keepalive") == (None, "")
    assert sse.parsed(["data: not json"]) == [(None, "not json")]


def test_data_span_is_where_one_data_line_holds_its_value() -> None:
    event = 'event: x\ndata: {"a": 1}'
    start, end = sse.data_span(event) or (0, 0)
    assert event[start:end] == '{"a": 1}'
    assert sse.data_span("data:{}\r\n") == (5, 7)
    assert sse.data_span("event: x") is None  # no data
    assert sse.data_span("data: {\ndata: }") is None  # data over two lines: no single span
