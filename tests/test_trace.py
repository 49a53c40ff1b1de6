"""Production traces: calls outside any cassette, through the real seam, appended to a JSONL file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import CassetteWarning, TraceError, get_plugin_manager
from cassette.core.canonical import request_key
from cassette.testing.devserver import DevServer

OPENAI_KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0"


@cassette.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "charged twice"}


@cassette.tool
def fetch_credentials(service: str) -> dict[str, str]:
    return {"service": service, "api_key": OPENAI_KEY}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_each_call_outside_a_cassette_is_one_line(openai_client: Any, tmp_path: Path) -> None:
    path = tmp_path / "traces" / "prod.jsonl"
    with cassette.trace(path) as t:
        answer = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "My card was charged twice"}]
        )
        order = lookup_order("A1")
        stream = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}], stream=True
        )
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert order == {"order_id": "A1", "status": "charged twice"}  # the live result, untouched
    assert answer.choices[0].message.content and streamed
    got = lines(path)
    assert [(g["run"], g["seq"], g["kind"]) for g in got] == [
        (t.run, 0, "llm"),
        (t.run, 1, "tool"),
        (t.run, 2, "llm"),
    ]
    assert got[0]["request"]["messages"] == [{"role": "user", "content": "My card was charged twice"}]
    assert got[0]["response"]["json"]["choices"][0]["message"]["content"] == answer.choices[0].message.content
    assert got[1]["request"] == {"kind": "tool", "name": "lookup_order", "arguments": {"order_id": "A1"}}
    assert got[1]["response"] == {"result": {"order_id": "A1", "status": "charged twice"}}
    assert got[1]["key"] == request_key(got[1]["request"])
    events = got[2]["response"]["events"]
    assert events[-1] == "data: [DONE]" and "incomplete" not in got[2]["response"]
    assert t.stats() == {"written": 3, "dropped": 0, "failed": 0}


def test_redaction_happens_before_anything_is_written_and_the_key_is_the_unredacted_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "prod.jsonl"
    with cassette.trace(path):
        assert fetch_credentials("billing")["api_key"] == OPENAI_KEY  # the caller still gets the real value
        lookup_order(OPENAI_KEY)
    raw = path.read_bytes()
    assert OPENAI_KEY.encode() not in raw
    got = lines(path)
    assert got[0]["response"]["result"]["api_key"] == "<redacted>"
    assert got[1]["request"]["arguments"]["order_id"] != OPENAI_KEY
    unredacted = {"kind": "tool", "name": "lookup_order", "arguments": {"order_id": OPENAI_KEY}}
    assert got[1]["key"] == request_key(unredacted) != request_key(got[1]["request"])


def test_a_run_is_a_with_block_or_an_explicit_new_run(tmp_path: Path) -> None:
    path = tmp_path / "prod.jsonl"
    with cassette.trace(path) as first:
        lookup_order("A1")
    with cassette.trace(path, run="ticket-42") as second:
        lookup_order("A2")
        lookup_order("A3")
    handle = cassette.trace(path)
    lookup_order("B1")
    new = handle.new_run()
    lookup_order("B2")
    handle.close()
    lookup_order("not traced")  # every handle is closed: calls pass straight through
    got = lines(path)
    assert second.run == "ticket-42" and len({first.run, second.run, new}) == 3
    assert [(g["run"], g["seq"]) for g in got] == [
        (first.run, 0),
        ("ticket-42", 0),
        ("ticket-42", 1),
        (got[3]["run"], 0),
        (new, 0),
    ]
    assert got[3]["run"] not in (first.run, new)
    with pytest.raises(TraceError, match="closed"):
        handle.new_run()


def test_calls_inside_a_cassette_go_to_the_cassette_not_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "prod.jsonl"
    with cassette.trace(path) as t:
        with cassette.using(tmp_path / "c.json", mode="record"):
            lookup_order("in cassette")
        lookup_order("outside")
    assert [g["request"]["arguments"]["order_id"] for g in lines(path)] == ["outside"]
    assert t.stats()["written"] == 1


def test_the_environment_variable_turns_tracing_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anthropic_client: Any
) -> None:
    path = tmp_path / "env.jsonl"
    monkeypatch.setenv("CASSETTE_TRACE", str(path))
    lookup_order("A1")
    anthropic_client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    )
    handle = cassette.trace()  # the same handle the seam used
    assert handle.flush()
    got = lines(path)
    assert [g["kind"] for g in got] == ["tool", "llm"]
    assert {g["run"] for g in got} == {handle.run}
    assert got[1]["request"]["provider"] == "anthropic"
    monkeypatch.delenv("CASSETTE_TRACE")
    with pytest.raises(TraceError, match="CASSETTE_TRACE"):
        cassette.trace()


def test_a_stream_is_written_when_it_is_closed_even_half_read(openai_client: Any, tmp_path: Path) -> None:
    path = tmp_path / "prod.jsonl"
    with cassette.trace(path) as t:
        stream = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "tell me a long story"}], stream=True
        )
        next(iter(stream))
        assert t.flush() and lines(path) == []  # nothing yet: the stream is still open
        stream.close()
    (line,) = lines(path)
    assert line["response"]["incomplete"] is True
    assert line["response"]["events"]


async def test_async_calls_are_traced(async_openai_client: Any, tmp_path: Path) -> None:
    path = tmp_path / "prod.jsonl"
    with cassette.trace(path):
        await async_openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    assert [g["kind"] for g in lines(path)] == ["llm"]


def test_threads_share_the_trace_and_every_call_gets_its_own_seq(tmp_path: Path) -> None:
    path = tmp_path / "prod.jsonl"

    def work(n: int) -> None:
        for i in range(50):
            lookup_order(f"{n}-{i}")

    with cassette.trace(path) as t:
        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]  # no context: fallback
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    got = lines(path)
    assert len(got) == 400 and {g["run"] for g in got} == {t.run}
    assert sorted(g["seq"] for g in got) == list(range(400))
    assert len({g["request"]["arguments"]["order_id"] for g in got}) == 400


class _BlockingRedactor:
    """Holds the writer thread inside redaction until released, so the queue fills for real."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    @cassette.hookimpl
    def cassette_redact(self, data: Any, kind: str, part: str) -> None:
        if threading.current_thread().name == "cassette-trace-writer" and not self.release.is_set():
            self.entered.set()
            self.release.wait(30)


