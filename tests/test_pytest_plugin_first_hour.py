"""The first hour and the CI run: replay by default on CI, placeholder credentials, a session-wide guard.

Real inner pytest runs (pytester) against the local devserver; the CI variables are set here
explicitly (the `_isolated` fixture of conftest.py clears them for every test).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import hypothesis
import openai
import pytest

from cassette.pytest_plugin import CI_VARIABLES, ci_environment
from cassette.testing.devserver import DevServer
from tests.inner_suites import ASK, PYPROJECT

assert httpx2 and openai and hypothesis  # outlive the in-process inner runs (see test_pytest_plugin.py)

AGENT = (
    ASK
    + """
@pytest.mark.cassette
def test_new():
    assert ask("hello there")
"""
)


# what a replaying run sets besides the two keys the tests set themselves
NOT_OPENAI_CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_DEFAULT_REGION",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_SECRET_ACCESS_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)


@pytest.fixture
def suite(
    pytester: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.setenv("DEVSERVER_URL", devserver.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for name in (*NOT_OPENAI_CREDENTIALS, "AWS_PROFILE", "AWS_REGION"):  # an outer run's placeholders too
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")  # the machine's own
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_agent=AGENT)
    return pytester


def cassette_file(pytester: pytest.Pytester) -> Path:
    return pytester.path / "tests" / "cassettes" / "test_agent" / "test_new.json"


# --- CI never goes live by accident ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"CI": "true"}, "CI"),
        ({"CI": "1"}, "CI"),
        ({"CI": "false"}, None),
        ({"CI": "0"}, None),
        ({"GITHUB_ACTIONS": "true"}, "GITHUB_ACTIONS"),
        ({"GITLAB_CI": "true"}, "GITLAB_CI"),
        ({"BUILDKITE": "true"}, "BUILDKITE"),
        ({"CIRCLECI": "true"}, "CIRCLECI"),
        ({"JENKINS_URL": "https://ci.example/"}, "JENKINS_URL"),
        ({"TF_BUILD": "True"}, "TF_BUILD"),
        ({"TEAMCITY_VERSION": "2024.1"}, "TEAMCITY_VERSION"),
        ({"CI": "false", "GITHUB_ACTIONS": "true"}, None),  # CI=false says "not CI"
        ({"GITHUB_ACTIONS": ""}, None),
    ],
)
def test_ci_is_detected_from_the_services_variables(
    env: dict[str, str], expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ci_environment() == expected


def test_on_ci_a_missing_cassette_fails_naming_the_test_and_the_command_and_calls_nothing(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "cassette: mode=replay (CI detected: CI is set; --cassette-mode=auto records)*",
            "*CassetteNotFoundError: test_agent.py::test_new: no cassette at "
            "tests/cassettes/test_agent/test_new.json, and this run replays (CI detected (CI is set)*",
            "*Record it locally, with the API key set: pytest --cassette-mode=auto "
            "test_agent.py::test_new, then commit the cassette.",
        ]
    )
    assert devserver.requests == []  # nothing went live
    assert not cassette_file(suite).exists()


def test_recorded_locally_the_same_suite_replays_on_ci(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "false")  # CI=false is not CI: auto records
    first = suite.runpytest("-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["cassette: mode=auto, *"])
    assert cassette_file(suite).is_file() and len(devserver.requests) == 1
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("CI")
    again = suite.runpytest("-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["cassette: mode=replay (CI detected: GITHUB_ACTIONS is set*"])
    assert len(devserver.requests) == 1


@pytest.mark.parametrize(
    "how",
    ["flag", "env", "config", "marker"],
)
def test_on_ci_a_mode_set_anywhere_wins_over_the_replay_default(
    how: str, suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLAB_CI", "true")
    args = ["-p", "no:cacheprovider"]
    if how == "flag":
        args.append("--cassette-mode=auto")
    elif how == "env":
        monkeypatch.setenv("CASSETTE_MODE", "auto")
    elif how == "config":
        suite.makepyprojecttoml(PYPROJECT + '\n[tool.cassette]\nmode = "auto"\n')
    else:
        suite.makepyfile(
            test_agent=AGENT.replace("@pytest.mark.cassette", '@pytest.mark.cassette(mode="record")')
        )
    result = suite.runpytest(*args)
    result.assert_outcomes(passed=1)
    assert "CI detected" not in result.stdout.str() or how == "marker"
    assert cassette_file(suite).is_file() and len(devserver.requests) == 1


def test_the_replay_default_reaches_a_subprocess_run_and_xdist_workers(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUILDKITE", "true")
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CassetteNotFoundError: test_agent.py::test_new: no cassette at*"])
    assert devserver.requests == []


# --- "no API key" is true -------------------------------------------------------------------------

MODULE_CLIENT = """
import os
import pytest
import cassette
from openai import OpenAI

