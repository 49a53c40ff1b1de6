"""What changed between two recordings of the same run, interaction by interaction, and how much it matters.

Interactions are paired by their match keys (a sequence alignment, so one call
inserted in the middle does not shift every later pair); pairs whose request
changed are still compared by output. Each changed pair gets one category:

========================  ===========================================================================
``request``               the request differs (prompt, model, parameters, tool arguments)
``error``                 an error response (HTTP 4xx/5xx, a tool that raised) appeared, went or changed
``tools``                 the model called other tools, other argument keys, or in another order
``shape``                 finish reason, truncation, or the shape of a structured (JSON) output changed
``negated``               the answer now says the opposite (negation, opposite-state, antonym, tense guards)
``numbers``               a number, amount, date, code or name changed (exact guard)
``changed``               the answer means something else (``semantic_match`` fails)
``reworded``              same meaning in other words (``semantic_match`` passes)
``volatile-only``         only ids, timestamps, fingerprints, usage and other volatile fields changed
``added`` / ``removed``   the interaction exists on one side only
========================  ===========================================================================

Nothing here knows a provider: :func:`extract` asks the provider plugins
(``cassette_response_output``) for the output text, tool calls, finish reason and
truncation of a response, which each recognises by its own shapes (JSON bodies
and SSE streams), and the volatile fields (``cassette_volatile_fields``).
Anything no plugin knows is compared as generic data.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cassette.core import sse
from cassette.core.canonical import json_or_text
from cassette.core.diff import field_diff, flatten, format_diff
from cassette.core.model import Cassette, Interaction
from cassette.errors import (
    CassetteConfigError,
    CassetteError,
    SemanticBackendError,
    UnknownSemanticBackendError,
)
from cassette.plugins.manager import get_plugin_manager, tokens_of
from cassette.seam.session import Mode, last_session, pending_path, set_rerecord_review
from cassette.store.cassettes import load_cassette

# Response fields that change on every call of a real model: never drift by themselves. The
# provider plugins add their own (`cassette_volatile_fields`): see `volatile_fields`.
VOLATILE = frozenset(
    {"id", "created", "created_at", "completed_at", "usage", "x-request-id", "request-id", "date"}
)

# From the most to the least serious; an interaction's category is the first that applies.
CATEGORIES: tuple[str, ...] = (
    "removed",
    "added",
    "request",
    "error",
    "tools",
    "shape",
    "negated",
    "numbers",
    "changed",
    "reworded",
    "volatile-only",
)
DESCRIPTIONS: dict[str, str] = {
    "removed": "the interaction was recorded before and is gone now",
    "added": "a new interaction that was not recorded before",
    "request": "the request differs (prompt, model, parameters, tool arguments)",
    "error": "an error response appeared, disappeared or changed",
    "tools": "other tools called, other argument keys, or another call order",
    "shape": "finish reason, truncation or structured-output shape changed",
    "negated": "the answer now says the opposite",
    "numbers": "a number, amount, date, code or name changed",
    "changed": "the answer means something else",
    "reworded": "same meaning, other words",
    "volatile-only": "only ids, timestamps, fingerprints and usage changed",
}
# What `semantic_drift` reports: real regressions of the output (rewordings and noise filtered out).
REGRESSIONS = frozenset({"changed", "negated", "numbers", "tools", "shape", "error", "added", "removed"})
_RANK = {c: i for i, c in enumerate(CATEGORIES)}
# Request fields that say which tools the model was offered (a legacy `functions` field included).
TOOL_OFFER_FIELDS = frozenset({"tools", "functions", "tool_choice", "function_call", "parallel_tool_calls"})
# Which side of an interaction a tools change is on, in the words every output format uses.
TOOL_SIDES: dict[str, str] = {"request": "tools offered (request)", "response": "tool calls (response)"}
_DIGITS = re.compile(r"[$€£]?\d[\d,.]*%?")
# How many changed request fields a drift item shows with their values (the rest are counted).
REQUEST_CHANGES_SHOWN = 6


# --- what an interaction produced ------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One tool call made by a model: its name and its arguments (parsed JSON when they parse)."""

    name: str
    arguments: Any


