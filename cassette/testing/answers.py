"""The devserver's rule table and answer composer, shared by every provider it speaks (OpenAI,
Anthropic, Gemini, Bedrock): deterministic answers, tool calls and token counts from a prompt."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


@dataclass(frozen=True)
class Rule:
    """One row of the answer table: keywords in the prompt -> canned answers."""

    name: str
    keywords: tuple[str, ...]
    answers: tuple[str, ...]
    tool_hints: tuple[str, ...] = ()


RULES: tuple[Rule, ...] = (
    Rule(
        "billing",
        ("charged twice", "double charge", "double-charged", "billed twice", "refund", "overcharged"),
        (
            "I'm sorry about the duplicate charge. I've issued a refund for it, and the money will reach "
            "your original payment method within 5-7 business days.",
            "Thanks for letting us know you were charged twice. We'll refund the duplicate charge to your "
            "original payment method within 5-7 business days.",
            "Apologies for being charged twice! The duplicate charge will be refunded to your original "
            "payment method within 5-7 business days.",
        ),
        ("refund", "billing", "charge", "payment", "invoice", "order"),
    ),
    Rule(
        "account",
        ("password", "log in", "login", "locked out", "sign in", "2fa"),
        (
            "I've sent a password reset link to the email on your account; it expires in 30 minutes.",
            "A password reset link is on its way to your account's email; the link expires in 30 minutes.",
            "Check your email: I've sent your account a password reset link, and it expires in 30 minutes.",
        ),
        ("password", "account", "reset", "login", "user"),
    ),
    Rule(
        "cancellation",
        ("cancel", "unsubscribe", "subscription"),
        (
            "I've cancelled your subscription; you keep access until the end of the current billing period.",
            "Your subscription is cancelled and won't renew. Access continues until the period ends.",
            "Done: the subscription will not renew. You keep access until the current period ends.",
        ),
        ("subscription", "cancel", "plan", "account"),
    ),
    Rule(
        "shipping",
        ("where is my order", "tracking", "shipping", "delivery", "package", "arrive"),
        (
            "Your package is in transit and should arrive within 2 business days; the tracking link has "
            "the latest scan.",
            "The package is in transit and will arrive within 2 business days. The tracking link shows the "
            "latest scan.",
            "Good news: your package is in transit and should arrive within 2 business days (the tracking "
            "link has the latest scan).",
        ),
        ("order", "shipment", "tracking", "delivery", "package"),
    ),
    Rule(
        "weather",
        ("weather", "forecast", "temperature", "rain"),
        (
            "It's 18°C and partly cloudy, with a light breeze and no rain expected.",
            "Expect partly cloudy skies around 18°C with a light breeze today, and no rain expected.",
            "Currently 18°C and partly cloudy with a light breeze; no rain is expected.",
        ),
        ("weather", "forecast", "temperature"),
    ),
    Rule(
        "bug",
        ("bug", "crash", "error", "exception", "broken", "doesn't work"),
        (
            "Thanks for the report. I've filed a ticket with engineering; could you share the steps and any "
            "logs so we can reproduce it?",
            "Sorry about the trouble. I've filed an engineering ticket; please share the steps and any logs "
            "so we can reproduce it.",
            "I've filed a ticket with our engineering team. Could you send the steps and the logs, so we can "
            "reproduce the problem?",
        ),
        ("ticket", "issue", "bug", "logs"),
    ),
    Rule(
        "capital",
        ("capital of france",),
        ("The capital of France is Paris.", "Paris is the capital of France.", "France's capital is Paris."),
    ),
    Rule(
        "arithmetic",
        ("2+2", "2 + 2", "two plus two"),
        ("2 plus 2 equals 4.", "Two plus two equals four.", "The sum: 2 plus 2 equals 4."),
    ),
    Rule(
        "greeting",
        ("hello", "hi there", "good morning"),
        (
            "Hello! How can I help you today?",
            "Hello there! How can I help you today?",
            "Hi! How can I help you today?",
        ),
    ),
)


_FALLBACK = (
    "You asked about {keywords}. Here is a short answer: it depends on the details, but the usual first "
    "step is to check the basics and go from there.",
    "Regarding {keywords}: the short version is to start with the simplest option and adjust as needed.",
    "On {keywords}, I'd suggest starting small, checking the result, and iterating.",
)


_AFTER_TOOL = (
    "I checked with {tool}: {result}.",
    "Here's what {tool} returned: {result}.",
    "According to {tool}, {result}.",
)


_BEFORE_TOOL = ("I'll use {tool} to help with that.", "Let me check that with {tool}.")


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOP_WORDS = _word_set(
    "a an the and or but if of to in on at by for with from about as is are was were be been am i me my "
    "you your we our it its this that these those what which who how why when where can could would "
    "should will do does did have has had not no yes please just so than then there here also very much "
    "any some tell give want need like get"
)


_GENERIC_VERBS = _word_set(
    "get set fetch lookup look search find create update delete list issue check run call do make send "
    "tool query read write add remove"
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _stem(word: str) -> str:
    return word[:5]


def _keywords(text: str, limit: int = 3) -> list[str]:
    seen: dict[str, None] = {}
    for word in re.findall(r"[A-Za-z][A-Za-z0-9'-]*", text):
        if len(word) >= 4 and word.lower() not in _STOP_WORDS:
            seen.setdefault(word.lower(), None)
    return list(seen)[:limit]


def _find_rule(text: str) -> Rule | None:
    lowered = text.lower()
    for rule in RULES:
        for keyword in rule.keywords:
            if re.search(r"(?<![a-z0-9])" + re.escape(keyword), lowered):
                return rule
    return None


def _count_tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


@dataclass
class _Tool:
    name: str
    schema: JSON


@dataclass
class _Conversation:
    """What the answer depends on, read from any provider's request body."""

    last_user_text: str = ""
    all_text: str = ""
    tool_result: tuple[str, str] | None = None
    tools: list[_Tool] = field(default_factory=list)
    tool_mode: str = "auto"  # auto | none | required
    forced_tool: str | None = None
    parallel: bool = True
    schema: JSON | None = None
    json_object: bool = False


