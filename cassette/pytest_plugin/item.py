"""The cassette session around one test: open it (mode, expiry, shared files, lock), close it, report.

`ItemCassette` holds one test's `Session` and the guard policy swapped in for it; `after_call`
finishes it when the test body returns and turns a blocked connection or a replay miss into a
test failure whose message is cassette's, not a traceback through its source.
"""

from __future__ import annotations

import os
import shlex
import sysconfig
import warnings
from pathlib import Path

import pytest

from cassette.config import Config, env_mode
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError, CassetteNotFoundError, CassetteWarning, NetworkBlockedError
from cassette.maintenance.hygiene import cassette_age, format_age
from cassette.pytest_plugin.guard import item_guard
from cassette.pytest_plugin.locking import RecordLock, file_mark, will_write
from cassette.pytest_plugin.markers import marker_options
from cassette.pytest_plugin.naming import cassette_path_for, shown_path
from cassette.pytest_plugin.state import STATE, RunState
from cassette.seam.netguard import NetworkPolicy, guard_replay, guard_run, take_blocked
from cassette.seam.session import Mode, Session, failed_path, parse_mode, pending_path, resolve_mode
from cassette.store.cassettes import load_cassette


class _TestDidNotRun(Exception):
    """Finishes a session whose test never ran (a later fixture failed): nothing is committed."""

    __test__ = False  # not a test class, whatever pytest's name pattern says


class ItemCassette:
    """The session of one test, and the guard policy swapped in for it."""

    def __init__(
        self,
        session: Session,
        state: RunState,
        guard: NetworkPolicy | None,
        lock: RecordLock | None = None,
        nodeid: str = "",
    ) -> None:
        self.session = session
        self.state = state
        self.lock = lock
        self.nodeid = nodeid
        self.previous_guard = guard_replay(guard)
        # network_guard=False on a test of a replaying run: the run-wide guard is off for it too
        self.suspended = guard is None and state.run_policy is not None
        if self.suspended:
            guard_run(None)
        self.closed = False
        self.conflict: CassetteError | None = None
        # a recording: its cassette's three files as the test found them. Another session writing one
        # during the test (`cassette.using` on the test's own cassette) would be overwritten by this one;
        # no other test's session can (a recording holds the cassette's lock)
        path = session.path
        files = () if session.replaying else (path, pending_path(path), failed_path(path))
        self.marks = {p: file_mark(p) for p in files}

    def close(self, exc: BaseException | None) -> None:
        if self.closed:
            return
        self.closed = True
        self.conflict = self._reopened(exc)
        if self.conflict is not None:
            exc = self.conflict  # this session's calls go to a failed recording, never over the other's
        try:
            self.session.finish(exc)
        finally:
            guard_replay(self.previous_guard)
            if self.suspended:
                guard_run(self.state.run_policy)
            if self.lock is not None:
                self.lock.release()
            written = self.session.written
            if (
                exc is not None
                and written == failed_path(self.session.path)
                and not self.session.interactions
            ):
                written.unlink(missing_ok=True)  # a skip or setup error before any call: nothing to keep
            if self.session.drift:
                self.state.drifted.add(str(resolve_path(self.session.path)))
        if self.conflict is not None:
            raise self.conflict

    def _reopened(self, exc: BaseException | None) -> CassetteError | None:
        """The error for a cassette another session wrote while this test recorded it, or ``None``.

        That session (``cassette.using``/``cassette.use`` on the test's own file) recorded calls this
        one does not hold; finishing as usual would overwrite them, or delete its failed recording.
        This session's calls go to ``<name>.failed.json`` instead (``<name>.marker.failed.json`` when
        the other session left a failed recording there), and the test fails saying where each is.
        """
        now = {p: file_mark(p) for p in self.marks}
        if now == self.marks:
            return None
        path = self.session.path
        theirs = [p for p, mark in now.items() if mark is not None and mark != self.marks[p]]
        if failed_path(path) in theirs:
            self.session.path = path.with_name(f"{path.stem}.marker{path.suffix}")
        own, kept = len(self.session.interactions), failed_path(self.session.path).name
        ours = (
            f"the test's own {own} call(s), made outside it, are in {kept}"
            if own
            else "the test made no call outside it"
        )
        left = ", ".join(p.name for p in theirs) or "no file (it removed one)"
        message = (
            f"cassette {resolve_path(path)} was written by another session while {self.nodeid} recorded "
            "it.\nA cassette.using() or cassette.use() on the test's own cassette (the marker's or the "
            "fixture's) is a second session on that file, and the test's session would have overwritten "
            f"what it recorded.\nNothing recorded was lost: that session's calls are in {left}; {ours}.\n"
            "Open the file once: drop the cassette.using()/cassette.use() (the test's session already "
            "records every call the test makes), or give it a path of its own."
        )
        if isinstance(exc, Exception) and not isinstance(exc, _TestDidNotRun):
            message += f"\nThe test itself also failed: {type(exc).__name__}: {str(exc)[:300]}"
        return CassetteError(message, path=path)


