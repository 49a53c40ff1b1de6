"""Importers: vcrpy / pytest-recording cassettes (recorded here by real vcrpy) and cendor-cassette files."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vcr
import yaml
from vcr.serializers import jsonserializer, yamlserializer

import cassette
from cassette import CassetteImportError
from cassette.cli import main
from cassette.importers import import_cendor, import_vcr
from cassette.testing.devserver import DevServer

DEAD = "http://127.0.0.1:9"  # nothing listens: replay must not need the network
QUESTION = [{"role": "user", "content": "My card was charged twice"}]


def _calls(openai_client: Any, anthropic_client: Any) -> list[Any]:
    """The traffic under test: plain and streamed, OpenAI and Anthropic, plus one non-LLM request."""
    return [
        openai_client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION).model_dump(),
        [
            c.model_dump()
            for c in openai_client.chat.completions.create(
                model="gpt-4o-mini", messages=QUESTION, stream=True
            )
        ],
        anthropic_client.messages.create(
            model="claude-haiku-4-5", max_tokens=100, messages=QUESTION
        ).model_dump(),
        [
            e.model_dump()
            for e in anthropic_client.messages.create(
                model="claude-haiku-4-5", max_tokens=100, messages=QUESTION, stream=True
            )
        ],
        [m.model_dump() for m in openai_client.models.list()],
    ]


def _replay(path: Path, url: str) -> list[Any]:
    """The same calls with the server stopped (its URL kept: plain HTTP calls are matched by URL)."""
    from anthropic import Anthropic
    from openai import OpenAI

    oa = cassette.instrument(OpenAI(base_url=url + "/v1", api_key="sk-other", max_retries=0))
    an = cassette.instrument(Anthropic(base_url=url, api_key="other", max_retries=0))
    with cassette.using(path, mode="replay", unused="error", check_order="error"):
        return _calls(oa, an)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Any], str]]:
    """A vcrpy YAML cassette recorded by real vcrpy around the real SDKs, and what the SDKs returned."""
    from anthropic import Anthropic
    from openai import OpenAI

    path = tmp_path_factory.mktemp("vcr") / "test_refund.yaml"
    with DevServer() as srv:
        with vcr.VCR(record_mode="all").use_cassette(str(path)):
            live = _calls(
                OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0),
                Anthropic(base_url=srv.anthropic_base_url, api_key="x", max_retries=0),
            )
    yield path, live, srv.url  # stopped: nothing listens there any more


def _vcr_dict(path: Path) -> dict[str, Any]:
    return yamlserializer.deserialize(path.read_text())  # type: ignore[no-any-return]


def test_a_vcrpy_yaml_cassette_replays_the_same_sdk_objects(recorded: tuple[Path, list[Any], str]) -> None:
    source, live, url = recorded
    report = import_vcr(source, "tests/cassettes/refund.json")
    assert report.interactions == 5 and report.kinds == {"llm": 4, "http": 1}
    assert report.format == "vcrpy yaml" and report.notes == [] and report.skipped == []
    converted = cassette.load_cassette("tests/cassettes/refund.json")
    assert [i.kind for i in converted.interactions] == ["llm", "llm", "llm", "llm", "http"]
    streamed = converted.hydrate(converted.interactions[1].response)
    assert streamed["events"][-1] == "data: [DONE]" and "content-length" not in streamed["headers"]
    assert "sk-test" not in Path("tests/cassettes/refund.json").read_text()
    assert _replay(Path("tests/cassettes/refund.json"), url) == live


def test_a_vcrpy_json_cassette(recorded: tuple[Path, list[Any], str], tmp_path: Path) -> None:
    source, live, url = recorded
    as_json = tmp_path / "test_refund.json"
    as_json.write_text(jsonserializer.serialize(_vcr_dict(source)))
    assert import_vcr(as_json, "c.json").format == "vcrpy json"
    assert _replay(Path("c.json"), url) == live


def _gzipped(doc: dict[str, Any], encode: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for item in doc["interactions"]:
        response = item["response"]
        body = response["body"]["string"]
        raw = body.encode() if isinstance(body, str) else body
        response["body"]["string"] = encode(gzip.compress(raw))
        response["headers"]["content-encoding"] = ["gzip"]
    return doc


def test_gzip_bodies_as_yaml_binary_and_as_base64_text(
    recorded: tuple[Path, list[Any], str], tmp_path: Path
) -> None:
    source, live, url = recorded
    binary = tmp_path / "binary.yaml"
    binary.write_text(yamlserializer.serialize(_gzipped(_vcr_dict(source), lambda b: b)))
    assert "!!binary" in binary.read_text()
    import_vcr(binary, "from_binary.json")
    assert _replay(Path("from_binary.json"), url) == live

    as_base64 = tmp_path / "base64.json"
    as_base64.write_text(json.dumps(_gzipped(_vcr_dict(source), lambda b: base64.b64encode(b).decode())))
    import_vcr(as_base64, "from_base64.json")
    assert _replay(Path("from_base64.json"), url) == live


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as YAML block scalars, the way pydantic-ai's serializer writes them."""


