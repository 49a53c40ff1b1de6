"""Collection: which cassettes the suite claims (for orphans and shared cassettes) and what it left out."""

from __future__ import annotations

import pytest

from cassette.core.paths import resolve_path
from cassette.errors import CassetteError
from cassette.pytest_plugin.markers import marker_options
from cassette.pytest_plugin.naming import cassette_path_for
from cassette.pytest_plugin.state import RunState

# The session's own fixture, under a name no test takes: a test parameter or a project fixture
# called `cassette` hides the public one, and must not switch off what a marker asks for.
SESSION_FIXTURE = "_cassette_session"


def claim_cassettes(state: RunState, items: list[pytest.Item]) -> None:
    """Record each collected test's cassette (a test with a marker or the session fixture)."""
    state.collected.update(item.nodeid for item in items)
    for item in items:
        fixturenames = getattr(item, "fixturenames", ())
        try:
            options = marker_options(item)
            if options is None and SESSION_FIXTURE not in fixturenames:
                continue
            path = str(resolve_path(cassette_path_for(item, state.config, options)))
        except (CassetteError, OSError, TypeError, ValueError):
            continue  # reported when the test runs
        state.users.setdefault(path, set()).add(item.nodeid)  # several: a shared cassette (open_session)
        state.claimed.add(path)


class CollectionWatch:
    """Registered per run: counts deselected tests and collection errors (hooks without ``config``)."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.state.deselected += len(items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.state.collect_errors = True
