"""Tool values replay as what was recorded, or are refused when recording (issue 24, points 1-4).

Every case records a real ``@cassette.tool`` call into a cassette file and replays it from that
file; a tampered cassette is the recorded file edited as an attacker would.
"""

from __future__ import annotations

import asyncio
import bdb
import copy
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import pathlib
import subprocess
import sys
import textwrap
import unittest
import uuid
import zoneinfo
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import cassette
from cassette import ValueCodec, get_plugin_manager
from cassette.core.canonical import request_key
from cassette.plugins.manager import normalize
from cassette.seam.tools import from_jsonable, to_jsonable, tool_request

CASSETTE = "tests/cassettes/values.json"
ran: list[Any] = []


@cassette.tool
def echo(value: Any) -> Any:
    ran.append(value)
    return value


@cassette.tool
def describe(value: Any) -> str:
    ran.append(value)
    return f"{type(value).__name__}:{value!r}"


def record_then_replay(value: Any) -> tuple[Any, Any]:
    """``echo(value)`` recorded live, then replayed from the file without running."""
    Path(CASSETTE).unlink(missing_ok=True)
    with cassette.using(CASSETTE, mode="record"):
        live = echo(value)
    ran.clear()
    with cassette.using(CASSETTE, mode="replay", unused="error"):
        replayed = echo(value)
    assert ran == []  # served from the cassette
    return live, replayed


