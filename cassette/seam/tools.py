"""Tool capture: ``@cassette.tool`` records a function's arguments and result through the seam.

A tool's arguments, result and error are written in one typed, lossless JSON encoding (the table
is in docs/format.md): every value either comes back from the cassette as the same type and value
(recursively: a tuple in a list in a dict is a tuple again), or is refused when it is recorded,
with a `UnencodableValueError` naming its type, the tool and the fix. The arguments' encoding is
also their match key, so two values that differ in type or value never share a recording.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import functools
import inspect
import math
import pathlib
import sys
import types
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

import orjson

from cassette.core.canonical import request_key
from cassette.errors import (
    CassetteError,
    CassetteShapeError,
    CassetteToolError,
    RecordedControlFlowError,
    UnencodableValueError,
    UnimportedTypeError,
    UnknownCodecTagError,
    UnrebuildableValueError,
    ValueCodecError,
)
from cassette.plugins.manager import get_plugin_manager, normalize
from cassette.seam.session import seam_session

F = TypeVar("F", bound=Callable[..., Any])


# --- codecs: a project's own types ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ValueCodec:
    """How values of a type of your own are written into a cassette and rebuilt on replay.

    Return these from the ``cassette_value_codecs`` hook. ``encode(value)`` returns data made of
    values cassette encodes itself (str, int, float, bytes, lists, tuples, dicts, ...), encoded in
    turn (so its match key is as exact as theirs); ``decode(data)`` gets that data back and returns
    a value of the same type. It is written ``{"$codec": tag, "data": ...}``.

    Example::

        ValueCodec(
            tag="numpy.ndarray",
            type=numpy.ndarray,
            encode=lambda a: {"dtype": a.dtype.str, "shape": a.shape, "data": a.tobytes()},
            decode=lambda d: numpy.frombuffer(d["data"], d["dtype"]).reshape(d["shape"]).copy(),
        )

    :param tag: the name written into the cassette; keep it stable (recordings carry it).
    :param type: the type (or a tuple of types) it encodes, matched exactly; with
        ``subclasses=True`` any subclass too (``numpy.generic`` for every numpy scalar type).
    """

    tag: str
    type: type | tuple[type, ...]
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]
    subclasses: bool = False


@dataclasses.dataclass
class _Codecs:
    by_type: dict[type, ValueCodec]
    by_tag: dict[str, ValueCodec]
    broad: list[tuple[tuple[type, ...], ValueCodec]]
    checked: set[tuple[str, type]]


_registry: tuple[Any, tuple[Any, ...], _Codecs] | None = None


def _codecs() -> _Codecs:
    """The codecs the plugins register, collected again when the manager or its plugins change."""
    global _registry
    pm = get_plugin_manager()
    hook = pm.hook.cassette_value_codecs
    impls = tuple(impl.function for impl in hook.get_hookimpls())
    known = _registry
    if known is not None and known[0] is pm and known[1] == impls:
        return known[2]
    made = _Codecs({}, {}, [], set())
    for found in hook():
        for codec in found or ():
            _register(made, codec)
    _registry = (pm, impls, made)
    return made


def _register(made: _Codecs, codec: Any) -> None:
    if not isinstance(codec, ValueCodec):
        raise ValueCodecError(
            f"a cassette_value_codecs hook returned {type(codec).__name__} {str(codec)[:100]!r}, not a "
            "cassette.ValueCodec: return ValueCodec(tag=..., type=..., encode=..., decode=...) items."
        )
    types = codec.type if isinstance(codec.type, tuple) else (codec.type,)
    if not codec.tag or not isinstance(codec.tag, str) or not all(isinstance(t, type) for t in types):
        raise ValueCodecError(
            f"value codec {codec.tag!r}: its tag must be a non-empty string and its type a class or a "
            "tuple of classes. Fix the plugin's cassette_value_codecs hook."
        )
    if not (callable(codec.encode) and callable(codec.decode)):
        raise ValueCodecError(f"value codec {codec.tag!r}: encode and decode must be callables.")
    if codec.tag in made.by_tag:
        raise ValueCodecError(
            f"two value codecs are registered under the tag {codec.tag!r}: a recording could not tell "
            "which one wrote it. Give each codec its own tag (or load only one of the plugins)."
        )
    for t in types:
        if t in _ENCODE:
            raise ValueCodecError(
                f"value codec {codec.tag!r} registers {_name(t)}, whose encoding is built in "
                "(docs/format.md): a codec may only add types of your own."
            )
        if t in made.by_type:
            raise ValueCodecError(
                f"two value codecs ({made.by_type[t].tag!r} and {codec.tag!r}) are registered for "
                f"{_name(t)}: keep one."
            )
        made.by_type[t] = codec
    made.by_tag[codec.tag] = codec
    if codec.subclasses:
        made.broad.append((types, codec))


# --- encoding -------------------------------------------------------------------------------------


class _Refused(Exception):
    """A value with no lossless encoding; `path` is where it sits (filled in on the way out)."""

    def __init__(self, value: Any, why: str, fix: str) -> None:
        super().__init__(why)
        self.value, self.why, self.fix = value, why, fix
        self.path: list[str] = []


_FIX_TYPE = (
    "Return (or pass) a value of a type cassette writes (docs/format.md), make the class a dataclass, "
    "a pydantic model, an attrs class or a NamedTuple defined at module level, or register a codec "
    "for it with the cassette_value_codecs hook (docs/plugins.md)"
)


def _a(t: type) -> str:
    """``a numpy.ndarray``, ``an object``."""
    name = _name(t)
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _name(t: type) -> str:
    module = getattr(t, "__module__", None)
    return t.__qualname__ if module in (None, "builtins") else f"{module}.{t.__qualname__}"


def _qualname(obj: type) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _named(cls: type, what: str, value: Any, key: bool) -> str:
    """``module:Qualname`` of ``cls``; for a result, checked to find ``cls`` again the way replay
    looks it up (an argument is only hashed, never rebuilt)."""
    name = _qualname(cls)
    if key:
        return name
    try:
        found = _imported(name, what)
    except (UnimportedTypeError, AttributeError):
        found = None
    if found is not cls:
        raise _Refused(
            value,
            f"{_name(cls)} is a {what} replay cannot find by its name {name!r}"
            + (" (it is defined inside a function)" if "<locals>" in cls.__qualname__ else ""),
            f"Define {cls.__qualname__.rsplit('.', 1)[-1]} at the top level of a module: replay looks "
            "a class up by module and name, in modules already imported",
        )
    return name


def _canonical(encoded: Any) -> bytes:
    return orjson.dumps(encoded, option=orjson.OPT_SORT_KEYS)


def _items(values: Any, key: bool) -> list[Any]:
    out = []
    for i, v in enumerate(values):
        try:
            out.append(_enc(v, key))
        except _Refused as r:
            r.path.append(f"[{i}]")
            raise
    return out


def _str(v: str, key: bool) -> Any:
    if not v.isascii():
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (a file name read with surrogateescape)
            return {"$str": {"$bytes": base64.b64encode(v.encode("utf-8", "surrogatepass")).decode()}}
    return v


def _int(v: int, key: bool) -> Any:
    if -(2**63) <= v < 2**64:  # what every JSON reader here parses back as an int
        return v
    try:
        return {"$int": str(v)}
    except ValueError:  # more digits than int <-> str converts (sys.get_int_max_str_digits)
        return {"$int": hex(v)}


def _float(v: float, key: bool) -> Any:
    if math.isfinite(v):
        return v  # orjson writes the shortest repr, -0.0 included; read back as the same float
    return {"$float": "nan" if v != v else ("inf" if v > 0 else "-inf")}


def _list(v: list[Any], key: bool) -> Any:
    return _items(v, key)


def _tuple(v: tuple[Any, ...], key: bool) -> Any:
    return {"$tuple": _items(v, key)}


def _set(v: set[Any] | frozenset[Any], key: bool) -> Any:
    # sorted by encoding: a set's iteration order changes with the hash seed, its encoding does not
    items = sorted(_items(v, key), key=_canonical)
    return {"$set" if type(v) is set else "$frozenset": items}


def _dict(v: dict[Any, Any], key: bool) -> Any:
    if all(type(k) is str for k in v):
        out = {}
        for k, x in v.items():
            try:
                item = _enc(x, key)
            except _Refused as r:
                r.path.append(f"[{k[:60]!r}]")
                raise
            if k[:1] == "$":  # a key of the user's own that starts like a tag is escaped: "$$ref"
                k = "$" + k
            elif not k.isascii():
                k = _str(k, key)
                if type(k) is not str:  # a key with lone surrogates: as a pair
                    return _pairs(v, key)
            out[k] = item
        return out
    return _pairs(v, key)


def _pairs(v: dict[Any, Any], key: bool) -> Any:
    pairs = []
    for k, x in v.items():
        try:
            pairs.append([_enc(k, key), _enc(x, key)])
        except _Refused as r:
            r.path.append(f"[{str(k)[:60]!r}]")
            raise
    if key:  # a key is the same whatever order the dict was built in, as a str-keyed dict's is
        pairs.sort(key=_canonical)
    return {"$dict": pairs}


def _bytes(v: bytes, key: bool) -> Any:
    return {"$bytes": base64.b64encode(v).decode()}


def _bytearray(v: bytearray, key: bool) -> Any:
    return {"$bytearray": _bytes(bytes(v), key)}


def _tz(v: dt.datetime | dt.time, out: dict[str, Any]) -> dict[str, Any]:
    tz = v.tzinfo
    if tz is None or type(tz) is dt.timezone:
        if tz is not None and tz.tzname(None) != dt.timezone(tz.utcoffset(None)).tzname(None):
            out["tzname"] = tz.tzname(None)  # timezone(timedelta(hours=-5), "EST")
    elif type(tz).__module__ == "zoneinfo" and type(tz).__name__ == "ZoneInfo" and getattr(tz, "key", None):
        out["tz"] = tz.key  # type: ignore[attr-defined]
        out["$datetime"] = v.replace(tzinfo=None).isoformat()  # the zone's offset is the zone's to say
    else:
        raise _Refused(
            v,
            f"a {type(v).__name__} whose tzinfo is a {_name(type(tz))}",
            "Use datetime.timezone or zoneinfo.ZoneInfo (or convert it to UTC), or register a codec "
            "for the type with the cassette_value_codecs hook (docs/plugins.md)",
        )
    if v.fold:
        out["fold"] = 1
    return out


def _datetime(v: dt.datetime, key: bool) -> Any:
    return _tz(v, {"$datetime": v.isoformat(), "type": "datetime"})


def _date(v: dt.date, key: bool) -> Any:
    return {"$datetime": v.isoformat(), "type": "date"}


def _time(v: dt.time, key: bool) -> Any:
    return _tz(v, {"$datetime": v.isoformat(), "type": "time"})


def _timedelta(v: dt.timedelta, key: bool) -> Any:
    return {"$timedelta": [v.days, v.seconds, v.microseconds]}


def _decimal(v: decimal.Decimal, key: bool) -> Any:
    return {"$decimal": str(v)}  # exact: digits, exponent, sign of zero, NaN and sNaN


def _uuid(v: uuid.UUID, key: bool) -> Any:
    return {"$uuid": str(v)}


def _complex(v: complex, key: bool) -> Any:
    return {"$complex": [_float(v.real, key), _float(v.imag, key)]}


def _path(v: pathlib.PurePath, key: bool) -> Any:
    return {"$path": str(v), "type": type(v).__name__}


_PATHS: dict[str, type] = {
    t.__name__: t
    for t in (pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath, pathlib.WindowsPath)
}
_ENCODE: dict[type, Callable[[Any, bool], Any]] = {
    type(None): lambda v, key: v,
    bool: lambda v, key: v,
    str: _str,
    int: _int,
    float: _float,
    list: _list,
    tuple: _tuple,
    set: _set,
    frozenset: _set,
    dict: _dict,
    bytes: _bytes,
    bytearray: _bytearray,
    dt.datetime: _datetime,
    dt.date: _date,
    dt.time: _time,
    dt.timedelta: _timedelta,
    decimal.Decimal: _decimal,
    uuid.UUID: _uuid,
    complex: _complex,
    **{t: _path for t in _PATHS.values()},
}
# a subclass of one of these that no codec claims is refused: written as its base, it would replay
# as the base (an IntEnum, a NamedTuple and a pandas Timestamp are subclasses; enums and NamedTuples
# have encodings of their own)
_BUILTIN_BASES = (str, int, float, list, tuple, set, frozenset, dict, bytes, bytearray, dt.date, dt.time)


def _enc(v: Any, key: bool) -> Any:
    encode = _ENCODE.get(type(v))
    if encode is not None:
        return encode(v, key)
    return _enc_other(v, key)


def _enc_other(v: Any, key: bool) -> Any:
    cls = type(v)
    codecs = _codecs()
    codec = codecs.by_type.get(cls)
    if codec is None:
        codec = next((c for types, c in codecs.broad if isinstance(v, types)), None)
    if codec is not None:
        return _enc_codec(codecs, codec, v, key)
    if isinstance(v, enum.Enum):
        name = _named(cls, "enum", v, key)
        try:
            return {"$enum": name, "value": _enc(v.value, key)}
        except _Refused as r:
            r.path.append(".value")
            raise
    if isinstance(v, tuple) and isinstance(getattr(cls, "_fields", None), tuple):  # a NamedTuple
        name = _named(cls, "NamedTuple", v, key)
        return {"$namedtuple": name, "fields": _fields(v, cls._fields, key)}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        name = _named(cls, "dataclass", v, key)
        return {"$dataclass": name, "fields": _fields(v, [f.name for f in dataclasses.fields(v)], key)}
    attrs = getattr(cls, "__attrs_attrs__", None)
    if isinstance(attrs, tuple) and not isinstance(v, type):  # an attrs class (attrs is never imported)
        name = _named(cls, "attrs class", v, key)
        return {"$attrs": name, "fields": _fields(v, [a.name for a in attrs], key)}
    if hasattr(v, "model_dump") and callable(getattr(cls, "model_validate", None)):
        return _enc_pydantic(v, key)
    if cls.__name__ in ("Request", "Response") and cls.__module__.split(".")[0] in _HTTP_MODULES:
        return _http_jsonable(v)
    base = next((b for b in _BUILTIN_BASES if isinstance(v, b)), None)
    if base is not None:
        raise _Refused(
            v,
            f"{_a(cls)}, a subclass of {base.__name__} that would replay as a plain {base.__name__}",
            f"Pass or return a plain {base.__name__} ({base.__name__}(value)), or register a codec for "
            f"{_name(cls)} with the cassette_value_codecs hook (docs/plugins.md)",
        )
    if key and _plain_object(v):  # an argument is only hashed: its class and its state are its key
        try:
            return {"$object": _qualname(cls), "state": _dict(_state(v), key)}
        except _Refused as r:
            r.path.append(f" (an attribute of {_a(cls)})")
            raise
    raise _Refused(v, f"{_a(cls)}, which has no lossless encoding in a cassette", _FIX_TYPE)


_NOT_DATA = (
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    functools.partial,
)


def _state(v: Any) -> dict[str, Any]:
    """A copy of an object's attributes: its ``__dict__`` and the slots of its classes that are set."""
    state = dict(getattr(v, "__dict__", None) or {})
    for c in type(v).__mro__:
        slots = vars(c).get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__") and hasattr(v, slot):
                state.setdefault(slot, getattr(v, slot))
    return state


