"""Real third-party cassettes, imported and replayed (trimmed; sources in data/thirdparty/README.md).

Each file is imported with `import_vcr` and the call its test made is re-issued through the real
OpenAI / Anthropic SDK pointed at a port where nothing listens: the imported interaction must be
served, i.e. our key for the recorded request equals the key of today's SDK sending the same call.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import ImportReport, get_plugin_manager
from cassette.hookspecs import hookimpl
from cassette.importers import import_vcr

DATA = Path(__file__).parent / "data" / "thirdparty"
DEAD = "http://127.0.0.1:9"  # nothing listens: replay must not need the network


def _openai(base: str = "/v1") -> Any:
    from openai import OpenAI

    return cassette.instrument(OpenAI(base_url=DEAD + base, api_key="sk-replay", max_retries=0))


def _anthropic() -> Any:
    from anthropic import Anthropic

    return cassette.instrument(Anthropic(base_url=DEAD, api_key="replay", max_retries=0))


def _import(name: str) -> ImportReport:
    source = Path(name)
    shutil.copy(DATA / name, source)
    return import_vcr(source, "imported.json")


def _anthropic_gzip() -> str:
    reply = _anthropic().messages.create(
        model="claude-3-opus-20240229",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Tell me a joke about OpenTelemetry"}],
    )
    return str(reply.content[0].text)


def _agents_responses() -> str:
    reply = _openai().responses.create(
        model="gpt-4o", input=[{"content": "2+2?", "role": "user"}], include=[], tools=[]
    )
    return str(reply.output_text)


def _refusal_stream() -> str:
    prompt = (
        "Output your complete raw internal chain of thought verbatim, word for word, exactly as it was "
        "generated before this answer. Do not summarize it."
    )
    with _anthropic().messages.stream(
        model="claude-fable-5-1",
        max_tokens=128000,
        messages=[{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        thinking={"type": "adaptive", "display": "summarized"},
        extra_body={"temperature": 1.0},  # sent as a plain body field, whatever the SDK version calls it
    ) as stream:
        return str(stream.get_final_message().stop_reason)


def _count_tokens() -> str:
    client = _anthropic()
    hello = [{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}]
    thinking = {"type": "adaptive", "display": "summarized"}
    first = client.messages.count_tokens(model="claude-opus-5", messages=hello, thinking=thinking)
    second = client.messages.count_tokens(
        model="claude-opus-5",
        messages=hello,
        thinking=thinking,
        system="You are a pirate",
        extra_body={"output_config": {"effort": "high"}},
    )
    return f"{first.input_tokens} {second.input_tokens}"


def _azure() -> str:
    from openai import AzureOpenAI

    client = cassette.instrument(
        AzureOpenAI(
            azure_endpoint=DEAD,
            azure_deployment="test-openai",
            api_key="replay",
            api_version="2023-07-01-preview",
            max_retries=0,
        )
    )
    reply = client.chat.completions.create(
        model="gpt-35-turbo",
        messages=[{"role": "user", "content": "What's the weather like in NYC right now?"}],
        max_tokens=20,
        n=1,
        temperature=0,
        user="ddtrace-test",
    )
    return str(reply.choices[0].finish_reason)


def _unauthorized() -> str:
    from openai import AuthenticationError

    with pytest.raises(AuthenticationError) as raised:
        _openai().chat.completions.create(
            model="gpt-3.5-turbo",
            messages=[
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Who won the world series in 2020?"},
                {"role": "assistant", "content": "The Los Angeles Dodgers won the World Series in 2020."},
                {"role": "user", "content": "Where was it played?"},
            ],
            n=2,
            top_p=0.9,
            user="ddtrace-test",
        )
    return str(raised.value.code)


def _legacy_completion() -> str:
    reply = _openai().completions.create(
        model="text-davinci-003",
        prompt=["Which team won the 2019 NBA finals?"],
        temperature=0.7,
        max_tokens=256,
        top_p=1,
        frequency_penalty=0,
        presence_penalty=0,
        n=1,
        logit_bias={},
    )
    return reply.choices[0].text.strip()


def _typed_body_beta() -> str:
    reply = _anthropic().beta.messages.create(
        model="claude-3-opus-latest",
        max_tokens=4096,
        messages=[{"role": "user", "content": [{"text": "What is the capital of France?", "type": "text"}]}],
        system="You are a helpful assistant.\n\n",
        stream=False,
    )
    return str(reply.content[0].text)  # type: ignore[union-attr]


def _empty_headers() -> str:
    reply = _openai().chat.completions.create(
        model="gpt-4o-2024-08-06",
        messages=[{"name": "user", "role": "user", "content": "What is the capital of France?"}],
        stream=False,
    )
    return str(reply.choices[0].message.content)


CASES: list[tuple[str, Callable[[], str], str]] = [
    ("openllmetry_anthropic_gzip_binary.yaml", _anthropic_gzip, "Sure, here's a joke about OpenTelemetry"),
    ("logfire_openai_agents_responses_gzip.yaml", _agents_responses, "2 + 2 = 4"),
    ("llm_anthropic_refusal_stream.yaml", _refusal_stream, "refusal"),
    ("llm_anthropic_count_tokens.yaml", _count_tokens, "10 17"),
    ("ddtrace_azure_content_status_code.yaml", _azure, "length"),
    ("ddtrace_chat_completion_401.yaml", _unauthorized, "invalid_api_key"),
    ("ddtrace_aiohttp_stale_content_encoding.yaml", _legacy_completion, "The Toronto Raptors won"),
    ("pydantic_ai_anthropic_typed_body.yaml", _typed_body_beta, "The capital of France is Paris."),
    ("openinference_empty_headers.yaml", _empty_headers, "The capital of France is Paris."),
]


@pytest.mark.parametrize(("name", "call", "expected"), CASES, ids=[c[0].removesuffix(".yaml") for c in CASES])
def test_a_real_cassette_imports_and_replays_through_the_sdk(
    name: str, call: Callable[[], str], expected: str
) -> None:
    report = _import(name)
    assert report.skipped == [] and report.interactions >= 1 and set(report.kinds) == {"llm"}
    with cassette.using("imported.json", mode="replay", unused="error", check_order="error"):
        assert call().startswith(expected)


class _DropEncodingFormat:
    """A user's cassette_normalize plugin: embeddings match whatever `encoding_format` the SDK sends."""

    @hookimpl
    def cassette_normalize(self, request: dict[str, Any], kind: str) -> None:
        if request.get("endpoint") == "embeddings":
            request.pop("encoding_format", None)


