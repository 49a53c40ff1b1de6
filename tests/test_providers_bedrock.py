"""Amazon Bedrock through botocore's own event system: the real boto3 client records Converse and
ConverseStream against the devserver, and replays them with the server stopped, no AWS credentials
in the environment and the network guard on, into botocore's own objects and errors.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError, EventStreamError  # noqa: E402

import cassette  # noqa: E402
from cassette import UninstrumentableClientError, get_plugin_manager  # noqa: E402
from cassette.core import eventstream  # noqa: E402
from cassette.maintenance.verify import verify_paths  # noqa: E402
from cassette.testing.devserver import DevServer  # noqa: E402

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
ASK = [{"role": "user", "content": [{"text": "I was charged twice for order A1001"}]}]
SYSTEM = [{"text": "You are a support agent for Acme."}]
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "lookup_order",
                "description": "Look up an order by its id",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"order_id": {"type": "string"}},
                        "required": ["order_id"],
                    }
                },
            }
        }
    ]
}
# a session's credentials, as a developer's machine has them when recording
KEY_ID, SECRET, TOKEN = (
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "IQoJb3JpZ2luX2VjEXAMPLE" * 4,
)


def client(url: str, *, live: bool, **config: Any) -> Any:
    credentials = (
        {"aws_access_key_id": KEY_ID, "aws_secret_access_key": SECRET, "aws_session_token": TOKEN}
        if live
        else {}
    )
    made = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        config=Config(**{"retries": {"max_attempts": 0}, **config}),
        **credentials,
    )
    return cassette.instrument(made)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replay as CI does: no AWS credentials anywhere, no instance metadata service."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def plain(response: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}


def events(stream_response: dict[str, Any]) -> list[dict[str, Any]]:
    return list(stream_response["stream"])


def test_converse_records_and_replays_with_the_server_gone_and_no_credentials(
    devserver: DevServer, offline: None
) -> None:
    live_client = client(devserver.url, live=True)
    with cassette.using("bedrock.json", mode="record"):
        live = live_client.converse(
            modelId=MODEL, messages=ASK, system=SYSTEM, inferenceConfig={"maxTokens": 200, "temperature": 0}
        )
    url = devserver.url
    devserver.stop()
    replay_client = client(url, live=False)
    with cassette.using("bedrock.json", mode="replay", network_guard=True) as session:
        replayed = replay_client.converse(
            modelId=MODEL, messages=ASK, system=SYSTEM, inferenceConfig={"maxTokens": 200, "temperature": 0}
        )
    assert plain(replayed) == plain(live)
    assert replayed["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert session.stats()["tokens_saved"] == live["usage"]["totalTokens"] > 0


def test_the_key_is_operation_model_and_body_not_host_port_region_or_signature(
    devserver: DevServer, offline: None
) -> None:
    with cassette.using("bedrock.json", mode="record"):
        client(devserver.url, live=True).converse(modelId=MODEL, messages=ASK, toolConfig=TOOLS)
    (recorded,) = cassette.load_cassette(Path("bedrock.json")).interactions
    assert recorded.request == {
        "kind": "llm",
        "provider": "bedrock",
        "endpoint": "converse",
        "model": MODEL,
        "messages": ASK,
        "toolConfig": TOOLS,
    }
    devserver.stop()
    # another port and another region: the same call
    other = boto3.client("bedrock-runtime", region_name="eu-west-3", endpoint_url="http://127.0.0.1:9")
    cassette.instrument(other)
    with cassette.using("bedrock.json", mode="replay") as session:
        answer = other.converse(modelId=MODEL, messages=ASK, toolConfig=TOOLS)
    assert answer["stopReason"] == "tool_use"
    assert session.stats()["served"] == {"llm": 1}
    # another model is another call
    with pytest.raises(cassette.CassetteMiss, match="model"):
        with cassette.using("bedrock.json", mode="replay"):
            other.converse(modelId="amazon.nova-lite-v1:0", messages=ASK, toolConfig=TOOLS)


def test_converse_stream_keeps_event_boundaries_and_replays_event_by_event(
    devserver: DevServer, offline: None
) -> None:
    with cassette.using("stream.json", mode="record"):
        live = events(client(devserver.url, live=True).converse_stream(modelId=MODEL, messages=ASK))
    assert len(live) > 5 and "metadata" in live[-1]
    (recorded,) = cassette.load_cassette(Path("stream.json")).interactions
    stored = recorded.response["event_stream"]
    assert [next(iter(e)) for e in live] == [e["headers"][":event-type"] for e in stored]
    assert recorded.response["headers"]["content-type"] == eventstream.CONTENT_TYPE
    # the recorded messages are rebuilt byte for byte (CRCs and all) and handed over one per chunk
    from cassette.seam.botocore import replay_parts

    _, _, chunks = replay_parts(recorded.response)
    assert len(chunks) == len(live)
    assert [eventstream.decode(c)[1] for c in chunks] == [
        json.dumps(e["json"], separators=(",", ":")).encode() for e in stored
    ]
    url = devserver.url
    devserver.stop()
    with cassette.using("stream.json", mode="replay", network_guard=True):
        replayed = events(client(url, live=False).converse_stream(modelId=MODEL, messages=ASK))
    assert replayed == live
    assert verify_paths(["stream.json"]).ok


def test_a_stream_read_halfway_is_recorded_as_incomplete(devserver: DevServer) -> None:
    with cassette.using("half.json", mode="record"):
        stream = client(devserver.url, live=True).converse_stream(modelId=MODEL, messages=ASK)["stream"]
        first = next(iter(stream))
        stream.close()  # the caller stops reading: what came so far is kept
    assert "messageStart" in first
    (recorded,) = cassette.load_cassette(Path("half.json")).interactions
    assert recorded.response.get("incomplete") is True


def test_recorded_errors_replay_as_botocore_client_errors_with_their_code(
    devserver: DevServer, offline: None
) -> None:
    live_client = client(devserver.url, live=True)
    with cassette.using("errors.json", mode="record"):
        for model in ("error-429", "error-400"):
            with pytest.raises(ClientError):
                live_client.converse(modelId=model, messages=ASK)
        live_events = []
        with pytest.raises(EventStreamError) as mid_stream:
            for event in live_client.converse_stream(modelId="stream-throttled", messages=ASK)["stream"]:
                live_events.append(event)
    recorded = cassette.load_cassette(Path("errors.json")).interactions
    assert not any(i.response.get("incomplete") for i in recorded)  # a stream ended by its exception
    devserver.stop()
    replay_client = client(devserver.url, live=False)
    with cassette.using("errors.json", mode="replay", network_guard=True):
        with pytest.raises(replay_client.exceptions.ThrottlingException) as throttled:
            replay_client.converse(modelId="error-429", messages=ASK)
        with pytest.raises(replay_client.exceptions.ValidationException) as invalid:
            replay_client.converse(modelId="error-400", messages=ASK)
        replayed_events = []
        with pytest.raises(EventStreamError) as replayed_mid_stream:
            for event in replay_client.converse_stream(modelId="stream-throttled", messages=ASK)["stream"]:
                replayed_events.append(event)
    assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
    assert throttled.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert invalid.value.response["Error"]["Code"] == "ValidationException"
    assert replayed_events == live_events and len(live_events) == 3
    assert replayed_mid_stream.value.response["Error"] == mid_stream.value.response["Error"]
    assert mid_stream.value.response["Error"]["Code"] == "throttlingException"


def test_a_recorded_retry_replays_at_once_and_an_unrecorded_one_is_not_made(
    devserver: DevServer, offline: None
) -> None:
    live_client = client(devserver.url, live=True, retries={"mode": "legacy", "max_attempts": 1})
    with cassette.using("retry.json", mode="record"):
        with pytest.raises(ClientError) as live:
            live_client.converse(modelId="error-429", messages=ASK)
    assert live.value.response["ResponseMetadata"]["RetryAttempts"] == 1
    assert len(cassette.load_cassette(Path("retry.json")).interactions) == 2  # each attempt
    devserver.stop()
    # more retries allowed than were made: replay makes the recorded one, at once, and no more
    replay_client = client(devserver.url, live=False, retries={"mode": "standard", "max_attempts": 5})
    started = time.monotonic()
    with cassette.using("retry.json", mode="replay") as session:
        with pytest.raises(ClientError) as replayed:
            replay_client.converse(modelId="error-429", messages=ASK)
    assert time.monotonic() - started < 0.5
    assert replayed.value.response["ResponseMetadata"]["RetryAttempts"] == 1
    assert session.stats()["served"] == {"llm": 2}


def test_no_credential_signature_or_date_reaches_the_cassette(devserver: DevServer) -> None:
    with cassette.using("secrets.json", mode="record"):
        client(devserver.url, live=True).converse(modelId=MODEL, messages=ASK)
    text = Path("secrets.json").read_text()
    sent = devserver.requests[-1]
    assert sent.path.endswith("/converse")
    for secret in (KEY_ID, SECRET, TOKEN, "AWS4-HMAC-SHA256", "Signature=", "x-amz-date", "X-Amz-Date"):
        assert secret.lower() not in text.lower()


def test_instrument_registers_on_the_client_passed_only(devserver: DevServer) -> None:
    made = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=devserver.url,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
    )
    other = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=devserver.url,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
    )
    assert cassette.instrument(made) is made
    assert cassette.instrument(made) is made  # twice: still one recording per call
    with pytest.warns(cassette.CassetteWarning, match="bypassed the seam"):
        with cassette.using("one.json", mode="record"):
            made.converse(modelId=MODEL, messages=ASK)
            other.converse(modelId=MODEL, messages=ASK)
    assert len(cassette.load_cassette(Path("one.json")).interactions) == 1
    # with no active cassette the instrumented client calls the server as before
    assert made.converse(modelId=MODEL, messages=ASK)["stopReason"] == "end_turn"


def test_an_aiobotocore_client_is_refused_rather_than_half_routed() -> None:
    # aiobotocore cannot be installed beside this boto3 (each release pins botocore to its own narrow
    # range): its AioBaseClient is a BaseClient subclass from the aiobotocore package, as this one is
    made = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET
    )
    made.__class__ = type("AioBaseClient", (type(made),), {"__module__": "aiobotocore.client"})
    with pytest.raises(UninstrumentableClientError, match=r"aiobotocore \(async\) client.*boto3\.client"):
        cassette.instrument(made)


def test_drift_and_show_read_bedrock_answers_through_the_plugin() -> None:
    devserver = DevServer(seed=5).start()
    live_client = client(devserver.url, live=True)
    with cassette.using("show.json", mode="record"):
        said = live_client.converse(modelId=MODEL, messages=ASK, toolConfig=TOOLS)
        events(live_client.converse_stream(modelId=MODEL, messages=ASK, toolConfig=TOOLS))
    call, streamed = cassette.load_cassette(Path("show.json")).interactions
    hook = get_plugin_manager().hook
    for inter in (call, streamed):
        output = hook.cassette_response_output(kind="llm", response=inter.response, request=inter.request)
        assert output["tool_calls"] == [{"name": "lookup_order", "arguments": {"order_id": "A1001"}}]
        assert output["finish"] == "tool_use" and output["truncated"] is False
    assert said["output"]["message"]["content"][-1]["toolUse"]["input"] == {"order_id": "A1001"}
    from cassette.cli.show import timeline

    rows = timeline(Path("show.json"))
    assert all('tool calls: lookup_order({"order_id":"A1001"})' in row["response"] for row in rows)
    assert rows[0]["tokens"] == said["usage"]["totalTokens"]
    # a re-recording whose answer changed is reviewed through the same reading
    with cassette.using("show.json", mode="rerecord"):
        live_client.converse(modelId=MODEL, messages=ASK)
        events(live_client.converse_stream(modelId=MODEL, messages=ASK, toolConfig=TOOLS))
    devserver.stop()
    changed = cassette.drift()
    assert [item.seq for item in changed] == [0]