def _plain_object(v: Any) -> bool:
    """An instance of a class of the user's own with state to key it by (not a function, a class or
    a module: all of them would key alike by their empty state)."""
    if isinstance(v, _NOT_DATA) or type(v).__module__ == "builtins":
        return False
    return isinstance(getattr(v, "__dict__", None), dict) or any(
        "__slots__" in vars(c) for c in type(v).__mro__[:-1]
    )


def _fields(v: Any, names: Any, key: bool) -> dict[str, Any]:
    out = {}
    for n in names:
        try:
            out[n] = _enc(getattr(v, n), key)
        except _Refused as r:
            r.path.append(f".{n}")
            raise
    return out


def _enc_codec(codecs: _Codecs, codec: ValueCodec, v: Any, key: bool) -> Any:
    try:
        data = codec.encode(v)
    except Exception as exc:
        raise _Refused(
            v,
            f"{_a(type(v))}, whose codec {codec.tag!r} failed to encode it ({type(exc).__name__}: "
            f"{str(exc)[:200]})",
            "Fix the codec's encode function",
        ) from None
    try:
        out = {"$codec": codec.tag, "data": _enc(data, key)}
    except _Refused as r:
        r.path.append(f" (codec {codec.tag!r} data)")
        raise
    if (codec.tag, type(v)) not in codecs.checked:  # once per type: decode must give the type back
        try:
            back = codec.decode(_dec(out["data"]))
        except Exception as exc:
            raise ValueCodecError(
                f"value codec {codec.tag!r} cannot decode what it encoded from a {_name(type(v))} "
                f"({type(exc).__name__}: {str(exc)[:200]}): fix its decode function."
            ) from None
        if type(back) is not type(v):
            raise ValueCodecError(
                f"value codec {codec.tag!r} encodes a {_name(type(v))} but decodes it as a "
                f"{_name(type(back))}: replay would hand back another type. Fix its decode function."
            )
        codecs.checked.add((codec.tag, type(v)))
    return out


