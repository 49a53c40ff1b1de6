"""Placeholder credentials for a replaying run, so SDK clients build without a real key.

Which variables an SDK needs comes from the provider plugins (the
``cassette_placeholder_credentials`` hook); only variables that are not set are set, before
collection, and they are removed again when the run ends.
"""

from __future__ import annotations

import os

from cassette.errors import CassetteConfigError
from cassette.plugins.manager import get_plugin_manager


def provide() -> list[str]:
    """Set the providers' placeholder variables that are unset; return the names set.

    Example::

        provide()  # ["ACME_API_KEY", ...] where no key was set
    """
    try:
        answers = get_plugin_manager().hook.cassette_placeholder_credentials()
    except CassetteConfigError:
        return []  # a broken plugin setting: pytest_configure reports it as a usage error
    wanted: dict[str, str] = {}
    for answer in answers:
        wanted.update(answer or {})
    placed = []
    for name, value in sorted(wanted.items()):
        if not os.environ.get(name):
            os.environ[name] = value
            placed.append(name)
    return placed


def withdraw(names: list[str]) -> None:
    """Remove the variables `provide` set (an in-process pytest run must not leak them)."""
    for name in names:
        os.environ.pop(name, None)