client = cassette.instrument(OpenAI(base_url=os.environ["DEVSERVER_URL"] + "/v1", max_retries=0))

@pytest.mark.cassette
def test_new():
    messages = [{"role": "user", "content": "hello there"}]
    assert client.chat.completions.create(model="gpt-4o-mini", messages=messages).choices[0].message.content
"""

# a client built at import of the root conftest, before pytest_configure
CONFTEST = """
from anthropic import Anthropic

CLIENT = Anthropic()
"""


def test_replay_with_no_key_set_builds_module_level_clients_from_placeholders(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_agent=MODULE_CLIENT)
    suite.makeconftest(CONFTEST)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)  # recorded with keys set
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    result = suite.runpytest("-p", "no:cacheprovider", "--cassette-mode=replay")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "cassette: placeholder credentials set (replay sends no key): ANTHROPIC_API_KEY, "
            "AWS_ACCESS_KEY_ID, AWS_DEFAULT_REGION, AWS_EC2_METADATA_DISABLED, AWS_SECRET_ACCESS_KEY, "
            "AZURE_OPENAI_API_KEY, GOOGLE_API_KEY, OPENAI_API_KEY"
        ]
    )
    assert len(devserver.requests) == 1  # the recording's call only
    assert "OPENAI_API_KEY" not in os.environ and "ANTHROPIC_API_KEY" not in os.environ  # withdrawn


def test_placeholders_only_fill_unset_variables_and_only_when_the_run_replays(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        test_keys="""
import os

def test_keys():
    print("OPENAI=" + os.environ.get("OPENAI_API_KEY", "<unset>"))
    print("ANTHROPIC=" + os.environ.get("ANTHROPIC_API_KEY", "<unset>"))
"""
    )
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    replaying = suite.runpytest("-p", "no:cacheprovider", "-s", "--cassette-mode=replay", "test_keys.py")
    replaying.stdout.fnmatch_lines(
        [
            "cassette: placeholder credentials set (replay sends no key): ANTHROPIC_API_KEY, "
            "AWS_ACCESS_KEY_ID, AWS_DEFAULT_REGION, AWS_EC2_METADATA_DISABLED, AWS_SECRET_ACCESS_KEY, "
            "AZURE_OPENAI_API_KEY, GOOGLE_API_KEY",  # OPENAI_API_KEY was set
            "*OPENAI=sk-test",
            "ANTHROPIC=cassette-replay-no-key",
        ]
    )
    recording = suite.runpytest("-p", "no:cacheprovider", "-s", "test_keys.py")  # auto: may record
    recording.stdout.fnmatch_lines(["ANTHROPIC=<unset>"])
    assert "placeholder credentials" not in recording.stdout.str()


# boto3 and google-genai clients built at import, with no region, keys or profile anywhere
AWS_AND_GEMINI = """
import os
import boto3
import pytest
import cassette
from google import genai
from google.genai import types

bedrock = cassette.instrument(boto3.client("bedrock-runtime", endpoint_url=os.environ["DEVSERVER_URL"]))
gemini = genai.Client(
    http_options=types.HttpOptions(base_url=os.environ["DEVSERVER_URL"], httpx_client=cassette.http_client())
)