@dataclass
class Output:
    """The part of a response that drift review looks at, whatever the provider.

    ``data`` is set when the output is structured (a JSON object or list: a
    structured-output answer, a tool result, a JSON HTTP body); ``text`` is the
    prose answer otherwise.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish: str | None = None
    truncated: bool = False
    error: str | None = None
    data: Any = None
    structured: bool = False
    known: bool = True  # False: a generic response compared field by field


def _error_of(status: int, body: Any) -> str | None:
    if status < 400:
        return None
    detail = ""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            kind = err.get("type") or err.get("code") or ""
            detail = f"{kind}: {err.get('message', '')}".strip(": ")
        elif isinstance(err, str):
            detail = err
    elif isinstance(body, str):
        detail = body.strip()[:200]
    return f"HTTP {status}" + (f" {detail}" if detail else "")


def _with_structured(out: Output) -> Output:
    """An answer that is a JSON object or list (structured output) is compared as data."""
    text = out.text.strip()
    if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
        value = json_or_text(text)
        if isinstance(value, dict | list):
            out.data = value
            out.structured = True
    return out


def _generic(response: dict[str, Any], status: int, *, volatile: frozenset[str]) -> Output:
    if "json" in response:
        body = _strip(response["json"], volatile)
        return Output(data=body, structured=isinstance(body, dict | list), known=False)
    if isinstance(response.get("events"), list):
        parsed = [_strip(d, volatile) for _, d in sse.parsed(response["events"])]
        return Output(data=parsed, structured=True, known=False)
    if "text" in response:
        return _with_structured(Output(text=str(response["text"]), known=False))
    return Output(data=_strip({k: v for k, v in response.items() if k != "headers"}, volatile), known=False)


def _provider_output(kind: str, response: dict[str, Any], request: dict[str, Any] | None) -> Output | None:
    """The output of a response in a shape a provider plugin knows; ``None`` when none knows it.

    Raises ``AttributeError``/``TypeError``/… when a part of a known shape holds the wrong type.
    """
    found = get_plugin_manager().hook.cassette_response_output(kind=kind, response=response, request=request)
    if found is None:
        return None
    calls = [ToolCall(str(c["name"]), c.get("arguments")) for c in found.get("tool_calls") or ()]
    out = Output(str(found.get("text") or ""), calls, found.get("finish"), bool(found.get("truncated")))
    out.error = found.get("error")
    return _with_structured(out)


def extract(
    kind: str,
    response: dict[str, Any],
    *,
    volatile: frozenset[str] = VOLATILE,
    request: dict[str, Any] | None = None,
) -> Output:
    """The output text, tool calls, finish reason and truncation of one recorded response.

    Reads tool results (``{"result": …}`` or ``{"error": …}``) itself and asks the
    provider plugins for the rest (``request``, the call's normalised request, tells
    them whose call it was); a response none knows becomes generic data with volatile
    fields removed.

    Example::

        out = extract("llm", {"status": 200, "json": {"choices": [{"message": {"content": "Paris."}}]}})
        out.text == "Paris."
    """
    if kind == "tool":
        if isinstance(response.get("error"), dict):
            err = response["error"]
            return Output(error=f"{err.get('type', 'error')}: {err.get('message', '')}", known=True)
        result = response.get("result")
        if isinstance(result, str):
            return _with_structured(Output(text=result))
        return Output(data=result, structured=True)
    status = response.get("status")
    status = status if isinstance(status, int) else 200
    truncated = bool(response.get("incomplete"))
    if status >= 400:
        body = response.get("json")
        err_body = body if body is not None else response.get("text")
        return Output(error=_error_of(status, err_body))
    try:
        out = _provider_output(kind, response, request)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError):
        # the provider's shape with a wrong type inside (a hand edit, a broken merge): compare as data
        out = None
    if out is None:
        out = _generic(response, status, volatile=volatile)
    # A stream cut short (the session ended first) is a truncation whatever its events say.
    out.truncated = out.truncated or truncated
    return out


# --- comparing two outputs -------------------------------------------------------------------------


def _strip(value: Any, volatile: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [_strip(v, volatile) for v in value]
    return value


def _shape(value: Any) -> set[str]:
    """Field paths of a JSON value with their types, list indices folded: its shape, not its content."""
    out: set[str] = set()
    for path, leaf in flatten(value).items():
        folded = "".join(part if not part.isdigit() else "#" for part in _split_path(path))
        out.add(f"{folded}:{type(leaf).__name__}")
    return out


def _split_path(path: str) -> list[str]:
    parts: list[str] = []
    token = ""
    for ch in path:
        if ch == "[":
            parts.append(token)
            token = "["
        elif ch == "]":
            parts.append("[#]" if token[1:].isdigit() else token + "]")
            token = ""
        else:
            token += ch
    parts.append(token)
    return [p for p in parts if p]


def _clip(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _call_names(calls: list[ToolCall]) -> str:
    return "[" + ", ".join(c.name for c in calls) + "]"


def _keys(arguments: Any) -> set[str]:
    return set(arguments) if isinstance(arguments, dict) else set()


@dataclass
class _Verdict:
    category: str
    reason: str
    score: float | None = None
    excerpt: str = ""


def _guard_category(reason: str) -> str:
    """The drift category of a guard's veto: a flipped meaning (a negation, another state, an antonym,
    done against to come, happened against only if) or a changed value (a number, a date, a code, a
    name, a value in another role)."""
    flipped = ("negated", "not negated", "opposite", "tense", "condition")
    return "negated" if reason.startswith(flipped) else "numbers"


def _bare(text: str) -> str:
    """``text`` case-folded, without punctuation or spacing."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def compare_text(old: str, new: str, *, backend: str | None = None) -> tuple[str, float | None, str]:
    """``(category, score, reason)`` for two answers that differ: negated, numbers, changed or reworded.

    The guards run both ways (a number that appears or disappears counts); the
    score is ``semantic_match(new, old)``: does the new answer still say what
    the recorded one said?

    Example::

        compare_text("The capital of France is Paris.", "Paris is the capital of France.")
        # ('reworded', 1.0, 'all 3 expected words found')
    """
    # deferred: the text guards (core.meaning compiles its word lists, ~15 ms) and the semantic backends
    # are needed only when two answers differ; every run of the pytest plugin and every `cassette.use`
    # imports this module (the seam's rerecord review), most never compare a text.
    from cassette.core.meaning import guard
    from cassette.review.semantic import semantic_match

    vetoes = [v for v in (guard(new, old), guard(old, new)) if v is not None]
    if vetoes:
        if all(_guard_category(v) == "numbers" for v in vetoes):
            # the number guard speaks first; a flipped meaning beside a changed number is the worse news
            bare_new, bare_old = _DIGITS.sub(" ", new), _DIGITS.sub(" ", old)
            negation = guard(bare_new, bare_old) or guard(bare_old, bare_new)
            if negation is not None and _guard_category(negation) == "negated":
                return "negated", None, f"{negation}; and {vetoes[0]}"
        worst = min(vetoes, key=lambda v: _RANK[_guard_category(v)])
        return _guard_category(worst), None, worst
    try:
        result = semantic_match(new, old, backend=backend)
    except UnknownSemanticBackendError:
        raise  # a misspelt backend (argument or config) must not read as every answer changed
    except CassetteConfigError:
        # the recorded answer holds no word to look for ("", "OK.", "Yes!"): compare it as it stands
        same = _bare(new) == _bare(old)
        why = "the recorded answer has no words to compare by meaning"
        return ("reworded", 1.0, f"same words ({why})") if same else ("changed", None, f"{why}: {old!r:.60}")
    except SemanticBackendError as exc:
        if backend not in (None, "lexical"):
            raise
        # the configured backend cannot run here (an extra not installed): judge with the lexical one
        result = semantic_match(new, old, backend="lexical")
        note = f" (lexical fallback: {exc})"
    else:
        note = ""
    if result:
        return "reworded", result.score, f"same meaning ({result.backend} {result.score:.2f}){note}"
    return (
        "changed",
        result.score,
        f"{result.backend} {result.score:.2f} < {result.threshold:.2f}: {result.reason}{note}",
    )


