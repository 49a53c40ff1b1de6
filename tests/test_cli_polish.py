"""Small promises of the command line: the hooks `init` writes, what `verify` catches, one-line errors.

Real parts throughout: cassettes recorded with the OpenAI SDK against the local dev
server, git repositories made with git, the real pre-commit running the hooks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from openai import OpenAI

import cassette
from cassette.core.layout import manifest_json
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer
from tests.agent_helpers import run_agent
from tests.cli_helpers import one_line_error, run_cli

CASSETTE = Path("tests/cassettes/c.json")
QUESTION = "My card was charged twice for order A-1"


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


def client(devserver: DevServer) -> OpenAI:
    return cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))


# --- init: the drift hook is verbose ----------------------------------------------------------------


def test_init_makes_the_drift_hook_verbose_so_pre_commit_shows_its_summary(
    devserver: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    git("init", "-q")
    assert run_cli(capsys, "init", "--repo", "system")[0] == 0  # the hook runs the `python` on PATH
    doc = yaml.safe_load(Path(".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for h in doc["repos"][0]["hooks"]}
    assert set(hooks) == {"cassette"} and hooks["cassette"]["verbose"] is True  # the one-process hook
    Path(".pre-commit-config.yaml").unlink()
    assert run_cli(capsys, "init", "--repo", "system", "--separate-hooks")[0] == 0
    separate = {
        h["id"]: h for h in yaml.safe_load(Path(".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    }
    assert separate["cassette-drift"]["verbose"] is True
    assert "verbose" not in separate["cassette-secrets"] and "verbose" not in separate["cassette-verify"]
    Path(".pre-commit-config.yaml").unlink()
    assert run_cli(capsys, "init", "--repo", "system")[0] == 0

    with cassette.using(CASSETTE, mode="record"):
        run_agent(client(devserver), QUESTION)
    git("add", "-A")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # the `cassette` script
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
    }
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("pre-commit")), "run", "cassette"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout
    # a passing hook's output is shown only because the hook is verbose
    assert f"{CASSETTE}: added" in proc.stdout and "not in the earlier recording" in proc.stdout


# --- verify: a response replay cannot rebuild is a problem ------------------------------------------


@pytest.fixture
def agent_run(devserver: DevServer) -> dict[str, Any]:
    """LLM turns and a tool call, recorded in the cassette dir; returns the manifest document."""
    with cassette.using(CASSETTE, mode="record"):
        run_agent(client(devserver), QUESTION)
    doc: dict[str, Any] = json.loads(CASSETTE.read_text())
    return doc


def _no_body(response: dict[str, Any]) -> None:
    for key in ("json", "text", "base64", "events"):
        response.pop(key, None)


def _bad_base64(response: dict[str, Any]) -> None:
    _no_body(response)
    response["base64"] = "!!!notb64"


CORRUPTIONS = {
    "status-a-string": (
        lambda r: r.update(status="200"),
        "its status '200' is not an HTTP status code (100-999)",
    ),
    "no-body": (_no_body, "it has no body (none of `json`, `text`, `base64`, `events`)"),
    "events-of-numbers": (
        lambda r: r.update(events=[1, 2, 3]),
        "its `events[0]` is not a string of text (int: '1')",
    ),
    "headers-a-list": (
        lambda r: r.update(headers=["a"]),
        "its `headers` is a list, not an object of header names",
    ),
    "base64-not-base64": (_bad_base64, "its `base64` body is not valid base64 ("),
    "json-layout-unknown": (
        lambda r: r.update(json_layout="tabs+newline"),
        "its `json_layout` 'tabs+newline' is not one this version writes",
    ),
    "json-layout-a-number": (
        lambda r: r.update(json_layout=2),
        "its `json_layout` is a int, not a string",
    ),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_verify_reports_a_response_replay_cannot_rebuild(
    name: str, agent_run: dict[str, Any], devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert [i["kind"] for i in agent_run["interactions"]] == ["llm", "tool", "llm"]
    code, out, _ = run_cli(capsys, "verify")
    assert code == 0 and out.endswith(": OK\n")  # tool records ({result}) are not HTTP responses

    corrupt, reason = CORRUPTIONS[name]
    corrupt(agent_run["interactions"][2]["response"])
    CASSETTE.write_bytes(manifest_json(agent_run))

    code, out, err = run_cli(capsys, "verify")
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"FAILED  {CASSETTE}"
    assert lines[1].startswith(
        "  - interactions[2].response: the recorded response of interaction #2 cannot be replayed: "
    )
    assert reason in lines[1]
    assert lines[1].endswith(f"Restore the cassette from git (git checkout -- {CASSETTE}) or re-record it.")
    assert lines[2].startswith("verified 1 cassette(s), ") and lines[2].endswith(": 1 with problems")

    report = json.loads(run_cli(capsys, "verify", "--format", "json", str(CASSETTE))[1])
    [problem] = report["files"][0]["problems"]
    assert problem["where"] == "interactions[2].response" and reason in problem["message"]

    # replay refuses the same record
    with pytest.raises(cassette.CassetteShapeError, match=r"recorded response #2 cannot be replayed"):
        with cassette.using(CASSETTE, mode="replay"):
            run_agent(client(devserver), QUESTION)


def test_verify_reads_a_response_through_its_blobs_as_replay_does(
    devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    messages: Any = [{"role": "user", "content": "stream a greeting"}]
    with cassette.using(CASSETTE, mode="record"):
        stream: Any = client(devserver).chat.completions.create(
            model="gpt-4o-mini", messages=messages, stream=True
        )
        "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    doc = json.loads(CASSETTE.read_text())
    events = doc["interactions"][0]["response"]["events"]
    store = BlobStore(Path("tests/cassettes/.blobs"))
    events[0] = {"$blob": store.put(events[0].encode())}  # a text blob: hydrates to the same event
    CASSETTE.write_bytes(manifest_json(doc))
    assert run_cli(capsys, "verify")[0] == 0

    events[1] = {"$blob": store.put(b"12"), "$json": True}  # intact, but it hydrates to a number
    CASSETTE.write_bytes(manifest_json(doc))
    code, _, err = run_cli(capsys, "verify")
    assert code == 1
    assert "interaction #0 cannot be replayed: its `events[1]` is not a string of text (int: '12')" in err
    with pytest.raises(cassette.CassetteShapeError, match=r"recorded response #0 cannot be replayed"):
        with cassette.using(CASSETTE, mode="replay"):
            client(devserver).chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)


# --- one-line errors and exit codes -----------------------------------------------------------------


def test_verify_of_a_path_that_is_not_there_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "verify", "nope.json")
    assert code == 2 and out == ""  # 2: input error, as `cassette --help` and docs/pytest.md say
    line = one_line_error(err, "verify")
    assert line.startswith("cassette verify: error: no such file or directory: nope.json. Check the path")


def test_scan_and_textconv_name_themselves_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "scan", "nope")
    assert code == 2
    assert (
        one_line_error(err, "scan")
        == "cassette scan: error: no such file or directory: nope. Check the path."
    )
    code, out, err = run_cli(capsys, "textconv", "nope.json")
    assert code == 2 and out == ""
    assert (
        one_line_error(err, "textconv") == "cassette textconv: error: no such file nope.json. Check the path."
    )


def test_an_unknown_option_is_reported_under_its_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "install-hooks", "--bogus")
    assert code == 2 and out == ""
    assert err.startswith("usage: cassette install-hooks ")
    assert err.endswith("cassette install-hooks: error: unrecognized arguments: --bogus\n")
    code, _, err = run_cli(capsys, "--bogus")  # no command: the top level reports it
    assert code == 2 and err.endswith("cassette: error: unrecognized arguments: --bogus\n")


def test_drift_names_an_unknown_revision_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    git("init", "-q")
    git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one")
    for spec in ("nope", "nope..HEAD", "HEAD..nope"):
        code, _, err = run_cli(capsys, "drift", "--rev", spec)
        assert code == 2
        line = one_line_error(err, "drift")
        assert "has no commit 'nope'. Pass a branch, tag, sha or HEAD~N" in line and "b'" not in line, spec
    code, _, err = run_cli(capsys, "drift", "--rev", "HEAD~3")
    assert code == 2 and "has no commit 'HEAD~3' (not that many parents)" in err


def test_show_of_a_missing_file_says_to_check_the_path(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", "nope.json")
    assert code == 2 and out == ""
    line = one_line_error(err, "show")
    assert line.startswith(f"cassette show: error: no cassette at {Path('nope.json').resolve()}: ")
    assert "does not exist. Check the path" in line
    assert "CASSETTE_MODE" not in line and "Record it" not in line


@pytest.mark.parametrize("width", ["-3", "0", "7", "wide"])
def test_show_refuses_a_width_no_excerpt_fits(width: str, capsys: pytest.CaptureFixture[str]) -> None:
    # before: a negative width was taken, and excerpts were cut to one character
    code, out, err = run_cli(capsys, "show", "--width", width, "nope.json")
    assert code == 2 and out == "" and "--width" in err
