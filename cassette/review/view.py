"""A recorded run as one self-contained HTML page: a timeline of its calls, or two runs side by side.

``run_page(cassette)`` draws every interaction in recorded order (LLM calls with
their messages, the tool calls they asked for, the answer, finish reason, tokens,
streamed or not, recorded latency; tool calls with their arguments and result or
error), calls in flight at once side by side, errors and retries marked, under a
header of totals. ``drift_page(...)`` draws two recordings of the same run side by
side, paired as drift pairs them, each pair marked with its drift category and its
changed words highlighted.

The page is safe to open whatever the cassette holds: every piece of recorded text
is escaped (``html.escape``) into the markup built here; the only data given to the
page's script is JSON inside ``<script type="application/json">`` with ``<``, ``>``
and ``&`` escaped; the script reads no recorded text (it folds and unfolds); no
link or URL is made from recorded content; and a Content-Security-Policy lets only
the page's own script and style run (by their hashes) and loads nothing from the
network. Secrets stay as stored (redacted); a secret-rule match in any text is
masked once more, as the drift summaries do.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from cassette.core.model import KINDS, Cassette, Interaction
from cassette.errors import CassetteError
from cassette.plugins.manager import default_rules, get_plugin_manager, tokens_of
from cassette.review.drift import CATEGORIES, DESCRIPTIONS, DriftItem, extract, pair_interactions
from cassette.secrets import redact_text, rules_from_plugins

# A message or answer longer than this (characters or lines) is shown folded, with a button to unfold.
FOLD_CHARS = 480
FOLD_LINES = 16
# A JSON value this short is shown on one line.
PRETTY_FLAT = 96
# Request fields that are the call's identity or its conversation, shown apart from its parameters.
_IDENTITY = ("kind", "provider", "endpoint", "model")
_CONVERSATION = ("system", "instructions", "messages", "input", "prompt")
# Response headers that say how long the server took, in milliseconds (provider-neutral suffixes).
_LATENCY_HEADERS = re.compile(r"(?:^|-)processing-ms$|^x-envoy-upstream-service-time$")
_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


# --- what one interaction says ----------------------------------------------------------------------


@dataclass
class Reading:
    """The provider-specific reading of one recorded response: answer, tool calls, finish, tokens."""

    text: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    finish: str | None = None
    error: str | None = None
    truncated: bool = False
    tokens: int = 0
    streamed: bool = False


def read_response(kind: str, response: dict[str, Any]) -> Reading:
    """What a recorded response says, read by drift's and usage's readers.

    The one door to provider-specific reading in this module: when providers answer
    it through hooks, only this function changes.

    Example::

        read_response("llm", {"json": {"choices": [{"message": {"content": "Paris."}}]}}).text == "Paris."
    """
    out = extract(kind, response)
    return Reading(
        text=out.text,
        tool_calls=[(c.name, c.arguments) for c in out.tool_calls],
        finish=out.finish,
        error=out.error,
        truncated=out.truncated,
        tokens=tokens_of(response) if kind != "tool" else 0,
        streamed=isinstance(response.get("events"), list),
    )


@dataclass
class Message:
    """One message of a request's conversation, as text: its role and what it says."""

    role: str
    text: str


@dataclass
class CallView:
    """One interaction, read for the page."""

    seq: int
    kind: str
    label: str
    messages: list[Message] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    reading: Reading = field(default_factory=Reading)
    arguments: Any = None
    result: Any = None
    status: int | None = None
    latency_ms: float | None = None
    parallel: bool = False
    retry_of: int | None = None
    unreadable: str | None = None
    same_as: tuple[int, int] | None = None  # (seq, count): the first messages repeat those of call #seq

    @property
    def failed(self) -> bool:
        return bool(self.reading.error or self.unreadable)

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "label": self.label,
            "tokens": self.reading.tokens,
            "streamed": self.reading.streamed,
            "finish": self.reading.finish,
            "error": self.reading.error or self.unreadable,
            "parallel": self.parallel,
            "retry_of": self.retry_of,
            "latency_ms": self.latency_ms,
        }


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _pretty(value: Any) -> str:
    """``value`` as JSON text: each object or list that is short on one line, the others indented."""
    if isinstance(value, str):
        return value
    try:
        return _layout(value, "")
    except (ValueError, RecursionError):  # a circular or absurdly deep value: its repr is enough here
        return repr(value)


