"""``cassette install-hooks``: plain git hooks for projects that do not use the pre-commit framework.

Writes an executable ``pre-commit`` script into the repository's hooks
directory (``core.hooksPath`` when set) that runs the secret scan, the blob
check and the drift summary on the staged files with the Python that ran the
installer. ``textconv=True`` also registers the ``diff=cassette`` driver so
``git diff`` shows cassettes with their blobs inlined.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

from cassette.config import load_config
from cassette.core.paths import resolve_path
from cassette.errors import HookExistsError
from cassette.git.repo import set_textconv
from cassette.git.snapshot import open_repo

MARKER = "# cassette-hook"


def _hooks_dir(repo: Any) -> Path:
    """``core.hooksPath`` (relative to the work tree) or ``<common git dir>/hooks``."""
    try:
        configured = repo.get_config_stack().get((b"core",), b"hooksPath")
    except KeyError:
        configured = None
    if configured:
        d = Path(os.path.expanduser(configured.decode()))
        return d if d.is_absolute() else Path(repo.path) / d
    return Path(repo.commondir()) / "hooks"


def hook_script(python: str | None = None) -> str:
    """The ``pre-commit`` script: runs the three checks with ``python`` (default: this interpreter)."""
    exe = shlex.quote(python or sys.executable)
    return (
        "#!/bin/sh\n"
        f"{MARKER}: written by `cassette install-hooks`; rerun it to update, delete this file to remove.\n"
        "# Scans staged cassettes and blobs for secrets, checks their blobs are staged, summarises drift.\n"
        "# Reads the git index directly (no network, no git diff).\n"
        f"exec {exe} -m cassette.hooks pre-commit\n"
    )


def install_hooks(
    start: str | os.PathLike[str] | None = None, *, force: bool = False, textconv: bool = False
) -> list[str]:
    """Install the pre-commit hook (and optionally the textconv driver); returns what was done.

    Example::

        for line in install_hooks(textconv=True):
            print(line)
    """
    repo = open_repo(start)
    done: list[str] = []
    hook = _hooks_dir(repo) / "pre-commit"
    if hook.exists() and MARKER not in hook.read_text(encoding="utf-8", errors="replace") and not force:
        raise HookExistsError(
            f"{hook} already exists and was not written by cassette. Add the cassette hooks to your "
            ".pre-commit-config.yaml instead (see docs/pre-commit.md), or rerun with --force to replace it.",
            path=hook,
        )
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(hook_script(), encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    done.append(f"installed {hook}")
    if textconv:
        done.extend(install_textconv(repo))
    return done


def install_textconv(repo: Any) -> list[str]:
    """Register ``diff.cassette.textconv`` in ``.git/config`` and mark cassettes ``diff=cassette``.

    The attribute line goes into ``.gitattributes`` (commit it so the whole team
    gets it); each clone still needs the driver, which ``install-hooks --textconv`` sets.
    """
    done: list[str] = []
    command = f"{shlex.quote(sys.executable)} -m cassette.hooks textconv"
    set_textconv(repo, command)
    done.append(f"set diff.cassette.textconv = {command}")
    root = Path(repo.path)
    cfg = load_config(root)
    try:
        cassette_dir = cfg.cassette_root().relative_to(resolve_path(root)).as_posix()
    except ValueError:
        cassette_dir = "tests/cassettes"
    line = f"{cassette_dir}/**/*.json diff=cassette"
    attributes = root / ".gitattributes"
    existing = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    if line not in existing.splitlines():
        sep = "" if not existing or existing.endswith("\n") else "\n"
        attributes.write_text(existing + sep + line + "\n", encoding="utf-8")
        done.append(f"added `{line}` to {attributes} (commit it)")
    return done
