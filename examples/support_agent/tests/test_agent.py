"""The support agent's behaviour, recorded once and replayed offline on every run after.

``CASSETTE_MODE=record`` re-records against the model at ``OPENAI_BASE_URL``;
with the cassettes present and no mode set, the tests replay them.
"""

from __future__ import annotations

from pathlib import Path

import cassette
from support_agent.agent import SupportAgent
from support_agent.tools import Order, Refund

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"


@cassette.use(CASSETTES / "double_charge.json")
def test_a_double_charge_is_refunded(agent: SupportAgent) -> None:
    reply = agent.ask("I was charged twice for order A1001")

    assert [a.name for a in reply.actions] == ["lookup_order", "issue_refund"]
    order, refund = reply.actions[0].result, reply.actions[1].result
    assert isinstance(order, Order) and order.charges == [19.99, 19.99]
    assert isinstance(refund, Refund) and (refund.order_id, refund.amount) == ("A1001", 19.99)
    assert refund.refund_id in reply.text
    assert "refund" in reply.text.lower()


@cassette.use(CASSETTES / "status_then_refund.json")
def test_a_conversation_about_a_broken_lamp(agent: SupportAgent) -> None:
    status = agent.ask("Where is my order B2002?")
    assert [(a.name, a.arguments) for a in status.actions] == [("lookup_order", {"order_id": "B2002"})]
    assert "shipped" in status.text

    refund = agent.ask("The lamp from order B2002 arrived broken, please refund it.")
    assert [a.name for a in refund.actions] == ["lookup_order", "issue_refund"]
    assert refund.actions[1].result.order_id == "B2002"
    assert len([m for m in agent.messages if m["role"] == "user"]) == 2  # one conversation, two questions


@cassette.use(CASSETTES / "unknown_order.json")
def test_an_unknown_order_is_explained(agent: SupportAgent) -> None:
    reply = agent.ask("Where is my order Z9999?")

    [action] = reply.actions
    assert action.error == "no order 'Z9999' in our records"  # the tool's exception, raised again on replay
    assert "Z9999" in reply.text