def same(a: Any, b: Any) -> bool:
    """Equal and of the same type, all the way down (a NaN is the same as a NaN, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        pairs = zip(a.items(), b.items(), strict=False)
        return len(a) == len(b) and all(same(k, kb) and same(x, xb) for (k, x), (kb, xb) in pairs)
    if isinstance(a, set | frozenset):
        return len(a) == len(b) and all(any(same(x, y) for y in b) for x in a)  # NaN != NaN: not a == b
    if isinstance(a, dt.datetime | dt.time):
        return (
            a == b
            and a.tzinfo == b.tzinfo
            and a.fold == b.fold
            and str(a) == str(b)
            and a.tzname() == b.tzname()
        )
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


# --- 1. values round-trip exactly -----------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    R = 4
    W = 2


class Point(NamedTuple):
    x: int
    y: float


@dataclasses.dataclass(frozen=True)
class Line:
    start: Point
    end: Point
    tags: tuple[str, ...] = ()


class Refund(BaseModel):
    order_id: str
    amount: decimal.Decimal
    when: dt.datetime
    extra: Any = None


EXACT = [
    pytest.param(18446744073709551617, id="2**64+1"),
    pytest.param(10**30, id="10**30"),
    pytest.param(-(2**63) - 1, id="below-int64"),
    pytest.param(2**64 - 1, id="uint64-max"),
    pytest.param(10**5000, id="5000-digits"),
    pytest.param(-0.0, id="minus-zero"),
    pytest.param(5e-324, id="denormal"),
    pytest.param(1e16, id="1e16"),
    pytest.param(float("nan"), id="nan"),
    pytest.param(float("inf"), id="inf"),
    pytest.param(float("-inf"), id="-inf"),
    pytest.param(True, id="true"),
    pytest.param(b"\x00\xff raw", id="bytes"),
    pytest.param(bytearray(b"buf"), id="bytearray"),
    pytest.param("caf\u00e9 \U0001f600", id="unicode"),
    pytest.param("bad \udcff name", id="lone-surrogate"),
    pytest.param(dt.datetime(2026, 3, 29, 2, 30, 0, 17), id="naive-datetime"),
    pytest.param(dt.datetime(2026, 3, 29, 1, 0, tzinfo=dt.UTC), id="utc-datetime"),
    pytest.param(
        dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5), "EST")), id="named-offset"
    ),
    pytest.param(
        dt.datetime(2026, 10, 25, 2, 30, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"), fold=1), id="zoneinfo-fold"
    ),
    pytest.param(dt.date(2026, 2, 28), id="date"),
    pytest.param(
        dt.time(23, 59, 59, 999999, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))), id="time-tz"
    ),
    pytest.param(dt.timedelta(days=-2, seconds=3, microseconds=4), id="timedelta"),
    pytest.param(decimal.Decimal("1.10"), id="decimal-1.10"),
    pytest.param(decimal.Decimal("-0E-7"), id="decimal-minus-zero"),
    pytest.param(decimal.Decimal("sNaN"), id="decimal-snan"),
    pytest.param(uuid.UUID("12345678-1234-5678-1234-567812345678"), id="uuid"),
    pytest.param(complex(1.5, -0.0), id="complex"),
    pytest.param(pathlib.PurePosixPath("/srv/data/x.csv"), id="pure-path"),
    pytest.param(pathlib.Path("reports") / "q1.txt", id="path"),
    pytest.param((1, [2, (3,)]), id="nested-tuples"),
    pytest.param([(1, 2), [1, 2]], id="tuple-and-list"),
    pytest.param({3, 1, 2}, id="set"),
    pytest.param(frozenset({"b", "a"}), id="frozenset"),
    pytest.param({1: "a", "1": "b", (2, 3): None, 1.5: b"x"}, id="non-str-keys"),
    pytest.param({"$bytes": "eA==", "$ref": "#/defs/x", "$$x": 1}, id="keys-like-tags"),
    pytest.param({"b": 1, "a": 2}, id="dict-order"),
    pytest.param(Color.BLUE, id="enum"),
    pytest.param(Level.HIGH, id="int-enum"),
    pytest.param(Perm.R | Perm.W, id="flag-combination"),
    pytest.param(Point(1, 2.0), id="namedtuple"),
    pytest.param(Line(Point(0, 0.0), Point(1, 1.5), ("a",)), id="dataclass-of-namedtuples"),
]


@pytest.mark.parametrize("value", EXACT)
def test_a_value_replays_as_the_same_type_and_value(value: Any) -> None:
    live, replayed = record_then_replay({"value": value, "in a list": [value], "in a tuple": (value,)})
    assert same(replayed, live), (replayed, live)


def test_a_pydantic_model_replays_with_its_fields_exact() -> None:
    refund = Refund(
        order_id="A1",
        amount=decimal.Decimal("9.90"),
        when=dt.datetime(2026, 1, 2, tzinfo=dt.UTC),
        extra=(1, {2}),  # `Any`: a JSON dump would have made these a list
    )
    live, replayed = record_then_replay(refund)
    assert type(replayed) is Refund and replayed == live
    assert type(replayed.extra) is tuple and type(replayed.extra[1]) is set


def test_an_integer_beyond_64_bits_is_an_argument_that_matches() -> None:
    """2**64+2 as an argument raised a bare TypeError out of orjson.dumps; 2**64+1 replayed as a float."""
    with cassette.using(CASSETTE, mode="record"):
        assert describe(2**64 + 2) == f"int:{2**64 + 2}"
        assert echo(10**30) == 10**30
    text = Path(CASSETTE).read_text()
    assert '"$int": "18446744073709551618"' in text and '"$int": "1000000000000000000000000000000"' in text
    ran.clear()
    with cassette.using(CASSETTE, mode="replay", unused="error"):
        assert describe(2**64 + 2) == f"int:{2**64 + 2}"
        back = echo(10**30)
    assert type(back) is int and back == 10**30 and ran == []
    with pytest.raises(cassette.CassetteMiss):
        with cassette.using(CASSETTE, mode="replay"):
            describe(float(2**64 + 2))  # the same number as a float is another call


class Ticket:
    """A plain class: not a dataclass, the default repr (with a memory address)."""

    def __init__(self, number: int, tags: Any = ()) -> None:
        self.number = number
        self.tags = tags


class Slotted:
    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number


class FixedZone(dt.tzinfo):
    def utcoffset(self, when: Any) -> dt.timedelta:
        return dt.timedelta(hours=1)

    def dst(self, when: Any) -> dt.timedelta:
        return dt.timedelta(0)


class Label(str):
    pass


def _local() -> Any:
    @dataclasses.dataclass
    class Local:
        a: int

    return Local(1)


@pytest.mark.parametrize(
    ("value", "names"),
    [
        pytest.param(
            dt.datetime(2026, 1, 1, tzinfo=FixedZone()), ["tzinfo", "FixedZone", "zoneinfo"], id="tzinfo"
        ),
        pytest.param(Label("x"), ["Label", "a subclass of str", "plain str"], id="str-subclass"),
        pytest.param(np.float64(0.5), ["numpy.float64", "a subclass of float"], id="numpy-float64"),
        pytest.param(memoryview(b"x"), ["memoryview", "codec"], id="memoryview"),
        pytest.param(print, ["builtin_function_or_method"], id="function"),
        pytest.param({"k": [1, object()]}, ["object", "at ['k'][1]"], id="nested-object"),
        pytest.param(_local(), ["defined inside a function", "top level of a module"], id="local-class"),
        pytest.param(Ticket(7), ["Ticket, which has no lossless encoding", "dataclass"], id="plain-object"),
    ],
)
def test_a_value_with_no_lossless_encoding_is_refused_when_recorded(value: Any, names: list[str]) -> None:
    SAMPLES["refused"] = value
    # an argument is only hashed, never rebuilt: a class of a function's own or a plain object's state
    # is a key (test_a_plain_object_argument_is_keyed_by_its_class_and_state)
    keyed = isinstance(value, Ticket) or dataclasses.is_dataclass(value)
    calls = [(produce, "its result")] + ([] if keyed else [(describe, "argument 'value'")])
    for call, what in calls:
        with cassette.using(CASSETTE, mode="record"):
            with pytest.raises(cassette.UnencodableValueError) as caught:
                call(value) if call is describe else produce("refused")
            echo("after")  # the session goes on: the refused call is simply not recorded
        message = str(caught.value)
        assert f"tool {call.__name__!r}: {what}" in message and "refused when recording" in message
        for name in names:
            assert name in message
        assert isinstance(caught.value, cassette.CassetteError) and isinstance(caught.value, TypeError)
        recorded = cassette.load_cassette(CASSETTE).interactions
        assert [i.request["name"] for i in recorded] == ["echo"]


SAMPLES: dict[str, Any] = {}


@cassette.tool
def produce(name: str) -> Any:
    return SAMPLES[name]


@pytest.mark.parametrize(
    ("recorded", "asked"),
    [
        (Ticket(7), Ticket(8)),
        (Ticket(7, (1, 2)), Ticket(7, [1, 2])),
        (Ticket(7), Slotted(7)),
        (Slotted(7), Slotted(8)),
    ],
    ids=["number", "tuple-or-list", "class", "slots"],
)
def test_a_plain_object_argument_is_keyed_by_its_class_and_state(recorded: Any, asked: Any) -> None:
    with cassette.using(CASSETTE, mode="record"):
        live = describe(recorded)
    again = copy.copy(recorded)  # another object, the same class and state
    with cassette.using(CASSETTE, mode="replay"):
        assert describe(again) == live
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE, mode="replay"):
        describe(asked)


@pytest.mark.parametrize(
    "value", [str.upper, len, Ticket, np, lambda x: x, object()], ids=lambda v: type(v).__name__
)
def test_a_function_class_or_module_argument_is_refused_not_keyed_alike(value: Any) -> None:
    with cassette.using(CASSETTE, mode="record"), pytest.raises(cassette.UnencodableValueError):
        describe(value)


def test_an_exception_holding_an_unencodable_value_is_refused_with_the_tool_named() -> None:
    class Holder(Exception):
        pass

    @cassette.tool
    def flaky() -> None:
        raise Holder("boom", object())

    with cassette.using(CASSETTE, mode="record"):
        with pytest.raises(
            cassette.UnencodableValueError, match=r"tool 'flaky'.*Holder it raised, args\[1\]"
        ):
            flaky()


def _edit_result(path: str, result: Any) -> None:
    doc = json.loads(Path(path).read_text())
    doc["interactions"][0]["response"] = {"result": result}
    Path(path).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ({"$bytes": "aGk="}, b"hi"),
        (
            {"$datetime": "2026-01-02T03:04:05+00:00", "type": "datetime"},
            dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        ),
        ({"$datetime": "2026-01-02", "type": "date"}, dt.date(2026, 1, 2)),
        (
            {"$dataclass": f"{__name__}:Line", "fields": {"start": [0, 0.0], "end": [1, 1.5], "tags": ["a"]}},
            None,
        ),
        (
            {
                "$pydantic": f"{__name__}:Refund",
                "data": {"order_id": "A", "amount": "1.5", "when": "2026-01-02T00:00:00Z"},
            },
            None,
        ),
        ({"$ref": "#/defs/x", "type": "object"}, {"$ref": "#/defs/x", "type": "object"}),
        ([1, [2, 3]], [1, [2, 3]]),  # a tuple, as releases before $tuple wrote it
    ],
    ids=["bytes", "datetime", "date", "dataclass", "pydantic-json-data", "user-dollar-keys", "list"],
)
def test_cassettes_written_by_earlier_releases_still_replay(stored: Any, expected: Any) -> None:
    with cassette.using(CASSETTE, mode="record"):
        echo("x")
    _edit_result(CASSETTE, stored)
    with cassette.using(CASSETTE, mode="replay"):
        back = echo("x")
    if isinstance(stored, dict) and "$dataclass" in stored:
        assert type(back) is Line and back.start == [0, 0.0]  # as earlier releases rebuilt it
    elif isinstance(stored, dict) and "$pydantic" in stored:
        assert type(back) is Refund and back.amount == decimal.Decimal("1.5")
    else:
        assert same(back, expected)


@pytest.mark.parametrize(
    "stored",
    [
        {"$http": "httpx:NoSuchResponse", "status": 200, "headers": {}},
        {"$enum": f"{__name__}:Color", "value": "green"},
        {"$tuple": 5},
        {"$int": "twelve"},
        {"$float": "NaN!"},
        {"$dict": [[1]]},
        {"$timedelta": [1, 2]},
        {"$path": "a", "type": "Path; rm -rf /"},
        {"$namedtuple": "os:system", "fields": {}},
    ],
    ids=[
        "http-class-gone",
        "enum-member-gone",
        "tuple-an-int",
        "int-words",
        "float-word",
        "pair-of-one",
        "timedelta-short",
        "path-type",
        "namedtuple-os-system",
    ],
)
def test_a_tampered_tag_is_a_cassette_error_never_another_type(stored: Any) -> None:
    import httpx  # noqa: F401  # imported: the lookup is what refuses the class

    with cassette.using(CASSETTE, mode="record"):
        echo("x")
    _edit_result(CASSETTE, stored)
    with pytest.raises(cassette.CassetteShapeError, match=str(Path(CASSETTE).absolute())):
        with cassette.using(CASSETTE, mode="replay"):
            echo("x")


def test_an_earlier_releases_object_state_is_an_error_not_a_dict() -> None:
    with cassette.using(CASSETTE, mode="record"):
        echo("x")
    _edit_result(CASSETTE, {"$object": f"{__name__}:Order", "state": {"oid": "A1"}})
    with pytest.raises(cassette.UnrebuildableValueError, match=r"\$object.*re-record") as caught:
        with cassette.using(CASSETTE, mode="replay"):
            echo("x")
    assert str(Path(CASSETTE).absolute()) in str(caught.value)


# --- 2. keys never collide ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("recorded", "asked"),
    [
        ({1: "a"}, {"1": "a"}),
        ((1, 2), [1, 2]),
        ({"$bytes": "eA=="}, b"x"),
        ({"$tuple": [1]}, (1,)),
        ({"$$x": 1}, {"$x": 1}),
        (1, 1.0),
        (1, True),
        (0.0, -0.0),
        ({1, 2}, frozenset({1, 2})),
        ({1, 2}, [1, 2]),
        (b"x", bytearray(b"x")),
        ("2026-01-02", dt.date(2026, 1, 2)),
        (decimal.Decimal("1.0"), 1.0),
        (decimal.Decimal("1.0"), decimal.Decimal("1.00")),
        (Color.RED, "red"),
        (Level.LOW, 1),
        (Point(1, 2.0), (1, 2.0)),
        (
            dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            dt.datetime(2026, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        ),
        (2**64 + 1, float(2**64 + 1)),
        ("x", pathlib.PurePosixPath("x")),
    ],
    ids=lambda v: type(v).__name__,
)
def test_distinct_values_are_distinct_keys(recorded: Any, asked: Any) -> None:
    with cassette.using(CASSETTE, mode="record"):
        describe(recorded)
    with pytest.raises(cassette.CassetteMiss):
        with cassette.using(CASSETTE, mode="replay"):
            describe(asked)
    with cassette.using(CASSETTE, mode="replay"):
        assert describe(recorded) == f"{type(recorded).__name__}:{recorded!r}"


@pytest.mark.parametrize(
    ("recorded", "asked"),
    [({"a": 1, "b": 2}, {"b": 2, "a": 1}), ({1: "a", 2: "b"}, {2: "b", 1: "a"}), ({3, 1, 2}, {2, 3, 1})],
    ids=["str-keys", "int-keys", "set"],
)
def test_equal_values_built_in_another_order_are_one_key(recorded: Any, asked: Any) -> None:
    with cassette.using(CASSETTE, mode="record"):
        describe(recorded)
    with cassette.using(CASSETTE, mode="replay"):
        describe(asked)


def _ndarray_codec() -> ValueCodec:
    def encode(a: np.ndarray) -> dict[str, Any]:
        if a.dtype.hasobject:
            raise TypeError("an array of Python objects has no bytes of its own")
        return {"dtype": a.dtype.str, "shape": a.shape, "data": a.tobytes()}

    return ValueCodec(
        tag="numpy.ndarray",
        type=np.ndarray,
        encode=encode,
        decode=lambda d: np.frombuffer(d["data"], dtype=d["dtype"]).reshape(d["shape"]).copy(),
    )


class NumpyValues:
    @cassette.hookimpl
    def cassette_value_codecs(self) -> list[ValueCodec]:
        return [
            _ndarray_codec(),
            ValueCodec(
                tag="numpy.generic",
                type=np.generic,
                subclasses=True,
                encode=lambda x: {"dtype": x.dtype.str, "data": x.tobytes()},
                decode=lambda d: np.frombuffer(d["data"], dtype=d["dtype"])[0],
            ),
        ]


@pytest.fixture
def numpy_codecs() -> Iterator[NumpyValues]:
    plugin = NumpyValues()
    get_plugin_manager().register(plugin)
    yield plugin
    if get_plugin_manager().is_registered(plugin):
        get_plugin_manager().unregister(plugin)


@cassette.tool
def mean(values: np.ndarray) -> np.float64:
    ran.append("mean")
    return values.mean()


def test_two_large_arrays_that_differ_in_the_middle_are_two_keys(numpy_codecs: NumpyValues) -> None:
    """numpy's repr elides the middle of 2,000 elements: a key made from it served 999.5 for both."""
    a = np.arange(2000, dtype=np.float64)
    b = a.copy()
    b[1000] = 1_000_000.0
    assert repr(a) == repr(b) and str(a) == str(b)
    with cassette.using(CASSETTE, mode="record"):
        live = (mean(a), mean(b))
    assert live[0] == 999.5 and live[1] != live[0]
    keys = [i.key for i in cassette.load_cassette(CASSETTE).interactions]
    assert len(set(keys)) == 2
    ran.clear()
    with cassette.using(CASSETTE, mode="replay", unused="error"):
        replayed = (mean(a), mean(b))
    assert ran == [] and replayed == live and all(type(x) is np.float64 for x in replayed)
    c = a.copy()
    c[1999] = 0.0
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE, mode="replay"):
        mean(c)
    with pytest.raises(cassette.CassetteMiss), cassette.using(CASSETTE, mode="replay"):
        mean(a.astype(np.float32))  # same numbers, another dtype


