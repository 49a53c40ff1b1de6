"""The seam for botocore (boto3) clients: handlers on the client's own event system.

botocore has no pluggable HTTP transport, but a public event system, and its clients
each hold their own copy of it (``client.meta.events``). ``cassette.instrument(client)``
registers, on the client passed (botocore offers no way to copy a client):

- ``before-send.<service>``: the request is keyed through the provider plugins
  (``cassette_http_request``, as the httpx seam does). Replaying, the handler returns the
  recorded ``AWSResponse``, which botocore parses itself, so the caller gets botocore's own
  objects and errors (a recorded ``ThrottlingException`` is a ``ClientError`` again);
  recording, it returns nothing and botocore sends the request as it would;
- ``before-parse.<service>``: the live response is recorded before botocore parses it; an
  event stream (``application/vnd.amazon.eventstream``) is recorded message by message while
  the caller reads it, and replayed message by message;
- ``response-received.<service>``: a request that never got a response is not recorded;
- ``choose-signer.<service>`` (first): replaying, requests are not signed, so a replay needs
  no credentials (botocore's documented ``botocore.UNSIGNED``);
- ``needs-retry.<service>`` (first): replaying, a call is retried at once exactly when the
  recording holds another answer to it (the recorded retry), and otherwise not at all.

With no active cassette every handler returns nothing: the client behaves as it did.
Nothing here names a service or a provider beyond botocore itself.
"""

from __future__ import annotations

import base64
import contextvars
import io
import sys
from collections.abc import Iterator
from typing import Any

from cassette.core import eventstream
from cassette.core.model import HttpRequest
from cassette.errors import CassetteShapeError, UninstrumentableClientError
from cassette.plugins.manager import normalize_http
from cassette.seam import transport
from cassette.seam.session import Session, Slot, seam_session

# headers of a response that are recomputed on replay (the body's length) or churn on every call
_DROP = frozenset({"content-length", "date", "connection", "keep-alive", "transfer-encoding"})
_UNIQUE = "cassette.seam.botocore"

# The call of this thread (botocore is synchronous) between its before-send and its before-parse
# events: recording, the slot its response goes into; replaying, the key it was served by.
_recording: contextvars.ContextVar[Slot | None] = contextvars.ContextVar(
    "cassette_botocore_slot", default=None
)
_served: contextvars.ContextVar[str | None] = contextvars.ContextVar("cassette_botocore_key", default=None)


def is_client(client: Any) -> bool:
    """Whether ``client`` is a botocore client (``boto3.client(...)``); botocore is not imported here."""
    module = sys.modules.get("botocore.client")
    base = getattr(module, "BaseClient", None)
    return isinstance(base, type) and isinstance(client, base)


def instrument_client(client: Any) -> Any:
    """Route a botocore client's calls through the seam, by handlers on its own event system.

    The handlers are registered on the client passed, which is returned (botocore clients
    cannot be copied); registering twice changes nothing. Other clients are untouched.

    Example::

        client = cassette.instrument(boto3.client("bedrock-runtime", region_name="us-east-1"))
    """
    if any(cls.__module__.partition(".")[0] == "aiobotocore" for cls in type(client).__mro__):
        raise UninstrumentableClientError(
            f"cassette.instrument() cannot route an aiobotocore (async) client, {type(client).__name__}, "
            "yet: only boto3's own clients are supported. Build the client with boto3.client(...) for "
            "the calls you record and replay."
        )
    events = client.meta.events
    service = client.meta.service_model.service_id.hyphenize()
    for event, handler, first in (
        ("choose-signer", _choose_signer, True),
        ("before-send", _before_send, False),
        ("before-parse", _before_parse, False),
        ("response-received", _response_received, False),
        ("needs-retry", _needs_retry, True),
    ):
        register = events.register_first if first else events.register
        register(f"{event}.{service}", handler, unique_id=f"{_UNIQUE}.{event}")
    return client


# --- the handlers -------------------------------------------------------------------------------


def _choose_signer(**_: Any) -> Any:
    session = seam_session()
    if session is None or not session.replaying:
        return None
    import botocore  # deferred: optional, the client's own library (imported already)

    return botocore.UNSIGNED  # the recorded answer needs no signature, and a replay no credentials


