"""vcrpy / pytest-recording cassettes and the shapes other recorders write in the same spirit.

Read, each in YAML or JSON (and gzip-compressed files of either):

- vcrpy >= 1.0 (``interactions: [{request, response}]``, ``version: 1``), with its
  ``!!binary`` bodies, ``!!python/...`` tags of old recordings, gzip/deflate/brotli
  bodies and base64 text;
- serializer variants: pydantic-ai's ``parsed_body`` mapping, langchain's gzipped
  YAML with parallel ``requests`` / ``responses`` lists;
- cassetter (``body: {type: json|text|binary|none, content}``, integer ``status``;
  its TOML form too);
- Ruby VCR / rVCR (``http_interactions``, ``body: {encoding, string}``, ``!binary``).
- weave's vcrpy patch: a request body stored as base64 text under an
  ``X-VCR-Body-Base64: true`` header that was never sent.

Each recorded request is rebuilt as the bytes that went over the wire and keyed
through the provider plugins, exactly as the seam keys a live call, so the same
test replays through cassette with the real SDKs. Event-stream responses become
our per-event ``events`` list. Non-LLM traffic stays ``kind="http"``. What cannot
be read is listed by interaction; nothing is guessed.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import io
import json
import os
import re
import tomllib
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cassette.core.canonical import loads, request_key
from cassette.core.paths import resolve_path
from cassette.errors import CassetteImportError, CassetteIOError
from cassette.importers._common import (
    Converted,
    ImportReport,
    http_response,
    normalized_call,
    refuse_unreadable,
    save_converted,
    split_sse,
    wire_url,
)

# cassetter's typed body envelope: {type: json|text|binary|none, content: ...}
_TYPED_BODIES = frozenset({"json", "text", "binary", "none"})
# Exceptions a malformed interaction can raise while being converted; each becomes one listed entry.
_ENTRY_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    LookupError,
    OSError,
    EOFError,
    zlib.error,
    OverflowError,
    RecursionError,
)


@dataclass
class VcrFile:
    """A recorder's file read into vcrpy's shape: one ``{request, response}`` mapping per interaction."""

    interactions: list[Any]
    format: str
    version: Any = None
    skipped: list[tuple[str, str]] = field(default_factory=list)


# --- reading the file ------------------------------------------------------------------------------


def _yaml_loader() -> Any:
    try:
        import yaml  # deferred: optional (the [vcr] extra), for YAML cassettes only
    except ImportError:
        return None
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        """Safe YAML plus the few harmless tags recorders write (python str/tuple/BytesIO/iter, Ruby !binary).

        Scalars resolve as YAML 1.2 does: only true/false are booleans and nothing becomes a
        timestamp, so a body written by a YAML 1.2 emitter (``on``, ``2026-01-01``) keeps its text.
        """

    resolvers: dict[Any, list[Any]] = {}
    for first, pairs in base.yaml_implicit_resolvers.items():
        kept = [(tag, regexp) for tag, regexp in pairs if tag not in (_BOOL_TAG, _TIMESTAMP_TAG)]
        if first in "tTfF":
            kept.append((_BOOL_TAG, _YAML12_BOOL))
        if kept:
            resolvers[first] = kept
    Loader.yaml_implicit_resolvers = resolvers

    def scalar(loader: Any, node: Any) -> Any:
        return loader.construct_scalar(node)

    def sequence(loader: Any, node: Any) -> Any:
        return list(loader.construct_sequence(node))

    def state_bytes(loader: Any, node: Any) -> Any:
        mapping = loader.construct_mapping(node, deep=True)
        state = mapping.get("state") or [b""]
        data = state[0] if isinstance(state, list) and state else state
        if isinstance(data, str):
            return data.encode("utf-8")
        if isinstance(data, bytes | bytearray):
            return bytes(data)
        if data is None:
            return b""
        raise ValueError(
            f"a !!python/object/new:_io.BytesIO body (line {node.start_mark.line + 1}) whose state is "
            f"{type(data).__name__}, not bytes"
        )

    def iterated(loader: Any, node: Any) -> Any:
        mapping = loader.construct_mapping(node, deep=True)
        args = mapping.get("args") or [[]]
        first = args[0] if isinstance(args, list) and args else args
        if not isinstance(first, list):
            raise ValueError(
                f"a !!python/object/apply:builtins.iter body (line {node.start_mark.line + 1}) whose args "
                f"are {type(first).__name__}, not a list of chunks"
            )
        return list(first)

    def ruby_binary(loader: Any, node: Any) -> bytes:
        value = loader.construct_scalar(node)
        tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
        return _b64(str(value), f"the {tag} value at line {node.start_mark.line + 1}")

    Loader.add_constructor("tag:yaml.org,2002:python/str", scalar)
    Loader.add_constructor("tag:yaml.org,2002:python/unicode", scalar)
    Loader.add_constructor("tag:yaml.org,2002:python/bytes", ruby_binary)
    Loader.add_constructor("tag:yaml.org,2002:python/tuple", sequence)
    Loader.add_constructor("tag:yaml.org,2002:python/object/new:_io.BytesIO", state_bytes)
    Loader.add_constructor("tag:yaml.org,2002:python/object/apply:builtins.iter", iterated)
    Loader.add_constructor("!binary", ruby_binary)
    Loader.add_constructor("tag:yaml.org,2002:binary", ruby_binary)  # strict: PyYAML skips bad characters
    return Loader


def _b64(text: str, what: str) -> bytes:
    """Strict base64 (whitespace allowed): PyYAML and ``b64decode`` skip stray characters silently."""
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{what} is not valid base64 ({exc})") from None


# What a YAML file may expand to through its aliases (``&a`` / ``*a``), counted in items and characters:
# a few kilobytes of nested aliases ("billion laughs") would otherwise expand to gigabytes when converted.
_MAX_EXPANDED = 1 << 28


def _check_expansion(path: Path, doc: Any) -> None:
    """Refuse a document whose aliases refer to themselves or expand beyond `_MAX_EXPANDED`."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, list | dict):
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        if done:
            open_.discard(id(node))
            total = 1 + sum(sizes[id(c)] if isinstance(c, list | dict) else _leaf(c) for c in children)
            if isinstance(node, dict):
                total += sum(_leaf(k) for k in node)
            if total > _MAX_EXPANDED:
                raise CassetteImportError(
                    f"{path} expands through its YAML aliases (&anchor / *alias) to more than "
                    f"{_MAX_EXPANDED:,} items and characters, far beyond any recorded cassette; it was not "
                    "imported. Restore the file from git or re-record it.",
                    path=path,
                )
            sizes[id(node)] = total
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_:
            raise CassetteImportError(
                f"{path} has a YAML alias (*alias) inside the very node it refers to, a structure that "
                "never ends; no recorder writes that. Restore the file from git or re-record it.",
                path=path,
            )
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if isinstance(c, list | dict) and id(c) not in sizes)


