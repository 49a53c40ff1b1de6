"""cassette.promote: a traced production run becomes a cassette (and a pytest file) that replays it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import CassetteWarning, PromoteError
from cassette.cli import main
from cassette.maintenance.promote import list_runs
from cassette.testing.devserver import DevServer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by its id",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


@cassette.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Its fresh ticket id flows into the next prompt: replay must hand back the recorded one."""
    return {"order_id": order_id, "ticket": str(uuid.uuid4()), "status": "charged twice"}


def dumped(value: Any) -> Any:
    if isinstance(value, list):
        return [dumped(v) for v in value]
    return value.model_dump() if hasattr(value, "model_dump") else value


def agent(openai_client: Any, anthropic_client: Any, question: str) -> list[Any]:
    """A support agent: a tool loop, a streamed summary, and an Anthropic check. Returns what it saw."""
    seen: list[Any] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    answer = ""
    for _ in range(4):
        r = openai_client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        seen.append(r)
        msg = r.choices[0].message
        if not msg.tool_calls:
            answer = str(msg.content)
            break
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            result = lookup_order(**json.loads(call.function.arguments))
            seen.append(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    stream = openai_client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Summarise: " + answer}], stream=True
    )
    seen.append(list(stream))
    seen.append(
        anthropic_client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=200,
            messages=[{"role": "user", "content": "Check: " + answer}],
        )
    )
    return seen


def clients(base: DevServer | str) -> tuple[Any, Any]:
    from anthropic import Anthropic
    from openai import OpenAI

    openai_url = base.openai_base_url if isinstance(base, DevServer) else base + "/v1"
    anthropic_url = base.anthropic_base_url if isinstance(base, DevServer) else base
    return (
        cassette.instrument(OpenAI(base_url=openai_url, api_key="sk-test", max_retries=0)),
        cassette.instrument(Anthropic(base_url=anthropic_url, api_key="x", max_retries=0)),
    )


DEAD = "http://127.0.0.1:9"  # nothing listens: replay must not need the network


def test_a_traced_run_promoted_replays_the_same_sdk_objects(tmp_path: Path) -> None:
    trace = tmp_path / "traces" / "prod.jsonl"
    with DevServer() as srv:
        oa, an = clients(srv)
        with cassette.trace(trace):
            agent(oa, an, "What is the weather?")  # another production run in the same file
        with cassette.trace(trace) as t:
            live = agent(oa, an, "My card was charged twice for order A1")
        with cassette.trace(trace):
            agent(oa, an, "Hello there")
    assert any(isinstance(x, dict) and x.get("order_id") for x in live)  # the tool really ran

    report = cassette.promote(trace, "tests/cassettes/charged_twice.json", run=t.run)
    assert report.run == t.run and report.interactions == len(live)
    assert report.kinds == {"llm": len(live) - 1, "tool": 1}
    assert [r.run for r in report.runs][1] == t.run and len(report.runs) == 3
    assert report.notes == [] and report.bad_lines == []

    oa, an = clients(DEAD)
    with cassette.using(
        "tests/cassettes/charged_twice.json", mode="replay", unused="error", check_order="error"
    ):
        replayed = agent(oa, an, "My card was charged twice for order A1")
    assert dumped(replayed) == dumped(live)
    assert type(replayed[0]) is type(live[0]) and type(replayed[-1]) is type(live[-1])


def _tool_trace(path: Path, *runs: list[str]) -> list[str]:
    ids = []
    for orders in runs:
        with cassette.trace(path) as t:
            for order in orders:
                lookup_order(order)
        ids.append(t.run)
    return ids


