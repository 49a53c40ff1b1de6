"""Acceptance probes: the "Must hold" points of issues 2-7, exercised as a new user would.

Only public doors are used: the `cassette` package, the `cassette` command (a real
subprocess, or its `main()`), the pytest plugin through pytester, and the real
OpenAI/Anthropic SDKs talking HTTP to the local devserver. Each test names the issue
point it probes; a probe that exposed a bug stays here as its regression test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpcore2
import httpx2
import openai
import pydantic
import pytest
from anthropic import Anthropic
from openai import AsyncOpenAI, OpenAI

import cassette
from cassette.cli import main as cli_main
from cassette.testing.devserver import DevServer

# In-process pytester runs drop the modules they imported; the SDKs must outlive them (test_pytest_plugin).
assert httpcore2 and httpx2 and openai

CASSETTE_BIN = Path(sys.executable).with_name("cassette")
DEAD_URL = "http://127.0.0.1:9/v1"  # nothing listens here: a replay that tried the network would fail
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


def oai(base_url: str, **kw: Any) -> Any:
    return cassette.instrument(OpenAI(base_url=base_url, api_key="sk-test", max_retries=0, **kw))


def ask(client: Any, text: str, **kw: Any) -> str:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}], **kw
    )
    return str(reply.choices[0].message.content)


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed `cassette` command, as a user runs it."""
    return subprocess.run(
        [str(CASSETTE_BIN), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def cmd(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command in this process (``cassette.cli.main``, what the script calls): much faster."""
    import contextlib
    import io

    from cassette.config import clear_config_cache

    clear_config_cache()  # as a fresh process would
    raw_out, raw_err = io.BytesIO(), io.BytesIO()
    out, err = io.TextIOWrapper(raw_out, encoding="utf-8"), io.TextIOWrapper(raw_err, encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # .buffer works too (textconv)
        code = cli_main(list(args))
    out.flush()
    err.flush()
    return subprocess.CompletedProcess(
        ["cassette", *args], code, raw_out.getvalue().decode(), raw_err.getvalue().decode()
    )


@dataclasses.dataclass
class Order:
    order_id: str
    total: float
    placed: dt.date


class Refund(pydantic.BaseModel):
    order_id: str
    amount: float


class OrderNotFound(Exception):
    pass


RAN: list[str] = []


@cassette.tool
def lookup_order(order_id: str) -> Order:
    RAN.append("lookup_order")
    return Order(order_id, 42.5, dt.date(2026, 1, 2))


@cassette.tool(name="refund")
async def issue_refund(order_id: str, amount: float) -> Refund:
    RAN.append("refund")
    return Refund(order_id=order_id, amount=amount)


@cassette.tool
def find_customer(email: str) -> dict[str, str]:
    RAN.append("find_customer")
    if email == "nobody@example.com":
        raise OrderNotFound(email, 404)
    # an id the next prompt repeats: redaction must leave it alone or replay breaks
    return {"customer_id": "3f1c2a9e-8b7d-4c6e-9f1a-2b3c4d5e6f70", "email": email}


# ============================================================ issue 2: core


def test_2_2_use_decorator_records_sync_and_async_then_replays_with_the_server_gone() -> None:
    """`@cassette.use` on sync AND async functions really records, then replays offline (auto mode)."""
    with DevServer() as srv:
        client, aclient = (
            oai(srv.openai_base_url),
            cassette.instrument(AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)),
        )

        @cassette.use("tests/cassettes/sync.json")
        def test_sync() -> tuple[str, Order]:
            return ask(client, "My card was charged twice"), lookup_order("A-1")

        @cassette.use(Path("tests/cassettes/async.json"))
        async def test_async() -> tuple[str, Refund]:
            reply = await aclient.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "refund please"}]
            )
            return str(reply.choices[0].message.content), await issue_refund("A-1", 9.5)

        RAN.clear()
        live_sync, live_async = test_sync(), asyncio.run(test_async())
        assert Path("tests/cassettes/sync.json").is_file() and Path("tests/cassettes/async.json").is_file()
        assert RAN == ["lookup_order", "refund"]
        served_live = len(srv.requests)
    RAN.clear()
    assert test_sync() == live_sync and asyncio.run(test_async()) == live_async
    assert RAN == []  # tools are not run on replay
    assert served_live == 2


def test_2_2_rerecord_keeps_the_committed_file_writes_pending_and_drift_reports() -> None:
    path = Path("tests/cassettes/triage.json")
    with DevServer() as srv:
        client = oai(srv.openai_base_url)
        with cassette.using(path, mode="record"):
            ask(client, "one")
        committed = path.read_bytes()
        with cassette.using(path, mode="rerecord"):
            ask(client, "one")
            ask(client, "two")
    assert path.read_bytes() == committed
    assert path.with_name("triage.pending.json").is_file()
    changes = cassette.drift()
    assert [d.change for d in changes if d.seq == 1] == ["added"]
    assert cassette.drift(path)  # the same comparison from the files on disk


def test_2_2_cassette_mode_env_overrides_the_decorator(monkeypatch: pytest.MonkeyPatch) -> None:
    @cassette.use("tests/cassettes/env.json", mode="record")
    def run() -> None:
        ask(oai(DEAD_URL), "hello")

    monkeypatch.setenv("CASSETTE_MODE", "replay")
    with pytest.raises(cassette.CassetteNotFoundError):  # replay, not record: no live call attempted
        run()


def test_2_2_unknown_mode_raises_at_once_and_never_records(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(cassette.UnknownModeError, match="auto, record, replay, rerecord"):
        cassette.use("tests/cassettes/x.json", mode="recrod")
    monkeypatch.setenv("CASSETTE_MODE", "replya")
    with pytest.raises(cassette.UnknownModeError, match="CASSETTE_MODE"):
        with cassette.using("tests/cassettes/x.json"):
            pass
    assert not Path("tests/cassettes/x.json").exists()


def test_2_2_bad_use_arguments_are_cassette_errors() -> None:
    """Regression: `@cassette.use` without a path was a bare TypeError about os.PathLike."""
    with pytest.raises(cassette.CassetteConfigError, match=r"@cassette.use\("):

        @cassette.use  # type: ignore[arg-type]
        def test_x() -> None: ...

    with pytest.raises(cassette.CassetteConfigError, match="path"):
        cassette.using(None)  # type: ignore[arg-type]
    with pytest.raises(cassette.CassetteConfigError, match="check_order"):
        cassette.using("x.json", check_order="sometimes")
    with pytest.raises(cassette.CassetteConfigError, match="blob_threshold"):
        cassette.using("x.json", blob_threshold=-1)


def test_2_3_a_failing_record_block_leaves_nothing_auto_would_replay() -> None:
    path = Path("tests/cassettes/fail.json")
    with DevServer() as srv:
        client = oai(srv.openai_base_url)
        with pytest.raises(RuntimeError), cassette.using(path, mode="record"):
            ask(client, "hello")
            raise RuntimeError("agent crashed")
        assert not path.exists() and path.with_name("fail.failed.json").is_file()
        with cassette.using(path) as session:  # auto records, since nothing valid exists
            ask(client, "hello")
        assert session.mode is cassette.Mode.RECORD and path.is_file()
        assert not path.with_name("fail.failed.json").exists()
        good = path.read_bytes()
        with pytest.raises(RuntimeError), cassette.using(path, mode="record"):
            ask(client, "something else")
            raise RuntimeError("again")
    assert path.read_bytes() == good
    assert not list(path.parent.glob("*.tmp*"))


def test_2_4_threads_started_inside_a_session_are_captured_and_concurrent_sessions_stay_apart() -> None:
    with DevServer() as srv:
        client = oai(srv.openai_base_url)

        def agent() -> list[Any]:
            with ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(lambda q: ask(client, q), ["a", "b", "c"]))
                orders = list(pool.map(lookup_order, ["A-1", "A-2"]))
            return answers + orders

        with cassette.using("tests/cassettes/threads.json", mode="record") as rec:
            live = agent()
        assert len(rec.interactions) == 5

        def worker(name: str) -> None:
            with cassette.using(f"tests/cassettes/{name}.json", mode="record"):
                ask(client, name)
                ask(client, name + "-again")

        threads = [threading.Thread(target=worker, args=(n,)) for n in ("p", "q", "r")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        async def task(name: str) -> None:
            aclient = cassette.instrument(
                AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
            )
            async with cassette.using(f"tests/cassettes/task-{name}.json", mode="record"):
                for suffix in ("", "-again"):
                    await aclient.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": name + suffix}]
                    )
                    await asyncio.sleep(0)  # let the other tasks interleave

        async def tasks() -> None:
            await asyncio.gather(*(task(n) for n in "xyz"))

        asyncio.run(tasks())

    def prompts(path: str) -> list[str]:
        return [i.request["messages"][0]["content"] for i in cassette.load_cassette(path).interactions]

    for n in ("p", "q", "r"):
        assert prompts(f"tests/cassettes/{n}.json") == [n, n + "-again"]
    for n in "xyz":
        assert prompts(f"tests/cassettes/task-{n}.json") == [n, n + "-again"]
    with cassette.using("tests/cassettes/threads.json", mode="replay", check_order="off"):
        assert agent() == live


def test_2_5_fifo_extra_call_order_and_unused() -> None:
    path = "tests/cassettes/order.json"
    with DevServer() as srv:
        client = oai(srv.openai_base_url)
        with cassette.using(path, mode="record"):
            first, second = ask(client, "same"), ask(client, "same")
            ask(client, "other")
    replay = oai(DEAD_URL)
    with cassette.using(path, mode="replay"):
        assert [ask(replay, "same"), ask(replay, "same")] == [first, second]  # per-key FIFO
        ask(replay, "other")
    with pytest.raises(cassette.CassetteMiss, match="recorded only 2"), cassette.using(path, mode="replay"):
        for _ in range(3):
            ask(replay, "same")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cassette.using(path, mode="replay"):
            ask(replay, "other")
            ask(replay, "same")
            ask(replay, "same")
    messages = [str(w.message) for w in caught if issubclass(w.category, cassette.CassetteWarning)]
    assert any("out of recorded order" in m for m in messages)
    with pytest.raises(cassette.CassetteOrderError), cassette.using(path, mode="replay", check_order="error"):
        ask(replay, "other")
        ask(replay, "same")
        ask(replay, "same")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cassette.using(path, mode="replay"):
            ask(replay, "same")
    assert any("never used" in str(w.message) for w in caught)
    with pytest.raises(cassette.CassetteUnusedError, match="never used"):
        with cassette.using(path, mode="replay", unused="error"):
            ask(replay, "same")


def test_2_5_order_check_sees_llm_and_tool_calls_interleaved() -> None:
    with DevServer() as srv, cassette.using("tests/cassettes/mixed.json", mode="record"):
        ask(oai(srv.openai_base_url), "which order?")
        lookup_order("A-1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cassette.using("tests/cassettes/mixed.json", mode="replay"):
            lookup_order("A-1")  # the tool before the LLM call that asked for it
            ask(oai(DEAD_URL), "which order?")
    assert any("out of recorded order" in str(w.message) for w in caught)


def test_2_5_a_project_plugin_listed_in_config_normalises_a_volatile_date() -> None:
    Path("date_plugin.py").write_text(
        "import re\n"
        "from cassette import hookimpl\n\n"
        "@hookimpl\n"
        "def cassette_normalize(request, kind):\n"
        "    for m in request.get('messages', []):\n"
        "        if isinstance(m.get('content'), str):\n"
        "            m['content'] = re.sub(r'\\d{4}-\\d{2}-\\d{2}', '<date>', m['content'])\n"
    )
    Path("pyproject.toml").write_text('[tool.cassette]\nplugins = ["date_plugin"]\n')
    sys.path.insert(0, os.getcwd())
    from cassette.plugins.manager import reset_plugin_manager

    reset_plugin_manager()
    try:
        with DevServer() as srv, cassette.using("tests/cassettes/dated.json", mode="record"):
            ask(oai(srv.openai_base_url), "Today is 2026-11-30. Any news?")
        with cassette.using("tests/cassettes/dated.json", mode="replay"):
            ask(oai(DEAD_URL), "Today is 2026-12-01. Any news?")
    finally:
        sys.path.remove(os.getcwd())
        sys.modules.pop("date_plugin", None)
        reset_plugin_manager()


def test_2_6_a_miss_names_the_full_path_the_nearest_call_a_field_diff_and_the_fix() -> None:
    with DevServer() as srv, cassette.using("tests/cassettes/miss.json", mode="record"):
        ask(oai(srv.openai_base_url), "I was charged twice")
    with (
        pytest.raises(cassette.CassetteMiss) as info,
        cassette.using("tests/cassettes/miss.json", mode="replay"),
    ):
        ask(oai(DEAD_URL), "I was charged three times")
    text = str(info.value)
    assert str(Path("tests/cassettes/miss.json").resolve()) in text
    assert 'messages[0].content: "I was charged three times" != "I was charged twice"' in text
    assert "re-record" in text and "normalize" in text


def test_2_6_a_miss_is_not_retried_nor_turned_into_a_connection_error() -> None:
    with DevServer() as srv, cassette.using("tests/cassettes/retry.json", mode="record"):
        ask(oai(srv.openai_base_url), "hello")
    client = cassette.instrument(OpenAI(base_url=DEAD_URL, api_key="sk-test"))  # default max_retries=2
    with pytest.raises(cassette.CassetteMiss), cassette.using("tests/cassettes/retry.json", mode="replay"):
        try:
            ask(client, "goodbye")
        except openai.APIConnectionError as exc:  # pragma: no cover - the bug this guards against
            pytest.fail(f"a miss surfaced as {exc!r}")


def test_2_7_tools_rebuild_their_types_and_reraise_their_exceptions() -> None:
    results: dict[str, list[Any]] = {}
    for mode in ("record", "replay"):
        RAN.clear()
        with cassette.using("tests/cassettes/tools.json", mode=mode):
            order = lookup_order("A-1")
            refund = asyncio.run(issue_refund("A-1", amount=12.5))
            with pytest.raises(OrderNotFound) as info:
                find_customer("nobody@example.com")
            renamed = cassette.tool(lambda x: x * 2, name="double")(21)
        results[mode] = [order, refund, info.value.args, renamed]
        if mode == "replay":
            assert RAN == []
    assert results["record"] == results["replay"]
    assert isinstance(results["replay"][0], Order) and isinstance(results["replay"][1], Refund)
    names = [i.request["name"] for i in cassette.load_cassette("tests/cassettes/tools.json").interactions]
    assert names == ["lookup_order", "refund", "find_customer", "double"]


class Ticket:
    """A plain class: no dataclass, no pydantic, the default repr (with a memory address)."""

    def __init__(self, number: int) -> None:
        self.number = number


@cassette.tool
def close_ticket(ticket: Ticket) -> str:
    RAN.append("close_ticket")
    return f"closed {ticket.number}"


def test_2_7_a_plain_object_argument_replays() -> None:
    """Regression: a plain object's default repr (`<Ticket object at 0x…>`) went into the key, so it never
    replayed."""
    with cassette.using("tests/cassettes/ticket.json", mode="record"):
        assert close_ticket(Ticket(7)) == "closed 7"
    RAN.clear()
    with cassette.using("tests/cassettes/ticket.json", mode="replay"):
        assert close_ticket(Ticket(7)) == "closed 7"
    assert RAN == []
    with (
        pytest.raises(cassette.CassetteMiss, match="number"),
        cassette.using("tests/cassettes/ticket.json", mode="replay"),
    ):
        close_ticket(Ticket(8))


def test_2_8_manifest_layout_blob_ids_and_byte_identical_rerecord() -> None:
    system = "You are a support agent for a card issuer. " * 40  # above the blob threshold

    def record() -> bytes:
        with DevServer(seed=7) as srv, cassette.using("tests/cassettes/fmt.json", mode="record"):
            oai(srv.openai_base_url).chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "system", "content": system}, {"role": "user", "content": "hi"}],
            )
        return Path("tests/cassettes/fmt.json").read_bytes()

    first = record()
    doc = json.loads(first)
    assert isinstance(doc["version"], int)
    inter = doc["interactions"][0]
    assert {"seq", "kind", "key", "request", "response"} <= set(inter)
    ref = inter["request"]["messages"][0]["content"]
    assert set(ref) == {"$blob"}
    blob = Path("tests/cassettes/.blobs", ref["$blob"][:2], ref["$blob"][2:])
    from dulwich.objects import Blob

    assert Blob.from_string(blob.read_bytes()).id.decode() == ref["$blob"]
    assert blob.read_bytes() == system.encode()
    assert "created_at" not in json.dumps(doc) and "recorded_at" not in json.dumps(doc)
    assert record() == first


def test_2_9_redaction_removes_keys_but_keeps_ids_so_a_multi_turn_run_replays() -> None:
    openai_key = (
        "sk-proj-"
        + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
        + "T3BlbkFJ"
        + "Zy9xWv6uTs3rQp0oNm7lKj4iHg1fEd8c" * 2
    )
    anthropic_key = (
        "sk-ant-api03-" + ("Qw3rTy6uIo9pAs2dFg5hJk8lZx1cVb4nMq7wEr0tYu3iOp6aSd9fGh2jK" * 2)[:93] + "AA"
    )
    assert len(anthropic_key) == 108

    def run(client: Any) -> str:
        customer = find_customer("bob@example.com")
        return ask(client, f"Customer {customer['customer_id']} says: my key {anthropic_key} leaked")

    with DevServer() as srv, cassette.using("tests/cassettes/redact.json", mode="record"):
        live = run(oai(srv.openai_base_url, default_headers={"x-api-key": openai_key}))
    written = b"".join(p.read_bytes() for p in Path("tests/cassettes").rglob("*") if p.is_file())
    assert openai_key.encode() not in written and anthropic_key.encode() not in written
    assert b"sk-test" not in written  # the Authorization header
    assert b"3f1c2a9e-8b7d-4c6e-9f1a-2b3c4d5e6f70" in written and b"bob@example.com" in written
    with cassette.using("tests/cassettes/redact.json", mode="replay"):
        assert run(oai(DEAD_URL)) == live


def test_2_10_every_bad_input_has_its_own_error_naming_the_file_and_the_next_step() -> None:
    big = "x" * 2000
    with DevServer() as srv, cassette.using("tests/cassettes/good.json", mode="record"):
        ask(oai(srv.openai_base_url), big)
    good = Path("tests/cassettes/good.json").read_bytes()
    blob = next(p for p in Path("tests/cassettes/.blobs").rglob("*") if p.is_file())
    original_blob = blob.read_bytes()

    def replay_error(data: bytes | None = None) -> cassette.CassetteError:
        if data is not None:
            Path("tests/cassettes/bad.json").write_bytes(data)
        with pytest.raises(cassette.CassetteError) as info:
            with cassette.using("tests/cassettes/bad.json", mode="replay"):
                ask(oai(DEAD_URL), big)
        return info.value

    full = os.path.abspath("tests/cassettes/bad.json")
    cases: list[tuple[bytes, type[cassette.CassetteError]]] = [
        (b"{not json", cassette.CorruptCassetteError),
        (good[: len(good) // 2], cassette.TruncatedCassetteError),
        (b'["a list"]', cassette.CassetteShapeError),
        (good.replace(b'"version": 1', b'"version": 999'), cassette.UnsupportedVersionError),
    ]
    seen = set()
    for data, cls in cases:
        err = replay_error(data)
        assert type(err) is cls, (cls, err)
        assert full in str(err), err  # the full path, even for a relative argument
        assert any(w in str(err) for w in ("re-record", "Restore", "upgrade", "import")), err
        seen.add(type(err))
    Path("tests/cassettes/bad.json").write_bytes(good)
    blob.write_bytes(original_blob[:-1] + b"!")
    err = replay_error()
    assert isinstance(err, cassette.TamperedBlobError) and full in str(err)
    blob.unlink()
    err = replay_error()
    assert isinstance(err, cassette.MissingBlobError) and full in str(err)
    seen |= {cassette.TamperedBlobError, cassette.MissingBlobError}
    assert len(seen) == 6


# ============================================================ issue 3: providers


class Verdict(pydantic.BaseModel):
    refund: bool
    reason: str


SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"refund": {"type": "boolean"}},
            "required": ["refund"],
            "additionalProperties": False,
        },
    },
}
CHARGED = [{"role": "user", "content": "My card was charged twice for order A-1, please lookup_order"}]


def every_method(o: Any, a: Any) -> dict[str, Any]:
    """Each SDK surface of issue 3 point 2, as plain data (or the exception raised)."""
    out: dict[str, Any] = {}

    def take(name: str, call: Any) -> None:
        try:
            out[name] = call()
        except Exception as exc:  # errors must replay as the SDK's own classes
            out[name] = (type(exc).__module__, type(exc).__name__, str(exc))

    chat = o.chat.completions
    take("tools", lambda: chat.create(model="gpt-4o-mini", messages=CHARGED, tools=TOOLS).model_dump())
    take(
        "schema",
        lambda: chat.create(model="gpt-4o-mini", messages=CHARGED, response_format=SCHEMA).model_dump(),
    )
    take("n3", lambda: chat.create(model="gpt-4o-mini", messages=CHARGED, n=3).model_dump())
    take(
        "parse",
        lambda: chat.parse(model="gpt-4o-mini", messages=CHARGED, response_format=Verdict).model_dump(),
    )
    take(
        "responses",
        lambda: (lambda r: (r.output_text, r.model_dump()))(
            o.responses.create(model="gpt-4o-mini", input="charged twice")
        ),
    )
    take(
        "responses_tools",
        lambda: o.responses.create(
            model="gpt-4o-mini",
            input="please lookup_order A-1",
            tools=[
                {"type": "function", "name": "lookup_order", "parameters": TOOLS[0]["function"]["parameters"]}
            ],
        ).model_dump(),
    )
    take(
        "responses_parse",
        lambda: (
            o.responses.parse(model="gpt-4o-mini", input="charged twice", text_format=Verdict).output_parsed
        ),
    )
    take(
        "embeddings",
        lambda: o.embeddings.create(model="text-embedding-3-small", input=["a", "b"]).model_dump(),
    )
    take(
        "raw",
        lambda: (lambda r: (r.status_code, r.parse().model_dump()))(
            chat.with_raw_response.create(model="gpt-4o-mini", messages=CHARGED)
        ),
    )

    def streaming_response() -> Any:
        with chat.with_streaming_response.create(model="gpt-4o-mini", messages=CHARGED) as r:
            return r.parse().model_dump()

    take("streaming_response", streaming_response)
    take(
        "chat_stream",
        lambda: [
            c.model_dump()
            for c in chat.create(
                model="gpt-4o-mini", messages=CHARGED, stream=True, stream_options={"include_usage": True}
            )
        ],
    )
    take(
        "responses_stream",
        lambda: [e.model_dump() for e in o.responses.create(model="gpt-4o-mini", input="hi", stream=True)],
    )
    take(
        "a_tools",
        lambda: a.messages.create(
            model="claude-haiku-4-5",
            max_tokens=200,
            messages=CHARGED,
            tools=[{"name": "lookup_order", "input_schema": TOOLS[0]["function"]["parameters"]}],
        ).model_dump(),
    )

    def a_stream() -> Any:
        with a.messages.stream(model="claude-haiku-4-5", max_tokens=200, messages=CHARGED) as s:
            return [e.type for e in s], s.get_final_message().model_dump()

    take("a_stream", a_stream)
    take("e429", lambda: chat.create(model="error-429", messages=CHARGED))
    take("e500", lambda: chat.create(model="error-500", messages=CHARGED))
    take("e400", lambda: chat.create(model="error-400", messages=CHARGED))
    take("a429", lambda: a.messages.create(model="error-429", max_tokens=10, messages=CHARGED))
    take("a500", lambda: a.messages.create(model="error-500", max_tokens=10, messages=CHARGED))
    return out


def test_3_2_3_4_every_sdk_surface_replays_exactly_as_it_ran_live() -> None:
    with DevServer() as srv:
        o = oai(srv.openai_base_url)
        a = cassette.instrument(
            Anthropic(base_url=srv.anthropic_base_url, api_key="sk-ant-test", max_retries=0)
        )
        with cassette.using("tests/cassettes/surfaces.json", mode="record"):
            live = every_method(o, a)
    o = oai(DEAD_URL)
    a = cassette.instrument(Anthropic(base_url="http://127.0.0.1:9", api_key="sk-ant-test", max_retries=0))
    with cassette.using("tests/cassettes/surfaces.json", mode="replay"):
        replayed = every_method(o, a)
    for name in live:
        assert replayed[name] == live[name], name
    assert live["e429"][:2] == ("openai", "RateLimitError")
    assert live["e500"][:2] == ("openai", "InternalServerError")
    assert live["e400"][:2] == ("openai", "BadRequestError")
    assert live["a429"][:2] == ("anthropic", "RateLimitError")
    assert live["a500"][:2] == ("anthropic", "InternalServerError")
    assert isinstance(live["parse"], dict) and isinstance(live["responses_parse"], Verdict)
    assert len(live["n3"]["choices"]) == 3 and live["responses"][0]


def test_3_1_a_client_instrumented_twice_records_each_call_once() -> None:
    """Regression: instrument(instrument(c)) or instrument(OpenAI(http_client=cassette.http_client()))
    stacked two seams, so every call was recorded twice and replay reported half of them unused."""
    with DevServer() as srv:
        mine = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        clients = [
            cassette.instrument(cassette.instrument(mine)),
            cassette.instrument(
                OpenAI(base_url=srv.openai_base_url, api_key="sk-test", http_client=cassette.http_client())
            ),
            cassette.instrument(
                AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
            ).with_options(timeout=30),
        ]
        with cassette.using("tests/cassettes/twice.json", mode="record") as session:
            ask(clients[0], "one")
            ask(clients[1], "two")
            asyncio.run(
                cassette.instrument(clients[2]).chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "three"}]
                )
            )
        assert len(session.interactions) == 3 and len(srv.requests) == 3
    with cassette.using("tests/cassettes/twice.json", mode="replay", unused="error"):
        ask(clients[0], "one")
        ask(clients[1], "two")
        asyncio.run(
            cassette.instrument(clients[2]).chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "three"}]
            )
        )
    mine.close()


def test_3_2_3_3_async_streams_replay_event_by_event() -> None:
    from anthropic import AsyncAnthropic

    async def run(openai_url: str, anthropic_url: str) -> list[Any]:
        o = cassette.instrument(AsyncOpenAI(base_url=openai_url, api_key="sk-test", max_retries=0))
        a = cassette.instrument(AsyncAnthropic(base_url=anthropic_url, api_key="sk-ant-test", max_retries=0))
        chunks = [
            c.model_dump()
            async for c in await o.chat.completions.create(model="gpt-4o-mini", messages=CHARGED, stream=True)
        ]
        events = [
            e.model_dump()
            async for e in await o.responses.create(model="gpt-4o-mini", input="hi", stream=True)
        ]
        async with a.messages.stream(model="claude-haiku-4-5", max_tokens=200, messages=CHARGED) as s:
            types = [e.type async for e in s]
            final = (await s.get_final_message()).model_dump()
        return [chunks, events, types, final]

    with DevServer() as srv:
        with cassette.using("tests/cassettes/astream.json", mode="record"):
            live = asyncio.run(run(srv.openai_base_url, srv.anthropic_base_url))
    with cassette.using("tests/cassettes/astream.json", mode="replay"):
        assert asyncio.run(run(DEAD_URL, "http://127.0.0.1:9")) == live
    assert len(live[0]) > 2 and "message_stop" in live[2]


def test_3_1_instrument_copies_passes_through_and_http_client_works_for_httpx_and_httpx2() -> None:
    import httpx

    with DevServer() as srv:
        mine = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        transport_before = mine._client._transport
        routed = cassette.instrument(mine)
        assert routed is not mine and mine._client._transport is transport_before
        ask(routed, "no session: straight through")
        with cassette.using("tests/cassettes/mine.json", mode="record") as session:
            ask(mine, "the caller's own client is not routed")
        assert session.interactions == []
        assert len(srv.requests) == 2
        # any httpx or httpx2 based SDK: a plain JSON API through http_client(lib=...)
        for lib in ("httpx", "httpx2"):
            with cassette.using(f"tests/cassettes/{lib}.json", mode="record"):
                with cassette.http_client(lib) as client:
                    live = client.get(srv.url + "/v1/models").json()
        aclient = cassette.async_http_client("httpx")
        assert isinstance(aclient, httpx.AsyncClient)
        asyncio.run(aclient.aclose())
    for lib in ("httpx", "httpx2"):
        with cassette.using(f"tests/cassettes/{lib}.json", mode="replay"):
            with cassette.http_client(lib) as client:
                assert client.get(srv.url + "/v1/models").json() == live


def test_3_3_an_abandoned_stream_is_recorded_as_received_and_replays_the_same() -> None:
    prompt = [{"role": "user", "content": "Tell me a long story about refunds and double charges"}]
    with DevServer() as srv, cassette.using("tests/cassettes/abandon.json", mode="record"):
        stream = oai(srv.openai_base_url).chat.completions.create(
            model="gpt-4o-mini", messages=prompt, stream=True
        )
        it = iter(stream)
        head = [next(it).model_dump() for _ in range(3)]
        stream.close()
    with cassette.using("tests/cassettes/abandon.json", mode="replay"):
        replayed = [
            c.model_dump()
            for c in oai(DEAD_URL).chat.completions.create(model="gpt-4o-mini", messages=prompt, stream=True)
        ]
    assert replayed[:3] == head


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"temperature": 0.9}, "temperature"),
        ({"tools": [*TOOLS, {"type": "function", "function": {"name": "escalate"}}]}, "tools[1]"),
        ({"stream": True}, "stream"),
        ({"model": "gpt-4o"}, "model"),
        ({"seed": 4}, "seed"),
        ({"max_tokens": 5}, "max_tokens"),
    ],
)
def test_3_5_answer_changing_parameters_miss_with_an_explaining_diff(
    change: dict[str, Any], field: str
) -> None:
    base: dict[str, Any] = {"model": "gpt-4o-mini", "messages": CHARGED, "tools": TOOLS, "temperature": 0.2}
    with DevServer() as srv, cassette.using("tests/cassettes/key.json", mode="record"):
        oai(srv.openai_base_url).chat.completions.create(**base)
    with pytest.raises(cassette.CassetteMiss, match=field.replace("[", r"\[").replace("]", r"\]")):
        with cassette.using("tests/cassettes/key.json", mode="replay", unused="off"):
            reply = oai(DEAD_URL).chat.completions.create(**{**base, **change})
            if change.get("stream"):
                list(reply)


def test_3_5_transport_noise_is_not_part_of_the_key() -> None:
    base: dict[str, Any] = {"model": "gpt-4o-mini", "messages": CHARGED}
    with DevServer() as srv, cassette.using("tests/cassettes/noise.json", mode="record"):
        oai(srv.openai_base_url).chat.completions.create(**base)
    noisy = cassette.instrument(
        OpenAI(base_url=DEAD_URL, api_key="sk-other", max_retries=0, default_headers={"User-Agent": "x/1"})
    )
    with cassette.using("tests/cassettes/noise.json", mode="replay"):
        noisy.chat.completions.create(
            **base,
            user="u-42",
            metadata={"run": "7"},
            prompt_cache_key="pck",
            extra_headers={"x-request-id": "r-1", "Idempotency-Key": "k-1"},
        )


# ============================================================ issue 4: pytest plugin, config, CLI

# In-process inner runs re-import and rewrite hypothesis for its terminal summary (3-4 s a run): not needed.
FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")

INNER = """
import os
import pytest
import cassette
from openai import OpenAI

BASE = os.environ["DEVSERVER_URL"] + "/v1"

def client():
    return cassette.instrument(OpenAI(base_url=BASE, api_key="sk-test", max_retries=0))

def ask(text):
    messages = [{"role": "user", "content": text}]
    return client().chat.completions.create(model="gpt-4o-mini", messages=messages).choices[0].message.content
"""


@pytest.fixture
def inner(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[pytest.Pytester, DevServer]]:
    with DevServer() as srv:
        monkeypatch.setenv("DEVSERVER_URL", srv.url)
        pytester.makepyprojecttoml(
            "[tool.pytest.ini_options]\n"
            'asyncio_mode = "auto"\nasyncio_default_fixture_loop_scope = "function"\n'
        )
        yield pytester, srv


def test_4_1_marker_fixture_default_paths_and_modes_from_flag_and_env(
    inner: tuple[pytest.Pytester, DevServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    pt, srv = inner
    pt.makepyfile(
        test_x=INNER
        + """
@pytest.mark.cassette
def test_triage():
    assert ask("My card was charged twice")

def test_fixture(cassette):
    ask("hello")
    assert [i.kind for i in cassette.interactions] == ["llm"] and cassette.drift == []

@pytest.mark.parametrize("q", ["a b", "c/d"])
@pytest.mark.cassette
def test_param(q):
    ask(q)

@pytest.mark.cassette(path="elsewhere/custom.json", mode="record")
def test_custom():
    ask("custom")

@pytest.mark.cassette
async def test_async():
    from openai import AsyncOpenAI
    c = cassette.instrument(AsyncOpenAI(base_url=BASE, api_key="sk-test", max_retries=0))
    await c.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "async"}])
