"""Odd inputs on the command line: a non-table `tool`, a FIFO for textconv, a file name that is not UTF-8.

Each ends in a one-line error naming the file, or (for --format json) in valid JSON.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
from pathlib import Path

import pytest

import cassette
from cassette.cli import main
from tests.cli_helpers import one_line_error, run_cli
from tests.secret_helpers import random_key

ODD_NAME = os.fsdecode(b"c\xff.json")  # a name the file system holds but UTF-8 cannot decode
needs_bytes_names = pytest.mark.skipif(
    sys.platform in ("darwin", "win32"), reason="the file system takes only valid UTF-8 names"
)


@cassette.tool
def small(x: int) -> dict[str, int]:
    return {"x": x}


# --- init: a pyproject.toml whose `tool` is not a table ---------------------------------------------


@pytest.mark.parametrize("value", ["5", "1979-05-27", "true"])
def test_init_with_a_tool_value_that_is_not_a_table_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    Path("pyproject.toml").write_text(f'name = "x"\ntool = {value}\n')
    code, out, err = run_cli(capsys, "init", ".")
    assert code == 2 and out == ""
    line = one_line_error(err, "init")
    assert "pyproject.toml" in line and "`tool` must be a table" in line
    assert "remove or rename its top-level `tool = ...` value" in line
    assert Path("pyproject.toml").read_text() == f'name = "x"\ntool = {value}\n'  # left as it was


# --- textconv: a path that is not a regular file ----------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_textconv_on_a_fifo_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "c.json"
    os.mkfifo(fifo)
    result: dict[str, int] = {}
    # Run in a thread: before the fix textconv blocked opening the FIFO; a timed-out test must not hang.
    worker = threading.Thread(target=lambda: result.update(code=main(["textconv", "c.json"])))
    worker.daemon = True
    worker.start()
    worker.join(10)
    if worker.is_alive():  # release the blocked open so the thread ends, then fail
        with open(fifo, "wb"):
            pass
        worker.join(10)
        pytest.fail("cassette textconv blocked on a FIFO")
    out, err = capsys.readouterr()
    assert result["code"] == 2 and out == ""
    line = one_line_error(err, "textconv")
    assert "c.json" in line and "it is a FIFO (named pipe), not a regular file" in line


# --- --format json with a file name that is not UTF-8 -------------------------------------------------


@needs_bytes_names
def test_verify_json_with_a_non_utf8_file_name_is_valid_json(capsys: pytest.CaptureFixture[str]) -> None:
    Path("pyproject.toml").write_text("")
    with cassette.using("good.json", mode="record"):
        small(1)
    Path("cassettes").mkdir()
    Path("cassettes/good.json").write_bytes(Path("good.json").read_bytes())
    Path("cassettes", ODD_NAME).write_bytes(Path("good.json").read_bytes())
    code, out, err = run_cli(capsys, "verify", "--format", "json", "cassettes")
    assert code == 0, err
    files = sorted(f["file"] for f in json.loads(out)["files"])
    assert files == [str(Path("cassettes", "c\\xff.json")), str(Path("cassettes", "good.json"))]


@needs_bytes_names
def test_scan_json_with_a_non_utf8_file_name_is_valid_json(capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(7)
    key = f"sk-proj-{random_key(rng, 58)}T3BlbkFJ{random_key(rng, 58)}"
    Path("secrets").mkdir()
    for name in (ODD_NAME, "plain.json"):
        Path("secrets", name).write_text(json.dumps({"env": {"OPENAI_API_KEY": key}}))
    code, out, err = run_cli(capsys, "scan", "--format", "json", "secrets")
    assert code == 1, err
    found = json.loads(out)
    assert sorted(f["file"] for f in found) == [
        str(Path("secrets", "c\\xff.json")),
        str(Path("secrets", "plain.json")),
    ]
    assert all(f["rule"] == "openai-api-key" for f in found)