def test_a_full_queue_drops_and_counts_instead_of_blocking_the_call(tmp_path: Path) -> None:
    blocker = _BlockingRedactor()
    pm = get_plugin_manager()
    pm.register(blocker)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with cassette.trace(tmp_path / "prod.jsonl", max_queue=2) as t:
                lookup_order("first")
                assert blocker.entered.wait(30)  # the writer holds line 1; the queue is empty
                results = [lookup_order(f"n{i}") for i in range(5)]  # 2 fit, 3 are dropped
                assert [r["order_id"] for r in results] == [f"n{i}" for i in range(5)]
                assert t.stats()["dropped"] == 3
                blocker.release.set()
    finally:
        pm.unregister(blocker)
    assert t.stats() == {"written": 3, "dropped": 3, "failed": 0}
    dropped = [w for w in caught if issubclass(w.category, CassetteWarning) and "dropping" in str(w.message)]
    assert len(dropped) == 1  # warned once, not per line
    assert [g["request"]["arguments"]["order_id"] for g in lines(tmp_path / "prod.jsonl")] == [
        "first",
        "n0",
        "n1",
    ]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_failing_write_never_fails_the_call() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cassette.trace("/dev/full") as t:  # every write fails with ENOSPC
            assert lookup_order("A1")["order_id"] == "A1"
            assert lookup_order("A2")["order_id"] == "A2"
            assert t.flush()
    assert t.stats() == {"written": 0, "dropped": 0, "failed": 2}
    failed = [w for w in caught if "cannot write a trace line" in str(w.message)]
    assert len(failed) == 1 and "/dev/full" in str(failed[0].message)


