"""The network guard: while replaying, no connection may leave the machine.

Built on ``sys.addaudithook`` (PEP 578), not on patching ``socket``: CPython raises
the ``socket.connect``, ``socket.getaddrinfo``, ``socket.gethostbyname`` and
``socket.sendto`` audit events *before* the system call, so an exception raised
here means no DNS query and no SYN packet is ever sent. The hook is installed once
per process and costs one global read per audit event while no guard is armed.

Two ways to arm it:

- ``with block_network():`` around any block (plain tests, scripts);
- ``guard_replay(policy)`` (used by the pytest plugin): block whenever a
  replaying `Session` is active, so ``@cassette.use`` blocks are covered too.
"""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import socket
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from cassette.errors import CassetteError

_EVENTS = frozenset(
    {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "socket.sendto"}
)
_LIBRARY_DIRS = tuple(
    {
        sysconfig.get_paths()[k]
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
        if k in sysconfig.get_paths()
    }
)
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
# Frames of these packages say which client opened the connection (outermost wins in the message).
_CLIENT_PACKAGES = (
    "openai",
    "anthropic",
    "google",
    "mistralai",
    "cohere",
    "litellm",
    "langchain_openai",
    "langchain_anthropic",
    "boto3",
    "botocore",
    "requests",
    "aiohttp",
    "urllib3",
    "httpx2",
    "httpx",
    "httpcore",
    "urllib",
    "http",
    "websockets",
    "grpc",
)


class NetworkBlockedError(CassetteError):
    """A connection was attempted while the network guard was on (replay makes no connection)."""

    def __init__(
        self, message: str, *, host: str, port: int | None = None, path: str | None = None, hint: str = ""
    ) -> None:
        super().__init__(message, path=path)
        self.host = host
        self.port = port
        self.hint = hint  # how to turn the traffic off, when a plugin knows (cassette_network_hint)


@dataclass(frozen=True)
class NetworkPolicy:
    """What the guard lets through: loopback (the local devserver) and listed hosts.

    ``allow_hosts`` entries are host names (``api.example.com``), shell patterns
    (``*.internal``), IP addresses or networks (``10.0.0.0/8``).
    """

    allow_loopback: bool = True
    allow_hosts: tuple[str, ...] = ()
    reason: str = "the network guard is on"
    # IPs that allowed host names resolved to, so the connect that follows a lookup passes too
    resolved: set[str] = field(default_factory=set, compare=False, hash=False)
    # a sentence for the message, from the host and the top-level packages on the stack (outermost
    # first), such as the switch that turns a library's own traffic off
    hint: Callable[[str, tuple[str, ...]], str | None] | None = field(default=None, compare=False)

    def allows(self, host: str) -> bool:
        if host in self.resolved or any(_matches(host, pattern) for pattern in self.allow_hosts):
            return True
        return self.allow_loopback and _is_loopback(host)


_lock = threading.Lock()
_installed = False
_armed = False  # read first on every audit event: the only cost while nothing is guarded
_explicit: list[NetworkPolicy] = []  # block_network() blocks, innermost last
_replay_policy: NetworkPolicy | None = None
_blocked: list[NetworkBlockedError] = []
_run_policy: NetworkPolicy | None = None  # guard_run(): also while no replaying session is active
_outside: list[NetworkBlockedError] = []  # what the run policy blocked
_busy = threading.local()  # our own look-ups inside the hook must not re-enter it


def _install() -> None:
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True


def _rearm() -> None:
    global _armed
    _armed = bool(_explicit) or _replay_policy is not None or _run_policy is not None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _armed or event not in _EVENTS:
        return
    if getattr(_busy, "active", False):
        return
    _check(event, args)


def _check(event: str, args: tuple[Any, ...]) -> None:
    policy, what = _active_policy()
    if policy is None:
        return
    target = _target(event, args)
    if target is None:
        return
    host, port = target
    if policy.allows(host):
        if event in ("socket.getaddrinfo", "socket.gethostbyname") and not _is_loopback(host):
            _remember_addresses(policy, host)
        return
    error = _blocked_error(host, port, event, what or policy.reason, sys._getframe(2), policy.hint)
    if what is not None:  # the replay guard: kept so the test fails even if the error is swallowed
        with _lock:
            (_outside if policy is _run_policy else _blocked).append(error)
    raise error


