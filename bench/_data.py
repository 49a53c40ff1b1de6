"""The workloads' data (prompts, user turns, tool schemas) and the local server they are recorded against.

Everything is deterministic: the same run makes the same requests, and the
server answers a given request with the same bytes for a given seed, so every
tool records identical responses.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench._harness import REPO

MODEL = "gpt-4o-mini"
SEED = 20261130

_PARAGRAPHS = [
    "You are the support assistant of Acme Outfitters, an online shop for hiking and camping gear.",
    "Answer in a warm, concise tone; never promise what the policy below does not allow.",
    "Refunds: an order may be refunded within 30 days of delivery if the item is unused; a damaged item "
    "is refunded or replaced at the customer's choice, shipping included.",
    "Late deliveries: apologise, look up the order, and offer a 10% voucher when the delay exceeds five "
    "business days.",
    "Never ask for a full card number; the last four digits and the order number are enough to find a "
    "payment.",
    "Escalate to a human agent when the customer mentions a legal claim, an injury, or asks three times.",
    "Use the tools to look up orders, issue refunds and open tickets; do not guess an order's status.",
    "Quote prices in the customer's currency and round to two decimals; state taxes separately.",
    "Close every answer with one clear next step for the customer.",
]


def system_prompt(size: int) -> str:
    """A realistic system prompt of exactly ``size`` characters."""
    text = ""
    i = 0
    while len(text) < size:
        text += _PARAGRAPHS[i % len(_PARAGRAPHS)] + (" " if i % 3 else "\n")
        i += 1
    return text[:size]


SYSTEM_500 = system_prompt(500)
SYSTEM_3K = system_prompt(3072)

_ITEMS = [
    "tent",
    "sleeping bag",
    "headlamp",
    "rain jacket",
    "stove",
    "water filter",
    "backpack",
    "trekking poles",
]
_ISSUES = [
    "arrived two weeks late",
    "came with a torn seam",
    "was charged twice on my card",
    "is missing the stuff sack",
    "does not match the photo",
    "stopped working after one night",
]
_ASKS = [
    "Can I get a refund?",
    "Could you send a replacement?",
    "What are my options?",
    "How do I return it?",
    "Can you check the order status?",
]


def user_turn(i: int) -> str:
    """The ``i``-th user question: unique, about 100-140 characters."""
    rng = random.Random(i * 7919 + 17)
    item = rng.choice(_ITEMS)
    return (
        f"Hi, order #{100000 + i * 37} - the {item} I bought {rng.choice(_ISSUES)}. "
        f"{rng.choice(_ASKS)} (ticket {i})"
    )


def chat_calls(n: int) -> list[list[dict[str, str]]]:
    """``n`` chat requests: the 500-character system prompt and one unique user turn each."""
    return [
        [{"role": "system", "content": SYSTEM_500}, {"role": "user", "content": user_turn(i)}]
        for i in range(n)
    ]


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


TOOLS: list[dict[str, Any]] = [
    _tool(
        "lookup_order",
        "Look up an order by its number and return its items, payment, shipping status and the dates of "
        "every status change, so the assistant can answer questions about it without guessing.",
        {
            "order_id": {"type": "string", "description": "The order number, digits only, e.g. 100037."},
            "include_history": {"type": "boolean", "description": "Also return the status history."},
        },
        ["order_id"],
    ),
    _tool(
        "issue_refund",
        "Refund an order or part of it to the original payment method. Only call this after the customer "
        "has confirmed the amount and the items; refunds over 500 need a human agent's approval first.",
        {
            "order_id": {"type": "string", "description": "The order number."},
            "amount": {"type": "number", "description": "Amount to refund, in the order's currency."},
            "reason": {
                "type": "string",
                "enum": ["damaged", "late", "duplicate_charge", "not_as_described", "other"],
                "description": "Why the refund is issued; used for reporting.",
            },
        },
        ["order_id", "amount", "reason"],
    ),
    _tool(
        "send_replacement",
        "Ship a replacement for one item of an order at no charge, with express shipping when the original "
        "delivery was late. Returns the new tracking number and the expected delivery date.",
        {
            "order_id": {"type": "string", "description": "The order number."},
            "sku": {"type": "string", "description": "The item's SKU as shown by lookup_order."},
            "express": {"type": "boolean", "description": "Use express shipping."},
        },
        ["order_id", "sku"],
    ),
    _tool(
        "open_ticket",
        "Open a ticket for a human agent when the case needs one (legal claims, injuries, repeated "
        "requests, refunds over the limit). Returns the ticket id and the expected response time.",
        {
            "summary": {"type": "string", "description": "One paragraph a human agent can act on."},
            "priority": {"type": "string", "enum": ["low", "normal", "high", "urgent"]},
            "order_id": {"type": "string", "description": "The order number, if any."},
        },
        ["summary", "priority"],
    ),
    _tool(
        "track_shipment",
        "Return the carrier, the tracking events and the estimated delivery date of a shipment, given the "
        "order number or the carrier's tracking number.",
        {
            "order_id": {"type": "string", "description": "The order number."},
            "tracking_number": {"type": "string", "description": "The carrier's tracking number."},
        },
        [],
    ),
]


# --- the server the cassettes are recorded against ------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def no_delay_devserver(seed: int, port: int) -> Any:
    """A ``cassette.devserver.DevServer`` whose sockets set TCP_NODELAY.

    The stock server writes the headers and the body of a response in two sends,
    which on a keep-alive connection meets the client's delayed ACK: ~40 ms per
    call. Setting ``disable_nagle_algorithm`` on a handler subclass (the server
    module itself is left alone) brings a call down to a few milliseconds.
    """
    from cassette.testing.devserver import DevServer

    class NoDelayDevServer(DevServer):  # type: ignore[misc]
        def _bind(self) -> Any:
            httpd = super()._bind()
            base: Any = httpd.RequestHandlerClass
            httpd.RequestHandlerClass = type("NoDelayHandler", (base,), {"disable_nagle_algorithm": True})
            return httpd

    if not hasattr(DevServer, "_bind"):  # the server changed shape: fall back to it as it is
        return DevServer(seed=seed, port=port)
    return NoDelayDevServer(seed=seed, port=port)


@contextlib.contextmanager
def devserver(seed: int, port: int, *, separate_process: bool) -> Iterator[str]:
    """A fresh server answering as ``seed`` on ``port``; yields the OpenAI ``base_url``.

    In a separate process the server's CPU does not compete with the client's
    for the GIL, which halves recording time on two cores.
    """
    if not separate_process:
        server = no_delay_devserver(seed, port)
        with server:
            yield f"http://127.0.0.1:{server.port}/v1"
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench._server", "--port", str(port), "--seed", str(seed)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,  # so that ``bench`` is importable wherever the bench itself runs
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if "listening" not in ready:
            raise RuntimeError(f"devserver did not start: {ready!r}")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run_concurrently(fn: Callable[[int], Any], count: int, workers: int = 4) -> list[Any]:
    """``fn(i)`` for ``i < count`` on a thread pool, each in a copy of the caller's context.

    A copy per call carries the active cassette (a context variable) into the worker.
    """
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, i) for i in range(count)]
        return [f.result() for f in futures]
