"""A client that bypasses the seam is never a green test (issues 24.7 and 25.4).

Recording (``auto``/``record``): a block during which an HTTP client connected out without
going through the seam, and that recorded nothing, writes no empty cassette (which would
replay as a pass): it fails naming the client and `cassette.instrument`. One that recorded
some calls too warns, naming it. Hosts in ``[tool.cassette] allow_hosts`` are not counted.

Replaying outside pytest: ``cassette.using(..., mode="replay")`` blocks connections from its
context before any DNS query, naming the client (a framework's half-routed async path);
``network_guard=False`` lets them through. The real OpenAI SDK, httpx and the dev server.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import APIConnectionError, AsyncOpenAI, OpenAI

import cassette
from cassette import CassetteWarning, NetworkBlockedError, UnroutedClientError
from cassette.config import clear_config_cache
from cassette.seam.netguard import guard_replay
from cassette.testing.devserver import DevServer

HI = [{"role": "user", "content": "My card was charged twice"}]


def plain(devserver: DevServer) -> OpenAI:
    return OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)  # not instrumented


def routed(devserver: DevServer) -> OpenAI:
    return cassette.instrument(plain(devserver))


# --- recording -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["record", "auto"])
def test_a_recording_that_only_saw_an_unrouted_client_fails_and_writes_nothing(
    devserver: DevServer, mode: str
) -> None:
    path = Path("tests/cassettes/t.json")
    with pytest.raises(UnroutedClientError) as caught, cassette.using(path, mode=mode):
        answer = plain(devserver).chat.completions.create(model="gpt-4o-mini", messages=HI)  # type: ignore[arg-type]
    assert answer.choices[0].message.content  # the call itself went live and worked
    message = str(caught.value)
    assert "recorded no calls, but the openai client (openai -> httpx2" in message
    assert f"connected to 127.0.0.1:{devserver.port}" in message
    assert "cassette.instrument(client)" in message and "allow_hosts" in message
    assert f"{Path(__file__).name}:" in message  # where the call was made
    assert not path.exists()  # no empty cassette to replay as a pass


def test_an_unrouted_async_client_is_named_too(devserver: DevServer) -> None:
    async def run() -> None:
        client = AsyncOpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)
        async with cassette.using("t.json", mode="record"):
            await client.chat.completions.create(model="gpt-4o-mini", messages=HI)  # type: ignore[arg-type]

    with pytest.raises(
        UnroutedClientError, match=r"the openai client .*test_unrouted_clients\.py:\d+ in run"
    ):
        asyncio.run(run())
    assert not Path("t.json").exists()


def test_a_recording_that_also_saw_an_unrouted_client_warns_naming_it(devserver: DevServer) -> None:
    with pytest.warns(
        CassetteWarning, match=r"bypassed the seam.*the httpx client .*connected to 127\.0\.0\.1"
    ):
        with cassette.using("t.json", mode="record"):
            routed(devserver).chat.completions.create(model="gpt-4o-mini", messages=HI)  # type: ignore[arg-type]
            httpx.get(f"http://127.0.0.1:{devserver.port}/v1/models")
    assert len(cassette.load_cassette("t.json").interactions) == 1


def test_allowed_hosts_and_calls_inside_a_recorded_tool_are_not_counted(devserver: DevServer) -> None:
    @cassette.tool
    def lookup() -> str:  # its result is recorded: whatever it connects to is not replayed
        return str(plain(devserver).models.list().data[0].id)

    with cassette.using("tool.json", mode="record"):
        lookup()
    assert [i.kind for i in cassette.load_cassette("tool.json").interactions] == ["tool"]

    Path("pyproject.toml").write_text('[tool.cassette]\nallow_hosts = ["127.0.0.0/8"]\n')  # a test server
    clear_config_cache()
    with pytest.warns(CassetteWarning, match="recorded no calls"), cassette.using("db.json", mode="record"):
        plain(devserver).models.list()
    assert cassette.load_cassette("db.json").interactions == []


def test_a_connection_without_an_http_client_is_not_counted(devserver: DevServer) -> None:
    """A database driver or a raw socket is not an HTTP client that should have been instrumented."""
    with pytest.warns(CassetteWarning, match="recorded no calls"), cassette.using("raw.json", mode="record"):
        socket.create_connection(("127.0.0.1", devserver.port), timeout=5).close()


# --- replaying outside pytest --------------------------------------------------------------------


@pytest.fixture
def recorded(devserver: DevServer) -> Iterator[tuple[Path, OpenAI]]:
    """A one-call cassette, replayed below as a script would: without the pytest run's guard."""
    previous = guard_replay(None)
    path = Path("tests/cassettes/half.json")
    client = routed(devserver)
    with cassette.using(path, mode="record"):
        client.chat.completions.create(model="gpt-4o-mini", messages=HI)  # type: ignore[arg-type]
    try:
        yield path, client
    finally:
        guard_replay(previous)


