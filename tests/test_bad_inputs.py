"""Bad inputs found by fuzzing: each raises a specific `CassetteError` naming the file, never a stray
AttributeError / TypeError / OSError, and never replays something other than what was recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
import pytest

import cassette
from cassette.core.layout import manifest_json
from cassette.testing.devserver import DevServer


@cassette.tool
def small(x: int) -> dict[str, int]:
    return {"x": x}


@cassette.tool
def big(n: int) -> str:
    return "B" * 800  # over the blob threshold: stored as a text blob


@dataclass
class Order:
    id: str
    total: int = field(init=False, default=0)


@cassette.tool
def order(order_id: str) -> Order:
    found = Order(order_id)
    found.total = 42
    return found


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A tools cassette (one small result, one text blob) in the lazy layout, and its manifest."""
    (tmp_path / "pyproject.toml").write_text("")  # the project root: blobs go to <tmp>/.blobs
    path = tmp_path / "c.json"
    with cassette.using(path, mode="record"):
        small(1)
        big(2)
        order("A1")
    return path, json.loads(path.read_text())


def _save(path: Path, doc: dict[str, Any]) -> None:
    path.write_bytes(manifest_json(doc))  # the layout cassette writes, so replay opens it lazily


def test_a_response_that_hydrates_to_a_non_object(recorded: tuple[Path, dict[str, Any]]) -> None:
    path, doc = recorded
    blob = doc["interactions"][1]["response"]["result"]["$blob"]
    doc["interactions"][0]["response"] = {"$blob": blob}  # hydrates to a str
    _save(path, doc)
    with pytest.raises(cassette.CassetteShapeError) as caught:
        with cassette.using(path, mode="replay"):
            small(1)
    message = str(caught.value)
    assert str(path) in message and "interactions[0]" in message and "not an object" in message
    assert "re-record" in message and caught.value.path == str(path)


