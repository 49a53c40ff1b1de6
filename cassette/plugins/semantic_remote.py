"""Semantic backends that call a model: ``openai-embeddings`` and ``judge`` (an LLM judge).

Both call through an instrumented OpenAI client, i.e. through the cassette seam:
inside a recording their calls are stored in the cassette like the agent's own,
and on replay the verdicts come back from the cassette — offline, deterministic,
no API key. A verdict that was never recorded raises `CassetteMiss`.

Example::

    from openai import OpenAI
    from cassette.plugins.semantic_remote import set_client

    set_client(OpenAI())  # any OpenAI-compatible client; default: one built from OPENAI_* variables
    assert cassette.semantic_match(answer, "offers a refund", backend="judge")
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import orjson

import cassette
from cassette.config import load_config
from cassette.core.meaning import VETO_FACTOR, guard
from cassette.errors import SemanticBackendError
from cassette.hookspecs import hookimpl
from cassette.plugins.semantic_embeddings import split_sentences

JUDGE_PROMPT_VERSION = "cassette-judge-v1"
JUDGE_PROMPT = f"""[{JUDGE_PROMPT_VERSION}]
You grade whether an ANSWER conveys the EXPECTED information.
- PASS only if every piece of the expected information is present in the answer, stated or clearly implied.
- FAIL if any expected information is missing, or if the answer contradicts or negates it
  (for example "we cannot offer a refund" contradicts "offers a refund"),
  or if a number, amount, date or name differs from the expected one.
- Extra information in the answer, wording and tone do not matter.
Reply with JSON: {{"reasoning": "<one sentence>", "verdict": "pass" | "fail"}}."""

JUDGE_SCHEMA: dict[str, Any] = {
    "name": "semantic_verdict",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
        },
        "required": ["reasoning", "verdict"],
        "additionalProperties": False,
    },
}
JUDGE_SEED = 20261130

_lock = threading.Lock()
_client: Any = None
_embeddings_model = "text-embedding-3-small"
_judge_model: str | None = None


def set_client(client: Any, *, embeddings_model: str | None = None, judge_model: str | None = None) -> None:
    """Use ``client`` (an OpenAI or OpenAI-compatible client) for the remote backends.

    The client is instrumented (a copy routed through the cassette seam); your
    object is not modified.

    Example::

        set_client(OpenAI(base_url="http://127.0.0.1:8765/v1"), judge_model="gpt-4o-mini")
    """
    global _client, _embeddings_model, _judge_model
    with _lock:
        _client = cassette.instrument(client) if client is not None else None
        if embeddings_model:
            _embeddings_model = embeddings_model
        if judge_model:
            _judge_model = judge_model


def _get_client() -> Any:
    global _client
    with _lock:
        if _client is not None:
            return _client
    session = cassette.current_session()
    key = os.environ.get("OPENAI_API_KEY")
    if not key and not (session is not None and session.replaying):
        raise SemanticBackendError(
            "the judge and openai-embeddings backends need an OpenAI client: set OPENAI_API_KEY "
            "(and OPENAI_BASE_URL for a compatible server), or call "
            "cassette.plugins.semantic_remote.set_client(OpenAI(...)). Replaying needs no key."
        )
    try:
        # deferred: an optional dependency (cassette[openai]): any generation, 1.x to 3.x
        from openai import OpenAI
    except ImportError:
        raise SemanticBackendError(
            "the judge and openai-embeddings backends need the openai package (any of 1.x, 2.x, 3.x): "
            "pip install 'cassette[openai]', or call "
            "cassette.plugins.semantic_remote.set_client(...) with an OpenAI-compatible client."
        ) from None

    client = cassette.instrument(
        OpenAI(api_key=key or "cassette-replay-needs-no-key", base_url=os.environ.get("OPENAI_BASE_URL"))
    )
    with _lock:
        _client = client
    return client


def _one_line(text: str, width: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


class JudgeBackend:
    """An LLM judge: temperature 0, fixed seed, strict JSON-schema verdict, versioned prompt."""

    name = "judge"
    default_threshold = 0.5

    def score(self, actual: str, expected: str) -> tuple[float, str]:
        model = _judge_model or load_config().judge_model
        response = _get_client().chat.completions.create(
            model=model,
            temperature=0,
            seed=JUDGE_SEED,
            response_format={"type": "json_schema", "json_schema": JUDGE_SCHEMA},
            messages=[
                {"role": "system", "content": JUDGE_PROMPT},
                {"role": "user", "content": f"EXPECTED:\n{expected}\n\nANSWER:\n{actual}"},
            ],
        )
        content = response.choices[0].message.content or ""
        try:
            verdict = orjson.loads(content)
            decision = str(verdict["verdict"]).strip().lower()
            reasoning = str(verdict.get("reasoning", ""))
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise SemanticBackendError(
                f"the judge ({model}) answered {content[:120]!r}, not the JSON verdict its schema asks for. "
                "Re-record the cassette, or use a model that supports structured outputs."
            ) from None
        if decision not in ("pass", "fail"):
            raise SemanticBackendError(
                f"the judge ({model}) gave verdict {decision!r}; expected pass or fail."
            )
        return (1.0 if decision == "pass" else 0.0), f"judge {decision}: {_one_line(reasoning)}"


class OpenAIEmbeddingsBackend:
    """Cosine similarity of provider embeddings (max over the answer's sentences), with the
    lexical backend's negation veto and number guard."""

    name = "openai-embeddings"
    default_threshold = 0.6

    def score(self, actual: str, expected: str) -> tuple[float, str]:
        sentences = [s for s in split_sentences(actual) if s.strip()]
        texts = [expected, actual, *sentences[:32]]
        response = _get_client().embeddings.create(model=_embeddings_model, input=texts)
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        target = vectors[0]
        best = max(_cosine(target, v) for v in vectors[1:])
        best = max(0.0, min(1.0, best))
        vetoed = guard(actual, expected)
        if vetoed:
            return best * VETO_FACTOR, vetoed
        return best, f"cosine {best:.2f} ({_embeddings_model})"


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


_BACKENDS = [JudgeBackend(), OpenAIEmbeddingsBackend()]


@hookimpl
def cassette_semantic_backends() -> list[Any]:
    return list(_BACKENDS)