def test_an_array_round_trips_with_its_dtype_and_shape(numpy_codecs: NumpyValues) -> None:
    grid = np.arange(12, dtype=np.int16).reshape(3, 4)
    _, replayed = record_then_replay({"grid": grid, "flag": np.bool_(True)})
    assert type(replayed["grid"]) is np.ndarray and replayed["grid"].dtype == np.int16
    assert replayed["grid"].shape == (3, 4) and (replayed["grid"] == grid).all()
    assert type(replayed["flag"]) is np.bool_


def test_a_codec_that_cannot_encode_a_value_refuses_it(numpy_codecs: NumpyValues) -> None:
    with cassette.using(CASSETTE, mode="record"), pytest.raises(cassette.UnencodableValueError) as caught:
        echo(np.array([object()], dtype=object))
    assert "codec 'numpy.ndarray' failed to encode it" in str(caught.value)


def test_without_its_codec_an_array_is_refused_and_a_recorded_one_names_the_plugin(
    numpy_codecs: NumpyValues,
) -> None:
    with cassette.using(CASSETTE, mode="record"):
        mean(np.arange(3.0))
    get_plugin_manager().unregister(numpy_codecs)
    with pytest.raises(cassette.UnencodableValueError, match="cassette_value_codecs"):
        with cassette.using(CASSETTE, mode="record"):
            mean(np.arange(3.0))
    with cassette.using(CASSETTE, mode="record"):
        echo("x")
    _edit_result(CASSETTE, {"$codec": "numpy.ndarray", "data": {}})
    with pytest.raises(cassette.UnknownCodecTagError, match="Load the plugin"):
        with cassette.using(CASSETTE, mode="replay"):
            echo("x")