def test_choosing_the_run(tmp_path: Path) -> None:
    trace = tmp_path / "prod.jsonl"
    first, second = _tool_trace(trace, ["A1", "A2"], ["B1"])
    with pytest.raises(
        PromoteError, match=rf"(?s)holds 2 runs.*run='last'.*{first}: 2 calls.*{second}: 1 call,"
    ) as info:
        cassette.promote(trace, "x.json")
    assert info.value.path == str(trace)
    with pytest.raises(PromoteError, match=rf"(?s)no run 'nope'.*{second}.*--list"):
        cassette.promote(trace, "x.json", run="nope")
    assert cassette.promote(trace, "last.json", run="last").run == second
    report = cassette.promote(trace, "first.json", run=first)
    recorded = cassette.load_cassette("first.json")
    assert [i.request["arguments"]["order_id"] for i in recorded.interactions] == ["A1", "A2"]
    assert [i.seq for i in recorded.interactions] == [0, 1] and report.interactions == 2
    assert [(r.run, r.calls) for r in list_runs(trace)] == [(first, 2), (second, 1)]


def test_where_keeps_only_the_calls_it_accepts(tmp_path: Path) -> None:
    trace = tmp_path / "prod.jsonl"
    (run,) = _tool_trace(trace, ["A1", "A2", "A3"])
    report = cassette.promote(
        trace, "c.json", run=run, where=lambda i: i.request["arguments"]["order_id"] != "A2"
    )
    recorded = cassette.load_cassette("c.json")
    assert [i.request["arguments"]["order_id"] for i in recorded.interactions] == ["A1", "A3"]
    assert [i.seq for i in recorded.interactions] == [0, 1] and report.interactions == 2
    with cassette.using("c.json", mode="replay", unused="error"):
        assert lookup_order("A1")["order_id"] == "A1"
        assert lookup_order("A3")["order_id"] == "A3"


def test_bad_lines_are_reported_by_number_never_dropped(tmp_path: Path) -> None:
    trace = tmp_path / "prod.jsonl"
    (run,) = _tool_trace(trace, ["A1", "A2"])
    good = trace.read_bytes()
    trace.write_bytes(
        b"not json at all\n" + good + b'["a list"]\n{"v": 1, "run": "r", "seq": "x"}\n{"v": 1, "ru'
    )
    with pytest.raises(PromoteError) as info:
        cassette.promote(trace, "c.json")
    message = str(info.value)
    assert "4 lines cannot be read" in message and "nothing was written" in message
    assert "line 1: not JSON" in message and "line 4: a JSON list" in message
    assert "line 5:" in message and "line 6: the last line is cut short" in message
    assert not Path("c.json").exists()
    with pytest.warns(CassetteWarning, match=r"skipped 4 unreadable lines \(1, 4, 5, 6\)"):
        report = cassette.promote(trace, "c.json", skip_bad=True)
    assert report.run == run and report.interactions == 2
    assert [n for n, _ in report.bad_lines] == [1, 4, 5, 6]
    assert "line 6: the last line is cut short" in str(report)


def test_an_existing_cassette_is_not_overwritten_by_accident(tmp_path: Path) -> None:
    trace = tmp_path / "prod.jsonl"
    _tool_trace(trace, ["A1"])
    cassette.promote(trace, "c.json")
    with pytest.raises(PromoteError, match=r"c\.json already exists; pass overwrite=True \(--force\)"):
        cassette.promote(trace, "c.json")
    assert cassette.promote(trace, "c.json", overwrite=True).interactions == 1


def test_missing_and_empty_traces(tmp_path: Path) -> None:
    with pytest.raises(PromoteError, match="no trace at"):
        cassette.promote(tmp_path / "nope.jsonl", "c.json")
    (tmp_path / "empty.jsonl").write_text('{"_meta": {"tool": "cendor"}}\n\n')
    with pytest.raises(PromoteError, match="holds no calls"):
        cassette.promote(tmp_path / "empty.jsonl", "c.json")
    with pytest.raises(PromoteError, match="is a directory"):
        cassette.promote(tmp_path, "c.json")


