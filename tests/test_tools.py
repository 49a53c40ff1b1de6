"""@cassette.tool: record runs the tool, replay returns the recorded result without running it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from pydantic import BaseModel

import cassette

CASSETTE = "tests/cassettes/tools.json"
calls: list[str] = []


@dataclass
class Order:
    id: str
    total: float
    items: list[str]


class Refund(BaseModel):
    order_id: str
    amount: float


class OutOfStock(Exception):
    pass


@cassette.tool
def lookup_order(order_id: str) -> Order:
    calls.append(order_id)
    return Order(order_id, 20.0, ["mug"])


@cassette.tool(name="refund")
async def issue_refund(order_id: str, amount: float = 20.0) -> Refund:
    calls.append("refund:" + order_id)
    return Refund(order_id=order_id, amount=amount)


@cassette.tool
def reserve(sku: str) -> None:
    calls.append("reserve:" + sku)
    raise OutOfStock(f"{sku} is out of stock")


class Inventory:
    def __init__(self) -> None:
        self.token = object()  # not JSON-able: must not leak into the key

    @cassette.tool
    def count(self, sku: str) -> int:
        calls.append("count:" + sku)
        return 3


async def scenario() -> tuple[Order, Refund, str, int]:
    order = lookup_order("A1")
    refund = await issue_refund(order.id, amount=order.total)
    try:
        reserve("mug")
    except OutOfStock as exc:
        error = str(exc)
    count = Inventory().count("mug")
    return order, refund, error, count


def test_tools_record_then_replay_without_running() -> None:
    calls.clear()
    with cassette.using(CASSETTE, mode="record"):
        live = asyncio.run(scenario())
    assert calls == ["A1", "refund:A1", "reserve:mug", "count:mug"]
    recorded = cassette.load_cassette(CASSETTE).interactions
    assert [i.request["name"] for i in recorded] == ["lookup_order", "refund", "reserve", "count"]
    assert recorded[1].request["arguments"] == {"order_id": "A1", "amount": 20.0}
    assert recorded[3].request["arguments"] == {"sku": "mug"}

    calls.clear()
    with cassette.using(CASSETTE, mode="replay"):
        replayed = asyncio.run(scenario())
    assert calls == []  # no tool ran
    assert replayed == live
    assert isinstance(replayed[0], Order) and isinstance(replayed[1], Refund)


def test_a_recorded_exception_is_raised_again_on_replay() -> None:
    with cassette.using(CASSETTE, mode="record"), pytest.raises(OutOfStock):
        reserve("lamp")
    calls.clear()
    with cassette.using(CASSETTE, mode="replay"), pytest.raises(OutOfStock, match="lamp is out of stock"):
        reserve("lamp")
    assert calls == []


def test_changed_tool_arguments_miss_with_a_diff() -> None:
    with cassette.using(CASSETTE, mode="record"):
        lookup_order("A1")
    with pytest.raises(cassette.CassetteMiss, match=r'arguments.order_id: "B2" != "A1"'):
        with cassette.using(CASSETTE, mode="replay"):
            lookup_order("B2")


def test_without_a_session_the_tool_just_runs() -> None:
    calls.clear()
    assert lookup_order("Z9").id == "Z9"
    assert calls == ["Z9"]


def test_unimportable_result_types_come_back_as_plain_data() -> None:
    from cassette._tools import from_jsonable

    data = {"$dataclass": "nowhere.to.be.found:Thing", "fields": {"a": 1}}
    assert from_jsonable(data) == {"a": 1}
    error = {"type": "nowhere:Boom", "message": "boom", "args": ["boom"]}
    from cassette._tools import _rebuild_error

    assert isinstance(_rebuild_error(error, "t"), cassette.CassetteToolError)
