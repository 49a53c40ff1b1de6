"""Keeping a cassette directory tidy: orphans, expiry, blob garbage and stale temp files.

Pure functions over the file system, so the pytest plugin and the CLI share them
and tests need no pytest run to exercise them.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cassette.config import load_config
from cassette.core.canonical import loads
from cassette.core.compression import expand
from cassette.core.paths import resolve_path
from cassette.errors import CassetteConfigError, CassetteError
from cassette.git.repo import committed_time
from cassette.store.blobs import WRITER_PREFIX, BlobStore
from cassette.store.cassettes import load_cassette
from cassette.store.files import TMP_SUFFIX, read_regular
from cassette.store.manifest import parse_manifest

PENDING_SUFFIX = ".pending.json"
FAILED_SUFFIX = ".failed.json"
_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([hdwy])\s*")
_UNIT_SECONDS = {"h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
# A writer that has not renamed its temp file after this long is dead even if its pid was reused.
STALE_TMP_SECONDS = 3600.0
_TMP_NAME = re.compile(r"^\..+\.(\d+)\.[0-9a-f]+" + re.escape(TMP_SUFFIX) + "$")
# `cassette gc` keeps an unreferenced blob modified this recently: a recording by a release that
# leaves no marker (or a tool writing blobs another way) may be about to save the manifest using it.
GC_GRACE_SECONDS = 600.0
# When the store cannot be written to read its own clock, how far file times may lag time.time()
# (file systems stamp with a coarse clock; a network one with the server's).
CLOCK_SLACK_SECONDS = 2.0
_GRACE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*")
_GRACE_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


# --- where things are -----------------------------------------------------------------------------


def cassette_dir(given: Path | None) -> Path:
    """The directory a command works on: the one given, else the project's ``cassette_dir``."""
    if given is not None:
        if not given.is_dir():
            raise CassetteError(
                f"{given} is not a directory. Pass the cassette directory (e.g. tests/cassettes).", path=given
            )
        return given
    root = load_config().cassette_root()
    if not root.is_dir():
        raise CassetteError(
            f"the cassette directory {root} does not exist yet. Record a cassette first, or pass one.",
            path=root,
        )
    return root


def is_side_file(path: Path) -> bool:
    """``*.pending.json`` and ``*.failed.json``: re-recordings awaiting review, kept failures."""
    return path.name.endswith((PENDING_SUFFIX, FAILED_SUFFIX))


def cassette_files(root: Path, *, side_files: bool = False) -> list[Path]:
    """Every cassette manifest under ``root`` (sorted), skipping ``.blobs`` and hidden files.

    Example::

        cassette_files(Path("tests/cassettes"))  # [.../test_agent/test_triage.json, ...]
    """
    found: list[Path] = []
    if not root.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(".json"):
                continue
            p = Path(dirpath) / name
            if side_files or not is_side_file(p):
                found.append(p)
    return found


# --- orphans --------------------------------------------------------------------------------------