def test_cendor_style_lines_and_log_pairs_are_promoted_and_replay(tmp_path: Path) -> None:
    question = [{"role": "user", "content": "My card was charged twice"}]
    with DevServer() as srv:
        oa, an = clients(srv)
        completion = oa.chat.completions.create(model="gpt-4o-mini", messages=question)
        chunks = list(oa.chat.completions.create(model="gpt-4o-mini", messages=question, stream=True))
        message = an.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=question)
    cendor_lines = [
        {"_meta": {"writer": "cendor", "version": 2}},
        {
            "kind": "llm",
            "request": {"kind": "llm", "provider": "openai", "model": "gpt-4o-mini", "messages": question},
            "response": completion.model_dump(),
        },
        {
            "kind": "tool",
            "request": {
                "kind": "tool",
                "name": "lookup_order",
                "arguments": {"args": [], "kwargs": {"order_id": "A1"}},
            },
            "result": {"order_id": "A1", "ticket": "t-1", "status": "charged twice"},
        },
    ]
    pairs = [
        {
            "request": {"model": "gpt-4o-mini", "messages": question, "stream": True},
            "response": dumped(chunks),
        },
        {
            "request": {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": question},
            "response": dumped(message),
        },
    ]
    trace = tmp_path / "mixed.jsonl"
    trace.write_text("".join(json.dumps(row) + "\n" for row in [*cendor_lines, *pairs]))

    report = cassette.promote(trace, "c.json")
    assert report.run == "(no run id)" and report.kinds == {"llm": 3, "tool": 1}
    text = str(report)
    assert "line 2: cendor stored only model, messages and stream" in text
    assert "line 3: bound by keyword name" in text

    oa, an = clients(DEAD)
    with cassette.using("c.json", mode="replay", unused="error", check_order="error"):
        assert (
            oa.chat.completions.create(model="gpt-4o-mini", messages=question).model_dump()
            == completion.model_dump()
        )
        assert lookup_order("A1")["ticket"] == "t-1"
        again = list(oa.chat.completions.create(model="gpt-4o-mini", messages=question, stream=True))
        assert dumped(again) == dumped(chunks)
        got = an.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=question)
        assert got.model_dump() == message.model_dump()


def test_a_stream_pair_without_its_chunks_is_a_bad_line(tmp_path: Path) -> None:
    trace = tmp_path / "pairs.jsonl"
    rows = [
        {
            "request": {"model": "gpt-4o-mini", "messages": [], "stream": True},
            "response": {"object": "chat.completion"},
        },
        {"request": "a string", "response": {}},
        {"something": "else"},
    ]
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PromoteError) as info:
        cassette.promote(trace, "c.json")
    message = str(info.value)
    assert "line 1: the request has stream=true but `response` is not the list of streamed chunks" in message
    assert "line 2: the `request` of a log pair must be the request body" in message
    assert "line 3: unrecognised line" in message


def test_cli_promote_lists_runs_and_reports_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "prod.jsonl"
    first, second = _tool_trace(trace, ["A1"], ["B1", "B2"])
    assert main(["promote", str(trace), "--list"]) == 0
    out = capsys.readouterr().out
    assert f"{first}  " in out and f"{second}  " in out and "2 calls (2 tool)" in out
    assert main(["promote", str(trace), "--to", "c.json"]) == 2
    assert "holds 2 runs" in capsys.readouterr().err
    assert main(["promote", str(trace), "--run", "last", "--to", "c.json", "--kind", "llm"]) == 0
    assert "0 interactions" in capsys.readouterr().out
    assert main(["promote", str(trace), "--run", first]) == 2
    assert "needs --to" in capsys.readouterr().err


AGENT_MODULE = """
import json
import uuid

import cassette
from anthropic import Anthropic
from openai import OpenAI

TOOLS = {tools}


@cassette.tool
def lookup_order(order_id: str) -> dict:
    return {{"order_id": order_id, "ticket": str(uuid.uuid4()), "status": "charged twice"}}


def run(question):
    oa = cassette.instrument(OpenAI(base_url="{dead}/v1", api_key="sk-test", max_retries=0))
    an = cassette.instrument(Anthropic(base_url="{dead}", api_key="x", max_retries=0))
{body}
"""


