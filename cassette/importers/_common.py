"""What every converter shares: the report, building a call the way the seam would, writing the cassette."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cassette.config import load_config
from cassette.core import sse
from cassette.core.canonical import request_key
from cassette.core.model import Cassette, HttpRequest, Interaction
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError, CassetteImportError, CassetteIOError
from cassette.plugins.manager import normalize_http
from cassette.seam.redaction import redacted
from cassette.seam.session import store_for
from cassette.seam.transport import DROP_RESPONSE_HEADERS, body_bytes, body_record
from cassette.secrets.placeholders import redacted_key
from cassette.store.cassettes import save_cassette

# Where a converted LLM call is pretended to have gone: only the path and headers decide its kind.
_URLS = {
    ("openai", "chat.completions"): "https://api.openai.com/v1/chat/completions",
    ("openai", "responses"): "https://api.openai.com/v1/responses",
    ("openai", "embeddings"): "https://api.openai.com/v1/embeddings",
    ("openai", "completions"): "https://api.openai.com/v1/completions",
    ("anthropic", "messages"): "https://api.anthropic.com/v1/messages",
}
REDACTED = "<redacted>"


@dataclass
class Converted:
    """One call in our terms, plus what could not be carried over faithfully."""

    kind: str
    key: str
    request: dict[str, Any]
    response: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    parallel: bool = False  # in flight at once with another call when traced: its order not checked


@dataclass
class ImportReport:
    """What a conversion wrote and what it could not convert faithfully.

    ``notes`` and ``skipped`` are ``(where, message)`` pairs: where in the
    source ("entry 3", "interaction 0", "line 12") and what the user should know.
    """

    source: Path
    target: Path
    format: str
    interactions: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    notes: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.kinds.items())) or "nothing"
        count = f"{self.interactions} interaction{'' if self.interactions == 1 else 's'}"
        lines = [f"{self.source} ({self.format}) -> {self.target}: {count} ({kinds})"]
        if self.skipped:
            lines.append(f"not converted ({len(self.skipped)}):")
            lines.extend(f"  {where}: {message}" for where, message in self.skipped)
        if self.notes:
            lines.append("not carried over faithfully:")
            lines.extend(f"  {where}: {message}" for where, message in group_notes(self.notes))
        return "\n".join(lines)


def group_notes(notes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Identical messages folded into one line naming every place they apply to, first-seen order."""
    places: dict[str, list[str]] = {}
    for where, message in notes:
        places.setdefault(message, []).append(where)
    out = []
    for message, wheres in places.items():
        if len(wheres) > 6:
            shown = ", ".join(wheres[:5]) + f" and {len(wheres) - 5} more"
        else:
            shown = ", ".join(wheres)
        out.append((shown, message))
    return out


def refuse_unreadable(
    path: Path,
    bad: list[tuple[str, str]],
    *,
    noun: tuple[str, str],
    skip_bad: bool,
    rest: str = "convert the rest",
    error: type[CassetteError] = CassetteImportError,
    readable: int | None = None,
) -> None:
    """Raise ``error`` listing every unreadable entry of ``path`` (nothing is written), unless ``skip_bad``.

    ``bad`` holds ``(where, why)`` pairs, ``where`` naming the entry's index in the source
    ("interaction 3", "entry 2", "line 7"); ``noun`` is its (singular, plural). One message
    format for every importer: the file, each entry with its reason, then the next step.
    ``readable``, the count of entries that can be read, when 0 refuses even with ``skip_bad``:
    an empty result would only hide that nothing in the file could be used.

    Example::

        refuse_unreadable(path, [("entry 2", "`kind` must be 'llm' or 'tool'")],
                          noun=("entry", "entries"), skip_bad=False)
    """
    nothing_else = readable == 0
    if not bad or (skip_bad and not nothing_else):
        return
    shown = bad[:20]
    listing = "\n".join(f"  {where}: {why}" for where, why in shown)
    more = f"\n  ... and {len(bad) - len(shown)} more" if len(bad) > len(shown) else ""
    one = len(bad) == 1
    them = "it" if one else "them"
    if nothing_else:
        count = f"its one {noun[0]} cannot" if one else f"none of its {len(bad)} {noun[1]} can"
        raise error(
            f"{path}: {count} be read, so nothing was written:\n{listing}{more}\n"
            f"Next step: fix {them} in {path}, or leave the file out.",
            path=path,
        )
    raise error(
        f"{path}: {len(bad)} {noun[0] if one else noun[1]} cannot be read, so nothing was written:\n"
        f"{listing}{more}\n"
        f"Next step: fix or remove {them} in {path}, or pass skip_bad=True (--skip-bad) "
        f"to {rest} and list {them} in the report.",
        path=path,
    )


