"""The secret scan behind ``cassette scan`` and the ``cassette-secrets`` hook.

With ``staged=True`` the files come from the git index (what the commit will
contain), never from ``git diff`` output, which a textconv driver rewrites.
Staged cassettes and staged blob-store payloads are both scanned, as raw text
and as decoded JSON strings; a finding in a payload names the cassette and the
JSON path that reference it. Results are cached by git blob id (plus a version
of the rule set) in ``.git/cassette-scan-cache``, so unchanged payloads shared
by many cassettes or commits are scanned once.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cassette import __version__
from cassette.config import load_config
from cassette.core.canonical import loads
from cassette.core.paths import resolve_path
from cassette.errors import CassetteIOError, CassetteNotFoundError, NotRegularFileError
from cassette.git.repo import StagedFile, index_entries, staged_changes
from cassette.git.snapshot import (
    blob_path_id,
    blob_refs_with_paths,
    git_blob_reader,
    index_files,
    looks_like_manifest,
    open_repo,
    read_object,
)
from cassette.plugins.manager import get_plugin_manager
from cassette.secrets import DAMAGED_RULE, SCAN_VERSION, Finding, Scanner, SecretRule, rules_from_plugins
from cassette.store.blobs import BLOB_DIR_NAME, BLOB_ID, git_blob_id
from cassette.store.files import atomic_write, file_kind, not_regular_reason, read_regular

CACHE_NAME = "cassette-scan-cache"
CACHE_LIMIT = 200_000
# Besides cassettes and blob stores: other tools' cassettes, traces and logs.
TEXT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".har", ".log")
_Row = tuple[str, int, str | None, str, str]


@dataclass(frozen=True)
class Reported:
    """A finding as reported: the file it is in and, for a blob payload, the cassette referencing it."""

    finding: Finding
    cassette: str | None = None
    where: str | None = None  # JSON path inside the cassette, through the blob reference

    @property
    def path(self) -> str | None:
        return self.where if self.cassette else self.finding.path

    def to_json(self) -> dict[str, Any]:
        out = self.finding.to_json()
        out["path"] = self.path
        if self.cassette:
            out["cassette"] = self.cassette
        return out

    def __str__(self) -> str:
        f = self.finding
        where = f" in {self.cassette}" if self.cassette else ""
        if self.path:
            where += f" at {self.path}"
        return f"{f.file}:{f.line}: {f.rule}{where}: {f.masked} (fingerprint {f.fingerprint})"


def rules_version(rules: Sequence[SecretRule]) -> str:
    """A digest of the rule set and the scanner: a cached result is reused only under the very same ones."""
    h = hashlib.sha256(f"{__version__} scan {SCAN_VERSION}".encode())
    for r in rules:
        validate = getattr(r.validate, "__qualname__", repr(r.validate)) if r.validate else ""
        parts = (r.id, r.regex.pattern, str(r.regex.flags), repr(r.prefixes), repr(r.keywords))
        h.update(repr((*parts, r.entropy, validate, r.window, r.lookbehind, r.skip_base64)).encode())
    return h.hexdigest()[:16]


class ScanCache:
    """Findings by git blob id, before the allow-list, stored as JSON under the repository's git dir."""

    def __init__(self, path: Path | None, version: str) -> None:
        self.path = path
        self.version = version
        self.rows: dict[str, list[list[Any]]] = {}
        self.dirty = False
        if path is not None and path.is_file():
            try:
                doc = loads(path.read_bytes())
            except (OSError, ValueError):
                doc = None  # a damaged cache is rebuilt, never trusted
            if isinstance(doc, dict) and doc.get("rules") == version and isinstance(doc.get("blobs"), dict):
                self.rows = doc["blobs"]

    def get(self, blob_id: str) -> list[_Row] | None:
        rows = self.rows.get(blob_id)
        if not isinstance(rows, list):
            return None
        try:
            return [(str(r[0]), int(r[1]), r[2], str(r[3]), str(r[4])) for r in rows]
        except (IndexError, TypeError, ValueError):
            return None

    def put(self, blob_id: str, rows: list[_Row]) -> None:
        if len(self.rows) >= CACHE_LIMIT:
            self.rows.clear()
        self.rows[blob_id] = [list(r) for r in rows]
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        try:
            atomic_write(self.path, orjson.dumps({"rules": self.version, "blobs": self.rows}))
        except OSError:
            pass  # a read-only git dir only costs speed


