"""Bad inputs on the command line: every one ends in a one-line error (or, for textconv, the file as is).

Real cassettes are recorded in the test's directory, then corrupted on disk the
way a bad merge, a hand edit or a damaged blob store would leave them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

import cassette
from cassette.cli import main
from cassette.core.canonical import ordered_json
from cassette.core.layout import manifest_json
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer
from tests.cli_helpers import one_line_error, run_cli

LONG_NAME = "a" * 300 + ".json"  # longer than any file system allows (ENAMETOOLONG)


@cassette.tool
def small(x: int) -> dict[str, int]:
    return {"x": x}


@cassette.tool
def big(n: int) -> str:
    return "B" * 800


@pytest.fixture
def tools_cassette() -> Path:
    """Two tool calls; the second returns a string big enough to live in a text blob."""
    Path("pyproject.toml").write_text("")  # the project root: the blob store is ./.blobs
    with cassette.using("c.json", mode="record"):
        small(1)
        big(2)
    return Path("c.json")


def read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def write(path: Path, doc: dict[str, Any]) -> None:
    path.write_bytes(manifest_json(doc))


def blob_path(blob_id: str) -> Path:
    return Path(".blobs") / blob_id[:2] / blob_id[2:]


# --- textconv never fails on a file it can read ----------------------------------------------------


def test_textconv_shows_a_non_utf8_text_blob(
    tools_cassette: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    blob = read(tools_cassette)["interactions"][1]["response"]["result"]["$blob"]
    blob_path(blob).write_bytes(b"\xff\xfe garbage")
    assert main(["textconv", str(tools_cassette)]) == 0
    out = capsysbinary.readouterr().out
    assert b"garbage" in out and b'"version": 1' in out


def test_textconv_prints_a_deeply_nested_cassette(
    tools_cassette: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    raw = tools_cassette.read_bytes()
    deep = raw.replace(b'{"result": {"x": 1}}', b'{"result": ' + b"[" * 600 + b"]" * 600 + b"}")
    assert deep != raw
    tools_cassette.write_bytes(deep)
    assert main(["textconv", str(tools_cassette)]) == 0
    assert b"[" * 600 in capsysbinary.readouterr().out


@pytest.mark.parametrize("name", [".", LONG_NAME, "c.json/inside.json"])
def test_textconv_on_a_path_it_cannot_read_is_a_one_line_error(
    tools_cassette: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, out, err = run_cli(capsys, "textconv", name)
    assert code == 2 and out == ""
    assert name in one_line_error(err, "textconv")


# --- show: malformed but parseable records ---------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "shown"),
    [
        ({"error": "boom"}, "raised boom"),
        ({"error": ["a", 1]}, 'raised ["a",1]'),
        ({"result": json.loads("[" * 300 + "]" * 300)}, "[[[["),
    ],
)
def test_show_renders_odd_tool_records(
    tools_cassette: Path, capsys: pytest.CaptureFixture[str], response: dict[str, Any], shown: str
) -> None:
    doc = read(tools_cassette)
    doc["interactions"][0]["response"] = response
    tools_cassette.write_text(json.dumps(doc))
    code, out, err = run_cli(capsys, "show", str(tools_cassette))
    assert code == 0, err
    assert shown in out.splitlines()[1]


@pytest.fixture
def stream_cassette(devserver: DevServer) -> Path:
    """One streamed chat completion."""
    Path("pyproject.toml").write_text("")
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    with cassette.using("s.json", mode="record"):
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "stream a greeting"}], stream=True
        )
        for _ in stream:
            pass
    return Path("s.json")


def _sse(*events: Any) -> list[str]:
    return [f"data: {json.dumps(e)}\n\n" for e in events]


@pytest.mark.parametrize(
    ("response", "shown"),
    [
        ({"status": 200, "base64": 12345}, None),  # not a string: no byte count
        ({"status": 200, "base64": ["x"]}, None),
        (
            {
                "status": 200,
                "events": _sse(
                    {"choices": [{"delta": "not an object"}]},
                    {"choices": [{"delta": {"content": "hi", "tool_calls": ["x", {"function": "f"}]}}]},
                    {"choices": "nope"},
                    {"type": "content_block_delta", "delta": "x"},
                    {"type": "content_block_start", "content_block": 3},
                    {"type": "response.output_item.added", "item": []},
                ),
            },
            "hi",
        ),
    ],
)
def test_show_renders_odd_llm_responses(
    stream_cassette: Path, capsys: pytest.CaptureFixture[str], response: dict[str, Any], shown: str | None
) -> None:
    doc = read(stream_cassette)
    doc["interactions"][0]["response"] = response
    stream_cassette.write_text(json.dumps(doc))
    code, out, err = run_cli(capsys, "show", str(stream_cassette))
    assert code == 0, err
    line = out.splitlines()[1]
    if shown is None:
        assert line.rstrip().endswith("->")
    else:
        assert line.rstrip().endswith(f"->  {shown}")


@pytest.mark.parametrize("field", ["request", "response"])
def test_show_on_a_record_that_is_a_text_blob_is_a_shape_error(
    tools_cassette: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    doc = read(tools_cassette)
    text_ref = doc["interactions"][1]["response"]["result"]  # {"$blob": id}: hydrates to a string
    doc["interactions"][0][field] = text_ref
    write(tools_cassette, doc)
    code, out, err = run_cli(capsys, "show", str(tools_cassette))
    assert code == 2 and out == ""
    line = one_line_error(err, "show")
    assert str(tools_cassette) in line and "interaction #0" in line and "re-record" in line


def test_show_turns_any_unexpected_shape_into_a_one_line_error(
    stream_cassette: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = read(stream_cassette)
    doc["interactions"][0]["response"] = {"status": 200, "json": {"choices": [{"message": "a string"}]}}
    stream_cassette.write_text(json.dumps(doc))
    code, out, err = run_cli(capsys, "show", str(stream_cassette))
    assert code == 2 and out == ""
    line = one_line_error(err, "show")
    assert str(stream_cassette) in line and "restore the cassette from git or re-record it" in line.lower()


# --- paths the system cannot read --------------------------------------------------------------------


def test_verify_reports_a_name_too_long_as_a_problem(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "verify", LONG_NAME)
    assert code == 2 and "Traceback" not in err
    assert "cannot read" in err and LONG_NAME in err


@pytest.mark.parametrize(
    "argv", [["ls", LONG_NAME], ["gc", LONG_NAME], ["scan", LONG_NAME], ["accept", LONG_NAME]]
)
def test_a_name_too_long_is_a_one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert LONG_NAME in one_line_error(err, argv[0])


# --- verify walks blob chains as hydration does ------------------------------------------------------


@pytest.fixture
def chain_cassette(devserver: DevServer) -> Path:
    """One chat call whose five messages are stored as a blob chain."""
    Path("pyproject.toml").write_text("")
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    messages = [{"role": "system", "content": "s " * 300}] + [
        {"role": "user", "content": f"q{i} " * 40} for i in range(4)
    ]
    with cassette.using("c.json", mode="record"):
        client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
    assert read(Path("c.json"))["interactions"][0]["request"]["messages"]["$chain"] == 5
    return Path("c.json")


def _last_node(ref: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = json.loads(blob_path(ref["$blob"]).read_bytes())
    return node


def _corrupt(ref: dict[str, Any], how: str) -> None:
    store = BlobStore(Path(".blobs"))
    node = _last_node(ref)
    if how == "node is a list":
        ref["$blob"] = store.put(ordered_json([1, 2]))
    elif how == "node is a string":
        ref["$blob"] = store.put(ordered_json("abc"))
    elif how == "node has an extra field":
        ref["$blob"] = store.put(ordered_json({**node, "x": 1}))
    elif how == "length lies":
        ref["$chain"] = 1_000_000
    elif how == "length is zero":
        ref["$chain"] = 0
    else:
        prev = {
            "prev is a string": "abc",
            "prev is an int": 5,
            "prev is a text reference": {"$blob": node["prev"]["$blob"]},
        }[how]
        ref["$blob"] = store.put(ordered_json({"item": node["item"], "prev": prev}))


@pytest.mark.parametrize(
    "how",
    [
        "node is a list",
        "node is a string",
        "node has an extra field",
        "prev is a string",
        "prev is an int",
        "prev is a text reference",
        "length lies",
        "length is zero",
    ],
)
def test_verify_rejects_a_broken_chain_that_replay_rejects(
    chain_cassette: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    assert run_cli(capsys, "verify", str(chain_cassette))[0] == 0
    doc = read(chain_cassette)
    _corrupt(doc["interactions"][0]["request"]["messages"], how)
    write(chain_cassette, doc)
    loaded = cassette.load_cassette(chain_cassette)
    with pytest.raises(cassette.BlobError):
        loaded.hydrate(loaded.interactions[0].request)
    code, _, err = run_cli(capsys, "verify", str(chain_cassette))
    assert code == 1, err
    assert "FAILED  c.json" in err and "interactions[0].request.messages" in err
    assert "Traceback" not in err


def test_verify_reports_a_missing_chain_node_once(
    chain_cassette: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = read(chain_cassette)["interactions"][0]["request"]["messages"]
    node = _last_node(ref)["prev"]["$blob"]
    blob_path(node).unlink()
    code, _, err = run_cli(capsys, "verify", str(chain_cassette))
    assert code == 1
    assert err.count(node) == 1, err


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs here")
def test_accept_on_a_fifo_says_what_it_is_and_ls_lists_a_dangling_link(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import os

    Path("tests/cassettes").mkdir(parents=True)
    os.mkfifo("tests/cassettes/x.pending.json")
    code, _, err = run_cli(capsys, "accept", "tests/cassettes/x.pending.json")
    assert code == 2
    assert "is a FIFO (named pipe), not a cassette file: nothing was accepted" in one_line_error(
        err, "accept"
    )
    os.symlink("nowhere.json", "tests/cassettes/dangling.json")
    code, out, err = run_cli(capsys, "ls", "tests/cassettes")
    assert code == 1 and "Traceback" not in err  # listed as unreadable, not a crash
    assert "dangling.json" in out and "UNREADABLE" in out and "x.pending.json" in out