def _enc_pydantic(v: Any, key: bool) -> Any:
    cls = type(v)
    name = _named(cls, "pydantic model", v, key)
    try:
        data = v.model_dump(by_alias=True, round_trip=True)
    except Exception as exc:
        raise _Refused(
            v, f"{_a(cls)} whose model_dump() raised {type(exc).__name__}: {str(exc)[:200]}", _FIX_TYPE
        ) from None
    try:
        out = {"$pydantic": name, "fields": _enc(data, key)}
    except _Refused as r:
        r.path.append(" (model_dump)")
        raise
    if not key:  # a result must come back equal: model_validate(model_dump()) is not always the model
        try:
            same = type(back := cls.model_validate(_dec(out["fields"]))) is cls and back == v
        except Exception:
            same = False
        if not same:
            raise _Refused(
                v,
                f"{_a(cls)} that model_validate(model_dump(by_alias=True, round_trip=True)) does "
                "not give back equal",
                "Make the model round-trip (no lossy serializers, validators that accept their own "
                "output), or register a codec for it with the cassette_value_codecs hook (docs/plugins.md)",
            )
    return out


def to_jsonable(value: Any, *, key: bool = False) -> Any:
    """A tool's value as typed JSON that `from_jsonable` turns back into an equal value of the same type.

    ``key=True`` writes what a match key is hashed from (a dict with keys that are not strings has
    its pairs sorted, as a JSON object's keys are). Raises `UnencodableValueError` for a value with no
    lossless encoding.

    Example::

        to_jsonable((1, b"a")) == {"$tuple": [1, {"$bytes": "YQ=="}]}
    """
    return _encode(value, key, "", "a value")


