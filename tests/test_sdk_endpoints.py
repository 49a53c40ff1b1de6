"""An SDK's calls to endpoints that are not model calls (``models.list()``, ``models.retrieve()``)
are keyed by their path, as its model calls are: a replay finds them whatever the client's
base URL (a local server's port, a proxy, CI), and a cassette that an earlier release recorded
with the host in their key still replays. Plain HTTP calls keep their host in the key.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic
from openai import AsyncOpenAI, OpenAI

import cassette
from cassette.core.canonical import request_key
from cassette.core.layout import manifest_json
from cassette.store.files import atomic_write
from cassette.testing.devserver import DevServer

CASSETTE = "cassettes/models.json"
ELSEWHERE = "http://127.0.0.1:9/v1"  # nothing listens there: replay never connects


def _client(base_url: str) -> Any:
    return cassette.instrument(OpenAI(base_url=base_url, api_key="sk-test", max_retries=0))


def _run(client: Any) -> tuple[list[str], str, str]:
    models = [m.id for m in client.models.list()]
    model = client.models.retrieve(models[0]).id
    answer = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    return models, model, str(answer.choices[0].message.content)


def test_sdk_calls_that_are_not_model_calls_replay_at_another_base_url(devserver: DevServer) -> None:
    with cassette.using(CASSETTE, mode="record"):
        live = _run(_client(devserver.openai_base_url))
    requests = [i["request"] for i in json.loads(Path(CASSETTE).read_text())["interactions"]]
    assert requests[0] == {"kind": "http", "method": "GET", "url": "/v1/models", "sdk": "OpenAI"}
    assert requests[1]["url"] == f"/v1/models/{live[1]}"
    with cassette.using(CASSETTE, mode="replay"):
        assert _run(_client(ELSEWHERE)) == live


def test_a_sync_recording_replays_through_the_async_client(devserver: DevServer) -> None:
    with cassette.using(CASSETTE, mode="record"):
        live = _run(_client(devserver.openai_base_url))

    async def replay() -> tuple[list[str], str]:
        client = cassette.instrument(AsyncOpenAI(base_url=ELSEWHERE, api_key="sk-test", max_retries=0))
        models = [m.id async for m in client.models.list()]
        return models, (await client.models.retrieve(models[0])).id

    with cassette.using(CASSETTE, mode="replay"):
        assert asyncio.run(replay()) == live[:2]


def test_a_cassette_recorded_with_the_host_in_their_key_still_replays(devserver: DevServer) -> None:
    with cassette.using(CASSETTE, mode="record"):
        live = _run(_client(devserver.openai_base_url))
    doc = json.loads(Path(CASSETTE).read_text())
    host = devserver.openai_base_url.removesuffix("/v1")
    for inter in doc["interactions"][:2]:  # as an earlier release wrote them
        inter["request"]["url"] = host + inter["request"]["url"]
        del inter["request"]["sdk"]
        inter["key"] = request_key(inter["request"])
    atomic_write(Path(CASSETTE), manifest_json(doc))
    with cassette.using(CASSETTE, mode="replay"):
        assert _run(_client(ELSEWHERE)) == live
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE, mode="replay"):
        client = _client(ELSEWHERE)
        client.models.list()
        client.models.retrieve("another-model")  # differs in more than the host: still a miss


def test_two_sdks_calling_the_same_path_get_their_own_answers(devserver: DevServer) -> None:
    def models(mode: str, base: tuple[str, str], anthropic_first: bool) -> dict[str, list[str]]:
        openai = _client(base[0])
        claude = cassette.instrument(Anthropic(base_url=base[1], api_key="x", max_retries=0))
        order = [("anthropic", claude), ("openai", openai)]
        out: dict[str, list[str]] = {}
        with cassette.using(CASSETTE, mode=mode):
            for name, client in order if anthropic_first else order[::-1]:
                out[name] = [m.id for m in client.models.list()]
        return out

    live = models("record", (devserver.openai_base_url, devserver.anthropic_base_url), anthropic_first=False)
    assert live["openai"] != live["anthropic"]  # both GET /v1/models
    assert models("replay", (ELSEWHERE, ELSEWHERE.removesuffix("/v1")), anthropic_first=True) == live


def test_plain_http_calls_keep_their_host_in_the_key(devserver: DevServer) -> None:
    with cassette.using(CASSETTE, mode="record"), cassette.http_client() as http:
        assert http.get(devserver.openai_base_url + "/models").status_code == 200
    assert json.loads(Path(CASSETTE).read_text())["interactions"][0]["request"]["url"].startswith("http://")
    with pytest.raises(cassette.CassetteMiss, match="differs in"), cassette.using(CASSETTE, mode="replay"):
        with cassette.http_client() as http:
            http.get(ELSEWHERE + "/models")


def test_a_promoted_skeleton_reissues_such_calls_and_replays_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(pytester.path)
    trace = pytester.path / "traces" / "prod.jsonl"
    with DevServer() as srv, cassette.trace(trace):
        _run(_client(srv.openai_base_url))
    cassette.promote(trace, "tests/cassettes/models.json", test="tests/test_models.py")
    result = pytester.runpytest("tests", "-p", "no:cacheprovider")
    assert result.parseoutcomes().get("passed") == 1, result.stdout.str()


@pytest.mark.parametrize("headers_kept", [True, False], ids=["headers kept", "headers filtered"])
def test_an_imported_vcrpy_recording_of_such_calls_replays_at_another_base_url(
    devserver: DevServer, tmp_path: Path, headers_kept: bool
) -> None:
    import vcr
    from vcr.serializers import yamlserializer

    from cassette.importers import import_vcr

    source = tmp_path / "models.yaml"
    with vcr.VCR(record_mode="all").use_cassette(str(source)):
        live = _run(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    if not headers_kept:
        doc = yamlserializer.deserialize(source.read_text())
        for interaction in doc["interactions"]:
            interaction["request"]["headers"] = {}
        source.write_text(yamlserializer.serialize(doc))
    import_vcr(source, CASSETTE)
    with cassette.using(CASSETTE, mode="replay", unused="error"):
        assert _run(_client(ELSEWHERE)) == live
