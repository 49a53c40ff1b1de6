"""Tool capture: ``@cassette.tool`` records a function's arguments and result through the seam."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar, overload

from cassette.errors import CassetteShapeError, CassetteToolError, UnimportedTypeError

F = TypeVar("F", bound=Callable[..., Any])


def _qualname(obj: type) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def to_jsonable(value: Any) -> Any:
    """Turn a tool's arguments or result into JSON, tagging types that can be rebuilt.

    Example::

        to_jsonable(Order(id="A1")) == {"$dataclass": "shop:Order", "fields": {"id": "A1"}}
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((to_jsonable(v) for v in value), key=repr)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"$dataclass": _qualname(type(value)), "fields": fields}
    if hasattr(value, "model_dump") and hasattr(type(value), "model_validate"):
        return {"$pydantic": _qualname(type(value)), "data": value.model_dump(mode="json")}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return {"$datetime": value.isoformat(), "type": type(value).__name__}
    cls = type(value)
    if cls.__name__ in ("Request", "Response") and cls.__module__.split(".")[0] in _HTTP_MODULES:
        return _http_jsonable(value)
    if cls.__str__ is object.__str__ and cls.__repr__ is object.__repr__:
        # the default repr holds a memory address: a key made from it would never match on replay
        state = getattr(value, "__dict__", None)
        if not isinstance(state, dict):
            slots = [n for c in cls.__mro__ for n in getattr(c, "__slots__", ()) if isinstance(n, str)]
            state = {n: getattr(value, n) for n in slots if n != "__weakref__" and hasattr(value, n)}
        return {"$object": _qualname(cls), "state": to_jsonable(state)}
    return str(value)


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


def _imported(qualname: str, what: str) -> Any:
    """The object ``module:Name`` names, looked up in modules already imported; never imports one.

    Importing runs the module's code, so a cassette (data, possibly from a pull request) must not
    choose what gets imported. The code under test imports the modules its tools' types live in.
    Raises `UnimportedTypeError` when the module is not imported, AttributeError when it has no such name.
    """
    module, _, name = qualname.partition(":")
    obj: Any = sys.modules.get(module)
    if obj is None:
        raise UnimportedTypeError(
            f"a recorded tool value names {qualname[:200]!r} as a {what}, but module {module[:200]!r} is "
            "not imported, and replay never imports a module a cassette names (importing runs its code). "
            f"If the class is yours, import {module[:200]} before replaying (in the test module or "
            "conftest.py); if it is not, the cassette was edited by hand or tampered with: re-record it."
        )
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def from_jsonable(value: Any) -> Any:
    """Rebuild dataclasses and pydantic models to their own types where importable."""
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$dataclass" in value:
        name, recorded = value["$dataclass"], value.get("fields")
        if not isinstance(name, str) or not isinstance(recorded, dict):
            raise _malformed("a `$dataclass` value needs a string class name and an object `fields`")
        fields = {k: from_jsonable(v) for k, v in recorded.items()}
        try:
            cls = _imported(name, "dataclass")
        except (AttributeError, ValueError):  # renamed or removed since recording: the fields as recorded
            return fields
        # only a dataclass is ever rebuilt: a cassette must not name any other callable (os:system)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise _not_a(name, "dataclass")
        try:
            return cls(**fields)
        except TypeError:  # init=False fields: set them directly (every field was recorded)
            names = {f.name for f in dataclasses.fields(cls)}
            if fields.keys() != names:
                raise _malformed(
                    f"dataclass {name[:200]!r} has fields {sorted(names)}, the recorded value "
                    f"has {sorted(fields)[:20]}"
                ) from None
            obj = object.__new__(cls)
            for k, v in fields.items():
                object.__setattr__(obj, k, v)
            return obj
    if "$pydantic" in value:
        if not isinstance(value["$pydantic"], str) or "data" not in value:
            raise _malformed("a `$pydantic` value needs a string model name and `data`")
        try:
            cls = _imported(value["$pydantic"], "pydantic model")
        except (AttributeError, ValueError):
            return value.get("data")
        if not (isinstance(cls, type) and callable(getattr(cls, "model_validate", None))):
            raise _not_a(value["$pydantic"], "pydantic model")
        return getattr(cls, "model_validate")(value.get("data"))  # noqa: B009 - cls is checked above
    if "$bytes" in value and len(value) == 1:
        return base64.b64decode(value["$bytes"])
    if "$http" in value:
        try:
            return _http_object(value)
        except (AttributeError, ValueError, UnimportedTypeError):  # httpx not imported: its fields
            return {k: from_jsonable(v) for k, v in value.items()}
    if "$datetime" in value:
        kinds: dict[str, Any] = {"datetime": dt.datetime, "date": dt.date, "time": dt.time}
        return kinds.get(value.get("type", ""), dt.datetime).fromisoformat(value["$datetime"])
    return {k: from_jsonable(v) for k, v in value.items()}


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


