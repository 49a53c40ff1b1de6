"""Production traces: every call through the seam, outside any cassette, appended to a JSONL file.

``cassette.trace(path)`` (or ``CASSETTE_TRACE=path``) makes the seam hand calls
that no `Session` claims to a `TraceSession`: the call runs live, exactly as
without tracing, and when it finishes (a stream: when it is closed) one line is
queued for the trace file::

    {"v": 1, "run": "<id>", "seq": 0, "kind": "llm", "key": "<sha256>", "ts": 1767225600.123,
     "request": {...normalised, redacted...}, "response": {...redacted...}}

A call in flight at the same time as a call of another thread or task also
gets ``"parallel": true`` (its place in ``seq`` was the scheduler's).
``key`` is the match key of the *un-redacted* request, so `cassette.promote`
can turn a run into a cassette that replays even where redaction changed the
stored request. A writer thread drains a bounded queue; each line is one
``os.write`` on an ``O_APPEND`` descriptor, so processes sharing a file
interleave whole lines. Nothing here can fail the user's call: a full queue
drops the line, an unwritable file counts the failure; both warn once.
"""

from __future__ import annotations

import atexit
import contextvars
import itertools
import os
import queue
import secrets
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from cassette.core.canonical import ordered_json, request_key
from cassette.errors import CassetteWarning, TraceError
from cassette.seam.redaction import redacted
from cassette.seam.session import TRACE_ENV, Mode, Session, Slot, set_fallback
from cassette.secrets.placeholders import removed_values, spread_redactions

TRACE_FORMAT = 1
DEFAULT_MAX_QUEUE = 10_000
_FLUSH_TIMEOUT = 30.0


def new_run_id() -> str:
    """A fresh run id: sortable by start time, unique across processes.

    Example::

        new_run_id()  # '20260101T120000-3f9a1c2b7d4e'
    """
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(6)


# --- the sink: one trace file -----------------------------------------------------------------------


class _Line:
    """One finished call waiting to be encoded (redaction and JSON happen on the writer thread)."""

    __slots__ = ("key", "kind", "parallel", "request", "response", "run", "seq", "ts")

    def __init__(
        self,
        run: str,
        seq: int,
        kind: str,
        key: str,
        request: Any,
        response: Any,
        ts: float,
        parallel: bool = False,
    ) -> None:
        self.run, self.seq, self.kind, self.key = run, seq, kind, key
        self.request, self.response, self.ts = request, response, ts
        self.parallel = parallel


def encode_line(line: _Line, secrets: set[str] | None = None) -> bytes:
    """The bytes of one trace line: redacted request and response, canonical JSON, one newline.

    ``secrets`` gathers the values redacted by their field's name in the run's earlier lines (a
    tool's ``session_token``): they are redacted in this line too, wherever the agent copied them,
    as a session's recording spreads them (see ``spread_redactions``).
    """
    request = redacted(line.request, line.kind, "request")
    response = redacted(line.response, line.kind, "response")
    if secrets is not None:
        removed_values(line.request, request, secrets)
        removed_values(line.response, response, secrets)
        if secrets:
            request, response = spread_redactions(request, secrets), spread_redactions(response, secrets)
    record = {
        "v": TRACE_FORMAT,
        "run": line.run,
        "seq": line.seq,
        "kind": line.kind,
        "key": line.key,
        "ts": round(line.ts, 3),
        "request": request,
        "response": response,
    }
    if line.parallel:  # in flight at once with a call of another thread or task (see Session.begin)
        record["parallel"] = True
    # payload key order kept (user code may serialise a tool result into the next prompt);
    # orjson escapes newlines inside strings, so a record is exactly one line
    return ordered_json(record) + b"\n"


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)  # one call for the whole line: O_APPEND keeps it in one piece
        view = view[n:]


