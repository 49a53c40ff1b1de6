"""pytest plugin: the ``cassette`` marker and fixture, options, network guard, xdist and the run summary.

Registered through the ``pytest11`` entry point, so installing cassette is enough::

    @pytest.mark.cassette                      # tests/cassettes/test_agent/test_triage.json
    def test_triage(llm_client):
        assert "refund" in run_agent(llm_client, "My card was charged twice")

    def test_stats(cassette):                  # the fixture alone opens the same default cassette
        ...
        assert cassette.stats()["mode"] in ("record", "replay")

Mode precedence: ``--cassette-mode`` > ``CASSETTE_MODE`` > the marker's ``mode`` >
``[tool.cassette] mode``. The flag sets ``CASSETTE_MODE`` for the run, so it also
governs ``cassette.use``/``cassette.using`` inside tests and reaches xdist workers.
See docs/pytest.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cassette.config import (
    MODES,
    Config,
    clear_config_cache,
    env_mode,
    find_pyproject,
    host_pattern_problem,
    parse_config,
    replace,
)
from cassette.core.paths import resolve_path
from cassette.errors import CassetteConfigError, CassetteError, CassetteWarning, NetworkBlockedError
from cassette.maintenance.hygiene import cassette_age, find_orphans, format_age, parse_age
from cassette.seam.netguard import NetworkPolicy, guard_replay, take_blocked
from cassette.seam.session import (
    Mode,
    RunStats,
    Session,
    failed_path,
    parse_mode,
    pending_path,
    resolve_mode,
    run_stats,
)
from cassette.store.cassettes import load_cassette

MARKER_OPTIONS = (
    "path",
    "mode",
    "check_order",
    "unused",
    "blob_threshold",
    "compress",
    "allow_hosts",
    "network_guard",
    "block_loopback",
)
_SAFE_CHARS = re.compile(r"[^A-Za-z0-9._\-\[\]=+,@]")
_MAX_NAME = 120
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
)


@dataclass
class RunState:
    """What the plugin knows about this run (on the xdist controller: merged from every worker)."""

    config: Config
    guard: NetworkPolicy | None
    orphans: str
    max_age: float | None
    mode_flag: str | None
    saved_env_mode: str | None = None
    previous_guard: NetworkPolicy | None = None
    saved_stats: dict[str, Any] | None = None
    stats: RunStats = field(default_factory=RunStats)
    claimed: set[str] = field(default_factory=set)  # cassettes of collected tests, run or not
    collected: set[str] = field(default_factory=set)  # node ids of every collected test, run or not
    # cassette -> the ids of the collected tests using it (those of more than one are shared)
    users: dict[str, set[str]] = field(default_factory=dict)
    drifted: set[str] = field(default_factory=set)
    expired: dict[str, str] = field(default_factory=dict)  # path -> age text
    deselected: int = 0
    collect_errors: bool = False
    orphan_list: list[Path] = field(default_factory=list)
    orphan_skip: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "stats": self.stats.to_json(),
            "claimed": sorted(self.claimed),
            "drifted": sorted(self.drifted),
            "expired": dict(self.expired),
            "deselected": self.deselected,
            "collect_errors": self.collect_errors,
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.stats.merge(data["stats"])
        self.claimed.update(data["claimed"])
        self.drifted.update(data["drifted"])
        self.expired.update(data["expired"])
        self.deselected += data["deselected"]
        self.collect_errors = self.collect_errors or data["collect_errors"]


_STATE = pytest.StashKey[RunState]()
_ITEM = pytest.StashKey["ItemCassette"]()
_WORKEROUTPUT_KEY = "cassette"


# --- options and configuration --------------------------------------------------------------------


def _mode_arg(value: str) -> str:
    name = value.strip().lower()
    if name not in MODES:
        raise argparse.ArgumentTypeError(f"unknown cassette mode {value!r}; use one of: {', '.join(MODES)}")
    return name


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cassette", "cassette: record and replay LLM agent runs")
    group.addoption(
        "--cassette-mode",
        type=_mode_arg,
        default=None,
        metavar="MODE",
        help="auto, record, replay or rerecord for every cassette of the run (beats CASSETTE_MODE).",
    )
    group.addoption(
        "--cassette-dir",
        default=None,
        metavar="DIR",
        help="where default cassettes live (default: [tool.cassette] cassette_dir, tests/cassettes).",
    )
    group.addoption(
        "--cassette-allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="let the network guard pass this host (name, *.pattern, IP or CIDR); repeatable.",
    )
    group.addoption(
        "--cassette-no-network-guard",
        action="store_true",
        default=False,
        help="do not block connections while replaying.",
    )
    group.addoption(
        "--cassette-block-loopback",
        action="store_true",
        default=False,
        help="while replaying, block loopback connections too (prove replay makes no connection).",
    )
    group.addoption(
        "--cassette-orphans",
        choices=("off", "warn", "fail"),
        default=None,
        help="report (warn) or fail on cassette files no collected test uses (whole-suite runs only).",
    )


def _load_config(config: pytest.Config) -> Config:
    pyproject = find_pyproject(config.rootpath)
    cfg = parse_config(pyproject) if pyproject else Config(root=config.rootpath)
    chosen = config.getoption("cassette_dir")
    if chosen is not None:
        if not chosen.strip() or "\x00" in chosen:
            raise CassetteConfigError(
                f"--cassette-dir={chosen!r} names no directory. Give a directory such as tests/cassettes."
            )
        where = resolve_path(Path(chosen))
        if where.exists() and not where.is_dir():
            raise CassetteConfigError(
                f"--cassette-dir={chosen}: {where} is a file, not a directory. Give the directory that "
                "holds (or will hold) the cassettes."
            )
        cfg = replace(cfg, cassette_dir=str(where))
    return cfg


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path=None, *, mode=None, check_order=None, unused=None, blob_threshold=None, "
        "compress=None, allow_hosts=(), network_guard=None, block_loopback=None): run the test inside "
        "a cassette session (records if missing, replays if present). See docs/pytest.md.",
    )
    clear_config_cache()
    try:
        cfg = _load_config(config)
        max_age = parse_age(cfg.max_age, source=cfg.source) if cfg.max_age else None
        mode_flag = config.getoption("cassette_mode")
        if mode_flag is None and env_mode() is not None:
            parse_mode(env_mode() or "", source="the CASSETTE_MODE environment variable")
        _check_plugins(cfg)
    except CassetteConfigError as exc:
        raise pytest.UsageError(f"cassette: {exc}") from None
    for host in config.getoption("cassette_allow_host") or ():
        problem = host_pattern_problem(host)
        if problem is not None:
            raise pytest.UsageError(
                f"cassette: --cassette-allow-host={host} {problem}; it would never match. Use a host "
                "name, a pattern (*.internal), an IP or a CIDR network."
            )
    guard = None
    if cfg.network_guard and not config.getoption("cassette_no_network_guard"):
        guard = NetworkPolicy(
            allow_loopback=not config.getoption("cassette_block_loopback"),
            allow_hosts=(*cfg.allow_hosts, *config.getoption("cassette_allow_host")),
        )
    state = RunState(
        config=cfg,
        guard=guard,
        orphans=config.getoption("cassette_orphans") or cfg.orphans,
        max_age=max_age,
        mode_flag=mode_flag,
    )
    if mode_flag is not None:
        state.saved_env_mode = os.environ.get("CASSETTE_MODE")
        os.environ["CASSETTE_MODE"] = mode_flag
    state.previous_guard = guard_replay(guard)
    config.stash[_STATE] = state
    config.pluginmanager.register(_CollectionWatch(state), "cassette-collection-watch")


def _check_plugins(cfg: Config) -> None:
    """Load the configured plugins now (import and register, which checks each hook's arguments), so
    a typo is a usage error, not a failure in every test."""
    from cassette.plugins.manager import _new_manager, reset_plugin_manager

    if cfg.plugins:
        try:
            _new_manager(cfg.plugins, cfg.root)
        except CassetteConfigError as exc:
            raise CassetteConfigError(f"{cfg.source}: {exc}", path=cfg.source) from exc
    reset_plugin_manager()  # the next use reads this project's config and entry points


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    guard_replay(state.previous_guard)
    if state.mode_flag is not None:
        if state.saved_env_mode is None:
            os.environ.pop("CASSETTE_MODE", None)
        else:
            os.environ["CASSETTE_MODE"] = state.saved_env_mode
    from cassette.plugins.manager import reset_plugin_manager

    reset_plugin_manager()
    clear_config_cache()


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return None
    mode = state.mode_flag or env_mode() or state.config.mode
    guard = "off"
    if state.guard is not None:
        guard = "on" + ("" if state.guard.allow_loopback else ", loopback blocked")
    return f"cassette: mode={mode}, dir={state.config.cassette_root()}, network guard {guard}"


# --- paths ----------------------------------------------------------------------------------------


def safe_name(name: str) -> str:
    """A file name that is safe everywhere, stable, and distinct for distinct inputs.

    Characters outside ``[A-Za-z0-9._-[]=+,@]`` become ``_`` and a short hash of the
    original is appended; names longer than 120 characters are cut and hashed.

    Example::

        safe_name("test_x[gpt-4o]") == "test_x[gpt-4o]"
        safe_name("test_x[a b]")    == "test_x[a_b]-" + 8 hex digits
    """
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    cleaned = _SAFE_CHARS.sub("_", name).rstrip(". ")
    if cleaned != name or not cleaned:
        cleaned = f"{cleaned}-{digest[:8]}"
    if len(cleaned) > _MAX_NAME:
        cleaned = f"{cleaned[: _MAX_NAME - 11].rstrip('. ')}-{digest[:10]}"
    if cleaned.startswith(".") or cleaned.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
        cleaned = "_" + cleaned
    return cleaned


def default_cassette_path(item: pytest.Item, cassette_root: Path, rootpath: Path) -> Path:
    """``<cassette dir>/<test module path without .py>/<test name>.json``.

    The module path is taken relative to the directory holding the cassette dir
    (``tests/`` for ``tests/cassettes``) when the module lives there, else to the
    rootdir; class names join the test name with ``.``; each parameter set gets
    its own file.
    """
    module = Path(str(item.path))
    base = cassette_root.parent
    try:
        rel = resolve_path(module).relative_to(base)
    except ValueError:
        try:
            rel = resolve_path(module).relative_to(resolve_path(rootpath))
        except ValueError:
            rel = Path(module.name)
    parts = [safe_name(p) for p in rel.with_suffix("").parts]
    nodeid = item.nodeid
    test = nodeid.split("::", 1)[1].replace("::", ".") if "::" in nodeid else item.name
    return cassette_root.joinpath(*parts, safe_name(test) + ".json")


def _marker_options(item: pytest.Item) -> dict[str, Any] | None:
    """Merged, validated options of every ``cassette`` marker on the item, or ``None``.

    The closest marker wins key by key: the test's parameter set over the test function, the
    function over its class (a subclass over its base class), the class over the module. Two
    markers at the same level that disagree on a key are an error, never a silent pick.
    """
    found = list(item.iter_markers_with_node("cassette"))
    if not found:
        return None
    nodes: list[tuple[Any, list[pytest.Mark]]] = []
    for node, marker in found:
        if not nodes or nodes[-1][0] is not node:
            nodes.append((node, []))
        nodes[-1][1].append(marker)
    options: dict[str, Any] = {}
    for node, markers in reversed(nodes):  # farthest (module) first, the test itself last
        for layer in _layers(item, node, markers):
            layer_options: dict[str, Any] = {}
            for marker in layer:
                for key, value in _checked_marker(item, marker).items():
                    if key in layer_options and not _same(layer_options[key], value):
                        raise CassetteConfigError(
                            f"{item.nodeid}: two @pytest.mark.cassette markers on {_describe_node(node)} "
                            f"set {key} differently ({layer_options[key]!r} and {value!r}); neither would "
                            "be sure to win. Keep one marker, or give the option once."
                        )
                    layer_options[key] = value
            options.update(layer_options)
    return options


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an exotic value whose == raises: not the same
        return False


def _describe_node(node: Any) -> str:
    if isinstance(node, pytest.Class):
        return f"class {node.name}"
    if isinstance(node, pytest.Module):
        return f"module {node.name}"
    return str(getattr(node, "name", node))


def _layers(item: pytest.Item, node: Any, markers: list[pytest.Mark]) -> list[list[pytest.Mark]]:
    """One node's markers split into override layers, farthest first.

    A class's markers come from every class of its MRO (pytest lists base classes first): a
    subclass's marker overrides its base's. A parametrized test's ``pytest.param(marks=...)``
    markers override the function's decorators.
    """
    groups: list[set[int]] = []
    obj = getattr(node, "obj", None) if isinstance(node, pytest.Class) else None
    if isinstance(obj, type):
        for klass in reversed(obj.__mro__):
            raw = klass.__dict__.get("pytestmark", [])
            groups.append({id(getattr(m, "mark", m)) for m in (raw if isinstance(raw, list) else [raw])})
    elif node is item:
        callspec = getattr(item, "callspec", None)
        if callspec is not None:
            param_marks = {id(m) for m in getattr(callspec, "marks", ())}
            groups.append({id(m) for m in markers if id(m) not in param_marks})
            groups.append(param_marks)
    if not groups:
        return [markers]
    layers: list[list[pytest.Mark]] = []
    left = list(markers)
    for ids in groups:
        layer = [m for m in left if id(m) in ids]
        left = [m for m in left if id(m) not in ids]
        if layer:
            layers.append(layer)
    if left:  # added at run time (item.add_marker): the closest
        layers.append(left)
    return layers


def _checked_marker(item: pytest.Item, marker: pytest.Mark) -> dict[str, Any]:
    """One marker's options, each checked, so a wrong value fails the test by name, not deep inside."""
    where = f"{item.nodeid}: @pytest.mark.cassette"
    if len(marker.args) > 1:
        raise CassetteConfigError(
            f"{where} takes at most one positional argument (the path), got {len(marker.args)}: "
            f"{', '.join(repr(a) for a in marker.args)}. Pass the other options by keyword."
        )
    unknown = sorted(set(marker.kwargs) - set(MARKER_OPTIONS))
    if unknown:
        raise CassetteConfigError(
            f"{item.nodeid}: unknown @pytest.mark.cassette option(s) {', '.join(unknown)}; "
            f"known: {', '.join(MARKER_OPTIONS)}."
        )
    options = dict(marker.kwargs)
    if marker.args:
        if "path" in options:
            raise CassetteConfigError(
                f"{where} got the path twice: {marker.args[0]!r} as its argument and "
                f"path={options['path']!r}. Keep one."
            )
        options["path"] = marker.args[0]
    for key, value in options.items():
        problem = _option_problem(key, value)
        if problem:
            raise CassetteConfigError(f"{where}({key}={value!r}): {key} must be {problem}. Fix the marker.")
    if options.get("path") is not None:
        options["path"] = os.fspath(options["path"])
    return options


def _option_problem(key: str, value: Any) -> str | None:
    """What ``value`` should be for the marker option ``key``, or ``None`` if it is fine."""
    if value is None:
        return None
    if key == "path":
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str):
            return "a string or a str path (relative to the cassette dir)"
        if "\x00" in value:
            return "a path without NUL bytes"
        if Path(value).name in ("", ".", ".."):
            return "a file name such as 'orders/status' (relative to the cassette dir), not a directory"
        return None
    if key == "mode":
        if not isinstance(value, str) or value.strip().lower() not in MODES:
            return "one of " + ", ".join(repr(m) for m in MODES)
        return None
    if key in ("check_order", "unused"):
        if isinstance(value, bool) or value in ("warn", "error", "off"):
            return None
        return "'warn', 'error', 'off', True or False"
    if key == "blob_threshold":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return "a non-negative number of bytes"
        return None
    if key == "allow_hosts":
        hosts = [value] if isinstance(value, str) else value
        if isinstance(hosts, list | tuple) and all(isinstance(h, str) for h in hosts):
            problems = [f"{h!r} {p}" for h in hosts if (p := host_pattern_problem(h)) is not None]
            return None if not problems else "hosts that can match; " + "; ".join(problems)
        return "a host (string) or a list of hosts such as ['vault.internal', '10.0.0.0/8']"
    if key in ("network_guard", "block_loopback", "compress"):
        return None if isinstance(value, bool) else "True or False"
    return None


