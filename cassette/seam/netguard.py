"""The network guard: while replaying, no connection may leave the machine.

Built on ``sys.addaudithook`` (PEP 578), not on patching ``socket``: CPython raises
the ``socket.connect``, ``socket.getaddrinfo``, ``socket.gethostbyname`` and
``socket.sendto`` audit events *before* the system call, so an exception raised
here means no DNS query and no SYN packet is ever sent. The hook is installed once
per process and costs one global read per audit event while no guard is armed.

Three ways to arm it:

- ``with block_network():`` around any block (plain tests, scripts);
- ``guard_replay(policy)`` (used by the pytest plugin): block whenever a
  replaying `Session` is active, so ``@cassette.use`` blocks are covered too;
- a replaying session with its own policy (``cassette.using(..., mode="replay")``
  guards its context by default, outside pytest too; see `watch`).

The same hook watches recordings: a connection an HTTP client opens during a
recording, outside any call going through the seam, is noted on the session
(`Session.unrouted`), which fails or warns when it ends.
"""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import socket
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from cassette.errors import CassetteError, NetworkBlockedError
from cassette.plugins.manager import get_plugin_manager

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
# Frames of the packages the `cassette_client_packages` hook names say which client opened the
# connection (outermost wins in the message); read once per plugin manager.
_client_packages: tuple[Any, frozenset[str]] | None = None


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
_watching = 0  # sessions the hook serves: recordings (noting unrouted clients), self-guarded replays
_blocked: list[NetworkBlockedError] = []
_run_policy: NetworkPolicy | None = None  # guard_run(): also while no replaying session is active
_outside: list[NetworkBlockedError] = []  # what the run policy blocked
_busy = threading.local()  # our own look-ups inside the hook must not re-enter it
_seam_endpoints: set[tuple[str, int]] = set()  # loopback addresses the seam serves (`cassette.proxy`)


def _install() -> None:
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True


def _rearm() -> None:
    global _armed
    _armed = bool(_explicit) or _replay_policy is not None or _run_policy is not None or _watching > 0


@dataclass
class _Sessions:
    """What the guard asks of the sessions (`cassette.seam.session` registers them, `register_sessions`)."""

    replaying: Callable[[], Any] = lambda: None  # the replaying session a connection here belongs to
    recording: Callable[[], Any] = lambda: None  # the recording session a connection here belongs to
    routing: Callable[[], bool] = lambda: False  # whether a call through the seam is in flight here


_sessions = _Sessions()


def register_sessions(
    replaying: Callable[[], Any], recording: Callable[[], Any], routing: Callable[[], bool]
) -> None:
    """Tell the guard how to find the session a connection belongs to (the session module does,
    once): the guard sits below the sessions and never imports them.

    Example::

        register_sessions(replaying_session, recording_session, routing)
    """
    global _sessions
    _sessions = _Sessions(replaying, recording, routing)


def watch(on: bool) -> None:
    """A session starts (``True``) or stops (``False``) needing the hook: a recording, whose unrouted
    connections are noted, or a replay guarding itself with its ``guard`` policy."""
    global _watching
    if on:
        _install()
        client_packages()  # asked now, not first inside the audit hook
    with _lock:
        _watching += 1 if on else -1
        _rearm()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _armed or event not in _EVENTS:
        return
    if getattr(_busy, "active", False):
        return
    _check(event, args)


def _check(event: str, args: tuple[Any, ...]) -> None:
    if _seam_endpoints and _target(event, args) in _seam_endpoints:
        return  # a client reaching the seam itself: what the seam sends on is checked on its own
    policy, what, owner = _active_policy()
    run_wide = policy is not None and policy is _run_policy  # now: the run's guard may be replaced meanwhile
    if policy is None:
        if _watching and event == "socket.connect":
            _observe(args, sys._getframe(2))
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
    if owner is not None:  # a block guarding itself: it fails on the error when it ends, if swallowed
        owner.blocked.append(error)
    elif what is not None:  # the run's guard: kept so the test fails even if the error is swallowed
        with _lock:
            (_outside if run_wide else _blocked).append(error)
    raise error


