"""The pytest plugin, exercised by real inner pytest runs (pytester) against the local devserver."""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import hypothesis
import openai
import pytest

import cassette
from cassette import NetworkBlockedError, UnroutedClientError, block_network
from cassette.pytest_plugin import safe_name
from cassette.testing.devserver import DevServer
from tests.config_helpers import config_keys

# In-process pytester runs drop the modules they imported. The SDKs must outlive them, because the seam
# caches its transport classes per module (a re-imported httpx2 has new classes); hypothesis, whose pytest
# plugin imports it lazily, would otherwise be re-imported and assertion-rewritten by every inner run (~3 s).
assert httpx2 and openai and hypothesis

# What every inner suite starts with: an instrumented OpenAI client on the devserver of the outer test.
HEADER = """
import os
import pytest
import cassette
from openai import OpenAI

def client():
    base = os.environ["DEVSERVER_URL"] + "/v1"
    return cassette.instrument(OpenAI(base_url=base, api_key="sk-test", max_retries=0))

def ask(text):
    messages = [{"role": "user", "content": text}]
    reply = client().chat.completions.create(model="gpt-4o-mini", messages=messages)
    return reply.choices[0].message.content
"""

PYPROJECT = """
[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""


@pytest.fixture(autouse=True)
def _quiet_inner_asyncio(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs without asyncio settings would make pytest-asyncio warn about its future default."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS when it starts
        monkeypatch.setenv("PYTEST_ADDOPTS", "-o asyncio_default_fixture_loop_scope=function")


@pytest.fixture
def suite(
    pytester: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """A pytester project whose inner tests reach the outer test's devserver through $DEVSERVER_URL."""
    monkeypatch.setenv("DEVSERVER_URL", devserver.url)
    pytester.makepyprojecttoml(PYPROJECT)
    return pytester


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback socket that is listening but never accepts: any connection would queue on it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def nothing_connected(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


def cassettes(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json") if ".blobs" not in p.parts)


# --- marker, fixture, default paths ---------------------------------------------------------------


def test_marker_fixture_and_parameters_record_then_replay_at_default_paths(
    suite: pytest.Pytester, devserver: DevServer
) -> None:
    suite.makepyfile(
        test_agent=HEADER
        + """
@pytest.mark.cassette
def test_marked():
    assert ask("hello there")

def test_fixture_alone(cassette):
    ask("hi")
    assert [i.kind for i in cassette.interactions] == ["llm"]
    assert cassette.path.name == "test_fixture_alone.json"

def test_fixture_alias(cassette_session):
    assert isinstance(cassette_session, cassette.Session)
    assert cassette_session.path.name == "test_fixture_alias.json"

@pytest.mark.parametrize("question", ["refund please", "where/is my order?"])
@pytest.mark.cassette
def test_params(question):
    assert ask(question)

class TestGroup:
    @pytest.mark.cassette
    def test_in_class(self):
        assert ask("in a class")

def test_untouched():
    pass
"""
    )
    first = suite.runpytest()
    first.assert_outcomes(passed=7)
    first.stdout.fnmatch_lines(["*recorded: 6 cassette(s), 5 LLM calls made live*"])
    root = suite.path / "tests" / "cassettes"
    assert cassettes(root) == sorted(
        [
            "test_agent/TestGroup.test_in_class.json",
            "test_agent/test_fixture_alias.json",
            "test_agent/test_fixture_alone.json",
            "test_agent/test_marked.json",
            f"test_agent/{safe_name('test_params[refund please]')}.json",
            f"test_agent/{safe_name('test_params[where/is my order?]')}.json",
        ]
    )

    devserver.stop()
    seen = len(devserver.requests)
    second = suite.runpytest("--cassette-mode=replay")
    second.assert_outcomes(passed=7)
    second.stdout.fnmatch_lines(
        ["*replayed: 6 cassette(s), 5 LLM calls served*", "*tokens not spent: *(recorded usage*"]
    )
    assert "tokens not spent: 0 " not in second.stdout.str()
    assert len(devserver.requests) == seen


def test_async_tests_are_really_recorded_and_replayed(
    suite: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        test_async_agent="""
import os
import pytest
import cassette
from openai import AsyncOpenAI

@pytest.mark.cassette
async def test_async_call(cassette):
    client = cassette_client()
    reply = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "async hello"}]
    )
    assert reply.choices[0].message.content
    assert [i.kind for i in cassette.interactions] == ["llm"]
    with open(os.environ["ANSWER_FILE"], "a") as fh:
        fh.write(reply.choices[0].message.content + "\\n")

def cassette_client():
    import cassette as c
    base = os.environ["DEVSERVER_URL"] + "/v1"
    return c.instrument(AsyncOpenAI(base_url=base, api_key="sk-test", max_retries=0))
"""
    )
    answers = suite.path / "answers.txt"
    monkeypatch.setenv("ANSWER_FILE", str(answers))
    suite.runpytest().assert_outcomes(passed=1)
    devserver.stop()
    result = suite.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*replayed: 1 cassette(s), 1 LLM calls served*"])
    first, second = answers.read_text().splitlines()
    assert first == second
    manifest = suite.path / "tests/cassettes/test_async_agent/test_async_call.json"
    assert [i.kind for i in cassette.load_cassette(manifest).interactions] == ["llm"]


def test_marker_path_is_relative_to_the_cassette_dir_and_dir_option_moves_it(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_paths=HEADER
        + """
@pytest.mark.cassette("shared/triage")
def test_named():
    ask("named cassette")

@pytest.mark.cassette
def test_default():
    ask("default cassette")
"""
    )
    suite.runpytest("--cassette-dir=elsewhere").assert_outcomes(passed=2)
    assert cassettes(suite.path / "elsewhere") == ["shared/triage.json", "test_paths/test_default.json"]
    assert not (suite.path / "tests").exists()


def test_module_in_the_tests_dir_maps_beside_it(suite: pytest.Pytester) -> None:
    suite.mkpydir("tests")
    (suite.path / "tests" / "unit").mkdir()
    (suite.path / "tests" / "unit" / "test_deep.py").write_text(
        "import pytest\n\n@pytest.mark.cassette\ndef test_deep(cassette):\n"
        "    assert cassette.interactions == []\n"
    )
    suite.runpytest().assert_outcomes(passed=1)
    assert cassettes(suite.path / "tests" / "cassettes") == ["unit/test_deep/test_deep.json"]


def test_safe_names_are_stable_distinct_and_short() -> None:
    assert safe_name("test_x[gpt-4o-mini-0.5]") == "test_x[gpt-4o-mini-0.5]"
    a, b = safe_name("test_x[a b]"), safe_name("test_x[a_b]")
    assert a != b and a.startswith("test_x[a_b]-") and b == "test_x[a_b]"
    assert safe_name("test_x[a/b]") != safe_name("test_x[a:b]")
    long_a, long_b = safe_name("test_" + "x" * 300 + "1"), safe_name("test_" + "x" * 300 + "2")
    assert len(long_a) <= 120 and long_a != long_b
    assert safe_name("test_" + "x" * 300 + "1") == long_a  # stable across runs
    assert safe_name("CON") == "_CON" and safe_name(".hidden").startswith("_")


def test_unknown_marker_option_fails_the_test_by_name(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_bad="""
import pytest

@pytest.mark.cassette(chek_order="error")
def test_typo():
    pass
"""
    )
    result = suite.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown @pytest.mark.cassette option(s) chek_order*known: path, mode*"])


# --- modes ----------------------------------------------------------------------------------------

MODE_SUITE = """
import os
import pytest

@pytest.mark.cassette(mode="record")
def test_marker_mode(cassette):
    assert cassette.requested_mode.value == os.environ["EXPECT_MARKED"]

def test_config_mode(cassette):
    assert cassette.requested_mode.value == os.environ["EXPECT_PLAIN"]
"""


@pytest.mark.parametrize(
    ("flag", "env", "marked", "plain"),
    [
        (None, None, "record", "rerecord"),  # marker beats config; config applies without a marker
        (None, "rerecord", "rerecord", "rerecord"),  # env beats marker
        ("record", "rerecord", "record", "record"),  # flag beats env
    ],
)
def test_mode_precedence_flag_env_marker_config(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    flag: str | None,
    env: str | None,
    marked: str,
    plain: str,
) -> None:
    pytester.makepyprojecttoml('[tool.cassette]\nmode = "rerecord"\n')
    pytester.makepyfile(test_modes=MODE_SUITE)
    monkeypatch.setenv("EXPECT_MARKED", marked)
    monkeypatch.setenv("EXPECT_PLAIN", plain)
    if env:
        monkeypatch.setenv("CASSETTE_MODE", env)
    result = pytester.runpytest(*([f"--cassette-mode={flag}"] if flag else []))
    result.assert_outcomes(passed=2)
    assert os.environ.get("CASSETTE_MODE") == env  # the flag's override ends with the run


def test_unknown_mode_from_flag_or_env_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("--cassette-mode=replya")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*unknown cassette mode 'replya'; use one of: auto, record, replay, rerecord*"]
    )
    monkeypatch.setenv("CASSETTE_MODE", "recrod")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*unknown cassette mode 'recrod' (from the CASSETTE_MODE environment variable)*"]
    )


