"""The seam for MCP tool servers: a transport around the mcp SDK's own transports.

An MCP client session talks JSON-RPC over a pair of message streams that a transport yields
(``stdio_client(params)``, ``streamable_http_client(url)``, any other). ``cassette.mcp_transport``
is such a transport, wrapping one the caller made but has not entered:

- recording, it enters the real transport and passes every message through, recording each
  request the client sends with the answer the server gave (and what the server sent before
  that answer: notifications, its own requests) as a tool interaction, in order; a client's
  notifications are recorded too;
- replaying, it never enters the real transport (no subprocess is started, no connection is
  made): each request is answered from the cassette under the id the client gave it, the
  recorded server messages before it are handed over first, and the client's answers to them
  are dropped;
- with no active cassette it is the real transport, untouched.

A ``tools/call`` is the interaction ``mcp:<server>/<tool>`` with the tool's arguments; any other
request or notification is ``mcp:<server>`` with its ``method`` and ``params``. The JSON-RPC
``id`` is never part of it (nor, through the transport, a session id header); what else is left
out of the key (``_meta``, the client's version) is the MCP plugin's
(``cassette.plugins.providers.mcp``, a ``cassette_normalize`` hook). Results are stored as a
tool's are (``{"result": ...}``), so ``cassette show``, drift and verify read them as tool calls.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import Any

from cassette.plugins.manager import normalize
from cassette.seam.session import Session, Slot, seam_connections, seam_session
from cassette.seam.tools import from_jsonable, to_jsonable

# client notifications whose timing, not the agent, decides whether they are sent
_UNKEYED_NOTIFICATIONS = frozenset({"notifications/cancelled", "notifications/progress"})


def tool_request(server: str, message: dict[str, Any]) -> dict[str, Any]:
    """The tool request a client's JSON-RPC request or notification records, before normalising.

    Example::

        tool_request("orders", {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                "params": {"name": "lookup", "arguments": {"id": "A1"}}})
        == {"kind": "tool", "name": "mcp:orders/lookup", "arguments": {"id": "A1"}}
    """
    method = str(message.get("method", ""))
    params = message.get("params") or {}
    if method == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
        request: dict[str, Any] = {
            "kind": "tool",
            "name": f"mcp:{server}/{params['name']}",
            "arguments": to_jsonable(params.get("arguments") or {}, key=True),
        }
        rest = {k: v for k, v in params.items() if k not in ("name", "arguments")}
        if rest:
            request["params"] = to_jsonable(rest, key=True)
        return request
    what = "method" if "id" in message else "notification"
    return {
        "kind": "tool",
        "name": f"mcp:{server}",
        "arguments": {what: method, "params": to_jsonable(params, key=True)},
    }


def _wire(item: Any) -> dict[str, Any] | None:
    """A session message's JSON-RPC message as plain JSON (None for an exception the transport passed)."""
    message = getattr(item, "message", None)
    if message is None:
        return None
    dumped: dict[str, Any] = message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return dumped


def _session_message(data: dict[str, Any]) -> Any:
    # deferred: the mcp SDK, optional (imported by its caller already)
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    return SessionMessage(jsonrpc_message_adapter.validate_python(data))


class _Recorder:
    """Recording: the client's requests in flight (by JSON-RPC id) and what the server sent since."""

    def __init__(self, session: Session, server: str) -> None:
        self.session = session
        self.server = server
        self.in_flight: dict[Any, Slot] = {}
        self.incoming: list[dict[str, Any]] = []

    def sent(self, message: dict[str, Any]) -> None:
        if "method" not in message or message["method"] in _UNKEYED_NOTIFICATIONS:
            return  # the client answering a server's request: part of the server's recorded turn
        request = normalize(tool_request(self.server, message), "tool")
        if "id" in message:
            self.in_flight[message["id"]] = self.session.begin("tool", request)
        else:
            self.session.call("tool", request, lambda: {"result": None})

    def received(self, message: dict[str, Any]) -> None:
        slot = self.in_flight.pop(message.get("id"), None) if "method" not in message else None
        if slot is None:  # a notification or a request of the server's, or an answer we did not ask
            self.incoming.append(message)
            return
        answer = {k: v for k, v in message.items() if k in ("result", "error")}
        response: dict[str, Any] = {"result": to_jsonable(answer)}
        if self.incoming:
            response["server_messages"] = to_jsonable(self.incoming)
            self.incoming = []
        slot.finish(response)

    def close(self) -> None:
        for slot in self.in_flight.values():
            slot.cancel()  # never answered (the session closed first): not recorded
        self.in_flight.clear()


class _RecordingRead:
    """The real transport's read stream, each message noted as it is received."""

    def __init__(self, inner: Any, recorder: _Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    async def receive(self) -> Any:
        item = await self._inner.receive()
        data = _wire(item)
        if data is not None:
            self._recorder.received(data)
        return item

    def __aiter__(self) -> _RecordingRead:
        return self

    async def __anext__(self) -> Any:
        import anyio  # deferred: the mcp SDK's own dependency

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _RecordingRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _RecordingWrite:
    """The real transport's write stream, each message noted before it is sent."""

    def __init__(self, inner: Any, recorder: _Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    async def send(self, item: Any, /) -> None:
        data = _wire(item)
        if data is not None:
            self._recorder.sent(data)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _RecordingWrite:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _ReplayWrite:
    """Replaying: each message the client sends is answered from the cassette on the read stream."""

    def __init__(self, session: Session, server: str, answers: Any) -> None:
        self._session = session
        self._server = server
        self._answers = answers  # the send side of the client's read stream

    async def send(self, item: Any, /) -> None:
        data = _wire(item)
        if data is None or "method" not in data or data["method"] in _UNKEYED_NOTIFICATIONS:
            return  # the client answering a recorded server request: the server is not there
        request = normalize(tool_request(self._server, data), "tool")
        response = self._session.serve("tool", request).response  # a miss is raised to the caller
        if "id" not in data:
            return
        for message in from_jsonable(response.get("server_messages") or []):
            await self._answers.send(_session_message(message))
        answer = from_jsonable(response.get("result"))
        await self._answers.send(_session_message({"jsonrpc": "2.0", "id": data["id"], **answer}))

    async def aclose(self) -> None:
        await self._answers.aclose()

    async def __aenter__(self) -> _ReplayWrite:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def mcp_transport(transport: Any, *, server: str) -> AsyncIterator[tuple[Any, Any]]:
    """An MCP transport that records the session's calls, or replays them without the server.

    ``transport`` is the SDK's transport, not yet entered (``stdio_client(params)``,
    ``streamable_http_client(url)``); ``server`` names the server in the cassette
    (``mcp:orders/lookup_order``). Enter it inside the cassette block: replaying, the real
    transport is never entered, so no server process is started.

    Example::

        async with cassette.mcp_transport(stdio_client(params), server="orders") as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                await mcp.call_tool("lookup_order", {"order_id": "A1001"})
    """
    session = seam_session()
    if session is None:
        async with transport as streams:
            yield streams
        return
    if session.replaying:
        import anyio  # deferred: the mcp SDK's own dependency

        answers, read = anyio.create_memory_object_stream[Any](math.inf)
        async with answers, read:  # `transport` is never entered: no server process, no connection
            yield read, _ReplayWrite(session, server, answers)
        return
    recorder = _Recorder(session, server)
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(recorder.close)
        # its connections (made by the tasks it starts as it is entered) carry what is recorded here
        with seam_connections():
            read, write = await stack.enter_async_context(transport)
        yield _RecordingRead(read, recorder), _RecordingWrite(write, recorder)
