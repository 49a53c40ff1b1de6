"""pytest plugin: the ``cassette`` marker and fixture, options, network guard, xdist and the run summary.

Registered through the ``pytest11`` entry point, so installing cassette is enough::

    @pytest.mark.cassette                      # tests/cassettes/test_agent/test_triage.json
    def test_triage(llm_client):
        assert "refund" in run_agent(llm_client, "My card was charged twice")

    def test_stats(cassette):                  # the fixture alone opens the same default cassette
        ...
        assert cassette.stats()["mode"] in ("record", "replay")

This module holds only what pytest looks up by name (hooks and fixtures), as thin glue over the
package's modules: `options` (flags, config, mode), `markers` (the marker's options), `naming`
(the cassette path per test), `locking` (cross-process record locks), `guard` (network guard
policies), `item` (the session around a test), `collection` (claimed cassettes), `state` (the
run's state and xdist hand-off) and `summary` (orphans, the terminal summary). See docs/pytest.md.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest

from cassette.core.naming import safe_name
from cassette.errors import CassetteError
from cassette.pytest_plugin.collection import SESSION_FIXTURE, CollectionWatch, claim_cassettes
from cassette.pytest_plugin.guard import collect_outside
from cassette.pytest_plugin.item import ITEM, _TestDidNotRun, after_call, open_session
from cassette.pytest_plugin.markers import MARKER_HELP
from cassette.pytest_plugin.naming import cassette_path_for, default_cassette_path
from cassette.pytest_plugin.options import (
    CI_VARIABLES,
    EarlyStart,
    add_options,
    ci_environment,
    early_start,
    end_run,
    header,
    start_run,
)
from cassette.pytest_plugin.state import (
    MISSES_BEFORE,
    STATE,
    begin_counting,
    finish_counting,
    merge_worker,
    note_misses,
)
from cassette.pytest_plugin.summary import check_orphans, summary_lines, write_summary
from cassette.review import drift as _registers_rerecord_drift  # noqa: F401  (session.set_rerecord_review)
from cassette.seam.netguard import take_blocked
from cassette.seam.session import Session, run_stats

EARLY = pytest.StashKey[EarlyStart]()

__all__ = [
    "CI_VARIABLES",
    "cassette_path_for",
    "ci_environment",
    "default_cassette_path",
    "safe_name",
    "summary_lines",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    early_config.stash[EARLY] = early_start(early_config)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    state = start_run(config, config.stash.get(EARLY, None))
    config.stash[STATE] = state
    config.pluginmanager.register(CollectionWatch(state), "cassette-collection-watch")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        end_run(state)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE, None)
    return None if state is None else header(state)


@pytest.fixture(name=SESSION_FIXTURE)
def _cassette_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    try:
        holder = open_session(request)
    except CassetteError as exc:
        # `from None`: the message says it all; a chained copy of it would only double the report
        raise pytest.fail.Exception(f"{type(exc).__name__}: {exc}", pytrace=False) from None
    except OSError as exc:  # the file system refused the cassette path itself
        raise pytest.fail.Exception(
            f"CassetteIOError: cannot open the cassette of {request.node.nodeid}: {exc}. Fix the "
            "cassette path (marker or --cassette-dir) or the directory's permissions.",
            pytrace=False,
        ) from None
    request.node.stash[ITEM] = holder
    try:
        yield holder.session
    finally:
        if not holder.closed:  # the test body never ran: keep nothing as the cassette
            try:
                holder.close(_TestDidNotRun(f"{request.node.nodeid} did not run"))
            except CassetteError as exc:
                if exc is holder.conflict:  # a setup fixture wrote the test's cassette: say where it is
                    raise pytest.fail.Exception(f"CassetteError: {exc}", pytrace=False) from None


@pytest.fixture
def cassette(_cassette_session: Session) -> Session:
    """The live `Session` of this test: ``interactions``, ``stats()``, ``mode``, ``path``.

    Requesting it opens the test's cassette (at the default path unless a
    ``cassette`` marker says otherwise); the marker opens it without the fixture.

    Example::

        def test_triage(cassette, llm_client):
            run_agent(llm_client, "My card was charged twice")
            assert [i.kind for i in cassette.interactions][:1] == ["llm"]
    """
    return _cassette_session


@pytest.fixture
def cassette_session(_cassette_session: Session) -> Session:
    """The same session as the ``cassette`` fixture, for tests that also use the ``cassette`` module.

    Example::

        def test_triage(cassette_session):
            client = cassette.instrument(make_client())
            ...
            assert cassette_session.interactions
    """
    return _cassette_session


@pytest.fixture(autouse=True)
def _cassette_marker(request: pytest.FixtureRequest) -> None:
    """Open the cassette for tests marked ``@pytest.mark.cassette`` before any other function fixture."""
    if request.node.get_closest_marker("cassette") is not None:
        request.getfixturevalue(SESSION_FIXTURE)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    take_blocked()  # attempts from an earlier test are that test's business
    item.stash[MISSES_BEFORE] = run_stats.missed
    try:
        result = yield
    except BaseException as exc:
        after_call(item, exc)
        raise
    after_call(item, None)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        note_misses(item, report)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        claim_cassettes(state, items)


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is not None:
        begin_counting(state)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    collect_outside(state)
    if finish_counting(state, session.config):
        return  # an xdist worker: the controller reports for everyone
    check_orphans(session, state)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: merge what a worker counted."""
    merge_worker(node)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or hasattr(config, "workerinput"):
        return
    collect_outside(state)  # again: a library's background thread may have been blocked meanwhile
    write_summary(terminalreporter, config, state)
