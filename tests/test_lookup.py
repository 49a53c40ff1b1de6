"""The `lookup` shortcut: a recorded LLM call is found again by the hash of its request as sent.

Replay finds a call sent exactly as recorded by its `lookup`, without normalising the request;
anything else (another request, a cassette without lookups, a plugin of the user's taking part
in normalising) goes by the match key as before. These tests make the two disagree on purpose
(keys overwritten in the file) to show which one found the call.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic
from openai import OpenAI

import cassette
from cassette._plugins import get_plugin_manager
from cassette._store import atomic_write, manifest_json
from cassette.devserver import DevServer

CASSETTE = "cassettes/lookup.json"
SYSTEM = "You are a support agent for Acme. Answer in one sentence."
ASKS = ["where is order 1001?", "refund order 1002", "cancel order 1003"]
HEX64 = re.compile(r"[0-9a-f]{64}")


def _openai(base_url: str) -> Any:
    return cassette.instrument(OpenAI(base_url=base_url, api_key="sk-test", max_retries=0))


def _ask(client: Any, text: str) -> str:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]
    r = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    return str(r.choices[0].message.content)


def _record(srv: DevServer, asks: list[str] = ASKS) -> list[str]:
    client = _openai(srv.openai_base_url)
    with cassette.using(CASSETTE, mode="record"):
        return [_ask(client, text) for text in asks]


def _replay(base_url: str = "http://127.0.0.1:9/v1", asks: list[str] = ASKS) -> list[str]:
    client = _openai(base_url)  # nothing listens there: replay never connects
    with cassette.using(CASSETTE, mode="replay"):
        return [_ask(client, text) for text in asks]


def _doc() -> dict[str, Any]:
    return json.loads(Path(CASSETTE).read_text())


def _rewrite(doc: dict[str, Any]) -> None:
    atomic_write(Path(CASSETTE), manifest_json(doc))  # the layout replay opens lazily


def _spoil_keys() -> None:
    """Give every call a match key no request has: only its lookup can find it now."""
    doc = _doc()
    for n, inter in enumerate(doc["interactions"]):
        inter["key"] = f"{n:064x}"
    _rewrite(doc)


@pytest.fixture
def registered() -> Iterator[list[Any]]:
    plugins: list[Any] = []
    yield plugins
    for plugin in plugins:
        get_plugin_manager().unregister(plugin)


class KeepAll:
    """A user's normaliser that changes nothing: its mere presence turns lookups off."""

    @cassette.hookimpl
    def cassette_normalize(self, request: dict[str, Any], kind: str) -> None:
        return None


def test_each_llm_call_is_recorded_with_the_lookup_of_its_request_as_sent(devserver: DevServer) -> None:
    _record(devserver)
    interactions = _doc()["interactions"]
    lookups = [inter["lookup"] for inter in interactions]
    assert all(HEX64.fullmatch(x) for x in lookups) and len(set(lookups)) == len(ASKS)
    assert [list(inter)[:3] for inter in interactions] == [["key", "kind", "lookup"]] * len(ASKS)


def test_a_call_sent_as_recorded_is_found_by_its_lookup(devserver: DevServer) -> None:
    live = _record(devserver)
    _spoil_keys()
    assert _replay() == live  # another host too: the lookup, like the key, leaves the host out


def test_a_compressed_cassette_finds_calls_by_lookup_too(devserver: DevServer) -> None:
    live = _record(devserver)
    _spoil_keys()
    path = Path(CASSETTE)
    path.write_bytes(gzip.compress(path.read_bytes()))  # opened whole, not lazily
    assert _replay() == live


def test_a_request_sent_otherwise_goes_by_its_match_key(devserver: DevServer) -> None:
    live = _record(devserver)
    # another path prefix: the same normalised request (the key matches), not the same bytes sent
    assert _replay("http://127.0.0.1:9/proxy/v1") == live
    _spoil_keys()
    with pytest.raises(cassette.CassetteMiss):
        _replay("http://127.0.0.1:9/proxy/v1")


def test_a_cassette_without_lookups_replays_by_key(devserver: DevServer) -> None:
    live = _record(devserver)
    doc = _doc()
    for inter in doc["interactions"]:
        del inter["lookup"]
    _rewrite(doc)
    assert _replay() == live


def test_a_lookup_that_is_not_a_hash_is_ignored(devserver: DevServer) -> None:
    live = _record(devserver)
    doc = _doc()
    for inter, bad in zip(doc["interactions"], ["", "zz" * 40, 7], strict=True):
        inter["lookup"] = bad
    _rewrite(doc)
    assert _replay() == live


def test_a_plugin_of_the_users_in_normalising_turns_lookups_off(
    devserver: DevServer, registered: list[Any]
) -> None:
    _record(devserver)
    _spoil_keys()
    plugin = KeepAll()
    get_plugin_manager().register(plugin)
    registered.append(plugin)
    # its key could depend on anything it reads: only the (spoiled) match key may find the call
    with pytest.raises(cassette.CassetteMiss):
        _replay()
    _record(devserver)
    assert all("lookup" not in inter for inter in _doc()["interactions"])


def test_identical_calls_are_served_in_recorded_order_by_lookup_and_key_alike(devserver: DevServer) -> None:
    same = ["status of order 1001?"] * 3
    _record(devserver, same)
    doc = _doc()
    for n, inter in enumerate(doc["interactions"]):
        inter["response"]["json"]["choices"][0]["message"]["content"] = f"answer {n}"
    del doc["interactions"][0]["lookup"]  # the first one is found by its key, the others by lookup
    _rewrite(doc)
    assert _replay(asks=same) == ["answer 0", "answer 1", "answer 2"]
    with pytest.raises(cassette.CassetteMiss, match="called 4 times but recorded only 3"):
        _replay(asks=[*same, same[0]])


def test_a_request_that_held_a_secret_gets_no_lookup(devserver: DevServer) -> None:
    secret = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t" + "T3BlbkFJ" + "Uv1wXy4zAb7cDe0fGh3iJk6l"
    _record(devserver, [f"my key is {secret}", "thanks"])
    first, second = _doc()["interactions"]
    # a hash of the bytes sent would be a hash of the secret too
    assert "redacted_key" in first and "lookup" not in first
    assert "lookup" in second and secret not in Path(CASSETTE).read_text()


def test_anthropic_calls_are_found_by_lookup(devserver: DevServer) -> None:
    def converse(base_url: str, mode: str) -> list[str]:
        client = cassette.instrument(Anthropic(base_url=base_url, api_key="x", max_retries=0))
        with cassette.using(CASSETTE, mode=mode):
            out = []
            for text in ASKS:
                r = client.messages.create(
                    model="claude-haiku-5-5",
                    max_tokens=64,
                    system=SYSTEM,
                    messages=[{"role": "user", "content": text}],
                )
                out.append(r.content[0].text)  # type: ignore[union-attr]
            return out

    live = converse(devserver.anthropic_base_url, "record")
    assert all("lookup" in inter for inter in _doc()["interactions"])
    _spoil_keys()
    assert converse("http://127.0.0.1:9", "replay") == live