def test_an_unopenable_path_raises_from_trace_and_only_warns_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = blocker / "trace.jsonl"  # a directory that is a file: cannot be created
    with pytest.raises(TraceError, match=r"cannot open trace file .*a-file.*writable directory"):
        cassette.trace(bad)
    monkeypatch.setenv("CASSETTE_TRACE", str(bad))
    with pytest.warns(CassetteWarning, match="CASSETTE_TRACE"):
        assert lookup_order("A1")["order_id"] == "A1"
    assert lookup_order("A2")["order_id"] == "A2"  # remembered: no second warning, no slowdown


def test_max_queue_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="max_queue"):
        cassette.trace(tmp_path / "t.jsonl", max_queue=0)


_WRITER = """
import sys
import cassette

@cassette.tool
def step(n: int, pad: str) -> int:
    return n

with cassette.trace(sys.argv[1], run=sys.argv[2]):
    for n in range(200):
        step(n, sys.argv[2] * 1000)  # ~5 KB lines, above PIPE_BUF: torn if not one write
"""


def test_processes_appending_to_one_file_interleave_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path), f"proc{n}"], env=env, cwd=tmp_path)
        for n in range(4)
    ]
    assert [p.wait(120) for p in procs] == [0, 0, 0, 0]
    raw = path.read_bytes().splitlines()
    assert len(raw) == 800
    got = [json.loads(line) for line in raw]  # a torn line would not parse
    for n in range(4):
        mine = [g for g in got if g["run"] == f"proc{n}"]
        assert sorted(g["seq"] for g in mine) == list(range(200))
        assert all(g["request"]["arguments"]["pad"] == f"proc{n}" * 1000 for g in mine)


def test_tracing_off_costs_nothing_visible(tmp_path: Path) -> None:
    assert cassette.current_session() is None
    assert lookup_order("A1")["order_id"] == "A1"
    assert not list(tmp_path.glob("*.jsonl"))


def test_devserver_calls_through_a_plain_client_are_not_traced_only_instrumented_ones(tmp_path: Path) -> None:
    from openai import OpenAI

    with DevServer() as srv, cassette.trace(tmp_path / "prod.jsonl") as t:
        OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0).models.list()
        cassette.instrument(
            OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        ).models.list()
    (line,) = lines(tmp_path / "prod.jsonl")
    assert line["kind"] == "http" and line["request"]["method"] == "GET" and line["run"] == t.run


SESSION_TOKEN = "Qm7xT2vK9pL4wR8nZ3bY6cH1jF5dS0gA"  # opaque: redacted under its name, by no format


@cassette.tool
def login(user: str) -> dict[str, str]:
    return {"user": user, "session_token": SESSION_TOKEN}


@cassette.tool
def list_orders(auth_header: str, note: str) -> list[str]:
    return ["A1"]


def _login_then_list() -> None:
    token = login("bob")["session_token"]
    assert token == SESSION_TOKEN  # the caller gets the real value
    list_orders(f"Session {token}", note=f"called with {token}")  # innocent names: only the spread takes it


@pytest.mark.parametrize("how", ["trace()", "CASSETTE_TRACE"])
def test_a_redaction_spreads_to_the_later_calls_of_the_traced_run(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prod.jsonl"
    if how == "trace()":
        with cassette.trace(path):
            _login_then_list()
    else:
        monkeypatch.setenv("CASSETTE_TRACE", str(path))
        _login_then_list()
        assert cassette.trace().flush()
    raw = path.read_bytes()
    assert SESSION_TOKEN.encode() not in raw
    first, second = lines(path)
    assert first["response"]["result"]["session_token"] == "<redacted>"
    arguments = second["request"]["arguments"]
    assert arguments == {"auth_header": "Session <redacted>", "note": "called with <redacted>"}
    # the key is still the unredacted request's, so a replay of the same run matches
    live = {
        "kind": "tool",
        "name": "list_orders",
        "arguments": {"auth_header": f"Session {SESSION_TOKEN}", "note": f"called with {SESSION_TOKEN}"},
    }
    assert second["key"] == request_key(live)