def cassette_path_for(item: pytest.Item, cfg: Config, options: dict[str, Any] | None) -> Path:
    """The cassette a test uses: the marker's ``path`` (relative to the cassette dir) or the default.

    A relative ``path`` must stay inside the cassette dir or the project; an absolute one is kept.
    """
    root = cfg.cassette_root()
    given = (options or {}).get("path")
    if given is None:
        return default_cassette_path(item, root, item.config.rootpath)
    path = Path(os.fspath(given))
    hidden = [p for p in path.parts if p.startswith(".") and p != ".."]
    if hidden and not path.is_absolute():
        raise CassetteConfigError(
            f"{item.nodeid}: @pytest.mark.cassette path {given!r} has a hidden part ({hidden[0]!r}): "
            "`cassette ls`, `verify` and `gc` skip hidden files and folders, so gc would delete the "
            "blobs it needs. Use a name that does not start with a dot."
        )
    legacy: Path | None = None
    if path.suffix != ".json":  # "gpt-4.1" and "notes.yaml" too: a cassette file is always *.json
        legacy, path = path, path.with_name(path.name + ".json")
    full = path if path.is_absolute() else root / path
    if legacy is not None and not full.exists() and full.with_name(legacy.name).is_file():
        old = full.with_name(legacy.name)
        raise CassetteConfigError(
            f"{item.nodeid}: its cassette is {full}, but an earlier release wrote it as {old} "
            "(without `.json`, which `cassette ls`, `verify` and `gc` do not see: gc would delete its "
            f"blobs). Rename it: git mv {old} {full}"
        )
    if path.is_absolute():
        return path
    if ".." not in path.parts:  # below the cassette dir: nothing to resolve (resolving costs syscalls)
        return full
    resolved = resolve_path(full)
    inside = (root, resolve_path(item.config.rootpath), resolve_path(cfg.root))
    if not any(resolved == base or base in resolved.parents for base in inside):
        raise CassetteConfigError(
            f"{item.nodeid}: @pytest.mark.cassette path {given!r} leads out of the project: it is "
            f"relative to the cassette dir {root} and resolves to {resolved}. Use a path inside the "
            "cassette dir, or an absolute path if that location is really meant."
        )
    return full