@pytest.mark.cassette
def test_new():
    ask = [{"role": "user", "content": [{"text": "hello there"}]}]
    said = bedrock.converse(modelId="amazon.nova-lite-v1:0", messages=ask)
    assert said["output"]["message"]["content"][0]["text"]
    assert gemini.models.generate_content(model="gemini-2.5-flash", contents="hello there").text
    print("KEYS=" + os.environ["AWS_ACCESS_KEY_ID"] + "," + os.environ.get("GOOGLE_API_KEY", "-"))
"""


def test_replay_with_no_aws_or_google_credentials_builds_boto3_and_genai_clients(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("boto3")
    pytest.importorskip("google.genai")
    suite.makepyfile(test_agent=AWS_AND_GEMINI)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "recording-secret",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "GEMINI_API_KEY": "recording-key",
    }.items():
        monkeypatch.setenv(name, value)
    recorded = suite.runpytest("-p", "no:cacheprovider", "-s", "--cassette-mode=record")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["*KEYS=AKIAIOSFODNN7EXAMPLE,-*"])
    assert len(devserver.requests) == 2
    for name in NOT_OPENAI_CREDENTIALS:
        monkeypatch.delenv(name, raising=False)

    result = suite.runpytest("-p", "no:cacheprovider", "-s", "--cassette-mode=replay")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "cassette: placeholder credentials set (replay sends no key): ANTHROPIC_API_KEY, "
            "AWS_ACCESS_KEY_ID, AWS_DEFAULT_REGION, AWS_EC2_METADATA_DISABLED, AWS_SECRET_ACCESS_KEY, "
            "AZURE_OPENAI_API_KEY, GOOGLE_API_KEY",
            "*KEYS=cassette-replay-no-key,cassette-replay-no-key*",
        ]
    )
    assert len(devserver.requests) == 2  # replay sent nothing (and asked no metadata service)
    assert not any(name in os.environ for name in NOT_OPENAI_CREDENTIALS)  # withdrawn


def test_on_ci_a_fresh_process_with_no_key_replays_a_module_level_client(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_agent=MODULE_CLIENT)
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CI="true", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "cassette.pytest_plugin", "-p", "no:cacheprovider"],
        cwd=suite.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mode=replay (CI detected: CI is set" in done.stdout
    assert "OPENAI_API_KEY" in done.stdout and "1 passed" in done.stdout


# --- the guard covers the whole replaying session, exit included ----------------------------------

# A stand-in for openai-agents' trace exporter: a package named `agents` that posts to api.openai.com
# on its own, from a background thread while the run goes on and from an exit handler.
EXPORTER = """
import os
import socket
import time

def export(where):
    start = time.monotonic()
    host, port = os.environ.get("EXPORT_TO", "api.openai.com:443").split(":")
    try:
        socket.create_connection((host, int(port)), timeout=30).close()
        outcome = "connected"
    except Exception as exc:
        outcome = type(exc).__name__ + ": " + str(exc)
    with open(where, "w") as f:
        f.write(f"{time.monotonic() - start:.3f}\\n{outcome}")
"""

EXPORTER_CONFTEST = """
import atexit
import threading

from agents import tracing

atexit.register(tracing.export, "at-exit.txt")
threading.Thread(target=tracing.export, args=("in-thread.txt",)).start()
"""


def _exporter_project(pytester: pytest.Pytester) -> None:
    """A suite of one plain test whose conftest starts a library's own exporter, in a thread and at exit."""
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.mkpydir("agents")
    pytester.path.joinpath("agents", "tracing.py").write_text(EXPORTER)
    pytester.makeconftest(EXPORTER_CONFTEST)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")


