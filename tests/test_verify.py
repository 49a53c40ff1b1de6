"""`cassette verify`: manifests parse, blobs are present, hash-correct and (with --staged) staged."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.cli import main
from cassette.core.canonical import canonical_json
from cassette.maintenance.verify import verify_paths, verify_staged
from cassette.store.blobs import BlobStore

CASSETTE = Path("tests/cassettes/triage.json")
STORE = Path("tests/cassettes/.blobs")


def write_cassette(path: Path = CASSETTE, *, nested: bool = True) -> dict[str, str]:
    """A manifest with a text blob and a JSON blob that itself references a text blob."""
    store = BlobStore(STORE)
    ids = {"prompt": store.put(b"You are a careful support agent. " * 20)}
    ids["inner"] = store.put(b"a tool schema description, long enough to be a blob " * 10)
    message = (
        {"role": "tool", "content": {"$blob": ids["inner"]}} if nested else {"role": "tool", "content": "x"}
    )
    ids["json"] = store.put(canonical_json(message))
    request = {
        "kind": "llm",
        "messages": [
            {"role": "system", "content": {"$blob": ids["prompt"]}},
            {"$blob": ids["json"], "$json": True},
        ],
    }
    doc = {
        "version": 1,
        "interactions": [
            {
                "seq": 0,
                "kind": "llm",
                "key": "k0",
                "request": request,
                "response": {"status": 200, "text": ""},
            }
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    return ids


def blob_file(blob_id: str) -> Path:
    return STORE / blob_id[:2] / blob_id[2:]


# --- on disk -------------------------------------------------------------------------------------


def test_a_sound_cassette_passes(capsys: pytest.CaptureFixture[str]) -> None:
    write_cassette()
    report = verify_paths(["tests/cassettes"])
    assert report.ok and [f.file for f in report.files] == [str(CASSETTE)]
    assert report.files[0].blobs == 3  # the prompt, the JSON blob, and the text blob inside it
    assert main(["verify"]) == 0
    assert capsys.readouterr().out == "verified 1 cassette(s), 3 blob(s): OK\n"  # one line, so it visibly ran
    assert main(["verify", "-v"]) == 0
    assert "ok      tests/cassettes/triage.json (1 interactions, 3 blobs)" in capsys.readouterr().out


def test_the_success_line_counts_a_shared_blob_once_and_failure_keeps_exit_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = write_cassette()
    write_cassette(CASSETTE.with_name("refund.json"))  # the same three blobs, referenced again
    assert main(["verify"]) == 0
    out = capsys.readouterr()
    assert out.out == "verified 2 cassette(s), 3 blob(s): OK\n" and out.err == ""
    blob_file(ids["prompt"]).unlink()
    assert main(["verify"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err.splitlines()[-1] == "verified 2 cassette(s), 3 blob(s): 2 with problems"


@pytest.mark.parametrize("damage", ["missing", "tampered", "missing-inside-json-blob", "bad-ref"])
def test_each_broken_reference_is_reported_with_its_path(
    damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = write_cassette()
    where = "interactions[0].request.messages[0].content"
    if damage == "missing":
        blob_file(ids["prompt"]).unlink()
        expected = f"blob {ids['prompt']} is missing"
    elif damage == "tampered":
        blob_file(ids["prompt"]).write_bytes(b"changed by hand")
        expected = "does not match its hash"
    elif damage == "missing-inside-json-blob":
        blob_file(ids["inner"]).unlink()
        where = "interactions[0].request.messages[1].content"
        expected = f"blob {ids['inner']} is missing"
    else:
        doc = json.loads(CASSETTE.read_text())
        doc["interactions"][0]["request"]["messages"][0]["content"] = {"$blob": "../../etc/passwd"}
        CASSETTE.write_text(json.dumps(doc))
        expected = "invalid blob reference"
    report = verify_paths([CASSETTE])
    [problem] = report.problems
    assert problem.where == where and expected in problem.message
    assert main(["verify", str(CASSETTE)]) == 1
    err = capsys.readouterr().err
    assert f"FAILED  {CASSETTE}" in err and where in err and "1 with problems" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "is empty"),
        (b'{"version": 1, "interactions": [', "truncated"),
        (b'{"version": 9, "interactions": []}', "format version 9"),
        (b'{"interactions": []}', "no integer `version`"),
    ],
)
def test_a_damaged_manifest_is_reported(content: bytes, expected: str) -> None:
    CASSETTE.parent.mkdir(parents=True)
    CASSETTE.write_bytes(content)
    [problem] = verify_paths(["tests/cassettes"]).problems
    assert expected in problem.message


def test_temp_files_and_other_json_are_ignored_in_a_directory(capsys: pytest.CaptureFixture[str]) -> None:
    write_cassette()
    (CASSETTE.parent / ".triage.json.1234.abcd.tmp").write_text('{"version": 1, "interactions": [')
    (CASSETTE.parent / "fixture.json").write_text('{"not": "a cassette"}')
    report = verify_paths(["tests/cassettes"])
    assert report.ok and len(report.files) == 1
    assert main(["verify", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["files"][0]["blobs"] == 3


def test_a_missing_path_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    [problem] = verify_paths(["tests/cassettes/nope.json"]).problems
    assert "no such file" in problem.message
    assert main(["verify"]) == 0  # no cassette directory yet: nothing to verify, said so
    assert "nothing to verify" in capsys.readouterr().err
    assert main(["scan"]) == 0
    assert "nothing to scan" in capsys.readouterr().err


def test_a_recorded_cassette_verifies(devserver: Any) -> None:
    from openai import OpenAI

    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    with cassette.using(CASSETTE, mode="record", blob_threshold=64):
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": "Be brief. " * 30}, {"role": "user", "content": "hello"}],
        )
    report = verify_paths([CASSETTE])
    assert report.ok and report.files[0].blobs >= 1


# --- staged --------------------------------------------------------------------------------------


def git(*args: str) -> None:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
    subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env)


@pytest.fixture
def repo() -> Path:
    git("init", "-q", "-b", "main", ".")
    git("config", "user.name", "T")
    git("config", "user.email", "t@example.com")
    return Path.cwd()


def test_a_cassette_staged_without_its_blobs_fails(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = write_cassette()
    git("add", str(CASSETTE))
    report = verify_staged()
    assert not report.ok
    assert {p.blob for p in report.problems} == {
        ids["prompt"],
        ids["json"],
    }  # inner unknown until json staged
    assert all("on disk but not staged" in p.message and "git add" in p.message for p in report.problems)
    assert main(["verify", "--staged"]) == 1
    assert "FAILED  tests/cassettes/triage.json" in capsys.readouterr().err
    git("add", str(STORE))
    assert verify_staged().ok
    assert main(["verify", "--staged"]) == 0


def test_a_blob_neither_staged_nor_on_disk_and_a_tampered_staged_blob(repo: Path) -> None:
    ids = write_cassette()
    git("add", "-A")
    git("commit", "-q", "-m", "sound")
    blob_file(ids["prompt"]).write_bytes(b"edited")
    git("add", "-A")  # the edited payload is staged under its old name
    doc = json.loads(CASSETTE.read_text())
    doc["interactions"][0]["response"] = {"status": 200, "text": {"$blob": "f" * 40}}
    CASSETTE.write_text(json.dumps(doc))
    git("add", str(CASSETTE))
    messages = {p.blob: p.message for p in verify_staged().problems}
    assert "does not hash to its name" in messages[ids["prompt"]]
    assert "neither staged nor on disk" in messages["f" * 40]


def test_deleting_a_blob_that_an_unchanged_cassette_uses_fails(repo: Path) -> None:
    ids = write_cassette()
    git("add", "-A")
    git("commit", "-q", "-m", "sound")
    git("rm", "-q", "--cached", str(blob_file(ids["prompt"])))  # a careless cleanup of the store
    [problem] = verify_staged().problems
    assert problem.blob == ids["prompt"] and problem.file == str(CASSETTE)


def test_verify_staged_outside_a_repository_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--staged"]) == 2
    assert "not inside a git work tree" in capsys.readouterr().err