def normalized_call(
    method: str, url: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[str, dict[str, Any]]:
    """``(kind, normalised request)`` exactly as the seam computes it for a live call with these bytes."""
    request = HttpRequest(method.upper(), url, tuple((k.lower(), v) for k, v in headers), body)
    return normalize_http(request)


def wire_url(uri: str) -> str:
    """``uri`` as the HTTP client puts it on the wire (default port dropped, host lower-cased, quoting)."""
    for lib in ("httpx2", "httpx"):
        try:
            module = __import__(lib)
        except ImportError:
            continue
        try:
            return str(module.URL(uri))
        except Exception:  # an URL the client itself would refuse: keep the recorded text
            return uri
    return uri


def llm_call(provider: str, endpoint: str, body: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """An LLM request body as the SDK would send it: ``(kind, normalised request, key)``."""
    url = _URLS[(provider, endpoint)]
    headers = [("content-type", "application/json")]
    if provider == "anthropic":
        headers.append(("anthropic-version", "2023-06-01"))
    kind, normalized = normalized_call("POST", url, headers, orjson.dumps(body))
    return kind, normalized, request_key(normalized)


def log_pair_endpoint(body: dict[str, Any], response: Any) -> tuple[str, str]:
    """Which API an SDK log pair ``{request body, parsed response}`` belongs to: ``(provider, endpoint)``,
    told by the response's shape first, then by the body's."""
    first = response[0] if isinstance(response, list) and response else response
    obj = first.get("object") if isinstance(first, dict) else None
    kind = first.get("type") if isinstance(first, dict) else None
    if obj in ("chat.completion", "chat.completion.chunk"):
        return "openai", "chat.completions"
    if obj == "response" or (isinstance(kind, str) and kind.startswith("response.")):
        return "openai", "responses"
    if obj == "text_completion":
        return "openai", "completions"
    if obj == "list" and "input" in body:
        return "openai", "embeddings"
    if (
        kind == "message"
        or kind in ("message_start", "ping")
        or (isinstance(kind, str) and "content_block" in kind)
    ):
        return "anthropic", "messages"
    if "messages" in body and "max_tokens" in body and "system" in body:
        return "anthropic", "messages"
    if "messages" in body:
        return "openai", "chat.completions"
    if "input" in body and "model" in body:
        return "openai", "responses"
    raise ValueError("cannot tell which API this request/response pair belongs to")


def json_response(body: Any, status: int = 200) -> dict[str, Any]:
    """A recorded JSON response, as the transport stores it."""
    return {"status": status, "headers": {"content-type": "application/json"}, "json": body}


def sse_response(events: list[str], status: int = 200) -> dict[str, Any]:
    """A recorded event stream, one string per SSE event, as the transport stores it."""
    return {"status": status, "headers": {"content-type": "text/event-stream"}, "events": events}


def data_events(chunks: list[Any], done: bool = True) -> list[str]:
    """OpenAI chat-style SSE: ``data: {chunk}`` per chunk, then ``data: [DONE]``."""
    events = ["data: " + orjson.dumps(c).decode() for c in chunks]
    return [*events, "data: [DONE]"] if done else events


def typed_events(events: list[dict[str, Any]]) -> list[str]:
    """Anthropic / OpenAI Responses SSE: ``event: <type>`` then ``data: {event}``."""
    return [f"event: {e.get('type', 'message')}\ndata: " + orjson.dumps(e).decode() for e in events]


def split_sse(text: str) -> list[str]:
    """A whole event-stream body cut into events, the same way the transport cuts a live one."""
    return sse.split(text)


def http_response(status: int, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
    """A whole HTTP response as the transport records it (headers filtered, SSE cut into events)."""
    kept: dict[str, Any] = {}
    content_type = ""
    for k, v in headers:
        name = k.lower()
        if name == "content-type" and not content_type:
            content_type = v
        if name in DROP_RESPONSE_HEADERS:
            continue
        if name in kept:
            prev = kept[name]
            kept[name] = [*prev, v] if isinstance(prev, list) else [prev, v]
        else:
            kept[name] = v
    if content_type.startswith("text/event-stream") and 200 <= status < 300:
        return {"status": status, "headers": kept, "events": split_sse(body.decode("utf-8", "replace"))}
    if not content_type and body[:1] in (b"{", b"["):  # headers filtered out: JSON if it reads back whole
        as_json = body_record("application/json", body)
        if "json" in as_json and body_bytes(as_json) == body:
            return {"status": status, "headers": kept, **as_json}
    return {"status": status, "headers": kept, **body_record(content_type, body)}


def redacted_paths(value: Any, needle: str = REDACTED, limit: int = 4) -> list[str]:
    """Field paths (``messages[1].content``) whose string holds ``needle``; at most ``limit``."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack and len(found) < limit:
        path, v = stack.pop(0)
        if isinstance(v, str):
            if needle in v:
                found.append(path or "(the value)")
        elif isinstance(v, dict):
            stack.extend((f"{path}.{k}" if path else str(k), item) for k, item in v.items())
        elif isinstance(v, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(v))
    return found


def save_converted(
    calls: list[Converted], target: str | os.PathLike[str], *, overwrite: bool, error: type[CassetteError]
) -> tuple[Path, dict[str, int]]:
    """Write ``calls`` as a cassette at ``target`` (redacted, blobs in the usual store); return kinds."""
    path = Path(target)
    try:
        exists = path.exists()
    except OSError as exc:  # a name too long, no permission on a parent...
        raise CassetteIOError(
            f"cannot write {path} ({exc.strerror or exc}); choose another --to path.", path=path
        ) from None
    if exists and not overwrite:
        raise error(
            f"{resolve_path(path)} already exists; pass overwrite=True (--force) to replace it, or choose "
            "another --to path.",
            path=path,
        )
    interactions = []
    for seq, c in enumerate(calls):
        request = redacted(c.request, c.kind, "request")
        # a request redacted here or before (a trace line) also keeps the key of its redacted form,
        # which replay falls back to (see Session._serve_redacted)
        extra: dict[str, Any] = {}
        if request_key(request) != c.key:
            extra["redacted_key"] = redacted_key(request)
        if c.parallel:
            extra["parallel"] = True
        interactions.append(
            Interaction(seq, c.kind, c.key, request, redacted(c.response, c.kind, "response"), extra)
        )
    store = store_for(path, load_config())
    cassette = Cassette(path=path, interactions=interactions, store=store)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a directory should be, no permission
        raise CassetteIOError(
            f"cannot create the directory {path.parent} for {path} ({exc.strerror or exc}): "
            f"{exc.filename or path.parent} must be a directory you can write to; choose another --to path.",
            path=path,
        ) from None
    config = load_config()
    save_cassette(cassette, path, config.blob_threshold, compress=config.compress)
    return path, dict(Counter(c.kind for c in calls))
