"""``cassette show FILE``: a cassette as a timeline, one line per interaction."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import orjson

from cassette.config import load_config
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError, CassetteNotFoundError, CassetteShapeError
from cassette.maintenance.hygiene import store_for
from cassette.plugins.manager import get_plugin_manager, tokens_of
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
    parser.add_argument("file", type=Path, help="the cassette manifest (.json)")
    parser.add_argument("--json", action="store_true", help="print the timeline as JSON (excerpts not cut)")
    parser.add_argument(
        "--width",
        type=_width,
        default=EXCERPT,
        metavar="N",
        help=f"characters per excerpt (default {EXCERPT})",
    )


def run(args: argparse.Namespace) -> int:
    rows = timeline(args.file)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    out = sys.stdout
    out.write(f"{args.file}  ({len(rows)} interaction{'s' if len(rows) != 1 else ''})\n")
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


def timeline(path: Path) -> list[dict[str, Any]]:
    """One dict per interaction: ``seq, kind, what, request, response, tokens, incomplete, parallel``.

    Example::

        timeline(Path("tests/cassettes/triage.json"))[0]["what"]  # "openai gpt-4o-mini"
    """
    config = load_config(resolve_path(path).parent)
    try:
        cassette = load_cassette(path, store_for(path, config))
    except CassetteNotFoundError:
        if path.is_dir():
            raise
        # load_cassette's advice is to record it; show only reads, so the path is what to check
        raise CassetteNotFoundError(
            f"no cassette at {resolve_path(path)}: the file does not exist. Check the path "
            "(`cassette ls` lists the cassettes under the cassette directory).",
            path=path,
        ) from None
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


def _response_excerpt(kind: str, response: dict[str, Any], request: dict[str, Any] | None = None) -> str:
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
        answer = _json_answer(body)
        if answer != _compact(body):
            return answer
    elif isinstance(response.get("events"), list):
        return _stream_answer(response["events"])
    told = _plugin_answer(kind, response, request)  # a shape the provider plugin knows (Bedrock's)
    if told is not None:
        return told
    if isinstance(body, dict):
        return _compact(body)
    if "text" in response:
        return str(response["text"])
    if isinstance(response.get("base64"), str):
        return f"<{len(response['base64']) * 3 // 4} bytes>"
    return ""


def _plugin_answer(kind: str, response: dict[str, Any], request: dict[str, Any] | None) -> str | None:
    """The answer as the call's provider plugin reads it (``cassette_response_output``), or None."""
    if kind == "tool" or request is None:
        return None
    try:
        output = get_plugin_manager().hook.cassette_response_output(
            kind=kind, response=response, request=request
        )
    except Exception:  # a known shape holding the wrong type: shown as data
        return None
    if not isinstance(output, dict):
        return None
    calls = [
        (c.get("name"), c.get("arguments")) for c in output.get("tool_calls") or () if isinstance(c, dict)
    ]
    text = output.get("text") if isinstance(output.get("text"), str) else ""
    return " ".join(x for x in (text, "tool calls: " + _calls(calls) if calls else "") if x)


def _calls(calls: list[tuple[Any, Any]]) -> str:
    return ", ".join(f"{name}({_compact(args)})" for name, args in calls)


def _json_answer(body: dict[str, Any]) -> str:
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message") or {}
        tool_calls = msg.get("tool_calls") or []
        if tool_calls:
            return "tool calls: " + _calls(
                [
                    ((c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments"))
                    for c in tool_calls
                ]
            )
        return _text(msg.get("content")) or _text(choices[0].get("text"))
    content = body.get("content")
    if isinstance(content, list):  # Anthropic messages
        uses = [
            (p.get("name"), p.get("input"))
            for p in content
            if isinstance(p, dict) and p.get("type") == "tool_use"
        ]
        text = _text([p for p in content if isinstance(p, dict) and p.get("type") == "text"])
        return " ".join(x for x in (text, "tool calls: " + _calls(uses) if uses else "") if x)
    output = body.get("output")
    if isinstance(output, list):  # OpenAI Responses API
        texts, calls = [], []
        for item in output:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                calls.append((item.get("name"), item.get("arguments")))
            elif item.get("type") == "message":
                texts.append(_text(item.get("content")))
        return " ".join(x for x in (" ".join(texts), "tool calls: " + _calls(calls) if calls else "") if x)
    if isinstance(body.get("data"), list):
        return f"{len(body['data'])} item(s)"
    return _compact(body)


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else ``{}`` (a hand-edited or foreign stream event)."""
    return value if isinstance(value, dict) else {}


def _stream_answer(events: list[Any]) -> str:
    """The text a stream carried, rebuilt from its SSE events (chat, Responses and Anthropic shapes)."""
    text: list[str] = []
    tools: list[str] = []
    for event in events:
        if not isinstance(event, str):
            continue
        for line in event.splitlines():
            if not line.startswith("data:"):
                continue
            raw = line[5:].strip()
            if raw == "[DONE]":
                continue
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(data, dict):
                continue
            choices = data.get("choices")
            for choice in choices if isinstance(choices, list) else []:
                delta = _obj(choice.get("delta")) if isinstance(choice, dict) else {}
                if isinstance(delta.get("content"), str):
                    text.append(delta["content"])
                calls = delta.get("tool_calls")
                for call in calls if isinstance(calls, list) else []:
                    name = _obj(_obj(call).get("function")).get("name")
                    if name:
                        tools.append(str(name))
            kind = data.get("type")
            if kind == "content_block_delta" and isinstance(_obj(data.get("delta")).get("text"), str):
                text.append(data["delta"]["text"])
            elif kind == "content_block_start" and _obj(data.get("content_block")).get("type") == "tool_use":
                tools.append(str(data["content_block"].get("name")))
            elif kind == "response.output_text.delta" and isinstance(data.get("delta"), str):
                text.append(data["delta"])
            elif (
                kind == "response.output_item.added" and _obj(data.get("item")).get("type") == "function_call"
            ):
                tools.append(str(data["item"].get("name")))
    answer = "".join(text)
    if tools:
        answer = " ".join(x for x in (answer, "tool calls: " + ", ".join(tools)) if x)
    return answer or f"<stream of {len(events)} events>"
