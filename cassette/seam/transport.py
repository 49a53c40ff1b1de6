"""The seam for HTTP: httpx / httpx2 transports, sync and async, streaming kept event by event.

``instrument(client)`` and ``http_client()`` hand these transports to SDK clients;
nothing is monkey-patched. With no active session a transport passes the request
straight to the real one.
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import json
import operator
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from functools import cache, cached_property
from typing import Any, TypeVar

import orjson

from cassette.core import eventstream, retry, sse
from cassette.core.model import HttpRequest
from cassette.errors import CassetteError, CassetteShapeError, UninstrumentableClientError
from cassette.plugins.manager import get_plugin_manager, normalize_http
from cassette.seam.session import Session, Slot, seam_session

# Never stored (recomputed on replay, or meaningless once the body is decoded) or churning every call.
DROP_RESPONSE_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive", "date"}
)


_TEXT = frozenset({str})  # the types of header values written as they are
_RAW_NAME = operator.itemgetter(0)  # of the (name, value) pairs of ``Headers.raw``


class _WireRequest(HttpRequest):
    """An `HttpRequest` read off an httpx request, its URL and headers decoded only when asked for.

    The SDKs send ~20 headers with every call and the built-in providers look at one or
    two, and at the URL's path: `header` reads that one header in place, `path` is the
    wire URL's own, and ``url`` and ``headers`` are built on first use (a replayed call
    to a known endpoint builds neither).
    """

    _wire: Any  # the httpx / httpx2 request

    def __init__(self, method: str, wire: Any, body: bytes) -> None:
        self.__dict__.update(method=method, body=body, _wire=wire)  # frozen: no __setattr__

    # not __getattr__: a class with one slows every attribute read of its instances
    @cached_property
    def url(self) -> str:  # type: ignore[override]
        return str(self._wire.url)

    @cached_property
    def headers(self) -> tuple[tuple[str, str], ...]:  # type: ignore[override]
        return tuple([(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in self._wire.headers.raw])

    # read on every call: cached by hand in the instance's dict (functools.cached_property takes a
    # lock on each first read, which costs as much as the read itself)
    @property
    def path(self) -> str:
        path: str | None = self.__dict__.get("_path")
        if path is None:
            # the path as the URL's text holds it (percent-encoded), the text `HttpRequest.path` splits
            raw = self._wire.url.raw_path
            if raw[:1] != b"/" or raw[:2] in (b"/", b"/?"):  # "/" also stands for an empty path
                path = super().path
            else:
                path = str(raw.partition(b"?")[0].decode("ascii"))
            self.__dict__["_path"] = path
        return path

    def header(self, name: str) -> str | None:
        try:
            want = name.lower().encode("latin-1")
        except UnicodeEncodeError:  # no header on the wire has such a name
            return None
        items = self._wire.headers.raw  # (name, value) pairs as sent, the public view of them
        names = list(map(bytes.lower, map(_RAW_NAME, items)))  # at C speed: the SDKs send ~20
        if want not in names:
            return None
        return str(items[names.index(want)][1].decode("latin-1"))


def _raw_request(request: Any, body: bytes) -> HttpRequest:
    return _WireRequest(str(request.method), request, body)


def _kept_headers(headers: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # a retry-after date means a wait from the moment the response was sent: its `date` is kept
    dated = retry.is_date(headers.get("retry-after"))
    for k, v in headers.multi_items():
        name = k.lower()
        if name in DROP_RESPONSE_HEADERS and not (dated and name == "date"):
            continue
        if name in out:
            prev = out[name]
            out[name] = [*prev, v] if isinstance(prev, list) else [prev, v]
        else:
            out[name] = v
    return out


# A JSON body is stored parsed and written back on replay in the layout it came in, so the bytes
# the SDK reads (``with_raw_response``'s ``.content``) are the recorded ones. No ``json_layout``:
# compact, as orjson writes it. Otherwise a base and flags joined by "+": ``compact`` (Python's
# compact), ``spaced`` (Python's default ", " and ": "), ``indentN``; ``ascii`` (non-ASCII
# escaped), ``newline`` (a final newline), ``py`` (``indent2`` as Python's json module writes it,
# where its numbers differ from orjson's). Bodies over this size are not checked (a second copy
# of a huge answer in memory) and replay compact, as do layouts none of these rebuild.
_LAYOUT_CHECK_MAX = 8 * 1024 * 1024
_LAYOUT_FLAGS = frozenset({"ascii", "newline", "py"})
_INDENT = re.compile(r"indent([1-8])")


@cache
def _layout_writer(layout: str) -> Callable[[Any], bytes]:
    """What writes a value in a ``json_layout`` (ValueError for a layout this version does not know)."""
    base, *flags = layout.split("+")
    unknown = set(flags) - _LAYOUT_FLAGS
    indent = _INDENT.fullmatch(base)
    if unknown or len(set(flags)) != len(flags) or not (indent or base in ("compact", "spaced")):
        raise ValueError(
            f"its `json_layout` {layout!r:.40} is not one this version writes "
            "(compact, spaced or indent1-8, with +ascii, +newline and +py)"
        )
    end = b"\n" if "newline" in flags else b""
    if base == "indent2" and not {"ascii", "py"} & set(flags):
        # the most common indented layout: orjson writes it 40x faster than the json module's indenter
        option = orjson.OPT_INDENT_2 | (orjson.OPT_APPEND_NEWLINE if end else 0)
        return lambda value: orjson.dumps(value, option=option)
    encoder = json.JSONEncoder(
        ensure_ascii="ascii" in flags,
        indent=int(indent.group(1)) if indent else None,
        separators=(",", ":") if base == "compact" else None,
    )
    return lambda value: encoder.encode(value).encode("utf-8") + end


def _render_json(value: Any, layout: str) -> bytes:
    """``value`` written in ``layout`` (a ``json_layout``); ValueError for one replay cannot write."""
    if not isinstance(layout, str):
        raise TypeError(f"its `json_layout` is a {type(layout).__name__}, not a string")
    return _layout_writer(layout)(value)


def json_layout(value: Any, body: bytes) -> str | None:
    """The ``json_layout`` that writes ``value`` back as ``body``; None for orjson's compact one, or
    when no layout rebuilds it (then replay writes it compact; the parsed value is the same)."""
    newline = body.endswith(b"\n")
    text = body[:-1] if newline else body
    if not newline:
        try:
            if orjson.dumps(value) == body:
                return None
        except TypeError:
            pass
    flags = ("+ascii" if body.isascii() and b"\\u" in body else "") + ("+newline" if newline else "")
    if text[1:2] in (b"\n", b"\r"):  # indented: the first key's indent is the step
        second = text[2:].lstrip(b"\n\r")
        base = f"indent{len(second) - len(second.lstrip(b' '))}"
        layouts = [base + flags, base + flags + "+py"] if base == "indent2" else [base + flags]
    else:
        head = text[:256]
        bases = ["spaced", "compact"] if b'": ' in head or b", " in head else ["compact", "spaced"]
        layouts = [base + flags for base in bases]
    for layout in layouts:
        try:
            if _render_json(value, layout) == body:
                return layout
        except (TypeError, ValueError, RecursionError):  # beyond orjson (64-bit ints), indent0
            continue
    return None


def body_record(content_type: str, body: bytes) -> dict[str, Any]:
    """A response body as readable JSON: parsed JSON (with its ``json_layout``), text, or base64."""
    if not body:
        return {"text": ""}
    if "json" in content_type:
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            layout = json_layout(value, body) if len(body) <= _LAYOUT_CHECK_MAX else None
            return {"json": value} if layout is None else {"json": value, "json_layout": layout}
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}


def body_bytes(record: dict[str, Any]) -> bytes:
    if "json" in record:
        layout = record.get("json_layout")
        if type(layout) is str:  # `_render_json`, one call less on every replayed call
            return _layout_writer(layout)(record["json"])
        if "json_layout" in record:
            return _render_json(record["json"], record["json_layout"])
        try:
            return orjson.dumps(record["json"])
        except TypeError:  # nested deeper than orjson writes (254), or integers beyond 64 bits
            return json.dumps(record["json"], ensure_ascii=False, separators=(",", ":")).encode()
    if "base64" in record:
        return base64.b64decode(record["base64"])
    text = record.get("text")
    if isinstance(text, str):
        return text.encode("utf-8")
    # the recorder always writes one of the four (an empty body as {"text": ""})
    if "text" in record:
        raise TypeError(f"its `text` is a {type(text).__name__}, not a string")
    raise ValueError("it has no body (none of `json`, `text`, `base64`, `events`)")


def event_frame(event: Any) -> bytes:
    """The bytes of a recorded event-stream message, as the botocore seam records one
    (``{"headers", "json" | "text" | "base64"}``, or ``{"frame"}`` kept as it came).

    Raises TypeError or ValueError for a record of the wrong shape (`replay_problem` reports them).
    """
    if not isinstance(event, dict):
        raise TypeError(f"an event is a {type(event).__name__}, not an object")
    if "frame" in event:
        return base64.b64decode(event["frame"], validate=True)
    headers = event.get("headers")
    if not isinstance(headers, dict):
        raise TypeError(f"an event's `headers` is a {type(headers).__name__}, not an object")
    return eventstream.encode(headers, body_bytes(event))


def _recorded_headers(given: Any) -> list[tuple[str, str]]:
    """A record's ``headers`` as the pairs replay hands over (the ones a decoded body makes moot dropped)."""
    if not given:
        if given is not None and not isinstance(given, dict):
            raise TypeError(f"its `headers` is a {type(given).__name__}, not an object of header names")
        return []
    if not isinstance(given, dict):
        raise TypeError(f"its `headers` is a {type(given).__name__}, not an object of header names")
    try:  # as recorded (text names and values, none to drop): taken at C speed
        plain = DROP_RESPONSE_HEADERS.isdisjoint(map(str.lower, given))
        plain = plain and set(map(type, given.values())) == _TEXT
    except TypeError:  # a name that is not text
        plain = False
    if plain:
        return list(given.items())
    headers: list[tuple[str, str]] = []
    for k, v in given.items():
        if type(k) is not str:
            k = str(k)
        if k.lower() in DROP_RESPONSE_HEADERS:  # the body is stored decoded: encodings are moot
            continue
        if type(v) is str:
            headers.append((k, v))
            continue
        for item in v if isinstance(v, list) else [v]:
            headers.append((k, str(item)))
    return headers


