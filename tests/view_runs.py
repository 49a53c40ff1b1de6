"""Runs recorded against the devserver for the `cassette view` tests: a multi-turn run with parallel tool
calls, a streamed run, a run with errors and a retry, and a run full of hostile text."""

from __future__ import annotations

import contextvars
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from openai import OpenAI

import cassette
from cassette.testing.devserver import DevServer

SYSTEM = "You are the support agent of Acme. " + "Always look an order up before saying anything. " * 30
LONG_SYSTEM_CHARS = len(SYSTEM)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
    for name, description in (
        ("lookup_order", "Look up an order by its id"),
        ("issue_refund", "Refund an order's duplicate charge"),
    )
]
HOSTILE = [
    "<script>alert(1)</script>",
    "</script><script>window.pwned = 1</script>",
    "javascript:alert(document.domain)",
    '" onmouseover="window.pwned = 2" x="',
    "<img src=x onerror=alert(1)>",
    "<a href=\"javascript:alert('x')\">click me</a>",
]
HOSTILE_TEXT = " ".join(HOSTILE)

# two tools in flight at once: each waits for the other (a barrier, not a sleep)
_both_running = threading.Barrier(2, timeout=10)


@cassette.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    _both_running.wait()
    return {"order_id": order_id, "status": "charged twice", "charges": [19.99, 19.99]}


@cassette.tool
def issue_refund(order_id: str) -> dict[str, Any]:
    _both_running.wait()
    return {"order_id": order_id, "refunded": 19.99}


@cassette.tool
def cancel_order(order_id: str) -> dict[str, Any]:
    raise ValueError(f"order {order_id} has shipped and cannot be cancelled")


@cassette.tool
def echo_hostile(text: str) -> dict[str, Any]:
    return {"echo": text, "link": "javascript:alert(1)"}


def client(srv: DevServer, *, retries: int = 0) -> Any:
    return cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=retries))


def _call_tools(calls: list[Any]) -> list[dict[str, Any]]:
    """Run the model's tool calls at once, each thread in the block's context."""
    tools = {"lookup_order": lookup_order, "issue_refund": issue_refund}
    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [
            pool.submit(
                contextvars.copy_context().run, tools[c.function.name], **json.loads(c.function.arguments)
            )
            for c in calls
        ]
        return [f.result() for f in futures]


def record_multi_turn(path: Path, srv: DevServer, *, system: str = SYSTEM, mode: str = "record") -> list[str]:
    """Question → two tool calls run in parallel → answer → a follow-up question → answer. The answers."""
    answers = []
    c = client(srv)
    with cassette.using(path, mode=mode):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": "I was charged twice for order A1001, look it up and refund it"},
        ]
        first = c.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        calls = first.choices[0].message.tool_calls
        assert calls is not None and len(calls) == 2, "the devserver should call both tools"
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        for call, result in zip(calls, _call_tools(calls)):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        second = c.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        answers.append(str(second.choices[0].message.content))
        messages += [
            {"role": "assistant", "content": answers[-1]},
            {"role": "user", "content": "Thanks! When will the money be back?"},
        ]
        third = c.chat.completions.create(model="gpt-4o-mini", messages=messages)
        answers.append(str(third.choices[0].message.content))
    return answers


def record_streamed(path: Path, srv: DevServer) -> str:
    """One streamed chat answer; the text the SDK assembled."""
    c = client(srv)
    with cassette.using(path, mode="record"):
        stream = c.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        return "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)


def record_errored(path: Path, srv: DevServer) -> None:
    """A 429 the SDK retried (then answered), a 500 it could not retry, and a tool that raised."""
    import openai

    with cassette.using(path, mode="record"):
        srv.fail_next(1, 429)
        client(srv, retries=1).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Where is order A1001?"}]
        )
        try:
            client(srv).chat.completions.create(
                model="error-500", messages=[{"role": "user", "content": "Cancel order A1001"}]
            )
        except openai.InternalServerError:
            pass
        try:
            cancel_order("A1001")
        except ValueError:
            pass


def record_hostile(path: Path, srv: DevServer) -> None:
    """A run whose prompt, model name, tool result and answer carry markup and script URLs."""
    c = client(srv)
    with cassette.using(path, mode="record"):
        c.chat.completions.create(
            model='gpt-4o-mini"><script>alert(1)</script>',
            messages=[{"role": "system", "content": HOSTILE_TEXT}, {"role": "user", "content": HOSTILE_TEXT}],
        )
        echo_hostile(HOSTILE_TEXT)
