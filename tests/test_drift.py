"""Drift: recordings of the devserver's varying answers, classified; semantic_drift; the drift CLI."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.cli import main
from cassette.review.drift import compare_cassettes, compare_outputs, compare_text, extract
from cassette.testing.devserver import DevServer

CAPITAL = "What is the capital of France?"
REFUND = "I was charged twice for order A123"
REFUND_TOOL = {
    "type": "function",
    "function": {
        "name": "issue_refund",
        "description": "Refund an order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
    },
}
LOOKUP_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}


def _client(srv: DevServer) -> Any:
    from openai import OpenAI

    return cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))


def run_agent(
    seed: int, path: str, mode: str = "record", *, tools: list[dict[str, Any]] | None = None, extra: int = 0
) -> cassette.Session:
    """Ask the capital question, then the refund question with tools; ``extra`` more questions after."""
    with DevServer(seed=seed) as srv, cassette.using(path, mode=mode) as session:
        client = _client(srv)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": CAPITAL}])
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": REFUND}], tools=tools or [REFUND_TOOL]
        )
        for n in range(extra):
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": f"Where is my package number {n}?"}],
            )
    return session


def capital_answer(seed: int) -> str:
    with DevServer(seed=seed) as srv:
        from openai import OpenAI

        client = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": CAPITAL}]
        )
    return str(reply.choices[0].message.content)


@functools.cache
def seeds() -> tuple[int, int, int]:
    """A base seed, one giving the same capital answer (other ids), one giving another wording."""
    base = capital_answer(1)
    same = other = None
    for seed in range(2, 40):
        text = capital_answer(seed)
        if text == base and same is None:
            same = seed
        elif text != base and other is None:
            other = seed
        if same is not None and other is not None:
            return 1, same, other
    raise AssertionError("the devserver gave no varying wording in 40 seeds")


def by_label(items: list[Any]) -> dict[int, Any]:
    return {i.seq: i for i in items}


# --- classification of real recordings -----------------------------------------------------------


def test_two_recordings_are_told_apart_volatile_only_reworded_and_tools() -> None:
    base_seed, same_seed, other_seed = seeds()
    run_agent(base_seed, "base.json")
    run_agent(same_seed, "same.json")
    run_agent(other_seed, "reworded.json")
    run_agent(base_seed, "tools.json", tools=[REFUND_TOOL, LOOKUP_TOOL])
    base = cassette.load_cassette("base.json")

    same = by_label(compare_cassettes(base, cassette.load_cassette("same.json")))
    assert same[0].category == "volatile-only"
    assert "id" in same[0].fields or "created" in same[0].reason  # only ids and timestamps moved
    assert all(i.category == "volatile-only" for i in same.values())
    assert cassette.review.drift.diff_cassettes(base, cassette.load_cassette("same.json")) == []

    reworded = by_label(compare_cassettes(base, cassette.load_cassette("reworded.json")))
    assert reworded[0].category == "reworded"
    assert reworded[0].score is not None and reworded[0].score >= 0.6
    assert "Paris" in reworded[0].excerpt

    tools = by_label(compare_cassettes(base, cassette.load_cassette("tools.json")))
    assert 0 not in tools  # the same seed and request: identical
    assert tools[1].category == "request" and tools[1].output_category == "tools"
    assert "[issue_refund] → [issue_refund, lookup_order]" in tools[1].reason
    assert any(f.startswith("tools") for f in tools[1].fields)


def test_an_inserted_call_is_added_without_shifting_the_rest() -> None:
    run_agent(3, "base.json", extra=2)
    with DevServer(seed=3) as srv, cassette.using("new.json", mode="record"):
        client = _client(srv)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": CAPITAL}])
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hello there"}]
        )
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": REFUND}], tools=[REFUND_TOOL]
        )
        for n in range(2):
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": f"Where is my package number {n}?"}],
            )
    items = compare_cassettes(cassette.load_cassette("base.json"), cassette.load_cassette("new.json"))
    assert [(i.seq, i.category) for i in items] == [(1, "added")]
    removed = compare_cassettes(cassette.load_cassette("new.json"), cassette.load_cassette("base.json"))
    assert [(i.old_seq, i.category) for i in removed] == [(1, "removed")]


def test_a_shared_cassette_pairs_each_tests_calls_with_its_own() -> None:
    """Two tests share a cassette; one now makes two calls, the other asks in other words: the
    second test's call pairs with its own old call, not with the first test's new one."""
    users = frozenset({"t.py::a", "t.py::b"})

    def record(path: str, a: list[str], b: str) -> None:
        with DevServer(seed=3) as srv:
            client = _client(srv)
            for test, asks in (("t.py::a", a), ("t.py::b", [b])):
                with cassette.using(path, mode="record", shared=(test, users)):
                    for ask in asks:
                        client.chat.completions.create(
                            model="gpt-4o-mini", messages=[{"role": "user", "content": ask}]
                        )

    record("old.json", ["Where is my package?"], CAPITAL)
    record("new.json", ["Where is my parcel?", "When will it arrive?"], "Name the capital of France.")
    new = cassette.load_cassette("new.json")
    assert [i.extra["test"] for i in new.interactions] == ["t.py::a", "t.py::a", "t.py::b"]
    items = compare_cassettes(cassette.load_cassette("old.json"), new)
    assert [(i.old_seq, i.seq, i.category) for i in items] == [
        (0, 0, "request"),
        (None, 1, "added"),
        (1, 2, "request"),
    ]
    assert "capital" in items[2].reason.lower() or "content" in " ".join(items[2].fields)


def test_an_error_response_is_its_own_category() -> None:
    from openai import InternalServerError

    run_agent(5, "base.json")
    with DevServer(seed=5) as srv, cassette.using("base.json", mode="rerecord"):
        client = _client(srv)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": CAPITAL}])
        with pytest.raises(InternalServerError):  # the agent handles the failure and goes on
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": REFUND}],
                tools=[REFUND_TOOL],
                extra_headers={"x-devserver-error": "500"},
            )
    [item] = cassette.semantic_drift()
    assert (item.seq, item.category) == (1, "error")
    assert "HTTP 500" in item.reason


# --- semantic_drift ------------------------------------------------------------------------------


def test_semantic_drift_after_a_rerecord_reports_only_regressions() -> None:
    base_seed, _, other_seed = seeds()
    run_agent(base_seed, "tests/cassettes/triage.json")
    run_agent(other_seed, "tests/cassettes/triage.json", mode="rerecord", extra=1)
    everything = cassette.drift()
    assert {i.category for i in everything} >= {"reworded", "added"}
    found = cassette.semantic_drift()
    assert [(i.seq, i.category) for i in found] == [(2, "added")]
    assert found[0].reason == "not in the earlier recording" and found[0].score is None
    # the same answer from the files on disk (committed vs .pending.json)
    assert [(i.seq, i.category) for i in cassette.semantic_drift("tests/cassettes/triage.json")] == [
        (2, "added")
    ]
    assert cassette.semantic_drift(backend="lexical") == found
    # a misspelt backend is an error, not "every answer changed" (it was swallowed as an empty answer)
    with pytest.raises(cassette.CassetteConfigError, match="lexcial"):
        cassette.semantic_drift(backend="lexcial")
    assert main(["drift", "--pending", "--backend", "lexcial"]) == 2


def _edit_pending_answer(edit: Any) -> None:
    pending = Path("c.pending.json")
    doc = json.loads(pending.read_text())
    edit(doc["interactions"][0]["response"]["json"]["choices"][0])
    pending.write_text(json.dumps(doc, indent=2))


@pytest.mark.parametrize(
    ("answer", "finish", "category", "reason"),
    [
        ("I cannot refund the duplicate charge.", "stop", "negated", "negated"),
        ("We won't refund the duplicate charge within 5-7 business days.", "stop", "negated", "negated"),
        ("We refund the duplicate charge within 10-14 business days.", "stop", "numbers", "'5'"),
        ("Please call your bank within 5-7 business days.", "stop", "changed", "lexical"),
        ("We'll refund the duplicate charge within 5-7 business days.", "length", "shape", "truncated"),
        ("The duplicate charge will be refunded within 5-7 business days.", "stop", None, ""),
    ],
)
def test_semantic_drift_categories_on_a_hand_edited_rerecording(
    answer: str, finish: str, category: str | None, reason: str
) -> None:
    with DevServer(seed=1) as srv, cassette.using("c.json", mode="record", blob_threshold=0):
        _client(srv).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": REFUND}]
        )
    doc = json.loads(Path("c.json").read_text())
    doc["interactions"][0]["response"]["json"]["choices"][0]["message"]["content"] = (
        "We'll refund the duplicate charge within 5-7 business days."
    )
    Path("c.json").write_text(json.dumps(doc))
    Path("c.pending.json").write_text(json.dumps(doc))

    def edit(choice: dict[str, Any]) -> None:
        choice["message"]["content"] = answer
        choice["finish_reason"] = finish

    _edit_pending_answer(edit)
    found = cassette.semantic_drift("c.json")
    if category is None:  # a rewording is not a regression
        assert found == []
        return
    [item] = found
    assert (item.seq, item.category) == (0, category)
    assert reason in item.reason


def test_two_rerecords_in_threads_keep_their_own_drift() -> None:
    base_seed, _, other_seed = seeds()
    run_agent(base_seed, "a.json")
    run_agent(base_seed, "b.json")
    both_inside = threading.Barrier(2)
    results: dict[str, Any] = {}

    def rerecord(name: str, seed: int, extra: int) -> None:
        try:
            with DevServer(seed=seed) as srv, cassette.using(f"{name}.json", mode="rerecord"):
                client = _client(srv)
                both_inside.wait()  # both sessions are active at once
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": CAPITAL}]
                )
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": REFUND}], tools=[REFUND_TOOL]
                )
                for n in range(extra):
                    client.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": f"question {n}"}]
                    )
                both_inside.wait()  # and both finish only after both made their calls
            results[name] = ([(i.seq, i.category) for i in cassette.semantic_drift()], cassette.drift())
        except BaseException as exc:  # reported by the main thread
            results[name] = exc

    threads = [
        threading.Thread(target=rerecord, args=("a", other_seed, 0)),
        threading.Thread(target=rerecord, args=("b", base_seed, 2)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for value in results.values():
        if isinstance(value, BaseException):
            raise value
    a_regressions, a_drift = results["a"]
    b_regressions, b_drift = results["b"]
    assert a_regressions == [] and [i.category for i in a_drift] == ["reworded"]
    assert b_regressions == [(2, "added"), (3, "added")]
    assert [i.category for i in b_drift] == ["added", "added"]


def test_semantic_drift_without_a_rerecord_says_what_to_do() -> None:
    with pytest.raises(cassette.CassetteError, match="mode='rerecord'"):
        cassette.semantic_drift()
    with pytest.raises(cassette.CassetteError, match=r"CASSETTE_MODE=rerecord"):
        cassette.semantic_drift("nothing.json")


# --- the output extractors -----------------------------------------------------------------------


def test_extractors_read_what_the_sdks_saw(devserver: DevServer) -> None:
    from anthropic import Anthropic
    from openai import OpenAI

    oa = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    an = cassette.instrument(Anthropic(base_url=devserver.anthropic_base_url, api_key="x", max_retries=0))
    fn = REFUND_TOOL["function"]
    ask = [{"role": "user", "content": REFUND}]
    seen: list[tuple[str, list[str]]] = []
    with cassette.using("sdk.json", mode="record"):
        r = oa.chat.completions.create(model="gpt-4o-mini", messages=ask, tools=[REFUND_TOOL])
        seen.append(("", [c.function.name for c in r.choices[0].message.tool_calls or []]))
        with oa.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": CAPITAL}], stream=True
        ) as stream:
            seen.append(("".join(c.choices[0].delta.content or "" for c in stream if c.choices), []))
        resp = oa.responses.create(model="gpt-4o-mini", input=CAPITAL)
        seen.append((resp.output_text, []))
        with oa.responses.create(
            model="gpt-4o-mini", input=REFUND, stream=True, tools=[{"type": "function", **fn}]
        ) as s:
            done = [
                e.item.name
                for e in s
                if e.type == "response.output_item.done" and e.item.type == "function_call"
            ]
        seen.append(("", done))
        msg = an.messages.create(
            model="claude-x", max_tokens=100, messages=[{"role": "user", "content": CAPITAL}]
        )
        seen.append(("".join(b.text for b in msg.content if b.type == "text"), []))
        tool = {"name": fn["name"], "input_schema": fn["parameters"]}
        with an.messages.stream(model="claude-x", max_tokens=100, messages=ask, tools=[tool]) as s2:
            final = s2.get_final_message()
        text = "".join(b.text for b in final.content if b.type == "text")
        seen.append((text, [b.name for b in final.content if b.type == "tool_use"]))
    recorded = cassette.load_cassette("sdk.json")
    for inter, (text, calls) in zip(recorded.interactions, seen, strict=True):
        out = extract(inter.kind, recorded.hydrate(inter.response))
        assert out.text == text, inter.request["endpoint"]
        assert [c.name for c in out.tool_calls] == calls
        assert out.truncated is False and out.error is None
        for call in out.tool_calls:
            assert call.arguments["order_id"] == "A123"  # arguments parsed, streamed ones re-assembled


def test_compare_text_guards_and_meaning() -> None:
    assert compare_text("We will refund you.", "We cannot refund you.")[0] == "negated"
    assert compare_text("Refund of $20 issued.", "Refund of $200 issued.")[0] == "numbers"
    # another state or an antonym flips the meaning as a negation does: not a changed number
    assert compare_text("Your claim was approved.", "Your claim was denied.")[0] == "negated"
    assert compare_text("You are in the small room.", "You are in the large room.")[0] == "negated"
    assert (
        compare_text("Your card was already charged.", "Your card will be charged when it ships.")[0]
        == "negated"
    )
    assert compare_text("Boarding is at gate B12.", "Boarding is at gate C12.")[0] == "numbers"
    assert compare_text("The capital of France is Paris.", "Paris is the capital of France.")[0] == "reworded"
    category, score, reason = compare_text("The capital of France is Paris.", "Bananas are yellow.")
    assert category == "changed" and score is not None and score < 0.6 and "missing" in reason


def test_structured_output_shape_and_tool_argument_keys() -> None:
    def chat(content: str | None = None, calls: list[tuple[str, str]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
        tool_calls = [{"id": f"call_{n}", "function": {"name": n, "arguments": a}} for n, a in calls]
        message = {"content": content, "tool_calls": tool_calls or None}
        return {"status": 200, "json": {"choices": [{"message": message, "finish_reason": "stop"}]}}

    a = extract("llm", chat('{"answer": "Paris", "confidence": 0.9}'))
    b = extract("llm", chat('{"answer": "Paris"}'))
    verdict = compare_outputs(a, b)
    assert verdict is not None and verdict.category == "shape" and "-confidence" in verdict.reason
    c = extract("llm", chat('{"answer": "Paris", "confidence": 0.7}'))
    verdict = compare_outputs(a, c)
    assert verdict is not None and verdict.category == "numbers" and "confidence" in verdict.reason
    x = extract("llm", chat(calls=[("issue_refund", '{"order_id": "A1", "amount": 20}')]))
    y = extract("llm", chat(calls=[("issue_refund", '{"order_id": "A1"}')]))
    z = extract("llm", chat(calls=[("issue_refund", '{"order_id": "A1", "amount": 200}')]))
    assert compare_outputs(x, y).category == "tools"  # type: ignore[union-attr]
    assert compare_outputs(x, z).category == "numbers"  # type: ignore[union-attr]
    assert compare_outputs(x, x) is None


# --- the drift CLI -------------------------------------------------------------------------------


def test_drift_cli_on_pending_rerecordings(capsys: pytest.CaptureFixture[str]) -> None:
    base_seed, _, other_seed = seeds()
    run_agent(base_seed, "tests/cassettes/triage.json")
    run_agent(other_seed, "tests/cassettes/triage.json", mode="rerecord", tools=[REFUND_TOOL, LOOKUP_TOOL])

    assert main(["drift", "--pending"]) == 0  # informational by default
    text = capsys.readouterr().out
    assert "tests/cassettes/triage.json: modified, 2 → 2 interactions" in text
    assert "reworded" in text and "[issue_refund] → [issue_refund, lookup_order]" in text

    assert main(["drift", "--format", "markdown"]) == 0  # pending files found: --pending is implied
    md = capsys.readouterr().out
    assert md.startswith("### Cassette drift\n")
    assert "| cassette | change | interactions | tokens | categories |" in md
    assert "| `tests/cassettes/triage.json` | modified | 2 → 2 |" in md
    assert "<details><summary><code>tests/cassettes/triage.json</code>: 2 change(s)</summary>" in md
    assert "**request**" in md and "</details>" in md and "- **reworded**: same meaning" in md

    assert main(["drift", "--format", "json"]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert report["status"] == "modified" and report["interactions"] == {"old": 2, "new": 2}
    assert {i["category"] for i in report["items"]} == {"reworded", "request"}
    assert report["items"][1]["output_category"] == "tools"
    assert set(report["tokens"]) == {"old", "new", "delta"}

    assert main(["drift", "--pending", "--fail-on", "tools"]) == 1  # both sides of the tools changed
    err = capsys.readouterr().err
    assert "failing categories (tools: tools offered (request) + tool calls (response))" in err
    assert main(["drift", "--pending", "--fail-on", "changed,numbers"]) == 0
    assert main(["drift", "--pending", "--fail-on", "regressions"]) == 1
    capsys.readouterr()
    assert main(["drift", "--pending", "--fail-on", "bogus"]) == 2
    assert "unknown drift category 'bogus'" in capsys.readouterr().err


def _tools_variant(side: str) -> None:
    """Record triage.json, then a pending re-recording whose tools changed on one side only."""
    run_agent(1, "tests/cassettes/triage.json")
    if side == "request":  # other tools offered, the model calls the same ones
        offered = json.loads(json.dumps(REFUND_TOOL))
        offered["function"]["description"] = "Refund an order (full amount only)"
        run_agent(1, "tests/cassettes/triage.json", mode="rerecord", tools=[offered])
        return
    # the same request, but the model called another tool
    doc = json.loads(Path("tests/cassettes/triage.json").read_text())
    [call] = doc["interactions"][1]["response"]["json"]["choices"][0]["message"]["tool_calls"]
    call["function"]["name"] = "lookup_order"
    Path("tests/cassettes/triage.pending.json").write_text(json.dumps(doc, indent=2))


@pytest.mark.parametrize(
    ("side", "label"), [("request", "tools offered (request)"), ("response", "tool calls (response)")]
)
def test_a_tools_change_says_which_side_in_every_format(
    side: str, label: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _tools_variant(side)
    assert main(["drift", "--pending"]) == 0
    text = capsys.readouterr().out
    assert f"gpt-4o-mini [{label}]: " in text

    assert main(["drift", "--pending", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert f"<br>{label} |" in md

    assert main(["drift", "--pending", "--format", "json"]) == 0
    [item] = json.loads(capsys.readouterr().out)[0]["items"][-1:]
    assert item["tools_changed"] == [side] and item["tools_label"] == label
    assert item["category"] == ("request" if side == "request" else "tools")

    # --fail-on tools catches a change on either side and says which one it was
    assert main(["drift", "--pending", "--fail-on", "tools"]) == 1
    assert f"1 interaction(s) in failing categories (tools: {label})." in capsys.readouterr().err


def test_a_drift_item_repr_is_short() -> None:
    _tools_variant("response")
    from cassette.review.drift import compare_cassettes

    old = cassette.load_cassette("tests/cassettes/triage.json")
    [item] = compare_cassettes(old, cassette.load_cassette("tests/cassettes/triage.pending.json"))
    assert repr(item) == (
        "DriftItem(category='tools', seq=1, cassette='tests/cassettes/triage.json', "
        "excerpt='[issue_refund] → [lookup_order]')"
    )
    assert item.old is not None and len(repr(item)) < 200 < len(repr(item.old))


def test_drift_text_is_quiet_when_nothing_changed(capsys: pytest.CaptureFixture[str]) -> None:
    run_agent(2, "tests/cassettes/triage.json")
    run_agent(2, "tests/cassettes/triage.json", mode="rerecord")  # same seed: byte-identical
    assert main(["drift", "--pending"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["drift", "--pending", "--format", "markdown"]) == 0
    assert "No cassette changed." in capsys.readouterr().out


def _git(*args: str) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env).stdout


def test_drift_cli_between_revisions_and_staged(capsys: pytest.CaptureFixture[str]) -> None:
    base_seed, _, other_seed = seeds()
    _git("init", "-q", "-b", "main", ".")
    _git("config", "user.name", "T")
    _git("config", "user.email", "t@example.com")
    run_agent(base_seed, "tests/cassettes/triage.json")
    _git("add", "-A")
    _git("commit", "-q", "-m", "first")
    run_agent(other_seed, "tests/cassettes/triage.json", extra=1)
    _git("add", "-A")

    assert main(["drift", "--staged", "--format", "json"]) == 0
    [staged] = json.loads(capsys.readouterr().out)
    assert staged["file"] == "tests/cassettes/triage.json"
    assert [i["category"] for i in staged["items"]] == ["reworded", "volatile-only", "added"]

    _git("commit", "-q", "-m", "second")
    assert main(["drift", "--rev", "HEAD~1..HEAD", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["items"] == staged["items"]
    assert main(["drift", "--rev", "HEAD", "--format", "json"]) == 0  # what the last commit changed
    assert json.loads(capsys.readouterr().out)[0]["items"] == staged["items"]
    assert main(["drift", "--rev", "HEAD~1..HEAD", "--fail-on", "added"]) == 1
    capsys.readouterr()
    assert main(["drift", "--rev", "no-such-branch..HEAD"]) == 2
    assert "has no commit 'no-such-branch'" in capsys.readouterr().err

    _git("mv", "tests/cassettes/triage.json", "tests/cassettes/renamed.json")
    _git("commit", "-q", "-m", "rename")
    assert main(["drift", "--rev", "HEAD~1..HEAD", "--format", "json"]) == 0
    [renamed] = json.loads(capsys.readouterr().out)  # compared with its earlier self: nothing changed
    assert renamed["file"] == "tests/cassettes/triage.json → tests/cassettes/renamed.json"
    assert renamed["items"] == []
    _git("rm", "-q", "--cached", "tests/cassettes/renamed.json")
    assert main(["drift", "--staged", "--format", "json"]) == 0
    [gone] = json.loads(capsys.readouterr().out)
    assert gone["status"] == "removed" and {i["category"] for i in gone["items"]} == {"removed"}


def test_markdown_cells_escape_pipes() -> None:
    from cassette.hooks.drift import drift_of, render_markdown

    doc = {
        "version": 1,
        "interactions": [
            {
                "seq": 0,
                "kind": "tool",
                "key": "k",
                "request": {"kind": "tool", "name": "grep", "arguments": {}},
                "response": {"result": "a | b"},
            }
        ],
    }
    Path("old.json").write_text(json.dumps(doc))
    doc["interactions"][0]["response"] = {"result": "c | d <script>"}  # type: ignore[index]
    Path("new.json").write_text(json.dumps(doc))
    md = render_markdown(
        [drift_of("x|y.json", cassette.load_cassette("old.json"), cassette.load_cassette("new.json"))]
    )
    row = next(line for line in md.splitlines() if line.startswith("| 0 |"))
    assert "c \\| d &lt;script&gt;" in row and row.count(" | ") == 4


@pytest.mark.parametrize(
    ("old", "new", "category"),
    [
        ("", "We refunded you.", "changed"),
        ("OK.", "Your refund is on its way.", "changed"),
        ("Yes.", "yes!", "reworded"),
    ],
)
def test_a_recorded_answer_with_no_words_is_compared_as_it_stands(old: str, new: str, category: str) -> None:
    # semantic_match refuses an expectation with nothing to look for; drift must still classify it
    assert compare_text(old, new)[0] == category


def test_drift_never_prints_a_key_the_rerecording_caught(capsys: pytest.CaptureFixture[str]) -> None:
    # before: the secret scan reported the key masked, and the drift summary beside it printed it
    # whole in the answer's excerpt (a terminal, a CI log, a PR comment)
    run_agent(1, "tests/cassettes/triage.json")
    run_agent(1, "tests/cassettes/triage.json", mode="rerecord")
    key = "ghp_" + "x7Kq2LmN9pR4sT1vW8yZ3bC6dF0gH5jK2mP9"
    pending = Path("tests/cassettes/triage.pending.json")
    doc = json.loads(pending.read_text())
    doc["interactions"][0]["response"]["json"]["choices"][0]["message"]["content"] = f"Paris. token {key}"
    pending.write_text(json.dumps(doc, indent=2))
    for fmt in ("text", "markdown", "json"):
        assert main(["drift", "--pending", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "Paris. token" in out and key not in out and key[4:20] not in out, fmt
        assert "<redacted:github-token>" in out, fmt
        if fmt == "json":
            json.loads(out)  # still JSON
