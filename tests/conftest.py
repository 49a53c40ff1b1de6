"""Shared fixtures: the project's local OpenAI/Anthropic-compatible server and SDK clients on it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cassette.config import clear_config_cache
from cassette.pytest_plugin import CI_VARIABLES
from cassette.seam.netguard import guard_run, take_blocked_outside
from cassette.seam.session import _last
from cassette.testing.devserver import DevServer


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test runs in its own directory with no CASSETTE_*, API-key or CI variables set.

    The CI variables (CI=true in the project's own CI) would make every inner pytest run replay by
    default; the tests of that default set them themselves.
    """
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("CASSETTE_") or name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", *CI_VARIABLES):
            monkeypatch.delenv(name)
    clear_config_cache()
    # the session `cassette.drift()` reads when given no path: nothing public forgets it, and a test
    # must not see the one an earlier test left (allowlisted in tests/test_public_surface.py)
    _last.set(None)
    outer_guard = guard_run(None)  # an inner replaying pytest run leaves its run-wide guard armed
    guard_run(outer_guard)
    yield
    guard_run(outer_guard)
    take_blocked_outside()
    clear_config_cache()


@pytest.fixture
def devserver() -> Iterator[DevServer]:
    """A fresh local server on a free loopback port (answers vary per instance, like a real model)."""
    with DevServer() as srv:
        yield srv


@pytest.fixture
def openai_client(devserver: DevServer):  # type: ignore[no-untyped-def]
    from openai import OpenAI

    import cassette

    return cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))


@pytest.fixture
def async_openai_client(devserver: DevServer):  # type: ignore[no-untyped-def]
    from openai import AsyncOpenAI

    import cassette

    return cassette.instrument(
        AsyncOpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)
    )


@pytest.fixture
def anthropic_client(devserver: DevServer):  # type: ignore[no-untyped-def]
    from anthropic import Anthropic

    import cassette

    return cassette.instrument(Anthropic(base_url=devserver.anthropic_base_url, api_key="x", max_retries=0))


@pytest.fixture
def async_anthropic_client(devserver: DevServer):  # type: ignore[no-untyped-def]
    from anthropic import AsyncAnthropic

    import cassette

    return cassette.instrument(
        AsyncAnthropic(base_url=devserver.anthropic_base_url, api_key="x", max_retries=0)
    )
