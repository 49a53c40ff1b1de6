"""The plugin manager: built-ins, the ``cassette`` entry-point group, and config ``plugins``."""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from cassette import hookspecs
from cassette.config import load_config
from cassette.errors import CassetteConfigError
from cassette.plugins import BUILTIN
from cassette.secrets.rules import SecretRule, rules_from_plugins

if TYPE_CHECKING:
    from cassette.core.model import HttpRequest

_lock = threading.Lock()
_pm: pluggy.PluginManager | None = None
_builtin_rules: list[SecretRule] | None = None


def _builtin_manager() -> pluggy.PluginManager:
    """A manager holding the built-in plugins alone (no entry points, no config)."""
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
    return pm


# An `entry_points.txt` section header for the group, as importlib.metadata reads it
_GROUP = re.compile(rb"^[ \t]*\[[ \t]*cassette[ \t]*\][ \t]*\r?$", re.MULTILINE)


def may_have_entry_points(path: Iterable[str] | None = None) -> bool:
    """Whether an installed distribution on ``path`` (default ``sys.path``) may declare a plugin in
    the ``cassette`` entry-point group. False only when every entry of the path is a directory whose
    ``*.dist-info``/``*.egg-info`` metadata has an ``entry_points.txt`` without a ``[cassette]``
    section (or none): then the entry points need not be read at all. Importing importlib.metadata
    and reading every distribution costs ~0.05 s, more than a pre-commit hook's own work; this
    look at the metadata folders takes a few milliseconds.

    Example::

        may_have_entry_points()  # False in a venv with no cassette plugin installed
    """
    for entry in sys.path if path is None else path:
        try:
            found = list(os.scandir(entry or "."))
        except NotADirectoryError:  # a zip or an egg file: importlib.metadata must look inside
            return True
        except OSError:  # missing: nothing there
            continue
        for item in found:
            if not item.name.endswith((".dist-info", ".egg-info")):
                continue
            if not item.is_dir():  # a bare `.egg-info` file: let importlib.metadata read it
                return True
            try:
                with open(os.path.join(item.path, "entry_points.txt"), "rb") as fh:
                    text = fh.read()
            except FileNotFoundError:
                continue
            except OSError:
                return True
            if _GROUP.search(text):
                return True
    return False


def new_plugin_manager(extra: Iterable[str] = (), root: Path | None = None) -> pluggy.PluginManager:
    pm = _builtin_manager()
    try:
        if may_have_entry_points():  # else the installed packages declare no cassette plugin
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
                config = load_config()
                _pm = new_plugin_manager(config.plugins, config.root if config.source else None)
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


def tokens_of(response: dict[str, Any], request: dict[str, Any] | None = None) -> int:
    """Tokens a recorded response cost (0 when it says nothing about usage), as the provider
    plugins read it (``cassette_response_tokens``); ``request`` is the call's normalised
    request when the caller has it (the provider that made it answers).

    Example::

        tokens_of({"json": {"usage": {"total_tokens": 42}}}) == 42
    """
    found = get_plugin_manager().hook.cassette_response_tokens(response=response, request=request)
    # a recorded file (or a plugin) may say anything: only a plausible count is added to a total
    return found if type(found) is int and 0 <= found < 2**40 else 0


def default_rules() -> list[SecretRule]:
    """The secret rules of the built-in plugins alone, in the hook's order: each provider's key
    formats, then the registry's (``cassette.secrets.formats``). Reads no config and no entry
    point: for a scan or a mask where the configured plugin manager cannot be had.

    Example::

        Scanner(default_rules()).scan(Path("c.json").read_bytes(), "c.json")
    """
    global _builtin_rules
    if _builtin_rules is None:
        _builtin_rules = rules_from_plugins(_builtin_manager())
    return list(_builtin_rules)