def replay_parts(
    record: dict[str, Any], *, request: HttpRequest | None = None
) -> tuple[int, list[tuple[str, str]], list[bytes] | None, bytes]:
    """What replay hands the SDK for a recorded HTTP response: its status, its headers, and its
    SSE events as chunks (one per event; ``None`` when it was not streamed) or else its body.

    An error response's headers are the provider plugins' to rewrite (``cassette_retry_headers``,
    given the ``request`` being replayed): a recorded retry happens at once, not after the
    recorded wait.

    Raises TypeError, ValueError (binascii.Error for bad base64), AttributeError,
    OverflowError or RecursionError for a record of the wrong shape: replay turns
    them into a `CassetteShapeError`, `cassette verify` reports them.
    """
    given = record.get("headers")
    headers = _recorded_headers(given)
    status = record.get("status", 200)
    if type(status) is not int or not 100 <= status <= 999:  # three digits, as the importers take
        raise ValueError(f"its status {status!r:.40} is not an HTTP status code (100-999)")
    if status >= 400:  # one the client may retry, after the wait it asks for
        # a retry-after date is measured from the response's own date, kept for it when recorded
        sent = next((v for k, v in (given or {}).items() if str(k).lower() == "date"), None)
        hook = get_plugin_manager().hook
        rewritten = hook.cassette_retry_headers(
            request=request, status=status, headers=headers, date=sent if isinstance(sent, str) else None
        )
        headers = headers if rewritten is None else list(rewritten)
    if "events" in record:
        events = record["events"]
        if not isinstance(events, list):
            raise TypeError(f"`events` is a {type(events).__name__}, not a list")
        # encoded up front, so a bad event fails before the SDK reads, not in the middle of a stream
        try:
            return status, headers, sse.to_chunks(events), b""
        except TypeError:
            at, bad = next((i, e) for i, e in enumerate(events) if not isinstance(e, str))
            raise TypeError(
                f"its `events[{at}]` is not a string of text ({type(bad).__name__}: {str(bad)[:40]!r})"
            ) from None
    if "event_stream" in record:  # an AWS event stream (the botocore seam's): one message a chunk
        messages = record["event_stream"]
        if not isinstance(messages, list):
            raise TypeError(f"its `event_stream` is a {type(messages).__name__}, not a list")
        return status, headers, [event_frame(message) for message in messages], b""
    return status, headers, None, body_bytes(record)