@dataclass
class _Reply:
    text: str | None
    tool_calls: list[tuple[str, JSON]]
    preamble: str = ""


def _name_parts(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    parts = [p for p in re.split(r"[_\-\s.]+", spaced.lower()) if len(p) >= 3]
    specific = [p for p in parts if p not in _GENERIC_VERBS]
    return specific or parts


def _tools_to_call(conv: _Conversation, rule: Rule | None) -> list[_Tool]:
    if not conv.tools or conv.tool_mode == "none" or conv.tool_result is not None:
        return []
    if conv.forced_tool:
        return [t for t in conv.tools if t.name == conv.forced_tool][:1]
    text = conv.last_user_text
    stems = {_stem(w) for w in _words(text) if len(w) >= 3}
    stems |= {_stem(h) for h in (rule.tool_hints if rule else ())}
    chosen = [
        t
        for t in conv.tools
        if t.name.lower() in text.lower() or any(_stem(p) in stems for p in _name_parts(t.name))
    ]
    if not chosen and conv.tool_mode == "required":
        chosen = conv.tools[:1]
    return chosen if conv.parallel else chosen[:1]


def _pick(options: tuple[str, ...], salt: str, index: int) -> str:
    # One permutation per request and table row, so n choices get distinct rewordings while n <= len(options).
    order = list(range(len(options)))
    random.Random(f"{salt}:{options[0]}").shuffle(order)
    return options[order[index % len(order)]]


def _answer_text(conv: _Conversation, rule: Rule | None, salt: str, index: int) -> str:
    if conv.tool_result is not None:
        tool, result = conv.tool_result
        result = " ".join(result.split())[:200].rstrip(".") or "no output"
        text = _pick(_AFTER_TOOL, salt, index).format(tool=tool, result=result)
        return f"{text} {_pick(rule.answers, salt, index)}" if rule else text
    if rule:
        return _pick(rule.answers, salt, index)
    keywords = _keywords(conv.last_user_text) or _keywords(conv.all_text) or ["your question"]
    joined = keywords[0] if len(keywords) == 1 else ", ".join(keywords[:-1]) + " and " + keywords[-1]
    return _pick(_FALLBACK, salt, index).format(keywords=joined)


def _compose(conv: _Conversation, salt: str, index: int) -> _Reply:
    """The answer for choice ``index``; ``salt`` is fixed per request and picks the rewordings."""
    rule = _find_rule(conv.last_user_text) or _find_rule(conv.all_text)
    answer = _answer_text(conv, rule, salt, index)
    calls = _tools_to_call(conv, rule)
    if calls:
        context = _ValueContext(conv.last_user_text, answer, rule)
        tool_calls = [(t.name, _as_object(_value_for(t.schema, t.schema, "", context))) for t in calls]
        preamble = _pick(_BEFORE_TOOL, salt, index).format(tool=calls[0].name)
        return _Reply(None, tool_calls, preamble)
    if conv.schema is not None:
        context = _ValueContext(conv.last_user_text, answer, rule)
        value = _value_for(conv.schema, conv.schema, "", context)
        return _Reply(json.dumps(value, ensure_ascii=False, separators=(",", ":")), [])
    if conv.json_object:
        return _Reply(json.dumps({"answer": answer}, ensure_ascii=False), [])
    return _Reply(answer, [])


def _as_object(value: Any) -> JSON:
    return value if isinstance(value, dict) else {"value": value}


@dataclass
class _ValueContext:
    user_text: str
    answer: str
    rule: Rule | None


_SEVERE = {"billing", "bug", "account"}


def _string_for(name: str, schema: JSON, ctx: _ValueContext) -> str:
    key = name.lower()
    text = ctx.user_text
    fmt = schema.get("format")
    if fmt == "date-time":
        return "2026-11-02T09:30:00Z"
    if fmt == "date" or key.endswith("date"):
        return "2026-11-02"
    if fmt == "email" or "email" in key:
        found = re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text)
        return found.group(0) if found else "customer@example.com"
    if fmt in ("uri", "url") or key.endswith("url"):
        return "https://example.com"
    if key in ("city", "location", "place", "destination", "origin") or key.endswith("city"):
        places = re.findall(r"(?<![.!?]\s)(?<!^)\b(?!I\b)([A-Z][a-z]+)", text)
        return places[-1] if places else "Paris"
    if re.search(r"(^|_)id$|number$", key):
        found = re.search(r"#?([A-Za-z]*-?\d[\w-]*)", text)
        return found.group(1) if found else "A1001"
    if key in ("query", "q", "search", "question", "prompt", "input", "text", "request"):
        return " ".join(text.split())[:200] or "help"
    if key in ("category", "intent", "topic", "type", "label", "kind", "department", "queue"):
        return ctx.rule.name if ctx.rule else "general"
    if key in ("sentiment", "tone", "mood"):
        return "negative" if ctx.rule and ctx.rule.name in _SEVERE else "neutral"
    if key in ("priority", "urgency", "severity"):
        return "high" if ctx.rule and ctx.rule.name in _SEVERE else "normal"
    if key in ("language", "lang", "locale"):
        return "en"
    if key in ("unit", "units"):
        return "celsius"
    if key == "currency":
        return "USD"
    if key == "country":
        return "US"
    if "phone" in key:
        return "+1-555-0100"
    if "name" in key:
        return "Ada Lovelace" if key in ("name", "customer_name", "full_name", "user_name") else "example"
    if key in ("title", "subject", "headline"):
        return " ".join(w.capitalize() for w in _keywords(text)) or "Customer Request"
    if key in ("keywords", "tag", "tags"):
        return ", ".join(_keywords(text)) or "general"
    return ctx.answer