class Order:
    """A domain class that is not a dataclass: it replays as itself only through a codec."""

    def __init__(self, oid: str) -> None:
        self.oid = oid

    def __eq__(self, other: object) -> bool:
        return type(other) is Order and other.oid == self.oid


class Codecs:
    def __init__(self, *codecs: Any) -> None:
        self.codecs = list(codecs)

    @cassette.hookimpl
    def cassette_value_codecs(self) -> list[Any]:
        return self.codecs


@pytest.fixture
def register() -> Iterator[Any]:
    plugins: list[Any] = []

    def add(*codecs: Any) -> None:
        plugins.append(Codecs(*codecs))
        get_plugin_manager().register(plugins[-1])

    yield add
    for plugin in plugins:
        get_plugin_manager().unregister(plugin)


ORDER = ValueCodec("shop.Order", Order, encode=lambda o: o.oid, decode=Order)


@pytest.mark.parametrize(
    ("codecs", "says"),
    [
        ([ORDER, dataclasses.replace(ORDER, type=Point)], "two value codecs are registered under the tag"),
        ([ORDER, dataclasses.replace(ORDER, tag="other")], "two value codecs ('shop.Order' and 'other')"),
        ([dataclasses.replace(ORDER, type=int)], "whose encoding is built in"),
        ([dataclasses.replace(ORDER, type=dt.datetime)], "whose encoding is built in"),
        ([dataclasses.replace(ORDER, tag="")], "non-empty string"),
        ([("shop.Order", Order, str, Order)], "not a cassette.ValueCodec"),
        ([dataclasses.replace(ORDER, decode=lambda oid: oid)], "decodes it as a str"),
    ],
    ids=["tag-twice", "type-twice", "builtin", "builtin-datetime", "empty-tag", "a-tuple", "wrong-type-back"],
)
def test_a_bad_codec_is_a_config_error(register: Any, codecs: list[Any], says: str) -> None:
    register(*codecs)
    with pytest.raises(cassette.ValueCodecError) as caught:
        with cassette.using(CASSETTE, mode="record"):
            echo(Order("A1"))
    assert says in str(caught.value) and isinstance(caught.value, cassette.CassetteConfigError)