def _leaf(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes) else 1


_BOOL_TAG = "tag:yaml.org,2002:bool"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


def _parse(path: Path, data: bytes) -> tuple[Any, str]:
    """The document and its serialisation (``yaml``, ``json`` or ``toml``)."""
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        try:
            return loads(data), "json"
        except (ValueError, RecursionError) as exc:
            raise CassetteImportError(
                f"{path} looks like JSON but does not parse ({exc}); restore it from git or re-record it.",
                path=path,
            ) from None
    if path.suffix.lower() == ".toml" or re.search(rb"^\s*\[\[\s*interactions\s*\]\]", data, re.M):
        try:
            return tomllib.loads(data.decode("utf-8")), "toml"
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise CassetteImportError(
                f"{path} looks like TOML but does not parse ({exc}); restore it from git or re-record it.",
                path=path,
            ) from None
    loader = _yaml_loader()
    if loader is None:
        raise CassetteImportError(
            f"{path} is YAML and PyYAML is not installed: pip install pyyaml, then run the import again.",
            path=path,
        )
    import yaml  # deferred: optional (the [vcr] extra), for YAML cassettes only

    try:
        doc = yaml.load(data, Loader=loader)  # a safe loader subclass
    except yaml.constructor.ConstructorError as exc:
        tag = getattr(exc, "problem", "") or str(exc).splitlines()[0]
        if "constructor for the tag" not in tag:  # a bad merge key, an unhashable key...
            line = f" at line {exc.problem_mark.line + 1}" if exc.problem_mark is not None else ""
            raise CassetteImportError(
                f"{path} is not valid YAML ({tag}{line}); restore it from git or re-record it.", path=path
            ) from None
        raise CassetteImportError(
            f"{path} uses a YAML tag the importer does not read ({tag}): only plain data and the "
            "!!binary / !!python/str / BytesIO tags vcrpy writes are read, never arbitrary objects. "
            "Re-save the cassette with vcrpy's default serializer, or re-record it.",
            path=path,
        ) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CassetteImportError(
            f"{path} is not valid YAML ({first}); restore it from git or re-record it.", path=path
        ) from None
    _check_expansion(path, doc)
    return doc, "yaml"


