"""Core behaviour: modes, the seam, matching and misses, threads and tasks — against the real SDK."""

from __future__ import annotations

import asyncio
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion

import cassette
from cassette.testing.devserver import DevServer
from tests import agent_helpers
from tests.agent_helpers import run_agent

CASSETTE = "tests/cassettes/triage.json"


def _client(srv: DevServer) -> OpenAI:
    return cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))


def _ask(client: OpenAI, text: str, **kw: object) -> ChatCompletion:
    return client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}], **kw
    )


def test_auto_records_then_replays_with_the_server_stopped(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE) as rec:
        live = run_agent(client, "My card was charged twice for order A-1")
    assert rec.mode is cassette.Mode.RECORD
    assert Path(CASSETTE).is_file()
    kinds = [i.kind for i in cassette.load_cassette(CASSETTE).interactions]
    assert kinds.count("llm") >= 2 and "tool" in kinds

    devserver.stop()
    seen = len(devserver.requests)
    runs = len(agent_helpers.tool_runs)
    with cassette.using(CASSETTE) as rep:
        replayed = run_agent(client, "My card was charged twice for order A-1")
    assert rep.mode is cassette.Mode.REPLAY
    assert replayed == live
    assert len(devserver.requests) == seen  # no request reached the server
    assert len(agent_helpers.tool_runs) == runs  # the tool did not run on replay
    assert rep.stats()["served"]["tool"] >= 1


def test_replayed_objects_are_the_sdks_own_types(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE, mode="record"):
        live = _ask(client, "hello there")
    devserver.stop()
    with cassette.using(CASSETTE, mode="replay"):
        again = _ask(client, "hello there")
    assert isinstance(again, ChatCompletion)
    assert again.model_dump() == live.model_dump()


def test_decorated_async_function_is_really_recorded_and_replayed(devserver: DevServer) -> None:
    client = cassette.instrument(
        AsyncOpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)
    )

    @cassette.use(CASSETTE)
    async def scenario() -> str:
        r = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "refund please"}]
        )
        return str(r.choices[0].message.content)

    live = asyncio.run(scenario())
    assert len(cassette.load_cassette(CASSETTE).interactions) == 1
    devserver.stop()
    assert asyncio.run(scenario()) == live


def test_record_mode_overwrites_and_replay_mode_never_goes_live(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE, mode="record"):
        _ask(client, "first")
    with cassette.using(CASSETTE, mode="record"):
        _ask(client, "second")
    recorded = cassette.load_cassette(CASSETTE).interactions
    assert len(recorded) == 1 and recorded[0].request["messages"][0]["content"] == "second"
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE, mode="replay"):
        _ask(client, "first")
    assert len(devserver.requests) == 2


def test_replay_without_a_cassette_names_the_file_and_the_fix() -> None:
    with (
        pytest.raises(cassette.CassetteNotFoundError) as err,
        cassette.using("tests/cassettes/none.json", mode="replay"),
    ):
        pass
    assert "none.json" in str(err.value) and "CASSETTE_MODE=record" in str(err.value)


def test_unknown_mode_fails_at_once_and_never_records(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(cassette.UnknownModeError, match="recrod"):
        cassette.use(CASSETTE, mode="recrod")
    monkeypatch.setenv("CASSETTE_MODE", "playback")
    with pytest.raises(cassette.UnknownModeError, match="CASSETTE_MODE"):
        cassette.using(CASSETTE)
    assert not Path(CASSETTE).exists()


def test_env_mode_overrides_the_decorator(devserver: DevServer, monkeypatch: pytest.MonkeyPatch) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE, mode="record"):
        _ask(client, "hi")
    monkeypatch.setenv("CASSETTE_MODE", "replay")
    session = cassette.using(CASSETTE, mode="record")
    assert session.requested_mode is cassette.Mode.REPLAY
    with session:
        _ask(client, "hi")
    assert len(devserver.requests) == 1


def test_a_block_that_raises_leaves_no_cassette_for_auto_to_replay(devserver: DevServer) -> None:
    client = _client(devserver)
    with pytest.raises(RuntimeError), cassette.using(CASSETTE):
        _ask(client, "hi")
        raise RuntimeError("agent crashed")
    assert not Path(CASSETTE).exists()
    failed = Path("tests/cassettes/triage.failed.json")
    assert len(cassette.load_cassette(failed).interactions) == 1
    with cassette.using(CASSETTE) as again:  # auto still records: the failed run is not replayed
        _ask(client, "hi")
    assert again.mode is cassette.Mode.RECORD
    assert not failed.exists()  # a successful recording clears the failed one


def test_a_failed_rerecord_keeps_the_committed_cassette(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE, mode="record"):
        _ask(client, "hi")
    before = Path(CASSETTE).read_bytes()
    with pytest.raises(ValueError), cassette.using(CASSETTE, mode="record"):
        _ask(client, "something else")
        raise ValueError
    assert Path(CASSETTE).read_bytes() == before


