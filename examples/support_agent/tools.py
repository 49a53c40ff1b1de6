"""The agent's tools: an order lookup and a refund, recorded and replayed by ``@cassette.tool``.

On replay a tool's body does not run: ``issue_refund`` issues no refund, and the
recorded result (a real `Refund`, rebuilt from the cassette) is handed back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cassette


@dataclass(frozen=True)
class Order:
    order_id: str
    status: str
    items: list[str]
    charges: list[float] = field(default_factory=list)  # every payment taken, in USD


@dataclass(frozen=True)
class Refund:
    refund_id: str
    order_id: str
    amount: float
    reason: str


class OrderNotFoundError(LookupError):
    """The order id is not in the shop's records."""


ORDERS = {
    "A1001": Order("A1001", "delivered", ["USB-C cable"], [19.99, 19.99]),
    "B2002": Order("B2002", "shipped", ["Desk lamp"], [19.99]),
}

# What a real payment provider would do: a replay must never add to it.
REFUNDS_ISSUED: list[Refund] = []


def _order(order_id: str) -> Order:
    try:
        return ORDERS[order_id.strip().upper()]
    except KeyError:
        raise OrderNotFoundError(f"no order {order_id!r} in our records") from None


@cassette.tool
def lookup_order(order_id: str) -> Order:
    """The order's status, items and payments."""
    return _order(order_id)


@cassette.tool
def issue_refund(order_id: str, amount: float, reason: str) -> Refund:
    """Refund ``amount`` of an order's payments (a side effect: it moves money)."""
    order = _order(order_id)
    if amount <= 0 or amount > sum(order.charges):
        raise ValueError(f"cannot refund {amount} on order {order.order_id}: charged {sum(order.charges)}")
    refund = Refund(f"rf_{uuid.uuid4().hex[:12]}", order.order_id, amount, reason)
    REFUNDS_ISSUED.append(refund)
    return refund


TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by its id: status, items and every payment taken.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "e.g. A1001"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "description": "Refund part or all of an order's payments to the customer's card.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "amount": {"type": "number", "description": "in USD"},
                    "reason": {"type": "string"},
                },
                "required": ["order_id", "amount", "reason"],
                "additionalProperties": False,
            },
        },
    },
]

TOOLS: dict[str, Callable[..., Any]] = {"lookup_order": lookup_order, "issue_refund": issue_refund}
