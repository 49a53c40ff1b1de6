"""The plugin manager: built-ins, the ``cassette`` entry-point group, and config ``plugins``."""

from __future__ import annotations

import importlib
import re
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from cassette import hookspecs
from cassette.errors import CassetteConfigError

if TYPE_CHECKING:
    from cassette.core.model import HttpRequest

_lock = threading.Lock()
_pm: pluggy.PluginManager | None = None


def _new_manager(extra: Iterable[str] = (), root: Path | None = None) -> pluggy.PluginManager:
    from cassette.plugins import BUILTIN

    pm = pluggy.PluginManager("cassette")
    pm.add_hookspecs(hookspecs)
    for name in BUILTIN:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a built-in not shipped in this build
                continue
            raise
        pm.register(module, name=name)
    try:
        pm.load_setuptools_entrypoints("cassette")
    except pluggy.PluginValidationError as exc:
        raise CassetteConfigError(
            "an installed cassette plugin (entry point group 'cassette') does not fit the hooks: "
            f"{_one_line(exc)}. "
            "Upgrade or uninstall that package."
        ) from exc
    for name in extra:
        load_plugin(pm, name, root)
    return pm


def import_plugin(name: str, root: Path | None = None) -> ModuleType:
    """Import a config plugin; a module beside pyproject.toml (``root``) is found even off ``sys.path``.

    The console script's ``sys.path`` starts at its own directory, not the project's, so
    ``plugins = ["local_rules"]`` with ``local_rules.py`` at the project root needs the root added.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if root is None or not isinstance(exc, ModuleNotFoundError) or exc.name != name.split(".", 1)[0]:
            raise CassetteConfigError(
                f"cannot import cassette plugin {name!r} listed in [tool.cassette] plugins: {exc}. "
                "Install it or remove it from the list."
            ) from exc
    except Exception as exc:  # the module's own code failed (a SyntaxError, a RuntimeError at import)
        raise CassetteConfigError(
            f"cassette plugin {name!r} listed in [tool.cassette] plugins failed while being imported "
            f"({type(exc).__name__}: {exc}). Fix the module or remove it from the list."
        ) from exc
    if str(root) not in sys.path:
        sys.path.append(str(root))  # appended: never shadows an installed module
    return import_plugin(name)


def _one_line(exc: BaseException) -> str:
    """pluggy's validation message (several lines: the plugin, the hookimpl, the arguments) as one."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()).rstrip(".")