def _encode(value: Any, key: bool, tool: str, what: str) -> Any:
    try:
        return _enc(value, key)
    except _Refused as r:
        where = "".join(reversed(r.path))
        raise UnencodableValueError(
            (f"tool {tool!r}: " if tool else "")
            + f"{what}{f' (at {where.strip()})' if where else ''} is {r.why}, so it is refused when "
            f"recording rather than replayed as another type or value. {r.fix}."
        ) from None
    except RecursionError:
        raise UnencodableValueError(
            (f"tool {tool!r}: " if tool else "")
            + f"{what} is nested deeper than Python's recursion limit (or holds itself), so it cannot "
            "be written to a cassette. Pass or return a flatter value."
        ) from None


# --- decoding -------------------------------------------------------------------------------------


def _imported(qualname: str, what: str) -> Any:
    """The object ``module:Name`` names, looked up in modules already imported; never imports one.

    Importing runs the module's code, so a cassette (data, possibly from a pull request) must not
    choose what gets imported. The code under test imports the modules its tools' types live in.
    The name is read from the module's ``__dict__`` (and a nested class's from its class's), never
    through ``getattr``: a module's ``__getattr__`` (numpy's, a lazy loader's) may import a
    submodule. Raises `UnimportedTypeError` when the module is not imported, AttributeError when it
    has no such name.
    """
    module, _, name = qualname.partition(":")
    mod: Any = sys.modules.get(module)
    if mod is None:
        raise UnimportedTypeError(
            f"a recorded tool value names {qualname[:200]!r} as a {what}, but module {module[:200]!r} is "
            "not imported, and replay never imports a module a cassette names (importing runs its code). "
            f"If the class is yours, import {module[:200]} before replaying (in the test module or "
            "conftest.py); if it is not, the cassette was edited by hand or tampered with: re-record it."
        )
    try:  # the descriptor of ModuleType itself: a module subclass's __getattribute__ (lazy) never runs
        namespace: Any = object.__getattribute__(mod, "__dict__")
    except AttributeError:
        namespace = None
    obj: Any = None
    for part in name.split("."):
        if not isinstance(namespace, Mapping) or part not in namespace:
            raise AttributeError(f"{qualname[:200]!r} is not defined (it would have to be loaded)")
        obj = namespace[part]
        # a nested class is an attribute of its class; a class's qualname never walks through a module
        namespace = type.__getattribute__(obj, "__dict__") if isinstance(obj, type) else None
    return obj


def from_jsonable(value: Any) -> Any:
    """Rebuild a value `to_jsonable` wrote (and what earlier releases wrote) as its own type."""
    return _dec(value)


def _dec(v: Any) -> Any:
    t = type(v)
    if t is list:
        return [x if type(x) not in _NESTED else _dec(x) for x in v]
    if t is not dict:
        return v
    escaped = False
    for k in v:
        if k[:1] == "$":
            if k[:2] == "$$":
                escaped = True
                continue
            decode = _DECODE.get(k)
            if decode is not None:
                rebuilt = decode(v)
                if rebuilt is not _PLAIN:
                    return rebuilt
    if not escaped:  # a plain object (an earlier release's user keys like "$ref" stay as they were)
        return {k: x if type(x) not in _NESTED else _dec(x) for k, x in v.items()}
    return {(k[1:] if k[:2] == "$$" else k): _dec(x) for k, x in v.items()}


_NESTED = (list, dict)  # what _dec must look into; anything else JSON holds is itself


_PLAIN = object()  # a decoder's answer for "not this tag after all": an earlier release's user dict


def _need(v: dict[str, Any], tag: str, kind: type | tuple[type, ...], what: str) -> Any:
    data = v[tag]
    if not isinstance(data, kind):
        raise _malformed(f"a `{tag}` value needs {what}")
    return data


def _dec_int(v: dict[str, Any]) -> Any:
    return int(_need(v, "$int", str, "a string of digits"), 0)


def _dec_float(v: dict[str, Any]) -> Any:
    text = v["$float"]
    if text not in ("nan", "inf", "-inf"):
        raise _malformed('a `$float` value is "nan", "inf" or "-inf"')
    return float(text)  # a new NaN each time: two NaN keys of one dict stay two keys


def _dec_str(v: dict[str, Any]) -> Any:
    raw = _dec(_need(v, "$str", dict, "a `$bytes` value"))
    if type(raw) is not bytes:
        raise _malformed("a `$str` value needs a `$bytes` value")
    return raw.decode("utf-8", "surrogatepass")


def _dec_tuple(v: dict[str, Any]) -> Any:
    return tuple(_dec(x) for x in _need(v, "$tuple", list, "a list"))


def _dec_set(v: dict[str, Any]) -> Any:
    return {_dec(x) for x in _need(v, "$set", list, "a list")}


def _dec_frozenset(v: dict[str, Any]) -> Any:
    return frozenset(_dec(x) for x in _need(v, "$frozenset", list, "a list"))


def _dec_dict(v: dict[str, Any]) -> Any:
    pairs = _need(v, "$dict", list, "a list of [key, value] pairs")
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise _malformed("a `$dict` value needs a list of [key, value] pairs")
    return {_dec(k): _dec(x) for k, x in pairs}


def _dec_bytes(v: dict[str, Any]) -> Any:
    if len(v) != 1:
        return _PLAIN
    return base64.b64decode(v["$bytes"])


def _dec_bytearray(v: dict[str, Any]) -> Any:
    raw = _dec(_need(v, "$bytearray", dict, "a `$bytes` value"))
    if type(raw) is not bytes:
        raise _malformed("a `$bytearray` value needs a `$bytes` value")
    return bytearray(raw)


