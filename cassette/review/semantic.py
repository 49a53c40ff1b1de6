"""``semantic_match``: does an answer mean what the test expected?

Backends are plugins offered through the ``cassette_semantic_backends`` hook;
built-ins are ``lexical`` (the default: offline, fast, word coverage with
negation and number guards) and ``embeddings`` (static embeddings, the
``[embeddings]`` extra). ``[tool.cassette]`` chooses the default backend and
per-backend thresholds through :func:`configure`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cassette.config import load_config
from cassette.errors import CassetteConfigError, SemanticBackendError, UnknownSemanticBackendError
from cassette.plugins.manager import get_plugin_manager

DEFAULT_BACKEND = "lexical"


@runtime_checkable
class SemanticBackend(Protocol):
    """What a ``cassette_semantic_backends`` hook returns a list of.

    ``score`` returns a similarity in ``[0, 1]`` (1 = same meaning) and a one-line
    reason a person can act on. It is called as ``score(actual, expected)``:
    ``actual`` may be a long answer, ``expected`` the short gist it must contain.
    A result passes when ``score >= threshold``; ``default_threshold`` is used
    unless ``[tool.cassette] semantic_thresholds`` or the caller gives another.
    """

    name: str
    default_threshold: float

    def score(self, actual: str, expected: str) -> tuple[float, str]: ...


@dataclass(frozen=True)
class MatchResult:
    """The verdict of :func:`semantic_match`; truthy when it matched.

    Its ``repr`` carries the reason, so ``assert semantic_match(...)`` explains a failure.
    """

    score: float
    threshold: float
    backend: str
    reason: str
    expected: str

    @property
    def passed(self) -> bool:
        return self.score >= self.threshold

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        verdict = "match" if self.passed else "NO MATCH"
        sign = ">=" if self.passed else "<"
        return (
            f"<MatchResult {verdict} [{self.backend}] score {self.score:.2f} {sign} {self.threshold:.2f}: "
            f"{self.reason}; expected {_clip(self.expected)!r}>"
        )


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


_lock = threading.Lock()
_default_backend: str = DEFAULT_BACKEND
_thresholds: dict[str, float] = {}


def _check_threshold(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise CassetteConfigError(f"{where} must be a number from 0 to 1, got {value!r}.")
    return float(value)


def configure(default_backend: str | None, thresholds: dict[str, float]) -> None:
    """Set the default backend and per-backend thresholds (called with ``[tool.cassette]``).

    Backend names are checked when first used, since plugins load later than config.

    Example::

        configure("embeddings", {"lexical": 0.7})
    """
    checked = {
        name: _check_threshold(value, f"[tool.cassette] semantic_thresholds.{name}")
        for name, value in thresholds.items()
    }
    global _default_backend, _thresholds, _from_config
    with _lock:
        _default_backend = default_backend or DEFAULT_BACKEND
        _thresholds = checked
        _from_config = False  # an explicit call: kept until a pyproject.toml says otherwise


_applied_config: object = None
_from_config = False  # the current settings came from a pyproject.toml, not from configure()


def _apply_config() -> None:
    """Take the default backend and thresholds from ``[tool.cassette]`` when the project changes."""
    global _applied_config, _from_config
    cfg = load_config()
    if cfg is not _applied_config:
        _applied_config = cfg
        if cfg.source is not None:  # only a real [tool.cassette] overrides what configure() set
            configure(cfg.semantic_backend, cfg.semantic_thresholds)
            _from_config = True
        elif _from_config:  # left that project: its thresholds must not follow into this one
            configure(None, {})
            _from_config = False


def available_backends() -> dict[str, SemanticBackend]:
    """Every semantic backend offered by the registered plugins, by name.

    Example::

        sorted(available_backends())  # ['embeddings', 'lexical', ...]
    """
    found: dict[str, SemanticBackend] = {}
    # pluggy calls the last-registered plugin first; walk back so built-ins claim their names first.
    for offered in reversed(get_plugin_manager().hook.cassette_semantic_backends()):
        for backend in offered or ():
            if _checked.get(id(backend)) is not backend:
                _check_backend(backend)
            if backend.name in found and found[backend.name] is not backend:
                raise CassetteConfigError(
                    f"two plugins offer a semantic backend named {backend.name!r}; a plugin may not "
                    "shadow another's backend. Rename the plugin's backend."
                )
            found[backend.name] = backend
    return found


# Backends already checked against the protocol, by id (the value keeps the id from being reused):
# a runtime Protocol isinstance costs ~40 us, more than a lexical score, and runs on every match.
_checked: dict[int, SemanticBackend] = {}


def _check_backend(backend: object) -> None:
    if not isinstance(backend, SemanticBackend):
        raise CassetteConfigError(
            f"a cassette_semantic_backends hook returned {backend!r}, which lacks name, "
            "default_threshold or score(actual, expected). Fix or remove that plugin."
        )
    if len(_checked) > 1024:  # a plugin that builds a new backend per call must not grow this forever
        _checked.clear()
    _checked[id(backend)] = backend


def get_backend(name: str | None = None) -> SemanticBackend:
    """The backend called ``name`` (default: the configured one, ``lexical`` out of the box)."""
    wanted = name or _default_backend
    backends = available_backends()
    if wanted not in backends:
        names = ", ".join(sorted(backends)) or "none"
        raise UnknownSemanticBackendError(
            f"no semantic backend named {wanted!r}; available: {names}. Pass one of those as "
            "backend=..., set [tool.cassette] semantic_backend, or install the plugin that provides it."
        )
    return backends[wanted]


def semantic_match(
    actual: str,
    expected: str | Sequence[str],
    *,
    backend: str | None = None,
    threshold: float | None = None,
) -> MatchResult:
    """Whether ``actual`` says what ``expected`` says; a truthy/falsy :class:`MatchResult`.

    ``expected`` may be a list: the best-scoring entry decides. An answer longer
    than ``expected`` passes as long as it contains the expected meaning.

    Example::

        assert semantic_match("Sorry about that! I've issued a full refund.", "refund issued")
        assert not semantic_match("I cannot offer a refund.", "offers a refund")
    """
    if not isinstance(actual, str):
        raise CassetteConfigError(f"semantic_match: actual must be text, got {type(actual).__name__}.")
    candidates = (
        [expected] if isinstance(expected, str) else list(expected) if isinstance(expected, Sequence) else []
    )
    if not candidates or not all(isinstance(e, str) for e in candidates):
        raise CassetteConfigError(
            f"semantic_match: expected must be a string or a non-empty list of strings, got {expected!r}."
        )
    if not all(e.strip() for e in candidates):
        # an empty alternative would pass any answer, and with it the whole list
        raise CassetteConfigError(
            f"semantic_match: expected holds an empty string ({expected!r:.120}); write what the answer "
            "must say."
        )
    _apply_config()
    chosen = get_backend(backend)
    if threshold is None:
        limit = _thresholds.get(chosen.name, chosen.default_threshold)
    else:
        limit = _check_threshold(threshold, "semantic_match: threshold")
    best: MatchResult | None = None
    for text in candidates:
        value, reason = chosen.score(actual, text)
        if not (isinstance(value, int | float) and not math.isnan(value) and 0.0 <= value <= 1.0):
            raise SemanticBackendError(
                f"semantic backend {chosen.name!r} returned score {value!r}; expected a number from 0 to 1. "
                "Fix that backend's score()."
            )
        result = MatchResult(float(value), limit, chosen.name, reason, text)
        if best is None or result.score > best.score:
            best = result
    assert best is not None
    return best
