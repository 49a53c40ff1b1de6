"""Shared pieces of the reliability suites: the soak switch and the counts each suite reports.

Every suite says how hard it pushed (trials, kills, inputs tried, keys planted): a
test adds numbers to the ``counts`` fixture, they travel on the test report as a
user property (so they survive pytest-xdist and land in junit XML), and the
terminal summary prints one line per test under "cassette reliability".

Soak mode (longer runs of every suite): ``pytest tests/reliability --soak`` or
``CASSETTE_SOAK=1 pytest tests/reliability``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import reliability_support

_PROPERTY = "cassette_reliability"
_collected: list[tuple[str, dict[str, Any]]] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak",
        action="store_true",
        default=False,
        help="cassette reliability suites: run the long soak variants (also CASSETTE_SOAK=1).",
    )


def pytest_configure(config: pytest.Config) -> None:
    # getoption's default covers the case where this conftest was not an initial one (option unknown)
    if config.getoption("--soak", default=False):
        reliability_support.SOAK = True


@pytest.fixture(scope="session")
def soak() -> bool:
    """True when the long variants were asked for (``--soak`` or ``CASSETTE_SOAK=1``)."""
    return reliability_support.soak_mode()


class Counts(dict[str, Any]):
    """Numbers a suite reports: ``counts["trials"] += 1``; unknown names start at 0."""

    def __missing__(self, key: str) -> int:
        return 0


@pytest.fixture
def counts(request: pytest.FixtureRequest, record_property: Any) -> Iterator[Counts]:
    """Collect this test's counts; they are printed in the terminal summary after the run."""
    found = Counts()
    yield found
    if found:
        record_property(_PROPERTY, dict(found))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == _PROPERTY and isinstance(value, dict):
            _collected.append((report.nodeid, value))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _collected:
        return
    terminalreporter.section("cassette reliability")
    for nodeid, values in _collected:
        shown = ", ".join(f"{k}={v}" for k, v in values.items())
        terminalreporter.write_line(f"{nodeid.split('::', 1)[-1]}: {shown}")
    mode = (
        "soak"
        if reliability_support.soak_mode()
        else "ci (run with --soak or CASSETTE_SOAK=1 for the long variants)"
    )
    terminalreporter.write_line(f"mode: {mode}")