_KINDS: dict[str, Any] = {"datetime": dt.datetime, "date": dt.date, "time": dt.time}


def _dec_datetime(v: dict[str, Any]) -> Any:
    kind = _KINDS.get(v.get("type", "datetime"))
    if kind is None:
        raise _malformed('a `$datetime` value\'s type is "datetime", "date" or "time"')
    value = kind.fromisoformat(_need(v, "$datetime", str, "an ISO 8601 string"))
    if "tz" in v or "tzname" in v or "fold" in v:
        changes: dict[str, Any] = {}
        if "tz" in v:
            import zoneinfo  # deferred: only a value recorded with a ZoneInfo needs it

            changes["tzinfo"] = zoneinfo.ZoneInfo(str(v["tz"]))
        elif "tzname" in v and value.tzinfo is not None:
            changes["tzinfo"] = dt.timezone(value.utcoffset(), str(v["tzname"]))
        if v.get("fold"):
            changes["fold"] = 1
        value = value.replace(**changes)
    return value


def _dec_timedelta(v: dict[str, Any]) -> Any:
    parts = _need(v, "$timedelta", list, "[days, seconds, microseconds]")
    if len(parts) != 3 or not all(type(p) is int for p in parts):
        raise _malformed("a `$timedelta` value needs [days, seconds, microseconds]")
    return dt.timedelta(days=parts[0], seconds=parts[1], microseconds=parts[2])


def _dec_decimal(v: dict[str, Any]) -> Any:
    return decimal.Decimal(_need(v, "$decimal", str, "a string"))


def _dec_uuid(v: dict[str, Any]) -> Any:
    return uuid.UUID(_need(v, "$uuid", str, "a string"))


def _dec_complex(v: dict[str, Any]) -> Any:
    parts = [_dec(p) for p in _need(v, "$complex", list, "[real, imag]")]
    if len(parts) != 2 or not all(type(p) is float for p in parts):
        raise _malformed("a `$complex` value needs [real, imag] floats")
    return complex(parts[0], parts[1])


def _dec_path(v: dict[str, Any]) -> Any:
    cls = _PATHS.get(v.get("type", ""))
    if cls is None:
        raise _malformed(f"a `$path` value's type is one of {sorted(_PATHS)}")
    return cls(_need(v, "$path", str, "a string"))


def _class(v: dict[str, Any], tag: str, what: str, check: Callable[[Any], bool]) -> Any:
    """The class a tagged value names, looked up (never imported), checked to be a ``what``."""
    name = v[tag]
    if not isinstance(name, str):
        raise _malformed(f"a `{tag}` value needs a string class name")
    try:
        cls = _imported(name, what)
    except AttributeError:
        raise UnrebuildableValueError(
            f"a recorded tool value is a {what} {name[:200]!r}, which its module no longer defines "
            "(renamed or removed since it was recorded), and replay never hands back another type in "
            "its place. Re-record the cassette (or restore the class)."
        ) from None
    # only a class of the kind the tag says is ever built: a cassette must not name any other
    # callable (os:system)
    if not (isinstance(cls, type) and check(cls)):
        raise _not_a(name, what)
    return cls


def _dec_fields(v: dict[str, Any], tag: str) -> dict[str, Any]:
    recorded = v.get("fields")
    if not isinstance(recorded, dict):
        raise _malformed(f"a `{tag}` value needs a string class name and an object `fields`")
    return {k: _dec(x) for k, x in recorded.items()}


def _dec_enum(v: dict[str, Any]) -> Any:
    cls = _class(v, "$enum", "enum", lambda c: issubclass(c, enum.Enum))
    if "value" not in v:
        raise _malformed("an `$enum` value needs `value`")
    return cls(_dec(v["value"]))


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def _dec_namedtuple(v: dict[str, Any]) -> Any:
    cls = _class(v, "$namedtuple", "NamedTuple", _is_namedtuple)
    return cls(**_dec_fields(v, "$namedtuple"))


def _dec_dataclass(v: dict[str, Any]) -> Any:
    name = v["$dataclass"]
    if not isinstance(name, str) or not isinstance(v.get("fields"), dict):
        raise _malformed("a `$dataclass` value needs a string class name and an object `fields`")
    cls = _class(v, "$dataclass", "dataclass", dataclasses.is_dataclass)
    fields = _dec_fields(v, "$dataclass")
    try:
        return cls(**fields)
    except TypeError:  # init=False fields: set them directly (every field was recorded)
        return _set_fields(cls, name, fields, {f.name for f in dataclasses.fields(cls)})


def _dec_attrs(v: dict[str, Any]) -> Any:
    cls = _class(v, "$attrs", "attrs class", lambda c: isinstance(vars(c).get("__attrs_attrs__"), tuple))
    fields = _dec_fields(v, "$attrs")
    # set as recorded, not passed to __init__ again: converters and validators ran when it was made
    return _set_fields(cls, v["$attrs"], fields, {a.name for a in vars(cls)["__attrs_attrs__"]})


def _set_fields(cls: type, name: str, fields: dict[str, Any], names: set[str]) -> Any:
    if fields.keys() != names:
        raise _malformed(
            f"{name[:200]!r} has fields {sorted(names)}, the recorded value has {sorted(fields)[:20]}"
        )
    obj: Any = object.__new__(cls)
    for k, x in fields.items():
        object.__setattr__(obj, k, x)
    return obj


def _dec_pydantic(v: dict[str, Any]) -> Any:
    # the shape first, so verify can check it without the model's module: `fields` an object, or
    # (as releases before typed values wrote it) a model_dump in `data`, which is never null
    fields_ok = isinstance(v.get("fields"), dict) or ("fields" not in v and v.get("data") is not None)
    if not isinstance(v["$pydantic"], str) or not fields_ok:
        raise _malformed("a `$pydantic` value needs a string model name and an object `fields`")
    cls = _class(v, "$pydantic", "pydantic model", lambda c: callable(getattr(c, "model_validate", None)))
    # `data`: model_dump(mode="json"), as releases before typed values wrote it
    data = _dec(v["fields"]) if "fields" in v else v["data"]
    return getattr(cls, "model_validate")(data)  # noqa: B009 - cls is checked above