def _compare_data(old: Any, new: Any, backend: str | None, where: str) -> _Verdict | None:
    """Leaf-by-leaf comparison of two JSON values of the same shape; ``None`` when equal."""
    diffs = field_diff(new, old)
    if not diffs:
        return None
    worst: _Verdict | None = None
    for path, b, a in diffs:
        label = f"{where}{'.' if where and path else ''}{path}"
        if isinstance(a, str) and isinstance(b, str):
            category, score, reason = compare_text(a, b, backend=backend)
        elif isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
            category, score, reason = "numbers", None, f"{a!r} → {b!r}"
        else:
            category, score, reason = "changed", None, f"{_clip(repr(a), 30)} → {_clip(repr(b), 30)}"
        verdict = _Verdict(
            category, f"{label}: {reason}", score, f"{label}: {_clip(str(a))} → {_clip(str(b))}"
        )
        if worst is None or _RANK[verdict.category] < _RANK[worst.category]:
            worst = verdict
    return worst


def compare_outputs(old: Output, new: Output, *, backend: str | None = None) -> _Verdict | None:
    """The most serious difference between two outputs, or ``None`` when they say the same."""
    if old.error != new.error:
        return _Verdict(
            "error",
            f"error: {old.error or 'none'} → {new.error or 'none'}",
            excerpt=f"{_clip(old.error or 'ok')} → {_clip(new.error or 'ok')}",
        )
    if old.known != new.known and old.truncated == new.truncated:
        # one side is in a provider's shape, the other is not (or holds a wrong type): its text and
        # tool calls cannot be read, so say so rather than report them gone
        state = "no longer" if old.known else "now"
        return _Verdict(
            "shape",
            f"response changed: it is {state} in a provider shape drift can read; "
            "check the recording, restore it from git or re-record",
        )
    names_old, names_new = [c.name for c in old.tool_calls], [c.name for c in new.tool_calls]
    if names_old != names_new:
        verb = "reordered" if sorted(names_old) == sorted(names_new) else "changed"
        return _Verdict(
            "tools",
            f"tool calls {verb}: {_call_names(old.tool_calls)} → {_call_names(new.tool_calls)}",
            excerpt=f"{_call_names(old.tool_calls)} → {_call_names(new.tool_calls)}",
        )
    for a, b in zip(old.tool_calls, new.tool_calls):
        ka, kb = _keys(a.arguments), _keys(b.arguments)
        if ka != kb or type(a.arguments) is not type(b.arguments):
            added, gone = sorted(kb - ka), sorted(ka - kb)
            change = ", ".join([*(f"+{k}" for k in added), *(f"-{k}" for k in gone)]) or "argument type"
            return _Verdict(
                "tools", f"{a.name} arguments changed keys: {change}", excerpt=f"{a.name}({change})"
            )
    if old.truncated != new.truncated:
        state = "truncated" if new.truncated else "no longer truncated"
        return _Verdict("shape", f"the output is {state} (finish {old.finish} → {new.finish})")
    if old.finish != new.finish and (old.known and new.known):
        return _Verdict(
            "shape", f"finish reason {old.finish} → {new.finish}", excerpt=f"{old.finish} → {new.finish}"
        )
    if old.structured != new.structured:
        state = "structured (JSON)" if new.structured else "prose"
        return _Verdict(
            "shape", f"the output is now {state}", excerpt=f"{_clip(old.text)} → {_clip(new.text)}"
        )
    verdicts: list[_Verdict] = []
    for a, b in zip(old.tool_calls, new.tool_calls):
        verdict = _compare_data(a.arguments, b.arguments, backend, f"{a.name}()")
        if verdict is not None:
            verdicts.append(verdict)
    if old.structured and new.structured:
        sa, sb = _shape(old.data), _shape(new.data)
        if sa != sb:
            more = sorted(p.split(":")[0] for p in sb - sa)
            less = sorted(p.split(":")[0] for p in sa - sb)
            change = ", ".join([*(f"+{p}" for p in more[:4]), *(f"-{p}" for p in less[:4])])
            return _Verdict("shape", f"structured output shape changed: {change}", excerpt=change)
        verdict = _compare_data(old.data, new.data, backend, "")
        if verdict is not None:
            verdicts.append(verdict)
    elif old.text != new.text:
        if not old.text.strip() or not new.text.strip():
            verdicts.append(
                _Verdict("changed", "the answer " + ("appeared" if new.text.strip() else "is empty now"))
            )
        else:
            category, score, reason = compare_text(old.text, new.text, backend=backend)
            verdicts.append(_Verdict(category, reason, score))
        verdicts[-1].excerpt = f'"{_clip(old.text)}" → "{_clip(new.text)}"'
    if not verdicts:
        return None
    return min(verdicts, key=lambda v: _RANK[v.category])