def test_rerecord_keeps_the_committed_cassette_and_reports_drift(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE, mode="record"):
        _ask(client, "hello")
    committed = Path(CASSETTE).read_bytes()
    with cassette.using(CASSETTE, mode="rerecord") as session:
        _ask(client, "hello")
        _ask(client, "and one more call")
    assert Path(CASSETTE).read_bytes() == committed
    pending = Path("tests/cassettes/triage.pending.json")
    assert len(cassette.load_cassette(pending).interactions) == 2
    report = cassette.drift()
    assert report == session.drift
    assert any(item.change == "added" and item.seq == 1 for item in report)
    assert [i.seq for i in cassette.drift(CASSETTE)] == [i.seq for i in report]


def test_drift_without_a_rerecord_says_what_to_do() -> None:
    with pytest.raises(cassette.CassetteError, match="rerecord"):
        cassette.drift()


def test_identical_calls_are_served_in_recorded_order_and_an_extra_one_misses(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE):
        first = _ask(client, "tell me a joke")
        second = _ask(client, "tell me a joke")
    devserver.stop()
    with pytest.raises(cassette.CassetteMiss, match="called 3 times but recorded only 2"):
        with cassette.using(CASSETTE):
            assert _ask(client, "tell me a joke").id == first.id
            assert _ask(client, "tell me a joke").id == second.id
            _ask(client, "tell me a joke")


def test_a_miss_names_the_cassette_the_nearest_call_and_the_differing_field(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE):
        _ask(client, "where is my parcel?", temperature=0.2)
    devserver.stop()
    with pytest.raises(cassette.CassetteMiss) as err, cassette.using(CASSETTE):
        _ask(client, "where is my parcel?", temperature=0.7)
    message = str(err.value)
    assert str(Path(CASSETTE).resolve()) in message
    assert "temperature: 0.7 != 0.2" in message
    assert "re-record" in message


def test_a_miss_swallowed_by_the_agent_still_fails_the_block(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE):
        _ask(client, "hi")
    devserver.stop()
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE):
        _ask(client, "hi")
        try:
            _ask(client, "a call that was never recorded")
        except Exception:
            pass  # an agent's blanket except must not hide the miss


def test_a_miss_is_not_retried_by_the_sdk(devserver: DevServer) -> None:
    with cassette.using(CASSETTE):
        _ask(_client(devserver), "hi")
    devserver.stop()
    patient = cassette.instrument(
        OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=5)
    )
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE) as session:
        _ask(patient, "never recorded")
    assert len(session.misses) == 1


def test_unused_interactions_warn_by_default_and_fail_when_asked(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE):
        _ask(client, "one")
        _ask(client, "two")
    with pytest.warns(cassette.CassetteWarning, match="never used"), cassette.using(CASSETTE):
        _ask(client, "one")
    with pytest.raises(cassette.CassetteUnusedError, match="#1"), cassette.using(CASSETTE, unused="error"):
        _ask(client, "one")


def test_order_check_reports_the_first_divergence(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE):
        _ask(client, "one")
        _ask(client, "two")
    with pytest.warns(cassette.CassetteWarning, match="out of recorded order"), cassette.using(CASSETTE):
        _ask(client, "two")
        _ask(client, "one")
    with pytest.raises(cassette.CassetteOrderError), cassette.using(CASSETTE, check_order="error"):
        _ask(client, "two")
        _ask(client, "one")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with cassette.using(CASSETTE, check_order="off"):
            _ask(client, "two")
            _ask(client, "one")


def test_multi_turn_agent_whose_tool_returns_ids_replays(devserver: DevServer) -> None:
    """The tool returns a UUID the next prompt repeats: redaction must not touch it."""
    client = _client(devserver)
    with cassette.using(CASSETTE):
        live = run_agent(client, "Please check order A-77, I was charged twice")
    text = Path(CASSETTE).read_text()
    tool = next(i for i in cassette.load_cassette(CASSETTE).interactions if i.kind == "tool")
    ticket = tool.response["result"]["ticket"]
    assert ticket in text
    devserver.stop()
    with cassette.using(CASSETTE):
        assert run_agent(client, "Please check order A-77, I was charged twice") == live


def test_threads_started_inside_a_session_are_captured(devserver: DevServer) -> None:
    client = _client(devserver)
    questions = [f"question number {n}" for n in range(6)]
    with cassette.using(CASSETTE), ThreadPoolExecutor(4) as pool:
        live = sorted(
            r.choices[0].message.content or "" for r in pool.map(lambda q: _ask(client, q), questions)
        )
    assert len(cassette.load_cassette(CASSETTE).interactions) == 6
    devserver.stop()
    with cassette.using(CASSETTE, check_order="off"), ThreadPoolExecutor(4) as pool:
        again = sorted(
            r.choices[0].message.content or "" for r in pool.map(lambda q: _ask(client, q), questions)
        )
    assert again == live