"""
    )
    pt.runpytest(*FAST).assert_outcomes(passed=6)
    root = pt.path / "tests" / "cassettes"
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json") if ".blobs" not in p.parts)
    assert "test_x/test_triage.json" in found and "test_x/test_fixture.json" in found
    assert "test_x/test_async.json" in found and "elsewhere/custom.json" in found
    assert len([f for f in found if f.startswith("test_x/test_param")]) == 2  # one per parameter set
    srv.stop()
    # --cassette-mode beats the marker's mode; nothing reaches the (stopped) server
    result = pt.runpytest(*FAST, "--cassette-mode=replay")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*replayed: 6 cassette(s)*", "*tokens not spent*"])
    monkeypatch.setenv("CASSETTE_MODE", "replay")
    pt.runpytest(*FAST).assert_outcomes(passed=6)
    monkeypatch.setenv("CASSETTE_MODE", "bogus")
    result = pt.runpytest(*FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "bogus" in result.stderr.str()
    monkeypatch.delenv("CASSETTE_MODE")


def test_4_1_the_use_decorator_on_pytest_tests_with_fixtures_sync_and_async(
    inner: tuple[pytest.Pytester, DevServer],
) -> None:
    pt, srv = inner
    pt.makepyfile(
        test_deco=INNER
        + """
