"""@cassette.tool: record runs the tool, replay returns the recorded result without running it."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _replay_edited(response: dict[str, Any]) -> Any:
    """`lookup_order` recorded, its recorded response replaced by ``response``, then replayed."""
    with cassette.using(CASSETTE, mode="record"):
        lookup_order("A1")
    doc = json.loads(Path(CASSETTE).read_text())
    doc["interactions"][0]["response"] = response
    Path(CASSETTE).write_text(json.dumps(doc))
    calls.clear()
    try:
        with cassette.using(CASSETTE, mode="replay"):
            return lookup_order("A1")
    finally:
        assert calls == []  # the tool never ran


def test_a_type_gone_from_an_imported_module_is_an_error_not_plain_data() -> None:
    """A class renamed or removed since recording: replay never hands back its fields in its place."""
    for value in (
        {"$dataclass": "tests.test_tools:Gone", "fields": {"a": 1}},
        {"$pydantic": "tests.test_tools:Gone", "data": {"a": 1}},
    ):
        with pytest.raises(cassette.UnrebuildableValueError, match="no longer defines"):
            _replay_edited({"result": value})
    error = {"type": "nowhere:Boom", "message": "boom", "args": ["boom"]}
    with pytest.raises(cassette.CassetteToolError):  # never imported
        _replay_edited({"error": error})


# --- a cassette cannot make replay import a module -----------------------------------------------


def _hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, tag: dict[str, Any]) -> Path:
    """A module whose import writes a file, on sys.path; the cassette's recorded result names it."""
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{module}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "import dataclasses\n@dataclasses.dataclass\nclass Thing:\n    a: int = 0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with cassette.using(CASSETTE, mode="record"):
        lookup_order("A1")
    doc = json.loads(Path(CASSETTE).read_text())
    doc["interactions"][0]["response"]["result"] = tag
    Path(CASSETTE).write_text(json.dumps(doc))
    return marker


@pytest.mark.parametrize("tag", ["$dataclass", "$pydantic"])
def test_a_recorded_type_never_imports_the_module_it_names(
    tag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"cassette_side_effect_{tag[1:]}"
    body = {tag: f"{module}:Thing", "fields" if tag == "$dataclass" else "data": {"a": 1}}
    marker = _hostile(tmp_path, monkeypatch, module, body)
    calls.clear()
    with pytest.raises(cassette.UnimportedTypeError) as caught:
        with cassette.using(CASSETTE, mode="replay"):
            lookup_order("A1")
    assert not marker.exists() and module not in sys.modules  # the module's code never ran
    assert calls == []
    message = str(caught.value)
    assert str(Path(CASSETTE).absolute()) in message and caught.value.path == str(Path(CASSETTE).absolute())
    assert f"module {module!r} is not imported" in message and f"import {module} before replaying" in message
    assert isinstance(caught.value, cassette.CassetteShapeError)  # existing handlers still catch it


def test_a_recorded_exception_type_is_looked_up_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "cassette_side_effect_error"
    marker = _hostile(tmp_path, monkeypatch, module, {})
    doc = json.loads(Path(CASSETTE).read_text())
    doc["interactions"][0]["response"] = {"error": {"type": f"{module}:Boom", "message": "b", "args": []}}
    Path(CASSETTE).write_text(json.dumps(doc))
    with pytest.raises(cassette.CassetteToolError, match="import its module before replaying"):
        with cassette.using(CASSETTE, mode="replay"):
            lookup_order("A1")
    assert not marker.exists() and module not in sys.modules


def test_a_type_from_a_module_the_user_imported_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "cassette_side_effect_imported"
    marker = _hostile(tmp_path, monkeypatch, module, {"$dataclass": f"{module}:Thing", "fields": {"a": 7}})
    imported = importlib.import_module(module)  # the test (the user) imports it: that is their choice
    marker.unlink()
    try:
        with cassette.using(CASSETTE, mode="replay"):
            result = lookup_order("A1")
        assert isinstance(result, imported.Thing) and result.a == 7
        assert not marker.exists()  # looked up in sys.modules, not imported again
    finally:
        sys.modules.pop(module, None)


# --- defaults and keyword forms key the same ------------------------------------------------------


@cassette.tool
def quote(sku: str, qty: int = 1, *, currency: str = "EUR", fmt: Callable[[float], str] = str) -> float:
    calls.append(f"quote:{sku}:{qty}:{currency}")
    return 9.5 * qty


@pytest.mark.parametrize(
    "call",
    [
        lambda: quote("mug", 1),
        lambda: quote("mug", qty=1, currency="EUR"),
        lambda: quote(sku="mug", currency="EUR"),
        lambda: quote(currency="EUR", qty=1, sku="mug"),
        lambda: quote("mug", fmt=str),
    ],
)
def test_defaults_and_keyword_forms_replay_the_same_recording(call: Callable[[], float]) -> None:
    with cassette.using(CASSETTE, mode="record"):
        quote("mug")
    [inter] = cassette.load_cassette(CASSETTE).interactions
    # defaults are part of the key; a function default is left out (its text holds an address)
    assert inter.request["arguments"] == {"sku": "mug", "qty": 1, "currency": "EUR"}
    calls.clear()
    with cassette.using(CASSETTE, mode="replay"):
        assert call() == 9.5
    assert calls == []


def test_a_cassette_keyed_before_defaults_were_still_replays() -> None:
    """Earlier releases keyed only the arguments passed: quote("mug") recorded {"sku": "mug"}."""

    @cassette.tool(name="quote")
    def quote_as_keyed_before(sku: str) -> float:  # records exactly what the old key held
        return 9.5

    with cassette.using(CASSETTE, mode="record"):
        quote_as_keyed_before("mug")
        quote_as_keyed_before("cup")
    assert [i.request["arguments"] for i in cassette.load_cassette(CASSETTE).interactions] == [
        {"sku": "mug"},
        {"sku": "cup"},
    ]
    calls.clear()
    with cassette.using(CASSETTE, mode="replay"):
        assert quote("mug") == 9.5 and quote("cup") == 9.5  # served in the form they were recorded in
    assert calls == []
    with pytest.raises(cassette.CassetteMiss, match=r"arguments.sku: \"lamp\" != "):
        with cassette.using(CASSETTE, mode="replay"):
            quote("lamp")  # a real miss is still explained in the current form


# --- variadic arguments keep the key earlier releases gave them ------------------------------------


@cassette.tool
def tag_all(*skus: str, **labels: Any) -> int:
    calls.append("tag_all")
    return len(skus) + len(labels)


def test_star_args_are_a_list_and_star_kwargs_an_object_with_dollar_keys_escaped() -> None:
    with cassette.using(CASSETTE, mode="record"):
        assert tag_all("mug", "cup", colour="red", **{"$ref": "x"}) == 4
    [inter] = cassette.load_cassette(CASSETTE).interactions
    # *skus is always a tuple: written as a list, as before typed values (no `$tuple`)
    assert inter.request["arguments"] == {"skus": ["mug", "cup"], "labels": {"colour": "red", "$$ref": "x"}}
    calls.clear()
    with cassette.using(CASSETTE, mode="replay"):
        assert tag_all("mug", "cup", colour="red", **{"$ref": "x"}) == 4
    assert calls == []
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE, mode="replay"):
        tag_all(("mug", "cup"), colour="red", **{"$ref": "x"})  # one tuple argument is another call