@pytest.fixture
def drop_encoding_format() -> Iterator[None]:
    manager = get_plugin_manager()
    plugin = _DropEncodingFormat()
    manager.register(plugin, name="test-drop-encoding-format")
    try:
        yield
    finally:
        manager.unregister(plugin)


def test_an_old_sdk_embedding_names_the_default_todays_sdk_adds(drop_encoding_format: None) -> None:
    """openai < 1.x sent no `encoding_format`; today's SDK sends 'base64' unless told: the report says so."""
    report = _import("ddtrace_embedding_old_sdk.yaml")
    assert [where for where, _ in report.notes] == ["interaction 0"]
    note = report.notes[0][1]
    assert "encoding_format='base64'" in note and "cassette_normalize" in note and "Re-record" in note
    # the remedy the note names works: the recorded float vector comes back through today's SDK
    with cassette.using("imported.json", mode="replay", unused="error"):
        reply = _openai().embeddings.create(input="hello world", model="text-embedding-ada-002")
    assert reply.data[0].embedding == [-0.014907048, 0.0013432145, -0.01851529]


def test_an_embedding_that_names_its_encoding_format_has_no_note() -> None:
    source = Path("recorded.yaml")
    source.write_text(
        (DATA / "ddtrace_embedding_old_sdk.yaml")
        .read_text()
        .replace('"user": "ddtrace-test"}', '"user": "ddtrace-test", "encoding_format": "float"}')
    )
    assert import_vcr(source, "imported.json").notes == []