def test_rerecord_reports_drift_in_the_summary(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        test_drifty=HEADER + "\n@pytest.mark.cassette\ndef test_answer():\n    ask(os.environ['QUESTION'])\n"
    )
    monkeypatch.setenv("QUESTION", "tell me a joke")
    suite.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("QUESTION", "tell me a long joke")  # the agent's prompt changed since recording
    result = suite.runpytest("--cassette-mode=rerecord")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*re-recorded: 1 cassette(s), 1 with drift (review: cassette drift; keep: cassette accept)*",
            "  drifted: tests/cassettes/test_drifty/test_answer.json",
        ]
    )
    assert (suite.path / "tests/cassettes/test_drifty/test_answer.pending.json").is_file()


def test_a_skip_before_any_call_leaves_no_failed_recording(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_skip="import pytest\n\n@pytest.mark.cassette\ndef test_s():\n    pytest.skip('no key')\n"
    )
    suite.runpytest().assert_outcomes(skipped=1)
    assert cassettes(suite.path / "tests" / "cassettes") == []


def test_a_swallowed_replay_miss_still_fails_the_test(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        test_miss=HEADER
        + """
@pytest.mark.cassette
def test_agent():
    try:
        ask(os.environ.get("QUESTION", "first"))
    except Exception:
        pass  # an agent that swallows errors
"""
    )
    suite.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("QUESTION", "something else")
    result = suite.runpytest("--cassette-mode=replay")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CassetteMiss*has no recorded llm call matching*"])
    # the summary counts it as missed, not replayed
    result.stdout.fnmatch_lines(
        ["*missed: 1 test(s) failed on a call their cassette holds no recording of (see the failures above)*"]
    )
    assert "replayed:" not in result.stdout.str()  # no zero lines
    assert "tokens not spent" not in result.stdout.str()


