"""Redaction of found secrets: in a text (:func:`redact_text`), and in a streamed response whose
deltas hold a secret only together (:func:`redact_stream`)."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import orjson

from cassette.core import sse
from cassette.secrets.engine import Engine, Hit, Rules, engine_for, resolve_overlaps
from cassette.secrets.escapes import escaped_hits, has_escape
from cassette.secrets.lists import list_hits

__all__ = ["Stream", "joined", "redact_stream", "redact_text"]


def redact_text(text: str, rules: Rules) -> str:
    """Replace every detected secret in ``text`` by ``<redacted:RULE_ID>``.

    Ids, UUIDs, hashes and e-mail addresses are left alone; text without a
    secret is returned as is (the same object).

    Example::

        redact_text("Authorization: Bearer " + key, default_rules())
        # 'Authorization: Bearer <redacted:RULE_ID>' (the id of the rule that matched)
    """
    engine = engine_for(rules)
    data = text.encode("utf-8", "surrogatepass")
    keyword_cands: list[int] = []
    hits = engine.hits(data, keyword_cands=keyword_cands)
    if keyword_cands:  # YAML in the text: each item of a list, each value of a map a keyword names
        listed = list_hits(engine, data, keyword_cands, None)
        if listed:
            hits = resolve_overlaps({*hits, *listed})
    if has_escape(data):  # JSON in the text: a key partly \u-escaped (`sk-\u0070roj-…`), or a password
        hits = escaped_hits(engine, data, hits)
    if not hits:
        return text
    out: list[bytes] = []
    pos = 0
    for i, s, e in hits:
        out.append(data[pos:s])
        out.append(f"<redacted:{engine.rules[i].id}>".encode())
        pos = e
    out.append(data[pos:])
    return b"".join(out).decode("utf-8", "surrogatepass")


# -- streamed responses: text that arrives in pieces ---------------------------------------------


@dataclass(slots=True)
class _Piece:
    """One delta of a channel: the parsed object holding its text, the field, and its JSON path."""

    event: int
    holder: Any  # the dict (or, in a generic stream, the list) holding the text
    field: str | int
    path: tuple[str | int, ...]
    sep = ""  # what the client puts between it and the piece before

    @property
    def text(self) -> str:
        return str(self.holder[self.field])


@dataclass(slots=True)
class _DataPiece:
    """One ``data:`` line of a generic stream's event that is not a JSON object (plain text, or a
    fragment of a JSON document the client assembles): where its value lies in the event."""

    event: int
    start: int
    end: int
    text: str
    sep: str  # "\n" after another data line of the same event (the client joins them so), else ""
    path: tuple[str | int, ...] = ()


class Stream:
    """The text a streamed (SSE) response delivers in pieces, gathered per channel.

    A channel is one text the client assembles from deltas: a chat choice's ``delta.content``
    (and its other text fields) or one tool call's ``function.arguments``, per choice and
    tool-call index; a Responses API ``response.….delta`` per event type, output item and
    part; a messages API ``content_block_delta``'s ``text``, ``partial_json`` or ``thinking``,
    per block index.

    A generic stream (none of its events of these shapes: an HTTP API's own ``text/event-stream``)
    has a channel per JSON path of a string in its events that are one JSON object (``{"text":
    "…"}`` then ``{"text": "…"}``), and one channel of the ``data:`` values of all its other events,
    in order (plain text, or a JSON document cut over several events: ``{"text":"my key is sk-…`` then
    ``…"}``), each event's lines joined by ``\n`` as a client joins them.
    """

    def __init__(self, events: Sequence[Any]) -> None:
        self.events = events
        # per event in a channel: its text before the JSON, the parsed JSON, the JSON text, the text after
        self.parsed: dict[int, tuple[str, dict[str, Any], str, str]] = {}
        self.channels: dict[tuple[Any, ...], list[_Piece | _DataPiece]] = {}
        for n, event in enumerate(events):
            if type(event) is not str or "delta" not in event:
                continue  # every delta event of the three APIs names a delta
            parsed = _sse_json(event)
            if parsed is None:
                continue
            found = _deltas(parsed[1])
            if found:
                self.parsed[n] = parsed
                for channel, holder, field, path in found:
                    self.channels.setdefault(channel, []).append(_Piece(n, holder, field, path))
        if not self.channels:
            self._generic(events)

    def _generic(self, events: Sequence[Any]) -> None:
        """The channels of a stream of no known shape (see the class): strings by JSON path, and
        the ``data:`` values of every event that is not one JSON object."""
        data: list[_Piece | _DataPiece] = []
        for n, event in enumerate(events):
            if type(event) is not str or "data:" not in event:
                continue
            parsed = _sse_json(event) if "{" in event else None
            if parsed is not None:
                self.parsed[n] = parsed
                for path, holder, field in _strings(parsed[1], ()):
                    self.channels.setdefault(("json", *path), []).append(_Piece(n, holder, field, path))
                continue
            for line, (a, b) in enumerate(sse.data_spans(event)):
                value = event[a:b]
                if value.strip() != "[DONE]":
                    data.append(_DataPiece(n, a, b, value, "\n" if line else ""))
        if data:
            self.channels[("data",)] = data

    def hits(self, engine: Engine) -> list[tuple[list[_Piece | _DataPiece], bytes, list[int], list[Hit]]]:
        """Per channel of two or more pieces with a secret in its joined text: its pieces, that
        text (UTF-8), where each piece starts in it, and the secrets (offsets in that text)."""
        channels = [pieces for pieces in self.channels.values() if len(pieces) > 1]
        if not channels:
            return []
        texts = ["".join([p.sep + p.text for p in pieces]) for pieces in channels]
        data, starts = joined(texts)  # one engine pass; a secret never crosses from one channel to the next
        found: dict[int, list[Hit]] = {}
        for i, s, e in engine.hits(data, starts):
            c = bisect_right(starts, s) - 1
            found.setdefault(c, []).append((i, s - starts[c], e - starts[c]))
        out = []
        for c, hits in found.items():
            text = texts[c].encode("utf-8", "surrogatepass")
            at, piece_starts = 0, []
            for p in channels[c]:
                at += len(p.sep)
                piece_starts.append(at)
                at += len(p.text.encode("utf-8", "surrogatepass"))
            out.append((channels[c], text, piece_starts, hits))
        return out

    def redacted(self, engine: Engine) -> list[Any] | None:
        """The events with each secret of a channel replaced, or None when there is none.

        The piece where a secret starts gets ``<redacted:RULE_ID>`` in its place and loses the
        secret's characters; the following pieces lose theirs (a piece may become empty). Only
        the events so changed are written anew, in the layout their JSON had.
        """
        changed: dict[int, list[tuple[_Piece | _DataPiece, str]]] = {}
        for pieces, data, starts, hits in self.hits(engine):
            spans = [(s, e, f"<redacted:{engine.rules[i].id}>".encode()) for i, s, e in hits]
            for piece, a in zip(pieces, starts):
                b = a + len(piece.text.encode("utf-8", "surrogatepass"))
                new = _without_spans(data, a, b, spans)
                if new is not None:
                    changed.setdefault(piece.event, []).append((piece, new))
        if not changed:
            return None
        events = list(self.events)
        for n, edits in changed.items():
            if n not in self.parsed:  # `data:` lines of a generic stream: each value replaced in place
                text = events[n]
                lines = [(piece, new) for piece, new in edits if isinstance(piece, _DataPiece)]
                for piece, new in sorted(lines, key=lambda edit: -edit[0].start):  # from the end: spans stay
                    text = text[: piece.start] + new + text[piece.end :]
                events[n] = text
                continue
            head, doc, body, tail = self.parsed[n]
            separators, ascii_only = _json_layout(doc, body)
            for piece, new in edits:
                assert isinstance(piece, _Piece)
                piece.holder[piece.field] = new
            events[n] = head + json.dumps(doc, separators=separators, ensure_ascii=ascii_only) + tail
        return events


def joined(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """``texts`` joined by newlines as UTF-8, for one engine pass, and where each starts in it."""
    joined = "\n".join(texts)
    data = joined.encode("utf-8", "surrogatepass")
    if joined.isascii():
        sizes: Iterable[int] = (len(t) + 1 for t in texts)
    else:
        sizes = (len(t.encode("utf-8", "surrogatepass")) + 1 for t in texts)
    return data, [0, *accumulate(sizes)][:-1]


def _without_spans(data: bytes, a: int, b: int, spans: list[tuple[int, int, bytes]]) -> str | None:
    """The piece ``data[a:b]`` with the parts of ``spans`` in it cut out, each span's placeholder
    where it starts; None when no span touches it."""
    out: list[bytes] = []
    pos = a
    for s, e, placeholder in spans:
        if e <= a or s >= b:
            continue
        if s >= a:
            out.append(data[pos:s])
            out.append(placeholder)
        pos = max(pos, min(e, b))
    if pos == a and not out:
        return None
    out.append(data[pos:b])
    return b"".join(out).decode("utf-8", "surrogatepass")


def _json_layout(doc: Any, body: str) -> tuple[tuple[str, str], bool]:
    """The ``json.dumps`` separators and ``ensure_ascii`` that wrote ``body`` (else the nearest)."""
    ascii_only = body.isascii()
    for separators in ((",", ":"), (", ", ": ")):
        if json.dumps(doc, separators=separators, ensure_ascii=ascii_only) == body:
            return separators, ascii_only
    spaced = '", "' in body or '": ' in body
    return ((", ", ": ") if spaced else (",", ":")), ascii_only


def _sse_json(event: str) -> tuple[str, dict[str, Any], str, str] | None:
    """An event's text before its one data line's JSON object, the object, its text, and after."""
    span = sse.data_span(event)
    if span is None or not event.startswith("{", span[0]):
        return None  # not JSON, or data over several lines: left as it is
    start, end = span
    body = event[start:end]
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(doc) is not dict:
        return None
    return event[:start], doc, body, event[end:]


def _strings(
    node: Any, path: tuple[str | int, ...]
) -> Iterable[tuple[tuple[str | int, ...], Any, str | int]]:
    """Every string under a parsed event of a generic stream: its JSON path, holder and field."""
    items: Iterable[tuple[Any, Any]] = node.items() if type(node) is dict else enumerate(node)
    for k, v in items:
        if type(v) is str:
            yield (*path, k), node, k
        elif type(v) in (dict, list):
            yield from _strings(v, (*path, k))


def _scalar(value: Any) -> Any:
    """A channel key part: JSON scalars as they are, anything else by its text."""
    return value if value is None or type(value) in (str, int, float, bool) else repr(value)


# A delta: (channel, the object holding the text, its field, the field's JSON path in the event)
_Delta = tuple[tuple[Any, ...], dict[str, Any], str, tuple[str | int, ...]]


def _deltas(doc: dict[str, Any]) -> list[_Delta]:
    """The text deltas of one parsed stream event (chat chunks, Responses events, content blocks)."""
    out: list[_Delta] = []
    kind = doc.get("type")
    choices = doc.get("choices")
    if type(choices) is list:  # a chat completion chunk
        for pos, choice in enumerate(choices):
            delta = choice.get("delta") if type(choice) is dict else None
            if type(delta) is not dict:
                continue
            ci = _scalar(choice.get("index", pos))
            at: tuple[str | int, ...] = ("choices", pos, "delta")
            for name, value in delta.items():
                if type(value) is str and name != "role":  # content, refusal, reasoning_content
                    out.append((("choice", ci, name), delta, name, (*at, name)))
                elif name == "function_call" and type(value) is dict and type(value.get("arguments")) is str:
                    out.append((("choice", ci, name), value, "arguments", (*at, name, "arguments")))
                elif name == "tool_calls" and type(value) is list:
                    for tpos, call in enumerate(value):
                        fn = call.get("function") if type(call) is dict else None
                        if type(fn) is dict and type(fn.get("arguments")) is str:
                            channel = ("choice", ci, "tool", _scalar(call.get("index", tpos)))
                            out.append((channel, fn, "arguments", (*at, name, tpos, "function", "arguments")))
    elif kind == "content_block_delta":  # a messages API stream
        delta = doc.get("delta")
        if type(delta) is dict:
            for name in ("text", "partial_json", "thinking"):
                if type(delta.get(name)) is str:
                    out.append((("block", _scalar(doc.get("index")), name), delta, name, ("delta", name)))
    elif (
        type(kind) is str
        and kind.startswith("response.")
        and kind.endswith(".delta")
        and kind != "response.audio.delta"  # base64 audio, not text
        and type(doc.get("delta")) is str
    ):  # the Responses API: output text, function call arguments, reasoning, refusals
        parts = [_scalar(doc.get(k)) for k in ("item_id", "output_index", "content_index", "summary_index")]
        out.append((("response", kind, *parts), doc, "delta", ("delta",)))
    return out


def redact_stream(events: list[Any], rules: Rules) -> list[Any]:
    """A streamed response's events with every secret split over their deltas made ``<redacted:RULE_ID>``.

    Each channel's pieces (see :class:`Stream`) are joined and the rules run over the joined
    text; a secret's first piece gets the placeholder, and no piece keeps any of the secret's
    characters. Events without a secret are returned untouched (the same list when none has one).

    Example::

        response["events"] = redact_stream(response["events"], default_rules())
    """
    engine = engine_for(rules)
    new = Stream(events).redacted(engine)
    return events if new is None else new
