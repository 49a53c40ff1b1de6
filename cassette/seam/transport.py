"""The seam for HTTP: httpx / httpx2 transports, sync and async, streaming kept event by event.

``instrument(client)`` and ``http_client()`` hand these transports to SDK clients;
nothing is monkey-patched. With no active session a transport passes the request
straight to the real one.
"""

from __future__ import annotations

import base64
import codecs
import email.utils
import json
import math
import operator
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from functools import cache, cached_property
from types import ModuleType
from typing import Any, TypeVar

import orjson

from cassette.core.model import HttpRequest
from cassette.errors import CassetteError, CassetteShapeError, UninstrumentableClientError
from cassette.plugins.manager import normalize_http
from cassette.seam.session import Session, Slot, seam_session

# Never stored (recomputed on replay, or meaningless once the body is decoded) or churning every call.
_DROP_RESPONSE_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive", "date"}
)
_SSE_BOUNDARY = re.compile(r"\r\n\r\n|\n\n|\r\r")


_TEXT = frozenset({str})  # the types of header values written as they are
_LOWER_NAME = operator.itemgetter(1)  # of httpx's (name, lower-case name, value) header triples


def _module(name: str) -> ModuleType:
    import importlib

    return importlib.import_module(name)


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
        # httpx and httpx2 keep (name, lower-case name, value) triples: read in place, nothing copied
        wire = self._wire.headers
        items = getattr(wire, "_list", None)
        if not isinstance(items, list):
            items = [(k, k.lower(), v) for k, v in wire.raw]
        names = list(map(_LOWER_NAME, items))  # looked through at C speed: the SDKs send ~20
        if want not in names:
            return None
        return str(items[names.index(want)][2].decode("latin-1"))


def _raw_request(request: Any, body: bytes) -> HttpRequest:
    return _WireRequest(str(request.method), request, body)


