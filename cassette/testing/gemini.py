"""The devserver's Gemini endpoints: deterministic answers in the Gemini API's own shapes.

The real ``google-genai`` SDK talks to `DevServer` over real HTTP, on the Developer API's
paths (``/v1beta/models/{m}:generateContent``) and Vertex AI's
(``/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent``):

    with DevServer(seed=1) as srv:
        client = genai.Client(api_key="test-key", http_options=HttpOptions(base_url=srv.url))
        client.models.generate_content(model="gemini-2.5-flash", contents="Where is my order?")

Methods: ``generateContent``, ``streamGenerateContent`` (SSE, as ``?alt=sse`` asks),
``countTokens``, ``computeTokens``, ``embedContent``, ``batchEmbedContents`` and Vertex's
``predict`` for embeddings. Answers come from the same rule table as the OpenAI and
Anthropic ones (`cassette.testing.devserver`): a function is called when the prompt names
it (``toolConfig`` ``ANY`` calls one always, ``NONE`` never), never right after a
``functionResponse``; ``responseSchema`` / ``responseJsonSchema`` gets JSON filling it.

Errors in Gemini's shape (``{"error": {"code", "message", "status"}}``): the model
``error-429`` (any 4xx/5xx) or the ``x-devserver-error`` header; ``flaky-N`` fails the
first N identical requests with 500; ``DevServer.fail_next`` the next ones.
"""

from __future__ import annotations

import json
import re
from typing import Any

# the rule table and answer composer the devserver shares with every provider it speaks
from cassette.testing import answers as dev

JSON = dict[str, Any]

_PATH = re.compile(r"/(?:models|tunedModels|endpoints)/([^/:]+):(\w+)$")
_METHODS = frozenset(
    {
        "generateContent",
        "streamGenerateContent",
        "countTokens",
        "computeTokens",
        "embedContent",
        "batchEmbedContents",
        "predict",
    }
)
_STATUS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: ("PERMISSION_DENIED", "Method doesn't allow unregistered callers."),
    404: ("NOT_FOUND", "models/unknown is not found for API version v1beta."),
    429: (
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
    ),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report in the troubleshooting guide."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def route(method: str, path: str) -> tuple[str, str] | None:
    """``(model, method)`` when ``path`` is a Gemini call, else None."""
    found = _PATH.search(path) if method == "POST" and ":" in path else None
    if found is None or found.group(2) not in _METHODS:
        return None
    return found.group(1), found.group(2)


def error_body(status: int, message: str | None = None) -> JSON:
    name, default = _STATUS.get(status, ("INTERNAL" if status >= 500 else "FAILED_PRECONDITION", ""))
    return {"error": {"code": status, "message": message or default or f"Error {status}.", "status": name}}


def respond(
    model: str, method: str, body: Any, headers: dict[str, str], dice: Any, occurrence: int
) -> tuple[int, JSON, list[bytes] | None]:
    """The status, JSON body and (for ``streamGenerateContent``) SSE events answering one call."""
    wanted = headers.get("x-devserver-error", "")
    requested = re.fullmatch(r"error-(\d{3})", model)
    if requested:
        wanted = requested.group(1)
    if wanted.isdigit() and 400 <= int(wanted) <= 599:
        return int(wanted), error_body(int(wanted)), None
    flaky = re.fullmatch(r"flaky-(\d+)", model)
    if flaky and occurrence < int(flaky.group(1)):
        return 500, error_body(500), None
    if not isinstance(body, dict):
        return 400, error_body(400, "Invalid JSON payload received."), None
    try:
        if method in ("generateContent", "streamGenerateContent"):
            return 200, *_generate(model, body, dice, stream=method == "streamGenerateContent")
        if method == "countTokens":
            return 200, {"totalTokens": _prompt_tokens(_conversation(body)), "promptTokensDetails": []}, None
        if method == "computeTokens":
            words = dev._words(_conversation(body).all_text)
            return 200, {"tokensInfo": [{"tokens": words, "tokenIds": [str(len(w)) for w in words]}]}, None
        return 200, _embeddings(method, body), None
    except dev._ApiError as error:
        return error.status, error_body(error.status, error.message), None


# --------------------------------------------------------------------------- reading the request


def _parts_text(content: Any) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    return "\n".join(p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str))


def _lower_types(schema: Any) -> Any:
    """Gemini's OpenAPI schema (``"type": "OBJECT"``) as the JSON Schema the composer reads."""
    if isinstance(schema, list):
        return [_lower_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _lower_types(v) for k, v in schema.items()}
    if isinstance(out.get("type"), str):
        out["type"] = out["type"].lower()
    return out