# --- 3. no silent type change ---------------------------------------------------------------------


@cassette.tool
def lookup(oid: str) -> Order:
    return Order(oid)


def test_an_arbitrary_object_is_refused_not_replayed_as_a_dict_or_its_repr() -> None:
    with cassette.using(CASSETTE, mode="record"), pytest.raises(cassette.UnencodableValueError) as caught:
        lookup("A1")
    message = str(caught.value)
    assert f"its result is a {__name__}.Order" in message
    assert "dataclass" in message and "cassette_value_codecs" in message


def test_an_arbitrary_object_with_a_codec_replays_as_itself(register: Any) -> None:
    register(ORDER)
    live, replayed = record_then_replay([Order("A1"), {"o": Order("B2")}])
    assert type(replayed[0]) is Order and replayed == live
    assert '"$codec": "shop.Order"' in Path(CASSETTE).read_text()


def test_a_pydantic_model_that_does_not_round_trip_is_refused() -> None:
    from pydantic import field_serializer

    class Lossy(BaseModel):
        amount: float

        @field_serializer("amount")
        def _rounded(self, amount: float) -> float:
            return round(amount)

    Lossy.__qualname__ = "Lossy"  # reachable by name, so the round trip is what refuses it
    globals()["Lossy"] = Lossy
    try:
        with cassette.using(CASSETTE, mode="record"), pytest.raises(cassette.UnencodableValueError) as caught:
            echo(Lossy(amount=2.4))
        assert "does not give back equal" in str(caught.value)
    finally:
        del globals()["Lossy"]