# --- network guard --------------------------------------------------------------------------------

GUARD_SUITE = """
import os
import socket
import httpx2
import pytest
from openai import OpenAI

def connect_local():
    s = socket.create_connection(("127.0.0.1", int(os.environ["LISTENER_PORT"])), timeout=2)
    s.close()

@pytest.mark.cassette
def test_raw_client():
    httpx2.get("http://10.255.255.1/health", timeout=0.5)

@pytest.mark.cassette
def test_swallowed():
    try:
        httpx2.get("http://10.255.255.1/health", timeout=0.5)
    except Exception:
        pass

@pytest.mark.cassette
def test_uninstrumented_sdk():
    OpenAI(base_url="http://10.255.255.1/v1", api_key="sk-test", max_retries=0).models.list()

@pytest.mark.cassette
def test_loopback():
    connect_local()

@pytest.mark.cassette(network_guard=False)
def test_marker_guard_off():
    connect_local()

@pytest.mark.cassette(allow_hosts=["127.0.0.1"])
def test_marker_allows():
    connect_local()

@pytest.mark.cassette(block_loopback=True)
def test_marker_blocks_loopback():
    connect_local()
"""


EMPTY = '{"interactions": [], "version": 1}\n'


@pytest.fixture
def guard_suite(
    pytester: pytest.Pytester, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """Four recorded cassettes with no calls; replaying them, each test tries to reach the network."""
    monkeypatch.setenv("LISTENER_PORT", str(listener.getsockname()[1]))
    pytester.makepyfile(test_guard=GUARD_SUITE)
    folder = pytester.path / "tests" / "cassettes" / "test_guard"
    folder.mkdir(parents=True)
    names = ["test_raw_client", "test_swallowed", "test_uninstrumented_sdk", "test_loopback"]
    for name in [*names, "test_marker_guard_off", "test_marker_allows", "test_marker_blocks_loopback"]:
        (folder / f"{name}.json").write_text(EMPTY)
    return pytester


def test_guard_blocks_uninstrumented_clients_before_any_packet(
    guard_suite: pytest.Pytester, listener: socket.socket
) -> None:
    result = guard_suite.runpytest("-k", "not marker")
    result.assert_outcomes(passed=1, failed=3, deselected=3)  # loopback (the devserver's way) is allowed
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*_ test_raw_client _*",
            "NetworkBlockedError: network blocked: a connection to 10.255.255.1:80 through httpx2 from "
            "*test_guard.py:* in test_raw_client (replaying cassette *test_raw_client.json)*",
            "*_ test_swallowed _*",
            "NetworkBlockedError: *10.255.255.1*test_guard.py:* in test_swallowed*",
            "*_ test_uninstrumented_sdk _*",
            "NetworkBlockedError: *10.255.255.1*through openai -> httpx2*"
            "the openai client is likely un-instrumented*cassette.instrument(client)*",
        ]
    )
    assert "--cassette-allow-host=10.255.255.1" in out
    assert "Traceback" not in out