def load_plugin(pm: pluggy.PluginManager, name: str, root: Path | None = None) -> None:
    """Import module ``name`` and register it, with a clear error if it cannot be imported."""
    if pm.has_plugin(name):
        return
    module = import_plugin(name, root)
    try:
        pm.register(module, name=name)
    except pluggy.PluginValidationError as exc:
        raise CassetteConfigError(
            f"cassette plugin {name!r} listed in [tool.cassette] plugins does not fit the hooks: "
            f"{_one_line(exc)}. "
            "Fix the hook's name or arguments (docs/plugins.md lists each hook's) or remove the plugin."
        ) from exc


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, created on first use.

    Example::

        pm = get_plugin_manager()
        pm.hook.cassette_secret_rules()
    """
    global _pm
    if _pm is None:
        with _lock:
            if _pm is None:
                from cassette.config import load_config

                config = load_config()
                _pm = _new_manager(config.plugins, config.root if config.source else None)
    return _pm


def reset_plugin_manager() -> None:
    """Forget the manager so the next use re-reads config and entry points (tests, `cassette plugins`)."""
    global _pm
    with _lock:
        _pm = None


def normalize_http(request: HttpRequest) -> tuple[str, dict[str, Any]]:
    """Ask the provider plugins what this HTTP request is; returns ``(kind, normalised request)``."""
    hook = (_pm if _pm is not None else get_plugin_manager()).hook
    normalized = hook.cassette_http_request(request=request)
    if normalized is None:  # only when the generic provider was unregistered
        normalized = {"kind": "http", "method": request.method, "url": request.url}
    kind = str(normalized.get("kind", "http"))
    hook.cassette_normalize(request=normalized, kind=kind)
    return kind, normalized


def normalize(request: dict[str, Any], kind: str) -> dict[str, Any]:
    """Run the ``cassette_normalize`` hooks on a request (in place) and return it."""
    get_plugin_manager().hook.cassette_normalize(request=request, kind=kind)
    return request


# what the built-in redactors leave in place of a secret: `<redacted>` (a secret field) and
# `<redacted:RULE_ID>` (a secret found in text)
_PLACEHOLDER = re.compile(rb"<redacted(?::[A-Za-z0-9_.-]{0,64})?>")


def redacted_key(request: dict[str, Any]) -> str:
    """The match key of an already redacted request, every redaction placeholder made the same.

    A replayed tool result, or model output, holds placeholders where the live run had
    secrets, so a request built from it cannot have the recorded key (the recorded key
    hashes the real secret). Redacting both sides and hashing them with the placeholders
    made alike lets such a request find its recording.
    """
    from cassette.core.canonical import canonical_json, sha256_hex

    return sha256_hex(_PLACEHOLDER.sub(b"<redacted>", canonical_json(request)))


_WHOLE_PLACEHOLDER = re.compile(_PLACEHOLDER.pattern.decode())  # the same placeholders, in text
placeholder_pattern = _PLACEHOLDER  # in canonical JSON bytes: does a request hold a placeholder?
_WILDCARDS_MAX = 16  # more placeholders in one string: compared as written (bounds backtracking)


def _wildcard(text: str) -> re.Pattern[str] | None:
    """``text`` as a pattern in which each placeholder stands for any non-empty text; None if it
    holds no placeholder (or too many)."""
    parts = _WHOLE_PLACEHOLDER.split(text)
    if len(parts) < 2 or len(parts) > _WILDCARDS_MAX + 1:
        return None
    return re.compile("(?s:.+?)".join(re.escape(p) for p in parts))


def wildcard_match(live: Any, recorded: Any) -> bool:
    """Whether ``live`` (a request built from replayed, redacted data) matches ``recorded`` when
    each placeholder in its strings stands for the text the recording holds there."""
    if isinstance(live, str):
        if not isinstance(recorded, str):
            return False
        if live == recorded:
            return True
        pattern = _wildcard(live)
        return pattern is not None and pattern.fullmatch(recorded) is not None
    if isinstance(live, dict):
        return (
            isinstance(recorded, dict)
            and live.keys() == recorded.keys()
            and all(wildcard_match(v, recorded[k]) for k, v in live.items())
        )
    if isinstance(live, list):
        return (
            isinstance(recorded, list)
            and len(live) == len(recorded)
            and all(wildcard_match(a, b) for a, b in zip(live, recorded))
        )
    return bool(live == recorded and type(live) is type(recorded))


SPREAD_MIN = 6  # a redacted value this long or longer (and not a bare word) is redacted elsewhere too


def spreadable(text: str) -> bool:
    """Whether a value redacted by its field's name is redacted wherever else the recording holds
    it (the next prompt, built from the tool result): 6 characters or more, and not a bare word,
    so letters with digits, symbols or spaces (``hunter2``, ``sess_9f8a7b``, ``correct horse
    battery``), 8 digits or more, or mixed case at 16 letters or more. A bare word (``postgres``,
    ``disabled``) is the field's value but also the word in every prompt that mentions it:
    replacing it there would change what the agent is asked and break replay."""
    if len(text) < SPREAD_MIN:
        return False
    letters = sum(c.isalpha() for c in text)
    if letters == 0:
        return sum(c.isdigit() for c in text) >= 8  # a long numeric token, not a year or a count
    if letters < len(text):
        return True
    return len(text) >= 16 and not text.islower() and not text.isupper()


def removed_values(original: Any, redacted_value: Any, out: set[str]) -> None:
    """Add to ``out`` each value of ``original`` that redaction replaced whole by a placeholder.

    A field redacted by its name (``session_token``, ``passwords``) is a secret the text rules
    may not recognise elsewhere; `spread_redactions` removes it from the rest of the recording.
    """
    if isinstance(original, dict) and isinstance(redacted_value, dict):
        for k, v in redacted_value.items():
            if k in original:
                removed_values(original[k], v, out)
    elif isinstance(original, list) and isinstance(redacted_value, list):
        if len(original) == len(redacted_value):
            for a, b in zip(original, redacted_value):
                removed_values(a, b, out)
    elif (
        isinstance(redacted_value, str)
        and isinstance(original, str | int | float)
        and not isinstance(original, bool)
        and _WHOLE_PLACEHOLDER.fullmatch(redacted_value)
    ):
        text = str(original)
        if spreadable(text) and not _WHOLE_PLACEHOLDER.fullmatch(text):
            out.add(text)


def spread_redactions(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` with every occurrence of each of ``secrets`` inside its strings made ``<redacted>``."""
    ordered = sorted(set(secrets), key=len, reverse=True)  # a longer secret first: it may hold a shorter
    if not ordered:
        return value

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for secret in ordered:
                if secret in v:
                    v = v.replace(secret, "<redacted>")
            return v
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value)


def redacted(data: Any, kind: str, part: str) -> Any:
    """A copy of ``data`` with every redactor applied; ``data`` itself is untouched."""
    from cassette.core.canonical import loads, ordered_json

    try:
        copy = _json_copy(data)
    except (TypeError, RecursionError):  # not plain JSON data: let the serialiser convert it
        copy = loads(ordered_json(data))
    get_plugin_manager().hook.cassette_redact(data=copy, kind=kind, part=part)
    return copy


def _json_copy(value: Any) -> Any:
    """A copy of plain JSON data whose containers are new and whose strings are shared.

    Strings are immutable, so redactors replace them rather than change them: a 50 MB
    response body is not duplicated (twice, through a JSON round trip) to be redacted.
    """
    if isinstance(value, str) or value is None or type(value) in (int, float, bool):
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError("non-string key")
            out[k] = _json_copy(v)
        return out
    if isinstance(value, list | tuple):
        return [_json_copy(v) for v in value]
    raise TypeError(type(value).__name__)
