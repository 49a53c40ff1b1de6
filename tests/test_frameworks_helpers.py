"""cassette.frameworks' SDK-neutral part: the HTTP clients match the installed SDK's generation."""

from __future__ import annotations

import pytest

import cassette
import cassette.frameworks
from cassette.testing.devserver import DevServer


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_the_clients_are_of_the_library_the_sdk_is_built_on(sdk: str) -> None:
    module = pytest.importorskip(sdk)
    lib = cassette.frameworks.sdk_http_lib(sdk)
    assert issubclass(module.DefaultHttpxClient, __import__(lib).Client)
    sync, async_ = cassette.frameworks.http_clients(sdk)
    assert type(sync).__module__.partition(".")[0] == lib == type(async_).__module__.partition(".")[0]


def test_an_sdk_given_both_clients_records_and_replays(devserver: DevServer) -> None:
    openai = pytest.importorskip("openai")
    sync, async_ = cassette.frameworks.http_clients("openai")
    ask = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Where is my order B2002?"}]}

    def client(base_url: str) -> object:
        return openai.OpenAI(base_url=base_url, api_key="sk-test", http_client=sync, max_retries=0)

    with cassette.using("c.json", mode="record"):
        live = client(devserver.openai_base_url).chat.completions.create(**ask)  # type: ignore[attr-defined]
    devserver.stop()
    with cassette.using("c.json", mode="replay"):
        replayed = client(devserver.openai_base_url).chat.completions.create(**ask)  # type: ignore[attr-defined]
    assert replayed.choices[0].message.content == live.choices[0].message.content
    assert async_ is not sync