class _EventRecorder:
    """Splits a streamed body into SSE events as chunks arrive, and records it when closed."""

    def __init__(self, slot: Slot, status: int, headers: dict[str, Any]) -> None:
        self.slot = slot
        self.status = status
        self.headers = headers
        self.events: list[str] = []
        self.splitter = sse.Splitter()
        self.complete = False
        slot.partial = self.snapshot

    def feed(self, chunk: bytes) -> None:
        self.events.extend(self.splitter.feed(chunk))

    def snapshot(self) -> dict[str, Any]:
        record: dict[str, Any] = {"status": self.status, "headers": self.headers, "events": list(self.events)}
        if not self.complete:
            record["incomplete"] = True
        return record

    def close(self) -> None:
        if self.slot.done:
            return
        if not self.complete and self.events:
            # SDKs stop reading at the provider's final event, before the body ends: ask the providers
            hook = get_plugin_manager().hook
            self.complete = bool(hook.cassette_stream_complete(request=self.slot.request, events=self.events))
        if self.complete:
            tail = self.splitter.rest()
            if tail:
                self.events.append(tail)
        self.slot.finish(self.snapshot())


def _reduce_error(error: CassetteError) -> tuple[Any, ...]:
    # pickles as the plain, importable class
    return (type(error).__dict__["_cassette_class"], error.args, error.__dict__)