# --- comparing two cassettes -----------------------------------------------------------------------


@dataclass
class DriftItem:
    """One interaction that differs between two recordings.

    ``change`` is added / removed / modified; ``category`` the most serious
    difference (see the module docs); ``output_category`` the category of the
    output alone (differs from ``category`` only when the request changed too);
    ``fields`` the differing field paths; ``tokens`` the (old, new) token counts;
    ``tools_changed`` which side of a tools change this is: ``"request"`` (the
    tools offered to the model differ), ``"response"`` (the model called other
    tools), or both; ``cassette`` the file the interaction belongs to;
    ``request_changes`` one line per changed request field with its values,
    ``path: old → new`` (as a `CassetteMiss` shows them).
    """

    seq: int
    kind: str
    change: str
    category: str
    fields: list[str] = field(default_factory=list)
    old: Interaction | None = None
    new: Interaction | None = None
    output_category: str = ""
    score: float | None = None
    reason: str = ""
    excerpt: str = ""
    label: str = ""
    old_seq: int | None = None
    tokens: tuple[int, int] = (0, 0)
    tools_changed: tuple[str, ...] = ()
    cassette: str = field(default="", compare=False)
    request_changes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.output_category:
            self.output_category = self.category

    def __repr__(self) -> str:
        # short on purpose: the interactions it holds can be megabytes of prompt and stream
        excerpt = _clip(self.excerpt or self.reason, 60)
        return (
            f"DriftItem(category={self.category!r}, seq={self.seq}, cassette={self.cassette!r}, "
            f"excerpt={excerpt!r})"
        )

    @property
    def tools_label(self) -> str:
        """Which side a tools change is on, for people.

        Example::

            item.tools_label == "tools offered (request) + tool calls (response)"
        """
        return " + ".join(TOOL_SIDES[side] for side in self.tools_changed)

    def __str__(self) -> str:
        text = f"#{self.seq} {self.kind} {self.category}"
        if self.label:
            text += f" {self.label}"
        if self.tools_changed:
            text += f" [{self.tools_label}]"
        if self.reason:
            text += f": {self.reason}"
        elif self.fields:
            text += f" ({', '.join(self.fields[:5])})"
        return text

    def to_json(self) -> dict[str, Any]:
        """The item as JSON-able data (what ``cassette drift --format json`` prints).

        Example::

            json.dumps([item.to_json() for item in compare_cassettes(a, b)])
        """
        return {
            "seq": self.seq,
            "old_seq": self.old_seq,
            "kind": self.kind,
            "label": self.label,
            "change": self.change,
            "category": self.category,
            "output_category": self.output_category,
            "score": None if self.score is None else round(self.score, 3),
            "reason": self.reason,
            "excerpt": self.excerpt,
            "fields": self.fields,
            "tools_changed": list(self.tools_changed),
            "tools_label": self.tools_label,
            "request_changes": self.request_changes,
            "tokens": {
                "old": self.tokens[0],
                "new": self.tokens[1],
                "delta": self.tokens[1] - self.tokens[0],
            },
        }


