"""OpenAI-compatible servers (Ollama, vLLM, LM Studio, Groq, Together, OpenRouter) and Azure OpenAI,
through the real openai SDK against the devserver at each family's base path: the OpenAI provider
keys them by path and model (Azure: by deployment and api-version), never by host or port, so a
recording replays at a local or proxy base URL with the server stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AzureOpenAI, OpenAI

import cassette
from cassette.testing.devserver import DevServer

QUESTION = [{"role": "user", "content": "Where is my order B2002?"}]

# family: (the base path it serves the API under, a model it names, an API key as it looks, extra headers)
FAMILIES: dict[str, tuple[str, str, str, dict[str, str]]] = {
    "ollama": ("/v1", "llama3.2:3b", "ollama", {}),
    "vllm": ("/v1", "meta-llama/Llama-3.1-8B-Instruct", "EMPTY", {}),
    "lm-studio": ("/v1", "lmstudio-community/qwen2.5-7b-instruct", "lm-studio", {}),
    "groq": (
        "/openai/v1",
        "llama-3.3-70b-versatile",
        "gsk_" + "Qk7dK6Umuo2qdKFtsOzG" * 2 + "1234567890ab",
        {},
    ),
    "together": ("/v1", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "tgp_v1_" + "aB3dE5fG7h" * 4, {}),
    "openrouter": (
        "/api/v1",
        "openai/gpt-4o-mini",
        "sk-or-v1-" + "0123456789abcdef" * 4,
        {"HTTP-Referer": "https://acme.example", "X-Title": "Acme support"},
    ),
}


def ask(client: Any, **extra: Any) -> Any:
    return client.chat.completions.create(messages=QUESTION, **extra)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_compatible_server_is_keyed_by_path_and_model_and_replays_at_another_base_url(family: str) -> None:
    base_path, model, key, headers = FAMILIES[family]
    keys = []
    for run in range(2):  # two servers on two ports: one key
        with DevServer() as srv:
            client = OpenAI(base_url=srv.url + base_path, api_key=key, default_headers=headers, max_retries=0)
            with cassette.using(f"{family}-{run}.json", mode="record"):
                live = ask(cassette.instrument(client), model=model)
        (call,) = cassette.load_cassette(f"{family}-{run}.json").interactions
        keys.append(call.key)
        assert (call.request["provider"], call.request["endpoint"], call.request["model"]) == (
            "openai",
            "chat.completions",
            model,
        )
        text = Path(f"{family}-{run}.json").read_text()
        assert "127.0.0.1" not in text and (len(key) < 10 or key not in text)
    assert keys[0] == keys[1]

    # the server is gone; the agent now goes through a proxy at another host, path and key
    proxy = OpenAI(base_url="http://127.0.0.1:9/llm-proxy" + base_path, api_key="other", max_retries=0)
    with cassette.using(f"{family}-1.json", mode="replay") as session:
        again = ask(cassette.instrument(proxy), model=model)
    assert again == live and session.stats()["served"] == {"llm": 1}


def azure(endpoint: str, version: str = "2024-10-21", **options: Any) -> Any:
    key = "3f9c2b7a8e1d4c6b9a0f5e2d7c8b1a4f"  # the 32 hex digits of an Azure key
    client = AzureOpenAI(azure_endpoint=endpoint, api_version=version, api_key=key, max_retries=0, **options)
    return cassette.instrument(client)


def test_azure_is_keyed_by_deployment_and_api_version_and_replays_at_another_endpoint() -> None:
    with DevServer() as srv:
        with cassette.using("azure.json", mode="record"):
            live = ask(azure(srv.url), model="support-gpt4o")
            other_version = ask(azure(srv.url, "2025-01-01-preview"), model="support-gpt4o")
            other_deployment = ask(azure(srv.url, azure_deployment="support-gpt4o-eu"), model="support-gpt4o")
        paths = [r.path for r in srv.requests]
    assert paths[0] == "/openai/deployments/support-gpt4o/chat/completions"
    assert paths[2] == "/openai/deployments/support-gpt4o-eu/chat/completions"
    calls = cassette.load_cassette("azure.json").interactions
    assert [(c.request["deployment"], c.request["api_version"]) for c in calls] == [
        ("support-gpt4o", "2024-10-21"),
        ("support-gpt4o", "2025-01-01-preview"),
        ("support-gpt4o-eu", "2024-10-21"),
    ]
    assert len({c.key for c in calls}) == 3  # another API version or deployment: another recording
    assert "3f9c2b7a8e1d4c6b9a0f5e2d7c8b1a4f" not in Path("azure.json").read_text()  # the api-key header

    with cassette.using("azure.json", mode="replay"):
        elsewhere = (
            "https://acme-eastus.openai.azure.com"  # unreachable from the test: served by the cassette
        )
        assert ask(azure(elsewhere), model="support-gpt4o") == live
        assert ask(azure(elsewhere, "2025-01-01-preview"), model="support-gpt4o") == other_version
        assert (
            ask(azure(elsewhere, azure_deployment="support-gpt4o-eu"), model="support-gpt4o")
            == other_deployment
        )
    with pytest.raises(cassette.CassetteMiss), cassette.using("azure.json", mode="replay"):
        ask(azure(elsewhere, "2024-06-01"), model="support-gpt4o")


def test_an_azure_recording_keyed_without_deployment_and_api_version_still_replays() -> None:
    """A recording an earlier release made (its key held neither) is served by the fallback match."""
    with DevServer() as srv, cassette.using("old.json", mode="record"):
        live = ask(azure(srv.url), model="support-gpt4o")
    data = json.loads(Path("old.json").read_text())
    (call,) = data["interactions"]
    for field in ("deployment", "api_version"):
        del call["request"][field]
    call["key"] = "0" * 64  # what that release computed: not this one's
    Path("old.json").write_text(json.dumps(data))
    with cassette.using("old.json", mode="replay"):
        assert ask(azure("https://acme-eastus.openai.azure.com"), model="support-gpt4o") == live


def test_an_azure_error_replays_as_the_sdks_own_exception() -> None:
    with DevServer() as srv, cassette.using("azure-429.json", mode="record"):
        with pytest.raises(openai.RateLimitError):
            ask(azure(srv.url), model="error-429")
    with cassette.using("azure-429.json", mode="replay"):
        with pytest.raises(openai.RateLimitError) as raised:
            ask(azure("https://acme-eastus.openai.azure.com"), model="error-429")
    assert raised.value.status_code == 429
