"""cendor-cassette files (format versions 1 and 2) and cendor-style JSONL trace lines.

cendor stored a *normalised subset* of each call: for an LLM call only
``provider``, ``model``, ``messages`` (and, in v2, ``stream``); for a tool call
``name`` and ``arguments: {args, kwargs}``. Responses are the SDK object's
``model_dump()`` (a list of chunk dumps when streamed). We rebuild the HTTP
request the SDK would have sent and key it through the provider plugins, so a
live call with the same model and messages (and nothing else) matches. Whatever
cannot be carried over faithfully is listed in the report, entry by entry.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cassette.core.canonical import loads, request_key
from cassette.core.paths import resolve_path
from cassette.errors import CassetteImportError, CassetteIOError
from cassette.importers._common import (
    Converted,
    ImportReport,
    data_events,
    json_response,
    llm_call,
    redacted_paths,
    refuse_unreadable,
    save_converted,
    sse_response,
    typed_events,
)
from cassette.plugins.manager import normalize
from cassette.seam.tools import tool_request

VERSIONS = (1, 2)
_PROVIDERS = {"openai": "openai", "azure": "openai", "azure_openai": "openai", "anthropic": "anthropic"}

ONLY_MODEL_AND_MESSAGES = (
    "cendor stored only model, messages and stream: a live call that also sends tools, temperature, "
    "max_tokens, response_format or any other parameter has another key. Pass those with --set NAME=VALUE "
    "(defaults=) if every call used the same value, or re-record."
)
ANTHROPIC_MAX_TOKENS = (
    "Anthropic calls always send max_tokens (and often system), which cendor did not store: pass "
    "--set anthropic.max_tokens=N (defaults={'anthropic.max_tokens': N}) with the value your code uses, "
    "or this entry never matches."
)
MODEL_DUMP = (
    "the response is cendor's model_dump() of the SDK object (it replayed a SimpleNamespace stand-in): "
    "cassette replays the SDK's real type parsed from it, but fields the API omitted come back as null."
)
MAPPING = "recorded as a mapping (dict access); replay now returns the SDK's own object, not a dict."
RESPONSES_INPUT = (
    "a Responses API call (responses.create): cendor stored its `input` as a message list and a string "
    "input as [{'role': 'user', 'content': ...}], so it is keyed with that list as `input`; a call that "
    "passes the same text as a plain string (input='...') has another key: pass the list, or re-record."
)
STREAM_INFERRED = (
    "version 1 stored no stream flag; the response is a list of chunks, so stream=true is assumed."
)


def tool_functions(
    tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] | None,
) -> dict[str, Any]:
    """``{name: function}`` from a mapping or a list of functions (named by ``__name__``)."""
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        return dict(tools)
    return {str(getattr(fn, "__name__", fn)): fn for fn in tools}


def _canonical_arguments(arguments: Any) -> tuple[list[Any], dict[str, Any]]:
    # the shapes cendor itself accepted: {args, kwargs}, a bare list, a bare mapping, a scalar
    if isinstance(arguments, dict) and ("args" in arguments or "kwargs" in arguments):
        args, kwargs = arguments.get("args") or [], arguments.get("kwargs") or {}
    elif isinstance(arguments, list):
        args, kwargs = arguments, {}
    elif isinstance(arguments, dict):
        args, kwargs = [], arguments
    else:
        args, kwargs = [arguments], {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ValueError("arguments.args must be a list and arguments.kwargs an object")
    return args, kwargs


def convert_tool(
    request: dict[str, Any], response: Any, response_type: str | None, tools: dict[str, Any]
) -> Converted:
    """A cendor tool entry as our ``kind="tool"`` interaction."""
    name = request.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a tool request needs a string `name`")
    args, kwargs = _canonical_arguments(request.get("arguments", {}))
    notes: list[str] = []
    fn = tools.get(name)
    if fn is not None:
        try:
            signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = None
        ours = tool_request(name, signature, tuple(args), dict(kwargs))
        if set(ours["arguments"]) == {"args", "kwargs"} and signature is not None:
            notes.append(
                f"the arguments do not fit the signature of {name}{signature}; kept as {{args, kwargs}}, "
                "which a live call of that function never records."
            )
    elif not args:
        ours = {"kind": "tool", "name": name, "arguments": dict(kwargs)}
        if kwargs:
            notes.append(
                "bound by keyword name (no tool function given): right for an ordinary function; one taking "
                f"**kwargs or a self records differently. Pass --tool module:{name} to bind exactly."
            )
    else:
        ours = {"kind": "tool", "name": name, "arguments": {"args": list(args), "kwargs": dict(kwargs)}}
        notes.append(
            f"positional arguments kept as {{args, kwargs}}: a live @cassette.tool call records parameter "
            f"names, so this entry matches only once {name} is given (--tool module:{name}, tools=[{name}])."
        )
    normalized = normalize(ours, "tool")
    if response_type is None and isinstance(response, dict):
        notes.append(
            "version 1 did not record whether the tool returned a mapping or an object: replay returns "
            "a dict."
        )
    elif response_type == "object" and isinstance(response, dict):
        notes.append(
            "the tool returned an object (cendor kept only its fields): replay returns those fields "
            "as a dict."
        )
    notes.extend(_placeholder_notes(normalized, {"result": response}))
    return Converted("tool", request_key(normalized), normalized, {"result": response}, notes)


def convert_llm(
    request: dict[str, Any],
    response: Any,
    response_type: str | None,
    *,
    version: int,
    defaults: Mapping[str, Any] | None = None,
) -> Converted:
    """A cendor LLM entry as the chat.completions / responses / messages call its SDK would have made.

    Raises `ValueError` (with the reason) when the entry cannot be replayed over HTTP at all.
    """
    provider_name = str(request.get("provider", ""))
    provider = _PROVIDERS.get(provider_name.lower())
    if provider is None:
        raise LookupError(
            f"provider {provider_name!r}: cassette replays OpenAI and Anthropic HTTP traffic, so this entry "
            "cannot be converted; re-record it with cassette."
        )
    model, messages = request.get("model"), request.get("messages")
    if not isinstance(model, str) or not isinstance(messages, list):
        raise ValueError("an llm request needs a string `model` and a `messages` list")
    notes = [ONLY_MODEL_AND_MESSAGES]
    body: dict[str, Any] = {"model": model, "messages": messages}
    streamed = isinstance(response, list)
    if "stream" in request:
        stream = bool(request["stream"])
    else:
        stream = streamed
        if streamed and version < 2:
            notes.append(STREAM_INFERRED)
    if stream != streamed:
        raise ValueError(
            f"the request says stream={str(stream).lower()} but the response is "
            f"{'a list of chunks' if streamed else 'one object'}"
        )
    if stream:
        body["stream"] = True
    for name, value in (defaults or {}).items():
        scope, dot, field = name.partition(".")
        if not dot:
            body.setdefault(name, value)
        elif _PROVIDERS.get(scope.lower()) == provider:  # "anthropic.max_tokens": that provider only
            body.setdefault(field, value)
    if provider == "anthropic" and "max_tokens" not in body:
        notes.append(ANTHROPIC_MAX_TOKENS)
    endpoint = "chat.completions" if provider == "openai" else "messages"
    if provider == "openai" and _responses_api(response):
        # cendor-core records responses.create too, storing its `input` as `messages`
        endpoint = "responses"
        body["input"] = body.pop("messages")
        notes.append(RESPONSES_INPUT)
    kind, normalized, key = llm_call(provider, endpoint, body)
    if streamed:
        if not all(isinstance(c, dict) for c in response):
            raise ValueError("a streamed response must be a list of chunk objects")
        events = data_events(response) if endpoint == "chat.completions" else typed_events(response)
        recorded = sse_response(events)
    else:
        if not isinstance(response, dict):
            raise ValueError(
                f"the response is a {type(response).__name__}, not the provider's JSON object "
                "(cendor fell back to str()); it cannot be replayed"
            )
        recorded = json_response(response)
    if response_type != "envelope":  # an envelope entry holds the decoded HTTP body itself
        notes.append(MAPPING if response_type == "mapping" else MODEL_DUMP)
    notes.extend(_placeholder_notes(normalized, response))
    return Converted(kind, key, normalized, recorded, notes)


def _responses_api(response: Any) -> bool:
    """Whether a recorded OpenAI response is the Responses API's (a `response` object or its events)."""
    if isinstance(response, dict):
        return response.get("object") == "response"
    return (
        isinstance(response, list)
        and bool(response)
        and all(isinstance(c, dict) and str(c.get("type", "")).startswith("response.") for c in response)
    )


