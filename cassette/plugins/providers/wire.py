"""Shared parsing for provider plugins: the JSON body and the URL of a request."""

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


def sse_fields(event: str) -> tuple[str | None, str]:
    """The ``event:`` name (or ``None``) and the joined ``data:`` lines of one SSE event.

    Example::

        sse_fields("event: message_stop\\ndata: {}") == ("message_stop", "{}")
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
