"""How every command reads a path argument and prints a path: one meaning, the project root's.

A relative path is relative to the project root (the directory of the ``pyproject.toml`` found
from the current directory, as ``[tool.cassette] cassette_dir`` is), so ``cd tests && cassette
show cassettes/x.json`` and ``cassette show tests/cassettes/x.json`` from the root name one file; a
path that exists from the current directory (what a shell completes) is taken as it is. A cassette
may be named without ``.json``, or by its test's node id (``tests/test_agent.py::test_refund``,
its default cassette). Printed paths are relative to the project root.
"""

from __future__ import annotations

from pathlib import Path

from cassette.config import Config, load_config
from cassette.core.naming import cassette_path_of_test
from cassette.core.paths import resolve_path


def resolve_arg(raw: str | Path, config: Config | None = None) -> Path:
    """The path a command-line argument names (see the module docstring).

    Example::

        resolve_arg("tests/test_agent.py::test_refund")  # <root>/tests/cassettes/test_agent/test_refund.json
        resolve_arg("tests/cassettes/triage")            # <root>/tests/cassettes/triage.json
    """
    cfg = config or load_config()
    text = str(raw)
    if "::" in text:
        module, test = text.split("::", 1)
        module_path = resolve_path(_from_root(Path(module), cfg))
        return _near(cassette_path_of_test(module_path, test, cfg.cassette_root(), resolve_path(_root(cfg))))
    given = Path(text)
    path = given if given.is_absolute() else _near(_from_root(given, cfg))
    if path.exists() or not path.name or path.suffix == ".json":
        return path
    named = path.with_name(path.name + ".json")
    return named if named.exists() else path


def _root(cfg: Config) -> Path:
    return cfg.root if cfg.source is not None else Path.cwd()  # no pyproject.toml: here


def _near(path: Path) -> Path:
    """``path`` relative to the working directory when it lies inside it (messages stay short)."""
    try:
        return path.absolute().relative_to(Path.cwd())
    except ValueError:
        return path


def _from_root(path: Path, cfg: Config) -> Path:
    """The project root's meaning first; else a path that exists from here (a shell completed it)."""
    if path.is_absolute():
        return path
    at_root = _root(cfg) / path
    if _found(at_root) or not _found(path):
        return at_root
    return path.absolute()


def _found(path: Path) -> bool:
    return path.exists() or (bool(path.name) and path.with_name(path.name + ".json").exists())


def shown(path: Path, config: Config | None = None) -> str:
    """``path`` as commands print it: relative to the project root when inside it.

    Example::

        shown(Path("/repo/tests/cassettes/triage.json"))  # "tests/cassettes/triage.json"
    """
    cfg = config or load_config()
    full = resolve_path(path)
    try:
        return full.relative_to(resolve_path(_root(cfg))).as_posix()
    except ValueError:
        return str(full)
