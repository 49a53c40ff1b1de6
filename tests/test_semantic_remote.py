"""The judge and openai-embeddings backends: recorded through the seam, replayed offline."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from openai import OpenAI

import cassette
from cassette import SemanticBackendError
from cassette.plugins import semantic_remote
from cassette.testing.devserver import DevServer

CASSETTE = "tests/cassettes/judge.json"
ANSWER = "Sorry about the double charge. I have issued a refund of $20 to your card."


@pytest.fixture(autouse=True)
def _reset_client() -> Iterator[None]:
    yield
    semantic_remote.set_client(None)


def _use(srv: DevServer) -> None:
    semantic_remote.set_client(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))


def test_judge_verdict_is_recorded_and_replayed_offline(devserver: DevServer) -> None:
    _use(devserver)
    with cassette.using(CASSETTE):
        live = cassette.semantic_match(ANSWER, "offers a refund", backend="judge")
    assert live.backend == "judge" and live.score in (0.0, 1.0)
    assert live.reason.startswith(("judge pass", "judge fail"))
    recorded = cassette.load_cassette(CASSETTE).interactions
    assert len(recorded) == 1
    request = recorded[0].request
    assert request["temperature"] == 0 and request["seed"] == semantic_remote.JUDGE_SEED
    assert request["response_format"]["json_schema"]["strict"] is True
    assert semantic_remote.JUDGE_PROMPT_VERSION in str(recorded[0].request["messages"][0]["content"]) or (
        "$blob" in str(recorded[0].request["messages"][0]["content"])
    )

    devserver.stop()
    with cassette.using(CASSETTE, mode="replay"):
        again = cassette.semantic_match(ANSWER, "offers a refund", backend="judge")
    assert (again.score, again.reason) == (live.score, live.reason)
    assert len(devserver.requests) == 1


def test_an_unrecorded_verdict_is_a_clear_miss(devserver: DevServer) -> None:
    _use(devserver)
    with cassette.using(CASSETTE):
        cassette.semantic_match(ANSWER, "offers a refund", backend="judge")
    devserver.stop()
    with pytest.raises(cassette.CassetteMiss, match="ANSWER"), cassette.using(CASSETTE, mode="replay"):
        cassette.semantic_match(ANSWER, "ships the order tomorrow", backend="judge")


def test_judge_replays_with_no_api_key_and_no_client(devserver: DevServer) -> None:
    _use(devserver)
    with cassette.using(CASSETTE):
        live = cassette.semantic_match(ANSWER, "offers a refund", backend="judge")
    devserver.stop()
    semantic_remote.set_client(None)  # replay builds its own keyless client
    with cassette.using(CASSETTE, mode="replay"):
        assert cassette.semantic_match(ANSWER, "offers a refund", backend="judge").score == live.score


def test_without_a_key_or_client_recording_says_what_to_set() -> None:
    with pytest.raises(cassette.CassetteError, match="OPENAI_API_KEY"):
        cassette.semantic_match(ANSWER, "offers a refund", backend="judge")


def test_without_the_openai_package_the_judge_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setitem(sys.modules, "openai", None)  # as if not installed: `import openai` raises
    with pytest.raises(SemanticBackendError, match=r"pip install 'cassette\[openai\]'"):
        cassette.semantic_match(ANSWER, "offers a refund", backend="judge")


def test_openai_embeddings_record_and_replay(devserver: DevServer) -> None:
    _use(devserver)
    with cassette.using(CASSETTE):
        live = cassette.semantic_match(ANSWER, "issued a refund of $20", backend="openai-embeddings")
        vetoed = cassette.semantic_match(
            "We cannot refund you.", "issued a refund", backend="openai-embeddings"
        )
    assert 0.0 <= live.score <= 1.0 and live.backend == "openai-embeddings"
    assert not vetoed and "negated" in vetoed.reason
    devserver.stop()
    with cassette.using(CASSETTE, mode="replay"):
        again = cassette.semantic_match(ANSWER, "issued a refund of $20", backend="openai-embeddings")
        cassette.semantic_match("We cannot refund you.", "issued a refund", backend="openai-embeddings")
    assert again.score == live.score


def test_config_chooses_the_default_backend_and_threshold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cassette]\nsemantic_backend = "lexical"\nsemantic_thresholds = {lexical = 0.99}\n'
    )
    result = cassette.semantic_match("We issued a full refund today for you.", "issued a refund")
    assert result.threshold == 0.99 and result.backend == "lexical"