@cache
def _sdk_class(cls: type[CassetteError], bases: tuple[type, ...]) -> type[CassetteError]:
    return type(
        cls.__name__,
        (cls, *bases),
        {"__module__": cls.__module__, "__reduce__": _reduce_error, "_cassette_class": cls},
    )


E = TypeVar("E", bound=CassetteError)


def _sdk_proof(error: E) -> E:
    """The same error, retyped so SDK retry loops neither retry it nor wrap it in a connection error.

    An SDK may wrap any other exception from its HTTP client in a retried connection error (a
    missing blob would be reported as a connection error, then as a miss on the retry); SDKs
    pass their own error classes through untouched. The provider plugins name those
    (``cassette_sdk_errors``).
    """
    found = get_plugin_manager().hook.cassette_sdk_errors()
    classes = dict.fromkeys(c for got in found for c in got or () if isinstance(c, type))
    bases = tuple(c for c in classes if issubclass(c, BaseException) and not isinstance(error, c))
    if bases:
        # same object, so the session's record of a miss stays identical
        error.__class__ = _sdk_class(type(error), bases)  # type: ignore[arg-type,assignment]
    return error


def _is_stream(content_type: str) -> bool:
    return content_type.startswith("text/event-stream")


# --- the transports: module-level classes, made concrete for httpx and httpx2 by `_Lib` --------------