def test_a_replaying_run_blocks_a_librarys_own_traffic_from_a_thread_and_at_exit_naming_its_switch(
    pytester: pytest.Pytester,
) -> None:
    _exporter_project(pytester)
    start = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cassette-mode=replay")
    took = time.monotonic() - start
    result.assert_outcomes(passed=1)
    for name in ("in-thread.txt", "at-exit.txt"):
        took_there, outcome = pytester.path.joinpath(name).read_text().split("\n", 1)
        # stopped before the DNS query, so at once: no resolver timeout, nothing sent
        assert outcome.startswith("NetworkBlockedError: network blocked: a DNS look-up of api.openai.com:443")
        assert "the run replays (--cassette-mode=replay) and no cassette session is active" in outcome
        assert "set_tracing_disabled(True) or OPENAI_AGENTS_DISABLE_TRACING=1" in outcome
        assert float(took_there) < 1.0
    assert took < 30  # a few seconds of pytest start-up; a DNS timeout alone is 5 s per attempt
    result.stdout.fnmatch_lines(
        [
            "*blocked outside tests: 1 host(s) the run-wide network guard stopped outside replay blocks*",
            "  api.openai.com: This is openai-agents' own trace exporter*OPENAI_AGENTS_DISABLE_TRACING=1.",
        ]
    )
    result.stderr.fnmatch_lines(
        [
            "cassette: the network guard blocked, at exit, after the last replay block:",
            "  api.openai.com: This is openai-agents' own trace exporter*",
        ]
    )


def test_the_run_wide_guard_is_off_unless_every_session_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _exporter_project(pytester)
    with socket.socket() as server:  # a loopback listener, and a guard that blocks loopback too
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        monkeypatch.setenv("EXPORT_TO", f"127.0.0.1:{server.getsockname()[1]}")
        args = ("-p", "no:cacheprovider", "--cassette-block-loopback")
        pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)  # auto: a test may record
        assert pytester.path.joinpath("at-exit.txt").read_text().endswith("\nconnected")
        assert pytester.path.joinpath("in-thread.txt").read_text().endswith("\nconnected")
        replaying = pytester.runpytest_subprocess(*args, "--cassette-mode=replay")
        replaying.assert_outcomes(passed=1)
        assert "NetworkBlockedError: network blocked: a connection to 127.0.0.1" in (
            pytester.path.joinpath("at-exit.txt").read_text()
        )


# --- paths mean one thing -------------------------------------------------------------------------

PATHS = (
    ASK
    + """
@pytest.mark.cassette
def test_marked():
    assert ask("hello there")

@cassette.use("tests/cassettes/by_hand.json")
def test_by_hand():
    assert ask("hi")
"""
)


def test_cd_tests_and_pytest_records_where_pytest_from_the_root_replays(
    suite: pytest.Pytester, devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.makepyprojecttoml(PYPROJECT + '\n[tool.cassette]\ncassette_dir = "recordings"\n')
    tests = suite.mkdir("tests")
    (tests / "test_paths.py").write_text(PATHS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only cassette's plugin: a quick start-up
    # from tests/: --cassette-dir and cassette.use's path are relative to the project root
    args = [sys.executable, "-m", "pytest", "-p", "cassette.pytest_plugin", "-p", "no:cacheprovider"]
    args.append("--cassette-dir=recordings")
    first = subprocess.run([*args, "test_paths.py"], cwd=tests, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    marked = suite.path / "recordings" / "tests" / "test_paths" / "test_marked.json"
    assert marked.is_file()  # <root>/recordings, not tests/recordings
    assert (suite.path / "tests" / "cassettes" / "by_hand.json").is_file()  # not tests/tests/cassettes
    assert len(devserver.requests) == 2
    again = subprocess.run(
        [*args[:-1], "--cassette-mode=replay", "tests"],
        cwd=suite.path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "2 passed" in again.stdout and len(devserver.requests) == 2  # replayed what tests/ recorded

    # the CLI reads paths the same way, takes a node id or a name without .json, prints root-relative
    from cassette.cli import main

    os.chdir(tests)
    capsys.readouterr()
    assert main(["show", "tests/test_paths.py::test_marked"]) == 0
    assert capsys.readouterr().out.startswith("recordings/tests/test_paths/test_marked.json  (1 interaction)")
    assert main(["show", "tests/cassettes/by_hand"]) == 0
    assert capsys.readouterr().out.startswith("tests/cassettes/by_hand.json  (1 interaction)")