def _placeholder_notes(request: Any, response: Any) -> list[str]:
    notes = []
    where = redacted_paths(request)
    if where:
        notes.append(
            f"the request holds cendor's '<redacted>' placeholder at {', '.join(where)}: the original value "
            "is gone, so a live call matches only if it sends that placeholder too (e.g. an id that came "
            "from a replayed response)."
        )
    where = redacted_paths(response)
    if where:
        notes.append(
            f"the response holds '<redacted>' at {', '.join(where)} where cendor's redaction replaced a "
            "32+ character token (ids, hashes): the agent sees the placeholder instead."
        )
    return notes


def convert_entry(
    entry: Any, *, version: int, tools: dict[str, Any], defaults: Mapping[str, Any] | None
) -> Converted:
    """One cendor entry (or cendor-style JSONL line) to ours; `ValueError`/`LookupError` say why not."""
    if not isinstance(entry, dict):
        raise ValueError(f"an entry must be an object, not {type(entry).__name__}")
    kind, request = entry.get("kind"), entry.get("request")
    if not isinstance(request, dict):
        raise ValueError("no `request` object")
    if "response" in entry:
        response = entry["response"]
    elif "result" in entry:  # cendor's promote accepted `result` for tools
        response = entry["result"]
    else:
        raise ValueError("no `response`")
    response_type = entry.get("response_type")
    if kind == "llm":
        return convert_llm(request, response, response_type, version=version, defaults=defaults)
    if kind == "tool":
        return convert_tool(request, response, response_type, tools)
    raise ValueError(f"`kind` must be 'llm' or 'tool', not {kind!r}")


