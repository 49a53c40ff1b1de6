"""The active session: modes, the seam every call goes through, matching, and saving.

A `Session` is found through a context variable (asyncio tasks inherit it). Calls
from threads started inside a session, which do not inherit context variables,
fall back to the only active session of the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import os
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from cassette.config import MODES, Config, env_mode, load_config
from cassette.core.canonical import request_key
from cassette.core.diff import field_diff, flatten, format_diff
from cassette.core.model import Cassette, Interaction
from cassette.core.paths import resolve_path
from cassette.errors import (
    AmbiguousSessionError,
    CassetteConfigError,
    CassetteError,
    CassetteIOError,
    CassetteMiss,
    CassetteOrderError,
    CassetteShapeError,
    CassetteUnusedError,
    CassetteWarning,
    NotRegularFileError,
    UnknownModeError,
    UnroutedClientError,
)
from cassette.plugins.manager import get_plugin_manager, tokens_of
from cassette.seam import netguard
from cassette.seam.matching import wildcard_match
from cassette.seam.redaction import redacted
from cassette.secrets.masking import masked_diff, masked_text
from cassette.secrets.placeholders import placeholder_pattern, redacted_key, removed_values, spread_redactions
from cassette.secrets.rules import rules_from_plugins
from cassette.store.blobs import BlobStore, default_store_for
from cassette.store.cassettes import load_cassette, save_cassette, stored_compressed
from cassette.store.files import not_writable_error, refuse_special
from cassette.store.refs import check_refs


class Mode(StrEnum):
    """How a session treats calls.

    - ``auto``: replay if the cassette exists, else record it.
    - ``record``: always call live and overwrite the cassette.
    - ``replay``: never call live; an unrecorded call raises `CassetteMiss`.
    - ``rerecord``: call live, keep the committed cassette, write ``<name>.pending.json``
      beside it and report the drift.
    """

    AUTO = "auto"
    RECORD = "record"
    REPLAY = "replay"
    RERECORD = "rerecord"


def parse_mode(value: str | Mode, *, source: str = "mode") -> Mode:
    """A `Mode` from its name; an unknown name raises at once (never falls back to recording)."""
    if isinstance(value, Mode):
        return value
    name = str(value).strip().lower()
    if name not in MODES:
        raise UnknownModeError(
            f"unknown cassette mode {value!r} (from {source}); use one of: {', '.join(MODES)}."
        )
    return Mode(name)


def resolve_mode(mode: str | Mode | None, config: Config) -> Mode:
    """``CASSETTE_MODE`` beats the argument, which beats ``[tool.cassette] mode``."""
    from_env = env_mode()
    if from_env is not None:
        return parse_mode(from_env, source="the CASSETTE_MODE environment variable")
    if mode is not None:
        return parse_mode(mode)
    return parse_mode(config.mode, source="[tool.cassette] mode")


def pending_path(path: Path) -> Path:
    """Where a ``rerecord`` keeps its new recording: ``triage.json`` → ``triage.pending.json``."""
    return path.with_name(path.stem + ".pending" + path.suffix)


def failed_path(path: Path) -> Path:
    """Where a recording whose block raised is kept: ``triage.json`` → ``triage.failed.json``."""
    return path.with_name(path.stem + ".failed" + path.suffix)


_current: contextvars.ContextVar[Session | None] = contextvars.ContextVar("cassette_session", default=None)
_last: contextvars.ContextVar[Session | None] = contextvars.ContextVar("cassette_last_session", default=None)
_active: list[Session] = []
_active_lock = threading.Lock()


def current_session() -> Session | None:
    """The session this call belongs to, or ``None`` (calls then pass straight through)."""
    session = _current.get()
    if session is not None or not _active:
        return session
    with _active_lock:
        if len(_active) == 1:
            return _active[0]
        if not _active:
            return None
        paths = ", ".join(str(s.path) for s in _active)
    raise AmbiguousSessionError(
        f"a call came from a thread that carries no cassette context while {len(_active)} sessions "
        f"are active ({paths}). Start the thread with contextvars.copy_context().run(...) "
        "so it belongs to one of them."
    )


TRACE_ENV = "CASSETTE_TRACE"
# Where a call outside any cassette goes, and whether it goes there now: `set_fallback` (cassette.seam.trace
# registers its trace sessions); CASSETTE_TRACE in the environment turns the fallback on too.
_fallback: Callable[[], Session | None] | None = None
_fallback_on = False


def set_fallback(find: Callable[[], Session | None] | None, *, on: bool) -> None:
    """Send calls made outside any cassette to the session ``find()`` returns, while ``on`` (or while
    ``CASSETTE_TRACE`` is set). `cassette.trace` registers itself so; ``find=None`` removes it.

    Example::

        set_fallback(trace_session, on=True)  # a trace was opened
    """
    global _fallback, _fallback_on
    _fallback, _fallback_on = find, on


def seam_session() -> Session | None:
    """Where the seam sends a call: the active session, else (when tracing) a pass-through trace session."""
    session = _current.get()  # read first: this runs for every call, `current_session` only when unset
    if session is not None:
        return session
    session = current_session()
    if session is None and _fallback is not None and (_fallback_on or TRACE_ENV in os.environ):
        return _fallback()
    return session


# How a finished rerecord is compared with the cassette it replaces: `cassette.review.drift` registers
# its comparison (the seam does not know what a change is).
_compare: Callable[[Cassette, Cassette], list[Any]] | None = None


def set_rerecord_review(compare: Callable[[Cassette, Cassette], list[Any]] | None) -> None:
    """Compare each finished rerecord with what it replaces by ``compare(old, new)``: its result is
    the session's ``drift``. `cassette.review.drift` registers itself so.

    Example::

        set_rerecord_review(diff_cassettes)
    """
    global _compare
    _compare = compare


# The call going through the seam in this context (its slot, while it is in flight): a connection
# made meanwhile is the seam's own, or a recorded tool's. Set when a call begins; asyncio tasks
# started during it (anyio opens sockets in a task group) inherit it.
_seam_call: contextvars.ContextVar[Slot | None] = contextvars.ContextVar("cassette_seam_call", default=None)


def routing() -> bool:
    """Whether this context is inside a call going through the seam (recorded, or a tool's)."""
    slot = _seam_call.get()
    while slot is not None and (slot.done or slot.cancelled):
        slot = slot.outer
    return slot is not None


def store_for(path: Path, config: Config) -> Path:
    """The blob store a cassette at ``path`` uses when no ``store=`` is given: the configured store,
    or the project's, for a cassette under the cassette directory; else the nearest ``.blobs``.

    Example::

        store_for(Path("tests/cassettes/test_agent/test_refund.json"), load_config())
    """
    if config.store or _is_within(path, config.cassette_root()):
        return config.store_path()
    return default_store_for(path)


@contextlib.contextmanager
def seam_connections() -> Iterator[None]:
    """Connections made in this block (and in tasks started in it) are the seam's own: a transport
    whose traffic the seam records above the socket (an MCP server's) is not an unrouted client.

    Example::

        with seam_connections():
            streams = await stack.enter_async_context(transport)
    """
    token = _seam_call.set(Slot("tool", "", {}))  # never finished: in flight for the whole block
    try:
        yield
    finally:
        try:
            _seam_call.reset(token)
        except ValueError:  # ended in another context
            _seam_call.set(None)


def replaying_session() -> Session | None:
    """The replaying session a connection made here belongs to: this context's, else any active one."""
    session = _current.get()
    if session is None:  # a thread without the session's context: any active replay counts
        session = next((s for s in list(_active) if s.replaying), None)
    return session


def recording_session() -> Session | None:
    """The recording session a connection made here belongs to: this context's, else the only one."""
    session = _current.get()
    if session is None:
        with _active_lock:
            recording = [s for s in _active if not s.replaying]
        session = recording[0] if len(recording) == 1 else None
    return session if session is not None and not session.replaying else None


def last_session() -> Session | None:
    """The session that most recently finished in this context (for `cassette.drift()`)."""
    return _last.get()


@dataclass
class RunStats:
    """Counters over every session of the process (the pytest summary reads them)."""

    replayed: int = 0
    recorded: int = 0
    rerecorded: int = 0
    failed: int = 0  # recordings whose test failed: kept as <name>.failed.json
    missed: int = 0  # replays that met a call the cassette has no recording of
    drifted: int = 0
    served: dict[str, int] = field(default_factory=dict)
    recorded_calls: dict[str, int] = field(default_factory=dict)
    tokens_saved: int = 0
    cassettes_used: set[str] = field(default_factory=set)
    # category -> the cassette files counted in it (tests sharing one file count it once)
    files: dict[str, set[str]] = field(default_factory=dict)

    def merge(self, other: dict[str, Any]) -> None:
        self.replayed += other["replayed"]
        self.recorded += other["recorded"]
        self.rerecorded += other["rerecorded"]
        self.failed += other.get("failed", 0)
        self.missed += other.get("missed", 0)
        for what, paths in other.get("files", {}).items():
            self.files.setdefault(what, set()).update(paths)
        self.drifted += other["drifted"]
        self.tokens_saved += other["tokens_saved"]
        for k, v in other["served"].items():
            self.served[k] = self.served.get(k, 0) + v
        for k, v in other["recorded_calls"].items():
            self.recorded_calls[k] = self.recorded_calls.get(k, 0) + v
        self.cassettes_used.update(other["cassettes_used"])

    def to_json(self) -> dict[str, Any]:
        return {
            "replayed": self.replayed,
            "recorded": self.recorded,
            "rerecorded": self.rerecorded,
            "failed": self.failed,
            "missed": self.missed,
            "drifted": self.drifted,
            "served": dict(self.served),
            "recorded_calls": dict(self.recorded_calls),
            "tokens_saved": self.tokens_saved,
            "cassettes_used": sorted(self.cassettes_used),
            "files": {what: sorted(paths) for what, paths in self.files.items()},
        }

    def cassettes(self, what: str) -> int:
        """How many cassette files were counted as ``what`` (``replayed``, ``recorded``, ...)."""
        return len(self.files.get(what, ())) or getattr(self, what)


run_stats = RunStats()
_stats_lock = threading.Lock()


def _exists(path: Path) -> bool:
    """Whether a cassette is at ``path``; a path no file can have (a name too long) is a `CassetteIOError`."""
    try:
        return path.exists()
    except OSError as exc:  # pathlib answers False only for "no such file" and a symlink loop
        raise CassetteIOError(
            f"cannot use the cassette path {str(path.absolute())!r:.300}: {exc.strerror or exc}. "
            "Choose a shorter (or valid) path for the cassette.",
            path=path,
        ) from None


def _index(keys: list[str]) -> dict[str, int | list[int]]:
    """Match key -> the position of its interaction, or the positions of several, last first."""
    index: dict[str, int | list[int]] = dict(zip(keys, range(len(keys))))
    if len(index) < len(keys):  # some call was made more than once: those keys get a list
        seen: dict[str, list[int]] = {}
        for pos in range(len(keys) - 1, -1, -1):
            seen.setdefault(keys[pos], []).append(pos)
        index.update((key, positions) for key, positions in seen.items() if len(positions) > 1)
    return index


class Slot:
    """A call being recorded: its place in the order is fixed when it starts."""

    __slots__ = (
        "_build",
        "_landed",
        "_response",
        "cancelled",
        "done",
        "key",
        "kind",
        "outer",
        "parallel",
        "partial",
        "request",
    )

    def __init__(self, kind: str, key: str, request: dict[str, Any]) -> None:
        self.kind = kind
        self.key = key
        self.request = request
        self._response: dict[str, Any] | None = None
        self._build: Callable[[], dict[str, Any]] | None = None
        self.done = False
        self.cancelled = False
        # what a stream still in progress has received, asked for only if the session ends first
        self.partial: Callable[[], dict[str, Any]] | None = None
        # in flight at once with a call from another thread or task (asyncio.gather, a thread pool):
        # the order it reached the seam in was the scheduler's, not the agent's
        self.parallel = False
        self._landed: Callable[[Slot], None] | None = None  # tells the session it is no longer in flight
        self.outer: Slot | None = None  # the call this one runs inside (a tool calling a model), if any

    def _land(self) -> None:
        landed, self._landed = self._landed, None
        if landed is not None:
            landed(self)

    @property
    def response(self) -> dict[str, Any] | None:
        build = self._build
        if build is not None:  # parsed on first use (the save), not while the caller parses it too
            self._response = build()
            self._build = None
        return self._response

    def update(self, response: dict[str, Any]) -> None:
        """Keep what has been received so far (a stream in progress)."""
        self._response, self._build = response, None

    def finish(self, response: dict[str, Any]) -> None:
        self._response, self._build = response, None
        self.done = True
        self._land()

    def finish_later(self, build: Callable[[], dict[str, Any]]) -> None:
        """The call is complete; ``build()`` makes its record when it is first needed.

        A live body is handed to the caller as the very bytes it arrived in; parsing it
        for the cassette at once would hold a second parsed copy while the SDK parses
        its own (a 50 MB answer would cost 50 MB more at the call's peak).
        """
        self._response, self._build = None, build
        self.done = True
        self._land()

    def cancel(self) -> None:
        """The call never produced a response (connection error): it is not recorded."""
        self.cancelled = True
        self._land()

    @contextlib.contextmanager
    def cancelled_on_error(self) -> Iterator[None]:
        """Around the call that makes the response: one that raises (or is cancelled) cancels the slot.

        Example::

            with slot.cancelled_on_error():
                response = perform()
            slot.finish(response)
        """
        try:
            yield
        except BaseException:
            self.cancel()
            raise


class Session:
    """One cassette in use. Prefer `cassette.use` / `cassette.using` to building one.

    Example::

        with Session("tests/cassettes/triage.json", mode="replay") as session:
            ...
        session.stats()
    """

    def __init__(
        self,
        path: str | Path,
        mode: str | Mode | None = None,
        *,
        store: str | Path | None = None,
        check_order: str | bool | None = None,
        unused: str | None = None,
        blob_threshold: int | None = None,
        compress: bool | None = None,
        config: Config | None = None,
        shared: tuple[str, frozenset[str]] | None = None,
        network_guard: bool | None = None,
    ) -> None:
        self.config = config or load_config()
        options = _resolve_options(
            self.config,
            path,
            mode,
            store=store,
            check_order=check_order,
            unused=unused,
            blob_threshold=blob_threshold,
            compress=compress,
            network_guard=network_guard,
        )
        # replay: True blocks connections from this block's context itself; False lets them through
        # (the pytest run's guard too); None leaves it to the run's guard, if one is set
        self.network_guard = network_guard
        self.guard: netguard.NetworkPolicy | None = None  # replay: this block's own policy, while it runs
        self.watch_policy: netguard.NetworkPolicy | None = None  # recording: the hosts not counted
        self.unrouted: list[netguard.UnroutedConnection] = []  # recording: clients that bypassed the seam
        self.blocked: list[netguard.NetworkBlockedError] = []  # replay: connections its own guard refused
        # (this test's id, the ids of every test sharing the cassette): a recording then replaces
        # only this test's calls in the file, tagging each with `test`, and keeps the others'
        self.shared = shared
        self._prior: list[Interaction] = []
        self._insert_at: int | None = None  # where in _prior this test's calls were (None: at the end)
        self.path = options.path
        self.requested_mode = options.requested_mode
        self.store = options.store
        self.check_order = options.check_order
        self.unused_policy = options.unused_policy
        self.blob_threshold = options.blob_threshold
        self.compress = options.compress
        self.compress_set = options.compress_set
        self.mode: Mode = self.requested_mode  # auto is resolved on start
        self.cassette: Cassette | None = None
        self.committed: Cassette | None = None
        self.misses: list[CassetteMiss] = []
        self.drift: list[Any] = []
        self.written: Path | None = None
        self._lock = threading.Lock()
        # replay: match key -> the position of its one interaction in the cassette, or the positions
        # of several (last-served-first); a key leaves when its last interaction is served
        self._index: dict[str, int | list[int]] = {}
        self._keys: frozenset[str] | None = None
        self._served: list[int] = []
        self._slots: list[Slot] = []
        self._in_flight: dict[Slot, tuple[int, object]] = {}  # recording: calls begun, not ended (origins)
        self._served_by_kind: dict[str, int] = {}
        self._redacted: dict[str, list[int]] | None = None  # replay: redacted key -> positions
        self._verified: dict[str, int] = {}  # blobs checked by replay (see check_refs)
        self._blobs: BlobStore | None = None  # replay: the cassette's store, its real path resolved once
        self._tokens_saved = 0
        self._resume: list[Interaction] = []  # auto, recording: the last failed run's calls, in order
        self._resumed = 0  # how many of them were answered (not made live again)
        self._token: contextvars.Token[Session | None] | None = None
        self._started = False

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def replaying(self) -> bool:
        return self.mode is Mode.REPLAY

    def start(self) -> Session:
        if self._started:
            raise CassetteError(f"session for {self.path} is already in use; create a new one per block.")
        self._started = True
        if self.shared is not None:
            self._start_shared()
        elif self.requested_mode is Mode.AUTO:
            self.mode = Mode.REPLAY if _exists(self.path) else Mode.RECORD
            if self.mode is Mode.RECORD:
                self._resume = _failed_calls(failed_path(self.path), self.store)
        if self.mode is Mode.REPLAY:
            # reading and indexing build no cycles: collector passes would only re-scan new objects
            paused = gc.isenabled()
            gc.disable()
            try:
                # absolute: every error about the file (corrupt, missing blob...) names its full path;
                # lazy: only keys are read now, each interaction is parsed when served
                self.cassette = load_cassette(self.path.absolute(), self.store, lazy=True)
                self._index = _index(self.cassette.match_keys())
                if self.shared is not None:
                    self._own_first(self.shared[0])
                self._blobs = BlobStore(self.cassette.store) if self.cassette.store else None
            finally:
                if paused:
                    gc.enable()
        elif self.mode is Mode.RERECORD and _exists(self.path):
            self.committed = load_cassette(self.path.absolute(), self.store)
        if self.mode is not Mode.REPLAY:  # refused now, not after the whole recording has run
            target = pending_path(self.path) if self.mode is Mode.RERECORD else self.path
            try:
                refuse_special(target)
            except NotRegularFileError as exc:
                raise not_writable_error(target, exc) from None
        if self.mode is not Mode.REPLAY:
            hosts = self.config.allow_hosts  # a recording counts loopback too: the devserver is a host
            self.watch_policy = netguard.NetworkPolicy(allow_loopback=False, allow_hosts=hosts)
        elif self.network_guard:
            self.guard = netguard.NetworkPolicy(
                allow_hosts=self.config.allow_hosts,
                reason=f"replaying cassette {self.path}; network_guard=False turns this guard off",
            )
        if self.watch_policy is not None or self.guard is not None:
            netguard.watch(True)
        self._token = _current.set(self)
        with _active_lock:
            _active.append(self)
        return self

    def _own_first(self, test: str) -> None:
        """In a shared cassette, a call several tests made is served from this test's own recording."""
        assert self.cassette is not None
        for key, entry in self._index.items():
            if isinstance(entry, list):  # positions, last first: the end is served first
                own = [p for p in entry if self.cassette.item(p).extra.get("test") == test]
                if own:
                    self._index[key] = [p for p in entry if p not in own] + own

    def _start_shared(self) -> None:
        """A cassette several tests share: ``auto`` records this test's calls unless the file has them,
        and a recording keeps the calls of the file's other tests (those still sharing it)."""
        assert self.shared is not None
        test, sharing = self.shared
        target = pending_path(self.path) if self.requested_mode is Mode.RERECORD else self.path
        if self.requested_mode is Mode.RERECORD and not _exists(target):
            target = self.path  # the first test re-recorded: the others' calls come from the committed file
        if self.requested_mode is Mode.REPLAY or not _exists(target):
            if self.requested_mode is Mode.AUTO:
                self.mode = Mode.RECORD
            return
        held = load_cassette(target.absolute(), self.store)
        owners = [i.extra.get("test") for i in held.interactions]
        if self.requested_mode is Mode.AUTO:
            # replayed if the file holds its calls (or calls untagged: recorded before it was shared)
            if test in owners or (owners and not any(isinstance(o, str) for o in owners)):
                self.mode = Mode.REPLAY
                return
            self.mode = Mode.RECORD
        self._prior = [
            held.hydrated(i)
            for i, owner in zip(held.interactions, owners)
            if isinstance(owner, str) and owner != test and owner in sharing
        ]
        if test in owners:  # its new calls go where its old ones were: an unchanged test moves nothing
            first = owners.index(test)
            self._insert_at = sum(
                1 for o in owners[:first] if isinstance(o, str) and o != test and o in sharing
            )

    def finish(self, exc: BaseException | None = None) -> None:
        if self._token is not None:
            try:
                _current.reset(self._token)
            except ValueError:  # finished in another context (a generator closed elsewhere)
                _current.set(None)
            self._token = None
        with _active_lock:
            if self in _active:
                _active.remove(self)
        if self.watch_policy is not None or self.guard is not None:
            netguard.watch(False)
            self.guard = None
        # kept for cassette.drift() and semantic_drift(), which read a rerecord; any other session is
        # not kept, so its parsed cassette is freed when its block ends, not when the next one does
        _last.set(self if self.requested_mode is Mode.RERECORD else None)
        if self.replaying:
            self._finish_replay(exc)
        else:
            self._finish_record(exc)

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finish(exc)

    async def __aenter__(self) -> Session:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finish(exc)

    # --- the seam -------------------------------------------------------------------------------

    def key_for(self, request: dict[str, Any]) -> str:
        return request_key(request)

    def recorded(self, key: str) -> bool:
        """Replay: whether the cassette holds a call with this match key (served or not)."""
        if self._keys is None:
            self._keys = frozenset(self.cassette.match_keys()) if self.cassette is not None else frozenset()
        return key in self._keys

    def unserved(self, key: str) -> bool:
        """Replay: whether a recorded call with this match key is still to be served (a recorded retry)."""
        with self._lock:
            return key in self._index

    def serve(self, kind: str, request: dict[str, Any], *, copy: bool = True) -> Interaction:
        """Replay: the recorded interaction for this normalised request, or raise `CassetteMiss`.

        ``copy=False`` is for a caller that only reads the response (the HTTP seam turns it
        into bytes): a response holding no blob reference is then handed over as recorded
        instead of being rebuilt.
        """
        key = request_key(request)
        with self._lock:
            entry = self._index.get(key)
            if entry is not None:
                if isinstance(entry, int):
                    pos = entry
                    del self._index[key]
                else:
                    pos = entry.pop()
                    if not entry:
                        del self._index[key]
                inter = self._book(kind, pos)  # parsed here, when first served
            else:
                inter = None
        if inter is None and self.cassette is not None:
            found = (
                self._serve_redacted(kind, request)
                or self._serve_wildcard(kind, request)
                or self._serve_fallback(kind, request)
            )
            if found is not None:
                pos, inter = found
        if inter is None:
            miss = self._explain_miss(kind, request, key)
            with self._lock:
                self.misses.append(miss)
            raise miss
        assert self.cassette is not None
        # a missing or tampered blob fails here, not silently; a history shared with earlier calls
        # is not checked again (only the new nodes of a chain are read)
        checked, holds = self.cassette.served_refs(pos, self._verified)
        if not checked:
            check_refs(inter.request, self.cassette, self._verified, self._blobs)
        response = inter.response
        if copy or holds:
            response = self.cassette.hydrate(response)
            if not isinstance(response, dict):  # the response itself was a blob reference
                raise CassetteShapeError(
                    f"{self.cassette.path}: interactions[{pos}] (seq {inter.seq}) has a response that is "
                    f"a {type(response).__name__}, not an object. Restore the cassette from git or "
                    "re-record it.",
                    path=self.cassette.path,
                )
        tokens = tokens_of(response, request) if kind != "tool" else 0  # a tool's result states no usage
        if tokens:
            with self._lock:
                self._tokens_saved += tokens
        if response is inter.response:
            return inter
        return Interaction(inter.seq, inter.kind, inter.key, inter.request, response, inter.extra)

    def _serve_redacted(self, kind: str, request: dict[str, Any]) -> tuple[int, Interaction] | None:
        """Replay, after a miss: the recorded call whose redacted request matches this one's.

        A request rebuilt from replayed, redacted data (a tool result or model output that
        held a secret when recorded) holds placeholders where the live run had the secret. A request
        that redaction would change holds a real secret, maybe not the recorded one: it is a miss.
        """
        assert self.cassette is not None
        if self._redacted is None:
            self._redacted = self.cassette.redacted_keys()  # read once, on the first miss
        if not self._redacted:
            return None
        shown = redacted(request, kind, "request")
        if shown != request:
            # a real secret where the recording's is redacted: it may be another one (a wrong password),
            # so only a request whose secret positions hold the placeholders replay handed out is served
            return None
        positions = self._redacted.get(redacted_key(shown))
        with self._lock:
            keys = self.cassette.match_keys()
            while positions:
                pos = positions.pop()
                if self.cassette.item(pos).kind == kind and self._take(pos, keys[pos]):
                    return pos, self._book(kind, pos)
        return None

    def _take(self, pos: int, key: str) -> bool:
        """Remove recorded call ``pos`` (match key ``key``) from the unserved index, under the lock;
        False when it was served already (by its own key)."""
        entry = self._index.get(key)
        if entry == pos:
            del self._index[key]
        elif isinstance(entry, list) and pos in entry:
            entry.remove(pos)
            if not entry:
                del self._index[key]
        else:
            return False
        return True

    def _book(self, kind: str, pos: int) -> Interaction:
        """Count recorded call ``pos`` as served (under the lock) and hand it back."""
        assert self.cassette is not None
        inter = self.cassette.take(pos)
        if inter.extra.get("parallel") is not True:  # a parallel call's place was the scheduler's
            self._served.append(inter.seq)
        self._served_by_kind[kind] = self._served_by_kind.get(kind, 0) + 1
        return inter

    def _serve_wildcard(self, kind: str, request: dict[str, Any]) -> tuple[int, Interaction] | None:
        """Replay, after both keys missed: the first unserved recorded call that this request
        matches when each placeholder in it stands for any text.

        A value redacted by its field's name but not spread through the recording (a bare word,
        ``"api_key": "disabled"``) replays as ``<redacted>``; an agent that copies it into its
        next prompt sends ``<redacted>`` where the recording holds the word. Only a request that
        holds a placeholder is looked at this way, and only on a miss.
        """
        if not placeholder_pattern.search(orjson.dumps(request)):
            return None
        return self._serve_first(kind, lambda recorded: wildcard_match(request, recorded))

    def _serve_fallback(self, kind: str, request: dict[str, Any]) -> tuple[int, Interaction] | None:
        """Replay, after every key missed: the first unserved recorded call that a provider plugin
        says answers this one (``cassette_fallback_match``: e.g. a call it keyed otherwise in an
        earlier release)."""
        for matches in get_plugin_manager().hook.cassette_fallback_match(kind=kind, request=request):
            found = self._serve_first(kind, matches) if callable(matches) else None
            if found is not None:
                return found
        return None

    def _serve_first(
        self, kind: str, matches: Callable[[dict[str, Any]], bool]
    ) -> tuple[int, Interaction] | None:
        """Replay, after a miss: the first unserved recorded call of ``kind`` whose (hydrated)
        request ``matches``, taken off the index."""
        assert self.cassette is not None
        with self._lock:
            keys = self.cassette.match_keys()
            unserved = sorted(
                p for entry in self._index.values() for p in ((entry,) if isinstance(entry, int) else entry)
            )
            for pos in unserved:
                inter = self.cassette.item(pos)
                if inter.kind != kind:
                    continue
                try:
                    recorded = self.cassette.hydrate(inter.request)
                except CassetteError:
                    continue  # a missing blob is reported when (if) that call is served by its key
                if matches(recorded) and self._take(pos, keys[pos]):
                    return pos, self._book(kind, pos)
        return None

    def resume(self, kind: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """Recording in ``auto``: the response of the failed recording's next call when this call is
        that call (same kind and match key, in order), recorded again as if made; ``None`` otherwise.

        A test that failed while recording is not paid for again up to where it changed: the first
        call that differs ends the resumed part, and it and every later call go live.
        """
        with self._lock:
            if not self._resume:
                return None
            held = self._resume[0]
            if held.kind != kind or held.key != request_key(request):
                self._resume.clear()
                return None
            self._resume.pop(0)
            self._resumed += 1
        slot = self.begin(kind, request)
        slot.finish(held.response)
        return held.response

    def begin(self, kind: str, request: dict[str, Any]) -> Slot:
        """Record: reserve this call's place in the order before it runs."""
        slot = Slot(kind, request_key(request), request)
        with self._lock:
            self._slots.append(slot)
        self._track(slot)
        outer = _seam_call.get()
        while outer is not None and (outer.done or outer.cancelled):
            outer = outer.outer
        slot.outer = outer
        _seam_call.set(slot)  # its connections (and a tool's) are the seam's own
        return slot

    def note_unrouted(self, connection: netguard.UnroutedConnection) -> None:
        """Record: an HTTP client connected out during the block without going through the seam."""
        with self._lock:
            if connection not in self.unrouted:
                self.unrouted.append(connection)

    def _track(self, slot: Slot) -> None:
        """Count ``slot`` in flight until it ends, marking it and the calls it overlaps as parallel."""
        origin = _origin()
        with self._lock:
            # a call of another thread or task still in flight: the two ran at once, and which one
            # reached the seam first was the scheduler's choice (a call made inside another of the
            # same task, a tool calling a model, is nested, not parallel)
            others = [other for other, where in self._in_flight.items() if where != origin]
            if others:
                slot.parallel = True
                for other in others:
                    other.parallel = True
            self._in_flight[slot] = origin
            slot._landed = self._landed

    def _landed(self, slot: Slot) -> None:
        with self._lock:
            self._in_flight.pop(slot, None)

    def _served_or_slot(self, kind: str, request: dict[str, Any]) -> dict[str, Any] | Slot:
        """What `call`/`acall` hand back without running the call (a replayed or resumed
        response), or else the slot its recorded response goes into."""
        if self.replaying:
            return self.serve(kind, request).response
        resumed = self.resume(kind, request)
        return resumed if resumed is not None else self.begin(kind, request)

    def call(
        self, kind: str, request: dict[str, Any], perform: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """Serve ``request`` from the cassette, or run ``perform()`` and record its response."""
        slot = self._served_or_slot(kind, request)
        if not isinstance(slot, Slot):
            return slot
        with slot.cancelled_on_error():
            response = perform()
        slot.finish(response)
        return response

    async def acall(
        self, kind: str, request: dict[str, Any], perform: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        """`call` for a coroutine ``perform``."""
        slot = self._served_or_slot(kind, request)
        if not isinstance(slot, Slot):
            return slot
        with slot.cancelled_on_error():
            response = await perform()
        slot.finish(response)
        return response

    # --- reports --------------------------------------------------------------------------------

    @property
    def interactions(self) -> list[Interaction]:
        """What this session holds: the recorded calls so far, or the cassette being replayed."""
        if self.replaying and self.cassette is not None:
            return list(self.cassette.interactions)
        return [
            Interaction(i, s.kind, s.key, s.request, s.response or {})
            for i, s in enumerate(self._live_slots())
        ]

    def unused(self) -> list[Interaction]:
        """Recorded interactions not (yet) served in this replay."""
        with self._lock:
            left = sorted(pos for v in self._index.values() for pos in ([v] if isinstance(v, int) else v))
        if not left or self.cassette is None:
            return []
        return sorted((self.cassette.interactions[pos] for pos in left), key=lambda i: i.seq)

    def stats(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "mode": self.mode.value,
            "served": dict(self._served_by_kind),
            "recorded": {
                k: sum(1 for s in self._live_slots() if s.kind == k) for k in ("llm", "tool", "http")
            },
            "tokens_saved": self._tokens_saved,
        }

    def _live_slots(self) -> list[Slot]:
        with self._lock:
            return [s for s in self._slots if not s.cancelled]

    def _explain_miss(self, kind: str, request: dict[str, Any], key: str) -> CassetteMiss:
        full = resolve_path(self.path)
        shown = redacted(request, kind, "request")
        what = masked_text(_describe(kind, shown), _message_rules())
        assert self.cassette is not None
        same_key = [i for i in self.cassette.interactions if i.key == key]
        if same_key:
            times = "once" if len(same_key) == 1 else f"{len(same_key)} times"
            message = (
                f"cassette {full}: {what} was called {len(same_key) + 1} times but recorded only {times}. "
                "Re-record (CASSETTE_MODE=rerecord, then `cassette accept`) if the agent now makes this "
                "call more often."
            )
            return CassetteMiss(message, path=full, request=shown)
        candidates = [i for i in self.cassette.interactions if i.kind == kind]
        lines = [f"cassette {full} has no recorded {kind} call matching {what}."]
        if candidates:
            best: tuple[int, Interaction, list[tuple[str, Any, Any]]] | None = None
            for inter in candidates:
                try:
                    recorded = self.cassette.hydrate(inter.request)
                except CassetteError:
                    continue
                diffs = field_diff(shown, recorded)
                if best is None or len(diffs) < best[0]:
                    best = (len(diffs), inter, diffs)
            if best is not None and not best[2]:
                # the paths of the redacted side only: a secret used as a key is not printed
                stored = flatten(shown)
                secrets = ", ".join(p for p, _, _ in field_diff(request, shown)[:8] if p and p in stored)
                lines.append(
                    f"Recorded {kind} call #{best[1].seq} reads the same once redacted: the two differ only "
                    "in a value the cassette keeps redacted (a secret"
                    + (f", at {secrets}" if secrets else "")
                    + "). This call carries a real secret there, which may not be the recorded one (a wrong "
                    "password or key), so it is not served that call's answer. Replay with the secret the "
                    "recording was made with, or re-record."
                )
            elif best is not None:
                lines.append(
                    f"Nearest recorded {kind} call is #{best[1].seq}; it differs in (this call != recorded):"
                )
                # masked here, whatever redaction did: a live value it keeps (a `token` that does not
                # look random), a recording made before a rule existed
                lines.extend("  " + d for d in format_diff(masked_diff(best[2], _message_rules())))
        else:
            lines.append(f"The cassette holds no {kind} calls at all.")
        lines.append(
            "Fix: re-record (CASSETTE_MODE=rerecord, review, then `cassette accept`; or "
            "CASSETTE_MODE=record), or drop a volatile field in a cassette_normalize plugin."
        )
        return CassetteMiss("\n".join(lines), path=full, request=shown)

    # --- finishing ------------------------------------------------------------------------------

    def _finish_replay(self, exc: BaseException | None) -> None:
        self._count("missed" if self.misses else "replayed")
        if self.misses and not isinstance(exc, CassetteMiss):
            # the agent swallowed the miss, or an SDK wrapped it: the block still fails on it
            raise self.misses[0] from exc
        if self.blocked and not isinstance(exc, netguard.NetworkBlockedError):
            raise self.blocked[0] from exc  # swallowed (or wrapped by an SDK): the block fails on it
        if exc is not None:
            return
        if self.check_order != "off":
            divergence = _first_divergence(self._served)
            if divergence:
                message = (
                    f"cassette {resolve_path(self.path)}: calls replayed out of recorded order: {divergence}"
                )
                if self.check_order == "error":
                    raise CassetteOrderError(
                        message + " Re-record, or pass check_order='off'.", path=self.path
                    )
                warnings.warn(message, CassetteWarning, stacklevel=3)
        if self.unused_policy != "off":
            left = self.unused()
            if left:
                listing = ", ".join(f"#{i.seq} {i.kind}" for i in left[:10])
                message = (
                    f"cassette {resolve_path(self.path)}: {len(left)} recorded interaction(s) were never "
                    f"used ({listing}). The agent makes fewer calls than when recorded; re-record to drop "
                    "them."
                )
                if self.unused_policy == "error":
                    raise CassetteUnusedError(message, path=self.path)
                warnings.warn(message, CassetteWarning, stacklevel=3)

    def _finish_record(self, exc: BaseException | None) -> None:
        slots = self._live_slots()
        parts: list[tuple[Any, Any]] = []
        secrets: set[str] = set()
        for slot in slots:
            response = slot.response
            if response is None:
                response = slot.partial() if slot.partial is not None else {}
            if not slot.done:
                response = dict(response, incomplete=True)
            clean = (redacted(slot.request, slot.kind, "request"), redacted(response, slot.kind, "response"))
            removed_values(slot.request, clean[0], secrets)
            removed_values(response, clean[1], secrets)
            parts.append(clean)
        interactions = []
        for seq, (slot, (request, response)) in enumerate(zip(slots, parts)):
            if secrets:
                # a value redacted by its field's name (a tool's session_token) is a secret wherever the
                # agent copied it (the next prompt), though no text rule knows its shape
                request, response = spread_redactions(request, secrets), spread_redactions(response, secrets)
            # a request that held a secret also gets the key of its redacted form: replay finds it
            # by that key when the request is rebuilt from redacted tool results or model output
            extra: dict[str, Any] = {}
            if request_key(request) != slot.key:
                extra["redacted_key"] = redacted_key(request)
            if self.shared is not None:
                extra["test"] = self.shared[0]  # whose call it is, in a cassette several tests share
            if slot.parallel:
                extra["parallel"] = True  # its place in the order is not checked on replay
            interactions.append(Interaction(seq, slot.kind, slot.key, request, response, extra))
        if exc is None and self.unrouted:
            self._unrouted(bool(interactions))
        if self._prior and exc is None:  # among the calls of the other tests sharing the cassette
            at = len(self._prior) if self._insert_at is None else self._insert_at
            interactions = _renumbered([*self._prior[:at], *interactions, *self._prior[at:]])
        if exc is not None and self.shared is not None:
            # the failed recording is shared too: the other tests' failed calls in it are kept
            if not interactions:
                self._count("failed")
                return  # this test made no call: nothing to add, and nothing of theirs to drop
            others, _ = self._failed_of_others()
            interactions = _renumbered([*others, *interactions])
        new = Cassette(path=self.path, interactions=interactions, store=self.store)
        if exc is not None:
            target = failed_path(self.path)
        elif self.mode is Mode.RERECORD:
            target = pending_path(self.path)
        else:
            target = self.path
        new.path = target
        if not self.compress_set:
            kept = stored_compressed(self.path)  # `cassette compress` sticks across re-recordings
            self.compress = self.compress if kept is None else kept
        save_cassette(new, target, self.blob_threshold, compress=self.compress)
        self.written = target
        self.cassette = new
        if exc is not None:
            self._count("failed")  # its calls were made live all the same
            return
        if not interactions:
            warnings.warn_explicit(
                f"cassette {self.path.absolute()}: recorded no calls. Is the client instrumented "
                "(`client = cassette.instrument(client)` around your SDK client, or "
                "`http_client=cassette.http_client()`), "
                "and each tool decorated with @cassette.tool? An SDK client made without it calls the "
                "network directly, unrecorded.",
                CassetteWarning,
                filename=str(self.path),  # shown where the warning is about, not in our source
                lineno=1,
            )
        self._drop_failed()
        if self.mode is Mode.RERECORD:
            old = self.committed or Cassette(path=self.path, store=self.store)
            self.drift = _compare(old, new) if _compare is not None else []
            self._count("rerecorded", drifted=bool(self.drift))
        else:
            self._count("recorded")

    def _unrouted(self, recorded: bool) -> None:
        """A block that saw clients bypass the seam: fails when it recorded nothing (its empty
        cassette would replay as a pass), else warns, naming each."""
        seen = "; ".join(c.describe() for c in self.unrouted[:5])
        fix = (
            "Route the client through cassette: `client = cassette.instrument(client)` around your SDK "
            "client, or build it "
            "with `http_client=cassette.http_client()` (and `http_async_client=` / "
            "`cassette.async_http_client()` for a framework's async path). If that host is meant to be "
            "reached (a local database, a test server), list it in [tool.cassette] allow_hosts."
        )
        if recorded:
            warnings.warn_explicit(
                f"cassette {self.path.absolute()}: some calls bypassed the seam and were not recorded: "
                f"{seen}. Replay will not serve them. {fix}",
                CassetteWarning,
                filename=str(self.path),
                lineno=1,
            )
            return
        self._count("failed")
        raise UnroutedClientError(
            f"cassette {self.path.absolute()}: recorded no calls, but {seen} without going through the "
            f"cassette seam. No cassette was written: it would replay as an empty pass. {fix}",
            path=self.path,
        )

    def _failed_of_others(self) -> tuple[list[Interaction], int]:
        """The calls of the other tests sharing the cassette in its failed recording, and how many
        calls that file holds in all (none when there is no such file).

        A failed recording that cannot be read is replaced, as one of an unshared cassette is.
        """
        assert self.shared is not None
        test = self.shared[0]
        stale = failed_path(self.path)
        if not _exists(stale):
            return [], 0
        try:
            held = load_cassette(stale.absolute(), self.store)
            others = [
                held.hydrated(i)
                for i in held.interactions
                if isinstance(i.extra.get("test"), str) and i.extra.get("test") != test
            ]
        except CassetteError:
            return [], 0
        return others, len(held.interactions)

    def _drop_failed(self) -> None:
        """A recording that passed: its failed recording is stale. In a shared cassette only this
        test's calls are dropped from it; the file goes when no other test's are left."""
        stale = failed_path(self.path)
        if not stale.exists():
            return
        others, held = self._failed_of_others() if self.shared is not None else ([], 0)
        if not others:
            stale.unlink()
        elif len(others) < held:
            save_cassette(
                Cassette(path=stale, interactions=_renumbered(others), store=self.store),
                stale,
                self.blob_threshold,
                compress=self.compress,
            )

    def _count(self, what: str, drifted: bool = False) -> None:
        with _stats_lock:
            setattr(run_stats, what, getattr(run_stats, what) + 1)
            run_stats.drifted += int(drifted)
            for k, v in self._served_by_kind.items():
                run_stats.served[k] = run_stats.served.get(k, 0) + v
            for s in self._live_slots()[self._resumed :]:  # the resumed calls lead: not live
                run_stats.recorded_calls[s.kind] = run_stats.recorded_calls.get(s.kind, 0) + 1
            run_stats.tokens_saved += self._tokens_saved
            where = str(resolve_path(self.path))  # never raises: a looping path is made absolute
            run_stats.cassettes_used.add(where)
            run_stats.files.setdefault(what, set()).add(where)


def _failed_calls(stale: Path, store: Path) -> list[Interaction]:
    """The leading complete calls of a failed recording (hydrated), for `Session.resume`; none
    when there is no such file or it cannot be read (the new recording replaces it)."""
    if not _exists(stale):
        return []
    try:
        held = load_cassette(stale.absolute(), store)
        calls = [held.hydrated(i) for i in held.interactions]
    except CassetteError:
        return []
    done = [not (isinstance(i.response, dict) and i.response.get("incomplete")) for i in calls]
    return calls[: done.index(False)] if False in done else calls


@dataclass(frozen=True)
class _Options:
    """A `Session`'s arguments, checked and resolved against the project's config."""

    path: Path  # absolute
    requested_mode: Mode
    store: Path  # absolute
    check_order: str  # "warn" | "error" | "off"
    unused_policy: str  # "warn" | "error" | "off"
    blob_threshold: int
    compress: bool
    # neither the caller nor the config said: a re-recorded cassette keeps the form it has
    compress_set: bool


def _resolve_options(
    config: Config,
    path: str | Path,
    mode: str | Mode | None,
    *,
    store: str | Path | None,
    check_order: str | bool | None,
    unused: str | None,
    blob_threshold: int | None,
    compress: bool | None,
    network_guard: bool | None,
) -> _Options:
    """`Session`'s arguments checked in order (the first bad one raises `CassetteConfigError`, or
    `UnknownModeError` for the mode), each left unset taken from ``config``."""
    if network_guard is not None and not isinstance(network_guard, bool):
        raise CassetteConfigError(f"network_guard must be True, False or None, got {network_guard!r:.80}.")
    if "\x00" in str(path):
        raise CassetteConfigError(
            f"the cassette path {str(path)!r:.120} holds a NUL byte, which no file name can. Fix the path."
        )
    # relative to the project root (the pyproject.toml's directory, as cassette_dir is), resolved
    # once: `cd tests && pytest` finds what `pytest` from the root wrote, and an agent that
    # changes directory inside the block does not move where the cassette is read and written
    root = config.root if config.source is not None else Path.cwd()  # no project: here
    absolute = (root / path).absolute()
    requested_mode = resolve_mode(mode, config)
    if store is not None:
        if not isinstance(store, str | os.PathLike) or "\x00" in str(store) or not str(store).strip():
            raise CassetteConfigError(f"store must be a directory path, got {store!r:.80}.")
        store_dir = Path(store).absolute()
    else:
        store_dir = store_for(absolute, config)
    check = _flag(check_order, config.check_order, "check_order")
    unused_policy = _flag(unused, config.unused, "unused")
    if blob_threshold is not None and (
        isinstance(blob_threshold, bool) or not isinstance(blob_threshold, int) or blob_threshold < 0
    ):
        raise CassetteConfigError(
            f"blob_threshold must be a non-negative number of bytes, got {blob_threshold!r}."
        )
    if compress is not None and not isinstance(compress, bool):
        raise CassetteConfigError(f"compress must be True or False, got {compress!r:.80}.")
    return _Options(
        path=absolute,
        requested_mode=requested_mode,
        store=store_dir,
        check_order=check,
        unused_policy=unused_policy,
        blob_threshold=config.blob_threshold if blob_threshold is None else blob_threshold,
        compress=config.compress if compress is None else compress,
        compress_set=compress is not None or "compress" in config.keys,
    )


def _flag(value: str | bool | None, default: str, name: str) -> str:
    if value is None:
        return default
    if value is True:
        return "warn"
    if value is False:
        return "off"
    if value not in ("warn", "error", "off"):
        raise CassetteConfigError(f"{name} must be 'warn', 'error', 'off' or a bool, got {value!r}.")
    return value


def _is_within(path: Path, root: Path) -> bool:
    try:
        resolve_path(path).relative_to(root)
    except ValueError:
        return False
    return True


def _message_rules() -> list[Any]:
    """The secret rules a message masks with: every ``cassette_secret_rules`` plugin's."""
    return rules_from_plugins(get_plugin_manager())


def _describe(kind: str, request: dict[str, Any]) -> str:
    if kind == "tool":
        return f"tool {request.get('name')!r}"
    if kind == "llm":
        model = request.get("model")
        return f"{request.get('provider', 'llm')} {request.get('endpoint', '')} (model {model!r})".strip()
    return f"{request.get('method', '')} {request.get('url', '')}".strip() or kind


def _renumbered(interactions: list[Interaction]) -> list[Interaction]:
    """The interactions of one file in their new order, each ``seq`` its position."""
    return [
        Interaction(seq, i.kind, i.key, i.request, i.response, i.extra) for seq, i in enumerate(interactions)
    ]


def _origin() -> tuple[int, object]:
    """Where a call comes from: its thread, and its asyncio task if it runs in one."""
    try:
        task: object = asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        task = None
    return threading.get_ident(), task


def _first_divergence(served: list[int]) -> str | None:
    expected = sorted(served)
    for n, (got, want) in enumerate(zip(served, expected)):
        if got != want:
            return f"call {n + 1} was served recorded interaction #{got}, expected #{want}"
    return None


netguard.register_sessions(replaying_session, recording_session, routing)