def test_guard_can_block_loopback_and_allow_listed_hosts(
    guard_suite: pytest.Pytester, listener: socket.socket
) -> None:
    result = guard_suite.runpytest("--cassette-block-loopback", "-k", "test_loopback")
    result.assert_outcomes(failed=1, deselected=6)
    result.stdout.fnmatch_lines(["*network blocked: a connection to 127.0.0.1:*from *test_guard.py*"])
    assert nothing_connected(listener)  # the guard fired before the SYN: nothing reached the socket

    allowed = guard_suite.runpytest(
        "--cassette-block-loopback", "--cassette-allow-host=127.0.0.0/8", "-k", "test_loopback"
    )
    allowed.assert_outcomes(passed=1, deselected=6)
    assert not nothing_connected(listener)


@pytest.mark.parametrize("spelling", ["::1", "[::1]", "0::1", "0:0:0:0:0:0:0:1"])
def test_an_allowed_ipv6_loopback_matches_in_any_spelling(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    # before: "[::1]" and "0::1" passed the check of allow-host entries but matched nothing
    try:
        sock = socket.socket(socket.AF_INET6)
        sock.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    sock.listen(8)
    monkeypatch.setenv("LISTENER_PORT", str(sock.getsockname()[1]))
    pytester.makepyfile(
        test_v6="""
import os
import socket
import pytest

@pytest.mark.cassette
def test_v6():
    socket.create_connection(("::1", int(os.environ["LISTENER_PORT"])), timeout=2).close()
"""
    )
    folder = pytester.path / "tests" / "cassettes" / "test_v6"
    folder.mkdir(parents=True)
    (folder / "test_v6.json").write_text(EMPTY)
    try:
        pytester.runpytest("--cassette-block-loopback").assert_outcomes(failed=1)
        allowed = pytester.runpytest("--cassette-block-loopback", f"--cassette-allow-host={spelling}")
        allowed.assert_outcomes(passed=1)
    finally:
        sock.close()


def test_guard_can_be_turned_off_by_flag_config_or_marker(
    guard_suite: pytest.Pytester, listener: socket.socket
) -> None:
    def connections() -> int:
        count = 0
        while not nothing_connected(listener):
            count += 1
        return count

    result = guard_suite.runpytest(
        "--cassette-block-loopback", "--cassette-no-network-guard", "-k", "loopback"
    )
    result.assert_outcomes(passed=2, deselected=5)
    assert connections() == 2

    markers = guard_suite.runpytest("-k", "marker")  # the markers adjust the run's guard per test
    markers.assert_outcomes(passed=2, failed=1, deselected=4)
    markers.stdout.fnmatch_lines(
        [
            "*_ test_marker_blocks_loopback _*",
            "NetworkBlockedError: network blocked: a connection to 127.0.0.1:*",
        ]
    )
    markers = guard_suite.runpytest("--cassette-block-loopback", "-k", "marker_guard_off or marker_allows")
    markers.assert_outcomes(passed=2, deselected=5)
    assert connections() == 4

    guard_suite.makepyprojecttoml('[tool.cassette]\nallow_hosts = ["127.0.0.0/8"]\n')
    guard_suite.runpytest("--cassette-block-loopback", "-k", "test_loopback").assert_outcomes(
        passed=1, deselected=6
    )
    guard_suite.makepyprojecttoml("[tool.cassette]\nnetwork_guard = false\n")
    guard_suite.runpytest("--cassette-block-loopback", "-k", "test_loopback").assert_outcomes(
        passed=1, deselected=6
    )
    assert connections() == 2


def test_guard_is_off_while_recording_and_covers_cassette_using_in_replay(
    pytester: pytest.Pytester, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LISTENER_PORT", str(listener.getsockname()[1]))
    pytester.makepyfile(
        test_using="""
import os, socket, cassette

def test_record_then_replay():
    port = int(os.environ["LISTENER_PORT"])
    with cassette.using("c/x.json", mode="record"):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # recording: allowed
    with cassette.using("c/x.json", mode="replay"):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # replaying: blocked
"""
    )
    result = pytester.runpytest("--cassette-block-loopback")
    result.assert_outcomes(failed=1)
    blocked = "*network blocked: a connection to 127.0.0.1*replaying cassette */c/x.json*"
    result.stdout.fnmatch_lines([blocked])
    listener.accept()[0].close()  # the recording's connection
    assert nothing_connected(listener)  # and only that one


def test_block_network_context_manager(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with block_network():
        with pytest.raises(NetworkBlockedError) as err:
            socket.create_connection(("127.0.0.1", port), timeout=2)
        assert err.value.host == "127.0.0.1" and err.value.port == port
        with pytest.raises(NetworkBlockedError, match=r"a DNS look-up of api\.openai\.com"):
            socket.getaddrinfo("api.openai.com", 443)  # no DNS query leaves either
        with block_network(allow_loopback=True):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        with pytest.raises(NetworkBlockedError):
            socket.create_connection(("127.0.0.1", port), timeout=2)  # the outer block is back
    with block_network(allow_hosts=["127.0.0.0/8"]):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with block_network(allow_hosts=["*.local.test", "localhost"]):
        socket.getaddrinfo("localhost", 80)
    socket.create_connection(("127.0.0.1", port), timeout=2).close()  # off again
    assert isinstance(NetworkBlockedError("x", host="h"), cassette.CassetteError)
    for _ in range(3):
        listener.accept()[0].close()
    assert nothing_connected(listener)


# --- orphans, expiry, config ----------------------------------------------------------------------

ORPHAN_SUITE = """
import pytest

@pytest.mark.cassette
def test_used(cassette):
    pass

@pytest.mark.skip(reason="needs a key")
@pytest.mark.cassette
def test_skipped():
    pass
"""


def test_orphans_are_listed_only_for_whole_suite_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_orphans=ORPHAN_SUITE)
    root = pytester.path / "tests" / "cassettes"
    planted = {
        "test_orphans/test_skipped.json": EMPTY,  # a skipped test still claims its cassette
        "old/gone.json": EMPTY,  # the orphan
        "test_orphans/test_used.pending.json": "{}",  # side files and the store are never orphans
        "test_orphans/test_used.failed.json": "{}",
        ".blobs/ab/cdef.json": "{}",
    }
    for name, text in planted.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)

    warn = pytester.runpytest("--cassette-orphans=warn")
    assert warn.ret == 0
    warn.assert_outcomes(passed=1, skipped=1)
    warn.stdout.fnmatch_lines(
        ["*orphans: 1 cassette file(s) under *that no collected test uses*", "*old/gone.json"]
    )
    assert "test_skipped.json" not in warn.stdout.str().split("orphans:")[1]

    fail = pytester.runpytest("--cassette-orphans=fail")
    assert fail.ret == pytest.ExitCode.TESTS_FAILED
    fail.assert_outcomes(passed=1, skipped=1)

    partial = pytester.runpytest("--cassette-orphans=fail", "-k", "used")
    assert partial.ret == 0
    # a targeted run never checks orphans: said only with -v, not on every run
    assert "orphans:" not in partial.stdout.str()
    partial = pytester.runpytest("--cassette-orphans=fail", "-k", "used", "-v")
    partial.stdout.fnmatch_lines(["*orphans: not checked (-k selected part of the suite)*"])
    by_id = pytester.runpytest("--cassette-orphans=fail", "test_orphans.py::test_used", "-v")
    assert by_id.ret == 0
    by_id.stdout.fnmatch_lines(["*orphans: not checked (node ids selected part of the suite)*"])

    (root / "old" / "gone.json").unlink()
    pytester.makepyprojecttoml('[tool.cassette]\norphans = "fail"\n')
    clean = pytester.runpytest()
    assert clean.ret == 0
    clean.stdout.fnmatch_lines(["*orphans: none*"])


@pytest.mark.parametrize("action", ["warn", "fail", "rerecord"])
def test_expired_cassettes(suite: pytest.Pytester, devserver: DevServer, action: str) -> None:
    suite.makepyfile(
        test_old=HEADER + "\n@pytest.mark.cassette\ndef test_agent():\n    ask('an old question')\n"
    )
    manifest = suite.path / "tests/cassettes/test_old/test_agent.json"
    client = cassette.instrument(openai.OpenAI(base_url=devserver.openai_base_url, api_key="sk-test"))
    with cassette.using(manifest, mode="record", store=manifest.parent.parent / ".blobs"):
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "an old question"}]
        )
    long_ago = time.time() - 100 * 86400  # no git repository here: the file's mtime is its age
    os.utime(manifest, (long_ago, long_ago))
    suite.makepyprojecttoml(PYPROJECT + f'\n[tool.cassette]\nmax_age = "90d"\nmax_age_action = "{action}"\n')
    result = suite.runpytest()
    result.stdout.fnmatch_lines(
        ["*expired: 1 cassette(s) older than max_age = 90d*", "*test_agent.json (100 days)*"]
    )
    if action == "warn":
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*CassetteWarning: cassette *test_agent.json is 100 days old*"])
    elif action == "fail":
        result.assert_outcomes(errors=1)
        assert "older than [tool.cassette] max_age = '90d'. Re-record it" in result.stdout.str()
    else:
        result.assert_outcomes(passed=1)
        assert manifest.with_name("test_agent.pending.json").is_file()
    assert len(devserver.requests) == (2 if action == "rerecord" else 1)


