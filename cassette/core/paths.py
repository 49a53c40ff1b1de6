"""Paths as cassette reads them: resolved, even where a symlink loop stops ``Path.resolve``."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_path(path: Path) -> Path:
    """``path.resolve()``, or ``path`` made absolute where a symlink loop stops the resolve (Python
    3.11 raises RuntimeError there): whatever then opens the path reports the loop as an OSError."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))
