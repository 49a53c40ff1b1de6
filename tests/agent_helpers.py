"""A tiny support agent used by the core tests: LLM turns and tool calls through the seam."""

from __future__ import annotations

import json
import uuid
from typing import Any

import cassette

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

tool_runs: list[str] = []


@cassette.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """A tool whose result carries a fresh UUID that the next prompt repeats."""
    tool_runs.append(order_id)
    return {"order_id": order_id, "ticket": str(uuid.uuid4()), "status": "charged twice"}


def run_agent(client: Any, question: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a support agent. " + "Be kind. " * 80},
        {"role": "user", "content": question},
    ]
    for _ in range(4):
        r = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        msg = r.choices[0].message
        if not msg.tool_calls:
            return str(msg.content)
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            result = lookup_order(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return "gave up"