@cassette.use("tests/cassettes/triage.json")
def test_triage(tmp_path):
    assert tmp_path.exists() and ask("My card was charged twice")

@cassette.use("tests/cassettes/atriage.json")
async def test_atriage(tmp_path):
    from openai import AsyncOpenAI
    c = cassette.instrument(AsyncOpenAI(base_url=BASE, api_key="sk-test", max_retries=0))
    await c.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "async"}])
"""
    )
    pt.runpytest(*FAST).assert_outcomes(passed=2)
    assert (pt.path / "tests/cassettes/triage.json").is_file() and (
        pt.path / "tests/cassettes/atriage.json"
    ).is_file()
    srv.stop()
    pt.runpytest(*FAST, "--cassette-mode=replay").assert_outcomes(passed=2)


def test_4_1_cassette_dir_flag(inner: tuple[pytest.Pytester, DevServer]) -> None:
    pt, _ = inner
    pt.makepyfile(test_y=INNER + "\n@pytest.mark.cassette\ndef test_one():\n    ask('one')\n")
    pt.runpytest(*FAST, "--cassette-dir=recordings").assert_outcomes(passed=1)
    assert (pt.path / "recordings" / "test_y" / "test_one.json").is_file()


def test_4_2_network_guard_names_the_host_and_can_be_allowed_or_turned_off(
    inner: tuple[pytest.Pytester, DevServer],
) -> None:
    pt, srv = inner
    pt.makepyfile(
        test_guard=INNER
        + """