def test_an_attrs_class_replays_as_itself(tmp_path: Path) -> None:
    attr = pytest.importorskip("attrs")
    module = tmp_path / "attrs_values.py"
    module.write_text(
        "import attrs\n@attrs.define\nclass Box:\n"
        "    size: int = attrs.field(converter=int)\n    _tag: str = 'x'\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import attrs_values  # type: ignore[import-not-found]

        live, replayed = record_then_replay(attrs_values.Box("3", "y"))
        assert type(replayed) is attrs_values.Box and replayed == live and attr.has(type(replayed))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("attrs_values", None)


# --- 4. control flow is never replayed ------------------------------------------------------------


@cassette.tool
def gate(kind: str) -> str:
    if kind == "skip":
        raise unittest.SkipTest("no database here")
    if kind == "pytest-skip":
        pytest.skip("no database here")
    if kind == "pytest-fail":
        pytest.fail("broken")
    if kind == "xfail":
        pytest.xfail("known")
    if kind == "pdb":
        raise bdb.BdbQuit
    if kind == "exit":
        pytest.exit("stop the run")  # an Exception subclass, unlike skip's
    return "open"


@pytest.mark.parametrize("kind", ["skip", "pytest-skip", "pytest-fail", "xfail", "pdb", "exit"])
def test_control_flow_raised_by_a_tool_propagates_and_is_not_recorded(kind: str) -> None:
    with cassette.using(CASSETTE, mode="record"):
        with pytest.raises(BaseException) as caught:
            gate(kind)
        assert not isinstance(caught.value, cassette.CassetteError)
        assert gate("ok") == "open"
    assert [i.request["arguments"] for i in cassette.load_cassette(CASSETTE).interactions] == [{"kind": "ok"}]


CONTROL_FLOW = [
    "unittest.case:SkipTest",
    "_pytest.outcomes:Skipped",
    "_pytest.outcomes:Failed",
    "_pytest.outcomes:XFailed",
    "_pytest.outcomes:Exit",
    "builtins:KeyboardInterrupt",
    "builtins:SystemExit",
    "builtins:GeneratorExit",
    "asyncio.exceptions:CancelledError",
    "bdb:BdbQuit",
]


def _tamper_error(path: str, error_type: str) -> None:
    doc = json.loads(Path(path).read_text())
    doc["interactions"][0]["response"] = {"error": {"type": error_type, "message": "x", "args": ["x"]}}
    Path(path).write_text(json.dumps(doc))


@pytest.mark.parametrize("error_type", CONTROL_FLOW)
def test_a_cassette_naming_control_flow_raises_a_cassette_error(error_type: str) -> None:
    assert asyncio.CancelledError and unittest.SkipTest  # imported: the lookup would find them
    with cassette.using(CASSETTE, mode="record"):
        gate("ok")
    _tamper_error(CASSETTE, error_type)
    with pytest.raises(cassette.RecordedControlFlowError, match="control flow") as caught:
        with cassette.using(CASSETTE, mode="replay"):
            gate("ok")
    assert str(Path(CASSETTE).absolute()) in str(caught.value)


def test_a_tampered_cassette_cannot_make_a_failing_test_report_skipped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner=textwrap.dedent(
            """
            import json, pathlib
            import cassette

            @cassette.tool
            def charge(amount):
                return {"charged": amount}

            def test_charge():
                path = pathlib.Path("c.json")
                with cassette.using(path, mode="record"):
                    charge(5)
                doc = json.loads(path.read_text())
                doc["interactions"][0]["response"] = {
                    "error": {"type": "_pytest.outcomes:Skipped", "message": "", "args": []}
                }
                path.write_text(json.dumps(doc))
                with cassette.using(path, mode="replay"):
                    assert charge(5) == {"charged": 500}  # a wrong answer a skip would hide
            """
        )
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RecordedControlFlowError*"])


def test_looking_a_class_up_never_runs_a_module_getattr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "LOADED"
    (tmp_path / "lazy_values.py").write_text(
        "import pathlib\n"
        f"def __getattr__(name):\n    pathlib.Path({str(marker)!r}).write_text(name)\n"
        "    raise AttributeError(name)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazy_values  # type: ignore[import-not-found]  # the user's module, imported by them

    try:
        for stored in (
            {"$dataclass": "lazy_values:Thing", "fields": {}},
            {"$enum": "lazy_values:Thing", "value": 1},
            {"$pydantic": "lazy_values:sub.Thing", "fields": {}},
        ):
            with cassette.using(CASSETTE, mode="record"):
                echo("x")
            _edit_result(CASSETTE, stored)
            with pytest.raises(cassette.UnrebuildableValueError):
                with cassette.using(CASSETTE, mode="replay"):
                    echo("x")
        with cassette.using(CASSETTE, mode="record"):
            gate("ok")
        _tamper_error(CASSETTE, "lazy_values:Boom")
        with pytest.raises(cassette.CassetteToolError), cassette.using(CASSETTE, mode="replay"):
            gate("ok")
        assert not marker.exists()
        assert lazy_values.__name__ == "lazy_values"
    finally:
        sys.modules.pop("lazy_values", None)


def test_a_numpy_submodule_named_by_a_cassette_is_not_imported(tmp_path: Path) -> None:
    """`{"$dataclass": "numpy:testing.x"}` imported numpy.testing through numpy's module __getattr__."""
    script = tmp_path / "replay_numpy.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, pathlib, sys
            import numpy
            import cassette

            @cassette.tool
            def echo(x):
                return x

            assert "numpy.testing" not in sys.modules
            path = pathlib.Path("c.json")
            with cassette.using(path, mode="record"):
                echo(1)
            for tag in ("$dataclass", "$pydantic", "$enum", "$namedtuple"):
                doc = json.loads(path.read_text())
                value = {tag: "numpy:testing.x", "fields": {}, "value": 1}
                doc["interactions"][0]["response"] = {"result": value}
                path.write_text(json.dumps(doc))
                try:
                    with cassette.using(path, mode="replay"):
                        echo(1)
                except cassette.CassetteError as exc:
                    print(type(exc).__name__)
            error = {"type": "numpy:testing.x", "message": "", "args": []}
            doc["interactions"][0]["response"] = {"error": error}
            path.write_text(json.dumps(doc))
            try:
                with cassette.using(path, mode="replay"):
                    echo(1)
            except cassette.CassetteError as exc:
                print(type(exc).__name__)
            print("numpy.testing" in sys.modules)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["UnrebuildableValueError"] * 4 + ["CassetteToolError", "False"]


# --- the property: whatever is accepted replays the same, and distinct values are distinct keys ---


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**80)
    | st.integers(min_value=-(2**80), max_value=-(2**62))
    | st.floats()
    | st.text(max_size=8)
    | st.text(st.characters(codec="utf-8") | st.sampled_from(["\ud800", "\udfff", "$"]), max_size=4)
    | st.binary(max_size=8)
    | st.binary(max_size=4).map(bytearray)
    | st.decimals(allow_nan=True, allow_infinity=True)
    | st.uuids()
    | st.datetimes(timezones=st.none() | st.timezones() | st.just(dt.UTC))
    | st.dates()
    | st.times(timezones=st.none() | st.just(dt.timezone(dt.timedelta(hours=-3))))
    | st.timedeltas()
    | st.complex_numbers()
    | st.sampled_from([Color.RED, Level.HIGH, Perm.R | Perm.W, Point(1, 2.0), pathlib.PurePosixPath("a/b")])
)