def _before_send(request: Any, **_: Any) -> Any:
    session = seam_session()
    if session is None:
        return None
    raw = _http_request(request)
    kind, normalized = normalize_http(raw)
    if not session.replaying:
        _recording.set(session.begin(kind, normalized))
        return None
    served = session.serve(kind, normalized, copy=False)  # a miss propagates as the call's error
    _served.set(served.key)
    return _replayed(served.response, request.url, session, served.seq)


def _before_parse(response_dict: dict[str, Any], operation_model: Any, **_: Any) -> None:
    slot = _recording.get()
    if slot is None:
        return
    _recording.set(None)
    status = int(response_dict["status_code"])
    headers = _kept_headers(response_dict["headers"])
    body = response_dict["body"]
    if isinstance(body, bytes | bytearray):
        body = bytes(body)
        content_type = str(headers.get("content-type", ""))
        slot.finish_later(
            lambda: {"status": status, "headers": headers, **transport.body_record(content_type, body)}
        )
    elif operation_model.has_event_stream_output:
        # read by the caller, message by message: recorded as it passes
        response_dict["body"] = _RecordingStream(body, _StreamRecorder(slot, status, headers))
    else:  # a streamed body (an object's bytes): read whole, recorded, handed on as a new stream
        data = body.read()
        content_type = str(headers.get("content-type", ""))
        slot.finish({"status": status, "headers": headers, **transport.body_record(content_type, data)})
        response_dict["body"] = type(body)(io.BytesIO(data), len(data))


def _response_received(exception: BaseException | None = None, **_: Any) -> None:
    slot = _recording.get()
    if slot is not None:  # sent, but no response came (a connection error): nothing to record
        _recording.set(None)
        slot.cancel()


def _needs_retry(caught_exception: BaseException | None = None, **_: Any) -> Any:
    session = seam_session()
    if session is None or not session.replaying:
        return None  # recording: botocore's own retry policy decides, and its waits are real
    key = _served.get()
    _served.set(None)
    if caught_exception is not None or key is None:
        return False  # a miss: never retried
    return 0 if session.unserved(key) else False


# --- requests and responses as cassette sees them ----------------------------------------------


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)


def _http_request(request: Any) -> HttpRequest:
    """A botocore ``AWSPreparedRequest`` as the plain request the provider plugins read."""
    body = request.body
    if body is None:
        data = b""
    elif isinstance(body, bytes | bytearray):
        data = bytes(body)
    elif isinstance(body, str):
        data = body.encode("utf-8")
    else:  # a file-like upload: read, then rewound for botocore to send
        start = body.tell()
        data = body.read()
        body.seek(start)
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    headers = tuple((str(k).lower(), _text(v)) for k, v in request.headers.items())
    return HttpRequest(str(request.method), str(request.url), headers, data)


