"""Server-sent events (SSE) framing: the one place a ``text/event-stream`` body is cut and read.

A stream is events separated by a blank line (``\\n\\n``, ``\\r\\r`` or ``\\r\\n\\r\\n``); an
event is lines ``field: value`` (``event``, ``data``, ``id``, ``retry``; one space after the
colon is dropped; a line starting with ``:`` is a comment). Recordings keep each event as its
text without the blank line after it, so a replay hands the SDK the recorded bytes event by
event. Pure functions over text (and bytes for :class:`Splitter`); nothing here knows a
provider.

Example::

    from cassette.core.sse import Splitter, fields, split, to_chunks

    events = split("event: ping\\ndata: {}\\n\\ndata: [DONE]\\n\\n")
    events == ["event: ping\\ndata: {}", "data: [DONE]"]
    fields(events[0]) == ("ping", "{}")
    to_chunks(events) == [b"event: ping\\ndata: {}\\n\\n", b"data: [DONE]\\n\\n"]

    live = Splitter()
    live.feed(b"data: 1\\n\\nda") == ["data: 1"]  # the rest waits for its blank line
    live.feed(b"ta: 2\\n\\n") == ["data: 2"]
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from typing import Any

import orjson

BOUNDARY = re.compile(r"\r\n\r\n|\n\n|\r\r")  # the blank line that ends an event


def split(text: str) -> list[str]:
    """A whole event-stream body cut into events, a last one without its blank line included."""
    parts = BOUNDARY.split(text)
    tail = parts.pop()
    events = [p for p in parts if p]
    if tail.strip():
        events.append(tail.rstrip("\r\n"))
    return events


class Splitter:
    """Cuts a stream into events as its bytes arrive (UTF-8, a bad byte replaced).

    `feed` returns the events a chunk completed; `rest` the text after the last blank line
    (an event the stream ended without closing), once the stream is over.
    """

    def __init__(self) -> None:
        self.buffer = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, chunk: bytes) -> list[str]:
        self.buffer += self.decoder.decode(chunk)
        if "\n\n" not in self.buffer and "\r\r" not in self.buffer and "\r\n\r\n" not in self.buffer:
            return []  # most chunks end no event: no regex run
        parts = BOUNDARY.split(self.buffer)
        self.buffer = parts.pop()
        return [p for p in parts if p]

    def rest(self) -> str:
        """The unterminated last event ('' when none), its line breaks stripped; empties the buffer."""
        tail = self.buffer + self.decoder.decode(b"", final=True)
        self.buffer = ""
        return tail.rstrip("\r\n") if tail.strip() else ""


def to_chunks(events: list[str]) -> list[bytes]:
    """Recorded events as the bytes a server sent, one chunk per event (TypeError: not all text)."""
    # encode() without arguments takes its fast path (UTF-8): a stream has dozens of events
    return [(event + "\n\n").encode() for event in events]


def fields(event: str) -> tuple[str | None, str]:
    """The ``event:`` name (or ``None``) and the joined ``data:`` lines of one event.

    Example::

        fields("event: message_stop\\ndata: {}") == ("message_stop", "{}")
    """
    name: str | None = None
    data: list[str] = []
    for line in event.splitlines():
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return name, "\n".join(data)


def parsed(events: Iterable[Any]) -> list[tuple[str | None, Any]]:
    """``(event name, data parsed as JSON, else as text)`` of each event that carries data.

    Events that are not text, hold no data, or whose data is ``[DONE]`` (the end marker
    some APIs send) are left out.

    Example::

        parsed(["event: ping\\ndata: {\\"a\\": 1}", "data: [DONE]"]) == [("ping", {"a": 1})]
    """
    out: list[tuple[str | None, Any]] = []
    for event in events:
        if not isinstance(event, str):
            continue
        name, payload = fields(event)
        if not payload or payload.strip() == "[DONE]":
            continue
        try:
            value: Any = orjson.loads(payload)
        except orjson.JSONDecodeError:
            value = payload
        out.append((None if name is None else name.strip(), value))
    return out


def data_span(event: str) -> tuple[int, int] | None:
    """Where the value of an event's only ``data:`` line lies in it (``event[start:end]``), or None
    when it has no data line or several (data over several lines is joined, not one span).

    Lets a caller rewrite the data (a JSON object) and put the event back together around it.

    Example::

        data_span("event: x\\ndata: {}") == (15, 17)
    """
    if event.startswith("data:"):
        start = 5
    else:  # `event: …` (and `id: …`) lines first
        start = event.find("\ndata:") + 6
        if start < 6:
            return None
    if event.startswith(" ", start):
        start += 1
    end = len(event)
    for brk in ("\n", "\r"):
        at = event.find(brk, start, end)
        if at >= 0:
            end = at
    if end < len(event) and _MORE_DATA.search(event, end):
        return None
    return start, end


_MORE_DATA = re.compile(r"[\r\n]data:")  # a second data line after the first


def data_spans(event: str) -> list[tuple[int, int]]:
    """Where the value of each ``data:`` line lies in an event (``event[start:end]``), in order; a
    client joins them with ``\n`` into the event's data.

    Example::

        data_spans("id: 1\ndata: a\ndata:b") == [(12, 13), (19, 20)]
    """
    return [m.span(1) for m in _DATA_LINE.finditer(event)]


_DATA_LINE = re.compile(r"(?:^|(?<=[\r\n]))data: ?([^\r\n]*)")