def _dec_http(v: dict[str, Any]) -> Any:
    try:  # httpx (httpx2) not imported is UnimportedTypeError: never its fields as a dict instead
        return _http_object(v)
    except AttributeError:
        raise UnrebuildableValueError(
            f"a recorded tool value is an HTTP {str(v['$http'])[:200]!r}, a class its module does not "
            "define: the cassette was recorded with another httpx version or edited. Re-record it."
        ) from None


def _dec_codec(v: dict[str, Any]) -> Any:
    tag = v["$codec"]
    if not isinstance(tag, str) or "data" not in v:
        raise _malformed("a `$codec` value needs a string tag and `data`")
    codec = _codecs().by_tag.get(tag)
    if codec is None:
        raise UnknownCodecTagError(
            f"a recorded tool value was written by the value codec {tag[:200]!r}, which no loaded plugin "
            "registers (cassette_value_codecs). Load the plugin that defines it (`plugins = [...]` in "
            "[tool.cassette], or its entry point) before replaying."
        )
    value = codec.decode(_dec(v["data"]))
    types = codec.type if isinstance(codec.type, tuple) else (codec.type,)
    if not (type(value) in types or (codec.subclasses and isinstance(value, types))):
        raise ValueCodecError(
            f"value codec {tag!r} decoded a recorded value as a {_name(type(value))}, not one of the types "
            "it registers: fix its decode function."
        )
    return value


def _dec_object(v: dict[str, Any]) -> Any:
    raise UnrebuildableValueError(
        f"a recorded tool value is an object of class {str(v['$object'])[:200]!r} that an earlier release "
        "kept only as its attributes (`$object`): it cannot be rebuilt as its own type, and replay never "
        "hands back another. Make the class a dataclass, a pydantic model, an attrs class or a "
        "NamedTuple (or register a codec for it, docs/plugins.md), then re-record the cassette."
    )


_DECODE: dict[str, Callable[[dict[str, Any]], Any]] = {
    "$int": _dec_int,
    "$float": _dec_float,
    "$str": _dec_str,
    "$tuple": _dec_tuple,
    "$set": _dec_set,
    "$frozenset": _dec_frozenset,
    "$dict": _dec_dict,
    "$bytes": _dec_bytes,
    "$bytearray": _dec_bytearray,
    "$datetime": _dec_datetime,
    "$timedelta": _dec_timedelta,
    "$decimal": _dec_decimal,
    "$uuid": _dec_uuid,
    "$complex": _dec_complex,
    "$path": _dec_path,
    "$enum": _dec_enum,
    "$namedtuple": _dec_namedtuple,
    "$dataclass": _dec_dataclass,
    "$attrs": _dec_attrs,
    "$pydantic": _dec_pydantic,
    "$http": _dec_http,
    "$codec": _dec_codec,
    "$object": _dec_object,
}


# an httpx / httpx2 Request or Response in a tool's result or on its exception (raise_for_status's
# HTTPStatusError carries both): kept as status, headers and body, rebuilt to its own class
_HTTP_MODULES = ("httpx", "httpx2")
_HTTP_DROP = frozenset({"content-encoding", "content-length", "transfer-encoding", "date"})  # decoded; churn


def _http_jsonable(value: Any) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    for k, v in value.headers.multi_items():
        name = k.lower()
        if name in _HTTP_DROP:
            continue
        prev = headers.get(name)
        headers[name] = v if prev is None else [*prev, v] if isinstance(prev, list) else [prev, v]
    out: dict[str, Any] = {"$http": _qualname(type(value)), "headers": headers}
    if type(value).__name__ == "Request":
        out.update(method=str(value.method), url=str(value.url))
        return out
    out["status"] = int(value.status_code)
    try:
        body = bytes(value.content)
    except Exception:  # a stream never read
        body = b""
    try:
        out["text"] = body.decode("utf-8")
    except UnicodeDecodeError:
        out["base64"] = base64.b64encode(body).decode("ascii")
    request = getattr(value, "_request", None)
    if request is not None:
        out["request"] = _http_jsonable(request)
    return out


def _http_object(value: dict[str, Any]) -> Any:
    name = value["$http"]
    if not isinstance(name, str):
        raise _malformed("an `$http` value needs a string class name")
    cls = _imported(name, "HTTP request or response")
    module = getattr(cls, "__module__", "") or ""
    if not (
        isinstance(cls, type)
        and cls.__name__ in ("Request", "Response")
        and module.split(".")[0] in _HTTP_MODULES
    ):
        raise _not_a(name, "httpx Request or Response")
    given = value.get("headers") or {}
    if not isinstance(given, dict):
        raise _malformed("an `$http` value's headers must be an object")
    headers = [(str(k), str(v)) for k, vs in given.items() for v in (vs if isinstance(vs, list) else [vs])]
    try:
        if cls.__name__ == "Request":
            return cls(str(value.get("method", "GET")), str(value.get("url", "")), headers=headers)
        body = base64.b64decode(value["base64"]) if "base64" in value else str(value.get("text", "")).encode()
        request = value.get("request")
        return cls(
            int(value.get("status", 200)),
            headers=headers,
            content=body,
            request=_http_object(request) if isinstance(request, dict) and "$http" in request else None,
        )
    except (TypeError, ValueError) as exc:
        raise _malformed(f"an `$http` value cannot be rebuilt ({exc})") from None


def _malformed(what: str) -> CassetteShapeError:
    return CassetteShapeError(
        f"a recorded tool value is malformed ({what}): the cassette was edited by hand or corrupted. "
        "Re-record the cassette, or restore it from git."
    )


def _not_a(name: Any, what: str) -> CassetteShapeError:
    return CassetteShapeError(
        f"a recorded tool value names {str(name)[:200]!r} as a {what}, which it is not: the cassette was "
        "edited by hand or tampered with. Re-record it."
    )


# --- errors ---------------------------------------------------------------------------------------