@pytest.mark.cassette
def test_leak():
    ask("charged twice")
    if os.environ.get("LEAK"):
        from openai import OpenAI, APIConnectionError
        try:  # an un-instrumented client, swallowed: the guard still fails the test
            OpenAI(base_url="http://api.llm-provider.invalid/v1", api_key="k", max_retries=0).models.list()
        except APIConnectionError:
            pass
"""
    )
    pt.runpytest(*FAST).assert_outcomes(passed=1)
    srv.stop()
    os.environ["LEAK"] = "1"
    try:
        result = pt.runpytest(*FAST)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*api.llm-provider.invalid*"])
        assert "instrument" in result.stdout.str()
        pt.runpytest(*FAST, "--cassette-allow-host=api.llm-provider.invalid").assert_outcomes(passed=1)
    finally:
        del os.environ["LEAK"]


def test_4_4_max_age_fails_an_old_cassette(inner: tuple[pytest.Pytester, DevServer]) -> None:
    pt, _ = inner
    pt.makepyfile(test_old=INNER + "\n@pytest.mark.cassette\ndef test_one():\n    ask('one')\n")
    pt.runpytest(*FAST).assert_outcomes(passed=1)
    path = pt.path / "tests" / "cassettes" / "test_old" / "test_one.json"
    long_ago = path.stat().st_mtime - 400 * 86400
    os.utime(path, (long_ago, long_ago))
    pt.makepyprojecttoml('[tool.cassette]\nmax_age = "90d"\nmax_age_action = "fail"\n')
    result = pt.runpytest(*FAST)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # reported as a setup error of that test
    result.stdout.fnmatch_lines(["*older than*max_age*"])


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("casette_dir = 'x'", "casette_dir"),
        ("blob_threshold = 'big'", "blob_threshold"),
        ("mode = 'live'", "mode"),
    ],
)
def test_4_5_config_errors_name_the_key(pytester: pytest.Pytester, toml: str, named: str) -> None:
    pytester.makepyprojecttoml(f"[tool.cassette]\n{toml}\n")
    pytester.makepyfile(test_z="def test_z():\n    pass\n")
    result = pytester.runpytest(*FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert named in result.stderr.str()
    done = cmd("ls")
    assert done.returncode == 2 and named in done.stderr and "Traceback" not in done.stderr


def test_4_5_init_keeps_the_users_pyproject_byte_for_byte_and_is_idempotent() -> None:
    original = (
        '# my project\n[project]\nname = "x"   # inline\nversion = "1"\n\n'
        "[tool.black]\nline-length = 100  # keep me\n\n[tool.other]\na = [\n  1,  # one\n  2,\n]\n"
    )
    Path("pyproject.toml").write_text(original)
    Path(".gitattributes").write_text("*.png binary\n")
    Path(".pre-commit-config.yaml").write_text("# mine\nrepos:\n  - repo: local\n    hooks: []\n")
    assert cmd("init").returncode == 0
    after = Path("pyproject.toml").read_text()
    assert after.startswith(original) and "[tool.cassette]" in after[len(original) :]
    assert Path(".gitattributes").read_text().startswith("*.png binary\n")
    hooks = Path(".pre-commit-config.yaml").read_text()
    assert hooks.startswith("# mine\n") and "- id: cassette\n" in hooks  # the one-process hook
    snapshot = [Path(p).read_bytes() for p in ("pyproject.toml", ".gitattributes", ".pre-commit-config.yaml")]
    assert cmd("init").returncode == 0
    assert [
        Path(p).read_bytes() for p in ("pyproject.toml", ".gitattributes", ".pre-commit-config.yaml")
    ] == snapshot


def test_4_6_plugins_from_the_entry_point_group_and_from_config_are_listed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "acme_cassette").mkdir(parents=True)
    (site / "acme_cassette" / "__init__.py").write_text(
        "from cassette import hookimpl\n\n"
        "@hookimpl\ndef cassette_volatile_fields(kind):\n    return ['trace_id']\n"
    )
    dist = site / "acme_cassette-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-cassette\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[cassette]\nacme = acme_cassette\n")
    (site / "local_rules.py").write_text(
        "from cassette import hookimpl\n\n@hookimpl\ndef cassette_secret_rules():\n    return []\n"
    )
    Path("pyproject.toml").write_text('[tool.cassette]\nplugins = ["local_rules"]\n')
    done = cli("plugins", "--json", env={"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    listing = json.dumps(json.loads(done.stdout))
    assert "acme" in listing and "cassette_volatile_fields" in listing
    assert "local_rules" in listing and "cassette_secret_rules" in listing


def test_4_6_a_config_plugin_module_at_the_project_root_is_found_by_the_cli() -> None:
    """Regression: `cassette plugins` could not import a plugin module living beside pyproject.toml."""
    Path("local_plugin.py").write_text(
        "from cassette import hookimpl\n\n@hookimpl\ndef cassette_secret_rules():\n    return []\n"
    )
    Path("pyproject.toml").write_text('[tool.cassette]\nplugins = ["local_plugin"]\n')
    done = cli("plugins")
    assert done.returncode == 0, done.stderr
    assert "local_plugin" in done.stdout


def record_two(root: Path) -> None:
    with DevServer() as srv:
        client = oai(srv.openai_base_url)
        for name in ("a", "b"):
            with cassette.using(root / f"{name}.json", mode="record"):
                client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[
                        {"role": "system", "content": "S" * 900 + name},
                        {"role": "user", "content": "hi"},
                    ],
                )
                lookup_order(name)
        with cassette.using(root / "a.json", mode="rerecord"):
            ask(client, "a different question")


def test_4_7_cli_show_ls_verify_gc_accept_with_documented_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = Path("tests/cassettes")
    record_two(root)
    done = cli("show", str(root / "b.json"))
    assert (
        done.returncode == 0
        and "#0" in done.stdout
        and "llm" in done.stdout
        and "lookup_order" in done.stdout
    )
    timeline = json.loads(cmd("show", "--json", str(root / "b.json")).stdout)
    assert [row["kind"] for row in timeline] == ["llm", "tool"] and timeline[0]["tokens"]
    listing = cmd("ls")
    assert listing.returncode == 0 and "a.json" in listing.stdout and "b.json" in listing.stdout
    assert cmd("verify").returncode == 0
    assert cmd("accept", "--dry-run").returncode == 0 and (root / "a.pending.json").exists()
    assert cmd("accept", str(root / "a.json")).returncode == 0
    assert not (root / "a.pending.json").exists()
    dry = cmd("gc")  # the old a.json's system-prompt blob is kept for the grace period
    assert dry.returncode == 0 and "unreferenced blob(s) modified in the last 10m" in dry.stdout
    dry = cmd("gc", "--grace", "0")
    assert dry.returncode == 0 and "would remove" in dry.stdout  # the old a.json's system-prompt blob
    assert cmd("gc", "--apply", "--grace", "0").returncode == 0 and "nothing to remove" in cmd("gc").stdout
    blob = next(p for p in (root / ".blobs").rglob("*") if p.is_file())
    blob.write_bytes(blob.read_bytes() + b"tampered")
    bad = cli("verify")
    report = bad.stdout + bad.stderr
    assert bad.returncode == 1 and "FAILED" in report and "does not match its hash" in report
    missing = cmd("show", "nope.json")
    assert missing.returncode == 2 and "nope.json" in missing.stderr and "Traceback" not in missing.stderr
    assert cli_main(["show", "--bogus-flag"]) == 2
    for command in (
        "init",
        "show",
        "ls",
        "verify",
        "gc",
        "accept",
        "plugins",
        "drift",
        "scan",
        "promote",
        "import",
        "textconv",
        "install-hooks",
    ):
        assert cli_main([command, "--help"]) == 0, command
    assert "exit codes" in capsys.readouterr().out


# ============================================================ issue 5: semantic_match and semantic_drift


def test_5_1_match_result_is_truthy_explains_itself_and_takes_a_list() -> None:
    good = cassette.semantic_match(
        "Sorry! We will offer a refund for the duplicate charge.", "offers a refund"
    )
    bad = cassette.semantic_match("I cannot offer a refund.", "offers a refund")
    assert good and not bad
    for r in (good, bad):
        assert 0.0 <= r.score <= 1.0 and r.threshold and r.backend == "lexical" and r.reason
    assert "negated" in bad.reason and "cannot" in bad.reason
    assert bad.reason in repr(bad)  # what pytest prints for a failing `assert result`
    assert cassette.semantic_match("We escalated your ticket.", ["offers a refund", "escalates the ticket"])
    assert not cassette.semantic_match("We escalated your ticket.", ["offers a refund", "ships tomorrow"])


def test_5_1_default_backend_and_thresholds_come_from_config() -> None:
    Path("pyproject.toml").write_text("[tool.cassette]\nsemantic_thresholds = {lexical = 0.99}\n")
    from cassette.config import clear_config_cache

    clear_config_cache()
    r = cassette.semantic_match("We will refund the duplicate charge", "refund the duplicate charge twice")
    assert r.threshold == 0.99 and not r
    # Regression: a project's thresholds followed the process into a directory with no pyproject.toml.
    Path("pyproject.toml").unlink()
    clear_config_cache()
    assert cassette.semantic_match("We will refund it", "refund").threshold == 0.6


@pytest.mark.parametrize("backend", ["lexical", "embeddings"])
@pytest.mark.parametrize(
    ("answer", "expected", "ok"),
    [
        (
            "Thanks for your patience. Sorry about that. I've issued a full refund to your card. "
            "It should arrive in 5 days. Anything else I can help with?",
            "refund issued",
            True,
        ),
        ("We will not refund this order.", "offers a refund", False),
        ("There is no refund for opened items.", "offers a refund", False),
        ("I refunded $20 to your card.", "refunded $200", False),
        ("Your delivery is scheduled for Tuesday.", "delivery on Thursday", False),
        ("Your delivery is scheduled for Thursday.", "delivery on Thursday", True),
    ],
)
def test_5_2_5_3_offline_backends_see_negations_numbers_and_dates(
    backend: str, answer: str, expected: str, ok: bool
) -> None:
    assert bool(cassette.semantic_match(answer, expected, backend=backend)) is ok


def test_5_3_embeddings_do_not_touch_the_root_logger() -> None:
    import logging

    before = list(logging.getLogger().handlers), logging.getLogger().level
    cassette.semantic_match("We refunded you.", "refund issued", backend="embeddings")
    assert (list(logging.getLogger().handlers), logging.getLogger().level) == before


def refund_answer() -> str:
    with DevServer(seed=1) as srv:
        answer = ask(
            OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0),
            "My card was charged twice",
        )
    assert "refund" in answer and "offer" not in answer
    return answer


def test_5_2_the_issue_example_offers_a_refund_matches_a_refund_answer() -> None:
    """Regression: the headline `semantic_match(out, "offers a refund")` failed on every refund answer the
    devserver gives ("We'll refund the duplicate charge…"): the describing verb counted as a missing word."""
    assert cassette.semantic_match(refund_answer(), "offers a refund")
    assert not cassette.semantic_match("We offer a discount on your next order.", "offers a refund")
    assert not cassette.semantic_match("Sorry, I cannot offer a refund.", "offers a refund")


def test_5_3_the_issue_example_offers_a_refund_matches_with_embeddings() -> None:
    assert cassette.semantic_match(refund_answer(), "offers a refund", backend="embeddings")


def test_5_4_judge_verdict_recorded_with_the_default_client_and_replayed_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = "We'll refund the duplicate charge within 5-7 business days."
    with DevServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        with cassette.using("tests/cassettes/judge.json", mode="record"):
            live = cassette.semantic_match(answer, "offers a refund", backend="judge")
    monkeypatch.setenv("OPENAI_BASE_URL", DEAD_URL)
    monkeypatch.delenv("OPENAI_API_KEY")
    with cassette.using("tests/cassettes/judge.json", mode="replay"):
        again = cassette.semantic_match(answer, "offers a refund", backend="judge")
    assert (again.score, again.reason, again.backend) == (live.score, live.reason, "judge")
    with (
        pytest.raises(cassette.CassetteMiss),
        cassette.using("tests/cassettes/judge.json", mode="replay", unused="off"),
    ):
        cassette.semantic_match("Something unrelated", "offers a refund", backend="judge")


REFUND_TOOL = {
    "type": "function",
    "function": {
        "name": "issue_refund",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}
ESCALATE_TOOL = {
    "type": "function",
    "function": {
        "name": "escalate_ticket",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}


def test_5_6_semantic_drift_reports_a_changed_tool_and_drift_belongs_to_its_session() -> None:
    def agent(path: str, mode: str, tools: list[dict[str, Any]], seed: int) -> Any:
        with DevServer(seed=seed) as srv, cassette.using(path, mode=mode) as session:
            oai(srv.openai_base_url).chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "Order A-1: please issue_refund or escalate_ticket"}],
                tools=tools,
                tool_choice="required",
            )
        return session

    agent("tests/cassettes/d1.json", "record", [REFUND_TOOL], 1)
    agent("tests/cassettes/d2.json", "record", [REFUND_TOOL], 1)
    results: dict[str, Any] = {}

    def rerecord(name: str, tools: list[dict[str, Any]]) -> None:
        agent(f"tests/cassettes/{name}.json", "rerecord", tools, 1)
        results[name] = cassette.semantic_drift()

    threads = [
        threading.Thread(target=rerecord, args=("d1", [ESCALATE_TOOL])),
        threading.Thread(target=rerecord, args=("d2", [REFUND_TOOL])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["d2"] == []  # same seed, same request: ids and timestamps only
    assert [d.seq for d in results["d1"]] == [0]
    assert "escalate_ticket" in results["d1"][0].reason or results["d1"][0].category == "tools"
    assert cassette.semantic_drift("tests/cassettes/d1.json")  # the same from the files on disk


def test_5_6_rewordings_of_the_devservers_refund_answer_are_filtered() -> None:
    from cassette.testing.devserver import RULES

    billing = next(r for r in RULES if r.name == "billing")
    for old in billing.answers:
        for new in billing.answers:
            assert cassette.semantic_match(new, old), (old, new)


# ============================================================ issue 6: git hooks, scanner, drift review

PLANTED = (
    "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2 + "T3BlbkFJ" + "Zy9xWv6uTs3rQp0oNm7lKj4iHg1fEd8c" * 2
)


def manifest_with(arguments: str, content: Any = "hi") -> dict[str, Any]:
    return {
        "version": 1,
        "interactions": [
            {
                "seq": 0,
                "kind": "llm",
                "key": "0" * 64,
                "request": {
                    "kind": "llm",
                    "provider": "openai",
                    "endpoint": "chat.completions",
                    "model": "gpt-4o-mini",
                    "messages": [{"role": "user", "content": content}],
                },
                "response": {
                    "status": 200,
                    "headers": {"x-request-id": "req_0123456789abcdef01234567"},
                    "json": {
                        "id": "chatcmpl-3f1c2a9e8b7d4c6e9f1a2b3c4d5e6",
                        "choices": [
                            {
                                "message": {
                                    "tool_calls": [
                                        {
                                            "id": "call_Xy12",
                                            "function": {"name": "deploy", "arguments": arguments},
                                        }
                                    ]
                                }
                            }
                        ],
                    },
                },
            }
        ],
    }


def stage(repo: Any, *paths: str) -> None:
    from dulwich import porcelain

    porcelain.add(repo, paths=[os.path.abspath(p) for p in paths])


def test_6_2_6_3_scan_staged_reads_the_index_without_git_and_never_prints_the_secret() -> None:
    from dulwich import porcelain
    from dulwich.objects import Blob

    repo = porcelain.init(".")
    cassettes = Path("tests/cassettes")
    cassettes.mkdir(parents=True)
    # JSON inside JSON: the key sits in a tool call's `arguments` string
    (cassettes / "leak.json").write_text(json.dumps(manifest_with(json.dumps({"token": PLANTED})), indent=2))
    stage(repo, "tests/cassettes/leak.json")
    Path("tests/cassettes/leak.json").write_text(json.dumps(manifest_with("{}"), indent=2))  # worktree clean
    env = {"PATH": os.path.dirname(sys.executable)}  # no git binary reachable
    done = cli("scan", "--staged", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert PLANTED not in out and "openai" in out and "leak.json" in out and "arguments" in out
    findings = json.loads(cmd("scan", "--staged", "--format", "json").stdout)
    assert {"file", "line", "rule", "path", "masked"} <= set(findings[0])
    assert PLANTED not in json.dumps(findings)

    # a redacted cassette passes; ids, hashes and placeholders are not findings
    stage(repo, "tests/cassettes/leak.json")
    assert cmd("scan", "--staged").returncode == 0

    # a key inside a staged blob is found too
    payload = f"export OPENAI_API_KEY={PLANTED}\n".encode() * 40
    blob_id = Blob.from_string(payload).id.decode()
    blob_path = cassettes / ".blobs" / blob_id[:2] / blob_id[2:]
    blob_path.parent.mkdir(parents=True)
    blob_path.write_bytes(payload)
    (cassettes / "blobbed.json").write_text(json.dumps(manifest_with("{}", {"$blob": blob_id})))
    stage(repo, "tests/cassettes/blobbed.json", str(blob_path))
    blobbed = cmd("scan", "--staged")
    assert blobbed.returncode == 1 and PLANTED not in blobbed.stdout + blobbed.stderr
    fingerprint = json.loads(cmd("scan", "--staged", "--format", "json").stdout)[0]["fingerprint"]
    Path("pyproject.toml").write_text(f'[tool.cassette]\nsecrets_allow = ["{fingerprint}"]\n')
    assert cmd("scan", "--staged").returncode == 0  # allow-listed by fingerprint


def test_6_3_scan_takes_plain_text_files_of_other_tools() -> None:
    Path("vcr.yaml").write_text(
        f"interactions:\n- request:\n    headers:\n      Authorization:\n      - Bearer {PLANTED}\n"
    )
    Path("app.log").write_text(
        "INFO started\nDEBUG id=3f1c2a9e-8b7d-4c6e-9f1a-2b3c4d5e6f70 sha=" + "a" * 40 + "\n"
    )
    assert cmd("scan", "vcr.yaml").returncode == 1
    assert cmd("scan", "app.log").returncode == 0


def test_6_1_hooks_file_install_hooks_and_textconv() -> None:
    import yaml
    from dulwich import porcelain

    root = Path(__file__).resolve().parents[1]
    ids = {h["id"] for h in yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())}
    assert ids >= {"cassette-secrets", "cassette-drift", "cassette-verify"}
    porcelain.init(".")
    assert cmd("install-hooks").returncode == 0
    hook = Path(".git/hooks/pre-commit")
    assert hook.is_file() and os.access(hook, os.X_OK)
    with DevServer() as srv, cassette.using("tests/cassettes/t.json", mode="record"):
        oai(srv.openai_base_url).chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": "policy " * 200}, {"role": "user", "content": "hi"}],
        )
    shown = cmd("textconv", "tests/cassettes/t.json")
    assert shown.returncode == 0 and "policy policy" in shown.stdout and "$blob" not in shown.stdout
    assert cmd("init", "--git-diff").returncode == 0  # the diff=cassette driver for `git diff`
    assert (
        "textconv" in Path(".git/config").read_text()
        and "diff=cassette" in Path(".gitattributes").read_text()
    )


def test_6_5_drift_between_recordings_as_text_markdown_json_and_fail_on() -> None:
    from dulwich import porcelain

    repo = porcelain.init(".")
    path = "tests/cassettes/review.json"

    def record(tools: list[dict[str, Any]]) -> None:
        with DevServer(seed=3) as srv, cassette.using(path, mode="record"):
            oai(srv.openai_base_url).chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "Order A-1 was charged twice, please issue_refund"}],
                tools=tools,
            )

    record([REFUND_TOOL])
    stage(repo, path)
    porcelain.commit(repo, message=b"first", author=b"t <t@example.com>", committer=b"t <t@example.com>")
    assert cmd("drift", "--staged").stdout.strip() == ""  # quiet when nothing changed
    record([ESCALATE_TOOL])
    stage(repo, path)
    text = cmd("drift", "--staged")
    assert text.returncode == 0 and "review.json" in text.stdout  # informational by default
    markdown = cmd("drift", "--staged", "--format", "markdown").stdout
    assert "| " in markdown and "<details>" in markdown
    report = json.loads(cmd("drift", "--staged", "--format", "json").stdout)
    assert report
    assert cmd("drift", "--staged", "--fail-on", "tools,request,changed").returncode == 1


# ============================================================ issue 7: traces, promote, import


def test_7_1_7_2_7_5_a_traced_production_run_promotes_to_a_cassette_that_replays_the_same_objects() -> None:
    with DevServer() as srv:
        client = cassette.instrument(
            OpenAI(base_url=srv.openai_base_url, api_key=PLANTED, max_retries=0)  # a real-looking key
        )

        def agent() -> list[Any]:
            first = client.chat.completions.create(model="gpt-4o-mini", messages=CHARGED, tools=TOOLS)
            order = lookup_order("A-1")
            final = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": f"Order {order.order_id}: refund?"}],
            )
            return [first.model_dump(), order, final.model_dump()]

        handle = cassette.trace("traces/prod.jsonl")  # as the issue writes it: a plain call
        live = agent()
        handle.close()
        with cassette.trace("traces/prod.jsonl"):
            agent()  # a second run in the same file
    text = Path("traces/prod.jsonl").read_text()
    assert PLANTED not in text and "sk-test" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 6 and {"run", "seq", "kind", "request", "response"} <= set(lines[0])
    with pytest.raises(cassette.PromoteError, match="2 runs"):
        cassette.promote("traces/prod.jsonl", to="tests/cassettes/x.json")
    cassette.promote("traces/prod.jsonl", to="tests/cassettes/refund_regression.json", run=handle.run)
    RAN.clear()
    client = oai(DEAD_URL)
    with cassette.using("tests/cassettes/refund_regression.json", mode="replay"):
        assert agent() == live
    assert RAN == []


def test_7_2_bad_lines_are_reported_by_number_and_cendor_lines_are_accepted() -> None:
    with DevServer() as srv, cassette.trace("t.jsonl"):
        ask(oai(srv.openai_base_url), "hello")
        ask(oai(srv.openai_base_url), "again")
    good = Path("t.jsonl").read_text().splitlines()
    Path("bad.jsonl").write_text(good[0] + "\n{torn\n" + good[1] + "\n[1, 2]\n")
    with pytest.raises(cassette.PromoteError) as info:
        cassette.promote("bad.jsonl", to="tests/cassettes/bad.json")
    assert "line 2" in str(info.value) and "line 4" in str(info.value)
    assert not Path("tests/cassettes/bad.json").exists()
    cendor = [
        {"_meta": {"version": 2}},
        {
            "kind": "tool",
            "request": {"kind": "tool", "name": "lookup", "arguments": {"args": ["A-1"], "kwargs": {}}},
            "response": {"status": "ok"},
        },
    ]
    Path("cendor.jsonl").write_text("\n".join(json.dumps(x) for x in cendor) + "\n")
    report = cassette.promote("cendor.jsonl", to="tests/cassettes/cendor.json")
    assert "1 interaction" in str(report)


def test_7_2_cli_promote_writes_a_pytest_skeleton_that_replays(pytester: pytest.Pytester) -> None:
    with DevServer() as srv, cassette.trace(pytester.path / "traces" / "prod.jsonl"):
        ask(oai(srv.openai_base_url), "My card was charged twice")
        lookup_order("A-1")
    done = cli(
        "promote",
        "traces/prod.jsonl",
        "--run",
        "last",
        "--to",
        "tests/cassettes/x.json",
        "--test",
        "tests/test_x.py",
        cwd=pytester.path,
    )
    assert done.returncode == 0, done.stderr
    assert (pytester.path / "tests" / "test_x.py").is_file()
    pytester.runpytest(*FAST, "tests/test_x.py").assert_outcomes(passed=1)


def vcr_record(target: Path) -> dict[str, Any]:
    import vcr

    with DevServer() as srv:
        client = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        with vcr.use_cassette(str(target), filter_headers=["authorization"]):
            return client.chat.completions.create(model="gpt-4o-mini", messages=CHARGED).model_dump()


def test_7_3_import_vcr_cassettes_recorded_by_real_vcrpy_replay_through_the_seam() -> None:
    live = vcr_record(Path("old/test_refund.yaml"))
    done = cmd("import", "vcr", "old/test_refund.yaml", "--to", "tests/cassettes/refund.json")
    assert done.returncode == 0, done.stderr
    with cassette.using("tests/cassettes/refund.json", mode="replay"):
        assert (
            oai(DEAD_URL).chat.completions.create(model="gpt-4o-mini", messages=CHARGED).model_dump() == live
        )


def test_7_3_import_as_the_issue_spells_it_vcrpy_and_a_glob() -> None:
    """Regression: `cassette import vcrpy tests/cassettes/*.yaml --to tests/cassettes/` (issue 7) was a
    usage error twice over: no `vcrpy` name, and one SOURCE only."""
    vcr_record(Path("old/a.yaml"))
    vcr_record(Path("old/b.yaml"))
    done = cmd("import", "vcrpy", "old/a.yaml", "old/b.yaml", "--to", "tests/cassettes/")
    assert done.returncode == 0, done.stderr
    assert Path("tests/cassettes/a.json").is_file() and Path("tests/cassettes/b.json").is_file()
    Path("old/broken.yaml").write_text("interactions: [")
    mixed = cmd("import", "vcrpy", "old/broken.yaml", "old/a.yaml", "--to", "more/", "--force")
    assert mixed.returncode == 1 and "broken.yaml" in mixed.stderr and Path("more/a.json").is_file()
    lone = cmd("import", "vcrpy", "old/a.yaml", "old/b.yaml", "--to", "x.json")
    assert lone.returncode == 2 and "directory" in lone.stderr


def test_7_4_import_cendor_v1_and_v2_files() -> None:
    messages = [{"role": "user", "content": "charged twice"}]
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Refunded."}, "finish_reason": "stop"}
        ],
    }
    for version in (1, 2):
        request: dict[str, Any] = {
            "kind": "llm",
            "provider": "openai",
            "model": "gpt-4o-mini",
            "messages": messages,
        }
        if version == 2:
            request["stream"] = False
        doc = {
            "version": version,
            "entries": [
                {
                    "seq": 0,
                    "kind": "llm",
                    "request_hash": "x",
                    "request": request,
                    "response": completion,
                    "response_type": "ChatCompletion",
                }
            ],
        }
        Path(f"old{version}.json").write_text(json.dumps(doc))
        done = cmd("import", "cendor", f"old{version}.json", "--to", f"tests/cassettes/v{version}.json")
        assert done.returncode == 0, done.stdout + done.stderr
        with cassette.using(f"tests/cassettes/v{version}.json", mode="replay"):
            reply = oai(DEAD_URL).chat.completions.create(model="gpt-4o-mini", messages=messages)
        assert reply.choices[0].message.content == "Refunded."


def test_readme_links_resolve() -> None:
    root = Path(__file__).resolve().parents[1]
    import re

    links = set(re.findall(r"\]\(((?:docs|examples)/[^)#]+)\)", (root / "README.md").read_text()))
    assert links and not [link for link in links if not (root / link).exists()]