def _hashable_scalar(v: Any) -> bool:
    return not isinstance(v, bytearray) and not (isinstance(v, decimal.Decimal) and v.is_snan())


_hashable = st.recursive(
    _scalars.filter(_hashable_scalar),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=4,
)
# keys from letters no secret field name is made of (a `pin` of 6 digits would be redacted on disk)
_names = st.text("abcxyz\u00e9$", max_size=4) | st.sampled_from(["$bytes", "$tuple", "$$x", "$"])
_points = st.builds(Point, st.integers(), st.floats())
values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.sets(_hashable, max_size=3)
        | st.dictionaries(_names, inner, max_size=3)
        | st.dictionaries(_hashable, inner, max_size=3)
        | st.builds(Line, _points, _points, st.lists(st.text(max_size=3), max_size=2).map(tuple))
    ),
    max_leaves=10,
)

PROPERTY = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def _key(value: Any) -> str:
    return request_key(normalize(tool_request("echo", None, (value,), {}), "tool"))


def _identity(v: Any) -> Any:
    """What tells two values apart: type and value, all the way down (a dict's order aside)."""
    t = type(v)
    if t is float:
        return (t, "nan" if v != v else repr(v))
    if t is complex:
        return (t, _identity(v.real), _identity(v.imag))
    if t is decimal.Decimal:
        return (t, str(v))
    if t in (list, tuple) or isinstance(v, tuple):
        return (t, tuple(_identity(x) for x in v))
    if t in (set, frozenset):  # as a sorted multiset: a set may hold two NaNs
        return (t, tuple(sorted(repr(_identity(x)) for x in v)))
    if t is dict:
        return (t, tuple(sorted(repr((_identity(k), _identity(x))) for k, x in v.items())))
    if t in (dt.datetime, dt.time):
        return (t, str(v), v.fold, v.tzname(), repr(v.tzinfo))
    if t is Line:
        return (t, _identity(v.start), _identity(v.end), _identity(v.tags))
    return (t, repr(v))


@PROPERTY
@given(values)
def test_property_any_accepted_value_replays_equal_and_of_the_same_type(value: Any) -> None:
    encoded = to_jsonable(value)
    assert same(from_jsonable(json.loads(json.dumps(encoded))), value)  # through plain JSON text
    live, replayed = record_then_replay(value)  # through a real cassette file and its blob store
    assert same(replayed, value) and live is value


@PROPERTY
@given(values, values)
def test_property_distinct_values_are_distinct_keys(a: Any, b: Any) -> None:
    assert (_key(a) == _key(b)) == (_identity(a) == _identity(b))