def _kept_headers(headers: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in headers.items():
        lower = str(name).lower()
        if lower not in _DROP:
            out[lower] = _text(value)
    return out


def _event_record(frame: bytes) -> dict[str, Any]:
    """One event-stream message as a recording keeps it: its headers and its payload, readable."""
    try:
        headers, payload = eventstream.decode(frame)
    except eventstream.EventStreamError:  # kept as it came; botocore reports it to the caller
        return {"frame": base64.b64encode(frame).decode("ascii")}
    content_type = headers.get(":content-type")
    return {
        "headers": headers,
        **transport.body_record(content_type if isinstance(content_type, str) else "", payload),
    }


def replay_parts(record: dict[str, Any]) -> tuple[int, dict[str, str], list[bytes]]:
    """What replay hands botocore for a recorded response: its status, headers and body chunks
    (one per event-stream message, or the one body).

    Raises TypeError, ValueError, AttributeError or RecursionError for a record of the wrong
    shape: replay turns them into a `CassetteShapeError`, `cassette verify` reports them.
    """
    status = record.get("status", 200)
    if type(status) is not int or not 100 <= status <= 999:
        raise ValueError(f"its status {status!r:.40} is not an HTTP status code (100-999)")
    given = record.get("headers") or {}
    if not isinstance(given, dict):
        raise TypeError(f"its `headers` is a {type(given).__name__}, not an object of header names")
    headers = {str(k): str(v) for k, v in given.items() if str(k).lower() not in _DROP}
    if "event_stream" in record:
        events = record["event_stream"]
        if not isinstance(events, list):
            raise TypeError(f"its `event_stream` is a {type(events).__name__}, not a list")
        return status, headers, [transport.event_frame(event) for event in events]
    body = transport.body_bytes(record)
    headers["content-length"] = str(len(body))
    return status, headers, [body]


def replay_problem(record: dict[str, Any]) -> str | None:
    """Why a recorded event-stream response could not be replayed, or ``None`` if it can.

    Example::

        replay_problem({"status": 200, "event_stream": [{"headers": {}, "text": "hi"}]})  # None
    """
    try:
        replay_parts(record)
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        return str(exc) if isinstance(exc, TypeError | ValueError) else f"{type(exc).__name__}: {exc}"
    return None


def _replayed(record: dict[str, Any], url: str, session: Session, seq: int) -> Any:
    # deferred: optional, the client's own library (imported already)
    from botocore.awsrequest import AWSResponse

    try:
        status, headers, chunks = replay_parts(record)
    except (TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        where = session.path.absolute()
        raise CassetteShapeError(
            f"cassette {where}: recorded response #{seq} cannot be replayed "
            f"({type(exc).__name__}: {exc}). Restore the cassette from git or re-record it.",
            path=where,
        ) from None
    return AWSResponse(url, status, headers, _ReplayBody(chunks))


class _ReplayBody:
    """A recorded body as botocore reads a live one: ``stream()`` chunk by chunk (an event
    stream, one message per chunk), or ``read()``."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks
        self._file = io.BytesIO(b"".join(chunks))

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        return iter(self._chunks)

    def read(self, amt: int | None = None) -> bytes:
        return self._file.read(amt)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._file.close()

    def release_conn(self) -> None:
        pass


class _StreamRecorder:
    """Cuts a live event stream into messages as they arrive, and records it when it ends."""

    def __init__(self, slot: Slot, status: int, headers: dict[str, Any]) -> None:
        self.slot = slot
        self.head = {"status": status, "headers": headers}
        self.events: list[dict[str, Any]] = []
        self.splitter = eventstream.Splitter()
        self.complete = False
        slot.partial = self.snapshot

    def feed(self, chunk: bytes) -> None:
        try:
            frames = self.splitter.feed(chunk)
        except eventstream.EventStreamError:  # not the format: the rest is kept as it came
            frames, self.splitter.buffer = [self.splitter.buffer], b""
        self.events.extend(map(_event_record, frames))
        if frames and self.events[-1].get("headers", {}).get(":message-type") == "exception":
            self.complete = True  # the service ends a stream with it (the SDK raises, and stops reading)
            self.close()

    def snapshot(self) -> dict[str, Any]:
        record: dict[str, Any] = {**self.head, "event_stream": list(self.events)}
        if not self.complete:
            record["incomplete"] = True
        return record

    def close(self) -> None:
        if self.slot.done:
            return
        tail = self.splitter.rest()
        if tail:
            self.events.append({"frame": base64.b64encode(tail).decode("ascii")})
        self.slot.finish(self.snapshot())


class _RecordingStream:
    """The live event stream botocore reads (``stream()``, ``close()``), recorded as it passes."""

    def __init__(self, raw: Any, recorder: _StreamRecorder) -> None:
        self._raw = raw
        self._recorder = recorder

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        for chunk in self._raw.stream(*args, **kwargs):
            self._recorder.feed(chunk)
            yield chunk
        self._recorder.complete = True
        self._recorder.close()

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            self._recorder.close()


transport.register_instrumenter(is_client, instrument_client)

# `cassette.instrument` is reached through this module (see `cassette/__init__.py`), so the botocore
# seam has registered itself with the transport's `instrument` before the first client is routed.
instrument = transport.instrument