def _layout(value: Any, indent: str) -> str:
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if len(flat) + len(indent) <= PRETTY_FLAT or not isinstance(value, dict | list) or not value:
        return flat
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        return flat  # a list of numbers or words reads best as it wraps
    inner = indent + "  "
    if isinstance(value, dict):
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_layout(v, inner)}" for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return "[\n" + ",\n".join(inner + _layout(v, inner) for v in value) + "\n" + indent + "]"


def _content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts (text parts as text, others as JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and len(part) <= 3:
                texts.append(part["text"])
            else:
                texts.append(_compact(part))
        return "\n".join(texts)
    return "" if content is None else _compact(content)


def _message(item: Any) -> Message:
    if not isinstance(item, dict):
        return Message("input", _compact(item))
    role = item.get("role") or item.get("type") or "item"
    rest = {k: v for k, v in item.items() if k not in ("role", "content")}
    if item.get("role") is None:
        rest.pop("type", None)
    text = _content_text(item.get("content"))
    if rest:  # tool calls an assistant message carries, the id a tool message answers, an output item
        text = (text + "\n" if text else "") + _compact(rest)
    return Message(str(role), text)


def _messages(request: dict[str, Any]) -> list[Message]:
    """The conversation a request sends, in order, whatever the field names hold it."""
    out: list[Message] = []
    for key in _CONVERSATION:
        value = request.get(key)
        if value is None:
            continue
        if isinstance(value, list) and key in ("messages", "input"):
            out.extend(_message(item) for item in value)
        elif isinstance(value, str):
            out.append(Message("user" if key in ("input", "prompt") else key, value))
        else:
            out.append(Message(key, _content_text(value)))
    return out


def _label(kind: str, request: dict[str, Any]) -> str:
    if kind == "tool":
        return str(request.get("name", "tool"))
    if kind == "llm":
        parts = [str(request[k]) for k in ("provider", "model", "endpoint") if request.get(k)]
        return " · ".join(parts) or "llm"
    return f"{request.get('method', '')} {request.get('url', '')}".strip() or kind


def _latency(response: dict[str, Any]) -> float | None:
    headers = response.get("headers")
    if not isinstance(headers, dict):
        return None
    for name, value in headers.items():
        if isinstance(name, str) and _LATENCY_HEADERS.search(name.lower()):
            try:
                return float(value)
            except (TypeError, ValueError):
                continue
    return None


def _view(inter: Interaction, cassette: Cassette) -> CallView:
    kind = inter.kind if inter.kind in KINDS else "http"
    call = CallView(inter.seq, kind, kind, parallel=inter.extra.get("parallel") is True)
    try:
        request = cassette.hydrate(inter.request)
        response = cassette.hydrate(inter.response)
    except CassetteError as exc:
        call.unreadable = str(exc)
        return call
    request = request if isinstance(request, dict) else {"request": request}
    response = response if isinstance(response, dict) else {"response": response}
    call.label = _label(kind, request)
    try:
        call.reading = read_response(kind, response)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError, RecursionError) as exc:
        call.unreadable = f"the response cannot be read ({type(exc).__name__})"
    status = response.get("status")
    call.status = status if isinstance(status, int) and not isinstance(status, bool) else None
    call.latency_ms = _latency(response)
    if kind == "tool":
        call.arguments = request.get("arguments")
        call.result = response.get("result")
        return call
    if kind == "llm":
        call.messages = _messages(request)
        skip = set(_IDENTITY) | set(_CONVERSATION)
    else:
        skip = {"kind", "method", "url"}
    call.params = {k: v for k, v in request.items() if k not in skip}
    if kind == "http" and not call.reading.text:
        body = {k: v for k, v in response.items() if k != "headers"}
        call.reading.text = _pretty(body.get("json", body))
    return call