def find_orphans(root: Path, used: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Cassettes under ``root`` that nothing in ``used`` refers to (pending/failed files ignored).

    Example::

        find_orphans(Path("tests/cassettes"), {"tests/cassettes/a.json"})  # [.../b.json]
    """
    seen = {os.path.realpath(p) for p in used}
    return [p for p in cassette_files(root) if os.path.realpath(p) not in seen]


# --- expiry ---------------------------------------------------------------------------------------


def parse_age(text: str, *, key: str = "max_age", source: Path | None = None) -> float:
    """Seconds in an age such as ``"90d"``, ``"12w"``, ``"36h"`` or ``"1y"``.

    Example::

        parse_age("2w") == 14 * 86400
    """
    match = _AGE.fullmatch(text or "")
    if not match:
        where = f"{source}: " if source else ""
        raise CassetteConfigError(
            f'{where}[tool.cassette] {key} must be a number followed by h, d, w or y (e.g. "90d"), '
            f"got {text!r}. Fix the value.",
            path=source,
        )
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def cassette_age(path: Path, now: float | None = None) -> tuple[float, str]:
    """``(seconds, source)``: age from the last git commit touching ``path``, else from its mtime."""
    now = time.time() if now is None else now
    committed = committed_time(path)
    if committed is not None:
        return max(0.0, now - committed), "last commit"
    return max(0.0, now - path.stat().st_mtime), "file modification time"


def format_age(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.0f} days" if days >= 2 else f"{seconds / 3600:.0f} hours"


# --- blobs ----------------------------------------------------------------------------------------


@dataclass
class BlobUse:
    """The blobs a set of manifests reference, transitively (JSON blobs can reference blobs)."""

    referenced: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)


def _refs(value: Any) -> Iterator[tuple[str, bool]]:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            literal = v.get("$literal")
            if len(v) == 1 and isinstance(literal, dict):
                stack.extend(literal.values())  # user data that merely looks like a reference
                continue
            ref = v.get("$blob")
            if isinstance(ref, str):
                yield ref, bool(v.get("$json"))
                continue
            stack.extend(v.values())


def blob_use(manifests: Iterable[dict[str, Any]], store: Path, into: BlobUse | None = None) -> BlobUse:
    """Every blob id reachable from the parsed manifest documents, and the ones not in ``store``."""
    use = into or BlobUse()
    blobs = BlobStore(store)
    todo: list[tuple[str, bool]] = [r for doc in manifests for r in _refs(doc)]
    while todo:
        blob_id, is_json = todo.pop()
        if blob_id in use.referenced:
            continue
        use.referenced.add(blob_id)
        try:
            path = blobs.path_for(blob_id)
        except CassetteError:
            continue
        if not path.is_file():
            use.missing.add(blob_id)
            continue
        if is_json:
            try:
                todo.extend(_refs(loads(path.read_bytes())))
            except (ValueError, RecursionError):
                continue
    return use


def read_manifest(path: Path) -> dict[str, Any]:
    """The raw manifest document, after checking it is a readable cassette (raises `CassetteError`)."""
    try:
        data = read_regular(path)  # a FIFO or a device: refused, never waited on or read forever
    except OSError:
        load_cassette(path)  # raises the specific not-found / is-a-directory / not-regular error
        raise
    data = expand(data, path)  # a compressed cassette: expanded once, for both reads below
    parse_manifest(data, path)
    doc = loads(data)
    assert isinstance(doc, dict)
    return doc


def store_blobs(store: Path) -> dict[str, Path]:
    """``{blob id: file}`` for every blob file in the store."""
    out: dict[str, Path] = {}
    if not store.is_dir():
        return out
    for sub in store.iterdir():
        if not sub.is_dir() or len(sub.name) != 2:
            continue
        for f in sub.iterdir():
            blob_id = sub.name + f.name
            if f.is_file() and re.fullmatch(r"[0-9a-f]{40}", blob_id):
                out[blob_id] = f
    return out


@dataclass
class GcPlan:
    """What `cassette gc` would remove, and the unreferenced blobs it keeps because they are recent.

    ``cutoff`` is the store-clock time before which an unreferenced blob counts as garbage: the
    start of the plan less the grace period, or the start of the oldest recording in progress.
    """

    store: Path
    blobs: list[Path] = field(default_factory=list)
    temp_files: list[Path] = field(default_factory=list)
    young: list[Path] = field(default_factory=list)  # unreferenced, modified at or after ``cutoff``
    recordings: list[Path] = field(default_factory=list)  # markers of recordings in progress
    cutoff: float = float("inf")
    restored: list[Path] = field(default_factory=list)  # touched by a recording while being removed

    @property
    def size(self) -> int:
        total = 0
        for p in (*self.blobs, *self.temp_files):
            try:
                total += p.stat().st_size
            except OSError:
                pass
        return total


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def is_stale_temp(path: Path, now: float | None = None) -> bool:
    """A temp file from `atomic_write` whose writer is gone (its pid is dead, or it is an hour old)."""
    match = _TMP_NAME.match(path.name)
    if not match:
        return False
    now = time.time() if now is None else now
    try:
        age = now - path.stat().st_mtime
    except OSError:
        return False
    return age > STALE_TMP_SECONDS or not _pid_alive(int(match.group(1)))


def parse_grace(text: str) -> float:
    """Seconds in a grace period such as ``"0"``, ``"90s"``, ``"10m"``, ``"1h"`` or ``"2d"``.

    Example::

        parse_grace("10m") == 600.0
    """
    match = _GRACE.fullmatch(text or "")
    if not match:
        raise CassetteConfigError(
            f"--grace must be a number of seconds, optionally followed by s, m, h or d (e.g. 10m), "
            f"got {text!r}. Fix the value."
        )
    return float(match.group(1)) * _GRACE_UNIT[match.group(2)]


def recordings_in_progress(store: Path, now: float | None = None) -> list[Path]:
    """The markers of recordings writing to ``store`` now (see `BlobStore.writing`); dead ones left out."""
    try:
        names = [n for n in os.listdir(store) if n.startswith(WRITER_PREFIX + ".")]
    except OSError:
        return []
    return sorted(store / n for n in names if _TMP_NAME.match(n) and not is_stale_temp(store / n, now))


def _store_clock(store: Path) -> float:
    """Now, as the store's file system stamps a file it writes (its clock is coarser than time.time())."""
    probe = store / f".gc.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}"
    try:
        with open(probe, "xb"):
            pass
        try:
            return os.stat(probe).st_mtime
        finally:
            probe.unlink()
    except OSError:  # a read-only store (a dry run on someone else's files): the process clock, less slack
        return time.time() - CLOCK_SLACK_SECONDS


def plan_gc(root: Path, store: Path, *, grace: float = GC_GRACE_SECONDS) -> GcPlan:
    """Blobs in ``store`` no manifest under ``root`` references, and stale temp files under both.

    Pending and failed recordings count as references: their blobs are kept. So is any
    unreferenced blob modified less than ``grace`` seconds before the plan starts, or after
    the oldest recording in progress began (its marker is read before any manifest, and a
    recording touches each blob it re-uses): a manifest saved a moment later may use it.
    An unreadable manifest stops the plan (its references are unknown).

    Example::

        plan = plan_gc(Path("tests/cassettes"), Path("tests/cassettes/.blobs"), grace=0)
        [p.name for p in plan.blobs]
    """
    # one spelling per file: the store may lie inside root
    root, store = resolve_path(root), resolve_path(store)
    plan = GcPlan(store=store)
    if store.is_dir():  # before any manifest is read: a recording starting later writes after this
        started = _store_clock(store)
        plan.recordings = recordings_in_progress(store)
        begun = []
        for marker in plan.recordings:
            try:
                begun.append(marker.stat().st_mtime)
            except OSError:  # finished meanwhile: its manifest is read below
                continue
        plan.cutoff = min([started - grace, *begun])
    docs = []
    for path in cassette_files(root, side_files=True):
        try:
            docs.append(read_manifest(path))
        except CassetteError as exc:
            raise CassetteError(
                f"cannot collect garbage while {path} is unreadable ({exc}); the blobs it references are "
                "unknown. Fix or delete that cassette, then run gc again.",
                path=path,
            ) from exc
    use = blob_use(docs, store)
    for blob_id, path in sorted(store_blobs(store).items(), key=lambda item: item[1]):
        if blob_id in use.referenced:
            continue
        try:
            modified = path.stat().st_mtime
        except OSError:
            continue
        (plan.young if modified >= plan.cutoff else plan.blobs).append(path)
    temps: set[Path] = set()
    for base in (root, store):
        if base.is_dir():
            temps.update(p for p in base.rglob("*" + TMP_SUFFIX) if p.is_file() and is_stale_temp(p))
    plan.temp_files = sorted(temps)
    return plan


def apply_gc(plan: GcPlan) -> int:
    """Remove what the plan lists (and blob directories left empty); returns the bytes freed.

    A blob a recording touched since the plan (it re-uses it) is kept where it is, listed in
    ``plan.restored``: its mtime is read before it is moved, so a replay reading it meanwhile
    finds it. The others are renamed aside, then their mtime read again: one touched in that
    moment is put back. A recording touching it after the rename finds no blob and writes it anew.
    """
    freed = 0
    for p in plan.blobs:
        try:
            if p.stat().st_mtime >= plan.cutoff:
                plan.restored.append(p)
                continue
        except FileNotFoundError:
            continue
        aside = p.with_name(f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")
        try:
            os.rename(p, aside)
        except FileNotFoundError:
            continue
        info = aside.stat()
        if info.st_mtime >= plan.cutoff:
            os.replace(aside, p)  # a copy written meanwhile holds the same bytes
            plan.restored.append(p)
            continue
        aside.unlink()
        freed += info.st_size
    for p in plan.temp_files:
        try:
            size = p.stat().st_size
            p.unlink()
        except FileNotFoundError:
            continue
        freed += size
    for p in plan.blobs:
        try:
            p.parent.rmdir()
        except OSError:
            pass
    return freed


def format_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