_BlockDumper.add_representer(
    str,
    lambda dumper, data: dumper.represent_scalar(
        "tag:yaml.org,2002:str", data, style="|" if "\n" in data else None
    ),
)


def _pydantic_ai_style(doc: dict[str, Any]) -> str:
    """JSON bodies as a parsed ``parsed_body`` mapping, headers lower-cased and filtered."""
    doc = copy.deepcopy(doc)
    for item in doc["interactions"]:
        for side in ("request", "response"):
            part = item[side]
            headers = {k.lower(): v for k, v in part.get("headers", {}).items()}
            part["headers"] = {
                k: v
                for k, v in headers.items()
                if k not in ("authorization", "date") and not k.startswith("x-")
            }
            if any(str(v).startswith("application/json") for v in part["headers"].get("content-type", [])):
                body = part["body"]["string"] if side == "response" else part["body"]
                part["parsed_body"] = json.loads(body)
                del part["body"]
            elif side == "response" and isinstance(part["body"]["string"], bytes):
                part["body"]["string"] = part["body"]["string"].decode()
    return yaml.dump(doc, Dumper=_BlockDumper, allow_unicode=True, width=120)


def test_the_pydantic_ai_serializer_variant(recorded: tuple[Path, list[Any], str], tmp_path: Path) -> None:
    source, live, url = recorded
    variant = tmp_path / "pydantic_ai.yaml"
    variant.write_text(_pydantic_ai_style(_vcr_dict(source)))
    text = variant.read_text()
    assert "parsed_body:" in text and "string: |" in text  # the SSE bodies are block scalars
    import_vcr(variant, "c.json")
    assert _replay(Path("c.json"), url) == live