def call_views(cassette: Cassette) -> list[CallView]:
    """Every interaction of ``cassette`` read for the page, in recorded order, retries and repeats found.

    Example::

        [c.kind for c in call_views(load_cassette("t.json"))]  # ['llm', 'tool', 'tool', 'llm']
    """
    calls = [_view(inter, cassette) for inter in cassette.interactions]
    failed_by_key: dict[tuple[str, str], int] = {}
    last_llm: list[CallView] = []
    for inter, call in zip(cassette.interactions, calls):
        key = (inter.kind, inter.key)
        if key in failed_by_key:  # the same request again, after it failed: a retry
            call.retry_of = failed_by_key.pop(key)
        if call.failed:
            failed_by_key[key] = call.seq
        if call.kind == "llm" and call.messages:
            for earlier in reversed(last_llm):  # the conversation so far, as an earlier call sent it
                n = len(earlier.messages)
                if 0 < n < len(call.messages) and call.messages[:n] == earlier.messages:
                    call.same_as = (earlier.seq, n)
                    break
            last_llm.append(call)
    return calls


@dataclass
class Totals:
    """A cassette's totals for the page header."""

    calls: Counter[str]
    tokens: int
    errors: int
    retries: int
    streamed: int
    parallel: int
    blobs: int
    blob_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": dict(self.calls),
            "tokens": self.tokens,
            "errors": self.errors,
            "retries": self.retries,
            "streamed": self.streamed,
            "parallel": self.parallel,
            "blobs": self.blobs,
            "blob_bytes": self.blob_bytes,
        }


def totals(cassette: Cassette, calls: Sequence[CallView]) -> Totals:
    """Calls by kind, tokens, errors, retries, streams, parallel calls and blobs read (after `call_views`)."""
    blobs = [entry for entry in cassette.blob_cache.values() if isinstance(entry, tuple) and len(entry) == 3]
    return Totals(
        Counter(c.kind for c in calls),
        sum(c.reading.tokens for c in calls),
        sum(1 for c in calls if c.failed),
        sum(1 for c in calls if c.retry_of is not None),
        sum(1 for c in calls if c.reading.streamed),
        sum(1 for c in calls if c.parallel),
        len(blobs),
        sum(int(entry[2]) for entry in blobs if isinstance(entry[2], int)),
    )


# --- markup -----------------------------------------------------------------------------------------


def _esc(value: Any) -> str:
    """Recorded text as markup: secrets masked first (their placeholders are text too), then escaped."""
    return html.escape(_masked(str(value)), quote=True)


def _long(text: str) -> bool:
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


def _text_block(text: str, css: str, marked: str | None = None) -> str:
    """``text`` (or its word-marked markup ``marked``, already escaped) in a box; a long one folds."""
    body = marked if marked is not None else _esc(text)
    if not _long(text):
        return f'<div class="{css}">{body}</div>'
    more = f"show all {len(text):,} characters"
    return (
        f'<div class="{css} long">{body}</div>'
        f'<button type="button" class="unfold" aria-expanded="false" data-more="{_esc(more)}" '
        f'data-less="fold">{_esc(more)}</button>'
    )


def _badge(css: str, text: str) -> str:
    return f'<span class="badge {css}">{_esc(text)}</span>'


def _badges(call: CallView) -> str:
    out = []
    if call.reading.streamed:
        out.append(_badge("streamed", "streamed"))
    if call.parallel:
        out.append(_badge("parallel", "parallel"))
    if call.failed:
        out.append(_badge("error", "error"))
    if call.retry_of is not None:
        out.append(_badge("retry", f"retry of #{call.retry_of}"))
    if call.reading.truncated:
        out.append(_badge("truncated", "incomplete"))
    return "".join(out)


