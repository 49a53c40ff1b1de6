"""AWS event-stream framing (``application/vnd.amazon.eventstream``): the one place such a body
is cut into messages, read and written.

A message is a prelude (total length and headers length, 4 bytes each, big-endian, then the
CRC32 of those 8 bytes), its headers, its payload, and the CRC32 of everything before it. A
header is a 1-byte name length, the name, a 1-byte type and the value (strings and bytes with a
2-byte length). Recordings keep each message as ``{"headers": {name: value}, "payload": bytes}``
with the headers in wire order: `encode` rebuilds the very bytes (CRCs recomputed) for a
replay handed to the SDK message by message. Pure functions; nothing here knows a service.

Example::

    from cassette.core.eventstream import Splitter, decode, encode

    frame = encode({":event-type": "chunk", ":message-type": "event"}, b'{"a":1}')
    decode(frame) == ({":event-type": "chunk", ":message-type": "event"}, b'{"a":1}')
    live = Splitter()
    live.feed(frame[:10]) == []  # the rest of the message has not arrived
    live.feed(frame[10:]) == [frame]
"""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from typing import Any

from cassette.errors import EventStreamError

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_PRELUDE = 12  # total length, headers length, prelude CRC
_MIN = 16  # a message with no headers and no payload
_MAX = 16 * 1024 * 1024  # the format's limit for one message

# header value types, by their byte on the wire: fixed-size ones as struct formats
_FIXED = {
    2: ("byte", ">b"),
    3: ("short", ">h"),
    4: ("integer", ">i"),
    5: ("long", ">q"),
    8: ("timestamp", ">q"),
}
_NAMES = {name: (code, fmt) for code, (name, fmt) in _FIXED.items()}


class Typed(dict[str, Any]):
    """A header value that is neither text nor a bool, as recordings write it (JSON):
    ``{"type": "integer", "value": 3}``; a ``bytes`` value as base64 text, a ``uuid`` as its hex."""


def _header_value(data: bytes, at: int, kind: int) -> tuple[Any, int]:
    if kind == 0:
        return True, at
    if kind == 1:
        return False, at
    if kind in _FIXED:
        name, fmt = _FIXED[kind]
        size = struct.calcsize(fmt)
        return Typed(type=name, value=struct.unpack_from(fmt, data, at)[0]), at + size
    if kind in (6, 7):
        (length,) = struct.unpack_from(">H", data, at)
        raw = data[at + 2 : at + 2 + length]
        if len(raw) != length:
            raise EventStreamError("a header value runs past the headers")
        if kind == 7:
            return raw.decode("utf-8"), at + 2 + length
        return Typed(type="bytes", value=base64.b64encode(raw).decode("ascii")), at + 2 + length
    if kind == 9:
        return Typed(type="uuid", value=uuid.UUID(bytes=data[at : at + 16]).hex), at + 16
    raise EventStreamError(f"unknown header value type {kind}")


def _headers(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    at = 0
    while at < len(data):
        length = data[at]
        name = data[at + 1 : at + 1 + length].decode("utf-8")
        value, at = _header_value(data, at + 2 + length, data[at + 1 + length])
        out[name] = value
    return out


def decode(frame: bytes) -> tuple[dict[str, Any], bytes]:
    """One whole message's ``(headers, payload)``; `EventStreamError` if its lengths or CRCs are wrong."""
    if len(frame) < _MIN:
        raise EventStreamError(f"a message is at least {_MIN} bytes, this one {len(frame)}")
    total, headers_length, prelude_crc = struct.unpack_from(">III", frame)
    if zlib.crc32(frame[:8]) != prelude_crc:
        raise EventStreamError("the prelude's CRC does not match")
    if total != len(frame) or headers_length > total - _MIN:
        raise EventStreamError(f"the prelude says {total} bytes, the message has {len(frame)}")
    (message_crc,) = struct.unpack_from(">I", frame, total - 4)
    if zlib.crc32(frame[:-4]) != message_crc:
        raise EventStreamError("the message's CRC does not match")
    try:
        headers = _headers(frame[_PRELUDE : _PRELUDE + headers_length])
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"its headers cannot be read ({exc})") from None
    return headers, frame[_PRELUDE + headers_length : -4]


def _encode_value(value: Any) -> bytes:
    if value is True or value is False:
        return bytes([0 if value else 1])
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return b"\x07" + struct.pack(">H", len(raw)) + raw
    if not isinstance(value, dict) or set(value) != {"type", "value"}:
        raise TypeError(f"a header value is a {type(value).__name__}, not text, a bool or a typed value")
    kind, inner = value["type"], value["value"]
    if kind in _NAMES:
        code, fmt = _NAMES[kind]
        if type(inner) is not int:
            raise TypeError(f"a {kind} header's value is a {type(inner).__name__}, not an integer")
        return bytes([code]) + struct.pack(fmt, inner)
    if kind == "bytes":
        if not isinstance(inner, str):
            raise TypeError(f"a bytes header's value is a {type(inner).__name__}, not base64 text")
        raw = base64.b64decode(inner, validate=True)
        return b"\x06" + struct.pack(">H", len(raw)) + raw
    if kind == "uuid":
        return b"\x09" + uuid.UUID(hex=str(inner)).bytes
    raise ValueError(f"unknown header value type {kind!r:.40}")


def encode(headers: dict[str, Any], payload: bytes) -> bytes:
    """One message: ``headers`` (text, bools or `Typed` values) in their order, then ``payload``."""
    block = b""
    for name, value in headers.items():
        raw_name = str(name).encode("utf-8")
        if not 0 < len(raw_name) < 256:
            raise ValueError(f"a header name is 1-255 bytes, {str(name)[:40]!r} is {len(raw_name)}")
        block += bytes([len(raw_name)]) + raw_name + _encode_value(value)
    total = _MIN + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + block + payload
    return head + struct.pack(">I", zlib.crc32(head))


class Splitter:
    """Cuts a stream into whole messages as its bytes arrive; `rest` is what the stream ended inside."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self.buffer += chunk
        frames: list[bytes] = []
        while len(self.buffer) >= _PRELUDE:
            (total,) = struct.unpack_from(">I", self.buffer)
            if not _MIN <= total <= _MAX:
                raise EventStreamError(f"a message of {total} bytes is outside the format's limits")
            if len(self.buffer) < total:
                break
            frames.append(self.buffer[:total])
            self.buffer = self.buffer[total:]
        return frames

    def rest(self) -> bytes:
        return self.buffer