def read_vcr(path: Path) -> VcrFile:
    """The recorder's file as a `VcrFile`, or `CassetteImportError` saying what it is instead."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CassetteImportError(f"no file at {resolve_path(path)}; check the path.", path=path) from None
    except IsADirectoryError:
        raise CassetteImportError(
            f"{resolve_path(path)} is a directory; pass one cassette file (import each file in turn).",
            path=path,
        ) from None
    except OSError as exc:  # no permission, a name too long, a symlink loop...
        raise CassetteIOError(
            f"cannot read {path} ({exc.strerror or exc}); check the path and its permissions.", path=path
        ) from None
    compressed = data[:2] == b"\x1f\x8b"
    if compressed:  # langchain stores cassettes as gzipped YAML (.yaml.gz)
        try:
            data = _inflate(data, 16 + zlib.MAX_WBITS, members=True)
        except (OSError, EOFError, zlib.error, _TooLarge) as exc:
            raise CassetteImportError(
                f"{path} is gzip-compressed but does not decompress ({exc}); restore it from git.", path=path
            ) from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark some Windows editors add
    if not data.strip():
        raise CassetteImportError(f"{path} is empty; restore it from git or re-record it.", path=path)
    doc, serialisation = _parse(path, data)
    if compressed:
        serialisation += ", gzipped"
    return _shape(path, doc, serialisation)


_HTTP_ONLY = "cassette replays HTTP traffic only"


def _shape(path: Path, doc: Any, serialisation: str) -> VcrFile:
    if isinstance(doc, dict):
        if isinstance(doc.get("interactions"), list):
            items = doc["interactions"]
            if _is_ours(items):
                raise CassetteImportError(
                    f"{path} is already a cassette (format version {doc.get('version')!r}): there is "
                    "nothing to import. Use it as it is with cassette.use / cassette.using, or copy it.",
                    path=path,
                )
            other = _other_protocol(items)
            if other is not None:
                raise CassetteImportError(
                    f"{path} is {other}: {_HTTP_ONLY}, so there is nothing to import. Leave it out of "
                    "the import.",
                    path=path,
                )
            flavour = "cassetter" if any(_is_cassetter(i) for i in items) else "vcrpy"
            found = VcrFile(items, f"{flavour} {serialisation}", doc.get("version"))
            for name in ("grpc_interactions", "ws_interactions"):
                others = doc.get(name)
                for i, _ in enumerate(others if isinstance(others, list) else []):
                    what = "gRPC" if name.startswith("grpc") else "WebSocket"
                    found.skipped.append((f"{name} {i}", f"a {what} recording: {_HTTP_ONLY}."))
            return found
        if isinstance(doc.get("http_interactions"), list):
            return VcrFile(doc["http_interactions"], f"ruby vcr {serialisation}", doc.get("recorded_with"))
        requests, responses = doc.get("requests"), doc.get("responses")
        if isinstance(requests, list) and isinstance(responses, list):
            if len(requests) != len(responses):
                raise CassetteImportError(
                    f"{path} holds {len(requests)} requests but {len(responses)} responses, so they cannot "
                    "be paired; restore it from git or re-record it.",
                    path=path,
                )
            pairs = [{"request": q, "response": r} for q, r in zip(requests, responses, strict=True)]
            return VcrFile(pairs, f"vcrpy {serialisation} (requests/responses lists)", doc.get("version"))
        if isinstance(doc.get("entries"), list):
            raise CassetteImportError(
                f"{path} is a cendor-cassette file (`entries`), not a vcrpy cassette: run "
                f"`cassette import cendor {path} --to NEW.json` (import_cendor) instead.",
                path=path,
            )
    if isinstance(doc, dict) and isinstance(doc.get("log"), dict) and "entries" in doc["log"]:
        raise CassetteImportError(
            f"{path} is a HAR file (`log.entries`, saved by a browser or a proxy), which cassette does not "
            "import: record the calls with cassette (or vcrpy, then `cassette import vcr`) instead.",
            path=path,
        )
    what = "a list (a vcrpy cassette from before 1.0)" if isinstance(doc, list) else "no `interactions` list"
    raise CassetteImportError(
        f"{path} is not a vcrpy cassette: {what}. Pass a file written by vcrpy >= 1.0 or "
        "pytest-recording (top level `interactions:` and `version: 1`), cassetter, or Ruby VCR.",
        path=path,
    )


def _is_ours(items: list[Any]) -> bool:
    first = next((i for i in items if isinstance(i, dict)), None)
    if first is None or not {"seq", "kind", "key"} <= set(first):
        return False
    return "uri" not in (first.get("request") or {})


def _other_protocol(items: list[Any]) -> str | None:
    """What a file in vcrpy's layout records instead of HTTP, when no interaction is an HTTP exchange."""
    if not items or not all(isinstance(i, dict) and "request" not in i for i in items):
        return None
    if all(i.get("direction") in ("sent", "received") or i.get("kind") == "close" for i in items):
        return (
            "a WebSocket recording (each interaction a `message` sent or received, as pydantic-ai's "
            "realtime tests write them)"
        )
    if any({"request_sample", "request_stream"} & i.keys() for i in items):
        return (
            "a gRPC recording (`request_sample` / `request_stream` and their responses, as pydantic-ai's "
            "xAI tests write them)"
        )
    return None