def _facts(call: CallView) -> str:
    facts = []
    if call.reading.finish:
        facts.append(("finish", call.reading.finish))
    if call.reading.tokens:
        facts.append(("tokens", f"{call.reading.tokens:,}"))
    if call.status is not None and call.kind != "tool":
        facts.append(("status", str(call.status)))
    if call.latency_ms is not None:
        facts.append(("latency", f"{call.latency_ms:,.0f} ms"))
    return "".join(f'<span class="fact"><b>{_esc(k)}</b> {_esc(v)}</span>' for k, v in facts)


def _param_summary(params: dict[str, Any]) -> str:
    parts = []
    for k, v in params.items():
        if isinstance(v, list):
            parts.append(f"{k} ({len(v)})")
        elif isinstance(v, dict):
            parts.append(f"{k} {{…}}")
        else:
            shown = _compact(v)
            parts.append(f"{k}={shown if len(shown) <= 24 else shown[:23] + '…'}")
    return ", ".join(parts)


@dataclass
class _Marks:
    """Word-marked markup (escaped) for the texts of one side of a drift pair."""

    messages: dict[int, str] = field(default_factory=dict)
    answer: str | None = None
    tool_calls: str | None = None


def _messages_html(call: CallView, marks: _Marks) -> str:
    if not call.messages:
        return ""
    rows = []
    start = 0
    if call.same_as is not None and not any(i < call.same_as[1] for i in marks.messages):
        seq, start = call.same_as
        earlier = "".join(_message_html(m, None) for m in call.messages[:start])
        rows.append(
            f'<details class="earlier"><summary>{start} earlier message{"s" if start != 1 else ""}, '
            f"as sent in #{_esc(seq)}</summary>{earlier}</details>"
        )
    rows.extend(_message_html(m, marks.messages.get(i)) for i, m in enumerate(call.messages) if i >= start)
    return f'<section class="messages">{"".join(rows)}</section>'


def _message_html(message: Message, marked: str | None) -> str:
    role = message.role
    css = "role-" + (role if role in ("system", "user", "assistant", "tool", "developer") else "other")
    return (
        f'<div class="msg {css}"><span class="role">{_esc(role)}</span>'
        f"{_text_block(message.text, 'text', marked)}</div>"
    )


def _tool_calls_text(calls: list[tuple[str, Any]]) -> str:
    return "\n".join(f"{name}({_compact(args)})" for name, args in calls)


def _llm_body(call: CallView, marks: _Marks) -> str:
    parts = [_messages_html(call, marks)]
    if call.params:
        parts.append(
            f'<details class="params"><summary>request: {_esc(_param_summary(call.params))}</summary>'
            f"<pre>{_esc(_pretty(call.params))}</pre></details>"
        )
    answer = []
    if call.reading.tool_calls:
        shown = _tool_calls_text(call.reading.tool_calls)
        answer.append('<div class="label">tool calls asked for</div>')
        answer.append(_text_block(shown, "text tool-calls", marks.tool_calls))
    if call.reading.text or not (call.reading.tool_calls or call.reading.error):
        answer.append('<div class="label">answer</div>')
        answer.append(_text_block(call.reading.text, "text answer-text", marks.answer))
    if answer:
        parts.append(f'<section class="answer">{"".join(answer)}</section>')
    return "".join(parts)


def _tool_body(call: CallView, marks: _Marks) -> str:
    parts = ['<section class="arguments"><div class="label">arguments</div>']
    parts.append(_text_block(_pretty(call.arguments), "text code") + "</section>")
    if call.reading.error:
        parts.append('<section class="answer"><div class="label">raised</div>')
        parts.append(_text_block(call.reading.error, "text error-text", marks.answer) + "</section>")
    else:
        parts.append('<section class="answer"><div class="label">result</div>')
        parts.append(_text_block(_pretty(call.result), "text code answer-text", marks.answer) + "</section>")
    return "".join(parts)