def open_session(request: pytest.FixtureRequest) -> ItemCassette:
    item = request.node
    assert isinstance(item, pytest.Item)
    state = item.config.stash[STATE]
    cfg = state.config
    options = marker_options(item) or {}
    path = cassette_path_for(item, cfg, options)
    mode = options.get("mode")
    if mode is not None:
        parse_mode(mode, source=f"@pytest.mark.cassette on {item.nodeid}")
    mode = expiry(item, state, path, mode)
    if resolve_mode(mode, cfg) is Mode.REPLAY and not path.exists():
        raise missing_cassette(item, state, path, mode)
    users = state.users.get(str(resolve_path(path)), set())
    if resolve_mode(mode, cfg) in (Mode.RECORD, Mode.RERECORD):
        # calls the file holds for tests this run did not collect (a node id or a file given, --lf):
        # kept, as the calls of a test sharing it; only a test collected elsewhere no longer shares it
        users = users | owners_not_collected(path, cfg, state, item)
    shared = len(users) > 1
    # a cassette several tests share may be written by any of them (auto records a test whose calls
    # it lacks): each takes the lock, and replaces only its own calls in it (see Session.shared)
    writes = will_write(path, mode, cfg) or (shared and resolve_mode(mode, cfg) is not Mode.REPLAY)
    lock = RecordLock(path) if writes else None
    unused = options.get("unused")
    if shared and unused is None:
        unused = "off"  # each test uses its own part of a shared cassette
    try:
        session = Session(
            path,
            mode,
            store=cfg.store_path(),
            check_order=options.get("check_order"),
            unused=unused,
            blob_threshold=options.get("blob_threshold"),
            compress=options.get("compress"),
            config=cfg,
            shared=(item.nodeid, frozenset(users)) if shared else None,
        )
        guard = item_guard(state, options, path)
        session.start()
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return ItemCassette(session, state, guard, lock, item.nodeid)


def missing_cassette(item: pytest.Item, state: RunState, path: Path, mode: str | None) -> CassetteError:
    """The error for a test that replays a cassette nobody recorded: which test, why replay, what to run."""
    if state.mode_flag is not None:
        why = f"--cassette-mode={state.mode_flag}"
    elif env_mode() is not None:
        why = f"CASSETTE_MODE={env_mode()}"
    elif mode is not None:
        why = f"@pytest.mark.cassette(mode={mode!r})"
    elif state.ci is not None:
        why = (
            f"CI detected ({state.ci} is set) and no mode set: on CI a missing cassette is an error, never "
            "a live recording; --cassette-mode=auto or [tool.cassette] mode = 'auto' records there"
        )
    else:
        why = "[tool.cassette] mode = 'replay'"
    record = shlex.join(["pytest", "--cassette-mode=auto", item.nodeid])
    return CassetteNotFoundError(
        f"{item.nodeid}: no cassette at {shown_path(path, state.config)}, and this run replays ({why}). "
        f"Record it locally, with the API key set: {record}, then commit the cassette.",
        path=path,
    )