def test_bad_vcr_inputs_name_the_file_and_the_next_step(
    recorded: tuple[Path, list[Any], str], tmp_path: Path
) -> None:
    source, _, _ = recorded
    cases = {
        "broken.yaml": ("interactions: [\n  - {a: 1", "not valid YAML"),
        "empty.yaml": ("", "is empty"),
        "old.yaml": ("- request: {}\n", "before 1.0"),
        "other.json": ('{"version": 1}', "no `interactions` list"),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(CassetteImportError, match=expected) as info:
            import_vcr(tmp_path / name, "c.json")
        assert name in str(info.value) and info.value.path == str(tmp_path / name)
    with pytest.raises(CassetteImportError, match="no file at"):
        import_vcr(tmp_path / "missing.yaml", "c.json")

    doc = _vcr_dict(source)
    del doc["interactions"][1]["response"]["status"]
    doc["interactions"][3] = "not a mapping"
    damaged = tmp_path / "damaged.yaml"
    damaged.write_text(yamlserializer.serialize(doc))
    with pytest.raises(CassetteImportError) as info:
        import_vcr(damaged, "c.json")
    message = str(info.value)
    assert "2 interactions cannot be read, so nothing was written" in message
    assert "interaction 1: the response needs an integer status code" in message
    assert "interaction 3: an interaction must be a mapping" in message and "--skip-bad" in message
    assert not Path("c.json").exists()
    report = import_vcr(damaged, "c.json", skip_bad=True)
    assert report.interactions == 3 and [w for w, _ in report.skipped] == ["interaction 1", "interaction 3"]
    with pytest.raises(CassetteImportError, match="already exists"):
        import_vcr(damaged, "c.json", skip_bad=True)


def test_cli_imports_a_directory_of_vcr_cassettes(
    recorded: tuple[Path, list[Any], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, live, url = recorded
    tree = tmp_path / "vcr" / "test_billing"
    tree.mkdir(parents=True)
    (tree / "test_refund.yaml").write_text(source.read_text())
    (tree / "test_refund_json.json").write_text(jsonserializer.serialize(_vcr_dict(source)))
    assert main(["import", "vcr", str(tmp_path / "vcr"), "--to", "tests/cassettes"]) == 0
    out = capsys.readouterr().out
    assert out.count("5 interactions (1 http, 4 llm)") == 2
    assert _replay(Path("tests/cassettes/test_billing/test_refund.json"), url) == live
    assert _replay(Path("tests/cassettes/test_billing/test_refund_json.json"), url) == live
    assert main(["import", "vcr", str(source), "--to", "x.json", "--set", "a=1"]) == 2
    assert "cendor` only" in capsys.readouterr().err


def test_a_directory_imported_outside_the_cassette_dir_keeps_one_blob_store_at_its_root(
    recorded: tuple[Path, list[Any], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: each sub-folder got a .blobs of its own beside its first file, so once the tree was
    # moved into the cassette dir, whose store is <cassette_dir>/.blobs, nothing replayed
    source, live, url = recorded
    Path("pyproject.toml").write_text("[tool.cassette]\nblob_threshold = 64\n")  # blobs for sure
    tree = tmp_path / "vcr"
    (tree / "test_agent" / "sub").mkdir(parents=True)
    (tree / "test_agent" / "sub" / "a.yaml").write_text(source.read_text())
    (tree / "test_agent" / "b.yaml").write_text(source.read_text())
    assert main(["import", "vcr", str(tree), "--to", "tests/cassettes_new/"]) == 0
    stores = sorted(p.relative_to("tests") for p in Path("tests").rglob(".blobs"))
    assert stores == [Path("cassettes_new/.blobs")]
    Path("tests/cassettes_new").rename("tests/cassettes")  # where the pytest plugin reads them
    for name in ("test_agent/sub/a.json", "test_agent/b.json"):
        assert _replay(Path("tests/cassettes") / name, url) == live


# --- cendor-cassette -------------------------------------------------------------------------------


@cassette.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    raise AssertionError("replayed: never runs")


@cassette.tool
def refund(order_id: str, amount: float = 0.0) -> dict[str, Any]:
    raise AssertionError("replayed: never runs")


@pytest.fixture(scope="module")
def cendor_live() -> dict[str, Any]:
    """What cendor-cassette would have stored for real SDK calls: each response's model_dump()."""
    from anthropic import Anthropic
    from openai import OpenAI

    with DevServer() as srv:
        oa = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        an = Anthropic(base_url=srv.anthropic_base_url, api_key="x", max_retries=0)
        completion = oa.chat.completions.create(model="gpt-4o-mini", messages=QUESTION).model_dump()
        chunks = [
            c.model_dump()
            for c in oa.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, stream=True)
        ]
        message = an.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=QUESTION).model_dump()
    completion["id"] = "<redacted>"  # cendor's 32+ character token rule hit the completion id
    return {"completion": completion, "chunks": chunks, "message": message}


def _cendor_file(path: Path, version: int, live: dict[str, Any]) -> Path:
    def llm(provider: str, model: str, stream: bool) -> dict[str, Any]:
        request: dict[str, Any] = {"kind": "llm", "provider": provider, "model": model, "messages": QUESTION}
        if version >= 2:
            request["stream"] = stream
        return request

    entries: list[dict[str, Any]] = [
        {"kind": "llm", "request": llm("openai", "gpt-4o-mini", False), "response": live["completion"]},
        {
            "kind": "tool",
            "request": {
                "kind": "tool",
                "name": "lookup_order",
                "arguments": {"args": [], "kwargs": {"order_id": "A1"}},
            },
            "response": {"order_id": "A1", "status": "charged twice"},
            "response_type": "mapping",
        },
        {
            "kind": "tool",
            "request": {"kind": "tool", "name": "refund", "arguments": {"args": ["A1", 20.0], "kwargs": {}}},
            "response": {"refunded": 20.0},
            "response_type": "object",
        },
        {"kind": "llm", "request": llm("openai", "gpt-4o-mini", True), "response": live["chunks"]},
        {"kind": "llm", "request": llm("anthropic", "claude-haiku-4-5", False), "response": live["message"]},
        {
            "kind": "llm",
            "request": llm("ollama", "llama3", False),
            "response": {"message": {"content": "hi"}},
        },
    ]
    for seq, entry in enumerate(entries):
        entry["seq"] = seq
        entry["request_hash"] = "0" * 64  # cendor's own hash: not ours, never used
        if version == 1:
            entry.pop("response_type", None)
        else:
            entry.setdefault("response_type", "object")
    path.write_text(json.dumps({"version": version, "entries": entries}, indent=2, ensure_ascii=False))
    return path


def _replay_cendor(path: Path) -> list[Any]:
    from anthropic import Anthropic
    from openai import OpenAI

    oa = cassette.instrument(OpenAI(base_url=DEAD + "/v1", api_key="sk-other", max_retries=0))
    an = cassette.instrument(Anthropic(base_url=DEAD, api_key="other", max_retries=0))
    with cassette.using(path, mode="replay", unused="error", check_order="error"):
        return [
            oa.chat.completions.create(model="gpt-4o-mini", messages=QUESTION).model_dump(),
            lookup_order("A1"),
            refund("A1", 20.0),
            [
                c.model_dump()
                for c in oa.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, stream=True)
            ],
            an.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=QUESTION).model_dump(),
        ]


@pytest.mark.parametrize("version", [1, 2])
def test_cendor_files_replay_through_the_real_sdks(
    version: int, cendor_live: dict[str, Any], tmp_path: Path
) -> None:
    source = _cendor_file(tmp_path / "refund.json", version, cendor_live)
    report = import_cendor(source, "new.json", tools=[refund], defaults={"anthropic.max_tokens": 100})
    assert report.format == f"cendor-cassette v{version}"
    assert report.interactions == 5 and report.kinds == {"llm": 3, "tool": 2}
    assert (
        report.skipped == [("entry 5", report.skipped[0][1])] and "provider 'ollama'" in report.skipped[0][1]
    )
    notes = dict.fromkeys(m for _, m in report.notes)
    text = str(report)
    assert "entry 0, entry 3, entry 4: cendor stored only model, messages and stream" in text
    assert any("'<redacted>' at id" in n for n in notes)
    assert "entry 1: bound by keyword name" in text
    if version == 2:
        assert "entry 2: the tool returned an object" in text
    else:
        assert "entry 1, entry 2: version 1 did not record whether the tool returned a mapping" in text
    assert ("version 1 stored no stream flag" in text) is (version == 1)
    assert not any("positional arguments kept" in n for n in notes)  # refund was given: bound by name

    got = _replay_cendor(Path("new.json"))
    assert got == [
        cendor_live["completion"],
        {"order_id": "A1", "status": "charged twice"},
        {"refunded": 20.0},
        cendor_live["chunks"],
        cendor_live["message"],
    ]


def test_cendor_limits_are_listed_not_guessed(cendor_live: dict[str, Any], tmp_path: Path) -> None:
    source = _cendor_file(tmp_path / "refund.json", 2, cendor_live)
    report = import_cendor(source, "new.json")  # no tools, no max_tokens
    text = str(report)
    assert "entry 2: positional arguments kept as {args, kwargs}" in text and "--tool module:refund" in text
    assert "entry 4: Anthropic calls always send max_tokens" in text
    recorded = cassette.load_cassette("new.json")
    assert recorded.interactions[2].request["arguments"] == {"args": ["A1", 20.0], "kwargs": {}}


def test_cli_import_cendor_prints_the_report(
    cendor_live: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _cendor_file(tmp_path / "refund.json", 2, cendor_live)
    code = main(
        [
            "import",
            "cendor",
            str(source),
            "--to",
            "new.json",
            "--set",
            "anthropic.max_tokens=100",
            "--tool",
            f"{__name__}:refund",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1  # one entry (the ollama call) was not converted
    assert "new.json: 5 interactions (3 llm, 2 tool)" in out and "not converted (1):" in out
    assert "not carried over faithfully:" in out
    assert _replay_cendor(Path("new.json"))[2] == {"refunded": 20.0}
    assert main(["import", "cendor", str(source), "--to", "x.json", "--tool", "nowhere"]) == 2
    assert "expected MODULE:FUNCTION" in capsys.readouterr().err
    assert main(["import", "cendor", str(source), "--to", "x.json", "--tool", "no_such_module:f"]) == 2
    assert "cannot import it" in capsys.readouterr().err


def test_bad_cendor_inputs(tmp_path: Path, cendor_live: dict[str, Any]) -> None:
    cases = {
        "v3.json": ('{"version": 3, "entries": []}', "version 3; this importer reads versions 1 and 2"),
        "list.json": ("[]", "holds a JSON list"),
        "noentries.json": ('{"version": 2}', "no `entries` list"),
        "text.json": ("entries: []", "is not JSON"),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(CassetteImportError, match=expected) as info:
            import_cendor(tmp_path / name, "c.json")
        assert name in str(info.value)
    doc = {
        "version": 2,
        "entries": [
            {"seq": 0, "kind": "prompt", "request": {}, "response": {}},
            {
                "seq": 1,
                "kind": "llm",
                "request": {"provider": "openai", "model": "m", "messages": [], "stream": True},
                "response": {},
            },
            {
                "seq": 2,
                "kind": "tool",
                "request": {"name": "lookup_order", "arguments": {"kwargs": {"order_id": "A1"}}},
                "response": 1,
            },
        ],
    }
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(CassetteImportError) as info:
        import_cendor(tmp_path / "bad.json", "c.json")
    message = str(info.value)
    assert "entry 0: `kind` must be 'llm' or 'tool', not 'prompt'" in message
    assert "entry 1: the request says stream=true but the response is one object" in message
    report = import_cendor(tmp_path / "bad.json", "c.json", skip_bad=True)
    assert report.interactions == 1 and [w for w, _ in report.skipped] == ["entry 0", "entry 1"]


def _bad_sources(tmp_path: Path) -> dict[str, tuple[Path, Any]]:
    """One unreadable entry at index 1 in a vcr file, a cendor file and a trace (line 2)."""
    vcr_doc = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "GET", "uri": "https://x.example/a", "body": None, "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {},
                    "body": {"string": "ok"},
                },
            },
            "not a mapping",
        ],
    }
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(vcr_doc))
    ok = {
        "seq": 0,
        "kind": "tool",
        "request": {"name": "f", "arguments": {"kwargs": {"a": 1}}},
        "response": 1,
    }
    cendor_doc = {"version": 2, "entries": [ok, {"seq": 7, "kind": "prompt", "request": {}, "response": {}}]}
    (tmp_path / "bad.json").write_text(json.dumps(cendor_doc))
    (tmp_path / "bad.jsonl").write_text(json.dumps({"kind": "tool", **ok}) + "\nnot json\n")
    return {
        "vcr": (tmp_path / "bad.yaml", import_vcr),
        "cendor": (tmp_path / "bad.json", import_cendor),
        "promote": (tmp_path / "bad.jsonl", cassette.promote),
    }


@pytest.mark.parametrize(
    ("kind", "where"),
    [("vcr", "interaction 1"), ("cendor", "entry 1 (seq 7)"), ("promote", "line 2")],
)
def test_every_importer_refuses_unreadable_entries_with_one_message_format(
    tmp_path: Path, kind: str, where: str
) -> None:
    source, convert = _bad_sources(tmp_path)[kind]
    noun = where.split()[0]
    with pytest.raises(cassette.CassetteError) as info:
        convert(source, "c.json")
    lines = str(info.value).splitlines()
    assert lines[0] == f"{source}: 1 {noun} cannot be read, so nothing was written:"  # the file
    assert lines[1].startswith(f"  {where}: ")  # the entry, by its index in the file
    assert lines[2].startswith(f"Next step: fix or remove it in {source}, or pass skip_bad=True (--skip-bad)")
    assert info.value.path == str(source) and not Path("c.json").exists()