def _agent_source() -> str:
    import inspect
    import textwrap

    body = inspect.getsource(agent).split('"""', 2)[2]  # the loop, without signature and docstring
    body = body.replace("openai_client", "oa").replace("anthropic_client", "an")
    return AGENT_MODULE.format(
        tools=repr(TOOLS), dead=DEAD, body=textwrap.indent(textwrap.dedent(body), "    ")
    )


def test_cli_writes_a_pytest_skeleton_that_replays_before_and_after_the_agent_is_filled_in(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(pytester.path)
    trace = pytester.path / "traces" / "prod.jsonl"
    with DevServer() as srv:
        oa, an = clients(srv)
        with cassette.trace(trace) as t:
            agent(oa, an, "My card was charged twice for order A1")
    code = main(
        [
            "promote",
            str(trace),
            "--run",
            t.run,
            "--to",
            "tests/cassettes/refund.json",
            "--test",
            "tests/test_refund.py",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "pytest skeleton: tests/test_refund.py" in capsys.readouterr().out
    source = (pytester.path / "tests" / "test_refund.py").read_text()
    compile(source, "test_refund.py", "exec")
    assert "#   #1 tool lookup_order(order_id=" in source
    assert "my_agent.run('My card was charged twice for order A1')" in source

    # the skeleton as written re-issues the recorded calls; then with the real agent filled in; then an
    # agent that asks something else, which must fail on a miss: one pytest run for the three files
    (pytester.path / "support_agent.py").write_text(_agent_source())
    filled = source.replace(
        "    return reissue_recorded_calls(CASSETTE)",
        "    from support_agent import run\n\n    return run('My card was charged twice for order A1')",
    )
    assert filled != source
    (pytester.path / "tests" / "test_refund_filled.py").write_text(filled)
    (pytester.path / "tests" / "test_refund_wrong.py").write_text(filled.replace("order A1')", "order B7')"))
    monkeypatch.syspath_prepend(str(pytester.path))
    result = pytester.runpytest("tests", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed")) == (2, 1), result.stdout.str()
    result.stdout.fnmatch_lines(["*test_refund_wrong.py::test_refund*CassetteMiss*"])


def test_a_call_whose_request_was_redacted_still_replays_by_its_original_key(tmp_path: Path) -> None:
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0"
    trace = tmp_path / "prod.jsonl"
    with cassette.trace(trace):
        first = lookup_order(secret)
    assert secret not in trace.read_text()
    cassette.promote(trace, "c.json")
    stored = cassette.load_cassette("c.json").interactions[0]
    assert stored.request["arguments"]["order_id"] != secret and secret not in Path("c.json").read_text()
    with cassette.using("c.json", mode="replay", unused="error"):
        assert lookup_order(secret)["ticket"] == first["ticket"]  # served: the key is the live one


def test_a_redacted_call_replays_when_it_is_reissued_from_the_stored_copy(tmp_path: Path) -> None:
    # a promoted test that re-issues a call from the cassette's own (redacted) request: before, it
    # missed, with an empty field diff ("it differs in:" and nothing under it)
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0"
    trace = tmp_path / "prod.jsonl"
    with cassette.trace(trace):
        first = lookup_order(secret)
    cassette.promote(trace, "c.json")
    stored = cassette.load_cassette("c.json").interactions[0]
    assert "redacted_key" in stored.extra
    with cassette.using("c.json", mode="replay", unused="error"):
        assert lookup_order(stored.request["arguments"]["order_id"])["ticket"] == first["ticket"]


def test_a_miss_that_differs_only_in_a_redacted_value_says_so(tmp_path: Path) -> None:
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0"
    with cassette.using("c.json", mode="record"):
        lookup_order(secret)
    doc = json.loads(Path("c.json").read_text())
    doc["interactions"][0].pop("redacted_key")  # as a cassette recorded before redacted keys
    Path("c.json").write_text(json.dumps(doc))
    with pytest.raises(cassette.CassetteMiss, match="reads the same once redacted"):
        with cassette.using("c.json", mode="replay"):
            lookup_order(secret.replace("a1B2", "z9Y8"))