def test_a_half_routed_client_in_a_replay_block_raises_naming_the_unrouted_client(
    recorded: tuple[Path, OpenAI],
) -> None:
    """As ``ChatOpenAI(http_client=cassette.http_client())`` with no ``http_async_client``: the sync
    path replays, the async one is a plain AsyncOpenAI aimed at the real API."""
    path, client = recorded
    looked_up: list[str] = []

    def dns(event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.getaddrinfo" and args and args[0] not in ("127.0.0.1", "localhost"):
            looked_up.append(str(args[0]))

    sys.addaudithook(dns)  # runs after the guard's hook: it sees only what the guard let through

    async def run() -> None:
        with cassette.using(path, mode="replay"):
            client.chat.completions.create(model="gpt-4o-mini", messages=HI)  # type: ignore[arg-type]
            unrouted = AsyncOpenAI(api_key="sk-test", max_retries=0)  # api.openai.com, not routed
            await unrouted.chat.completions.create(model="gpt-4o-mini", messages=HI)  # type: ignore[arg-type]

    with pytest.raises(NetworkBlockedError) as caught:
        asyncio.run(run())
    message = str(caught.value)
    assert "a DNS look-up of api.openai.com:443 through openai -> httpx2" in message
    assert "the openai client is likely un-instrumented" in message and "network_guard=False" in message
    assert looked_up == []  # blocked before the look-up: no DNS query, no packet

    async def plain_httpx() -> None:
        with cassette.using(path, mode="replay"):
            async with httpx.AsyncClient() as http:
                await http.get("https://api.example.invalid/v1/models")

    with pytest.raises(NetworkBlockedError, match=r"api\.example\.invalid:443 through httpx"):
        asyncio.run(plain_httpx())
    assert looked_up == []


def _public_address() -> str | None:
    """An address of this machine that is not loopback (connecting to it needs no DNS), if any."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # UDP: no packet is sent, the route picks the address
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.fixture
def public_server() -> Iterator[tuple[str, int, list[int]]]:
    """A one-line HTTP server on a non-loopback address of this machine, counting connections."""
    address = _public_address()
    if address is None:
        pytest.skip("no non-loopback address on this machine")
    server = socket.create_server((address, 0))
    accepted: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield address, server.getsockname()[1], accepted
    server.close()
    thread.join(5)


def test_network_guard_false_lets_a_replay_block_connect(
    recorded: tuple[Path, OpenAI], public_server: tuple[str, int, list[int]]
) -> None:
    path, _ = recorded
    address, port, accepted = public_server
    url = f"http://{address}:{port}/"

    async def get(**options: Any) -> str:
        with cassette.using(path, mode="replay", unused="off", **options):
            async with httpx.AsyncClient() as http:
                return (await http.get(url)).text

    with pytest.raises(NetworkBlockedError, match=rf"a connection to {address}:{port} through httpx"):
        asyncio.run(get())
    assert accepted == []  # refused before the SYN
    assert asyncio.run(get(network_guard=False)) == "ok"
    assert accepted == [1]

    Path("pyproject.toml").write_text("[tool.cassette]\nnetwork_guard = false\n")  # the project's switch
    clear_config_cache()
    assert asyncio.run(get()) == "ok"


def test_an_sdk_aimed_nowhere_tries_the_network_once_the_guard_is_off(recorded: tuple[Path, OpenAI]) -> None:
    path, _ = recorded

    async def run() -> None:
        with cassette.using(path, mode="replay", unused="off", network_guard=False):
            await AsyncOpenAI(
                base_url="http://api.example.invalid/v1", api_key="x", max_retries=0
            ).models.list()

    with pytest.raises(APIConnectionError):  # it went for the network (and found no such host)
        asyncio.run(run())