def _kept_headers(headers: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # a retry-after date means a wait from the moment the response was sent: its `date` is kept
    dated = _retry_after_is_date(headers.get("retry-after"))
    for k, v in headers.multi_items():
        name = k.lower()
        if name in _DROP_RESPONSE_HEADERS and not (dated and name == "date"):
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
        # OpenAI's own layout: orjson writes it 40x faster than the json module's Python indenter
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


# The statuses the SDKs retry (with 5xx); on replay the recorded wait before the retry is moot.
_RETRYABLE = frozenset({408, 409, 429})


# seconds: openai retries after at most this, and gives up on a longer wait; anthropic waits
# whatever it is told. A wait the SDK would give up on is left as recorded.
_MAX_WAIT = 120.0
_INFINITY = frozenset({"inf", "+inf", "infinity", "+infinity"})


def _http_date(value: str | None) -> float | None:
    """An HTTP date as a timestamp; None when ``value`` is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed))
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _retry_after_is_date(value: str | None) -> bool:
    if value is None:
        return False
    try:
        float(value)
    except ValueError:
        return _http_date(value) is not None
    return False


def _asked_wait(given: dict[str, str], sent: str | None) -> tuple[float | None, bool]:
    """The wait before a retry, in seconds, that openai reads from these headers, read as it reads
    them (``retry-after-ms``, then ``retry-after`` as a number, then as an HTTP date), and whether
    it was a date. A date is measured from ``sent``, the response's recorded ``date``: openai
    measured it from its clock when the answer came. ``None`` when none is given (the SDK backs
    off), or a date with nothing to measure it from.
    """
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = given.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in _INFINITY:
            return sys.float_info.max, False  # a number too large for a float: openai gives up
        return delay / divisor, False
    due, start = _http_date(given.get("retry-after")), _http_date(sent)
    return (None if due is None or start is None else due - start), True


def _no_wait(
    headers: list[tuple[str, str]], limit: float | None = _MAX_WAIT, sent: str | None = None
) -> list[tuple[str, str]]:
    """A retryable error's headers with ``retry-after-ms: 1``: the SDK retries at once, as recorded.

    The SDKs read ``retry-after-ms`` first, then ``retry-after``, and retry after that many
    seconds or back off 0.5-8 s when neither says a wait (or it is negative, or not finite); a
    replay would sleep as long. A wait openai gives up on (over ``limit`` seconds) is left as it
    was, so the decision to retry stays the recorded one; one given as a date, past by the time
    of a replay, is restated as ``retry-after-ms`` (measured from ``sent``, the recorded
    ``date``), so openai gives up again. A date with no ``sent`` to measure it from is taken as
    one openai waited for. ``limit=None`` (anthropic) retries after any wait. An error the server
    marked ``x-should-retry: false`` is never retried: its headers are handed back as recorded.
    The ``retry-after`` header itself is always kept for the caller.
    """
    given = {k.lower(): v for k, v in headers}
    if given.get("x-should-retry") == "false":
        return headers
    if limit is not None:
        delay, dated = _asked_wait(given, sent)
        if delay is not None and math.isfinite(delay) and delay > limit:
            if not dated:
                return headers
            wait = [("retry-after-ms", f"{delay * 1000:.0f}")]
            return [(k, v) for k, v in headers if k.lower() != "retry-after-ms"] + wait
    return [(k, v) for k, v in headers if k.lower() != "retry-after-ms"] + [("retry-after-ms", "1")]


def replay_parts(
    record: dict[str, Any], *, wait_limit: float | None = _MAX_WAIT, request: HttpRequest | None = None
) -> tuple[int, list[tuple[str, str]], list[bytes] | None, bytes]:
    """What replay hands the SDK for a recorded HTTP response: its status, its headers, and its
    SSE events as chunks (one per event; ``None`` when it was not streamed) or else its body.

    ``wait_limit`` is the longest wait before a retry the SDK accepts (seconds; None: any):
    a longer one is left as recorded, a shorter one made none. Given the ``request`` being
    replayed, an Anthropic SDK's (its ``anthropic-version`` header) gets no limit: it waits
    whatever it is told.

    Raises TypeError, ValueError (binascii.Error for bad base64), AttributeError,
    OverflowError or RecursionError for a record of the wrong shape: replay turns
    them into a `CassetteShapeError`, `cassette verify` reports them.
    """
    given = record.get("headers")
    headers: list[tuple[str, str]] = []
    if given:
        if not isinstance(given, dict):
            raise TypeError(f"its `headers` is a {type(given).__name__}, not an object of header names")
        try:  # as recorded (text names and values, none to drop): taken at C speed
            plain = _DROP_RESPONSE_HEADERS.isdisjoint(map(str.lower, given))
            plain = plain and set(map(type, given.values())) == _TEXT
        except TypeError:  # a name that is not text
            plain = False
        if plain:
            headers = list(given.items())
        else:
            for k, v in given.items():
                if type(k) is not str:
                    k = str(k)
                if k.lower() in _DROP_RESPONSE_HEADERS:  # the body is stored decoded: encodings are moot
                    continue
                if type(v) is str:
                    headers.append((k, v))
                    continue
                for item in v if isinstance(v, list) else [v]:
                    headers.append((k, str(item)))
    elif given is not None and not isinstance(given, dict):
        raise TypeError(f"its `headers` is a {type(given).__name__}, not an object of header names")
    status = record.get("status", 200)
    if type(status) is not int or not 100 <= status <= 999:  # three digits, as the importers take
        raise ValueError(f"its status {status!r:.40} is not an HTTP status code (100-999)")
    if status in _RETRYABLE or status >= 500:  # a status the SDKs retry, after the wait it asks for
        if request is not None and request.header("anthropic-version"):
            wait_limit = None
        # a retry-after date is measured from the response's own date, kept for it when recorded
        sent = next((v for k, v in (given or {}).items() if str(k).lower() == "date"), None)
        headers = _no_wait(headers, wait_limit, sent if isinstance(sent, str) else None)
    if "events" in record:
        events = record["events"]
        if not isinstance(events, list):
            raise TypeError(f"`events` is a {type(events).__name__}, not a list")
        # encoded up front, so a bad event fails before the SDK reads, not in the middle of a stream
        try:
            # encode() without arguments takes its fast path (UTF-8): a stream has dozens of events
            return status, headers, [(event + "\n\n").encode() for event in events], b""
        except TypeError:
            at, bad = next((i, e) for i, e in enumerate(events) if not isinstance(e, str))
            raise TypeError(
                f"its `events[{at}]` is not a string of text ({type(bad).__name__}: {str(bad)[:40]!r})"
            ) from None
    return status, headers, None, body_bytes(record)


class _EventRecorder:
    """Splits a streamed body into SSE events as chunks arrive, and records it when closed."""

    def __init__(self, slot: Slot, status: int, headers: dict[str, Any]) -> None:
        self.slot = slot
        self.status = status
        self.headers = headers
        self.events: list[str] = []
        self.buffer = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.complete = False
        slot.partial = self.snapshot

    def feed(self, chunk: bytes) -> None:
        self.buffer += self.decoder.decode(chunk)
        if "\n\n" not in self.buffer and "\r\r" not in self.buffer and "\r\n\r\n" not in self.buffer:
            return
        parts = _SSE_BOUNDARY.split(self.buffer)
        self.buffer = parts.pop()
        self.events.extend(p for p in parts if p)

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
            from cassette.plugins.manager import get_plugin_manager

            hook = get_plugin_manager().hook
            self.complete = bool(hook.cassette_stream_complete(request=self.slot.request, events=self.events))
        if self.complete:
            tail = self.buffer + self.decoder.decode(b"", final=True)
            if tail.strip():
                self.events.append(tail.rstrip("\r\n"))
            self.buffer = ""
        self.slot.finish(self.snapshot())


# The SDKs' base error classes: an SDK re-raises its own errors as they are, without retrying them.
_SDK_ERRORS = (("openai", "OpenAIError"), ("anthropic", "AnthropicError"))


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
    """The same error, retyped so SDK retry loops neither retry it nor wrap it in APIConnectionError.

    anthropic wraps any other exception from the HTTP client in a retried
    APIConnectionError (a missing blob would be reported as a connection error, then
    as a miss on the retry); both SDKs pass their own error classes through untouched.
    """
    bases = tuple(
        getattr(sys.modules[mod], name)
        for mod, name in _SDK_ERRORS
        if mod in sys.modules and isinstance(getattr(sys.modules[mod], name, None), type)
    )
    if bases and not isinstance(error, bases):
        # same object, so the session's record of a miss stays identical
        error.__class__ = _sdk_class(type(error), bases)  # type: ignore[arg-type,assignment]
    return error


def _is_stream(content_type: str) -> bool:
    return content_type.startswith("text/event-stream")


@cache
def _classes(lib: str) -> dict[str, type]:
    """Build the four transport classes for ``httpx`` or ``httpx2`` (same API, different modules)."""
    mod = _module(lib)

    class RecordingStream(mod.SyncByteStream):  # type: ignore[name-defined,misc]
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

    class AsyncRecordingStream(mod.AsyncByteStream):  # type: ignore[name-defined,misc]
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

    class ReplayStream(mod.SyncByteStream, mod.AsyncByteStream):  # type: ignore[name-defined,misc]
        """Recorded SSE events, handed to the SDK one event per chunk."""

        def __init__(self, chunks: list[bytes]) -> None:
            self._chunks = chunks

        def __iter__(self) -> Iterator[bytes]:
            return iter(self._chunks)  # no generator frame to resume for each event

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._chunks:
                yield chunk

    def replayed(
        record: dict[str, Any], request: Any, raw: HttpRequest, where: Any = None, seq: Any = None
    ) -> Any:
        try:
            # anthropic retries after any wait it is told; openai gives up past two minutes
            status, headers, chunks, body = replay_parts(record, request=raw)
            if chunks is not None:
                return mod.Response(status, headers=headers, stream=ReplayStream(chunks), request=request)
            # as a network transport hands it over: a stream the client reads, with its length;
            # ``content=`` would read it through the decoders here and let the client read it again
            headers.append(("Content-Length", str(len(body))))
            return mod.Response(status, headers=headers, stream=mod.ByteStream(body), request=request)
        except (TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
            # an edited or corrupted record must fail as a cassette error, never as a stray TypeError
            where = where.absolute() if hasattr(where, "absolute") else where
            raise CassetteShapeError(
                f"cassette {where}: recorded response #{seq} cannot be replayed "
                f"({type(exc).__name__}: {exc}). Restore the cassette from git or re-record it.",
                path=where,
            ) from None

    def start(session: Session, request: Any, body: bytes) -> tuple[Any, Slot | None]:
        raw = _WireRequest(request.method, request, body)  # `_raw_request`, one call less per call
        kind, normalized = normalize_http(raw)
        if session.replaying:
            try:
                served = session.serve(kind, normalized, copy=False)
                return replayed(served.response, request, raw, session.path, served.seq), None
            except CassetteError as error:  # a miss, a missing blob, a record of the wrong shape
                raise _sdk_proof(error) from None
        return None, session.begin(kind, normalized)

    def live_headers(response: Any) -> list[tuple[str, str]]:
        return [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length")
        ]

    def relay_stream(response: Any, request: Any, slot: Slot, stream_cls: type) -> Any:
        """A live event stream handed on to the caller while it is recorded; ``None`` if not a stream."""
        if not (_is_stream(response.headers.get("content-type", "")) and 200 <= response.status_code < 300):
            return None
        recorder = _EventRecorder(slot, response.status_code, _kept_headers(response.headers))
        return mod.Response(
            response.status_code,
            headers=live_headers(response),
            stream=stream_cls(response, recorder),
            request=request,
            extensions=response.extensions,
        )

    def relay_body(response: Any, request: Any, slot: Slot, body: bytes) -> Any:
        """Record a fully read live response and hand the caller an equivalent one."""
        content_type = response.headers.get("content-type", "")
        head = {"status": response.status_code, "headers": _kept_headers(response.headers)}
        slot.finish_later(lambda: {**head, **body_record(content_type, body)})
        # a stream the client reads (and times: ``elapsed``), as the network transport's was
        return mod.Response(
            response.status_code,
            headers=[*live_headers(response), ("Content-Length", str(len(body)))],
            stream=mod.ByteStream(body),
            request=request,
            extensions=response.extensions,
        )

    class Transport(mod.BaseTransport):  # type: ignore[name-defined,misc]
        """A transport that serves calls from the active cassette or records them."""

        def __init__(
            self,
            wrapped: Any = None,
            *,
            session: Session | None = None,
            owns_wrapped: bool = True,
            keepalive: Any = None,
        ):
            self._wrapped = wrapped if wrapped is not None else mod.HTTPTransport()
            self._session = session
            self._owns = owns_wrapped if wrapped is not None else True
            # the client that owns ``wrapped``: SDK clients close their transport when collected
            self._keepalive = keepalive

        def handle_request(self, request: Any) -> Any:
            session = self._session or seam_session()
            if session is None:
                return self._wrapped.handle_request(request)
            replay, slot = start(session, request, request.read())
            if slot is None:
                return replay
            try:
                response = self._wrapped.handle_request(request)
            except BaseException:
                slot.cancel()
                raise
            streamed = relay_stream(response, request, slot, RecordingStream)
            if streamed is not None:
                return streamed
            try:
                body = response.read()
            finally:
                response.close()
            return relay_body(response, request, slot, body)

        def close(self) -> None:
            if self._owns:
                self._wrapped.close()

    class AsyncTransport(mod.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """The async twin of `Transport`."""

        def __init__(
            self,
            wrapped: Any = None,
            *,
            session: Session | None = None,
            owns_wrapped: bool = True,
            keepalive: Any = None,
        ):
            self._wrapped = wrapped if wrapped is not None else mod.AsyncHTTPTransport()
            self._session = session
            self._owns = owns_wrapped if wrapped is not None else True
            self._keepalive = keepalive

        async def handle_async_request(self, request: Any) -> Any:
            session = self._session or seam_session()
            if session is None:
                return await self._wrapped.handle_async_request(request)
            replay, slot = start(session, request, await request.aread())
            if slot is None:
                return replay
            try:
                response = await self._wrapped.handle_async_request(request)
            except BaseException:
                slot.cancel()
                raise
            streamed = relay_stream(response, request, slot, AsyncRecordingStream)
            if streamed is not None:
                return streamed
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            return relay_body(response, request, slot, body)

        async def aclose(self) -> None:
            if self._owns:
                await self._wrapped.aclose()

    return {"Transport": Transport, "AsyncTransport": AsyncTransport}


def transport(lib: str = "httpx2", wrapped: Any = None) -> Any:
    """A sync cassette transport for ``httpx2`` (default) or ``httpx``.

    Example::

        client = httpx2.Client(transport=cassette.transport())
    """
    return _classes(lib)["Transport"](wrapped)


def async_transport(lib: str = "httpx2", wrapped: Any = None) -> Any:
    """The async twin of `transport`."""
    return _classes(lib)["AsyncTransport"](wrapped)


def http_client(lib: str = "httpx2", **kwargs: Any) -> Any:
    """An ``httpx2.Client`` (or ``httpx.Client``) routed through the seam, for any SDK built on it.

    Keyword arguments are ``Client``'s own (``timeout``, ``verify``, ``proxy``, ``mounts``, …);
    every transport the client ends up with, proxies included, goes through the seam.

    Example::

        client = OpenAI(http_client=cassette.http_client())
    """
    client = _module(lib).Client(**kwargs)
    _route(client, lib, is_async=False, owner=None)
    return client


def async_http_client(lib: str = "httpx2", **kwargs: Any) -> Any:
    """An ``httpx2.AsyncClient`` (or ``httpx.AsyncClient``) routed through the seam.

    Example::

        client = AsyncOpenAI(http_client=cassette.async_http_client())
    """
    client = _module(lib).AsyncClient(**kwargs)
    _route(client, lib, is_async=True, owner=None)
    return client


def _route(client: Any, lib: str, *, is_async: bool, owner: Any) -> None:
    """Put the seam in front of each of ``client``'s transports: the default one and every mount
    (proxies, from arguments or the environment, are mounts). ``client`` must be one we built.

    With ``owner`` (the caller's client whose transports these are), closing ``client`` leaves
    them open, and ``owner`` is kept alive as long as ``client`` is.
    """
    classes = _classes(lib)
    cls: Any = classes["AsyncTransport"] if is_async else classes["Transport"]

    def seam(inner: Any) -> Any:
        if isinstance(inner, cls) and inner._session is None:
            # already a seam (a client instrumented twice, or built on http_client()): one seam is
            # enough, two would record every call twice
            if owner is None:
                return inner
            inner = inner._wrapped
        if owner is None:
            return cls(inner)
        return cls(inner, owns_wrapped=False, keepalive=owner)

    client._transport = seam(client._transport)
    client._mounts = {pattern: None if t is None else seam(t) for pattern, t in client._mounts.items()}


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


def _rerouted(http: Any) -> Any:
    """A new HTTP client like ``http`` whose transports go through the seam (``http`` is untouched)."""
    found = _lib_of(http)
    if found is None:
        raise UninstrumentableClientError(
            f"cannot instrument {type(http).__name__}: not an httpx or httpx2 client. Pass "
            "http_client=cassette.http_client() (or async_http_client()) to the SDK client instead."
        )
    lib, is_async = found
    mod = _module(lib)
    client_cls = mod.AsyncClient if is_async else mod.Client
    copy = client_cls(
        auth=http.auth,
        params=http.params,
        headers=http.headers,
        cookies=http.cookies,
        timeout=http.timeout,
        follow_redirects=http.follow_redirects,
        max_redirects=http.max_redirects,
        event_hooks=http.event_hooks,
        base_url=http.base_url,
        trust_env=False,  # the caller's transports and proxy mounts are reused below, not rebuilt
        transport=http._transport,
        default_encoding=getattr(http, "_default_encoding", "utf-8"),
    )
    copy._mounts = dict(http._mounts)
    copy._trust_env = http.trust_env
    _route(copy, lib, is_async=is_async, owner=http)
    return copy


def instrument(client: Any) -> Any:
    """A copy of an SDK client (OpenAI, AsyncOpenAI, Azure, Anthropic, …) routed through the seam.

    The caller's client is left untouched; with no active cassette the copy
    behaves exactly like the original. Plain httpx/httpx2 clients work too.

    Example::

        client = cassette.instrument(OpenAI())
    """
    if _lib_of(client) is not None:
        return _rerouted(client)
    http = getattr(client, "_client", None)
    copy = getattr(client, "copy", None) or getattr(client, "with_options", None)
    if http is None or copy is None or _lib_of(http) is None:
        raise UninstrumentableClientError(
            f"cassette.instrument() does not know how to route {type(client).__name__}; pass "
            "http_client=cassette.http_client() (or async_http_client()) to its constructor instead."
        )
    return copy(http_client=_rerouted(http))