def _call_html(call: CallView, marks: _Marks | None = None) -> str:
    marks = marks or _Marks()
    css = ["call", call.kind]
    if call.failed:
        css.append("failed")
    if call.retry_of is not None:
        css.append("retried")
    head = (
        f'<header class="call-head"><span class="seq">#{_esc(call.seq)}</span>'
        f'<span class="kind">{_esc(call.kind)}</span><span class="what">{_esc(call.label)}</span>'
        f'{_badges(call)}<span class="facts">{_facts(call)}</span></header>'
    )
    if call.unreadable:
        body = f'<div class="error-text">cannot read: {_esc(call.unreadable)}</div>'
    elif call.kind == "tool":
        body = _tool_body(call, marks)
    else:
        body = _llm_body(call, marks)
        if call.reading.error:
            body += f'<div class="error-text">{_esc(call.reading.error)}</div>'
    return (
        f'<article class="{" ".join(css)}" data-seq="{_esc(call.seq)}" data-kind="{_esc(call.kind)}">'
        f"{head}{body}</article>"
    )


def _groups(calls: Sequence[CallView]) -> list[list[CallView]]:
    """Consecutive calls marked parallel form one group (in flight at once); every other call its own."""
    out: list[list[CallView]] = []
    for call in calls:
        if call.parallel and out and out[-1][-1].parallel:
            out[-1].append(call)
        else:
            out.append([call])
    return out


def _timeline_html(calls: Sequence[CallView]) -> str:
    rows = []
    for group in _groups(calls):
        if len(group) == 1:
            rows.append(f'<li class="row">{_call_html(group[0])}</li>')
        else:
            inner = "".join(_call_html(c) for c in group)
            rows.append(
                f'<li class="row parallel-group"><div class="group-label">{len(group)} calls in flight '
                f'at once</div><div class="side-by-side">{inner}</div></li>'
            )
    return f'<ol class="timeline">{"".join(rows)}</ol>'


def _totals_html(t: Totals) -> str:
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(t.calls.items())) or "none"
    facts = [
        ("calls", f"{sum(t.calls.values())} ({kinds})"),
        ("tokens", f"{t.tokens:,}"),
        ("errors", str(t.errors)),
        ("retries", str(t.retries)),
        ("streamed", str(t.streamed)),
        ("parallel", str(t.parallel)),
        ("blobs", f"{t.blobs} ({t.blob_bytes:,} bytes)"),
    ]
    items = "".join(f'<div class="total"><dt>{_esc(k)}</dt><dd>{_esc(v)}</dd></div>' for k, v in facts)
    return f'<dl class="totals">{items}</dl>'


# --- the page ---------------------------------------------------------------------------------------


