"""vcrpy / pytest-recording cassettes (YAML or JSON, format version 1), and serializer variants.

Each recorded request is rebuilt as the bytes that went over the wire and keyed
through the provider plugins, exactly as the seam keys a live call, so the same
test replays through cassette with the real SDKs. Bodies may be text, bytes
(YAML ``!!binary``), gzip/deflate/brotli-compressed, base64 (``base64_string``),
or, with pydantic-ai's serializer, a parsed ``parsed_body`` mapping. Event-stream
responses become our per-event ``events`` list. Non-LLM traffic stays
``kind="http"``.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import os
import zlib
from pathlib import Path
from typing import Any

import orjson

from cassette._store import loads, request_key
from cassette.importers._common import (
    CassetteImportError,
    Converted,
    ImportReport,
    http_response,
    normalized_call,
    save_converted,
)


def _yaml_loader() -> Any:
    try:
        import yaml
    except ImportError:
        return None
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        """Safe YAML plus the few harmless Python tags vcrpy writes (str, tuple, BytesIO, iter)."""

    def scalar(loader: Any, node: Any) -> Any:
        return loader.construct_scalar(node)

    def sequence(loader: Any, node: Any) -> Any:
        return list(loader.construct_sequence(node))

    def state_bytes(loader: Any, node: Any) -> Any:
        mapping = loader.construct_mapping(node, deep=True)
        state = mapping.get("state") or [b""]
        data = state[0] if state else b""
        return data.encode("utf-8") if isinstance(data, str) else bytes(data or b"")

    def iterated(loader: Any, node: Any) -> Any:
        mapping = loader.construct_mapping(node, deep=True)
        args = mapping.get("args") or [[]]
        return list(args[0]) if args else []

    Loader.add_constructor("tag:yaml.org,2002:python/str", scalar)
    Loader.add_constructor("tag:yaml.org,2002:python/unicode", scalar)
    Loader.add_constructor("tag:yaml.org,2002:python/tuple", sequence)
    Loader.add_constructor("tag:yaml.org,2002:python/object/new:_io.BytesIO", state_bytes)
    Loader.add_constructor("tag:yaml.org,2002:python/object/apply:builtins.iter", iterated)
    return Loader


def read_vcr(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed cassette and its serialisation (``"yaml"`` or ``"json"``)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CassetteImportError(f"no file at {path.resolve()}; check the path.", path=path) from None
    except IsADirectoryError:
        raise CassetteImportError(
            f"{path.resolve()} is a directory; pass one cassette file (import each file in turn).", path=path
        ) from None
    if not data.strip():
        raise CassetteImportError(f"{path} is empty; restore it from git or re-record it.", path=path)
    doc: Any
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            doc, fmt = loads(data), "json"
        except (ValueError, RecursionError) as exc:
            raise CassetteImportError(
                f"{path} looks like JSON but does not parse ({exc}); restore it from git or re-record it.",
                path=path,
            ) from None
    else:
        loader = _yaml_loader()
        if loader is None:
            raise CassetteImportError(
                f"{path} is YAML and PyYAML is not installed: pip install pyyaml, then run the import again.",
                path=path,
            )
        import yaml

        try:
            doc, fmt = yaml.load(data, Loader=loader), "yaml"  # a safe loader subclass
        except yaml.YAMLError as exc:
            raise CassetteImportError(
                f"{path} is not valid YAML ({str(exc).splitlines()[0]}); "
                "restore it from git or re-record it.",
                path=path,
            ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        what = (
            "a list (a vcrpy cassette from before 1.0)" if isinstance(doc, list) else "no `interactions` list"
        )
        raise CassetteImportError(
            f"{path} is not a vcrpy cassette: {what}. Pass a file written by vcrpy >= 1.0 or "
            "pytest-recording (top level `interactions:` and `version: 1`).",
            path=path,
        )
    return doc, fmt


def _header_items(headers: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(headers, dict):
        pairs = list(headers.items())
    elif isinstance(headers, list):  # [[name, value], ...]
        pairs = [tuple(p) for p in headers if isinstance(p, list | tuple) and len(p) == 2]
    else:
        pairs = []
    for name, value in pairs:
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, bytes):
                item = item.decode("latin-1")
            out.append((str(name).lower(), str(item)))
    return out


def _header(items: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in items if k == name), "")


def _as_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, io.BytesIO):
        return value.getvalue()
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, list):  # an iterator body, rebuilt as its chunks
        return b"".join(_as_bytes(v) for v in value)
    if isinstance(value, dict):  # a parsed body some serializers keep
        return orjson.dumps(value)
    raise ValueError(f"a body of type {type(value).__name__}")


def _decoded(raw: Any, encoding: str) -> bytes:
    """Body bytes with any content-encoding undone (gzip also when the header was filtered out)."""
    data = _as_bytes(raw)
    codings = [
        c.strip().lower() for c in encoding.split(",") if c.strip() and c.strip().lower() != "identity"
    ]
    if not codings and data[:2] == b"\x1f\x8b":
        codings = ["gzip"]
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
    except (OSError, EOFError, zlib.error):
        try:
            plain.decode("utf-8")  # decoded already, header left behind (decode_compressed_response, proxies)
        except UnicodeDecodeError:
            raise ValueError(f"the body does not decode as {', '.join(codings)}") from None
        return plain


def _undo(data: bytes, codings: list[str]) -> bytes:
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            data = gzip.decompress(data)
        elif coding == "deflate":
            try:
                data = zlib.decompress(data)
            except zlib.error:
                data = zlib.decompress(data, -zlib.MAX_WBITS)  # raw deflate, as some servers send
        elif coding == "br":
            try:
                import brotli  # type: ignore[import-not-found]
            except ImportError:
                raise ValueError("the body is brotli-compressed; pip install brotli to import it") from None
            data = brotli.decompress(data)
        else:
            raise ValueError(f"unknown content-encoding {coding!r}")
    return data


def _body(part: dict[str, Any], *, response: bool) -> tuple[Any, bool]:
    """The raw stored body and whether it was a parsed (already decoded) mapping."""
    if "parsed_body" in part:  # pydantic-ai's serializer: JSON bodies kept as YAML mappings
        return orjson.dumps(part["parsed_body"]), True
    body = part.get("body")
    if response and isinstance(body, dict):
        if "string" in body:
            return body["string"], False
        if "base64_string" in body:
            return base64.b64decode(body["base64_string"]), False
        return b"", False
    if response and "content" in part and body is None:  # httpx stubs of vcrpy < 2
        return part["content"], False
    return body, False


def convert_interaction(item: Any) -> Converted:
    """One vcrpy interaction as ours; `ValueError` says why it cannot be read."""
    if not isinstance(item, dict):
        raise ValueError(f"an interaction must be a mapping, not {type(item).__name__}")
    req, resp = item.get("request"), item.get("response")
    if not isinstance(req, dict) or not isinstance(resp, dict):
        raise ValueError("needs `request` and `response` mappings")
    method, uri = req.get("method"), req.get("uri")
    if not isinstance(method, str) or not isinstance(uri, str):
        raise ValueError("the request needs string `method` and `uri`")
    req_headers = _header_items(req.get("headers"))
    raw, parsed = _body(req, response=False)
    body = _as_bytes(raw) if parsed else _decoded(raw, _header(req_headers, "content-encoding"))
    kind, normalized = normalized_call(method, uri, req_headers, body)

    status_field = resp.get("status")
    if isinstance(status_field, dict):
        status = status_field.get("code")
    else:
        status = resp.get("status_code", status_field)
    if isinstance(status, bool) or not isinstance(status, int):
        raise ValueError("the response needs an integer status code (`status: {code: ...}`)")
    resp_headers = _header_items(resp.get("headers"))
    raw, parsed = _body(resp, response=True)
    data = _as_bytes(raw) if parsed else _decoded(raw, _header(resp_headers, "content-encoding"))
    if parsed and not _header(resp_headers, "content-type"):
        resp_headers.append(("content-type", "application/json"))
    notes = []
    if kind == "http" and method.upper() == "POST" and ("/chat/completions" in uri or "/v1/messages" in uri):
        notes.append(
            "looks like an LLM call but its body is not JSON: kept as plain http (matched by URL+body)."
        )
    return Converted(
        kind, request_key(normalized), normalized, http_response(status, resp_headers, data), notes
    )


def import_vcr(
    source: str | os.PathLike[str],
    to: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    skip_bad: bool = False,
) -> ImportReport:
    """Convert a vcrpy / pytest-recording cassette (YAML or JSON) into a cassette at ``to``.

    LLM calls are keyed exactly as a live call through `cassette.instrument` is,
    so tests that used vcrpy replay the same traffic through the real SDKs. An
    interaction that cannot be read raises `CassetteImportError` (nothing is
    written) unless ``skip_bad``, which converts the rest and lists it.

    Example::

        report = import_vcr("tests/cassettes/test_triage.yaml", "tests/cassettes/triage.json")
        print(report)
    """
    path = Path(source)
    doc, fmt = read_vcr(path)
    version = doc.get("version")
    report = ImportReport(source=path, target=Path(to), format=f"vcrpy {fmt}")
    if version not in (1, None):
        report.notes.append(("cassette", f"vcrpy format version {version!r}; read as version 1."))
    calls: list[Converted] = []
    bad: list[tuple[str, str]] = []
    for i, item in enumerate(doc["interactions"]):
        where = f"interaction {i}"
        try:
            converted = convert_interaction(item)
        except (ValueError, OSError, EOFError, zlib.error) as exc:
            bad.append((where, str(exc) or type(exc).__name__))
            continue
        calls.append(converted)
        report.notes.extend((where, note) for note in converted.notes)
    if bad and not skip_bad:
        listing = "\n".join(f"  {where}: {why}" for where, why in bad)
        raise CassetteImportError(
            f"{path}: {len(bad)} interactions cannot be read, so nothing was written:\n{listing}\n"
            "Fix or remove them, or pass skip_bad=True (--skip-bad) to convert the rest and list these.",
            path=path,
        )
    report.skipped.extend(bad)
    report.target, report.kinds = save_converted(calls, to, overwrite=overwrite, error=CassetteImportError)
    report.interactions = len(calls)
    return report
