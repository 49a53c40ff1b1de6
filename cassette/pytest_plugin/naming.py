"""Where a test's cassette lives: the default path per test (module, class, parameters) or the marker's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cassette.config import Config
from cassette.core.naming import cassette_path_of_test
from cassette.core.paths import resolve_path
from cassette.errors import CassetteConfigError


def default_cassette_path(item: pytest.Item, cassette_root: Path, rootpath: Path) -> Path:
    """``<cassette dir>/<test module path without .py>/<test name>.json`` (see `cassette_path_of_test`)."""
    nodeid = item.nodeid
    test = nodeid.split("::", 1)[1] if "::" in nodeid else item.name
    return cassette_path_of_test(
        resolve_path(Path(str(item.path))), test, cassette_root, resolve_path(rootpath)
    )


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