def _asset(name: str) -> str:
    return files("cassette.review").joinpath(name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _json_script(element_id: str, data: Any) -> str:
    """``data`` as JSON the page can read and never runs: ``<``, ``>`` and ``&`` are escaped inside."""
    text = _masked(json.dumps(data, ensure_ascii=False, default=str, sort_keys=True))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _page(title: str, body: str, data: Any) -> str:
    style, script = _asset("view_page.css"), _asset("view_page.js")
    csp = (
        f"default-src 'none'; style-src {_csp_hash(style)}; script-src {_csp_hash(script)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_esc(title)}</title><style>{style}</style></head>"
        f"<body>{body}{_json_script('cassette-data', data)}<script>{script}</script></body></html>\n"
    )
    return page


def _masked(text: str) -> str:
    """Every secret-rule match replaced by its placeholder, as the drift summaries mask theirs."""
    if not text:
        return text
    try:
        rules = rules_from_plugins(get_plugin_manager())
    except CassetteError:  # a broken plugin is reported elsewhere; the built-in rules still mask
        rules = default_rules()
    return redact_text(text, rules)


def run_page(cassette: Cassette, *, title: str | None = None) -> str:
    """The page of one recorded run: a header of totals, then every call in recorded order.

    Example::

        Path("run.html").write_text(run_page(load_cassette("tests/cassettes/triage.json")))
    """
    calls = call_views(cassette)
    t = totals(cassette, calls)
    name = title or str(cassette.path)
    body = (
        f'<header class="page-head"><h1><span class="tool">cassette</span> {_esc(name)}</h1>'
        f"{_totals_html(t)}</header><main>{_timeline_html(calls)}</main>"
    )
    data = {"page": "run", "file": name, "totals": t.to_json(), "calls": [c.to_json() for c in calls]}
    return _page(f"cassette · {name}", body, data)


# --- two runs side by side --------------------------------------------------------------------------


def mark_words(old: str, new: str) -> tuple[str, str]:
    """Both texts escaped, the words only ``old`` has in ``<del>``, those only ``new`` has in ``<ins>``.

    Example::

        mark_words("refund $20", "refund $200")  # ('refund $<del>20</del>', 'refund $<ins>200</ins>')
    """
    a, b = _WORDS.findall(_masked(old)), _WORDS.findall(_masked(new))
    out_a: list[str] = []
    out_b: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        left, right = _esc("".join(a[i1:i2])), _esc("".join(b[j1:j2]))
        if tag == "equal":
            out_a.append(left)
            out_b.append(right)
            continue
        if left:
            out_a.append(f"<del>{left}</del>")
        if right:
            out_b.append(f"<ins>{right}</ins>")
    return "".join(out_a), "".join(out_b)


def _pair_marks(old: CallView, new: CallView) -> tuple[_Marks, _Marks]:
    ma, mb = _Marks(), _Marks()
    for i, (x, y) in enumerate(zip(old.messages, new.messages)):
        if x.text != y.text:
            ma.messages[i], mb.messages[i] = mark_words(x.text, y.text)
    ta, tb = old.reading, new.reading
    if old.kind == "tool":
        text_a = ta.error or _pretty(old.result)
        text_b = tb.error or _pretty(new.result)
    else:
        text_a, text_b = ta.text, tb.text
    if text_a != text_b:
        ma.answer, mb.answer = mark_words(text_a, text_b)
    calls_a, calls_b = _tool_calls_text(ta.tool_calls), _tool_calls_text(tb.tool_calls)
    if calls_a != calls_b:
        ma.tool_calls, mb.tool_calls = mark_words(calls_a, calls_b)
    return ma, mb


def _category_text(item: DriftItem | None) -> tuple[str, str]:
    """(css class, words) of a pair's drift category: ``reworded 0.94``, ``request · output tools``."""
    if item is None:
        return "same", "same"
    if item.category == "volatile-only":
        return "volatile-only", "same (only ids, timestamps, usage)"
    words = _WORDS_FOR.get(item.category, item.category)
    if item.category == "request":
        words = f"request changed · output {_WORDS_FOR.get(item.output_category, item.output_category)}"
    if item.score is not None and item.output_category in ("reworded", "changed"):
        words += f" {item.score:.2f}"
    return item.category, words


# How a pair's category reads on the page.
_WORDS_FOR = {"tools": "tool calls changed", "numbers": "numbers changed", "volatile-only": "same"}
_FOLDED = frozenset({"same", "volatile-only"})  # pairs shown closed: nothing to review in them


@dataclass
class DriftSide:
    """One cassette file compared: its name, status, the two recordings and drift's items."""

    file: str
    old: Cassette | None
    new: Cassette | None
    items: list[DriftItem]
    status: str = "modified"
    error: str | None = None


def _item_index(items: Iterable[DriftItem]) -> dict[tuple[int | None, int | None], DriftItem]:
    return {
        (i.old.seq if i.old is not None else None, i.new.seq if i.new is not None else None): i for i in items
    }


def _pair_html(a: CallView | None, b: CallView | None, item: DriftItem | None) -> tuple[str, str]:
    css, words = _category_text(item)
    if a is not None and b is not None:
        ma, mb = _pair_marks(a, b)
        left, right = _call_html(a, ma), _call_html(b, mb)
    else:
        left = _call_html(a) if a is not None else '<div class="absent">not in the earlier recording</div>'
        right = _call_html(b) if b is not None else '<div class="absent">no longer made</div>'
    shown = b or a
    label = shown.label if shown is not None else ""
    notes = []
    if item is not None and item.reason and css not in _FOLDED:
        notes.append(f'<div class="reason">{_esc(item.reason)}</div>')
    if item is not None and item.request_changes:
        changes = "".join(f"<li>{_esc(c)}</li>" for c in item.request_changes)
        notes.append(f'<ul class="request-changes">{changes}</ul>')
    old_seq = "" if a is None else _esc(a.seq)
    new_seq = "" if b is None else _esc(b.seq)
    where = f"#{old_seq or '–'} → #{new_seq or '–'}"
    head = (
        f'<div class="pair-head"><span class="category cat-{_esc(css)}">{_esc(words)}</span>'
        f'<span class="where">{_esc(where)}</span><span class="what">{_esc(label)}</span></div>'
    )
    sides = f'<div class="sides"><div class="side old">{left}</div><div class="side new">{right}</div></div>'
    if css in _FOLDED:
        sides = f'<details class="same-body"><summary>show both</summary>{sides}</details>'
    row = (
        f'<li class="pair" data-category="{_esc(css)}" data-old-seq="{old_seq}" '
        f'data-new-seq="{new_seq}">{head}{"".join(notes)}{sides}</li>'
    )
    return row, css


def _drift_section(side: DriftSide) -> tuple[str, list[dict[str, Any]]]:
    if side.error:
        return (
            f'<section class="cassette-drift"><h2>{_esc(side.file)}</h2>'
            f'<div class="error-text">cannot compare: {_esc(side.error)}</div></section>',
            [],
        )
    old_calls = {c.seq: c for c in call_views(side.old)} if side.old is not None else {}
    new_calls = {c.seq: c for c in call_views(side.new)} if side.new is not None else {}
    by_pair = _item_index(side.items)
    rows, data = [], []
    for a, b in pair_interactions(side.old, side.new):
        key = (a.seq if a is not None else None, b.seq if b is not None else None)
        item = by_pair.get(key)
        row, css = _pair_html(
            old_calls.get(a.seq) if a is not None else None,
            new_calls.get(b.seq) if b is not None else None,
            item,
        )
        rows.append(row)
        data.append({"old_seq": key[0], "new_seq": key[1], "category": css})
    counts = Counter(d["category"] for d in data)
    order = [*CATEGORIES, "same"]
    summary = ", ".join(f"{counts[c]} {c}" for c in order if counts.get(c))
    if side.status == "removed":
        summary = f"removed (was {len(old_calls)} interactions)"
    head = (
        f'<header class="section-head"><h2>{_esc(side.file)}</h2><p class="summary">{_esc(side.status)}: '
        f"{_esc(summary)}</p>"
        '<div class="columns"><span>before (committed)</span><span>after (re-recorded)</span></div></header>'
    )
    return f'<section class="cassette-drift">{head}<ol class="pairs">{"".join(rows)}</ol></section>', data


def drift_page(sides: Sequence[DriftSide], *, title: str = "cassette drift") -> str:
    """Two recordings of each cassette side by side, paired as drift pairs them, categories marked.

    Example::

        old, new = load_cassette("t.json"), load_cassette("t.pending.json")
        page = drift_page([DriftSide("t.json", old, new, compare_cassettes(old, new))])
    """
    sections: list[str] = []
    data: list[dict[str, Any]] = []
    pairs_seen: list[dict[str, Any]] = []
    for side in sides:
        html_text, pairs = _drift_section(side)
        sections.append(html_text)
        data.append({"file": side.file, "status": side.status, "error": side.error, "pairs": pairs})
        pairs_seen.extend(pairs)
    used = {p["category"] for p in pairs_seen} - _FOLDED
    legend = "".join(
        f'<li><span class="category cat-{_esc(c)}">{_esc(c)}</span> {_esc(DESCRIPTIONS[c])}</li>'
        for c in CATEGORIES
        if c in used
    )
    empty = "" if sections else '<p class="summary">No cassette changed.</p>'
    body = (
        f'<header class="page-head"><h1><span class="tool">cassette</span> {_esc(title)}</h1>'
        f'<ul class="legend">{legend}</ul></header><main>{empty}{"".join(sections)}</main>'
    )
    return _page(title, body, {"page": "drift", "cassettes": data})