def _error_response(exc: BaseException) -> dict[str, Any]:
    error: dict[str, Any] = {
        "type": _qualname(type(exc)),
        "message": str(exc),
        "args": [to_jsonable(a) for a in exc.args],
    }
    # what its __init__ set (an HTTPStatusError's response, a custom error's `code`): an agent's
    # `except` reads them, and args alone do not rebuild an error whose __init__ takes keywords
    state = getattr(exc, "__dict__", None)
    if state:
        error["attrs"] = {str(k): to_jsonable(v) for k, v in state.items()}
    return {"error": error}


def _rebuild_error(error: dict[str, Any], name: str) -> BaseException:
    args = [from_jsonable(a) for a in error.get("args", [])]
    attrs = error.get("attrs")
    if attrs is not None and not isinstance(attrs, dict):
        raise _malformed("a recorded error's `attrs` must be an object")
    try:
        # an exception class is looked up, never imported: the tool that raised it imported its module
        cls = _imported(str(error.get("type", "")), "exception class")
        # only Exception subclasses are ever recorded (perform() catches Exception): never SystemExit
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
    except (UnimportedTypeError, AttributeError, ValueError):
        pass
    return CassetteToolError(
        f"tool {name!r} raised {error.get('type')}: {error.get('message')} when recorded "
        "(the exception class is not defined in any imported module now; import its module before "
        "replaying to get the original class)."
    )


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
        return {
            "kind": "tool",
            "name": name,
            "arguments": {"args": to_jsonable(args), "kwargs": to_jsonable(kwargs)},
        }, None
    full, explicit = bound
    request = {"kind": "tool", "name": name, "arguments": to_jsonable(full)}
    return request, (None if explicit.keys() == full.keys() else explicit)


def _request(
    name: str, signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The request a tool call records: ``{"kind": "tool", "name", "arguments": {param: value}}``."""
    return _requests(name, signature, args, kwargs)[0]


def _replay_form(
    session: Any, request: dict[str, Any], name: str, passed: dict[str, Any] | None
) -> dict[str, Any]:
    """The request to serve: the current form, or, for a cassette recorded before defaults were
    keyed (a call that left a defaulted parameter out), the form it was recorded under."""
    if passed is None or not session.replaying or session.cassette is None:
        return request
    from cassette.core.canonical import request_key
    from cassette.plugins.manager import normalize

    if session.recorded(request_key(request)):
        return request
    old = normalize({"kind": "tool", "name": name, "arguments": to_jsonable(passed)}, "tool")
    return old if session.recorded(request_key(old)) else request


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
    except CassetteShapeError as exc:
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

    from cassette.plugins.manager import normalize
    from cassette.seam.session import seam_session

    def _replayed(response: dict[str, Any], path: Any) -> Any:
        result, error = replay_outcome(response, tool_name, path)
        if error is not None:
            raise error
        return result

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            session = seam_session()
            if session is None:
                return await fn(*args, **kwargs)
            current, passed = _requests(tool_name, signature, args, kwargs)
            request = _replay_form(session, normalize(current, "tool"), tool_name, passed)
            outcome: list[Any] = []

            async def perform() -> dict[str, Any]:
                try:
                    result = await fn(*args, **kwargs)
                except Exception as exc:
                    outcome.append(exc)
                    return _error_response(exc)
                outcome.append(result)
                return {"result": to_jsonable(result)}

            response = await session.acall("tool", request, perform)
            if outcome:  # recorded live: hand back the real object, or re-raise the real exception
                if isinstance(outcome[0], Exception) and "error" in response:
                    raise outcome[0]
                return outcome[0]
            return _replayed(response, getattr(session, "path", None))

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        session = seam_session()
        if session is None:
            return fn(*args, **kwargs)
        current, passed = _requests(tool_name, signature, args, kwargs)
        request = _replay_form(session, normalize(current, "tool"), tool_name, passed)
        outcome: list[Any] = []

        def perform() -> dict[str, Any]:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                outcome.append(exc)
                return _error_response(exc)
            outcome.append(result)
            return {"result": to_jsonable(result)}

        response = session.call("tool", request, perform)
        if outcome:
            if isinstance(outcome[0], Exception) and "error" in response:
                raise outcome[0]
            return outcome[0]
        return _replayed(response, getattr(session, "path", None))

    return wrapper