class _ReplayStream:
    """Recorded SSE events, handed to the SDK one event per chunk."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)  # no generator frame to resume for each event

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class _RecordingStream:
    """A live event stream read by the caller and recorded event by event as it passes."""

    def __init__(self, response: Any, recorder: _EventRecorder) -> None:
        self._response = response
        self._recorder = recorder

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._response.iter_bytes():
            self._recorder.feed(chunk)
            yield chunk
        self._recorder.complete = True

    def close(self) -> None:
        try:
            self._response.close()
        finally:
            self._recorder.close()


class _AsyncRecordingStream:
    """The async twin of `_RecordingStream`."""

    def __init__(self, response: Any, recorder: _EventRecorder) -> None:
        self._response = response
        self._recorder = recorder

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_bytes():
            self._recorder.feed(chunk)
            yield chunk
        self._recorder.complete = True

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        finally:
            self._recorder.close()


def _shape_error(exc: Exception, where: Any, seq: Any) -> CassetteShapeError:
    # an edited or corrupted record must fail as a cassette error, never as a stray TypeError
    where = where.absolute() if hasattr(where, "absolute") else where
    return CassetteShapeError(
        f"cassette {where}: recorded response #{seq} cannot be replayed "
        f"({type(exc).__name__}: {exc}). Restore the cassette from git or re-record it.",
        path=where,
    )


def _live_headers(response: Any) -> list[tuple[str, str]]:
    return [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length")
    ]


class _Seam:
    """What the sync and async transports share: serving a call from the session, or relaying
    the live response while recording it. ``lib`` is the library the concrete class is built on."""

    lib: _Lib

    def __init__(
        self,
        wrapped: Any = None,
        *,
        session: Session | None = None,
        owns_wrapped: bool = True,
        keepalive: Any = None,
    ) -> None:
        self._wrapped = wrapped if wrapped is not None else self._default_wrapped()
        self._session = session
        self._owns = owns_wrapped if wrapped is not None else True
        # the client that owns ``wrapped``: SDK clients close their transport when collected
        self._keepalive = keepalive

    def _default_wrapped(self) -> Any:
        raise NotImplementedError

    def _start(self, session: Session, request: Any, body: bytes) -> tuple[Any, Slot | None]:
        """Replay: the recorded response and no slot. Record: no response, the call's slot."""
        raw = _WireRequest(request.method, request, body)  # `_raw_request`, one call less per call
        kind, normalized = normalize_http(raw)
        if session.replaying:
            try:
                served = session.serve(kind, normalized, copy=False)
                return self._replayed(served.response, request, raw, session.path, served.seq), None
            except CassetteError as error:  # a miss, a missing blob, a record of the wrong shape
                raise _sdk_proof(error) from None
        resumed = session.resume(kind, normalized)  # a call the test's failed recording holds
        if resumed is not None:
            return self._replayed(resumed, request, raw, session.path, None), None
        return None, session.begin(kind, normalized)

    def _replayed(self, record: dict[str, Any], request: Any, raw: HttpRequest, where: Any, seq: Any) -> Any:
        lib = self.lib
        try:
            status, headers, chunks, body = replay_parts(record, request=raw)
            if chunks is not None:
                return lib.Response(status, headers=headers, stream=lib.ReplayStream(chunks), request=request)
            # as a network transport hands it over: a stream the client reads, with its length;
            # ``content=`` would read it through the decoders here and let the client read it again
            headers.append(("Content-Length", str(len(body))))
            return lib.Response(status, headers=headers, stream=lib.ByteStream(body), request=request)
        except (TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
            raise _shape_error(exc, where, seq) from None

    def _relay_stream(self, response: Any, request: Any, slot: Slot, stream_cls: type) -> Any:
        """A live event stream handed on to the caller while it is recorded; ``None`` if not a stream."""
        if not (_is_stream(response.headers.get("content-type", "")) and 200 <= response.status_code < 300):
            return None
        recorder = _EventRecorder(slot, response.status_code, _kept_headers(response.headers))
        return self.lib.Response(
            response.status_code,
            headers=_live_headers(response),
            stream=stream_cls(response, recorder),
            request=request,
            extensions=response.extensions,
        )

    def _relay_body(self, response: Any, request: Any, slot: Slot, body: bytes) -> Any:
        """Record a fully read live response and hand the caller an equivalent one."""
        content_type = response.headers.get("content-type", "")
        head = {"status": response.status_code, "headers": _kept_headers(response.headers)}
        slot.finish_later(lambda: {**head, **body_record(content_type, body)})
        # a stream the client reads (and times: ``elapsed``), as the network transport's was
        return self.lib.Response(
            response.status_code,
            headers=[*_live_headers(response), ("Content-Length", str(len(body)))],
            stream=self.lib.ByteStream(body),
            request=request,
            extensions=response.extensions,
        )


class _SyncSeam(_Seam):
    """A transport that serves calls from the active cassette or records them."""

    def _default_wrapped(self) -> Any:
        return self.lib.HTTPTransport()

    def handle_request(self, request: Any) -> Any:
        session = self._session or seam_session()
        if session is None:
            return self._wrapped.handle_request(request)
        replay, slot = self._start(session, request, request.read())
        if slot is None:
            return replay
        with slot.cancelled_on_error():
            response = self._wrapped.handle_request(request)
        streamed = self._relay_stream(response, request, slot, self.lib.RecordingStream)
        if streamed is not None:
            return streamed
        try:
            body = response.read()
        finally:
            response.close()
        return self._relay_body(response, request, slot, body)

    def close(self) -> None:
        if self._owns:
            self._wrapped.close()


class _AsyncSeam(_Seam):
    """The async twin of `_SyncSeam`."""

    def _default_wrapped(self) -> Any:
        return self.lib.AsyncHTTPTransport()

    async def handle_async_request(self, request: Any) -> Any:
        session = self._session or seam_session()
        if session is None:
            return await self._wrapped.handle_async_request(request)
        replay, slot = self._start(session, request, await request.aread())
        if slot is None:
            return replay
        with slot.cancelled_on_error():
            response = await self._wrapped.handle_async_request(request)
        streamed = self._relay_stream(response, request, slot, self.lib.AsyncRecordingStream)
        if streamed is not None:
            return streamed
        try:
            body = await response.aread()
        finally:
            await response.aclose()
        return self._relay_body(response, request, slot, body)

    async def aclose(self) -> None:
        if self._owns:
            await self._wrapped.aclose()


class _Lib:
    """httpx or httpx2 (same API, different modules) as the seam uses it: the library's classes,
    and the seam's classes above made concrete on its base classes (httpx checks a response's
    stream against them, and callers may check a transport)."""

    def __init__(self, name: str) -> None:
        mod = importlib.import_module(name)
        self.name = name
        self.Client, self.AsyncClient = mod.Client, mod.AsyncClient
        self.Response, self.ByteStream = mod.Response, mod.ByteStream
        self.HTTPTransport, self.AsyncHTTPTransport = mod.HTTPTransport, mod.AsyncHTTPTransport
        self.ReplayStream = self._made("ReplayStream", _ReplayStream, mod.SyncByteStream, mod.AsyncByteStream)
        self.RecordingStream = self._made("RecordingStream", _RecordingStream, mod.SyncByteStream)
        self.AsyncRecordingStream = self._made(
            "AsyncRecordingStream", _AsyncRecordingStream, mod.AsyncByteStream
        )
        self.Transport = self._made("Transport", _SyncSeam, mod.BaseTransport)
        self.AsyncTransport = self._made("AsyncTransport", _AsyncSeam, mod.AsyncBaseTransport)

    def _made(self, name: str, *bases: type) -> Any:
        # ours first, so its methods win over the library's abstract ones
        return type(
            name, bases, {"__module__": __name__, "__qualname__": f"{name}[{self.name}]", "lib": self}
        )


@cache
def _lib(name: str | None) -> _Lib:
    return _Lib(name or default_lib())


@cache
def default_lib() -> str:
    """``httpx2`` when it is installed, else ``httpx``: what ``lib=None`` means. SDKs of an older
    generation are built on httpx alone; beside them, pass ``lib=`` for the SDK you hand it to."""
    return "httpx2" if importlib.util.find_spec("httpx2") is not None else "httpx"


def transport(lib: str | None = None, wrapped: Any = None) -> Any:
    """A sync cassette transport for ``httpx2`` or ``httpx`` (default: httpx2 if installed, else httpx).

    Example::

        client = httpx2.Client(transport=cassette.transport())
    """
    return _lib(lib).Transport(wrapped)


def async_transport(lib: str | None = None, wrapped: Any = None) -> Any:
    """The async twin of `transport`."""
    return _lib(lib).AsyncTransport(wrapped)


def http_client(lib: str | None = None, **kwargs: Any) -> Any:
    """An ``httpx2.Client`` (or ``httpx.Client``) routed through the seam, for any SDK built on it.

    ``lib``: ``"httpx2"`` or ``"httpx"``; by default httpx2 if it is installed, else httpx.

    Keyword arguments are ``Client``'s own (``timeout``, ``verify``, ``proxy``, ``mounts``, …);
    every transport the client ends up with, proxies included, goes through the seam.

    Example::

        client = SomeSDK(http_client=cassette.http_client())
    """
    return _rerouted(_lib(lib).Client(**kwargs), owner=None)


def async_http_client(lib: str | None = None, **kwargs: Any) -> Any:
    """An ``httpx2.AsyncClient`` (or ``httpx.AsyncClient``) routed through the seam.

    Example::

        client = SomeAsyncSDK(http_client=cassette.async_http_client())
    """
    return _rerouted(_lib(lib).AsyncClient(**kwargs), owner=None)


# --- dependency internals: the only reads, each where no public API offers what is needed ----------


def client_internals(http: Any) -> tuple[Any, dict[str, Any], Any]:
    """What an httpx/httpx2 client holds with no public accessor: its transport, its mounts
    (pattern text -> transport, or None for a pattern sent without a proxy) and its
    ``default_encoding``.

    The one adapter over httpx's private attributes (``_transport``, ``_mounts``,
    ``_default_encoding``): httpx builds the transports (a connection pool, proxies from
    arguments or the environment) inside ``Client.__init__`` and offers no way to read them,
    and a routed copy must reuse them. Only read, never written. Raises
    `UninstrumentableClientError`, naming the library's version, if a release renames them
    (``tests/test_transport.py`` checks the installed versions).
    """
    try:
        mounts = {pattern.pattern: inner for pattern, inner in http._mounts.items()}
        return http._transport, mounts, http._default_encoding
    except AttributeError as exc:
        found = _lib_of(http)
        name = found[0] if found is not None else type(http).__module__.partition(".")[0]
        version = getattr(sys.modules.get(name), "__version__", "?")
        raise UninstrumentableClientError(
            f"cannot instrument a {type(http).__name__} of {name} {version}: "
            f"it no longer keeps its transports where cassette reads them ({exc}). Pass "
            "http_client=cassette.http_client() to the SDK client instead, and report this."
        ) from None


def sdk_http_client(client: Any) -> Any:
    """The HTTP client an SDK client sends through, or None when it keeps none we know.

    The one adapter over an SDK's private attribute: SDKs generated by Stainless keep their
    httpx/httpx2 client as ``_client``, with no public accessor (their public ``copy`` /
    ``with_options(http_client=...)`` replaces it, which is how the routed copy is made).
    ``tests/test_transport.py`` checks the installed SDKs' versions.
    """
    return getattr(client, "_client", None)


def _lib_of(http: Any) -> tuple[str, bool] | None:
    for lib in ("httpx2", "httpx"):
        mod = sys.modules.get(lib)  # a client of a library means it is imported; importing httpx costs ~0.1 s
        if mod is None:
            continue
        if isinstance(http, mod.Client):
            return lib, False
        if isinstance(http, mod.AsyncClient):
            return lib, True
    return None


def _rerouted(http: Any, owner: Any) -> Any:
    """A new HTTP client like ``http`` whose transports (the default one and every mount, proxies
    included) go through the seam; ``http`` is untouched.

    With ``owner`` (the caller's client whose transports these are), closing the copy leaves
    them open, and ``owner`` is kept alive as long as the copy is. Without, the copy owns them.
    """
    found = _lib_of(http)
    if found is None:
        raise UninstrumentableClientError(
            f"cannot instrument {type(http).__name__}: not an httpx or httpx2 client. Pass "
            "http_client=cassette.http_client() (or async_http_client()) to the SDK client instead."
        )
    lib, is_async = found
    classes = _lib(lib)
    cls: Any = classes.AsyncTransport if is_async else classes.Transport

    def seam(inner: Any) -> Any:
        if isinstance(inner, cls) and inner._session is None:
            # already a seam (a client instrumented twice, or built on http_client()): one seam is
            # enough, two would record every call twice
            if owner is None:
                return inner
            inner = inner._wrapped
        return cls(inner) if owner is None else cls(inner, owns_wrapped=False, keepalive=owner)

    inner, mounts, encoding = client_internals(http)
    client_cls = classes.AsyncClient if is_async else classes.Client
    return client_cls(
        auth=http.auth,
        params=http.params,
        headers=http.headers,
        cookies=http.cookies,
        timeout=http.timeout,
        follow_redirects=http.follow_redirects,
        max_redirects=http.max_redirects,
        event_hooks=http.event_hooks,
        base_url=http.base_url,
        # with a transport given, no proxy is read from the environment: the mounts below are the
        # caller's (its proxies among them), reused, not rebuilt
        trust_env=http.trust_env,
        transport=seam(inner),
        mounts={pattern: None if t is None else seam(t) for pattern, t in mounts.items()},
        default_encoding=encoding,
    )


# SDK seams that are not an httpx transport (botocore's event handlers, `cassette.seam.botocore`):
# (whether a client is theirs, how to route it), each registered by its own module
_instrumenters: list[tuple[Callable[[Any], bool], Callable[[Any], Any]]] = []


def register_instrumenter(claims: Callable[[Any], bool], route: Callable[[Any], Any]) -> None:
    """Let `instrument` route the clients ``claims(client)`` accepts with ``route(client)``.

    Example::

        register_instrumenter(is_client, instrument_client)  # cassette.seam.botocore
    """
    _instrumenters.append((claims, route))


def instrument(client: Any) -> Any:
    """A copy of an SDK client (any built on httpx or httpx2) routed through the seam.

    The caller's client is left untouched; with no active cassette the copy
    behaves exactly like the original. Plain httpx/httpx2 clients work too. A
    botocore (boto3) client is routed by handlers on its own event system, registered
    on the client passed, which is returned (see `cassette.seam.botocore`).

    Example::

        client = cassette.instrument(SomeSDK())
    """
    for claims, route in _instrumenters:
        if claims(client):
            return route(client)
    if _lib_of(client) is not None:
        return _rerouted(client, owner=client)
    http = sdk_http_client(client)
    copy = getattr(client, "copy", None) or getattr(client, "with_options", None)
    if http is None or copy is None or _lib_of(http) is None:
        raise UninstrumentableClientError(
            f"cassette.instrument() does not know how to route {type(client).__name__}; pass "
            "http_client=cassette.http_client() (or async_http_client()) to its constructor instead."
        )
    return copy(http_client=_rerouted(http, owner=http))
