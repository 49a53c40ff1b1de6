"""``cassette show FILE``: a cassette as a timeline, one line per interaction."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import orjson

from cassette.cli._paths import resolve_arg, shown
from cassette.config import load_config
from cassette.core.model import Cassette
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError, CassetteNotFoundError, CassetteShapeError
from cassette.plugins.manager import get_plugin_manager, tokens_of
from cassette.seam.session import store_for
from cassette.store.cassettes import load_cassette

HELP = "print a cassette as a timeline: seq, kind, model or tool, request and response excerpts, tokens"

EXCERPT = 60


def _width(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 8:
        raise argparse.ArgumentTypeError(f"{value} is too narrow: an excerpt needs at least 8 characters")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        type=Path,
        help="the cassette (relative to the project root; .json optional) or its test's node id, "
        "e.g. tests/test_agent.py::test_refund",
    )
    parser.add_argument("--json", action="store_true", help="print the timeline as JSON (excerpts not cut)")
    parser.add_argument(
        "--width",
        type=_width,
        default=EXCERPT,
        metavar="N",
        help=f"characters per excerpt (default {EXCERPT})",
    )


def run(args: argparse.Namespace) -> int:
    args.file = resolve_arg(args.file)
    rows = timeline(args.file)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    out = sys.stdout
    out.write(f"{shown(args.file)}  ({len(rows)} interaction{'s' if len(rows) != 1 else ''})\n")
    if not rows:
        return 0
    what_width = min(36, max(len(r["what"]) for r in rows))
    for r in rows:
        tokens = f"  {r['tokens']} tok" if r["tokens"] else ""
        flag = ("  [incomplete]" if r["incomplete"] else "") + ("  [parallel]" if r["parallel"] else "")
        out.write(
            f"#{r['seq']:<3} {r['kind']:<5} {_cut(r['what'], what_width):<{what_width}}  "
            f"{_cut(r['request'], args.width)}  ->  {_cut(r['response'], args.width)}{tokens}{flag}\n"
        )
    return 0


def read_cassette(path: Path) -> Cassette:
    """The cassette at ``path`` with its blob store, for a command that only reads it (show, view)."""
    config = load_config(resolve_path(path).parent)
    try:
        return load_cassette(path, store_for(path, config))
    except CassetteNotFoundError:
        if path.is_dir():
            raise
        # load_cassette's advice is to record it; a reading command checks the path instead
        raise CassetteNotFoundError(
            f"no cassette at {resolve_path(path)}: the file does not exist. Check the path "
            "(`cassette ls` lists the cassettes under the cassette directory).",
            path=path,
        ) from None


def timeline(path: Path) -> list[dict[str, Any]]:
    """One dict per interaction: ``seq, kind, what, request, response, tokens, incomplete, parallel``.

    Example::

        timeline(Path("tests/cassettes/triage.json"))[0]["what"]  # "<provider> gpt-4o-mini"
    """
    cassette = read_cassette(path)
    rows = []
    for inter in cassette.interactions:
        try:
            request = cassette.hydrate(inter.request)
            response = cassette.hydrate(inter.response)
        except CassetteError as exc:
            raise CassetteError(f"{path}: interaction #{inter.seq} cannot be read: {exc}", path=path) from exc
        try:
            for name, value in (("request", request), ("response", response)):
                if not isinstance(value, dict):
                    raise TypeError(f"its {name} is a {type(value).__name__}, not an object")
            rows.append(
                {
                    "seq": inter.seq,
                    "kind": inter.kind,
                    "what": _what(inter.kind, request),
                    "request": _request_excerpt(inter.kind, request),
                    "response": _response_excerpt(inter.kind, response, request),
                    "tokens": tokens_of(response, request) if inter.kind != "tool" else 0,
                    "incomplete": bool(response.get("incomplete")),
                    "parallel": inter.extra.get("parallel") is True,
                }
            )
        except (TypeError, AttributeError, ValueError, KeyError, RecursionError) as exc:
            raise CassetteShapeError(
                f"{path}: interaction #{inter.seq} does not have the shape of a recorded call "
                f"({type(exc).__name__}: {str(exc)[:120]}). Restore the cassette from git or re-record it.",
                path=path,
            ) from None
    return rows


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # nested deeper than orjson goes, integers beyond 64 bits, non-str keys
        return json.dumps(value, ensure_ascii=False, default=str)


def _what(kind: str, request: dict[str, Any]) -> str:
    if kind == "tool":
        return str(request.get("name", "?"))
    if kind == "llm":
        parts = [str(request.get("provider", "llm")), str(request.get("model", "?"))]
        endpoint = request.get("endpoint")
        if endpoint and endpoint not in ("chat.completions", "messages", "responses"):
            parts.append(str(endpoint))
        return " ".join(parts)
    return f"{request.get('method', '')} {request.get('url', '')}".strip() or kind


def _text(content: Any) -> str:
    """The text of a message ``content``: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif part.get("type") == "tool_result":
                    texts.append("tool result: " + _text(part.get("content")))
                elif part.get("type") == "tool_use":
                    texts.append(f"tool_use {part.get('name')}({_compact(part.get('input', {}))})")
            elif isinstance(part, str):
                texts.append(part)
        return " ".join(texts)
    return "" if content is None else _compact(content)