def import_cendor(
    source: str | os.PathLike[str],
    to: str | os.PathLike[str],
    *,
    tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] | None = None,
    defaults: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    skip_bad: bool = False,
) -> ImportReport:
    """Convert a cendor-cassette file (v1 or v2) into a cassette at ``to``; returns the report.

    ``tools`` (functions, or ``{name: function}``) lets positional tool arguments
    be bound to parameter names as ``@cassette.tool`` records them. ``defaults``
    adds request fields cendor never stored to every LLM call (``{"temperature": 0}``)
    or to one provider's calls (``{"anthropic.max_tokens": 1024}``). Entries that
    cannot be replayed (other providers, ``str()`` responses) are listed under
    ``skipped``; a malformed entry raises `CassetteImportError` unless ``skip_bad``.

    Example::

        report = import_cendor("tests/fixtures/refund.json", "tests/cassettes/refund.json")
        print(report)
    """
    path = Path(source)
    doc = _read(path)
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise CassetteImportError(_not_cendor(path, doc), path=path)
    version = doc.get("version", 1)
    if isinstance(version, bool) or version not in VERSIONS:
        raise CassetteImportError(
            f"{path} has cendor-cassette version {version!r}; this importer reads versions 1 and 2. "
            "Re-save it with cendor-cassette 1.x, or re-record the run with cassette.",
            path=path,
        )
    functions = tool_functions(tools)
    report = ImportReport(source=path, target=Path(to), format=f"cendor-cassette v{version}")
    calls: list[Converted] = []
    bad: list[tuple[str, str]] = []
    for i, entry in enumerate(entries):
        seq = entry.get("seq", i) if isinstance(entry, dict) else i
        # the index finds the entry in the file; its own seq is added when the two differ
        where = f"entry {i}" if seq == i else f"entry {i} (seq {str(seq)[:20]})"
        try:
            converted = convert_entry(entry, version=version, tools=functions, defaults=defaults)
        except LookupError as exc:
            report.skipped.append((where, str(exc)))
            continue
        except ValueError as exc:
            bad.append((where, str(exc)))
            continue
        calls.append(converted)
        report.notes.extend((where, note) for note in converted.notes)
    refuse_unreadable(path, bad, noun=("entry", "entries"), skip_bad=skip_bad, readable=len(calls))
    report.skipped.extend(bad)
    report.target, report.kinds = save_converted(calls, to, overwrite=overwrite, error=CassetteImportError)
    report.interactions = len(calls)
    return report


def _not_cendor(path: Path, doc: dict[str, Any]) -> str:
    """Why a JSON object is not a cendor file, naming what it is when we can tell."""
    items = doc.get("interactions")
    first = next((i for i in items if isinstance(i, dict)), None) if isinstance(items, list) else None
    if first is not None and {"seq", "kind", "key"} <= set(first):
        return (
            f"{path} is already a cassette (format version {doc.get('version')!r}): there is nothing to "
            "import. Use it as it is with cassette.use / cassette.using, or copy it."
        )
    if isinstance(doc.get("log"), dict) and "entries" in doc["log"]:
        return (
            f"{path} is a HAR file (`log.entries`, saved by a browser or a proxy), not a cendor-cassette "
            "file; cassette does not import HAR: record the calls with cassette instead."
        )
    if isinstance(items, list) or "http_interactions" in doc or "requests" in doc:
        return (
            f"{path} is a vcrpy-style cassette (`interactions`), not a cendor-cassette file: run "
            f"`cassette import vcr {path} --to NEW.json` (import_vcr) instead."
        )
    return (
        f"{path} has no `entries` list, so it is not a cendor-cassette file. Pass the file "
        "cendor.cassette.use(...) wrote, or pick the right format (`cassette import vcr ...`)."
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CassetteImportError(f"no file at {resolve_path(path)}; check the path.", path=path) from None
    except IsADirectoryError:
        raise CassetteImportError(
            f"{resolve_path(path)} is a directory; pass one cendor file.", path=path
        ) from None
    except OSError as exc:  # no permission, a name too long, a symlink loop...
        raise CassetteIOError(
            f"cannot read {path} ({exc.strerror or exc}); check the path and its permissions.", path=path
        ) from None
    try:
        doc = loads(data)
    except (ValueError, RecursionError) as exc:
        if data[:2] == b"\x1f\x8b" or data.lstrip().startswith(
            (b"interactions:", b"http_interactions:", b"---", b"version:", b"requests:")
        ):
            raise CassetteImportError(
                f"{path} is a YAML (or gzipped) vcrpy-style cassette, not a cendor-cassette file: run "
                f"`cassette import vcr {path} --to NEW.json` (import_vcr) instead.",
                path=path,
            ) from None
        raise CassetteImportError(
            f"{path} is not JSON ({exc}); a cendor-cassette file is one JSON object. Restore it from git.",
            path=path,
        ) from None
    if not isinstance(doc, dict):
        raise CassetteImportError(
            f"{path} holds a JSON {type(doc).__name__}, not a cendor-cassette object with `entries`.",
            path=path,
        )
    return doc