def _active_policy() -> tuple[NetworkPolicy | None, str | None]:
    if _explicit:
        return _explicit[-1], None
    if _replay_policy is not None:
        from cassette.seam.session import _active, _current

        session = _current.get()
        if session is None:  # a thread without the session's context: any active replay counts
            session = next((s for s in list(_active) if s.replaying), None)
        if session is not None and session.replaying:
            return _replay_policy, f"replaying cassette {session.path}"
    if _run_policy is not None:
        return _run_policy, _run_policy.reason
    return None, None


def _target(event: str, args: tuple[Any, ...]) -> tuple[str, int | None] | None:
    if event in ("socket.connect", "socket.sendto"):
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
            return None  # unix sockets and friends never leave the machine
        if not isinstance(address, tuple) or not address:
            return None
        return _host(address[0]), address[1] if len(address) > 1 else None
    host = args[0] if args else None
    if host is None:
        return None  # getaddrinfo(None, port) is the local wildcard
    port = args[1] if event == "socket.getaddrinfo" and len(args) > 1 else None
    return _host(host), port if isinstance(port, int) else None


def _host(raw: Any) -> str:
    host = raw.decode("idna", "replace") if isinstance(raw, bytes) else str(raw)
    host = host.strip("[]").rstrip(".").lower()
    return host.split("%", 1)[0]  # IPv6 zone id


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES or host.endswith(".localhost") or host == "":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def host_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` can never match a host (an allow-list entry), or ``None`` if it is usable.

    Usable: a host name (``vault.internal``), a glob (``*.internal``), an IP address, or an IP
    network in CIDR form (``10.0.0.0/8``).

    Example::

        host_pattern_problem("http://example.com")  # "is a URL: give its host alone (example.com)"
    """
    text = pattern.strip()
    if not text:
        return "is empty"
    if "://" in text:
        host = text.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
        return f"is a URL: give its host alone ({host or 'example.com'})"
    if any(ch.isspace() for ch in text) or "\x00" in text:
        return "holds spaces or a NUL byte"
    if "/" in text:
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            return "is neither a host name nor an IP network (CIDR such as 10.0.0.0/8)"
        return None
    if ":" in text:
        try:
            ipaddress.ip_address(text.strip("[]"))
        except ValueError:
            return "holds a port or a scheme: give the host alone (a connection to any port is allowed)"
    return None


def _matches(host: str, pattern: str) -> bool:
    pattern = pattern.strip().lower().rstrip(".")
    if "/" in pattern:
        try:
            return ipaddress.ip_address(host) in ipaddress.ip_network(pattern, strict=False)
        except ValueError:
            return False
    if ":" in pattern:  # an IPv6 address, bracketed or not, in any of its spellings ([::1], 0::1)
        try:
            return ipaddress.ip_address(host) == ipaddress.ip_address(pattern.strip("[]"))
        except ValueError:
            return False
    return host == pattern or fnmatch.fnmatchcase(host, pattern)


def _remember_addresses(policy: NetworkPolicy, host: str) -> None:
    _busy.active = True
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return
    finally:
        _busy.active = False
    policy.resolved.update(_host(info[4][0]) for info in infos)


def _is_library(filename: str) -> bool:
    return filename.startswith(_LIBRARY_DIRS) or filename.startswith("<")


def _client_chain(frame: FrameType | None) -> tuple[list[str], str | None]:
    """Client packages on the stack (outermost first) and the innermost caller outside any library."""
    chain: list[str] = []
    caller: str | None = None
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        top = module.split(".", 1)[0]
        if top in _CLIENT_PACKAGES:
            if top not in chain:
                chain.insert(0, top)
        elif caller is None and top != "cassette" and not _is_library(frame.f_code.co_filename):
            caller = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return chain, caller


def _packages(frame: FrameType | None) -> tuple[str, ...]:
    tops: list[str] = []
    while frame is not None:
        top = str(frame.f_globals.get("__name__", "")).split(".", 1)[0]
        if top not in tops:
            tops.insert(0, top)
        frame = frame.f_back
    return tuple(tops)


def _blocked_error(
    host: str,
    port: int | None,
    event: str,
    reason: str,
    frame: FrameType | None,
    hint: Callable[[str, tuple[str, ...]], str | None] | None = None,
) -> NetworkBlockedError:
    said = hint(host, _packages(frame)) if hint is not None else None
    chain, caller = _client_chain(frame)
    where = f"{host}:{port}" if port else host
    lookup = event in ("socket.getaddrinfo", "socket.gethostbyname") and not _is_ip(host)
    action = "a DNS look-up of" if lookup else "a connection to"
    via = f" through {' -> '.join(chain)}" if chain else ""
    origin = f" from {caller}" if caller else ""
    likely = f"the {chain[0]} client" if chain else "the code that opened it"
    message = (
        f"network blocked: {action} {where}{via}{origin} ({reason}). {said + ' ' if said else ''}"
        "It did not go through the "
        f"cassette seam, so {likely} is likely un-instrumented: wrap it with "
        "cassette.instrument(client), or build it with http_client=cassette.http_client(). "
        f"If this host is meant to be reached, allow it with --cassette-allow-host={host} "
        f'or [tool.cassette] allow_hosts = ["{host}"].'
    )
    return NetworkBlockedError(message, host=host, port=port, hint=said or "")


@contextlib.contextmanager
def block_network(allow_loopback: bool = False, allow_hosts: Iterable[str] = ()) -> Iterator[NetworkPolicy]:
    """Make any connection (and DNS look-up) from this process raise `NetworkBlockedError`.

    Loopback is blocked too unless ``allow_loopback``; ``allow_hosts`` lists
    exceptions (names, ``*.patterns``, IPs, CIDR networks). Process-wide while
    active, so threads started inside are covered.

    Example::

        with block_network():
            with cassette.using("tests/cassettes/triage.json", mode="replay"):
                agent.run("My card was charged twice")  # proves replay needs no network
    """
    policy = NetworkPolicy(allow_loopback=allow_loopback, allow_hosts=tuple(allow_hosts))
    _install()
    with _lock:
        _explicit.append(policy)
        _rearm()
    try:
        yield policy
    finally:
        with _lock:
            _explicit.remove(policy)
            _rearm()


def guard_replay(policy: NetworkPolicy | None) -> NetworkPolicy | None:
    """Block the network whenever a replaying session is active; returns the policy it replaces.

    ``None`` turns this off. The pytest plugin sets it for the run and swaps in a
    per-test policy where a marker asks for one.

    Example::

        previous = guard_replay(NetworkPolicy(allow_hosts=("vault.internal",)))
        ...
        guard_replay(previous)
    """
    global _replay_policy
    if policy is not None:
        _install()
    with _lock:
        previous, _replay_policy = _replay_policy, policy
        _rearm()
    return previous


def guard_run(policy: NetworkPolicy | None) -> NetworkPolicy | None:
    """Also block while no replaying session is active (a whole replaying run, its exit included).

    Returns the policy it replaces; ``None`` turns this off. What it blocks is kept for
    `take_blocked_outside` (a library's own background traffic, not a test's).

    Example::

        previous = guard_run(NetworkPolicy(reason="the run replays"))
        ...
        guard_run(previous)
    """
    global _run_policy
    if policy is not None:
        _install()
    with _lock:
        previous, _run_policy = _run_policy, policy
        _rearm()
    return previous


def take_blocked_outside() -> list[NetworkBlockedError]:
    """What `guard_run`'s policy blocked since the last call (outside any replaying session)."""
    with _lock:
        found = list(_outside)
        _outside.clear()
    return found


def take_blocked() -> list[NetworkBlockedError]:
    """The attempts blocked since the last call (so a swallowed block still fails the test)."""
    with _lock:
        found = list(_blocked)
        _blocked.clear()
    return found