def owners_not_collected(path: Path, cfg: Config, state: RunState, item: pytest.Item) -> set[str]:
    """The tests other than ``item`` whose calls the cassette at ``path`` holds and that this run
    did not see: not collected, in a file it did not collect or that a node id picked tests from.

    A test missing from a file collected whole (``-k`` and ``--lf`` deselect after collection) was
    removed or renamed: its calls are not kept. None when the file cannot be read (opening it
    reports why).
    """
    try:
        held = load_cassette(path, cfg.store_path())
    except (CassetteError, OSError):
        return set()
    owners = {i.extra.get("test") for i in held.interactions} - {item.nodeid, *state.collected}
    picked = any("::" in str(arg) for arg in item.config.args)  # node ids: their files are partial
    whole = set() if picked else {nodeid.split("::", 1)[0] for nodeid in state.collected}
    return {o for o in owners if isinstance(o, str) and o.split("::", 1)[0] not in whole}


def expiry(item: pytest.Item, state: RunState, path: Path, mode: str | None) -> str | None:
    """Apply ``max_age``: warn, fail the test, or switch this cassette to ``rerecord``."""
    if state.max_age is None or not path.exists():
        return mode
    if resolve_mode(mode, state.config) not in (Mode.AUTO, Mode.REPLAY):
        return mode
    age, source = cassette_age(path)
    if age <= state.max_age:
        return mode
    cfg = state.config
    state.expired[str(resolve_path(path))] = format_age(age)
    message = (
        f"cassette {path} is {format_age(age)} old (by {source}), older than [tool.cassette] "
        f"max_age = {cfg.max_age!r}. Re-record it: CASSETTE_MODE=rerecord pytest {item.nodeid}, "
        "review with `cassette drift`, then `cassette accept`."
    )
    if cfg.max_age_action == "fail":
        pytest.fail(message, pytrace=False)
    if cfg.max_age_action == "rerecord":
        return Mode.RERECORD.value
    warnings.warn(CassetteWarning(message), stacklevel=2)
    return mode


# The session's own fixture, under a name no test takes: a test parameter or a project fixture


def after_call(item: pytest.Item, exc: BaseException | None) -> None:
    """Finish the test's session and fail the test on a blocked connection, even a swallowed one."""
    holder = item.stash.get(ITEM, None)
    failure: CassetteError | None = None
    if holder is not None:
        try:
            holder.close(exc)
        except CassetteError as error:
            failure = error
    blocked = take_blocked()
    if blocked:
        failure = blocked[0]
    elif failure is None and isinstance(exc, NetworkBlockedError):
        failure = exc
    elif failure is None and isinstance(exc, CassetteError) and item.get_closest_marker("xfail") is None:
        failure = exc  # a replay miss, a missing blob...: its message, not 40 lines of cassette's source
    if failure is not None:
        # the message says it all; the chained SDK traceback would bury it
        where = user_frames(failure, item.config.rootpath) if failure is exc else ""
        raise pytest.fail.Exception(f"{type(failure).__name__}: {failure}{where}", pytrace=False) from None


_CASSETTE_DIR = str(Path(__file__).resolve().parent.parent)  # the cassette package
_LIBRARY_DIRS = tuple(
    {
        sysconfig.get_paths()[k]
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
        if k in sysconfig.get_paths()
    }
)


def user_frames(exc: BaseException, rootpath: Path, limit: int = 6) -> str:
    """Where the test's own code made the call that failed (cassette's and libraries' frames left out)."""
    frames: list[str] = []
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not (
            filename.startswith(_CASSETTE_DIR)
            or filename.startswith(_LIBRARY_DIRS)
            or filename.startswith("<")
        ):
            try:
                shown = os.path.relpath(filename, rootpath)
            except ValueError:  # another drive
                shown = filename
            frames.append(f"  {shown}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}")
        tb = tb.tb_next
    if not frames:
        return ""
    return "\nraised from:\n" + "\n".join(frames[-limit:])


ITEM = pytest.StashKey[ItemCassette]()