def _is_cassetter(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    response = item.get("response")
    if isinstance(response, dict) and isinstance(response.get("status"), int):
        return True
    return any(
        isinstance(part, dict) and _typed(part.get("body")) for part in (item.get("request"), response)
    )


def _typed(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and body.get("type") in _TYPED_BODIES
        and set(body) <= {"type", "content", "$toml"}
    )


# --- headers and bodies ----------------------------------------------------------------------------


_HEADERS_SHAPE = (
    "must be a mapping of name to value(s), a list of [name, value] pairs or of {name, value} mappings"
)


def _header_items(headers: Any, part: str = "request") -> list[tuple[str, str]]:
    """``(lower-cased name, value)`` pairs; `ValueError` for a shape that would lose headers silently."""
    out: list[tuple[str, str]] = []
    if headers is None:
        return out
    if isinstance(headers, dict):
        pairs = list(headers.items())
    elif isinstance(headers, list):  # [[name, value], ...] or HAR-style [{name, value}, ...]
        pairs = []
        for i, p in enumerate(headers):
            if isinstance(p, list | tuple) and len(p) == 2:
                pairs.append((p[0], p[1]))
            elif isinstance(p, dict) and set(p) >= {"name", "value"}:
                pairs.append((p["name"], p["value"]))
            else:
                raise ValueError(f"the {part} headers {_HEADERS_SHAPE}; item {i} is {_shown(p)}")
    else:
        raise ValueError(f"the {part} headers {_HEADERS_SHAPE}, not {_shown(headers)}")
    for name, value in pairs:
        if not isinstance(name, str | bytes) or not name:
            raise ValueError(f"a {part} header name must be a non-empty string, not {_shown(name)}")
        if isinstance(name, bytes):
            name = name.decode("latin-1")
        for item in value if isinstance(value, list | tuple) else [value]:
            if item is None:
                continue
            if isinstance(item, bytes):
                item = item.decode("latin-1")
            elif isinstance(item, bool):
                item = str(item).lower()
            elif not isinstance(item, str | int | float):
                raise ValueError(
                    f"the {part} header {name!r} has a {type(item).__name__} value: {_shown(item)}"
                )
            out.append((name.lower(), str(item)))
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _header(items: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in items if k == name), "")


def _content_encoding(items: list[tuple[str, str]]) -> str:
    """Every ``content-encoding`` value in order (a list of them is layered codings, like a comma list)."""
    return ", ".join(v for k, v in items if k == "content-encoding")


