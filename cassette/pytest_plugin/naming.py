"""Where a test's cassette lives: the default path per test (module, class, parameters) or the marker's."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import pytest

from cassette.config import Config, resolve_path
from cassette.errors import CassetteConfigError

_SAFE_CHARS = re.compile(r"[^A-Za-z0-9._\-\[\]=+,@]")
_MAX_NAME = 120
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
)


def safe_name(name: str) -> str:
    """A file name that is safe everywhere, stable, and distinct for distinct inputs.

    Characters outside ``[A-Za-z0-9._-[]=+,@]`` become ``_`` and a short hash of the
    original is appended; names longer than 120 characters are cut and hashed.

    Example::

        safe_name("test_x[gpt-4o]") == "test_x[gpt-4o]"
        safe_name("test_x[a b]")    == "test_x[a_b]-" + 8 hex digits
    """
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    cleaned = _SAFE_CHARS.sub("_", name).rstrip(". ")
    if cleaned != name or not cleaned:
        cleaned = f"{cleaned}-{digest[:8]}"
    if len(cleaned) > _MAX_NAME:
        cleaned = f"{cleaned[: _MAX_NAME - 11].rstrip('. ')}-{digest[:10]}"
    if cleaned.startswith(".") or cleaned.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
        cleaned = "_" + cleaned
    return cleaned


def default_cassette_path(item: pytest.Item, cassette_root: Path, rootpath: Path) -> Path:
    """``<cassette dir>/<test module path without .py>/<test name>.json``.

    The module path is taken relative to the directory holding the cassette dir
    (``tests/`` for ``tests/cassettes``) when the module lives there, else to the
    rootdir; class names join the test name with ``.``; each parameter set gets
    its own file.
    """
    module = Path(str(item.path))
    base = cassette_root.parent
    try:
        rel = resolve_path(module).relative_to(base)
    except ValueError:
        try:
            rel = resolve_path(module).relative_to(resolve_path(rootpath))
        except ValueError:
            rel = Path(module.name)
    parts = [safe_name(p) for p in rel.with_suffix("").parts]
    nodeid = item.nodeid
    test = nodeid.split("::", 1)[1].replace("::", ".") if "::" in nodeid else item.name
    return cassette_root.joinpath(*parts, safe_name(test) + ".json")


def cassette_path_for(item: pytest.Item, cfg: Config, options: dict[str, Any] | None) -> Path:
    """The cassette a test uses: the marker's ``path`` (relative to the cassette dir) or the default.

    A relative ``path`` must stay inside the cassette dir or the project; an absolute one is kept.
    """
    root = cfg.cassette_root()
    given = (options or {}).get("path")
    if given is None:
        return default_cassette_path(item, root, item.config.rootpath)
    path = Path(os.fspath(given))
    hidden = [p for p in path.parts if p.startswith(".") and p != ".."]
    if hidden and not path.is_absolute():
        raise CassetteConfigError(
            f"{item.nodeid}: @pytest.mark.cassette path {given!r} has a hidden part ({hidden[0]!r}): "
            "`cassette ls`, `verify` and `gc` skip hidden files and folders, so gc would delete the "
            "blobs it needs. Use a name that does not start with a dot."
        )
    legacy: Path | None = None
    if path.suffix != ".json":  # "gpt-4.1" and "notes.yaml" too: a cassette file is always *.json
        legacy, path = path, path.with_name(path.name + ".json")
    full = path if path.is_absolute() else root / path
    if legacy is not None and not full.exists() and full.with_name(legacy.name).is_file():
        old = full.with_name(legacy.name)
        raise CassetteConfigError(
            f"{item.nodeid}: its cassette is {full}, but an earlier release wrote it as {old} "
            "(without `.json`, which `cassette ls`, `verify` and `gc` do not see: gc would delete its "
            f"blobs). Rename it: git mv {old} {full}"
        )
    if path.is_absolute():
        return path
    if ".." not in path.parts:  # below the cassette dir: nothing to resolve (resolving costs syscalls)
        return full
    resolved = resolve_path(full)
    inside = (root, resolve_path(item.config.rootpath), resolve_path(cfg.root))
    if not any(resolved == base or base in resolved.parents for base in inside):
        raise CassetteConfigError(
            f"{item.nodeid}: @pytest.mark.cassette path {given!r} leads out of the project: it is "
            f"relative to the cassette dir {root} and resolves to {resolved}. Use a path inside the "
            "cassette dir, or an absolute path if that location is really meant."
        )
    return full


def shown_path(path: Path, cfg: Config) -> str:
    """``path`` as a report prints it: relative to the project root when inside it, else absolute."""
    full = resolve_path(path)
    try:
        return full.relative_to(resolve_path(cfg.root)).as_posix()
    except ValueError:
        return str(full)