def test_two_sessions_in_threads_never_see_each_others_calls(devserver: DevServer) -> None:
    client = _client(devserver)
    barrier = threading.Barrier(2)

    def run(name: str) -> None:
        with cassette.using(f"tests/cassettes/{name}.json"):
            barrier.wait()
            for n in range(3):
                _ask(client, f"{name} {n}")

    threads = [threading.Thread(target=run, args=(n,)) for n in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("alpha", "beta"):
        contents = [
            i.request["messages"][0]["content"]
            for i in cassette.load_cassette(f"tests/cassettes/{name}.json").interactions
        ]
        assert contents == [f"{name} {n}" for n in range(3)]


def test_two_sessions_in_asyncio_tasks_stay_isolated(devserver: DevServer) -> None:
    client = cassette.instrument(
        AsyncOpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)
    )

    async def run(name: str) -> None:
        async with cassette.using(f"tests/cassettes/{name}.json"):
            for n in range(3):
                await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": f"{name} {n}"}]
                )
                await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(run("alpha"), run("beta"))

    asyncio.run(main())
    for name in ("alpha", "beta"):
        contents = [
            i.request["messages"][0]["content"]
            for i in cassette.load_cassette(f"tests/cassettes/{name}.json").interactions
        ]
        assert contents == [f"{name} {n}" for n in range(3)]


def test_without_a_session_calls_pass_straight_through(devserver: DevServer) -> None:
    r = _ask(_client(devserver), "hello")
    assert isinstance(r, ChatCompletion)
    assert len(devserver.requests) == 1
    assert not Path("tests/cassettes").exists()


def test_normaliser_plugin_makes_a_volatile_field_match(devserver: DevServer) -> None:
    import re

    from cassette import get_plugin_manager

    class DropDates:
        @cassette.hookimpl
        def cassette_normalize(self, request: dict, kind: str) -> None:
            for m in request.get("messages", []):
                if isinstance(m.get("content"), str):
                    m["content"] = re.sub(r"\d{4}-\d{2}-\d{2}", "<date>", m["content"])

    pm = get_plugin_manager()
    plugin = DropDates()
    pm.register(plugin)
    try:
        client = _client(devserver)
        with cassette.using(CASSETTE):
            live = _ask(client, "what happened on 2026-11-30?")
        devserver.stop()
        with cassette.using(CASSETTE):
            assert _ask(client, "what happened on 2026-12-01?").id == live.id
    finally:
        pm.unregister(plugin)


@cassette.tool
def _where_am_i(tag: str) -> str:
    return f"{tag}:{Path.cwd().name}"


def test_a_relative_path_is_resolved_once_as_open_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: an agent that changed directory inside the block moved where the cassette was written
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    with cassette.using("rel.json", mode="record", store="rel-blobs") as session:
        monkeypatch.chdir(tmp_path / "b")
        live = _where_am_i("x")
    assert session.path == tmp_path / "a" / "rel.json"
    assert (tmp_path / "a" / "rel.json").is_file() and not (tmp_path / "b" / "rel.json").exists()
    monkeypatch.chdir(tmp_path / "a")
    with cassette.using("rel.json", mode="replay", store="rel-blobs"):
        monkeypatch.chdir(tmp_path / "b")
        assert _where_am_i("x") == live == "x:b"


def test_a_replayed_cassette_is_freed_when_its_block_ends(devserver: DevServer) -> None:
    """Nothing of the library keeps a finished replay's parsed cassette alive (a suite's last
    cassette would stay in memory, and in every collector pass, until the next block ended)."""
    import gc
    import weakref

    client = _client(devserver)
    with cassette.using(CASSETTE, mode="record"):
        _ask(client, "hello")

    def replay() -> weakref.ref[Any]:
        with cassette.using(CASSETTE, mode="replay") as session:
            _ask(client, "hello")
        assert session.cassette is not None
        return weakref.ref(session.cassette)

    held = replay()
    gc.collect()
    assert held() is None


def test_drift_after_a_later_replay_block_says_no_rerecord_finished(devserver: DevServer) -> None:
    client = _client(devserver)
    with cassette.using(CASSETTE, mode="record"):
        _ask(client, "hello")
    with cassette.using(CASSETTE, mode="rerecord"):
        _ask(client, "hello")
    assert isinstance(cassette.drift(), list)  # the rerecord is there to read
    with cassette.using(CASSETTE, mode="replay"):
        _ask(client, "hello")
    with pytest.raises(cassette.CassetteError, match="rerecord"):
        cassette.drift()  # as before: the last block in this context was not a rerecord