def _control_flow_classes() -> tuple[type, ...]:
    """Exception subclasses that are control flow, not a tool's failure: a test skipped or ended,
    pdb quit.

    (pytest's skip, fail and xfail, KeyboardInterrupt, SystemExit, GeneratorExit and
    asyncio.CancelledError are not `Exception` subclasses, so they are never recorded either;
    ``pytest.exit``'s is.) Only modules already imported can have raised one, so none is imported.
    """
    found: list[Any] = []
    for module, name in (("unittest.case", "SkipTest"), ("bdb", "BdbQuit")):
        found.append((getattr(sys.modules.get(module), "__dict__", None) or {}).get(name))
    pytest = getattr(sys.modules.get("pytest"), "__dict__", None) or {}
    for name in ("skip", "fail", "xfail", "exit"):  # pytest.skip.Exception, ...: the public names
        found.append(getattr(pytest.get(name), "Exception", None))
    return tuple(cls for cls in found if isinstance(cls, type))


def _is_control_flow(cls: type) -> bool:
    return not issubclass(cls, Exception) or issubclass(cls, _control_flow_classes())


def _error_response(exc: BaseException, tool: str = "") -> dict[str, Any]:
    kind = _name(type(exc))
    error: dict[str, Any] = {
        "type": _qualname(type(exc)),
        "message": str(exc),
        "args": [
            _encode(a, False, tool, f"the {kind} it raised, args[{i}],") for i, a in enumerate(exc.args)
        ],
    }
    # what its __init__ set (an HTTPStatusError's response, a custom error's `code`): an agent's
    # `except` reads them, and args alone do not rebuild an error whose __init__ takes keywords
    state = getattr(exc, "__dict__", None)
    if state:
        error["attrs"] = {
            str(k): _encode(v, False, tool, f"the {kind} it raised, attribute {str(k)[:60]!r},")
            for k, v in state.items()
        }
    return {"error": error}


def _rebuild_error(error: dict[str, Any], name: str) -> BaseException:
    args = [from_jsonable(a) for a in error.get("args", [])]
    attrs = error.get("attrs")
    if attrs is not None and not isinstance(attrs, dict):
        raise _malformed("a recorded error's `attrs` must be an object")
    try:
        # an exception class is looked up, never imported: the tool that raised it imported its module
        cls = _imported(str(error.get("type", "")), "exception class")
    except (UnimportedTypeError, AttributeError, ValueError):
        cls = None
    if isinstance(cls, type) and issubclass(cls, BaseException) and _is_control_flow(cls):
        # never recorded (perform() records only failures): a cassette must not skip or end a test
        raise RecordedControlFlowError(
            f"the recorded response of tool {name!r} says it raised {str(error.get('type'))[:200]}, "
            "which is control flow (a test skipped, failed or interrupted, the process exiting), never "
            "recorded as a tool's error: the cassette was edited by hand or tampered with. Re-record it."
        )
    if isinstance(cls, type) and issubclass(cls, Exception):
        exc: BaseException | None
        try:
            exc = cls(*args)
        except Exception:  # keyword-only arguments (HTTPStatusError's request=, response=)
            try:
                exc = cls.__new__(cls)
                exc.args = tuple(args)
            except Exception:  # a class that cannot be made without its own arguments
                exc = None
        if exc is not None:
            for key, value in (attrs or {}).items():
                try:
                    setattr(exc, key, from_jsonable(value))
                except (AttributeError, TypeError):  # a read-only attribute: left as __init__ set it
                    pass
            return exc
    return CassetteToolError(
        f"tool {name!r} raised {error.get('type')}: {error.get('message')} when recorded "
        "(the exception class is not defined in any imported module now; import its module before "
        "replaying to get the original class)."
    )