# --- the session around a test --------------------------------------------------------------------


class _TestDidNotRun(Exception):
    """Finishes a session whose test never ran (a later fixture failed): nothing is committed."""


_HELD: dict[str, int] = {}  # this process's record locks: a nested or leaked one must not self-deadlock
_HELD_LOCK = threading.Lock()


class _RecordLock:
    """Held while a test records a cassette, so two processes (xdist workers) never record one file at once.

    Without it both would see the file missing, both would record, and the last writer would
    silently drop the other's recording. With it the second waits, then reads the cassette as
    the first left it, exactly as in a serial run. An OS file lock (``flock``; ``msvcrt.locking`` on
    Windows) in the temp dir: released by the OS if the worker dies, never left in the repo.
    """

    def __init__(self, path: Path) -> None:
        self.key = str(resolve_path(path))
        self.handle: Any = None
        with _HELD_LOCK:
            if self.key in _HELD:
                _HELD[self.key] += 1
                return
            _HELD[self.key] = 1
        try:
            self.handle = self._acquire()
        except BaseException:
            self._forget()
            raise

    def _acquire(self) -> Any:
        tag = str(os.getuid()) if hasattr(os, "getuid") else "user"
        folder = Path(tempfile.gettempdir()) / f"cassette-locks-{tag}"
        name = hashlib.sha256(self.key.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".lock"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            handle = open(folder / name, "a+b")  # noqa: SIM115 - held until release()
        except OSError:
            return None  # no usable temp dir: record unlocked, as before
        try:
            if sys.platform == "win32":
                import msvcrt

                while True:
                    try:
                        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                        break
                    except OSError:
                        time.sleep(0.05)
            else:
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except BaseException:
            handle.close()
            raise
        return handle

    def _forget(self) -> None:
        with _HELD_LOCK:
            count = _HELD.get(self.key, 0) - 1
            if count > 0:
                _HELD[self.key] = count
            else:
                _HELD.pop(self.key, None)

    def release(self) -> None:
        handle, self.handle = self.handle, None
        self._forget()
        if handle is not None:
            handle.close()  # closing drops the OS lock


def _will_write(path: Path, mode: str | None, cfg: Config) -> bool:
    resolved = resolve_mode(mode, cfg)
    return resolved in (Mode.RECORD, Mode.RERECORD) or (resolved is Mode.AUTO and not path.exists())


def _file_mark(path: Path) -> tuple[int, int, int, int] | None:
    """What is at ``path`` now. Every cassette write is an atomic rename of a new file: a new inode."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ItemCassette:
    """The session of one test, and the guard policy swapped in for it."""

    def __init__(
        self,
        session: Session,
        state: RunState,
        guard: NetworkPolicy | None,
        lock: _RecordLock | None = None,
        nodeid: str = "",
    ) -> None:
        self.session = session
        self.state = state
        self.lock = lock
        self.nodeid = nodeid
        self.previous_guard = guard_replay(guard)
        self.closed = False
        self.conflict: CassetteError | None = None
        # a recording: its cassette's three files as the test found them. Another session writing one
        # during the test (`cassette.using` on the test's own cassette) would be overwritten by this one;
        # no other test's session can (a recording holds the cassette's lock)
        path = session.path
        files = () if session.replaying else (path, pending_path(path), failed_path(path))
        self.marks = {p: _file_mark(p) for p in files}

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
        now = {p: _file_mark(p) for p in self.marks}
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


def _open_session(request: pytest.FixtureRequest) -> ItemCassette:
    item = request.node
    assert isinstance(item, pytest.Item)
    state = item.config.stash[_STATE]
    cfg = state.config
    options = _marker_options(item) or {}
    path = cassette_path_for(item, cfg, options)
    mode = options.get("mode")
    if mode is not None:
        parse_mode(mode, source=f"@pytest.mark.cassette on {item.nodeid}")
    mode = _expiry(item, state, path, mode)
    users = state.users.get(str(resolve_path(path)), set())
    if resolve_mode(mode, cfg) in (Mode.RECORD, Mode.RERECORD):
        # calls the file holds for tests this run did not collect (a node id or a file given, --lf):
        # kept, as the calls of a test sharing it; only a test collected elsewhere no longer shares it
        users = users | _owners_not_collected(path, cfg, state, item)
    shared = len(users) > 1
    # a cassette several tests share may be written by any of them (auto records a test whose calls
    # it lacks): each takes the lock, and replaces only its own calls in it (see Session.shared)
    writes = _will_write(path, mode, cfg) or (shared and resolve_mode(mode, cfg) is not Mode.REPLAY)
    lock = _RecordLock(path) if writes else None
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
        guard = _item_guard(state, options, path)
        session.start()
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return ItemCassette(session, state, guard, lock, item.nodeid)


def _owners_not_collected(path: Path, cfg: Config, state: RunState, item: pytest.Item) -> set[str]:
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


def _item_guard(state: RunState, options: dict[str, Any], path: Path) -> NetworkPolicy | None:
    if options.get("network_guard") is False:
        return None
    base = state.guard
    if base is None and options.get("network_guard") is not True:
        return None
    hosts = options.get("allow_hosts") or ()
    if isinstance(hosts, str):
        hosts = (hosts,)
    block_loopback = options.get("block_loopback")
    allow_loopback = base.allow_loopback if base is not None else True
    if block_loopback is not None:
        allow_loopback = not block_loopback
    return NetworkPolicy(
        allow_loopback=allow_loopback,
        allow_hosts=(*(base.allow_hosts if base else ()), *hosts),
        reason=f"replaying cassette {path}",
    )


def _expiry(item: pytest.Item, state: RunState, path: Path, mode: str | None) -> str | None:
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
# called `cassette` hides the public one, and must not switch off what a marker asks for.
_SESSION_FIXTURE = "_cassette_session"


@pytest.fixture(name=_SESSION_FIXTURE)
def _cassette_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    try:
        holder = _open_session(request)
    except CassetteError as exc:
        # `from None`: the message says it all; a chained copy of it would only double the report
        raise pytest.fail.Exception(f"{type(exc).__name__}: {exc}", pytrace=False) from None
    except OSError as exc:  # the file system refused the cassette path itself
        raise pytest.fail.Exception(
            f"CassetteIOError: cannot open the cassette of {request.node.nodeid}: {exc}. Fix the "
            "cassette path (marker or --cassette-dir) or the directory's permissions.",
            pytrace=False,
        ) from None
    request.node.stash[_ITEM] = holder
    try:
        yield holder.session
    finally:
        if not holder.closed:  # the test body never ran: keep nothing as the cassette
            try:
                holder.close(_TestDidNotRun(f"{request.node.nodeid} did not run"))
            except CassetteError as exc:
                if exc is holder.conflict:  # a setup fixture wrote the test's cassette: say where it is
                    raise pytest.fail.Exception(f"CassetteError: {exc}", pytrace=False) from None


@pytest.fixture
def cassette(_cassette_session: Session) -> Session:
    """The live `Session` of this test: ``interactions``, ``stats()``, ``mode``, ``path``.

    Requesting it opens the test's cassette (at the default path unless a
    ``cassette`` marker says otherwise); the marker opens it without the fixture.

    Example::

        def test_triage(cassette, llm_client):
            run_agent(llm_client, "My card was charged twice")
            assert [i.kind for i in cassette.interactions][:1] == ["llm"]
    """
    return _cassette_session


@pytest.fixture
def cassette_session(_cassette_session: Session) -> Session:
    """The same session as the ``cassette`` fixture, for tests that also use the ``cassette`` module.

    Example::

        def test_triage(cassette_session):
            client = cassette.instrument(make_client())
            ...
            assert cassette_session.interactions
    """
    return _cassette_session


@pytest.fixture(autouse=True)
def _cassette_marker(request: pytest.FixtureRequest) -> None:
    """Open the cassette for tests marked ``@pytest.mark.cassette`` before any other function fixture."""
    if request.node.get_closest_marker("cassette") is not None:
        request.getfixturevalue(_SESSION_FIXTURE)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    take_blocked()  # attempts from an earlier test are that test's business
    try:
        result = yield
    except BaseException as exc:
        _after_call(item, exc)
        raise
    _after_call(item, None)
    return result


def _after_call(item: pytest.Item, exc: BaseException | None) -> None:
    """Finish the test's session and fail the test on a blocked connection, even a swallowed one."""
    holder = item.stash.get(_ITEM, None)
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
        where = _user_frames(failure, item.config.rootpath) if failure is exc else ""
        raise pytest.fail.Exception(f"{type(failure).__name__}: {failure}{where}", pytrace=False) from None