def default_scanner(start: str | os.PathLike[str] | None = None) -> tuple[Scanner, frozenset[str]]:
    """A scanner with every rule from the plugins (no allow-list) and the config's ``secrets_allow``."""
    config = load_config(Path(start) if start is not None else None)
    return Scanner(rules_from_plugins(get_plugin_manager())), frozenset(config.secrets_allow)


class _Run:
    """One scan: a scanner, its disk cache, and the allow-list applied on the way out."""

    def __init__(
        self, scanner: Scanner, allow: frozenset[str], cache: ScanCache | None, blobs: Any = None
    ) -> None:
        self.scanner = scanner
        self.allow = allow
        self.cache = cache
        self.blobs = blobs  # reads a streamed event the writer moved to the blob store

    def scan(self, data: bytes | Callable[[], bytes], file: str, blob_id: str | None = None) -> list[Finding]:
        """Findings in ``data`` (bytes, or a function reading them only on a cache miss)."""
        rows = self.cache.get(blob_id) if self.cache is not None and blob_id else None
        if rows is None:
            raw = data() if callable(data) else data
            found = self.scanner.scan(raw, file, content_id=blob_id, blobs=self.blobs)
            rows = [(f.rule, f.line, f.path, f.masked, f.fingerprint) for f in found]
            if self.cache is not None and blob_id and not self.scanner.incomplete:
                self.cache.put(blob_id, rows)
        return [
            Finding(r, file, line, path, masked, fp)
            for r, line, path, masked, fp in rows
            if fp not in self.allow
        ]


def _in_scope(path: str, dirs: tuple[str, ...], all_files: bool) -> bool:
    """Whether a staged file is scanned: a payload, a text file, or anything under ``dirs``
    (the cassette directory and a blob store configured outside it)."""
    if path.endswith(".tmp"):
        return False
    if all_files or f"{BLOB_DIR_NAME}/" in path or path.endswith(TEXT_SUFFIXES):
        return True
    return any((path + "/").startswith(d.rstrip("/") + "/") for d in dirs)


def _repo_relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(resolve_path(root)).as_posix()
    except ValueError:
        return None


def scan_staged(
    start: str | os.PathLike[str] | None = None,
    *,
    all_files: bool = False,
    every_type: bool = False,
    only: Iterable[str] | None = None,
    scanner: Scanner | None = None,
    allow: Iterable[str] | None = None,
    use_cache: bool = True,
) -> list[Reported]:
    """Secrets in what is staged for the next commit, read from the git index.

    Scans every added or modified staged file that is a cassette, a blob-store
    payload, a file under ``cassette_dir`` or a JSON/YAML/HAR/log file (every
    staged file with ``every_type=True``). ``all_files=True`` scans every file
    the index tracks, changed or not (what ``pre-commit run --all-files`` and CI
    check); ``only`` limits the scan to these paths' index entries, changed or
    not (the file names pre-commit passes). Findings in payloads name the
    cassette and JSON path referencing them. A staged re-recording awaiting
    review (``*.pending.json``) or a failed run's recording (``*.failed.json``)
    is reported as such, with the command that resolves it.

    Example::

        for reported in scan_staged():
            print(reported)  # tests/cassettes/triage.json:14: <rule id> at …: <key prefix>…Xy12 (…)
    """
    repo = open_repo(start)
    root = Path(repo.path)
    config = load_config(root)
    if scanner is None:
        scanner, default_allow = default_scanner(root)
        allow = default_allow if allow is None else allow
    cache = (
        ScanCache(Path(repo.controldir()) / CACHE_NAME, rules_version(scanner.rules)) if use_cache else None
    )
    # a streamed event moved to the blob store is read from git's objects (what is staged or
    # committed), else from the store on disk
    blobs = git_blob_reader(repo, (config.store_path(),))
    run = _Run(scanner, frozenset(allow or ()), cache, blobs)
    # the cassette directory, and a blob store configured elsewhere (`[tool.cassette] store`): its
    # payloads are not under a `.blobs/` folder, yet they hold what the cassettes' requests and
    # responses held
    dirs = tuple(
        d
        for d in (_repo_relative(config.cassette_root(), root), _repo_relative(config.store_path(), root))
        if d is not None
    )
    wanted = None if only is None else {Path(p).as_posix().removeprefix("./") for p in only}
    if wanted is not None or all_files:  # the index entries named, or all of them: no walk of HEAD
        files = index_files(repo, index_entries(repo) if wanted is None else wanted)
    else:
        files = staged_changes(repo)[0]
    targets = [f for f in files if _in_scope(f.path, dirs, every_type or wanted is not None)]
    store_dir = dirs[-1] if len(dirs) == 2 else None
    out = _scan_targets(repo, run, targets, store_dir)
    if cache is not None:
        cache.save()
    return out


