"""``[tool.cassette]``: every key validated with a message naming it, and pytest runs that obey it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx2
import hypothesis
import openai
import pytest

from cassette import CassetteConfigError
from cassette.config import parse_config
from cassette.maintenance.hygiene import parse_age
from cassette.testing.devserver import DevServer
from tests.config_helpers import config_keys

# Modules an in-process pytest run would otherwise re-import (see tests/test_pytest_plugin.py).
assert httpx2 and openai and hypothesis

HEADER = """
import os
import pytest
import cassette
from openai import OpenAI

def ask(text):
    base = os.environ["DEVSERVER_URL"] + "/v1"
    client = cassette.instrument(OpenAI(base_url=base, api_key="sk-test", max_retries=0))
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content
"""

# One wrong value per key, and the words its error must contain.
BAD_VALUES = {
    "cassette_dir": ("3", "must be a string, got 3"),
    "store": ("false", "must be a string, got False"),
    "mode": ('"replya"', "must be one of 'auto', 'record', 'replay', 'rerecord', got 'replya'"),
    "blob_threshold": ("-1", "must be a non-negative integer, got -1"),
    "check_order": ('"strict"', "must be one of 'warn', 'error', 'off'"),
    "unused": ("true", "must be a string, got True"),
    "plugins": ('"my_plugin"', "must be a list of strings, got 'my_plugin'"),
    "redact_headers": ("[1]", "must be a list of strings"),
    "redact_fields": ('"x"', "must be a list of strings"),
    "redact_query": ("{}", "must be a list of strings"),
    "allow_hosts": ('"db.internal"', "must be a list of strings, got 'db.internal'"),
    "network_guard": ('"off"', "must be true or false, got 'off'"),
    "compress": ('"yes"', "must be true or false, got 'yes'"),
    "semantic_backend": ("1", "must be a string"),
    "semantic_thresholds": ('{lexical = "high"}', "must be a table of scores from 0 to 1"),
    "judge_model": ("[]", "must be a string"),
    "max_age": ("90", "must be a string, got 90"),
    "max_age_action": ('"delete"', "must be one of 'warn', 'fail', 'rerecord'"),
    "secrets_allow": ("true", "must be a list of strings"),
    "orphans": ('"loud"', "must be one of 'off', 'warn', 'fail'"),
}


@pytest.fixture(autouse=True)
def _quiet_inner_asyncio(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs without asyncio settings would make pytest-asyncio warn about its future default."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS when it starts
        monkeypatch.setenv("PYTEST_ADDOPTS", "-o asyncio_default_fixture_loop_scope=function")


def test_every_key_has_a_bad_value_case() -> None:
    assert set(BAD_VALUES) == set(config_keys())


@pytest.mark.parametrize("key", sorted(BAD_VALUES))
def test_a_wrong_type_names_the_key_and_the_file(tmp_path: Path, key: str) -> None:
    value, words = BAD_VALUES[key]
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[tool.cassette]\n{key} = {value}\n")
    with pytest.raises(CassetteConfigError) as err:
        parse_config(pyproject)
    assert str(err.value).startswith(f"{pyproject}: [tool.cassette] {key} {words}")
    assert err.value.path == str(pyproject)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('cassette_dir = ""', "cassette_dir must be a directory path (it is empty)"),
        ('store = "  "', "store must be a directory path (it is empty)"),
        ("semantic_thresholds = {lexical = 7}", "semantic_thresholds must be a table of scores from 0 to 1"),
        ('allow_hosts = ["10.0.0.0/99"]', "allow_hosts entry '10.0.0.0/99' is neither a host name nor an IP"),
        ('allow_hosts = [""]', "allow_hosts entry '' is empty"),
        ('allow_hosts = ["http://example.com"]', "is a URL: give its host alone (example.com)"),
        ('allow_hosts = ["db.internal:5432"]', "holds a port or a scheme"),
    ],
)
def test_values_of_the_right_type_that_could_never_work_are_errors(
    tmp_path: Path, line: str, words: str
) -> None:
    # before: each was accepted; an allow_hosts entry like these silently never matched anything
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[tool.cassette]\n{line}\n")
    with pytest.raises(CassetteConfigError, match=re.escape(words)):
        parse_config(pyproject)


def test_good_allow_hosts_entries_are_taken(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[tool.cassette]\nallow_hosts = ["vault.internal", "*.corp", "10.0.0.0/8", "::1", "[::1]"]\n'
    )
    assert len(parse_config(pyproject).allow_hosts) == 5


def test_a_store_that_is_no_path_is_a_config_error(tmp_path: Path) -> None:
    import cassette

    for store in (5, "", "a\0b"):
        with pytest.raises(CassetteConfigError, match="store must be a directory path"):
            cassette.using(tmp_path / "c.json", store=store)  # type: ignore[arg-type]


def test_unknown_key_suggests_the_close_one_and_lists_the_known_ones(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.cassette]\ncasette_dir = 'x'\n")
    with pytest.raises(
        CassetteConfigError,
        match=r"unknown key \[tool\.cassette\] 'casette_dir'\. Did you mean 'cassette_dir'\? Known keys: ",
    ):
        parse_config(pyproject)
    pyproject.write_text("[tool.cassette]\nblobthreshold = 5\n")
    with pytest.raises(CassetteConfigError, match=r"'blobthreshold'\. Did you mean 'blob_threshold'\?"):
        parse_config(pyproject)
    pyproject.write_text("[tool.cassette]\nzzz = 5\n")  # nothing close: no guess
    with pytest.raises(CassetteConfigError, match=r"unknown key \[tool\.cassette\] 'zzz'\. Known keys: "):
        parse_config(pyproject)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90d", 90 * 86400),
        ("12w", 84 * 86400),
        ("36h", 36 * 3600),
        ("1y", 365 * 86400),
        ("1.5d", 1.5 * 86400),
    ],
)
def test_ages(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["90", "90 days", "d", "3m", ""])
def test_bad_ages_name_the_key(text: str) -> None:
    with pytest.raises(
        CassetteConfigError, match=r"\[tool\.cassette\] max_age must be a number followed by h, d, w or y"
    ):
        parse_age(text)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            'mod = "replay"',
            "unknown key [tool.cassette] 'mod'. Did you mean 'mode'? Known keys: allow_hosts, ",
        ),
        ('network_guard = "yes"', "[tool.cassette] network_guard must be true or false, got 'yes'"),
        ('max_age = "90 days"', "[tool.cassette] max_age must be a number followed by h, d, w or y"),
        ('orphans = "loud"', "[tool.cassette] orphans must be one of 'off', 'warn', 'fail'"),
        (
            'plugins = ["no_such_cassette_plugin"]',
            "cannot import cassette plugin 'no_such_cassette_plugin' listed in",
        ),
    ],
)
def test_bad_config_is_a_clean_usage_error(pytester: pytest.Pytester, toml: str, message: str) -> None:
    pytester.makepyprojecttoml(f"[tool.cassette]\n{toml}\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = result.stderr.str()
    assert error.startswith(f"ERROR: cassette: {pytester.path / 'pyproject.toml'}: ") and message in error
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_config_plugin_normalises_requests_in_a_pytest_run(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        date_plugin="""
import re
import subprocess
import sys
from cassette import hookimpl