def _conversation(body: JSON) -> Any:
    contents = body.get("contents")
    if isinstance(contents, dict):
        contents = [contents]
    if not isinstance(contents, list) or not contents:
        raise dev._ApiError(400, "* GenerateContentRequest.contents: contents is not specified")
    conv = dev._Conversation()
    texts = [_parts_text(body.get("systemInstruction"))]
    for content in contents:
        text = _parts_text(content)
        texts.append(text)
        if isinstance(content, dict) and content.get("role", "user") == "user" and text:
            conv.last_user_text = text
    conv.all_text = "\n".join(t for t in texts if t)
    last = contents[-1] if isinstance(contents[-1], dict) else {}
    answers = [p["functionResponse"] for p in last.get("parts") or [] if "functionResponse" in p]
    if answers:
        conv.tool_result = (
            str(answers[-1].get("name", "the tool")),
            "; ".join(json.dumps(a.get("response"), ensure_ascii=False) for a in answers),
        )
    elif last.get("role", "user") != "user":
        conv.tool_mode = "none"
    for tool in body.get("tools") or []:
        for declaration in (tool or {}).get("functionDeclarations") or []:
            schema = (
                declaration.get("parametersJsonSchema")
                or declaration.get("parameters_json_schema")
                or _lower_types(declaration.get("parameters"))
                or {"type": "object", "properties": {}}  # a function without parameters: called with {}
            )
            if declaration.get("name"):
                conv.tools.append(dev._Tool(declaration["name"], schema))
    calling = ((body.get("toolConfig") or {}).get("functionCallingConfig")) or {}
    mode = str(calling.get("mode", "AUTO")).upper()
    if conv.tool_mode != "none":
        if mode == "NONE":
            conv.tool_mode = "none"
        elif mode == "ANY":
            allowed = calling.get("allowedFunctionNames") or []
            if len(allowed) == 1:
                conv.forced_tool = allowed[0]
            conv.tool_mode = "required"
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema:
        conv.schema = _lower_types(schema) if "responseSchema" in config else schema
    conv.json_object = conv.schema is None and config.get("responseMimeType") == "application/json"
    return conv


def _prompt_tokens(conv: Any) -> int:
    return dev._count_tokens(conv.all_text) + 1


# --------------------------------------------------------------------------- answering


def _generate(model: str, body: JSON, dice: Any, *, stream: bool) -> tuple[JSON, list[bytes] | None]:
    conv = _conversation(body)
    count = int((body.get("generationConfig") or {}).get("candidateCount") or 1)
    replies = [dev._compose(conv, dice.salt, i) for i in range(count)]
    prompt = _prompt_tokens(conv)
    answer = sum(dev._reply_tokens(r) for r in replies)
    usage = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": answer,
        "totalTokenCount": prompt + answer,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    head = {"modelVersion": model, "responseId": dice.token(22)}
    if not stream:
        candidates = [_candidate(i, _parts(r), "STOP") for i, r in enumerate(replies)]
        return {"candidates": candidates, "usageMetadata": usage, **head}, None
    # one chunk per piece of text (a function call comes whole); each candidate's last piece says
    # why it finished, and the stream's last chunk carries the usage
    pieces: list[tuple[int, list[JSON], str | None]] = []
    for index, reply in enumerate(replies):
        texts = [] if reply.tool_calls else dev._chunks(reply.text or "", 24)
        chunks = [_parts(reply)] if reply.tool_calls else [[{"text": t}] for t in texts]
        pieces += [(index, parts, "STOP" if n == len(chunks) - 1 else None) for n, parts in enumerate(chunks)]
    events = []
    for n, (index, parts, finish) in enumerate(pieces):
        data: JSON = {"candidates": [_candidate(index, parts, finish)]}
        if n == len(pieces) - 1:
            data["usageMetadata"] = usage
        data.update(head)
        events.append(b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\r\n\r\n")
    return {}, events


def _parts(reply: Any) -> list[JSON]:
    if reply.tool_calls:
        return [{"functionCall": {"name": name, "args": args}} for name, args in reply.tool_calls]
    return [{"text": reply.text or ""}]


def _candidate(index: int, parts: list[JSON], finish: str | None) -> JSON:
    candidate: JSON = {"content": {"parts": parts, "role": "model"}, "index": index}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


def _embeddings(method: str, body: JSON) -> JSON:
    if method == "predict":  # Vertex: {"instances": [{"content": …}]}
        instances = body.get("instances") or []
        predictions = []
        for instance in instances:
            text = str((instance or {}).get("content", ""))
            statistics = {"token_count": dev._count_tokens(text), "truncated": False}
            predictions.append({"embeddings": {"values": dev._embed(text, 768), "statistics": statistics}})
        return {
            "predictions": predictions,
            "metadata": {"billableCharacterCount": sum(len(str(i)) for i in instances)},
        }
    requests = body.get("requests") if method == "batchEmbedContents" else [body]
    if not isinstance(requests, list) or not requests:
        raise dev._ApiError(400, "* BatchEmbedContentsRequest.requests: requests is not specified")
    embeddings = []
    for request in requests:
        dimensions = int((request or {}).get("outputDimensionality") or 768)
        embeddings.append({"values": dev._embed(_parts_text((request or {}).get("content")), dimensions)})
    return {"embeddings": embeddings} if method == "batchEmbedContents" else {"embedding": embeddings[0]}