def test_cassette_age_comes_from_the_last_commit_unless_edited_since(tmp_path: Path) -> None:
    from dulwich import porcelain

    from cassette.maintenance.hygiene import cassette_age

    repo = porcelain.init(str(tmp_path))
    manifest = tmp_path / "tests" / "cassettes" / "triage.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(EMPTY)
    porcelain.add(repo, [str(manifest)])
    committed = int(time.time()) - 200 * 86400
    porcelain.commit(
        repo, b"record triage", author=b"a <a@x>", committer=b"a <a@x>", commit_timestamp=committed
    )
    now = time.time()
    age, source = cassette_age(manifest, now)
    assert source == "last commit" and age == pytest.approx(now - committed)
    manifest.write_text(EMPTY.replace("1", "1 "))  # re-recorded, not committed yet: the file is fresh
    assert cassette_age(manifest, now)[1] == "file modification time"


# --- xdist ----------------------------------------------------------------------------------------

XDIST_SUITE = """
import os
import pytest
import cassette

SYSTEM = "You are a support agent for a shop. " * 40  # one blob shared by every cassette

@pytest.mark.parametrize("n", range(40))
@pytest.mark.cassette
def test_ticket(n, cassette):
    with cassette_client() as http:
        reply = http.post(
            os.environ["DEVSERVER_URL"] + "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [
                {"role": "system", "content": SYSTEM}, {"role": "user", "content": f"ticket {n}"}]},
        )
    assert reply.status_code == 200
    assert len(cassette.interactions) == 1

def cassette_client():
    import cassette as c
    return c.http_client()
"""