def _scan_targets(repo: Any, run: _Run, targets: list[StagedFile], store_dir: str | None) -> list[Reported]:
    """What `scan_staged` reports for ``targets``: the staged recordings awaiting review, then each
    file's findings, one in a blob payload naming the cassette and JSON path that reference it."""
    # Staged bytes are read only on a cache miss; the manifests are read (or kept from the scan)
    # to name the cassette and path of a finding in a payload, only once a payload has one.
    manifests: dict[str, bytes] = {}
    referenced: dict[str, tuple[str, str]] | None = None

    def reader(staged: StagedFile) -> Callable[[], bytes]:
        def read() -> bytes:
            data = staged.read()
            if _is_manifest_path(staged.path):
                manifests[staged.path] = data
            return data

        return read

    out: list[Reported] = [Reported(_unreviewed(f.path)) for f in targets if _unreviewed_kind(f.path)]
    for staged in targets:
        found = run.scan(reader(staged), staged.path, staged.blob_id)
        payload = blob_path_id(staged.path) or _payload_in(staged.path, store_dir)
        if found and payload is not None and referenced is None:
            for f in targets:
                if _is_manifest_path(f.path) and f.path not in manifests:
                    manifests[f.path] = f.read()
            referenced = _references(repo, manifests)
        ref = referenced.get(payload) if referenced is not None and payload is not None else None
        for finding in found:
            if ref is None:
                out.append(Reported(finding))
            else:
                manifest, where = ref
                inner = finding.path
                joined = (
                    f"{where}.{inner}" if inner and not inner.startswith("[") else f"{where}{inner or ''}"
                )
                out.append(Reported(finding, manifest, joined))
    return out


# What a staged recording that is not a cassette yet is reported as (see `_unreviewed`)
UNREVIEWED_RULE = "unreviewed-recording"


def _unreviewed_kind(path: str) -> str | None:
    """``pending`` or ``failed`` for a re-recording awaiting review or a failed run's recording."""
    name = path.rsplit("/", 1)[-1]
    for kind in ("pending", "failed"):
        if f".{kind}." in name and name.endswith((".json", ".json.gz", ".yaml", ".yml")):
            return kind
    return None


def _unreviewed(path: str) -> Finding:
    kind = _unreviewed_kind(path)
    cassette = path.replace(f".{kind}.", ".", 1)
    fix = (
        f"review it (cassette drift {cassette}) and keep it with `cassette accept {cassette}`, or delete it"
        if kind == "pending"
        else "delete it (a failed run's calls, kept to debug it)"
    )
    what = "a re-recording awaiting review" if kind == "pending" else "a failed run's recording"
    digest = hashlib.sha256(path.encode()).hexdigest()[:16]
    return Finding(UNREVIEWED_RULE, path, 1, None, f"({what}: {fix}, then `git rm --cached {path}`)", digest)


def _payload_in(path: str, store_dir: str | None) -> str | None:
    """The blob id of a payload in the configured store (``<store>/ab/cdef…``), or None."""
    if store_dir is None or not path.startswith(store_dir.rstrip("/") + "/"):
        return None
    rest = path[len(store_dir.rstrip("/")) + 1 :]
    head, _, tail = rest.partition("/")
    return head + tail if len(head) == 2 and BLOB_ID.fullmatch(head + tail) else None