def _active_policy() -> tuple[NetworkPolicy | None, str | None, Any]:
    """The policy in force here, the reason a refusal gives, and the replaying session guarding
    itself (`cassette.using`), to which a refusal belongs, if one does."""
    if _explicit:
        return _explicit[-1], None, None
    if _replay_policy is None and not _watching and _run_policy is None:
        return None, None, None
    session = _sessions.replaying()
    if session is None or not session.replaying or session.network_guard is False:
        # no replaying block here: a whole replaying run's guard (its exit included), if on
        return (_run_policy, _run_policy.reason, None) if _run_policy is not None else (None, None, None)
    owner = session if session.guard is not None else None
    if _replay_policy is not None:  # the run's (pytest): its allowed hosts and switches
        return _replay_policy, f"replaying cassette {session.path}", owner
    if session.guard is None:
        return None, None, None
    return session.guard, session.guard.reason, owner  # the block's own


@dataclass(frozen=True)
class UnroutedConnection:
    """A connection an HTTP client opened during a recording without going through the seam."""

    host: str
    port: int | None
    clients: tuple[str, ...]  # the client packages on its stack, outermost first
    caller: str | None

    def describe(self) -> str:
        """``"the acme client (acme -> httpx2) connected to 127.0.0.1:8000 from app.py:12 in main"``"""
        where = f"{self.host}:{self.port}" if self.port else self.host
        via = f" ({' -> '.join(self.clients)})" if len(self.clients) > 1 else ""
        origin = f" from {self.caller}" if self.caller else ""
        return f"the {self.clients[0]} client{via} connected to {where}{origin}"


def _observe(args: tuple[Any, ...], frame: FrameType | None) -> None:
    """Note on the recording session a connection no seam call made (allowed hosts are not counted)."""
    session = _sessions.recording()
    if session is None or _sessions.routing():
        return
    target = _target("socket.connect", args)
    if target is None or session.watch_policy is None or session.watch_policy.allows(target[0]):
        return
    chain, caller = _client_chain(frame)
    if not chain:
        chain, caller = _awaiting_client(caller)
    if not chain:
        return  # no HTTP client on the stack (a database driver): not ours to judge
    session.note_unrouted(UnroutedConnection(target[0], target[1], tuple(chain), caller))


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
    if isinstance(raw, bytes):
        try:
            host = raw.decode("idna")
        except UnicodeError:  # not a valid IDNA name: shown as its bytes read
            host = raw.decode("latin-1")
    else:
        host = str(raw)
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


def client_packages() -> frozenset[str]:
    """The top-level packages whose frames name a client: every ``cassette_client_packages`` answer.

    Example::

        "httpx" in client_packages()
    """
    global _client_packages
    try:
        pm = get_plugin_manager()
    except CassetteError:  # a broken plugin config is reported where it is used; name no client
        return frozenset()
    known = _client_packages
    if known is None or known[0] is not pm:
        names = frozenset(name for batch in pm.hook.cassette_client_packages() for name in batch or ())
        known = _client_packages = (pm, names)
    return known[1]


def _client_chain(
    frame: FrameType | None, *, frames: list[FrameType] | None = None
) -> tuple[list[str], str | None]:
    """Client packages on the stack (outermost first) and the innermost caller outside any library.

    ``frames`` (oldest first, a suspended task's) is walked instead of ``frame``'s callers.
    """
    packages = client_packages()
    chain: list[str] = []
    caller: str | None = None
    walk = iter(reversed(frames)) if frames is not None else None
    if walk is not None:
        frame = next(walk, None)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        top = module.split(".", 1)[0]
        if top in packages:
            if top not in chain:
                chain.insert(0, top)
        elif caller is None and top != "cassette" and not _is_library(frame.f_code.co_filename):
            caller = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = next(walk, None) if walk is not None else frame.f_back
    return chain, caller