# Plugins the inner suite does not use: each of the five processes would import them.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:asyncio")


def test_xdist_records_and_replays_into_one_store(
    pytester: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEVSERVER_URL", devserver.url)
    pytester.makepyfile(test_tickets=XDIST_SUITE)
    recorded = pytester.runpytest_subprocess("-n", "4", *QUIET)
    recorded.assert_outcomes(passed=40)
    recorded.stdout.fnmatch_lines(["*recorded: 40 cassette(s), 40 LLM calls made live*"])
    root = pytester.path / "tests" / "cassettes"
    assert len(cassettes(root)) == 40
    blobs = [p for p in (root / ".blobs").rglob("*") if p.is_file()]
    assert blobs and not [p for p in blobs if p.name.endswith(".tmp")]
    system_blob = json.loads((root / "test_tickets" / "test_ticket[0].json").read_text())
    assert "$blob" in json.dumps(system_blob)

    devserver.stop()
    (root / "left_over.json").write_text('{"version": 1, "interactions": []}\n')
    replayed = pytester.runpytest_subprocess("-n", "4", *QUIET, "--cassette-orphans=fail")
    replayed.assert_outcomes(passed=40)
    replayed.stdout.fnmatch_lines(
        [
            "*replayed: 40 cassette(s), 40 LLM calls served*",
            "*orphans: 1 cassette file(s)*",
            "*left_over.json",
        ]
    )
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED  # the orphan, judged by the controller


# --- docs/pytest.md -------------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[1] / "docs" / "pytest.md"


def doc_blocks(kind: str, language: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return re.findall(rf"<!-- test: {kind} -->\s*\n```{language}\n(.*?)```", text, re.S)


def test_doc_pytest_examples_record_then_replay(
    pytester: pytest.Pytester, devserver: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = doc_blocks("pytest", "python")
    assert len(examples) >= 2
    for n, code in enumerate(examples):
        pytester.makepyfile(**{f"test_doc_{n}": code})
    pytester.makepyprojecttoml(PYPROJECT)
    monkeypatch.setenv("OPENAI_BASE_URL", devserver.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-example")
    recorded = pytester.runpytest()
    assert recorded.ret == 0, recorded.stdout.str()
    devserver.stop()
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed-on-replay")
    replayed = pytester.runpytest("--cassette-mode=replay", "--cassette-block-loopback")
    assert replayed.ret == 0, replayed.stdout.str()
    replayed.stdout.fnmatch_lines(["*replayed: * cassette(s)*"])
    assert "recorded:" not in replayed.stdout.str()  # nothing recorded, and a zero line is left out


def test_doc_config_examples_parse_and_the_table_lists_every_key(tmp_path: Path) -> None:
    from cassette.config import parse_config

    blocks = doc_blocks("pyproject", "toml")
    assert blocks
    for block in blocks:
        (tmp_path / "pyproject.toml").write_text(block)
        parse_config(tmp_path / "pyproject.toml")
    table = DOC.read_text(encoding="utf-8").split("## Configuration", 1)[1]
    listed = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
    assert listed == set(config_keys())


def test_the_summary_counts_the_calls_of_a_test_that_failed_while_recording(suite: pytest.Pytester) -> None:
    # before: a failed recording's live calls (tokens spent) were left out of "made live"
    suite.makepyfile(
        test_fails=HEADER
        + """
@pytest.mark.cassette
def test_good():
    ask("one")

@pytest.mark.cassette
def test_bad():
    ask("two")
    ask("three")
    assert False, "the agent got it wrong"
"""
    )
    result = suite.runpytest("--cassette-mode=record", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["recorded: 1 cassette(s) (and 1 failed recording(s) kept in *.failed.json), 3 LLM calls made live"]
    )
    assert (suite.path / "tests" / "cassettes" / "test_fails" / "test_bad.failed.json").is_file()


def test_recording_no_calls_warns_that_the_client_may_not_be_instrumented(
    devserver: DevServer, tmp_path: Path
) -> None:
    from openai import OpenAI

    with pytest.warns(cassette.CassetteWarning, match=r"recorded no calls\. Is the client instrumented"):
        with cassette.using(tmp_path / "c.json", mode="record"):
            pass  # nothing connected out: an empty recording, with the hint
    assert json.loads((tmp_path / "c.json").read_text())["interactions"] == []
    # a client seen connecting without the seam: no empty cassette that replays as a pass (issue 24.7)
    plain = OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)  # not instrumented
    with pytest.raises(UnroutedClientError, match=r"the openai client .*cassette\.instrument"):
        with cassette.using(tmp_path / "d.json", mode="record"):
            plain.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert not (tmp_path / "d.json").exists()


def prompts_on_disk(root: Path) -> dict[str, list[str]]:
    """Each cassette file under ``root`` (failed ones too) -> the user prompts of its LLM calls, in order."""
    out: dict[str, list[str]] = {}
    for name in cassettes(root):
        held = cassette.load_cassette(root / name)
        out[name] = [held.hydrated(i).request["messages"][-1]["content"] for i in held.interactions]
    return out


def test_cassette_using_the_tests_own_cassette_inside_it_fails_the_test_and_loses_no_call(
    suite: pytest.Pytester, devserver: DevServer
) -> None:
    # before: the inner session recorded its calls into the marker's file, which the marker's session
    # then overwrote with its own calls when the test ended: the inner calls were silently lost, and the
    # summary counted calls made live that no file held
    suite.makepyfile(
        test_nested=HEADER
        + """
MINE = "tests/cassettes/test_nested/{}.json"

@pytest.mark.cassette
def test_using():
    ask("before the block")
    with cassette.using(MINE.format("test_using")):
        ask("inside the block")
    ask("after the block")

@cassette.use(MINE.format("test_use"))
def helper():
    ask("inside the decorated helper")

@pytest.mark.cassette
def test_use():
    helper()

def test_fixture(cassette_session):
    ask("before the failing block")
    with cassette.using(cassette_session.path):
        ask("inside the failing block")
        raise AssertionError("the agent got it wrong")

@pytest.mark.cassette
def test_other_file():
    ask("mine")
    with cassette.using("tests/cassettes/elsewhere.json"):
        ask("theirs")
"""
    )
    result = suite.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*_ test_using _*",
            "CassetteError: cassette */test_nested/test_using.json was written by another session while "
            "test_nested.py::test_using recorded it.",
            "A cassette.using() or cassette.use() on the test's own cassette *",
            "Nothing recorded was lost: that session's calls are in test_using.json; the test's own 2 "
            "call(s), made outside it, are in test_using.failed.json.",
            "Open the file once: drop the cassette.using()/cassette.use() *",
            "*_ test_use _*",
            "Nothing recorded was lost: that session's calls are in test_use.json; the test made no call "
            "outside it.",
            "*_ test_fixture _*",
            "Nothing recorded was lost: that session's calls are in test_fixture.failed.json; the test's "
            "own 1 call(s), made outside it, are in test_fixture.marker.failed.json.",
            "*",
            "The test itself also failed: AssertionError: the agent got it wrong",
        ]
    )
    root = suite.path / "tests" / "cassettes"
    assert prompts_on_disk(root) == {
        "elsewhere.json": ["theirs"],
        "test_nested/test_other_file.json": ["mine"],
        "test_nested/test_using.json": ["inside the block"],  # the inner session's recording, as it left it
        "test_nested/test_using.failed.json": ["before the block", "after the block"],  # the test's own
        "test_nested/test_use.json": ["inside the decorated helper"],  # the test made no call of its own
        # the inner block failed (its recording is the usual *.failed.json); the test's own calls beside it
        "test_nested/test_fixture.failed.json": ["inside the failing block"],
        "test_nested/test_fixture.marker.failed.json": ["before the failing block"],
    }
    assert sum(map(len, prompts_on_disk(root).values())) == len(devserver.requests)  # every live call kept
    result.stdout.fnmatch_lines(
        ["recorded: 4 cassette(s) (and 3 failed recording(s) kept in *.failed.json), 8 LLM calls made live"]
    )


def test_the_failed_recordings_counted_are_the_files_left_on_disk(suite: pytest.Pytester) -> None:
    # before: a test that skipped before any call, or whose fixture failed, was counted as a failed
    # recording kept in *.failed.json, though its empty file was removed
    suite.makepyfile(
        test_outcomes=HEADER
        + """
@pytest.fixture
def broken():
    raise RuntimeError("no database")

@pytest.mark.cassette
def test_skips():
    pytest.skip("no key")

@pytest.mark.cassette
def test_fixture_fails(broken):
    ask("never asked")

def test_fixture_alone_fails(cassette, broken):
    ask("never asked either")

@pytest.mark.cassette
def test_good():
    ask("one")

@pytest.mark.cassette
def test_bad():
    ask("two")
    assert False, "the agent got it wrong"
"""
    )
    result = suite.runpytest("--cassette-mode=record", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1, skipped=1, errors=2)
    result.stdout.fnmatch_lines(
        ["recorded: 1 cassette(s) (and 1 failed recording(s) kept in *.failed.json), 2 LLM calls made live"]
    )
    assert cassettes(suite.path / "tests" / "cassettes") == [
        "test_outcomes/test_bad.failed.json",
        "test_outcomes/test_good.json",
    ]
    # a run whose only session was a skip has nothing to report
    skipped = suite.runpytest("-k", "test_skips", "--cassette-mode=record")
    skipped.assert_outcomes(skipped=1, deselected=4)
    assert "failed recording" not in skipped.stdout.str() and "made live" not in skipped.stdout.str()