def test_paths_that_cannot_be_read_or_written(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    under_a_file = blocker / "c.json"
    with pytest.raises(cassette.CassetteNotFoundError) as not_found:
        cassette.load_cassette(under_a_file)
    assert str(under_a_file) in str(not_found.value) and "Fix the cassette path" in str(not_found.value)

    too_long = tmp_path / ("a" * 5000 + ".json")
    with pytest.raises(cassette.CassetteIOError, match="Check the path") as io_error:
        cassette.load_cassette(too_long)
    assert str(tmp_path) in str(io_error.value)

    with pytest.raises(cassette.CassetteIOError, match="null byte"):
        cassette.load_cassette(str(tmp_path / "a\x00b.json"))
    with pytest.raises(cassette.CassetteConfigError, match="NUL byte"):
        cassette.using(str(tmp_path / "a\x00b.json"), mode="record")

    for mode in ("auto", "record"):  # the cassette's directory would have to replace a file
        with pytest.raises(cassette.CassetteIOError) as write_error:
            with cassette.using(under_a_file, mode=mode):
                small(1)
        message = str(write_error.value)
        assert str(under_a_file) in message and str(blocker) in message
        assert "cannot be created or written" in message and "record again" in message


@pytest.mark.parametrize(
    ("pyproject", "says"),
    [
        ('tool = "x"\n', "`tool` must be a table"),
        ("[tool]\ncassette = 5\n", r"\[tool.cassette\] must be a table. Fix that file"),
        ('[tool.cassette]\ncassette_dir = "a\\u0000b"\n', "cassette_dir must be a string without NUL"),
        ('[tool.cassette]\nstore = "a\\u0000b"\n', "store must be a string without NUL"),
    ],
    ids=["tool-a-string", "cassette-an-integer", "nul-in-cassette-dir", "nul-in-store"],
)
def test_a_pyproject_of_the_wrong_shape(tmp_path: Path, pyproject: str, says: str) -> None:
    (tmp_path / "pyproject.toml").write_text(pyproject)
    with pytest.raises(cassette.CassetteConfigError, match=says) as caught:
        cassette.using("c.json", mode="replay")
    assert str((tmp_path / "pyproject.toml").resolve()) in str(caught.value)
    assert "Fix" in str(caught.value)


def test_a_recorded_value_whose_rebuild_raises_anything(recorded: tuple[Path, dict[str, Any]]) -> None:
    path, doc = recorded
    assert pydantic.BaseModel  # imported: replay looks the class up, and BaseModel refuses to be built
    doc["interactions"][0]["response"] = {"result": {"$pydantic": "pydantic:BaseModel", "data": 5}}
    _save(path, doc)
    with pytest.raises(cassette.CassetteShapeError, match="cannot be rebuilt") as caught:
        with cassette.using(path, mode="replay"):
            small(1)
    assert str(path) in str(caught.value) and "Re-record" in str(caught.value)


@pytest.mark.parametrize(
    "response",
    [
        {"resutl": {"x": 1}},
        {},
        {"result": {"$dataclass": f"{__name__}:Order", "fields": {"zz": 1}}},
        {"result": {"$dataclass": f"{__name__}:Order", "fields": {"total": 1}}},
        {"result": {"$dataclass": f"{__name__}:Order"}},
        {"result": {"$dataclass": f"{__name__}:Order", "fields": [1]}},
        {"result": {"$dataclass": 5, "fields": {"id": "A1"}}},
        {"result": {"$pydantic": 5, "data": {}}},
    ],
    ids=[
        "misspelt-result",
        "empty",
        "dataclass-unknown-field",
        "dataclass-missing-field",
        "dataclass-no-fields",
        "dataclass-fields-a-list",
        "dataclass-name-an-int",
        "pydantic-name-an-int",
    ],
)
def test_a_recorded_tool_outcome_of_the_wrong_shape(
    recorded: tuple[Path, dict[str, Any]], response: dict[str, Any]
) -> None:
    path, doc = recorded
    with cassette.using(path, mode="replay"):  # the real recording: init=False fields are set directly
        rebuilt = order("A1")
    assert isinstance(rebuilt, Order) and (rebuilt.id, rebuilt.total) == ("A1", 42)
    doc["interactions"][0]["response"] = response
    _save(path, doc)
    with pytest.raises(cassette.CassetteShapeError) as caught:
        with cassette.using(path, mode="replay"):
            small(1)
    assert str(path) in str(caught.value) and caught.value.path == str(path)
    assert "re-record" in str(caught.value).lower()


CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi " * 300}]}


def _record_chat(devserver: DevServer, path: Path) -> dict[str, Any]:
    client = cassette.http_client(base_url=devserver.openai_base_url)
    with cassette.using(path, mode="record"):
        client.post("/chat/completions", json=CHAT).raise_for_status()
    return json.loads(path.read_text())


def _replay_chat(devserver: DevServer, path: Path) -> Any:
    client = cassette.http_client(base_url=devserver.openai_base_url)
    with cassette.using(path, mode="replay"):
        return client.post("/chat/completions", json=CHAT)


def test_an_escaped_blob_key_is_hydrated_in_the_lazy_layout(devserver: DevServer, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "c.json"
    doc = _record_chat(devserver, path)
    blob = doc["interactions"][0]["request"]["messages"][0]["content"]["$blob"]
    raw = path.read_bytes()
    assert b'"service_tier": "default"' in raw
    # the same JSON as {"$blob": ...}, its key written with an escape
    escaped = b'"service_tier": {"\\u0024blob": "%s"}' % blob.encode()
    path.write_bytes(raw.replace(b'"service_tier": "default"', escaped))
    lazy = _replay_chat(devserver, path).json()["service_tier"]
    path.write_text(json.dumps(json.loads(path.read_bytes())))  # compact: parsed whole
    whole = _replay_chat(devserver, path).json()["service_tier"]
    assert lazy == whole == "hi " * 300


@pytest.mark.parametrize(
    "change",
    [
        {"json": None},
        {"json": None, "text": 5},
        {"status": True},
        {"status": 1000},
        {"status": "200"},
    ],
    ids=["no-body", "text-an-int", "status-a-bool", "status-1000", "status-a-string"],
)
def test_a_recorded_http_response_without_a_body_or_status(
    devserver: DevServer, tmp_path: Path, change: dict[str, Any]
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "c.json"
    doc = _record_chat(devserver, path)
    response = doc["interactions"][0]["response"]
    for key, value in change.items():
        if value is None:
            del response[key]
        else:
            response[key] = value
    _save(path, doc)
    with pytest.raises(cassette.CassetteShapeError, match="cannot be replayed") as caught:
        _replay_chat(devserver, path)
    assert str(path) in str(caught.value) and "re-record" in str(caught.value)


@pytest.mark.parametrize("kind", ["weird", ""])
def test_an_unknown_interaction_kind(recorded: tuple[Path, dict[str, Any]], kind: str) -> None:
    path, doc = recorded
    doc["interactions"][1]["kind"] = kind
    _save(path, doc)
    for load in (
        lambda: cassette.load_cassette(path),
        lambda: cassette.load_cassette(path, lazy=True),
        lambda: cassette.using(path, mode="replay").__enter__(),
    ):
        with pytest.raises(cassette.CassetteShapeError) as caught:
            load()
        message = str(caught.value)
        assert str(path) in message and f"interactions[1].kind is {kind!r}" in message
        assert "llm, tool, http" in message and "re-record" in message


def test_a_session_on_a_path_with_a_nul_byte_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(cassette.CassetteConfigError, match="NUL byte"):
        cassette.Session(tmp_path / "a\x00b.json", mode="record")


def test_a_directory_given_as_the_cassette_names_the_next_step(tmp_path: Path) -> None:
    with pytest.raises(cassette.CassetteNotFoundError, match=r"is a directory.*Point to the cassette"):
        cassette.load_cassette(tmp_path)