def volatile_fields(kind: str) -> frozenset[str]:
    """The built-in volatile field names plus those plugins add through ``cassette_volatile_fields``."""
    extra: set[str] = set()
    for names in get_plugin_manager().hook.cassette_volatile_fields(kind=kind):
        extra.update(str(n) for n in names or ())
    return VOLATILE | extra


def _hydrated(cassette: Cassette, value: Any) -> tuple[Any, str | None]:
    try:
        return cassette.hydrate(value), None
    except CassetteError as exc:
        return value, str(exc)


def _label(kind: str, request: dict[str, Any]) -> str:
    if kind == "tool":
        return str(request.get("name", "tool"))
    if kind == "llm":
        parts = [str(request.get(k)) for k in ("provider", "endpoint", "model") if request.get(k)]
        return " ".join(parts)
    return f"{request.get('method', '')} {request.get('url', '')}".strip()


def _tokens(response: Any, request: Any) -> int:
    return (
        tokens_of(response, request if isinstance(request, dict) else None)
        if isinstance(response, dict)
        else 0
    )


def pair_interactions(
    old: Cassette | None, new: Cassette | None
) -> list[tuple[Interaction | None, Interaction | None]]:
    """The interactions of two recordings, aligned as drift pairs them: ``(old, new)``, ``None`` on the
    side where a call was added or removed; unchanged calls pair up too.

    Example::

        for a, b in pair_interactions(load_cassette("t.json"), load_cassette("t.pending.json")):
            print(a and a.seq, b and b.seq)
    """
    return _pairs(old.interactions if old is not None else [], new.interactions if new is not None else [])


def _pairs(
    old: list[Interaction], new: list[Interaction]
) -> list[tuple[Interaction | None, Interaction | None]]:
    """Align two interaction lists: in a cassette several tests share, each test's calls with its own
    (one test's changed call count must not shift the others' pairs); then as `_aligned` does."""
    if not any("test" in i.extra for i in old) and not any("test" in i.extra for i in new):
        return _aligned(old, new)
    groups: dict[Any, tuple[list[Interaction], list[Interaction]]] = {}
    for side, items in enumerate((old, new)):
        for inter in items:
            owner = inter.extra.get("test")
            groups.setdefault(owner if isinstance(owner, str) else None, ([], []))[side].append(inter)
    return [pair for olds, news in groups.values() for pair in _aligned(olds, news)]