def _json_bytes(value: Any) -> bytes:
    # YAML may give non-string keys (an unquoted `200:`): JSON would have had them as strings
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:  # integers beyond 64 bits, nesting deeper than orjson writes
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _as_bytes(value: Any, encoding: str | None = None) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, io.BytesIO):
        return value.getvalue()
    if isinstance(value, str):
        return value.encode(_codec(encoding), "surrogateescape")
    if isinstance(value, list):  # an iterator body, rebuilt as its chunks
        return b"".join(_as_bytes(v, encoding) for v in value)
    if isinstance(value, dict | int | float | bool):  # a structured JSON body (aiohttp records `json=` so)
        return _json_bytes(value)
    raise ValueError(f"a body of type {type(value).__name__}")


def _codec(encoding: str | None) -> str:
    """The Python codec for a Ruby VCR ``encoding`` (ASCII-8BIT text is UTF-8 that was valid)."""
    if not encoding or encoding.upper() in ("ASCII-8BIT", "BINARY"):
        return "utf-8"
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return "utf-8"


def _typed_body(body: dict[str, Any]) -> bytes:
    """cassetter's envelope: JSON as structure, text as text, binary as hex, none as nothing."""
    kind, content = body["type"], body.get("content")
    if kind == "none" or content is None:
        return b""
    if kind == "json":
        if isinstance(content, str) and body.get("$toml"):  # TOML cannot hold null: JSON kept as a string
            content = orjson.loads(content)
        return _json_bytes(content)
    if kind == "binary":
        if isinstance(content, int):  # an all-digit hex string an emitter left unquoted
            content = str(content)
        if not isinstance(content, str):
            raise ValueError("a binary body's content must be a hex string")
        return bytes.fromhex(content)
    return _as_bytes(content)


def _body(part: dict[str, Any], *, response: bool) -> tuple[bytes, bool]:
    """The stored body as bytes and whether it is already decoded (content-encoding undone)."""
    parsed = part.get("parsed_body")
    if parsed is not None:  # pydantic-ai's serializer: JSON bodies kept as YAML mappings
        return _json_bytes(parsed), True
    body = part.get("body")
    if isinstance(body, dict):
        if _typed(body):
            return _typed_body(body), True  # cassetter decompresses before writing
        encoding = body.get("encoding") if isinstance(body.get("encoding"), str) else None
        if "string" in body:
            return _as_bytes(body["string"], encoding), False
        if "base64_string" in body:
            text = body["base64_string"]
            if text is not None and not isinstance(text, str):
                raise ValueError(f"`base64_string` must be base64 text, not {type(text).__name__}")
            return _b64(text or "", "the `base64_string` body"), False
        if set(body) <= {"encoding"}:
            return b"", False
        return _json_bytes(body), True
    if response and body is None and "content" in part:  # httpx stubs of vcrpy < 2
        return _as_bytes(part["content"]), False
    return _as_bytes(body), False


# Content types whose body is itself a file, never a compressed transfer of text: a gzip body
# under one of these is the payload (a .gz download), not a Content-Encoding whose header was filtered.
_TEXT_TYPES = ("json", "text/", "xml", "javascript", "event-stream", "x-www-form-urlencoded", "ndjson")


def _textual(content_type: str) -> bool:
    content_type = content_type.lower()
    return not content_type.strip() or any(t in content_type for t in _TEXT_TYPES)


def _headerless_gzip(data: bytes, raw: Any) -> bytes | None:
    """Gzip bytes of a body whose Content-Encoding header was filtered out, however they were stored.

    As bytes (``!!binary``), as latin-1 text, or as base64 text (serializers that cannot hold bytes).
    """
    if data[:2] == b"\x1f\x8b":
        return data
    if isinstance(raw, str):
        if raw[:2] == "\x1f\x8b":
            try:
                return raw.encode("latin-1")
            except UnicodeEncodeError:
                return None
        if raw.lstrip()[:4] == "H4sI":  # base64 of the gzip magic and method
            try:
                return base64.b64decode("".join(raw.split()), validate=True)
            except (binascii.Error, ValueError):
                return None
    return None