def _request_excerpt(kind: str, request: dict[str, Any]) -> str:
    if kind == "tool":
        return _compact(request.get("arguments", {}))
    if kind != "llm":
        fields = {k: v for k, v in request.items() if k not in ("kind", "method", "url")}
        return _compact(fields) if fields else ""
    messages = request.get("messages")
    if not isinstance(messages, list):
        messages = request.get("input")
    if not isinstance(messages, list) and isinstance(request.get("contents"), list):  # Gemini's turns
        messages = [
            {"role": c.get("role", "user"), "content": c.get("parts")} if isinstance(c, dict) else c
            for c in request["contents"]
        ]
    if isinstance(messages, str):
        return f"user: {messages}"
    if isinstance(messages, list) and messages:
        last = messages[-1]
        if isinstance(last, dict):
            role = last.get("role") or last.get("type") or "input"
            return f"{role}: {_text(last.get('content', last.get('output', '')))}"
        return _compact(last)
    for key in ("prompt", "input", "text"):
        if key in request:
            return _compact(request[key])
    return ""


def _response_excerpt(kind: str, response: dict[str, Any], request: dict[str, Any]) -> str:
    if kind == "tool":
        if "error" in response:
            error = response["error"]
            if not isinstance(error, dict):
                return f"raised {_compact(error)}"
            return f"raised {error.get('type', '?')}: {error.get('message', '')}"
        return _compact(response.get("result"))
    status = response.get("status", 200)
    body = response.get("json")
    if isinstance(status, int) and status >= 400:
        message = ""
        if isinstance(body, dict):
            err = body.get("error")
            message = err.get("message", "") if isinstance(err, dict) else _compact(err or body)
        return f"HTTP {status} {message}".strip()
    if isinstance(body, dict):
        # a shape the provider knows holding the wrong type raises: the record is malformed
        answer = _answer(_output(kind, response, request), with_arguments=True)
        if answer is not None:
            return answer
        if isinstance(body.get("data"), list):
            return f"{len(body['data'])} item(s)"
        return _compact(body)
    events = response.get("events")
    if isinstance(events, list):
        try:
            answer = _answer(_output(kind, response, request), with_arguments=True)
        except (TypeError, AttributeError, ValueError, KeyError, RecursionError):
            answer = None  # a stream is shown as far as it reads
        return answer or f"<stream of {len(events)} events>"
    try:  # another shape its provider plugin knows (an AWS event stream)
        answer = _answer(_output(kind, response, request), with_arguments=True)
    except (TypeError, AttributeError, ValueError, KeyError, RecursionError):
        answer = None
    if answer:
        return answer
    if "text" in response:
        return str(response["text"])
    if isinstance(response.get("base64"), str):
        return f"<{len(response['base64']) * 3 // 4} bytes>"
    return ""


def _output(kind: str, response: dict[str, Any], request: dict[str, Any]) -> dict[str, Any] | None:
    """What the response answered, as its provider plugin reads it (``cassette_response_output``)."""
    hook = get_plugin_manager().hook
    return hook.cassette_response_output(kind=kind, response=response, request=request)


def _answer(output: dict[str, Any] | None, *, with_arguments: bool) -> str | None:
    """``text tool calls: name(arguments), ...`` (a stream's calls by name only), or ``None``
    when no plugin knows the shape."""
    if not isinstance(output, dict):
        return None
    text = output.get("text")
    text = text if isinstance(text, str) else _compact(text) if text is not None else ""
    calls = [c for c in output.get("tool_calls") or () if isinstance(c, dict) and c.get("name")]
    if with_arguments:
        listed = ", ".join(f"{c['name']}({_compact(c.get('arguments'))})" for c in calls)
    else:
        listed = ", ".join(str(c["name"]) for c in calls)
    return " ".join(x for x in (text, "tool calls: " + listed if calls else "") if x)