def _is_manifest_path(path: str) -> bool:
    return path.endswith(".json") and not blob_path_id(path)


def _references(repo: Any, files: dict[str, bytes]) -> dict[str, tuple[str, str]]:
    """blob id → (cassette, JSON path) for the payloads referenced by the staged cassettes in ``files``."""
    out: dict[str, tuple[str, str]] = {}
    for path, data in files.items():
        if b'"$blob"' not in data or not looks_like_manifest(path, data):
            continue  # a cassette without a blob reference needs no parse
        try:
            doc = loads(data)
        except (ValueError, RecursionError):
            continue
        if not isinstance(doc, dict):
            continue
        todo = list(blob_refs_with_paths(doc.get("interactions"), "interactions"))
        while todo:
            where, blob_id, is_json = todo.pop()
            if not isinstance(blob_id, str) or blob_id in out:
                continue
            out[blob_id] = (path, where)
            if is_json:
                payload = read_object(repo, blob_id)
                try:
                    inner = loads(payload) if payload is not None else None
                except (ValueError, RecursionError):
                    inner = None
                todo.extend(blob_refs_with_paths(inner, where))
    return out


def scan_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    scanner: Scanner | None = None,
    allow: Iterable[str] | None = None,
) -> list[Reported]:
    """Secrets in files on disk (directories searched recursively; ``.git`` and temp files skipped).

    Any text file works: our cassettes, other tools' YAML/JSON cassettes, logs.

    Example::

        scan_paths(["tests/cassettes", "logs/agent.log"])
    """
    if scanner is None:
        scanner, default_allow = default_scanner()
        allow = default_allow if allow is None else allow
    cache_path: Path | None = None
    try:
        cache_path = Path(open_repo().controldir()) / CACHE_NAME
    except Exception:  # not in a repository: no cache, same results
        cache_path = None
    cache = ScanCache(cache_path, rules_version(scanner.rules)) if cache_path is not None else None
    run = _Run(scanner, frozenset(allow or ()), cache)
    out: list[Reported] = []
    for file in _files(paths):
        try:  # a FIFO, socket or device met in a directory is skipped: it would block or never end
            data = read_regular(file, limit=None)
        except OSError:
            continue
        out.extend(Reported(f) for f in run.scan(data, os.fspath(file), git_blob_id(data)))
    if cache is not None:
        cache.save()
    return out


def _files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if d != ".git")
                out.extend(Path(dirpath) / n for n in sorted(filenames) if not n.endswith(".tmp"))
        elif p.is_file():
            out.append(p)
        elif p.exists():  # named on purpose: say why it is not scanned instead of skipping it
            reason = not_regular_reason(p, NotRegularFileError(p, file_kind(p.stat().st_mode)))
            raise CassetteIOError(f"{p}: {reason}. Scan files and directories only.", path=p)
        else:
            raise CassetteNotFoundError(
                f"cassette scan: no such file or directory: {p}. Check the path.", path=p
            )
    return out


def render_text(found: list[Reported], *, staged: bool) -> str:
    """Findings one per line (the secret itself never shown), then what to do."""
    if not found:
        return ""
    where = "staged files" if staged else "the files scanned"
    lines = [str(r) for r in found]
    lines.append("")
    lines.append(
        f"{len(found)} secret(s) in {where}."
        + (" The commit was stopped." if staged else "")
        + " Remove each secret (re-record with redaction, or edit the file) and `git add` again. "
        "If a finding is not a secret, add its fingerprint to [tool.cassette] secrets_allow "
        "in pyproject.toml."
        + (
            " A damaged compressed cassette cannot be scanned whole: restore it from git "
            "(git checkout -- <file>) or re-record it."
            if any(r.finding.rule == DAMAGED_RULE for r in found)
            else ""
        )
        + (
            " A *.pending.json or *.failed.json file is a recording, not a cassette: resolve it as its "
            "line says."
            if any(r.finding.rule == UNREVIEWED_RULE for r in found)
            else ""
        )
    )
    return "\n".join(lines)