def _decoded(data: bytes, encoding: str, *, raw: Any = None, content_type: str = "") -> bytes:
    """Body bytes with any content-encoding undone (gzip also when the header was filtered out)."""
    codings = [
        c.strip().lower() for c in encoding.split(",") if c.strip() and c.strip().lower() != "identity"
    ]
    if not codings and _textual(content_type):
        packed = _headerless_gzip(data, raw)
        if packed is not None:
            try:
                return _undo(packed, ["gzip"])
            except (OSError, EOFError, zlib.error):
                return data  # gzip magic by chance: the body as stored
    if not codings:
        return data
    plain = data
    if isinstance(raw, str):  # compressed bytes stored as text: base64, or latin-1 by some serializers
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            data = raw.encode("latin-1", "replace")
    try:
        return _undo(data, codings)
    except _TooLarge as exc:
        raise ValueError(str(exc)) from None
    except (OSError, EOFError, zlib.error, _MissingCodec) as exc:
        try:
            plain.decode("utf-8")  # decoded already, header left behind (decode_compressed_response, proxies)
        except UnicodeDecodeError:
            if isinstance(exc, _MissingCodec):
                raise ValueError(str(exc)) from None
            raise ValueError(f"the body does not decode as {', '.join(codings)}") from None
        return plain


class _MissingCodec(Exception):
    """A content-encoding whose decoder is an optional package that is not installed."""


class _TooLarge(Exception):
    """A compressed body (or file) that inflates beyond `_MAX_INFLATED`: a decompression bomb."""


_MAX_INFLATED = 1 << 28  # 256 MiB: far beyond any recorded body, far below running out of memory


def _inflate(data: bytes, wbits: int, *, members: bool = False) -> bytes:
    """zlib / gzip / raw deflate decompression bounded by `_MAX_INFLATED` (gzip: every member)."""
    out = bytearray()
    while True:
        d = zlib.decompressobj(wbits)
        out += d.decompress(data, _MAX_INFLATED + 1 - len(out))
        if len(out) > _MAX_INFLATED:
            raise _TooLarge(f"the body inflates to more than {_MAX_INFLATED >> 20} MiB")
        if not d.eof:
            raise EOFError("the compressed data ends early (truncated)")
        data = d.unused_data
        if not members or not data.strip(b"\x00"):
            return bytes(out)


def _undo(data: bytes, codings: list[str]) -> bytes:
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            data = _inflate(data, 16 + zlib.MAX_WBITS, members=True)
        elif coding == "deflate":
            try:
                data = _inflate(data, zlib.MAX_WBITS)
            except zlib.error:
                data = _inflate(data, -zlib.MAX_WBITS)  # raw deflate, as some servers send
        elif coding == "br":
            try:  # deferred: optional, installed by whoever records br-encoded bodies
                import brotli  # type: ignore[import-not-found]
            except ImportError:
                raise _MissingCodec(
                    "the body is brotli-compressed; pip install brotli to import it"
                ) from None
            data = brotli.decompress(data)
            if len(data) > _MAX_INFLATED:
                raise _TooLarge(f"the body inflates to more than {_MAX_INFLATED >> 20} MiB")
        elif coding == "zstd":
            try:  # deferred: optional, installed by whoever records zstd-encoded bodies
                import zstandard  # type: ignore[import-not-found]
            except ImportError:
                raise _MissingCodec(
                    "the body is zstd-compressed; pip install zstandard to import it"
                ) from None
            data = zstandard.ZstdDecompressor().decompress(data, max_output_size=_MAX_INFLATED)
        else:
            raise ValueError(f"unknown content-encoding {coding!r}")
    return data


def _raw_value(part: dict[str, Any]) -> Any:
    body = part.get("body")
    return body.get("string") if isinstance(body, dict) else body


def _wire_body(part: dict[str, Any], headers: list[tuple[str, str]], *, response: bool) -> bytes:
    data, decoded = _body(part, response=response)
    if decoded:
        return data
    return _decoded(
        data, _content_encoding(headers), raw=_raw_value(part), content_type=_header(headers, "content-type")
    )


