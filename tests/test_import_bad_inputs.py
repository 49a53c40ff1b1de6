"""Bad and unusual third-party cassettes found by mutating real ones: each ends in a specific
`CassetteError` naming the file (and where in it), or imports faithfully — never a traceback,
a hang or a silently wrong body. One test per root cause; every file is real, written to a tmp dir.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vcr
import yaml
from vcr.serializers import yamlserializer

import cassette
from cassette import CassetteError, CassetteImportError, CassetteIOError
from cassette.cli import main
from cassette.importers import import_vcr
from cassette.testing.devserver import DevServer

QUESTION = [{"role": "user", "content": "My card was charged twice"}]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _one(response: dict[str, Any], request: dict[str, Any] | None = None) -> dict[str, Any]:
    """A one-interaction vcrpy cassette: a GET to a plain HTTP endpoint unless ``request`` says otherwise."""
    req = {"method": "GET", "uri": "http://files.example/data", "body": None, "headers": {}}
    resp = {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": ""}}
    return {
        "interactions": [{"request": {**req, **(request or {})}, "response": {**resp, **response}}],
        "version": 1,
    }


def _write(name: str, content: str | bytes | dict[str, Any]) -> Path:
    path = Path("third_party") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, dict):
        content = yamlserializer.serialize(content) if name.endswith(".yaml") else json.dumps(content)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def _refused(path: Path, error: type[CassetteError] = CassetteImportError) -> str:
    """Import ``path`` through the API and the CLI: both refuse it with ``error`` naming the file."""
    with pytest.raises(error) as caught:
        import_vcr(path, "imported.json")
    assert str(path) in str(caught.value)
    assert not Path("imported.json").exists()
    assert main(["import", "vcr", str(path), "--to", "cli.json"]) == 2
    return str(caught.value)


def _response(path: Path) -> dict[str, Any]:
    import_vcr(path, "imported.json", overwrite=True)
    doc = json.loads(Path("imported.json").read_text())
    return doc["interactions"][0]["response"]  # type: ignore[no-any-return]


def test_yaml_aliases_that_expand_without_end_are_refused_quickly() -> None:
    # "billion laughs": 2 KB of nested aliases that expand to ~1e9 strings when converted
    levels = "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']\n" + "".join(
        f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    bomb = _write(
        "laughs.yaml",
        levels + "interactions:\n- request: {method: POST, uri: 'http://x/', body: *i, headers: {}}\n"
        "  response: {status: 200, body: {string: ''}}\n",
    )
    started = time.monotonic()
    assert "aliases" in _refused(bomb)
    assert time.monotonic() - started < 10
    loop = _write(
        "loop.yaml",
        "interactions:\n- request: {method: POST, uri: 'http://x/', body: &b [1, *b], headers: {}}\n"
        "  response: {status: 200, body: {string: ''}}\n",
    )
    assert "alias" in _refused(loop)


@pytest.mark.parametrize(
    "body",
    [
        "!!python/object/new:_io.BytesIO {state: 5}",
        "!!python/object/apply:builtins.iter {args: 5}",
    ],
)
def test_malformed_python_tags_vcrpy_writes_are_refused_not_a_type_error(body: str) -> None:
    path = _write(
        "tags.yaml",
        f"interactions:\n- request: {{method: POST, uri: 'http://x/', body: {body}, headers: {{}}}}\n"
        "  response: {status: 200, body: {string: ''}}\n",
    )
    message = _refused(path)
    assert "line 2" in message and "not valid YAML" in message


def test_a_bad_merge_key_is_called_invalid_yaml_not_an_unsupported_tag() -> None:
    path = _write(
        "merge.yaml",
        "interactions:\n- request: {<<: 5, method: GET, uri: 'http://x/'}\n"
        "  response: {status: 200, body: {string: ''}}\n",
    )
    message = _refused(path)
    assert "not valid YAML" in message and "line 2" in message and "tag" not in message


def test_a_multi_valued_content_encoding_header_is_undone_in_full() -> None:
    # `Content-Encoding: [gzip, gzip]` is two layers, like "gzip, gzip": only one was undone and the
    # header dropped, so the replayed body was still gzip
    payload = b'{"refunded": true}'
    doc = _one(
        {
            "headers": {"Content-Encoding": ["gzip", "gzip"], "Content-Type": ["application/json"]},
            "body": {"string": gzip.compress(gzip.compress(payload))},
        }
    )
    response = _response(_write("layers.yaml", doc))
    assert response["json"] == {"refunded": True}
    assert "content-encoding" not in response["headers"]


def test_a_gzip_file_download_is_kept_compressed_not_inflated() -> None:
    # a .gz payload (no Content-Encoding) is the body itself: inflating it changed what the client gets
    archive = gzip.compress(b"id,amount\nA1,20\n")
    for content_type in ("application/gzip", "application/octet-stream"):
        doc = _one({"headers": {"Content-Type": [content_type]}, "body": {"string": archive}})
        path = _write("download.yaml", doc)
        response = _response(path)
        assert base64.b64decode(response["base64"]) == archive
        report = import_vcr(path, "imported.json", overwrite=True)
        assert any("kept compressed" in message for _, message in report.notes)


def test_gzip_stored_as_text_with_its_header_filtered_is_inflated() -> None:
    # serializers that cannot hold bytes store gzip as base64 or latin-1 text; the header was filtered
    packed = gzip.compress(b'{"a": 1}')
    for name, text in (
        ("b64.json", base64.b64encode(packed).decode()),
        ("latin1.json", packed.decode("latin-1")),
    ):
        doc = _one({"headers": {"Content-Type": ["application/json"]}, "body": {"string": text}})
        assert _response(_write(name, doc))["json"] == {"a": 1}


def test_headers_in_a_shape_that_would_be_dropped_are_refused() -> None:
    for i, headers in enumerate(
        ("Content-Type: application/json", ["Content-Type: application/json"], [["X-A", "1", "extra"]])
    ):
        path = _write(f"headers{i}.json", _one({"headers": headers, "body": {"string": "{}"}}))
        message = _refused(path)
        assert "interaction 0" in message and "response headers" in message
    # HAR-style {name, value} pairs are read, not dropped
    har = _one({"headers": [{"name": "Content-Type", "value": "text/csv"}], "body": {"string": "a,b"}})
    assert _response(_write("har_headers.json", har))["headers"] == {"content-type": "text/csv"}


def test_base64_with_stray_characters_is_refused_not_skipped() -> None:
    # PyYAML's !!binary and b64decode skip characters outside the alphabet: a damaged body imported as garbage
    damaged = _write(
        "binary.yaml",
        "interactions:\n- request: {method: GET, uri: 'http://x/', body: '', headers: {}}\n"
        "  response: {status: 200, headers: {}, body: {string: !!binary 'aGVsbG8=###'}}\n",
    )
    assert "line 3" in _refused(damaged) and "base64" in _refused(damaged)
    field = _write("field.yaml", _one({"body": {"base64_string": "aGVs#bG8="}}))
    assert "interaction 0" in _refused(field)


def test_conflicting_status_and_status_code_are_refused() -> None:
    doc = _one({"status": 201, "status_code": 500})
    assert "status_code" in _refused(_write("status.json", doc))


def test_a_decompression_bomb_is_refused() -> None:
    bomb = gzip.compress(b"\0" * (300 << 20))  # 300 MiB of zeros in 300 KB
    doc = _one({"headers": {"Content-Encoding": ["gzip"]}, "body": {"string": bomb}})
    assert "MiB" in _refused(_write("bomb.yaml", doc))


def test_unwritable_targets_and_unreadable_sources_are_cassette_io_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = _write("ok.yaml", _one({"body": {"string": "hello"}}))
    Path("a_file").write_text("not a directory")
    for target in ("a_file/imported.json", "x" * 300 + ".json"):
        with pytest.raises(CassetteIOError) as caught:
            import_vcr(source, target)
        assert target[:40] in str(caught.value)
    with pytest.raises(CassetteIOError) as caught:
        import_vcr("y" * 300 + ".yaml", "imported.json")
    assert "y" * 40 in str(caught.value)
    # a tree goes on past a file whose target cannot be written, and names it
    tree = Path("tree")
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "a.yaml").write_bytes(source.read_bytes())
    (tree / "b.yaml").write_bytes(source.read_bytes())
    Path("out").mkdir()
    Path("out/sub").write_text("a file where the directory should be")
    assert main(["import", "vcr", "tree", "--to", "out/"]) == 1
    assert Path("out/b.json").exists()
    assert "out/sub" in capsys.readouterr().err


def test_a_har_file_is_named_as_such() -> None:
    har = _write("session.har", {"log": {"version": "1.2", "entries": []}})
    assert "HAR" in _refused(har)
    with pytest.raises(CassetteImportError, match="HAR"):
        cassette.importers.import_cendor(har, "imported.json")


def test_a_websocket_recording_is_named_as_such_not_listed_interaction_by_interaction() -> None:
    # the shape of pydantic-ai's tests/realtime/cassettes/*_ws/*.yaml
    frames = [
        {"kind": "message", "direction": "received", "data": {"type": "session.created"}},
        {"kind": "message", "direction": "sent", "data": {"type": "session.update"}},
        {"kind": "close", "code": 1000, "ok": True, "reason": ""},
    ]
    ws = _write("realtime.yaml", {"version": 1, "interactions": frames})
    message = _refused(ws)
    assert "is a WebSocket recording" in message and "HTTP traffic only" in message
    assert "interaction 0" not in message
    with pytest.raises(CassetteImportError, match="WebSocket"):
        import_vcr(ws, "imported.json", skip_bad=True)
    assert not Path("imported.json").exists()
    # and pydantic-ai's xAI gRPC samples (tests/models/cassettes/*.xai.yaml)
    sample = {
        "request_sample": {"json": {"model": "grok-4"}, "raw": b"\x0a"},
        "response_sample": {"json": {}},
    }
    stream = {"request_stream": {"raw": b"\x0a"}, "response_stream": {"chunks_json": [{"chunk": {}}]}}
    grpc = _write(
        "chat.xai.yaml", {"version": 1, "interactions": [sample, {"collections_method": "x"}, stream]}
    )
    assert "is a gRPC recording (`request_sample` / `request_stream`" in _refused(grpc)


def test_a_file_with_nothing_readable_is_refused_even_with_skip_bad(
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken = {"interactions": [{"request": "GET /"}, {"response": {}}], "version": 1}
    source = _write("broken.yaml", broken)
    with pytest.raises(CassetteImportError) as caught:
        import_vcr(source, "imported.json", skip_bad=True)
    message = str(caught.value)
    assert message.startswith(f"{source}: none of its 2 interactions can be read, so nothing was written")
    assert "interaction 1: needs `request` and `response` mappings" in message
    assert message.endswith(f"Next step: fix them in {source}, or leave the file out.")
    assert "--skip-bad" not in message and not Path("imported.json").exists()

    # in a directory import it is one file not converted, and the readable ones are
    _write("good.yaml", _one({"body": {"string": "fine"}}))
    assert main(["import", "vcr", "third_party", "--to", "out/", "--skip-bad"]) == 1
    err = capsys.readouterr().err
    assert "none of its 2 interactions can be read" in err and "1 of 2 files not converted" in err
    assert sorted(p.name for p in Path("out").glob("*.json")) == ["good.json"]


def test_several_sources_of_one_name_are_refused_before_anything_is_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = _write("a/test_round.yaml", _one({"body": {"string": "one"}}))
    second = _write("b/test_round.yaml", _one({"body": {"string": "two"}}))
    assert main(["import", "vcr", str(first), str(second), "--to", "out/"]) == 2
    err = capsys.readouterr().err
    assert "several sources would become the same cassette, so nothing was written" in err
    assert f"out/test_round.json: {first}, {second}" in err and "import the directory" in err
    assert not Path("out").exists()


# --- gzip-encoded and binary-bodied cassettes recorded by real vcrpy replay through the real SDK -------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], list[Any], str]]:
    from openai import OpenAI

    path = tmp_path_factory.mktemp("vcr") / "recorded.yaml"
    with DevServer() as srv:
        with vcr.VCR(record_mode="all").use_cassette(str(path)):
            live = _openai_calls(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))
    yield yamlserializer.deserialize(path.read_text()), live, srv.url


def _openai_calls(client: Any) -> list[Any]:
    return [
        client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION).model_dump(),
        [
            c.model_dump()
            for c in client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, stream=True)
        ],
        client.embeddings.create(model="text-embedding-3-small", input="refund").model_dump(),
    ]


def _file_download(url: str, body: bytes, headers: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "request": {"method": "GET", "uri": f"{url}/v1/files/file-1/content", "body": None, "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": headers, "body": {"string": body}},
    }


@pytest.mark.parametrize("variant", ["gzip", "gzip-header-filtered", "binary"])
def test_gzip_encoded_and_binary_bodied_vcrpy_cassettes_replay_through_openai(
    recorded: tuple[dict[str, Any], list[Any], str], variant: str
) -> None:
    from openai import OpenAI

    doc, live, url = copy.deepcopy(recorded[0]), recorded[1], recorded[2]
    for item in doc["interactions"]:
        body = item["response"]["body"]["string"]
        body = body.encode() if isinstance(body, str) else body
        if variant == "binary":
            item["response"]["body"]["string"] = body  # written as !!binary
            if isinstance(item["request"]["body"], str):
                item["request"]["body"] = item["request"]["body"].encode()
        else:
            item["response"]["body"]["string"] = gzip.compress(body)
            if variant == "gzip":
                item["response"]["headers"]["Content-Encoding"] = ["gzip"]
    if variant == "binary":
        doc["interactions"].append(_file_download(url, PNG, {"Content-Type": ["application/octet-stream"]}))
    elif variant == "gzip":
        headers = {"Content-Type": ["application/octet-stream"], "Content-Encoding": ["gzip"]}
        doc["interactions"].append(_file_download(url, gzip.compress(PNG), headers))
    else:  # every header filtered, as langchain does
        doc["interactions"].append(_file_download(url, gzip.compress(PNG), {}))
    source = _write(f"{variant}.yaml", yaml.dump(doc, Dumper=yaml.Dumper))
    import_vcr(source, "imported.json")

    client = cassette.instrument(OpenAI(base_url=url + "/v1", api_key="sk-other", max_retries=0))
    with cassette.using("imported.json", mode="replay", unused="error", check_order="error"):
        assert _openai_calls(client) == live
        assert client.files.content("file-1").read() == PNG