_CASSETTE_DIR = str(Path(__file__).resolve().parent)
_LIBRARY_DIRS = tuple(
    {
        sysconfig.get_paths()[k]
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
        if k in sysconfig.get_paths()
    }
)


def _user_frames(exc: BaseException, rootpath: Path, limit: int = 6) -> str:
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


# --- collection: which cassettes the suite claims -------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    state.collected.update(item.nodeid for item in items)
    for item in items:
        fixturenames = getattr(item, "fixturenames", ())
        try:
            options = _marker_options(item)
            if options is None and _SESSION_FIXTURE not in fixturenames:
                continue
            path = str(resolve_path(cassette_path_for(item, state.config, options)))
        except (CassetteError, OSError, TypeError, ValueError):
            continue  # reported when the test runs
        state.users.setdefault(path, set()).add(item.nodeid)  # several: a shared cassette (_open_session)
        state.claimed.add(path)


class _CollectionWatch:
    """Registered per run: counts deselected tests and collection errors (hooks without ``config``)."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.state.deselected += len(items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.state.collect_errors = True


# --- run statistics, xdist, orphans, summary ------------------------------------------------------


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    # run_stats is process-wide; an in-process pytest run (pytester) must count only its own sessions
    state.saved_stats = run_stats.to_json()
    run_stats.__init__()  # type: ignore[misc]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    mine = run_stats.to_json()
    run_stats.__init__()  # type: ignore[misc]
    if state.saved_stats is not None:
        # the counts as the enclosing run left them: a pytester run inside a test is its own run,
        # and its replays (and misses) must not show in the enclosing run's summary
        run_stats.merge(state.saved_stats)
    state.stats.merge(mine)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller reports for everyone
        workeroutput[_WORKEROUTPUT_KEY] = state.to_json()
        return
    if state.orphans == "off":
        return
    state.orphan_skip = _partial_run(session, state)
    if state.orphan_skip is None:
        used = state.claimed | state.stats.cassettes_used
        state.orphan_list = find_orphans(state.config.cassette_root(), used)
        if state.orphan_list and state.orphans == "fail" and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: merge what a worker counted."""
    data = getattr(node, "workeroutput", {}).get(_WORKEROUTPUT_KEY)
    state = node.config.stash.get(_STATE, None)
    if data and state is not None:
        state.merge(data)