def _status(resp: dict[str, Any]) -> int:
    field_ = resp.get("status")
    status = field_.get("code") if isinstance(field_, dict) else field_
    if resp.get("status_code") is not None:
        other = resp["status_code"]
        if status is not None and str(other).strip() != str(status).strip():
            raise ValueError(f"the response says both status {status!r} and status_code {other!r}")
        status = other
    if isinstance(status, str) and status.strip().isdigit():
        status = int(status)
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 999:
        raise ValueError("the response needs an integer status code (`status: {code: ...}` or `status: 200`)")
    return status


def _toml_part(part: dict[str, Any]) -> dict[str, Any]:
    """cassetter's TOML keeps the body as ``body_type`` / ``body_content`` (JSON as a string)."""
    if "body_type" not in part:
        return part
    out = {k: v for k, v in part.items() if k not in ("body_type", "body_content")}
    out["body"] = {"type": part["body_type"] or "none", "content": part.get("body_content"), "$toml": True}
    return out


# --- one interaction -------------------------------------------------------------------------------


_STREAM_NOTE = (
    "the response has no content-type (filtered when recorded) but its body is an event stream answering "
    "a stream=true request: kept as events, so it replays event by event."
)


def convert_interaction(item: Any) -> Converted:
    """One recorded interaction as ours; `ValueError` (or another listed error) says why it cannot be."""
    if not isinstance(item, dict):
        raise ValueError(f"an interaction must be a mapping, not {type(item).__name__}")
    req, resp = item.get("request"), item.get("response")
    if not isinstance(req, dict) or not isinstance(resp, dict):
        raise ValueError("needs `request` and `response` mappings")
    req, resp = _toml_part(req), _toml_part(resp)
    method, uri = req.get("method"), req.get("uri")
    if not isinstance(method, str) or not isinstance(uri, str) or not method or not uri:
        raise ValueError("the request needs string `method` and `uri`")
    req_headers = _header_items(req.get("headers"), "request")
    flagged = _base64_flagged(req_headers)
    req_headers = [(k, v) for k, v in req_headers if k != _BASE64_FLAG]
    if flagged:  # weave's vcrpy patch: the body stored as base64 text, marked by a header never sent
        stored, _ = _body(req, response=False)
        body = _b64(stored.decode("latin-1"), "the request body marked `X-VCR-Body-Base64: true`")
        body = _decoded(
            body, _content_encoding(req_headers), content_type=_header(req_headers, "content-type")
        )
    else:
        body = _wire_body(req, req_headers, response=False)
    kind, normalized = normalized_call(method, wire_url(uri), req_headers, body)

    status = _status(resp)
    resp_headers = _header_items(resp.get("headers"), "response")
    data = _wire_body(resp, resp_headers, response=True)
    notes = []
    content_type = _header(resp_headers, "content-type")
    if data[:2] == b"\x1f\x8b" and not _content_encoding(resp_headers) and not _textual(content_type):
        notes.append(
            f"the body is gzip data under content-type {content_type!r} with no content-encoding: kept "
            "compressed, as a .gz payload. If the recorder dropped a `Content-Encoding: gzip` header, add it "
            "back to the source and import again."
        )
    json_body = resp.get("parsed_body") is not None or (
        _typed(resp.get("body")) and resp["body"]["type"] == "json"
    )
    if json_body and not _header(resp_headers, "content-type"):
        resp_headers.append(("content-type", "application/json"))
    recorded = http_response(status, resp_headers, data)
    if "events" in recorded and not _utf8(data):
        notes.append(
            "the event stream is not valid UTF-8: its undecodable bytes became U+FFFD, as a live "
            "recording (and the SDK reading the stream) would have them."
        )
    if "events" not in recorded and _unlabelled_stream(normalized, status, resp_headers, data):
        recorded = {"status": status, "headers": recorded["headers"], "events": split_sse(data.decode())}
        notes.append(_STREAM_NOTE)
    notes.extend(_sdk_default_notes(kind, normalized))
    if kind == "http" and method.upper() == "POST" and ("/chat/completions" in uri or "/v1/messages" in uri):
        notes.append(
            "looks like an LLM call but its body is not JSON: kept as plain http (matched by URL+body)."
        )
    return Converted(kind, request_key(normalized), normalized, recorded, notes)