def _aligned(
    old: list[Interaction], new: list[Interaction]
) -> list[tuple[Interaction | None, Interaction | None]]:
    """Align two interaction lists: equal keys pair up, in order; a call that only moved pairs with
    itself (calls in flight at once reach the seam in the scheduler's order); what is left of a
    replaced run pairs by kind, in order."""
    a = [f"{i.kind}:{i.key}" for i in old]
    b = [f"{i.kind}:{i.key}" for i in new]
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    waiting: dict[str, list[int]] = {}  # the new calls outside the equal runs, by key
    for tag, _, _, j1, j2 in opcodes:
        if tag != "equal":
            for j in range(j1, j2):
                waiting.setdefault(b[j], []).append(j)
    moved: dict[int, int] = {}  # an old call outside the equal runs -> the same call, moved
    for tag, i1, i2, _, _ in opcodes:
        if tag != "equal":
            for i in range(i1, i2):
                found = waiting.get(a[i])
                if found:
                    moved[i] = found.pop(0)
    taken = set(moved.values())
    out: list[tuple[Interaction | None, Interaction | None]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            out.extend(zip(old[i1:i2], new[j1:j2]))
            continue
        out.extend((old[i], new[moved[i]]) for i in range(i1, i2) if i in moved)
        olds = [old[i] for i in range(i1, i2) if i not in moved]
        news = [new[j] for j in range(j1, j2) if j not in taken]
        kinds = difflib.SequenceMatcher(None, [i.kind for i in olds], [i.kind for i in news], autojunk=False)
        for ktag, k1, k2, l1, l2 in kinds.get_opcodes():
            if ktag == "equal":
                out.extend(zip(olds[k1:k2], news[l1:l2]))
                continue
            out.extend((o, None) for o in olds[k1:k2])
            out.extend((None, x) for x in news[l1:l2])
    return out


def _one_side(inter: Interaction, cassette: Cassette, change: str) -> DriftItem:
    request, _ = _hydrated(cassette, inter.request)
    response, _ = _hydrated(cassette, inter.response)
    out = extract(inter.kind, response, request=request if isinstance(request, dict) else None)
    summary = out.text or (_call_names(out.tool_calls) if out.tool_calls else "") or (out.error or "")
    tokens = (0, _tokens(response, request)) if change == "added" else (_tokens(response, request), 0)
    return DriftItem(
        inter.seq,
        inter.kind,
        change,
        change,
        old=inter if change == "removed" else None,
        new=inter if change == "added" else None,
        reason="not in the earlier recording" if change == "added" else "no longer made",
        excerpt=f'"{_clip(summary)}"' if summary else "",
        label=_label(inter.kind, request),
        old_seq=inter.seq if change == "removed" else None,
        tokens=tokens,
    )


_LAST_NAME = re.compile(r"([^.\[\]]*)(?:\[\d+\])*$")


def _id_like(path: str) -> bool:
    """``…tool_calls[0].id``, ``…call_id``, ``…previous_response_id``: a field that names a call."""
    match = _LAST_NAME.search(path)
    name = match.group(1) if match else ""
    return name == "id" or name.endswith(("_id", "Id"))


# A changed response text shorter than this is not taken for one a later request echoes ("stop").
_ECHO_MIN = 16


def _echoable(response: Any) -> dict[str, str]:
    """What a later request of the conversation may repeat from a response, by field path: its
    id-like leaves (``choices[0].message.tool_calls[0].id``, a stream event's ``id``) and its texts."""
    if not isinstance(response, dict):
        return {}
    body: Any = response.get("json")
    if body is None and isinstance(response.get("events"), list):
        body = [data for _, data in sse.parsed(response["events"])]
    if body is None:
        body = response.get("result")
    return {
        p: v for p, v in flatten(body).items() if isinstance(v, str) and (_id_like(p) or len(v) >= _ECHO_MIN)
    }


def _learn_echoes(echoes: dict[str, str], res_a: Any, res_b: Any, out_a: Output, out_b: Output) -> None:
    """Remember which new id or text took the place of which old one in a pair of responses."""
    old, new = _echoable(res_a), _echoable(res_b)
    if len(out_a.text) >= _ECHO_MIN and out_b.text:  # a streamed answer is no leaf: its assembled text
        old["(answer)"], new["(answer)"] = out_a.text, out_b.text
    for path, value in old.items():
        other = new.get(path)
        if isinstance(other, str) and other != value:
            echoes[value] = other


def _request_changes(req_a: Any, req_b: Any, echoes: dict[str, str]) -> list[tuple[str, Any, Any]]:
    """``(path, old, new)`` of each request field that differs, less what the conversation only
    echoes: ``messages[3].tool_call_id`` following an earlier response's changed tool-call id, the
    history repeating an earlier answer that changed (that answer's own pair reports it)."""
    return [
        (path, old, new)
        for path, new, old in field_diff(req_b, req_a)
        if not (isinstance(old, str) and echoes.get(old) == new)
    ]


def _modified(
    a: Interaction,
    b: Interaction,
    old: Cassette,
    new: Cassette,
    backend: str | None,
    echoes: dict[str, str] | None = None,
) -> DriftItem | None:
    """The drift between ``a`` (of ``old``) and ``b`` (of ``new``), paired as the same call, or
    None when no field of its request or its response differs."""
    req_a, err_a = _hydrated(old, a.request)
    req_b, err_b = _hydrated(new, b.request)
    res_a, err_c = _hydrated(old, a.response)
    res_b, err_d = _hydrated(new, b.response)
    label = _label(b.kind, req_b if isinstance(req_b, dict) else {})
    label = label or _label(a.kind, req_a if isinstance(req_a, dict) else {})  # an emptied request
    tokens = (_tokens(res_a, req_a), _tokens(res_b, req_b))
    unreadable = err_a or err_b or err_c or err_d
    if unreadable:
        return DriftItem(
            b.seq,
            b.kind,
            "modified",
            "changed",
            [],
            a,
            b,
            reason=f"cannot read: {unreadable}",
            label=label,
            old_seq=a.seq,
            tokens=tokens,
        )
    # equal keys with different stored requests: a hand edit or a changed redactor, worth a look too
    changes = _request_changes(req_a, req_b, echoes or {}) if a.key != b.key or req_a != req_b else []
    request_fields = [p for p, _, _ in changes]
    if not request_fields and res_a == res_b:
        return None
    judged = _response_drift(a, b, req_a, req_b, res_a, res_b, backend, echoes)
    if judged is None:
        if not request_fields:
            return None
        judged = _Verdict("volatile-only", ""), []
    verdict, response_fields = judged
    sides = _tool_sides(b.kind, request_fields, verdict.category)
    if request_fields:
        category, fields = "request", request_fields + response_fields
        reason = _request_reason(request_fields, verdict)
        request_changes = format_diff(changes, REQUEST_CHANGES_SHOWN, sep=" → ")
    else:
        category, fields, reason, request_changes = verdict.category, response_fields, verdict.reason, []
    return DriftItem(
        b.seq,
        b.kind,
        "modified",
        category,
        fields,
        a,
        b,
        verdict.category,
        verdict.score,
        reason,
        verdict.excerpt,
        label,
        a.seq,
        tokens,
        sides,
        request_changes=request_changes,
    )


def _response_drift(
    a: Interaction,
    b: Interaction,
    req_a: Any,
    req_b: Any,
    res_a: Any,
    res_b: Any,
    backend: str | None,
    echoes: dict[str, str] | None,
) -> tuple[_Verdict, list[str]] | None:
    """How the (hydrated) response ``res_b`` differs from ``res_a``: the verdict on their outputs
    and the response fields that differ, volatile ones left out unless only they changed; None
    when the outputs agree and no field differs. Learns the pair's ``echoes`` (`_learn_echoes`)."""
    volatile = volatile_fields(b.kind) if b.kind != "tool" else frozenset()
    out_a = extract(a.kind, res_a, volatile=volatile, request=req_a if isinstance(req_a, dict) else None)
    out_b = extract(b.kind, res_b, volatile=volatile, request=req_b if isinstance(req_b, dict) else None)
    if echoes is not None:
        _learn_echoes(echoes, res_a, res_b, out_a, out_b)
    verdict = compare_outputs(out_a, out_b, backend=backend)
    if verdict is None:
        changed = [p for p, _, _ in field_diff(res_b, res_a)]
        if not changed:
            return None
        shown = ", ".join(changed[:5]) + (" …" if len(changed) > 5 else "")
        return _Verdict("volatile-only", f"only volatile fields changed ({shown})"), changed
    stripped = field_diff(_strip(res_b, volatile), _strip(res_a, volatile))
    return verdict, [p for p, _, _ in stripped if not p.startswith("headers.")]


def _request_reason(request_fields: list[str], verdict: _Verdict) -> str:
    """The reason shown for a call whose request changed: the fields, then the output's verdict."""
    shown = ", ".join(p or "(empty request)" for p in request_fields[:4])
    shown += " …" if len(request_fields) > 4 else ""
    reason = f"request differs in {shown}; output {verdict.category}"
    if verdict.reason and verdict.category != "volatile-only":
        reason += f": {verdict.reason}"
    return reason


def _tool_sides(kind: str, request_fields: list[str], output_category: str) -> tuple[str, ...]:
    """``("request",)`` when the tools offered differ, ``("response",)`` when other tools were called."""
    sides: list[str] = []
    if kind == "llm" and any((_split_path(p) or [""])[0] in TOOL_OFFER_FIELDS for p in request_fields):
        sides.append("request")
    if output_category == "tools":
        sides.append("response")
    return tuple(sides)


def compare_cassettes(
    old: Cassette | None, new: Cassette | None, *, backend: str | None = None
) -> list[DriftItem]:
    """Every interaction that differs between two recordings, each with its category (volatile-only included).

    ``None`` stands for a cassette that does not exist (all interactions added or removed).

    Example::

        for item in compare_cassettes(load_cassette("triage.json"), load_cassette("triage.pending.json")):
            print(item.category, item.reason)
    """
    items: list[DriftItem] = []
    echoes: dict[str, str] = {}  # old id -> the new id that took its place, as the run goes on
    for x, y in pair_interactions(old, new):
        if x is None and y is not None:
            assert new is not None
            items.append(_one_side(y, new, "added"))
        elif y is None and x is not None:
            assert old is not None
            items.append(_one_side(x, old, "removed"))
        elif x is not None and y is not None:
            assert old is not None and new is not None
            item = _modified(x, y, old, new, backend, echoes)
            if item is not None:
                items.append(item)
    # the committed file's name (a re-recording's .pending.json is the same cassette)
    where = old if old is not None else new
    for item in items:
        item.cassette = str(where.path) if where is not None else ""
    return items


def diff_cassettes(old: Cassette, new: Cassette, *, backend: str | None = None) -> list[DriftItem]:
    """Every real change between two recordings (volatile-only changes dropped), categorised.

    Example::

        for item in diff_cassettes(load_cassette(a), load_cassette(b)):
            print(item)
    """
    return [i for i in compare_cassettes(old, new, backend=backend) if i.category != "volatile-only"]


def regressions(items: Iterable[DriftItem]) -> list[DriftItem]:
    """The items whose *output* regressed, re-labelled with that output category (for `semantic_drift`)."""
    return [replace(i, category=i.output_category) for i in items if i.output_category in REGRESSIONS]


def change_signature(items: Iterable[DriftItem]) -> frozenset[tuple[str, str, str]]:
    """What changed in a recording, wherever it happened: each ``(category, field path, old → new)``
    of its items (volatile-only ones left out). Cassettes with equal signatures changed the same way
    (one system prompt edited under 300 tests), and a report shows them as one group.

    Example::

        change_signature(compare_cassettes(old, new))
        # frozenset({('request', 'messages[0].content', '"Be brief." → "Be terse."')})
    """
    out: set[tuple[str, str, str]] = set()
    for item in items:
        if item.category == "volatile-only":
            continue
        for line in item.request_changes:
            path, _, values = line.partition(": ")
            out.add((item.category, path, values))
        if not item.request_changes:
            out.add((item.category, ",".join(item.fields), item.excerpt or item.reason))
    return frozenset(out)


def drift(path: str | Path | None = None) -> list[Any]:
    """What the last ``rerecord`` changed, interaction by interaction (volatile fields ignored).

    With ``path``, compares the committed cassette with its pending re-recording on disk.

    Example::

        with cassette.using("tests/cassettes/triage.json", mode="rerecord"):
            agent.run("My card was charged twice")
        for item in cassette.drift():
            print(item)
    """
    if path is not None:
        committed = Path(path)
        return diff_cassettes(load_cassette(committed), load_cassette(pending_path(committed)))
    session = last_session()
    if session is None or session.requested_mode is not Mode.RERECORD:
        raise CassetteError(
            "cassette.drift() reports on a rerecord, and none has finished in this context. "
            "Run the block with mode='rerecord' (or CASSETTE_MODE=rerecord) first, or pass a cassette path."
        )
    return list(session.drift)


set_rerecord_review(diff_cassettes)  # a rerecord's drift is drift's to compute, not the seam's
