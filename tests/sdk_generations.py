"""What the installed SDK generation offers, for the tests of a feature an older release lacks.

CI runs the provider tests against the oldest and the newest release of each generation
(`.ci/sdk-matrix`); a test of an SDK helper the release does not have skips, naming it.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest


def version(sdk: str) -> str:
    return str(importlib.import_module(sdk).__version__)


def needs(owner: Any, attribute: str, sdk: str) -> None:
    """Skip unless the SDK object has ``attribute`` (e.g. ``chat.completions.parse``)."""
    if not hasattr(owner, attribute):
        pytest.skip(f"{sdk} {version(sdk)} has no {type(owner).__name__}.{attribute}")
