"""The agent: a chat-completions loop that calls tools until the model answers in text."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any

from openai import OpenAI

from support_agent.tools import TOOL_SCHEMAS, TOOLS

SYSTEM = (
    "You are the support agent of Acme, an online shop. Be brief and kind. "
    "Always look an order up before saying anything about it. Refund a payment only when the "
    "customer was charged twice or the item arrived broken, and never more than was charged. "
    "If a tool fails, tell the customer what went wrong and what they can do next. "
    "Never promise dates you cannot see in the order."
)


@dataclass
class Action:
    """One tool call the agent made: what the model asked for and what came back."""

    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None


@dataclass
class Reply:
    text: str
    actions: list[Action] = field(default_factory=list)


class SupportAgent:
    """Answers customer messages, keeping the conversation across `ask` calls.

    Example::

        agent = SupportAgent(OpenAI())
        print(agent.ask("I was charged twice for order A1001").text)
    """

    def __init__(self, client: OpenAI | None = None, model: str | None = None, max_turns: int = 6) -> None:
        self.client = client or OpenAI()
        self.model = model or os.environ.get("SUPPORT_AGENT_MODEL", "gpt-4o-mini")
        self.max_turns = max_turns
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]

    def ask(self, text: str) -> Reply:
        self.messages.append({"role": "user", "content": text})
        actions: list[Action] = []
        for _ in range(self.max_turns):
            completion = self.client.chat.completions.create(
                model=self.model,
                messages=self.messages,  # type: ignore[arg-type]
                tools=TOOL_SCHEMAS,  # type: ignore[arg-type]
                temperature=0.2,
            )
            message = completion.choices[0].message
            self.messages.append(message.model_dump(exclude_none=True, exclude={"annotations"}))
            if not message.tool_calls:
                return Reply(message.content or "", actions)
            for call in message.tool_calls:
                if call.type != "function":  # custom (free-form) tools are not offered to this model
                    continue
                action = self._run(call.function.name, call.function.arguments)
                actions.append(action)
                output = {"error": action.error} if action.error else _jsonable(action.result)
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(output)})
        return Reply("Sorry, I could not finish this one; a colleague will follow up.", actions)

    def _run(self, name: str, arguments: str) -> Action:
        args = json.loads(arguments or "{}")
        action = Action(name, args)
        tool = TOOLS.get(name)
        if tool is None:
            action.error = f"unknown tool {name!r}"
            return action
        try:
            action.result = tool(**args)
        except (LookupError, ValueError, TypeError) as exc:
            action.error = str(exc)
        return action


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