# --- the request ----------------------------------------------------------------------------------

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _bound(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(arguments with defaults filled in, arguments as passed)`` by name; None if they do not bind.

    Binding makes ``f(1, b=2)`` and ``f(a=1, b=2)`` the same call; filling in defaults makes ``f(1)``
    the same call as ``f(1, 2)`` when ``b`` defaults to 2. A default that is a function or a class is
    left out (passed or not): its text can hold a memory address, which would make a key that never
    matches again.
    """
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    passed = bound.arguments
    first = next(iter(signature.parameters), None)
    full: dict[str, Any] = {}
    for pname, param in signature.parameters.items():
        if pname == first and pname in ("self", "cls"):
            continue
        unstable = callable(param.default)
        if pname in passed:
            if not (unstable and passed[pname] is param.default):  # f(1, fmt=str) is f(1)
                full[pname] = passed[pname]
        elif param.kind not in _VARIADIC and param.default is not param.empty and not unstable:
            full[pname] = param.default
    explicit = {k: v for k, v in passed.items() if not (k == first and k in ("self", "cls"))}
    return full, explicit


def _requests(
    name: str, signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The tool request, and the arguments as passed when they differ from it (defaults were filled in).

    The second is what cassettes recorded before defaults were keyed hold; it is turned into a
    request only when a replay needs it.
    """
    bound = _bound(signature, args, kwargs) if signature is not None else None
    if bound is None:
        encoded = {
            "args": [_encode(a, True, name, f"positional argument {i}") for i, a in enumerate(args)],
            "kwargs": _arguments(name, kwargs, None),
        }
        return {"kind": "tool", "name": name, "arguments": encoded}, None
    full, explicit = bound
    request = {"kind": "tool", "name": name, "arguments": _arguments(name, full, signature)}
    return request, (None if explicit.keys() == full.keys() else explicit)


def _arguments(name: str, bound: dict[str, Any], signature: inspect.Signature | None) -> dict[str, Any]:
    """Each argument's typed encoding (its part of the key) under its parameter's name.

    ``*args`` is written as a list, ``**kwargs`` as an object: they are always a tuple and a dict of
    str keys, so that keeps the key every earlier release gave them.
    """
    params = signature.parameters if signature is not None else {}
    out: dict[str, Any] = {}
    for pname, value in bound.items():
        kind = getattr(params.get(pname), "kind", None)
        what = f"argument {pname!r}"
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out[pname] = [_encode(v, True, name, f"{what}[{i}]") for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out[pname] = {
                ("$" + k if k[:1] == "$" else k): _encode(v, True, name, f"keyword argument {k[:60]!r}")
                for k, v in value.items()
            }
        else:
            out[pname] = _encode(value, True, name, what)
    return out


def tool_request(
    name: str, signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The request a tool call records: ``{"kind": "tool", "name", "arguments": {param: value}}``."""
    return _requests(name, signature, args, kwargs)[0]


def _replay_form(
    session: Any,
    request: dict[str, Any],
    name: str,
    passed: dict[str, Any] | None,
    signature: inspect.Signature | None = None,
) -> dict[str, Any]:
    """The request to serve: the current form, or, for a cassette recorded before defaults were
    keyed (a call that left a defaulted parameter out), the form it was recorded under."""
    if passed is None or not session.replaying or session.cassette is None:
        return request
    if session.recorded(request_key(request)):
        return request
    arguments = _arguments(name, passed, signature)
    old = normalize({"kind": "tool", "name": name, "arguments": arguments}, "tool")
    return old if session.recorded(request_key(old)) else request


def _failed(exc: Exception, tool: str) -> dict[str, Any]:
    """What a tool's exception records; control flow (a test skipped) propagates unrecorded."""
    if _is_control_flow(type(exc)):
        raise exc
    try:
        return _error_response(exc, tool)
    except UnencodableValueError as refused:
        raise refused from exc


def replay_outcome(response: Any, tool_name: str, path: Any) -> tuple[Any, BaseException | None]:
    """A recorded tool response rebuilt as replay hands it back: ``(result, None)`` or ``(None, error)``.

    The one decoding of recorded tool values: ``@cassette.tool`` returns the result (or raises
    the error) and ``cassette verify`` runs it on every tool call, so what verify passes, replay
    rebuilds. A record of the wrong shape raises `CassetteShapeError` naming ``path``.

    Example::

        replay_outcome({"result": {"$bytes": "aGk="}}, "fetch", "c.json") == (b"hi", None)
    """
    # the full path, as every other error about a cassette file gives it
    where = path.absolute() if hasattr(path, "absolute") else path
    try:
        if not isinstance(response, dict):
            raise CassetteShapeError(
                f"cassette {where}: the recorded response of tool {tool_name!r} is a "
                f"{type(response).__name__}, not an object. Restore the cassette from git or re-record it.",
                path=where,
            )
        if "error" in response:
            return None, _rebuild_error(response["error"], tool_name)
        if "result" in response:
            return from_jsonable(response["result"]), None
        what = "was cut off while recording: it has" if response.get("incomplete") else "has"
        raise CassetteShapeError(
            f"cassette {where}: the recorded response of tool {tool_name!r} {what} neither "
            f"`result` nor `error` (keys: {sorted(response)[:10]}). Restore the cassette from "
            "git or re-record it.",
            path=where,
        )
    except CassetteError as exc:
        if exc.path is not None:
            raise
        # the same class (UnimportedTypeError stays one), now naming the cassette
        raise type(exc)(f"cassette {where}: {exc}", path=where) from None
    except Exception as exc:
        # a recorded value of the wrong shape (edited or corrupted), not a tool failure
        raise CassetteShapeError(
            f"cassette {where}: the recorded outcome of tool {tool_name!r} cannot be rebuilt "
            f"({type(exc).__name__}: {exc}). Re-record the cassette.",
            path=where,
        ) from None


@overload
def tool(fn: F, *, name: str | None = None) -> F: ...
@overload
def tool(fn: None = None, *, name: str | None = None) -> Callable[[F], F]: ...


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Record a tool's calls in the active cassette; replay returns the recorded result without running it.

    Works on sync and async functions; an exception the tool raised is recorded
    and raised again on replay. With no active cassette the function just runs.

    Example::

        @cassette.tool
        def lookup_order(order_id: str) -> dict:
            return db.fetch(order_id)
    """
    if fn is None:
        return functools.partial(tool, name=name)
    tool_name: str = name or str(getattr(fn, "__name__", "tool"))
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    if inspect.iscoroutinefunction(fn):
        return _async_tool_wrapper(fn, tool_name, signature)
    return _tool_wrapper(fn, tool_name, signature)


def _replayed(response: dict[str, Any], tool_name: str, path: Any) -> Any:
    """What a replayed call of ``tool_name`` returns: the recorded result, or its error raised."""
    result, error = replay_outcome(response, tool_name, path)
    if error is not None:
        raise error
    return result


def _async_tool_wrapper(
    fn: Callable[..., Any], tool_name: str, signature: inspect.Signature | None
) -> Callable[..., Any]:
    """`tool` for a coroutine function: each call awaited through the active session's seam."""

    @functools.wraps(fn)
    async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
        session = seam_session()
        if session is None:
            return await fn(*args, **kwargs)
        current, passed = _requests(tool_name, signature, args, kwargs)
        request = _replay_form(session, normalize(current, "tool"), tool_name, passed, signature)
        outcome: list[Any] = []

        async def perform() -> dict[str, Any]:
            try:
                result = await fn(*args, **kwargs)
            except Exception as exc:
                outcome.append(exc)
                return _failed(exc, tool_name)
            outcome.append(result)
            return {"result": _encode(result, False, tool_name, "its result")}

        response = await session.acall("tool", request, perform)
        if outcome:  # recorded live: hand back the real object, or re-raise the real exception
            if isinstance(outcome[0], Exception) and "error" in response:
                raise outcome[0]
            return outcome[0]
        return _replayed(response, tool_name, getattr(session, "path", None))

    return async_wrapper


def _tool_wrapper(
    fn: Callable[..., Any], tool_name: str, signature: inspect.Signature | None
) -> Callable[..., Any]:
    """`tool` for a plain function: each call made through the active session's seam."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        session = seam_session()
        if session is None:
            return fn(*args, **kwargs)
        current, passed = _requests(tool_name, signature, args, kwargs)
        request = _replay_form(session, normalize(current, "tool"), tool_name, passed, signature)
        outcome: list[Any] = []

        def perform() -> dict[str, Any]:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                outcome.append(exc)
                return _failed(exc, tool_name)
            outcome.append(result)
            return {"result": _encode(result, False, tool_name, "its result")}

        response = session.call("tool", request, perform)
        if outcome:
            if isinstance(outcome[0], Exception) and "error" in response:
                raise outcome[0]
            return outcome[0]
        return _replayed(response, tool_name, getattr(session, "path", None))

    return wrapper