def _awaiting_client(caller: str | None) -> tuple[list[str], str | None]:
    """For a connection or look-up made off the caller's stack (anyio opens sockets in a task group
    of its own, and resolves names in a worker thread): the client packages and caller of the
    asyncio task awaiting a socket being opened, in any event loop of the process."""
    import asyncio

    try:
        current = asyncio.current_task()
    except RuntimeError:  # no event loop in this thread
        current = None
    for loop in _event_loops():
        try:
            tasks = asyncio.all_tasks(loop)
        except RuntimeError:  # the set changed while it was read (another thread): try the next
            continue
        for task in tasks:
            if task is current:
                continue
            coro = task.get_coro()
            for _ in range(100):  # a look-up handed to a worker thread can start before its task yields
                if current is not None or not getattr(coro, "cr_running", False):
                    break
                time.sleep(0.001)  # (a message's detail, waited for at most 0.1 s, only when blocking)
            frames = _awaiting_frames(coro)
            modules = [str(f.f_globals.get("__name__", "")) for f in frames]
            if not any(m.startswith(("anyio._core._sockets", "asyncio.base_events")) for m in modules):
                continue
            chain, found = _client_chain(None, frames=frames)
            if chain:
                return chain, found or caller
    return [], caller


def _event_loops() -> list[Any]:
    """This thread's running event loop, then those other threads are running (seen on their stacks)."""
    import asyncio

    loops: list[Any] = []
    try:
        loops.append(asyncio.get_running_loop())
    except RuntimeError:
        pass
    for frame in sys._current_frames().values():  # a look at other threads' stacks, for a message only
        while frame is not None:
            loop = frame.f_locals.get("self") if frame.f_code.co_name == "run_forever" else None
            if isinstance(loop, asyncio.AbstractEventLoop) and loop not in loops:
                loops.append(loop)
            frame = frame.f_back  # type: ignore[assignment]
    return loops


def _awaiting_frames(coro: Any) -> list[FrameType]:
    """The frames of a suspended coroutine and of everything it awaits, oldest first."""
    import gc
    import inspect

    frames: list[FrameType] = []
    while coro is not None and len(frames) < 500:
        if not (inspect.iscoroutine(coro) or inspect.isgenerator(coro) or inspect.isasyncgen(coro)):
            # what a coroutine's __await__ returns (an SDK's awaitable paginator): its coroutine
            inner = [r for r in gc.get_referents(coro) if inspect.iscoroutine(r) or inspect.isgenerator(r)]
            coro = inner[0] if inner else None
            continue
        frame = (
            getattr(coro, "cr_frame", None)
            or getattr(coro, "gi_frame", None)
            or getattr(coro, "ag_frame", None)
        )
        if frame is not None:
            frames.append(frame)
        coro = (
            getattr(coro, "cr_await", None)
            or getattr(coro, "gi_yieldfrom", None)
            or getattr(coro, "ag_await", None)
        )
    return frames


def _packages(frame: FrameType | None) -> tuple[str, ...]:
    """The top-level packages on the stack, outermost first (what a `cassette_network_hint` reads)."""
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
    if not chain:
        chain, caller = _awaiting_client(caller)
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
def seam_endpoint(host: str, port: int) -> Iterator[None]:
    """Connections to ``host:port`` (a loopback address the seam serves in this process) are the
    seam's own while the block runs: never blocked, never counted as an unrouted client.

    Example::

        with seam_endpoint("127.0.0.1", server.server_port):
            ...  # clients given the proxy's URL connect to it
    """
    _install()
    with _lock:
        _seam_endpoints.add((host, port))
    try:
        yield
    finally:
        with _lock:
            _seam_endpoints.discard((host, port))


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