def _partial_run(session: pytest.Session, state: RunState) -> str | None:
    """Why this run is not the whole suite (orphans cannot be judged), or ``None``."""
    config = session.config
    if config.option.keyword:
        return "-k selected part of the suite"
    if config.option.markexpr:
        return "-m selected part of the suite"
    if state.deselected:
        return f"{state.deselected} test(s) were deselected"
    if state.collect_errors:
        return "collection had errors"
    if session.shouldfail or session.shouldstop:
        return "the run stopped early"
    if config.getoption("lf", False) or config.getoption("stepwise", False):
        return "--lf/--sw ran part of the suite"
    if any("::" in str(arg) for arg in config.args):
        return "node ids selected part of the suite"
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        root = state.config.cassette_root()
        dirs = [resolve_path(Path(config.invocation_params.dir, str(a))) for a in config.args]
        if not any(d.is_dir() and (root == d or d in root.parents) for d in dirs):
            return "the paths given do not contain the cassette directory"
    return None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or hasattr(config, "workerinput"):
        return
    lines = summary_lines(state)
    if config.get_verbosity() <= -2:  # -qq: only what needs action (drift, expired, orphans found)
        lines = [(line, markup) for line, markup in lines if any(markup.values())]
    if not lines:
        return
    terminalreporter.section("cassette", sep="-")
    for line, markup in lines:
        terminalreporter.line(line, **markup)


