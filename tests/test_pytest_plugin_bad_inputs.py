"""The pytest plugin on bad inputs: every mistake is a readable failure naming the test, never a silent pick.

Real inner pytest runs (pytester); the calls recorded are `cassette.tool` calls, so no server is needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PYPROJECT = """
[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""

# What every inner suite starts with: a recorded tool (its calls land in the cassette).
HEADER = """
import os
import time
import pytest
import cassette

@cassette.tool
def lookup(order_id: str) -> dict:
    time.sleep(float(os.environ.get("SLOW", "0")))
    return {"order_id": order_id, "status": "shipped"}
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:cacheprovider")
    pytester.makepyprojecttoml(PYPROJECT)
    return pytester


def no_traceback(result: pytest.RunResult) -> None:
    """Neither pytest's nor the plugin's tracebacks: only the messages."""
    out = result.stdout.str()
    assert "Traceback" not in out and "During handling of the above exception" not in out, out
    assert "pytest_plugin.py:" not in out and "_session.py:" not in out, out
    assert "INTERNALERROR" not in out + result.stderr.str()


def test_marker_values_of_the_wrong_type_fail_the_test_by_name(suite: pytest.Pytester) -> None:
    # before: path=123 / b"x" / "" / "a\0b" and allow_hosts=5 were raw TypeError/ValueError tracebacks
    # from the plugin, network_guard="no" silently kept the guard on, and "x" with path="y" dropped "x"
    cases = {
        "path_int": "123",
        "path_bytes": "b'orders'",
        "path_empty": "''",
        "path_nul": "'a\\x00b'",
        "path_twice": "'x', path='y'",
        "guard_str": "network_guard='no'",
        "loopback_str": "block_loopback='yes'",
        "hosts_int": "allow_hosts=5",
        "hosts_list_int": "allow_hosts=[5]",
        "order_bad": "check_order='nope'",
        "threshold_str": "blob_threshold='10'",
        "mode_int": "mode=3",
    }
    body = HEADER + "".join(
        f"\n@pytest.mark.cassette({args})\ndef test_{name}():\n    lookup('A-1')\n"
        for name, args in cases.items()
    )
    suite.makepyfile(test_bad=body)
    result = suite.runpytest()
    result.assert_outcomes(errors=len(cases))
    no_traceback(result)
    result.stdout.fnmatch_lines(
        [
            "*CassetteConfigError: test_bad.py::test_path_int: @pytest.mark.cassette(path=123): path must*",
            "*test_path_nul: @pytest.mark.cassette(path='a\\x00b'): path must be a path without NUL bytes*",
            "*test_path_twice: @pytest.mark.cassette got the path twice: 'x' as its argument and path='y'*",
            "*test_guard_str: @pytest.mark.cassette(network_guard='no'): network_guard must be True or*",
            "*test_hosts_int: @pytest.mark.cassette(allow_hosts=5): allow_hosts must be a host*",
        ]
    )
    assert not (suite.path / "tests" / "cassettes").exists()  # nothing ran, nothing was written


def test_a_relative_marker_path_may_not_lead_out_of_the_project(suite: pytest.Pytester) -> None:
    # before: the cassette was silently written three directories above the project
    suite.makepyfile(
        test_escape=HEADER
        + "\n@pytest.mark.cassette('../../../../escaped')\ndef test_out():\n    lookup('A-1')\n"
        + "\n@pytest.mark.cassette('../shared/inside')\ndef test_in():\n    lookup('A-1')\n"
    )
    result = suite.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    no_traceback(result)
    result.stdout.fnmatch_lines(["*test_out: @pytest.mark.cassette path '../../../../escaped' leads out of*"])
    assert (suite.path / "tests" / "shared" / "inside.json").is_file()  # ".." inside the project is fine
    assert not (suite.path.parent.parent / "escaped.json").exists()


def test_a_marker_name_with_a_dot_still_gets_json(suite: pytest.Pytester) -> None:
    # before: "gpt-4.1" and "notes.yaml" were written as given; `cassette ls` did not list them and
    # `cassette gc --apply` deleted their blobs as unreferenced
    suite.makepyfile(
        test_dots=HEADER
        + "\n@pytest.mark.cassette('model-gpt-4.1')\ndef test_model():\n    lookup('A-1')\n"
        + "\n@pytest.mark.cassette('notes.yaml')\ndef test_notes():\n    lookup('A-2')\n"
    )
    result = suite.runpytest()
    result.assert_outcomes(passed=2)
    cassettes = suite.path / "tests" / "cassettes"
    assert sorted(p.name for p in cassettes.glob("*.json")) == ["model-gpt-4.1.json", "notes.yaml.json"]
    assert not (cassettes / "model-gpt-4.1").exists()


def test_a_cassette_an_earlier_release_wrote_without_json_is_named_with_the_rename(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(
        test_old=HEADER + "\n@pytest.mark.cassette('model-gpt-4.1')\ndef test_model():\n    lookup('A-1')\n"
    )
    suite.runpytest().assert_outcomes(passed=1)
    cassettes = suite.path / "tests" / "cassettes"
    (cassettes / "model-gpt-4.1.json").rename(cassettes / "model-gpt-4.1")  # as the old plugin named it
    result = suite.runpytest()
    result.assert_outcomes(errors=1)
    no_traceback(result)
    result.stdout.fnmatch_lines(
        ["*an earlier release wrote it as *model-gpt-4.1 *git mv *model-gpt-4.1.json*"]
    )


def test_a_hidden_marker_path_is_refused(suite: pytest.Pytester) -> None:
    # `ls`, `verify` and `gc` skip hidden files and folders: gc would delete such a cassette's blobs
    suite.makepyfile(
        test_hidden=HEADER
        + "\n@pytest.mark.cassette('.hidden')\ndef test_a():\n    lookup('A-1')\n"
        + "\n@pytest.mark.cassette('sub/.cache/x')\ndef test_b():\n    lookup('A-1')\n"
    )
    result = suite.runpytest()
    result.assert_outcomes(errors=2)
    no_traceback(result)
    result.stdout.fnmatch_lines(["*test_a: @pytest.mark.cassette path '.hidden' has a hidden part*"])
    assert not list((suite.path / "tests").rglob(".hidden*"))


def test_a_parameter_or_fixture_named_cassette_does_not_switch_the_marker_off(suite: pytest.Pytester) -> None:
    # before: the marker asked pytest for "cassette" and got the test's own parameter or fixture, so
    # no session opened: mode="replay" with no file passed, and nothing was recorded
    suite.makeconftest("import pytest\n\n@pytest.fixture\ndef cassette():\n    return 'mine'\n")
    suite.makepyfile(
        test_names=HEADER
        + "\n@pytest.mark.cassette('p', mode='replay')\n@pytest.mark.parametrize('cassette', ['a'])\n"
        + "def test_param(cassette):\n    assert cassette == 'a'\n    lookup('A-1')\n"
        + "\n@pytest.mark.cassette('f', mode='replay')\ndef test_fixture(cassette):\n"
        + "    assert cassette == 'mine'\n    lookup('A-1')\n"
        + "\n@pytest.mark.cassette('recorded')\ndef test_records(cassette):\n    lookup('A-2')\n"
    )
    result = suite.runpytest()
    result.assert_outcomes(passed=1, errors=2)  # no file to replay: the two replays fail by name
    no_traceback(result)
    result.stdout.fnmatch_lines(
        ["*test_param*CassetteNotFoundError*", "*test_fixture*CassetteNotFoundError*"]
    )
    recorded = json.loads((suite.path / "tests" / "cassettes" / "recorded.json").read_text())
    assert [i["kind"] for i in recorded["interactions"]] == ["tool"]


def test_recording_one_test_of_a_shared_cassette_by_node_id_keeps_the_others_calls(
    suite: pytest.Pytester,
) -> None:
    # before: `pytest test_a.py::test_a --cassette-mode=record` (or --lf, or one file) saw one user of
    # the cassette, recorded it as its own and dropped test_b's calls; the next full replay missed
    suite.makepyfile(
        test_a=HEADER + "\n@pytest.mark.cassette('shared')\ndef test_a():\n    lookup('A-1')\n",
        test_b=HEADER + "\n@pytest.mark.cassette('shared')\ndef test_b():\n    lookup('B-1')\n",
    )
    suite.runpytest().assert_outcomes(passed=2)
    shared = suite.path / "tests" / "cassettes" / "shared.json"
    for subset in (["test_a.py::test_a"], ["test_a.py"]):
        suite.runpytest(*subset, "--cassette-mode=record").assert_outcomes(passed=1)
        owners = sorted(i["test"] for i in json.loads(shared.read_text())["interactions"])
        assert owners == ["test_a.py::test_a", "test_b.py::test_b"], subset
    suite.runpytest("--cassette-mode=replay").assert_outcomes(passed=2)
    # a test that was collected and no longer uses the cassette still has its calls dropped
    suite.makepyfile(test_b=HEADER + "\ndef test_b():\n    pass\n")
    suite.runpytest("--cassette-mode=record").assert_outcomes(passed=2)
    owners = [i.get("test") for i in json.loads(shared.read_text())["interactions"]]
    assert "test_b.py::test_b" not in owners


def test_stacked_markers_never_silently_drop_one(suite: pytest.Pytester) -> None:
    # before: of two path markers on one test one was ignored, and a subclass's marker lost to its
    # base class's, a pytest.param's marks to the function's decorator
    suite.makepyfile(
        test_stack=HEADER
        + """
@pytest.mark.cassette("first")
@pytest.mark.cassette("second")
def test_two():
    lookup("A-1")

@pytest.mark.cassette(mode="record")
@pytest.mark.cassette(check_order="error")
def test_compatible(cassette):
    assert cassette.check_order == "error" and cassette.requested_mode == "record"

@pytest.mark.cassette("base")
class Base:
    def test_m(self, cassette):
        assert cassette.path.name == type(self).__name__.lower() + ".json"

@pytest.mark.cassette("testsub")
class TestSub(Base):
    pass

@pytest.mark.cassette("decorator")
@pytest.mark.parametrize("n", [pytest.param(1, marks=pytest.mark.cassette("param")), 2])
def test_param(n, cassette):
    assert cassette.path.name == ("param.json" if n == 1 else "decorator.json")
"""
    )
    result = suite.runpytest()
    result.assert_outcomes(passed=4, errors=1)
    no_traceback(result)
    result.stdout.fnmatch_lines(
        ["*test_two: two @pytest.mark.cassette markers on test_two set path differently*Keep one marker*"]
    )


def test_setup_errors_are_one_message_not_a_chained_copy(suite: pytest.Pytester) -> None:
    # before: every setup failure printed its message, "During handling of the above exception...",
    # then the message again
    cassettes = suite.path / "tests" / "cassettes"
    cassettes.mkdir(parents=True)
    (cassettes / "torn.json").write_text('{"interactions": [{"key": "ab', encoding="utf-8")
    suite.makepyfile(test_torn=HEADER + "\n@pytest.mark.cassette('torn')\ndef test_t():\n    lookup('A-1')\n")
    result = suite.runpytest()
    result.assert_outcomes(errors=1)
    no_traceback(result)
    # once in the error report: no chained second copy (the short summary line may repeat it:
    # pytest prints it whole when $CI is set and cuts it to the terminal width otherwise)
    report = result.stdout.str().split("short test summary info")[0]
    assert report.count("it was truncated") == 1, report
    result.stdout.fnmatch_lines(["TruncatedCassetteError: *torn.json ends in the middle of its JSON*"])


def test_a_replay_miss_shows_the_message_and_the_test_line_not_cassette_source(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: the miss came with ~40 lines of cassette/_session.py source before the message
    suite.makepyfile(
        test_miss=HEADER
        + "\n@pytest.mark.cassette\ndef test_agent():\n    lookup(os.environ.get('ORDER', 'A-1'))\n"
    )
    suite.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("ORDER", "B-2")
    result = suite.runpytest("--cassette-mode=replay")
    result.assert_outcomes(failed=1)
    no_traceback(result)
    result.stdout.fnmatch_lines(
        [
            "CassetteMiss: cassette *test_miss/test_agent.json has no recorded tool call matching tool*",
            "Nearest recorded tool call is #0; it differs in (this call != recorded):",
            '  arguments.order_id: "B-2" != "A-1"',
            "Fix: re-record*",
            "raised from:",
            "  test_miss.py:13 in test_agent",
        ]
    )


def test_xdist_workers_never_record_one_cassette_at_once(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: both workers found the shared cassette missing, both recorded and passed, and the last
    # writer silently dropped the other's recording (the next run then failed)
    suite.makepyfile(
        test_shared=HEADER
        + """
@pytest.mark.cassette("shared")
def test_one():
    lookup("A-1")

@pytest.mark.cassette("shared")
def test_two():
    lookup("B-1")
"""
    )
    monkeypatch.setenv("SLOW", "1")  # one test per worker: both would be recording at the same time
    result = suite.runpytest_subprocess("-n", "2", "-p", "xdist")
    # as in a serial run: the second waits for the first, then adds its own call to the recording
    # (later: replayed the first's recording and missed its own call, so no mode could record both)
    result.assert_outcomes(passed=2)
    # one file, counted once across the workers
    result.stdout.fnmatch_lines(["*recorded: 1 cassette(s), 2 tool calls made live*"])
    shared = json.loads((suite.path / "tests" / "cassettes" / "shared.json").read_text(encoding="utf-8"))
    assert sorted(i["request"]["arguments"]["order_id"] for i in shared["interactions"]) == ["A-1", "B-1"]
    assert [i["seq"] for i in shared["interactions"]] == [0, 1]
    replayed = suite.runpytest_subprocess("-n", "2", "-p", "xdist", "--cassette-mode=replay")
    replayed.assert_outcomes(passed=2)
    again = suite.runpytest_subprocess("-n", "2", "-p", "xdist", "--cassette-mode=record")  # a new run
    again.assert_outcomes(passed=2)
    shared = json.loads((suite.path / "tests" / "cassettes" / "shared.json").read_text(encoding="utf-8"))
    assert len(shared["interactions"]) == 2  # started afresh, not added to the last run's


def test_a_call_two_tests_share_is_served_from_each_tests_own_recording(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_own="""
import itertools, pathlib, pytest, cassette

pytestmark = pytest.mark.cassette("own")
counter = itertools.count(1)

@cassette.tool
def lookup(order_id: str) -> dict:
    return {"order_id": order_id, "n": next(counter)}  # which recording answered

@pytest.mark.parametrize("who", ["first", "second", "third"])
def test_same_call(who):
    with pathlib.Path("served.txt").open("a") as out:
        out.write(f"{who} {lookup('A-1')['n']}\\n")
"""
    )
    suite.runpytest("--cassette-mode=record").assert_outcomes(passed=3)
    recorded = sorted((suite.path / "served.txt").read_text().split("\n"))
    (suite.path / "served.txt").unlink()
    suite.runpytest("--cassette-mode=replay", "-k", "third or second").assert_outcomes(passed=2, deselected=1)
    replayed = sorted((suite.path / "served.txt").read_text().split("\n"))
    # before: the second test was served the first recording of the call (n 1), the third the second
    assert replayed == [line for line in recorded if not line.startswith("first")]


def test_tests_sharing_a_cassette_record_and_replay_it_serially(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_module=HEADER
        + """
pytestmark = pytest.mark.cassette("module")

@pytest.mark.parametrize("order", ["A-1", "B-2", "C-3"])
def test_each(order):
    lookup(order)

def test_common():
    lookup("A-1")
"""
    )
    module = suite.path / "tests" / "cassettes" / "module.json"

    def calls() -> list[tuple[str, str]]:
        doc = json.loads(module.read_text(encoding="utf-8"))
        assert [i["seq"] for i in doc["interactions"]] == list(range(len(doc["interactions"])))
        return sorted(
            (i["test"].split("::")[-1], i["request"]["arguments"]["order_id"]) for i in doc["interactions"]
        )

    every = [
        ("test_common", "A-1"),
        ("test_each[A-1]", "A-1"),
        ("test_each[B-2]", "B-2"),
        ("test_each[C-3]", "C-3"),
    ]
    for mode in ("auto", "replay", "record", "replay", "auto"):
        result = suite.runpytest(f"--cassette-mode={mode}")
        result.assert_outcomes(passed=4)
        assert calls() == every, mode  # each test's own calls, tagged with it; A-1 made by two tests
        summary = {  # one file, however many tests share it
            "replay": "*replayed: 1 cassette(s), 4 tool calls served*",
            "record": "*recorded: 1 cassette(s), 4 tool calls made live*",
        }
        if mode in summary:
            result.stdout.fnmatch_lines([summary[mode]])
    # re-recording one test replaces its calls, where they were, and keeps the others'
    before = module.read_text(encoding="utf-8")
    suite.runpytest("--cassette-mode=record", "-k", "B-2").assert_outcomes(passed=1, deselected=3)
    assert calls() == every
    assert module.read_text(encoding="utf-8") == before  # the same calls: not even moved (no drift)
    rerecord = suite.runpytest("--cassette-mode=rerecord", "-k", "C-3")
    rerecord.assert_outcomes(passed=1, deselected=3)
    pending = json.loads(module.with_name("module.pending.json").read_text(encoding="utf-8"))
    assert len(pending["interactions"]) == 4  # ready to accept: no other test's calls lost
    # a test no longer sharing the cassette: its calls go at the next recording
    suite.makepyfile(
        test_module=(suite.path / "test_module.py").read_text().replace("def test_common", "def _gone")
    )
    suite.runpytest("--cassette-mode=record", "-k", "A-1").assert_outcomes(passed=1, deselected=2)
    assert calls() == [c for c in every if c[0] != "test_common"]


def test_qq_prints_only_the_summary_lines_that_need_action(suite: pytest.Pytester) -> None:
    # before: -qq silenced pytest's own result line but still printed the five routine cassette lines
    suite.makepyfile(test_q=HEADER + "\n@pytest.mark.cassette\ndef test_a():\n    lookup('A-1')\n")
    quiet = suite.runpytest("-qq")
    assert quiet.ret == pytest.ExitCode.OK
    assert "cassette" not in quiet.stdout.str()
    assert "replayed: 1 cassette(s)" in suite.runpytest("-q").stdout.str()  # -q keeps the summary
    (suite.path / "tests" / "cassettes" / "left_behind.json").write_text("{}", encoding="utf-8")
    orphans = suite.runpytest("-qq", "--cassette-orphans=warn")
    out = orphans.stdout.str()
    assert "orphans: 1 cassette file(s)" in out and "left_behind.json" in out
    assert "replayed:" not in out


@pytest.mark.parametrize("value", ["", "test_a.py"])
def test_cassette_dir_that_is_no_directory_is_a_usage_error(suite: pytest.Pytester, value: str) -> None:
    # before: an empty value was ignored silently; a file failed every test at its first write
    suite.makepyfile(test_a=HEADER + "\n@pytest.mark.cassette\ndef test_a():\n    lookup('A-1')\n")
    result = suite.runpytest(f"--cassette-dir={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: cassette: --cassette-dir={value}*"])
    assert not Path(suite.path, "tests").exists()


def test_an_allow_host_that_could_never_match_is_an_error(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_h=HEADER + "\n@pytest.mark.cassette(allow_hosts=['https://vault.internal'])\n"
        "def test_marker():\n    lookup('A-1')\n\ndef test_plain():\n    pass\n"
    )
    flag = suite.runpytest("--cassette-allow-host=10.0.0.0/99")
    assert flag.ret == pytest.ExitCode.USAGE_ERROR
    flag.stderr.fnmatch_lines(
        ["*--cassette-allow-host=10.0.0.0/99 is neither a host name nor an IP network*"]
    )
    marker = suite.runpytest()
    marker.assert_outcomes(passed=1, errors=1)
    marker.stdout.fnmatch_lines(["*allow_hosts*'https://vault.internal' is a URL: give its host alone*"])


def test_a_shared_cassette_left_empty_by_its_first_test_still_records_the_next(
    suite: pytest.Pytester,
) -> None:
    # before: the second test found the (empty) file and replayed it in auto mode, and missed
    suite.makepyfile(
        test_first_quiet=HEADER
        + """
pytestmark = pytest.mark.cassette("quiet")

def test_a_no_calls():
    pass

def test_b_one_call():
    lookup("A-1")
"""
    )
    for _ in range(2):  # records, then replays
        suite.runpytest().assert_outcomes(passed=2)
    doc = json.loads((suite.path / "tests" / "cassettes" / "quiet.json").read_text(encoding="utf-8"))
    assert [i["test"].split("::")[-1] for i in doc["interactions"]] == ["test_b_one_call"]


def test_an_in_process_run_does_not_add_to_the_enclosing_runs_counts(suite: pytest.Pytester) -> None:
    # before: a pytester run's sessions (its misses too) were added to the enclosing run's counts,
    # so the outer summary printed replays and a red "missed" line that were not its own
    from cassette.seam.session import run_stats

    suite.makepyfile(test_inner=HEADER + "\n@pytest.mark.cassette\ndef test_a():\n    lookup('A-1')\n")
    suite.runpytest().assert_outcomes(passed=1)
    before = run_stats.to_json()
    inner = suite.runpytest("--cassette-mode=replay")
    inner.assert_outcomes(passed=1)
    inner.stdout.fnmatch_lines(["*replayed: 1 cassette(s), 1 tool calls served*"])  # its own summary
    assert run_stats.to_json() == before


def test_tests_sharing_a_cassette_share_its_failed_recording(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: each failing test overwrote the shared <name>.failed.json, and a passing one deleted
    it, so a run kept the calls of the last failing test at most."""
    suite.makepyfile(
        test_module=HEADER
        + """
pytestmark = pytest.mark.cassette("module")

@pytest.mark.parametrize("order", ["A-1", "B-2", "C-3"])
def test_each(order):
    lookup(order)
    assert order not in os.environ.get("BROKEN", "").split(",")

def test_skipped_before_any_call():
    if os.environ.get("BROKEN"):
        pytest.skip("nothing to do")
    lookup("D-4")
"""
    )
    failed = suite.path / "tests" / "cassettes" / "module.failed.json"

    def kept() -> list[tuple[str, str]]:
        if not failed.exists():
            return []
        doc = json.loads(failed.read_text(encoding="utf-8"))
        assert [i["seq"] for i in doc["interactions"]] == list(range(len(doc["interactions"])))
        return sorted(
            (i["test"].split("::")[-1], i["request"]["arguments"]["order_id"]) for i in doc["interactions"]
        )

    monkeypatch.setenv("BROKEN", "A-1,C-3")
    result = suite.runpytest("--cassette-mode=record")
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    assert kept() == [("test_each[A-1]", "A-1"), ("test_each[C-3]", "C-3")]
    result.stdout.fnmatch_lines(["*(and 1 failed recording(s) kept in *.failed.json)*"])

    # A-1 fixed: its calls leave the failed recording, C-3's stay
    monkeypatch.setenv("BROKEN", "C-3")
    suite.runpytest("--cassette-mode=record", "-k", "A-1").assert_outcomes(passed=1, deselected=3)
    assert kept() == [("test_each[C-3]", "C-3")]
    # the last one fixed: the file goes
    monkeypatch.delenv("BROKEN")
    suite.runpytest("--cassette-mode=record").assert_outcomes(passed=4)
    assert not failed.exists()
