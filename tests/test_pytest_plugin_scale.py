"""The run summary at the size of a real suite, and a failed recording resumed: real inner pytest runs."""

from __future__ import annotations

import json

import httpx2
import hypothesis
import openai
import pytest

from cassette.testing.devserver import DevServer
from tests.inner_suites import ASK, PYPROJECT

assert httpx2 and openai and hypothesis  # outlive the in-process inner runs (see test_pytest_plugin.py)


@pytest.fixture
def suite(
    pytester: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.setenv("DEVSERVER_URL", devserver.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-o asyncio_default_fixture_loop_scope=function")
    pytester.makepyprojecttoml(PYPROJECT)
    return pytester


def test_a_test_expecting_a_miss_is_not_a_miss_and_zero_lines_are_left_out(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_expects=ASK
        + """
from cassette.errors import CassetteMiss

@pytest.mark.cassette
def test_answer():
    assert ask("hello")

def test_a_miss_is_what_it_checks():
    with pytest.raises(CassetteMiss):
        with cassette.using("tests/cassettes/test_expects/test_answer.json", mode="replay"):
            ask("something never recorded")
"""
    )
    suite.runpytest().assert_outcomes(passed=2)
    run = suite.runpytest("--cassette-mode=replay", "test_expects.py::test_answer", "test_expects.py")
    run.assert_outcomes(passed=2)
    out = run.stdout.str()
    assert "missed:" not in out  # the miss was the test's point, and it passed
    assert "replayed: 1 cassette(s), 1 LLM calls served" in out
    for zero in ("recorded: 0", "re-recorded: 0", "tokens not spent: 0", "orphans: not checked"):
        assert zero not in out


def test_drifted_cassettes_are_listed_relative_and_capped(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        test_many=ASK
        + """
@pytest.mark.parametrize("n", range(14))
@pytest.mark.cassette
def test_answer(n):
    assert ask(os.environ["QUESTION"] + str(n))
"""
    )
    monkeypatch.setenv("QUESTION", "tell me a joke ")
    suite.runpytest().assert_outcomes(passed=14)
    monkeypatch.setenv("QUESTION", "tell me a long joke ")
    run = suite.runpytest("--cassette-mode=rerecord")
    run.assert_outcomes(passed=14)
    run.stdout.fnmatch_lines(
        [
            "*re-recorded: 14 cassette(s), 14 with drift*",
            "  drifted: tests/cassettes/test_many/test_answer[[]0[]].json",
            "  drifted: … and 4 more (`cassette drift --pending --all` lists them)",
        ]
    )
    assert str(suite.path) not in run.stdout.str().split("cassette --")[-1]  # no absolute paths
    assert run.stdout.str().count("  drifted: ") == 11
    verbose = suite.runpytest("--cassette-mode=rerecord", "-v")
    assert verbose.stdout.str().count("  drifted: tests/") == 14


RESUMED = """
@pytest.mark.cassette
def test_new_agent():
    assert ask("plan the refund")
    assert ask("check the order")
    if os.environ["STAGE"] == "first":
        assert False, "the test is not finished yet"
    assert ask(os.environ["STAGE"])
"""


def test_a_failed_recording_is_resumed_up_to_the_first_call_that_differs(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_resume=ASK + RESUMED)
    where = suite.path / "tests/cassettes/test_resume"
    monkeypatch.setenv("STAGE", "first")
    suite.runpytest().assert_outcomes(failed=1)
    assert (where / "test_new_agent.failed.json").is_file()
    assert len(devserver.requests) == 2

    monkeypatch.setenv("STAGE", "issue the refund")  # the test fixed: the same two calls, then one more
    run = suite.runpytest()
    run.assert_outcomes(passed=1)
    assert len(devserver.requests) == 3  # only the new call went live
    run.stdout.fnmatch_lines(["*recorded: 1 cassette(s), 1 LLM calls made live*"])
    assert not (where / "test_new_agent.failed.json").exists()
    written = json.loads((where / "test_new_agent.json").read_text())
    assert len(written["interactions"]) == 3

    # a call that differs ends the resumed part: it and every later call go live
    (where / "test_new_agent.json").rename(where / "test_new_agent.failed.json")
    suite.makepyfile(test_resume=ASK + RESUMED.replace("check the order", "check the order again"))
    suite.runpytest().assert_outcomes(passed=1)
    assert len(devserver.requests) == 5  # the first call resumed; the changed one and the last live