def _number_in(text: str) -> float | None:
    found = re.search(r"(?<![\w#-])(\d+(?:\.\d+)?)(?![\w-])", text)
    return float(found.group(1)) if found else None


def _clamp(value: float, schema: JSON) -> float:
    if "minimum" in schema:
        value = max(value, float(schema["minimum"]))
    if "maximum" in schema:
        value = min(value, float(schema["maximum"]))
    return value


def _value_for(schema: JSON, root: JSON, name: str, ctx: _ValueContext, depth: int = 0) -> Any:
    """A plausible value conforming to ``schema`` (a JSON Schema subset: what pydantic and SDKs emit)."""
    if depth > 8:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return _value_for(
            {**target, **{k: v for k, v in schema.items() if k != "$ref"}}, root, name, ctx, depth + 1
        )
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        options = schema["enum"]
        suggested = _string_for(name, schema, ctx)
        if suggested in options:
            return suggested
        haystack = f"{ctx.user_text} {ctx.rule.name if ctx.rule else ''}".lower()
        return next((o for o in options if isinstance(o, str) and o.lower() in haystack), options[0])
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            usable = [o for o in options if o.get("type") != "null"] or options
            return _value_for(usable[0], root, name, ctx, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        properties: JSON = schema.get("properties") or {}
        wanted = schema.get("required") or list(properties)
        return {key: _value_for(properties.get(key, {}), root, key, ctx, depth + 1) for key in wanted}
    if kind == "array":
        singular = name[:-1] if name.endswith("s") else name
        count = max(1, int(schema.get("minItems", 1)))
        return [_value_for(schema.get("items") or {}, root, singular, ctx, depth + 1) for _ in range(count)]
    if kind == "integer":
        found = _number_in(ctx.user_text)
        return int(_clamp(float(int(found)) if found is not None else 1.0, schema))
    if kind == "number":
        key = name.lower()
        if key in ("confidence", "score", "probability"):
            guess = 0.9
        elif "temp" in key:
            guess = 18.0
        else:
            guess = _number_in(ctx.user_text) or 19.99
        return _clamp(guess, schema)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string_for(name, schema, ctx)


def _chunks(text: str, size: int = 0) -> list[str]:
    """Split text like a tokenizer would stream it: word by word, or in fixed pieces."""
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return re.findall(r"\s*\S+\s*?", text) or [text]


def _reply_tokens(reply: _Reply) -> int:
    text = (reply.text or "") + reply.preamble
    return max(1, _count_tokens(text) + sum(_count_tokens(json.dumps(a)) + 3 for _, a in reply.tool_calls))


@functools.lru_cache(maxsize=4096)
def _word_vector(word: str, dimensions: int) -> tuple[float, ...]:
    rng = random.Random(hashlib.sha256(word.encode()).digest())
    return tuple(rng.gauss(0.0, 1.0) for _ in range(dimensions))


def _embed(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector: a sum of per-word random vectors, so shared words mean closeness."""
    words = _words(text) or [f"\0{text}"]
    total = [0.0] * dimensions
    for word in words:
        for i, x in enumerate(_word_vector(word, dimensions)):
            total[i] += x
    norm = math.sqrt(sum(x * x for x in total)) or 1.0
    return [x / norm for x in total]


class _ApiError(Exception):
    """An error answered in the provider's own JSON shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        retry: bool = False,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.retry = retry
        self.code = code
        self.retry_after: str | None = None
