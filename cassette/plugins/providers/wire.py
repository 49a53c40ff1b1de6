"""Shared parsing for provider plugins: a request's JSON body, form parts and URL; a response's usage."""

from __future__ import annotations

import hashlib
import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import orjson

from cassette.core.model import HttpRequest


def json_body(request: HttpRequest) -> Any:
    """The request body parsed as JSON, or ``None`` when it is empty or not JSON."""
    if not request.body:
        return None
    try:
        return orjson.loads(request.body)
    except orjson.JSONDecodeError:
        return None


_BOUNDARY = re.compile(r'boundary=(?:"([^"]+)"|([^\s;]+))', re.IGNORECASE)
_PARAM = re.compile(r';\s*([A-Za-z0-9_*.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


def _params(value: str) -> dict[str, str]:
    """The parameters of a header value (``form-data; name="file"; filename="a.wav"``)."""
    out: dict[str, str] = {}
    for name, raw in _PARAM.findall(value):
        raw = raw.strip()
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        name = name.lower()
        if name.endswith("*"):  # RFC 5987: filename*=utf-8''na%C3%AFve.txt
            charset, _, encoded = raw.partition("''")
            try:
                raw = unquote(encoded or raw, encoding=charset or "utf-8", errors="replace")
            except LookupError:  # a charset Python does not know
                raw = unquote(encoded or raw, errors="replace")
            name = name[:-1]
        out[name] = raw
    return out


def multipart_parts(request: HttpRequest) -> list[dict[str, Any]] | None:
    """A ``multipart/form-data`` body as its parts, or ``None`` if it is not one (or is malformed).

    The boundary is random on every call, so the body's bytes never match twice; the
    parts do. A field keeps its text; a file keeps its name, type, size and SHA-256,
    never its bytes (an upload may be large or private).

    Example::

        multipart_parts(request) == [
            {"name": "model", "text": "whisper-1"},
            {"name": "file", "filename": "a.wav", "content_type": "audio/wav", "size": 44, "sha256": "..."},
        ]
    """
    content_type = request.header("content-type") or ""
    if not content_type.lower().startswith("multipart/"):
        return None
    found = _BOUNDARY.search(content_type)
    if found is None:
        return None
    delimiter = b"--" + (found.group(1) or found.group(2)).encode("latin-1")
    chunks = request.body.split(delimiter)
    if len(chunks) < 2 or not chunks[-1].startswith(b"--"):
        return None  # no closing delimiter: not a whole multipart body
    parts: list[dict[str, Any]] = []
    for chunk in chunks[1:-1]:
        head, sep, content = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not sep or not content.endswith(b"\r\n"):
            return None
        content = content[:-2]
        headers: dict[str, str] = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        disposition = _params(headers.get("content-disposition", ""))
        part: dict[str, Any] = {"name": disposition.get("name", "")}
        if "content-type" in headers:
            part["content_type"] = headers["content-type"]
        if "filename" in disposition:
            part["filename"] = disposition["filename"]
        else:
            try:
                part["text"] = content.decode("utf-8")
                parts.append(part)
                continue
            except UnicodeDecodeError:
                pass
        part["size"] = len(content)
        part["sha256"] = hashlib.sha256(content).hexdigest()
        parts.append(part)
    return parts


def form_fields(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Multipart parts as one body: ``{name: text}``, a file as ``{filename, content_type, size, sha256}``.

    A name given more than once (``image[]``, ``timestamp_granularities[]``) keeps every value, in order.
    """
    values: dict[str, list[Any]] = {}
    for part in parts:
        value = part["text"] if "text" in part else {k: v for k, v in part.items() if k != "name"}
        values.setdefault(part["name"], []).append(value)
    return {k: v if len(v) > 1 or k.endswith("[]") else v[0] for k, v in values.items()}


def query(request: HttpRequest) -> list[list[str]]:
    return sorted([k, v] for k, v in parse_qsl(urlsplit(request.url).query, keep_blank_values=True))


def llm_request(provider: str, endpoint: str, body: dict[str, Any], noise: frozenset[str]) -> dict[str, Any]:
    """The normalised LLM request: every body field that can change the answer, and where it went."""
    try:  # most bodies hold no noise field: copied at C speed
        clean = noise.isdisjoint(body)
    except AttributeError:  # noise given as a list or tuple of names
        clean = False
    out = dict(body) if clean else {k: v for k, v in body.items() if k not in noise}
    out["kind"] = "llm"
    out["provider"] = provider
    out["endpoint"] = endpoint
    return out


def _count(value: Any) -> bool:
    # a recorded file may say anything: only a plausible token count is added to the run's total
    return type(value) is int and 0 <= value < 2**40


def usage_tokens(usage: Any) -> int:
    """The tokens a ``usage`` object states: its ``total_tokens``, else ``input_tokens + output_tokens``.

    Example::

        usage_tokens({"input_tokens": 20, "output_tokens": 5}) == 25
    """
    if not isinstance(usage, dict):
        return 0
    total: Any = usage.get("total_tokens")
    if _count(total):
        return int(total)
    return sum(v for k, v in usage.items() if k in ("input_tokens", "output_tokens") and _count(v))


def stream_usage(events: Any, inner: tuple[str, ...] = ()) -> int:
    """The largest usage any event of a stream states: in its data's ``usage``, or in the ``usage``
    of one of its ``inner`` objects (``("response",)`` for ``{"response": {"usage": …}}``).

    Example::

        stream_usage(['data: {"usage": {"total_tokens": 9}}', "data: [DONE]"]) == 9
    """
    if not isinstance(events, list):
        return 0
    try:
        if "usage" not in "".join(events):  # at C speed: most streams never mention usage
            return 0
    except TypeError:  # an event that is not text: the loop below passes over it
        pass
    best = 0
    for event in events:
        if not isinstance(event, str) or "usage" not in event:
            continue
        if event.count("usage") == 1 and ('"usage": null' in event or '"usage":null' in event):
            continue  # a stream asked to include usage puts a null usage in every chunk
        for line in event.splitlines():
            if not line.startswith("data:"):
                continue
            try:
                data = orjson.loads(line[5:].strip())
            except orjson.JSONDecodeError:
                continue
            if isinstance(data, dict):
                found = [data.get("usage")] + [
                    data[k].get("usage") for k in inner if isinstance(data.get(k), dict)
                ]
                best = max([best, *map(usage_tokens, found)])
    return best


def response_tokens(response: dict[str, Any], inner: tuple[str, ...] = ()) -> int:
    """The tokens a recorded response states: a JSON body's ``usage``, else its stream's (`stream_usage`)."""
    body = response.get("json")
    if isinstance(body, dict):
        usage = body.get("usage")
        if not isinstance(usage, dict):
            return 0
        total = usage.get("total_tokens")  # `usage_tokens`'s first answer, read here for every call
        if type(total) is int and 0 <= total < 2**40:
            return total
        return usage_tokens(usage)
    return stream_usage(response.get("events"), inner)


# The statuses a Stainless-generated SDK retries (and every 5xx), after the wait it is told.
_RETRIED = frozenset({408, 409, 429})


def sdk_retries(status: int) -> bool:
    """Whether a Stainless-generated SDK retries a response with this status."""
    return status in _RETRIED or status >= 500