def _calls(counts: dict[str, int]) -> str:
    names = {"llm": "LLM", "tool": "tool", "http": "HTTP"}
    order = [*names, *sorted(set(counts) - set(names))]
    parts = [f"{counts[k]} {names.get(k, k)}" for k in order if counts.get(k)]
    return ", ".join(parts) + " calls" if parts else "no calls"


def _failed_kept(stats: RunStats) -> int:
    """The ``*.failed.json`` files the run's failed recordings left on disk.

    A test that skipped or whose fixture failed before any call leaves none (its empty recording is
    removed), nor does a failed recording that a later one of the same cassette replaced.
    """
    kept = {failed_path(Path(p)) for p in stats.files.get("failed", ())}
    return sum(1 for p in kept if p.is_file())


def summary_lines(state: RunState) -> list[tuple[str, dict[str, bool]]]:
    """The terminal summary: one line per category (plus the files a reader must act on)."""
    s = state.stats
    out: list[tuple[str, dict[str, bool]]] = []
    kept = _failed_kept(s)
    if s.replayed or s.recorded or s.rerecorded or kept or s.missed:
        # files, not tests: the tests sharing a cassette count it once
        out.append((f"replayed: {s.cassettes('replayed')} cassette(s), {_calls(s.served)} served", {}))
        if s.missed:
            out.append(
                (
                    f"missed: {s.cassettes('missed')} cassette(s) met a call they hold no recording of "
                    "(see the failures above)",
                    {"red": True},
                )
            )
        failed = f" (and {kept} failed recording(s) kept in *.failed.json)" if kept else ""
        recorded = s.cassettes("recorded")
        out.append((f"recorded: {recorded} cassette(s){failed}, {_calls(s.recorded_calls)} made live", {}))
        drift = f", {s.drifted} with drift" if s.drifted else ", no drift"
        rerecorded = s.cassettes("rerecorded")
        hint = " (review: cassette drift; keep: cassette accept)" if rerecorded else ""
        out.append((f"re-recorded: {rerecorded} cassette(s){drift}{hint}", {"yellow": bool(s.drifted)}))
        out.append((f"tokens not spent: {s.tokens_saved:,} (recorded usage of replayed calls)", {}))
        for p in sorted(state.drifted):
            out.append((f"  drifted: {p}", {"yellow": True}))
    if state.expired:
        out.append(
            (
                f"expired: {len(state.expired)} cassette(s) older than max_age = {state.config.max_age}",
                {"yellow": True},
            )
        )
        for p, age in sorted(state.expired.items()):
            out.append((f"  {p} ({age})", {"yellow": True}))
    if state.orphans != "off":
        if state.orphan_skip:
            out.append((f"orphans: not checked ({state.orphan_skip})", {}))
        elif state.orphan_list:
            red = state.orphans == "fail"
            out.append(
                (
                    f"orphans: {len(state.orphan_list)} cassette file(s) under "
                    f"{state.config.cassette_root()} that no collected test uses "
                    "(delete them, then `cassette gc --apply`):",
                    {"red": red, "yellow": not red},
                )
            )
            for orphan in state.orphan_list:
                out.append((f"  {orphan}", {"red": red, "yellow": not red}))
        else:
            out.append(("orphans: none", {}))
    return out