class _Flush:
    """A marker put through the queue; the writer sets it once every line before it is written."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


_STOP = object()


_RUNS_KEPT = 64  # runs whose redacted values a sink remembers (a process makes one run per test or task)


class TraceSink:
    """One trace file shared by every handle that names it: a bounded queue and a writer thread."""

    def __init__(self, path: Path, max_queue: int = DEFAULT_MAX_QUEUE) -> None:
        self.path = path
        self.max_queue = max_queue
        self.fd: int | None = _open(path)
        self.written = 0
        self.dropped = 0
        self.failed = 0
        self.refs = 0
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        # per run: the values redacted by their field's name, spread through the run's later lines
        self._secrets: dict[str, set[str]] = {}
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self._thread: threading.Thread | None = None
        self._pid = -1
        _sinks.add(self)

    # --- called on the user's thread: never raises, never blocks on disk -------------------------

    def submit(self, line: _Line) -> None:
        try:
            if self.fd is None:  # closed (a stream finished after its trace block ended): write directly
                self._write_closed(line)
                return
            self._ensure_writer()
            self._queue.put_nowait(line)
        except queue.Full:
            with self._lock:
                self.dropped += 1
            self._warn_once(
                "dropped",
                f"trace {self.path}: the write queue is full ({self.max_queue} lines); dropping lines "
                "instead of slowing the calls down. Put the trace on a faster disk or raise max_queue.",
            )
        except Exception as exc:  # a trace must never fail the call it records
            self._failed(exc)

    def _ensure_writer(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child (threads do not survive fork)
                self._queue = queue.Queue(self.max_queue)
                self._thread = threading.Thread(target=self._drain, name="cassette-trace-writer", daemon=True)
                self._thread.start()
                self._pid = os.getpid()

    # --- the writer thread ------------------------------------------------------------------------

    def _drain(self) -> None:
        q = self._queue
        while True:
            item = q.get()
            if item is _STOP:
                return
            if isinstance(item, _Flush):
                item.done.set()
                continue
            self._write(item)

    def _write(self, line: _Line) -> None:
        try:
            data = encode_line(line, self._secrets_of(line.run))
            fd = self.fd
            if fd is None:
                raise OSError("trace file already closed")
            _write_all(fd, data)
        except Exception as exc:
            self._failed(exc)
            return
        self.written += 1  # only the writer thread counts written lines

    def _secrets_of(self, run: str) -> set[str]:
        """The values redacted by name so far in ``run`` (its later lines are redacted of them too)."""
        with self._lock:
            found = self._secrets.get(run)
            if found is None:
                if len(self._secrets) >= _RUNS_KEPT:
                    self._secrets.pop(next(iter(self._secrets)))  # the oldest run
                found = self._secrets[run] = set()
            return found

    def _write_closed(self, line: _Line) -> None:
        data = encode_line(line, self._secrets_of(line.run))
        fd = _open(self.path)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        with self._lock:
            self.written += 1

    # --- bookkeeping ----------------------------------------------------------------------------------

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            self.failed += 1
        self._warn_once(
            "failed",
            f"trace {self.path}: cannot write a trace line ({type(exc).__name__}: {exc}); the call itself "
            "went through. Check the path is writable; later failures are counted, not warned.",
        )

    def _warn_once(self, what: str, message: str) -> None:
        with self._lock:
            if what in self._warned:
                return
            self._warned.add(what)
        warnings.warn(message, CassetteWarning, stacklevel=2)

    def flush(self, timeout: float = _FLUSH_TIMEOUT) -> bool:
        """Wait until every line queued so far is written; False if the writer did not finish in time."""
        thread = self._thread
        if self.fd is None or thread is None or not thread.is_alive() or self._pid != os.getpid():
            return True
        marker = _Flush()
        try:
            self._queue.put(marker, timeout=timeout)
        except queue.Full:
            return False
        return marker.done.wait(timeout)

    def close(self) -> None:
        self.flush()
        with self._lock:
            thread, fd = self._thread, self.fd
            self.fd = None
        if thread is not None and thread.is_alive() and self._pid == os.getpid():
            try:
                self._queue.put(_STOP, timeout=_FLUSH_TIMEOUT)
            except queue.Full:
                pass
            thread.join(_FLUSH_TIMEOUT)
        if fd is not None:
            os.close(fd)

    def stats(self) -> dict[str, int]:
        return {"written": self.written, "dropped": self.dropped, "failed": self.failed}


_sinks: weakref.WeakSet[TraceSink] = weakref.WeakSet()
_registry: dict[str, TraceSink] = {}
_registry_lock = threading.Lock()


def _acquire(path: Path, max_queue: int) -> TraceSink:
    name = os.path.abspath(path)
    with _registry_lock:
        sink = _registry.get(name)
        if sink is None:
            try:
                sink = TraceSink(Path(name), max_queue)
            except OSError as exc:
                raise TraceError(
                    f"cannot open trace file {name} for appending ({exc.strerror}). "
                    "Pass a path in a writable directory.",
                    path=name,
                ) from None
            _registry[name] = sink
        sink.refs += 1
        return sink


def _release(sink: TraceSink) -> None:
    with _registry_lock:
        sink.refs -= 1
        if sink.refs > 0:
            return
        _registry.pop(str(sink.path), None)
    sink.close()


@atexit.register
def _flush_all_at_exit() -> None:
    for sink in list(_sinks):
        try:
            sink.flush(timeout=5.0)
        except Exception:
            pass


def _after_fork_in_child() -> None:
    # a lock held by another thread at fork time would stay locked forever in the child
    global _registry_lock
    _registry_lock = threading.Lock()
    for sink in list(_sinks):
        sink._lock = threading.Lock()
        sink._pid = -1
        sink._thread = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --- the seam's view: a session that records into the trace --------------------------------------


class TraceSlot(Slot):
    """A traced call: queued for the trace file when its response is complete."""

    __slots__ = ("run", "seq", "sink", "ts")

    def __init__(self, kind: str, key: str, request: dict[str, Any], run: str, seq: int, sink: TraceSink):
        super().__init__(kind, key, request)
        self.run, self.seq, self.sink, self.ts = run, seq, sink, time.time()

    def finish(self, response: dict[str, Any]) -> None:
        super().finish(response)
        line = _Line(self.run, self.seq, self.kind, self.key, self.request, response, self.ts, self.parallel)
        self.sink.submit(line)

    def finish_later(self, build: Callable[[], dict[str, Any]]) -> None:
        self.finish(build())


class TraceSession(Session):
    """What the seam gets when no cassette is active but a trace is: calls run live and are logged.

    Only the parts of `Session` the seam uses are set up (``replaying``, ``begin``,
    ``call``/``acall``); it is never started or finished.
    """

    # deliberately not Session.__init__: a trace session has no cassette file, mode or config
    def __init__(self, trace: Trace, run: str) -> None:
        self.mode = Mode.RECORD
        self.path = trace.path
        self.trace = trace
        self.run = run
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._in_flight = {}
        self._resume = []  # a trace answers nothing from an earlier run: every call goes live
        self._resumed = 0

    def begin(self, kind: str, request: dict[str, Any]) -> Slot:
        sink = self.trace.sink
        seq = next(self._counter)  # itertools.count is atomic under the GIL: seq is the start order
        slot = TraceSlot(kind, request_key(request), request, self.run, seq, sink)
        self._track(slot)
        return slot


# --- the public handle ------------------------------------------------------------------------------


_ctx: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("cassette_trace", default=None)
_open_traces: list[Trace] = []
_open_lock = threading.Lock()
_env_handles: dict[str, Trace | None] = {}


class Trace:
    """An open trace: where lines go (``path``), the current ``run`` id, and counters.

    Create it with `cassette.trace`. It traces every call outside a cassette from the
    moment it is created until `close` (or the end of its ``with`` block).

    Example::

        with cassette.trace("traces/prod.jsonl") as t:
            agent.run("My card was charged twice")
        print(t.run, t.stats())
    """

    def __init__(
        self, path: str | os.PathLike[str], run: str | None = None, max_queue: int = DEFAULT_MAX_QUEUE
    ):
        self._setup(path, run, max_queue)
        with _open_lock:
            _open_traces.append(self)
            set_fallback(trace_session, on=True)

    def _setup(self, path: str | os.PathLike[str], run: str | None, max_queue: int) -> None:
        if max_queue < 1:
            raise TraceError(f"max_queue must be at least 1, got {max_queue} (trace {path}).", path=path)
        self.sink = _acquire(Path(path), max_queue)
        self.path = self.sink.path
        self.session = TraceSession(self, run or new_run_id())
        self.closed = False
        self._tokens: list[contextvars.Token[Trace | None]] = []

    @classmethod
    def _from_env(cls, path: str) -> Trace:
        """The process-wide handle for ``CASSETTE_TRACE``: not in the open list (the variable is)."""
        handle = cls.__new__(cls)
        handle._setup(path, None, DEFAULT_MAX_QUEUE)
        return handle

    @property
    def run(self) -> str:
        """The run id lines are written under now."""
        return self.session.run

    def new_run(self, run: str | None = None) -> str:
        """Start a new run (one agent run) on this trace and return its id; ``seq`` restarts at 0.

        Example::

            t = cassette.trace("traces/prod.jsonl")
            for ticket in tickets:
                t.new_run()
                agent.run(ticket)
        """
        self._check_open()
        self.session = TraceSession(self, run or new_run_id())
        return self.session.run

    def flush(self, timeout: float = _FLUSH_TIMEOUT) -> bool:
        """Block until every line queued so far is on disk (True), or ``timeout`` seconds pass (False)."""
        return self.sink.flush(timeout)

    def stats(self) -> dict[str, int]:
        """``{"written", "dropped", "failed"}`` line counts of the trace file (shared by its handles)."""
        return self.sink.stats()

    def close(self) -> None:
        """Stop tracing through this handle and write out what is queued. Idempotent."""
        if self.closed:
            return
        self.closed = True
        with _open_lock:
            if self in _open_traces:
                _open_traces.remove(self)
            set_fallback(trace_session, on=bool(_open_traces))
        _release(self.sink)

    def _check_open(self) -> None:
        if self.closed:
            raise TraceError(
                f"trace {self.path} (run {self.run}) is closed; open a new one with cassette.trace(...).",
                path=self.path,
            )

    def __enter__(self) -> Trace:
        self._check_open()
        self._tokens.append(_ctx.set(self))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._tokens:
            token = self._tokens.pop()
            try:
                _ctx.reset(token)
            except ValueError:  # exited in another context
                _ctx.set(None)
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<cassette.Trace {self.path} run={self.run} {state}>"


def trace(
    path: str | os.PathLike[str] | None = None, *, run: str | None = None, max_queue: int = DEFAULT_MAX_QUEUE
) -> Trace:
    """Trace production calls: every LLM, HTTP and tool call made outside a cassette goes to ``path``.

    Tracing starts now and lasts until ``close()`` or the end of the ``with``
    block; each ``with cassette.trace(...)`` block is one run (one agent run)
    with a fresh id unless ``run`` is given. With no ``path``, the trace named by
    ``CASSETTE_TRACE`` is returned (the same handle every time). Requests and
    responses are redacted before anything is written; a full queue or an
    unwritable file never fails the call (the line is counted and a warning
    is issued once).

    Example::

        with cassette.trace("traces/prod.jsonl") as t:
            agent.run("My card was charged twice")
        # later: cassette.promote("traces/prod.jsonl", "tests/cassettes/charged_twice.json", run=t.run)
    """
    if path is None:
        env = os.environ.get(TRACE_ENV)
        if not env:
            raise TraceError(
                f"cassette.trace() needs a path, or the {TRACE_ENV} environment variable set "
                "to one (e.g. CASSETTE_TRACE=traces/prod.jsonl)."
            )
        handle = _env_trace(env, quiet=False)
        assert handle is not None
        return handle
    return Trace(path, run=run, max_queue=max_queue)


def _env_trace(path: str, *, quiet: bool = True) -> Trace | None:
    if path in _env_handles:
        found = _env_handles[path]
        if found is None or not found.closed:
            return found
    with _open_lock:
        found = _env_handles.get(path)
        if found is not None and not found.closed:
            return found
        handle: Trace | None
        try:
            handle = Trace._from_env(path)
        except TraceError as exc:
            if not quiet:
                raise
            handle = None  # remembered, so the warning is issued once and calls are not slowed
            warnings.warn(
                f"{exc} (from the {TRACE_ENV} environment variable; calls are not traced)",
                CassetteWarning,
                stacklevel=4,
            )
        _env_handles[path] = handle
        return handle


def trace_session() -> Session | None:
    """The trace session a call outside any cassette goes to, or ``None`` when nothing traces.

    The trace of the enclosing ``with cassette.trace(...)`` block wins, then the
    most recently opened trace, then ``CASSETTE_TRACE``.
    """
    handle = _ctx.get()
    if handle is None or handle.closed:
        try:
            handle = _open_traces[-1]
        except IndexError:
            handle = None
    if handle is None:
        env = os.environ.get(TRACE_ENV)
        if env:
            handle = _env_trace(env)
    return handle.session if handle is not None else None


set_fallback(trace_session, on=False)  # CASSETTE_TRACE alone traces too