# A request header some recorders add (weave's vcrpy patch for binary uploads) to say the stored body is
# the base64 of the bytes sent; the header itself never went over the wire.
_BASE64_FLAG = "x-vcr-body-base64"


def _base64_flagged(headers: list[tuple[str, str]]) -> bool:
    """Whether the flag header says the stored request body is base64 of the bytes sent."""
    return _header(headers, _BASE64_FLAG).strip().lower() in ("true", "1", "yes")


# Request fields today's SDKs send even when the call leaves them out, which older SDKs did not send:
# (provider, endpoint) -> (field, the value sent). A recording without the field cannot match such a call.
_SDK_DEFAULTS = {("openai", "embeddings"): ("encoding_format", "base64")}


# Request fields today's SDKs send under another name: (provider, endpoint) -> (old, new). anthropic's
# structured output (`messages.parse(output_format=...)`) went out as `output_format` up to 0.7x and
# as `output_config.format` since.
_SDK_MOVED = {("anthropic", "messages"): ("output_format", "output_config.format")}


def _sdk_default_notes(kind: str, normalized: dict[str, Any]) -> list[str]:
    if kind != "llm":
        return []
    call = (str(normalized.get("provider")), str(normalized.get("endpoint")))
    notes = []
    default = _SDK_DEFAULTS.get(call)
    if default is not None and default[0] not in normalized:
        name, value = default
        notes.append(
            f"recorded without `{name}` (an older SDK); current {normalized['provider']} SDKs send "
            f"{name}={value!r} when the call does not set it, so such a call misses this recording. "
            f"Re-record it, or drop `{name}` in a cassette_normalize plugin (the recorded response is "
            "served as it is)."
        )
    moved = _SDK_MOVED.get(call)
    if moved is not None and moved[0] in normalized:
        old, new = moved
        notes.append(
            f"recorded with `{old}` (an older SDK); current {normalized['provider']} SDKs send it as "
            f"`{new}`, so the same call made today misses this recording. Re-record it, or move the "
            "field in a cassette_normalize plugin (the recorded response is served as it is)."
        )
    return notes


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _unlabelled_stream(
    normalized: dict[str, Any], status: int, headers: list[tuple[str, str]], data: bytes
) -> bool:
    if _header(headers, "content-type") or normalized.get("stream") is not True or not 200 <= status < 300:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.lstrip().startswith(("event:", "data:"))


def import_vcr(
    source: str | os.PathLike[str],
    to: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    skip_bad: bool = False,
) -> ImportReport:
    """Convert a vcrpy / pytest-recording cassette (or cassetter, Ruby VCR) into a cassette at ``to``.

    YAML, JSON, TOML (cassetter) and gzipped files are read. LLM calls are keyed
    exactly as a live call through `cassette.instrument` is, so tests that used
    vcrpy replay the same traffic through the real SDKs. An interaction that
    cannot be read raises `CassetteImportError` (nothing is written) unless
    ``skip_bad``, which converts the rest and lists it.

    Example::

        report = import_vcr("tests/cassettes/test_triage.yaml", "tests/cassettes/triage.json")
        print(report)
    """
    path = Path(source)
    found = read_vcr(path)
    report = ImportReport(source=path, target=Path(to), format=found.format)
    if found.version not in (1, None) and not found.format.startswith("ruby"):
        report.notes.append(("cassette", f"format version {found.version!r}; read as version 1."))
    calls: list[Converted] = []
    bad: list[tuple[str, str]] = []
    for i, item in enumerate(found.interactions):
        where = f"interaction {i}"
        try:
            converted = convert_interaction(item)
        except _ENTRY_ERRORS as exc:
            bad.append((where, _why(exc)))
            continue
        calls.append(converted)
        report.notes.extend((where, note) for note in converted.notes)
    refuse_unreadable(path, bad, noun=("interaction", "interactions"), skip_bad=skip_bad, readable=len(calls))
    report.skipped.extend(found.skipped)
    report.skipped.extend(bad)
    report.target, report.kinds = save_converted(calls, to, overwrite=overwrite, error=CassetteImportError)
    report.interactions = len(calls)
    return report


def _why(exc: BaseException) -> str:
    """A one-line reason for a failed interaction; library errors get their kind named."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, ValueError) and type(exc) is ValueError and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
