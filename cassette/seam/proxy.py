"""The seam for clients that take only a base URL: a recording proxy on loopback.

``with cassette.proxy("https://api.example.com/v1") as url:`` serves ``url`` on 127.0.0.1 and
sends each request it receives on to the upstream through cassette's own HTTP client
(`http_client`), so it is recorded and replayed exactly as a call of an SDK given
``http_client=cassette.http_client()``; on replay the upstream is never contacted. For a
framework that builds its SDK client itself and takes only a base URL for it, or an SDK not
built on httpx, this is the one public door (docs/frameworks.md names the frameworks).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from cassette.errors import CassetteError, ProxyUpstreamError, UpstreamUnreachableError
from cassette.seam.netguard import seam_endpoint
from cassette.seam.transport import default_lib, http_client

# Meaningful for one connection only (RFC 9110 7.6.1), or set anew by the client that sends on.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# the seam hands bodies decoded: their encoding and length are the proxy's to state
RESPONSE_DROPPED = HOP_BY_HOP | {"content-encoding"}
UPSTREAM_TIMEOUT = 600.0  # seconds, as the Stainless-built SDKs wait by default
_NO_BODY = frozenset({204, 304})


class _Upstream:
    """Where the proxy sends requests, and what its calls raised (kept for the block's end)."""

    def __init__(self, upstream: str, lib: str | None, context: contextvars.Context) -> None:
        self.origin, self.base_path = _parse_upstream(upstream)
        name = lib or default_lib()
        self.transport_error: type[Exception] = importlib.import_module(name).TransportError
        self.client = http_client(name, timeout=UPSTREAM_TIMEOUT)
        self.context = context  # the block's: its session is the one every call belongs to
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()

    def failed(self, error: BaseException) -> None:
        with self._lock:
            self.errors.append(error)


def _parse_upstream(upstream: object) -> tuple[str, str]:
    """``https://host[:port]`` and the base path (``/v1`` or ``""``) of an upstream base URL."""
    parts = urlsplit(upstream) if isinstance(upstream, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProxyUpstreamError(
            f"cassette.proxy(upstream={upstream!r:.80}): not an http:// or https:// URL with a host. "
            "Pass the base URL the client is given without cassette, such as 'https://api.example.com/v1'."
        )
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


class _ProxyServer(ThreadingHTTPServer):
    block_on_close = True  # server_close() waits for every handler thread
    daemon_threads = False

    def __init__(self, upstream: _Upstream) -> None:
        self.upstream = upstream
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer's own looks its host name up (gethostbyaddr): no look-up, so none to guard
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def hang_up(self) -> None:
        """End every open connection (idle keep-alive ones too), so their threads end."""
        with self.connections_lock:
            open_now = list(self.connections)
        for conn in open_now:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up is normal; what a call raised is kept on `upstream.errors`


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked responses for streams
    disable_nagle_algorithm = True  # headers and each event go out in their own writes
    server: _ProxyServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _relay(self) -> None:
        self.server.upstream.context.copy().run(self._forward)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _relay

    def _forward(self) -> None:
        upstream = self.server.upstream
        body = self._request_body()
        target = self.path if self.path.startswith("/") else _path_of(self.path)
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        client = upstream.client
        try:
            request = client.build_request(
                self.command, upstream.origin + target, headers=headers, content=body
            )
            response = client.send(request, stream=True)
        except CassetteError as error:  # a miss, a missing blob, a record of the wrong shape
            self._refuse(error)
            return
        except upstream.transport_error as exc:
            self._refuse(
                UpstreamUnreachableError(
                    f"cassette.proxy: cannot reach the upstream {upstream.origin} to record "
                    f"{self.command} {target.partition('?')[0]} ({type(exc).__name__}: {exc}). Start it "
                    "(or fix the upstream URL), or replay the cassette: replay never contacts the upstream."
                )
            )
            return
        except Exception as exc:  # kept and raised when the block ends, never lost in this thread
            self._refuse(exc)
            return
        try:
            self._answer(response)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client hung up: what it read is recorded
        except Exception as exc:  # the response's headers are out: nothing to answer with
            upstream.failed(exc)
            self.close_connection = True
        finally:
            response.close()

    def _request_body(self) -> bytes | None:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else None

    def _answer(self, response: Any) -> None:
        self.send_response_only(response.status_code)
        for name, value in response.headers.multi_items():
            if name.lower() not in RESPONSE_DROPPED:
                self.send_header(name, value)
        if self.command == "HEAD" or response.status_code in _NO_BODY or response.status_code < 200:
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if "content-length" in response.headers:  # a whole body: sent whole, with its decoded length
            body = response.read()
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        # a stream: each chunk handed on as it arrives, so the client reads events live
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in response.iter_bytes():
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _refuse(self, error: BaseException) -> None:
        """Answer a call that failed with an error naming it (SDKs are told not to retry), and keep it."""
        self.server.upstream.failed(error)
        payload = {"type": "error", "error": {"type": type(error).__name__, "message": str(error)}}
        data = json.dumps(payload).encode()
        self.send_response_only(502)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-should-retry", "false")  # honoured by the Stainless-built SDKs
        self.end_headers()
        self.wfile.write(data)


def _path_of(target: str) -> str:
    """The path and query of an absolute request target (a client that takes us for a forward proxy)."""
    parts = urlsplit(target)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@contextlib.contextmanager
def proxy(upstream: str, *, lib: str | None = None) -> Iterator[str]:
    """A local base URL that stands in for ``upstream``: every call sent to it is recorded and
    replayed by the cassette active where the block starts, as a call through `http_client`.

    The URL keeps ``upstream``'s path (``https://api.example.com/v1`` -> ``http://127.0.0.1:PORT/v1``).
    On replay nothing reaches the upstream. A call that fails in the proxy (a `CassetteMiss`, an
    upstream it cannot reach while recording) is answered with a 502 naming the error, and the
    error is raised again when the block ends, so a client that swallows it still fails the test.
    ``lib`` is the HTTP library of the proxy's own client (default: httpx2 if installed).

    Example::

        with cassette.using("tests/cassettes/agent.json"):
            with cassette.proxy("https://api.example.com/v1") as url:
                client = SomeSDK(base_url=url)
    """
    target = _Upstream(upstream, lib, contextvars.copy_context())
    try:
        server = _ProxyServer(target)
    except BaseException:
        target.client.close()
        raise
    host, port = server.server_name, server.server_port
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="cassette-proxy", daemon=True)
    try:
        with seam_endpoint(host, port):
            thread.start()
            yield f"http://{host}:{port}{target.base_path}"
    finally:
        if thread.is_alive():
            server.shutdown()
        server.hang_up()
        server.server_close()  # joins the handler threads
        target.client.close()
        if target.errors:  # raised over the block's own error (an SDK's 502), which it then carries
            first = target.errors[0]
            if len(target.errors) > 1:
                first.add_note(f"cassette.proxy: {len(target.errors) - 1} more call(s) through it failed too")
            raise first
