"""`cassette promote` for Gemini, Bedrock and MCP: a traced run of the real SDK (google-genai, boto3,
mcp) becomes a cassette and a pytest skeleton; the skeleton as written makes every recorded call
again through the provider plugin's `cassette_reissue_request` (replay serves each one: it runs with
``unused="error"``), and the agent itself replays from the promoted cassette with the server gone."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

genai = pytest.importorskip("google.genai")
boto3 = pytest.importorskip("boto3")
mcp = pytest.importorskip("mcp")

from botocore.config import Config  # noqa: E402
from google.genai import types  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

import cassette  # noqa: E402
from cassette import HttpRequest, get_plugin_manager  # noqa: E402
from cassette.maintenance.promote import reissue_request  # noqa: E402
from cassette.plugins.providers.gemini import reissue_path  # noqa: E402
from cassette.testing.devserver import DevServer  # noqa: E402

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a replay that went out would fail
ASK = [{"role": "user", "content": [{"text": "What is the capital of France?"}]}]
MCP_SERVER = str(Path(__file__).with_name("mcp_server.py"))


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.chdir(pytester.path)
    for name in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nasyncio_default_fixture_loop_scope = "function"\n')
    return pytester


def promoted(trace: Path, name: str) -> Path:
    report = cassette.promote(trace, f"tests/cassettes/{name}.json", test=f"tests/test_{name}.py")
    assert report.test is not None and report.bad_lines == [] and report.skipped == []
    return report.target


def skeleton_passes(pytester: pytest.Pytester, name: str) -> str:
    """Run the promoted skeleton as written: it passes only if replay served every recorded call."""
    result = pytester.runpytest(f"tests/test_{name}.py", "-p", "no:cacheprovider")
    assert result.parseoutcomes().get("passed") == 1, result.stdout.str()
    return result.stdout.str()


# --- Gemini -----------------------------------------------------------------------------------------


def gemini_client(base_url: str, api_key: str) -> Any:
    http = types.HttpOptions(base_url=base_url, httpx_client=cassette.http_client())
    return genai.Client(api_key=api_key, http_options=http)


def gemini_agent(client: Any) -> list[Any]:
    config = types.GenerateContentConfig(system_instruction="You are a support agent.", temperature=0)
    said = client.models.generate_content(model="gemini-2.5-flash", contents="Where is A1001?", config=config)
    stream = client.models.generate_content_stream(model="gemini-2.5-flash", contents="How do I reset it?")
    counted = client.models.count_tokens(model="gemini-2.5-flash", contents="How do I reset it?")
    embedded = client.models.embed_content(model="gemini-embedding-001", contents="refund policy")
    streamed = "".join(c.text or "" for c in stream)
    try:  # an SDK call that is no model call (the devserver knows no Gemini model by name: a 404)
        looked_up: Any = client.models.get(model="gemini-2.5-flash").name
    except genai.errors.ClientError as exc:
        looked_up = exc.code
    return [said.text, streamed, counted.total_tokens, embedded.embeddings[0].values, looked_up]


def test_a_promoted_gemini_run_is_made_again_by_its_skeleton_and_replays_the_sdk(
    project: pytest.Pytester, devserver: DevServer
) -> None:
    trace = project.path / "traces" / "prod.jsonl"
    with cassette.trace(trace):
        live = gemini_agent(gemini_client(devserver.url, "AIza-recording-key"))
    path = promoted(trace, "gemini")
    source = (project.path / "tests" / "test_gemini.py").read_text()
    assert "#   #0 llm gemini generateContent gemini-2.5-flash" in source
    assert "llm gemini batchEmbedContents gemini-embedding-001" in source
    assert "llm gemini streamGenerateContent gemini-2.5-flash" in source
    devserver.stop()

    out = skeleton_passes(project, "gemini")
    assert "4 LLM, 1 HTTP calls served" in out
    with cassette.using(path, mode="replay", unused="error", check_order="error", network_guard=True):
        assert gemini_agent(gemini_client(NOWHERE, "another-key")) == live


def test_gemini_reissue_urls_route_back_to_the_recorded_method_and_model() -> None:
    for model in ("gemini-2.5-flash", "tunedModels/my-tune", "endpoints/1234", "anthropic/claude-opus-4"):
        for method in ("generateContent", "streamGenerateContent", "countTokens"):
            url = reissue_path(method, model)
            assert url.startswith("https://")
            # the plugin reads the URL it built back as the same call (its own request hook)
            hook = get_plugin_manager().hook
            read = hook.cassette_http_request(request=HttpRequest("POST", url, (), b"{}"))
            assert (read["endpoint"], read["model"]) == (method, model)
    sent = reissue_request(
        {
            "kind": "llm",
            "provider": "gemini",
            "endpoint": "generateContent",
            "model": "gemini-2.5-flash",
            "query": [["foo", "1"]],
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        }
    )
    assert sent == {
        "method": "POST",
        "url": "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        "params": [["foo", "1"]],
        "json": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},  # model and query are the URL's
    }


# --- Bedrock ----------------------------------------------------------------------------------------


def bedrock_client(url: str, **credentials: str) -> Any:
    made = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        config=Config(retries={"max_attempts": 0}),
        **credentials,
    )
    return cassette.instrument(made)


def bedrock_agent(client: Any) -> list[Any]:
    said = client.converse(modelId="amazon.nova-lite-v1:0", messages=ASK, inferenceConfig={"maxTokens": 100})
    streamed = list(client.converse_stream(modelId="amazon.nova-lite-v1:0", messages=ASK)["stream"])
    try:  # the devserver has no InvokeModel: a recorded error, made again and raised again all the same
        client.invoke_model(modelId="anthropic.claude-3-haiku", body=json.dumps({"messages": ASK}))
    except client.exceptions.ClientError as exc:
        refused = exc.response["Error"]["Code"]
    return [said["output"], streamed, refused]


def test_a_promoted_bedrock_run_is_made_again_by_its_skeleton_and_replays_boto3(
    project: pytest.Pytester, devserver: DevServer
) -> None:
    trace = project.path / "traces" / "prod.jsonl"
    with cassette.trace(trace):
        live = bedrock_agent(
            bedrock_client(devserver.url, aws_access_key_id="AKIAX", aws_secret_access_key="s")
        )
    assert live[2] == "UnknownOperationException" and len(live[1]) > 3
    path = promoted(trace, "bedrock")
    source = (project.path / "tests" / "test_bedrock.py").read_text()
    assert "#   #1 llm bedrock converse_stream amazon.nova-lite-v1:0 - user: 'What is the capital" in source
    devserver.stop()

    # the skeleton's client is httpx: the converse-stream answer is handed over as its event-stream frames
    assert "3 LLM calls served" in skeleton_passes(project, "bedrock")
    with cassette.using(path, mode="replay", unused="error", check_order="error", network_guard=True):
        assert bedrock_agent(bedrock_client(NOWHERE)) == live  # and no credentials at all


# --- MCP --------------------------------------------------------------------------------------------


async def mcp_agent(command: str) -> list[Any]:
    params = StdioServerParameters(command=command, args=[MCP_SERVER, "stdio"])
    async with cassette.mcp_transport(stdio_client(params), server="orders") as (read, write):
        async with mcp.ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            found = await session.call_tool("lookup_order", {"order_id": "A1001"})
            missing = await session.call_tool("lookup_order", {"order_id": "Z9"})
    return [[t.name for t in tools.tools], found.structured_content, missing.is_error]


def test_a_promoted_mcp_run_is_made_again_as_tool_calls_and_replays_without_the_server(
    project: pytest.Pytester,
) -> None:
    trace = project.path / "traces" / "prod.jsonl"
    with cassette.trace(trace):
        live = anyio.run(mcp_agent, sys.executable)
    assert live[1]["served"] == 1 and live[2] is True
    path = promoted(trace, "mcp")
    source = (project.path / "tests" / "test_mcp.py").read_text()
    assert "#   #3 tool mcp:orders/lookup_order(order_id='A1001')" in source
    assert "#   #0 tool mcp:orders(method='initialize'" in source

    # each MCP request is made again as the tool call it was recorded as (name, arguments): no server
    assert "5 tool calls served" in skeleton_passes(project, "mcp")
    with cassette.using(path, mode="replay", unused="error", check_order="error"):
        assert anyio.run(mcp_agent, "/no/such/server") == live  # no server process is started