@hookimpl
def cassette_normalize(request, kind):
    for m in request.get("messages", []):
        if isinstance(m.get("content"), str):
            m["content"] = re.sub(r"\\d{4}-\\d{2}-\\d{2}", "<date>", m["content"])
""",
        test_dated=HEADER
        + "\n@pytest.mark.cassette\ndef test_today():\n    ask('today is ' + os.environ['TODAY'])\n",
    )
    suite.makepyprojecttoml('\n[tool.cassette]\nplugins = ["date_plugin"]\n')
    suite.syspathinsert()
    monkeypatch.setenv("TODAY", "2026-11-30")
    suite.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("TODAY", "2026-12-01")
    suite.runpytest("--cassette-mode=replay").assert_outcomes(passed=1)


def test_pytest_reads_the_config_of_its_rootdir_even_from_a_subdirectory(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.cassette]\ncassette_dir = "recordings"\nmode = "record"\n')
    sub = pytester.mkpydir("pkg")
    (sub / "test_one.py").write_text(
        "def test_one(cassette):\n    assert cassette.requested_mode.value == 'record'\n"
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(sub)
        result = pytester.runpytest("test_one.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"cassette: mode=record, dir={pytester.path / 'recordings'}, network guard on"]
    )
    assert (pytester.path / "recordings" / "pkg" / "test_one" / "test_one.json").is_file()


@pytest.fixture
def suite(
    pytester: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.setenv("DEVSERVER_URL", devserver.url)
    return pytester


BROKEN_PLUGINS = {
    "raises": ("raise RuntimeError('boom at import')\n", "failed while being imported (RuntimeError: boom"),
    "syntax": ("def broken(:\n", "failed while being imported (SyntaxError"),
    "signature": (
        "from cassette.hookspecs import hookimpl\n\n@hookimpl\ndef cassette_redact(interaction):\n    pass\n",
        "does not fit the hooks",
    ),
}


@pytest.mark.parametrize("kind", list(BROKEN_PLUGINS))
def test_a_plugin_that_breaks_is_one_usage_error_at_start(
    pytester: pytest.Pytester, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: an import that raised (not ImportError) was an INTERNALERROR, and a hook with wrong
    # arguments passed the start and then failed every cassette test with pluggy's traceback
    source, message = BROKEN_PLUGINS[kind]
    pytester.makepyprojecttoml('[tool.cassette]\nplugins = ["badplug"]\n')
    pytester.makepyfile(
        badplug=source, test_x="import pytest\n\n@pytest.mark.cassette\ndef test_x():\n    pass\n"
    )
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = result.stderr.str()
    assert "cassette plugin 'badplug'" in error and message in error, error
    assert "Traceback" not in error + result.stdout.str()
    # the command line says the same in one line, exit 2
    done = subprocess.run(
        [str(Path(sys.executable).with_name("cassette")), "plugins"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("cassette plugins: error: ") and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
