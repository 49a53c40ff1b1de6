"""``cassette verify``: every manifest parses and every blob it references is there and hash-correct.

Checked on disk (paths or directories) or in the git index (``--staged``): a
cassette committed without its blobs is the classic mistake, so with
``--staged`` each referenced blob must be staged too, under the cassette's blob
store, with the id it is named after. JSON blobs are followed recursively.
Atomic-write temporary files (``*.tmp``) are ignored.

What verify passes, replay opens: each interaction is checked by replay's own code (the
blob checks of `check_refs`, the HTTP seam's `replay_parts`, the tool seam's
`replay_outcome`), and a key given twice in an object is an error, not last-one-wins.
Under the configured ``cassette_dir`` every ``*.json`` file (compressed too; pending and
failed recordings included, as `cassette accept` and gc read them) is a cassette: one that
does not parse is a failure, never skipped as "not a cassette".
"""

from __future__ import annotations

import binascii
import importlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cassette.config import load_config
from cassette.core.canonical import loads
from cassette.core.model import Cassette, holds_refs
from cassette.core.paths import resolve_path
from cassette.errors import (
    BlobError,
    CassetteError,
    MissingBlobError,
    NotRegularFileError,
    TamperedBlobError,
    UnimportedTypeError,
)
from cassette.git.repo import staged_changes
from cassette.git.snapshot import (
    IndexSnapshot,
    blob_path_id,
    blob_refs_with_paths,
    blob_store_dirs,
    deleted_under,
    display_path,
    index_files,
    is_staged_cassette,
    looks_like_manifest,
    open_repo,
    read_object,
    store_dir_for,
)
from cassette.store.blobs import BLOB_DIR_NAME, BLOB_ID, BlobStore, default_store_for, git_blob_id
from cassette.store.files import TMP_SUFFIX, not_regular_reason, read_regular
from cassette.store.manifest import duplicate_key, duplicate_key_error, parse_manifest
from cassette.store.refs import check_refs, hydrate, walk_chain


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one cassette; ``where`` is the JSON path of the reference, if any."""

    file: str
    message: str
    where: str | None = None
    blob: str | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "where": self.where, "blob": self.blob, "message": self.message}


@dataclass
class FileReport:
    """The verdict on one cassette."""

    file: str
    interactions: int = 0
    blobs: int = 0
    problems: list[Problem] = field(default_factory=list)
    # the distinct blob ids looked up, so a blob shared by several cassettes counts once in the summary
    blob_ids: set[str] = field(default_factory=set, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class VerifyReport:
    """Every cassette checked, with its problems; truthy when all are sound."""

    files: list[FileReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    def __bool__(self) -> bool:
        return self.ok

    @property
    def problems(self) -> list[Problem]:
        return [p for f in self.files for p in f.problems]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": [
                {
                    "file": f.file,
                    "ok": f.ok,
                    "interactions": f.interactions,
                    "blobs": f.blobs,
                    "problems": [p.to_json() for p in f.problems],
                }
                for f in self.files
            ],
        }

    def render(self, *, verbose: bool = False) -> str:
        """Failures with each problem, then a summary line (``verbose`` lists sound files too)."""
        lines: list[str] = []
        for f in self.files:
            if f.ok:
                if verbose:
                    lines.append(f"ok      {f.file} ({f.interactions} interactions, {f.blobs} blobs)")
                continue
            lines.append(f"FAILED  {f.file}")
            lines.extend(f"  - {p}" for p in f.problems)
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: how many cassettes and distinct blobs were checked, and the verdict.

        Example::

            verify_paths(["tests/cassettes"]).summary()  # 'verified 3 cassette(s), 12 blob(s): OK'
        """
        bad = sum(1 for f in self.files if not f.ok)
        blobs = len(set().union(*(f.blob_ids for f in self.files)))
        summary = f"verified {len(self.files)} cassette(s), {blobs} blob(s)"
        return summary + (f": {bad} with problems" if bad else ": OK")


# A blob lookup: (bytes or None, a problem message or None) for one blob id.
BlobCheck = Callable[[str], tuple[bytes | None, str | None]]


def verify_manifest(data: bytes, file: str, check: BlobCheck) -> FileReport:
    """Check one manifest's bytes and, through ``check``, every blob it references (recursively).

    Example::

        report = verify_manifest(Path("c.json").read_bytes(), "c.json", disk_blobs(store))
        report.ok
    """
    report = FileReport(file)
    try:
        cassette = parse_manifest(data, Path(file))
    except CassetteError as exc:
        report.problems.append(Problem(file, str(exc)))
        return report
    report.interactions = len(cassette.interactions)
    seen: set[str] = set()
    todo: list[tuple[str, Any, bool]] = []
    chains: list[tuple[str, dict[str, Any]]] = []
    parsed: dict[str, Any] = {}  # JSON blobs by id, for the chain walks
    for n, inter in enumerate(cassette.interactions):
        for where, value in (
            (f"interactions[{n}].request", inter.request),
            (f"interactions[{n}].response", inter.response),
        ):
            todo.extend(blob_refs_with_paths(value, where))
            chains.extend(_chain_refs(value, where))
    depth = 0
    while todo:
        where, blob_id, is_json = todo.pop(0)
        report.blobs += 1
        if (
            not isinstance(blob_id, str)
            or len(blob_id) != 40
            or any(c not in "0123456789abcdef" for c in blob_id)
        ):
            report.problems.append(
                Problem(file, f"invalid blob reference {str(blob_id)[:60]!r}; re-record the cassette.", where)
            )
            continue
        if blob_id in seen:
            continue
        seen.add(blob_id)
        report.blob_ids.add(blob_id)
        data_, problem = check(blob_id)
        if problem is not None:
            report.problems.append(Problem(file, problem, where, blob_id))
            continue
        if is_json and data_ is not None:
            depth += 1
            try:
                inner = loads(data_)
            except (ValueError, RecursionError):
                report.problems.append(
                    Problem(
                        file, f"JSON blob {blob_id} does not parse; re-record the cassette.", where, blob_id
                    )
                )
                continue
            duplicate = duplicate_key(data_)
            if duplicate is not None:
                report.problems.append(
                    Problem(
                        file, str(duplicate_key_error(Path(file), duplicate, f"JSON blob {blob_id}")), where
                    )
                )
                continue
            parsed[blob_id] = inner
            if depth <= 10_000:
                todo.extend(blob_refs_with_paths(inner, where))
                chains.extend(_chain_refs(inner, where))
    _check_chains(chains, file, check, seen, parsed, report)
    _check_replayable(cassette, file, check, report)
    return report


# The kinds whose response the HTTP seam replays as an HTTP response (tool records hold {result}/{error}).
_HTTP_KINDS = ("llm", "http")


def replay_problem(response: Any) -> str | None:
    """Why the HTTP seam could not replay this (hydrated) recorded response, or ``None`` if it can.

    The checks are replay's own (`cassette.seam.transport.replay_parts`), plus the HTTP
    library's own check of the header names and values.

    Example::

        replay_problem({"status": 200, "text": "hi"})  # None
        replay_problem({"status": "200", "text": "hi"})  # "its status '200' is not an HTTP status code …"
    """
    if not isinstance(response, dict):
        return f"the response is a {type(response).__name__}, not an object"
    # the replay seam imports asyncio and the session (~0.05-0.1 s); only a cassette holding an
    # LLM/HTTP call needs it
    # deferred: `cassette verify` of tool-only cassettes (or none) stays fast without the seam
    from cassette.seam import botocore as botocore_seam

    # deferred: as above (the HTTP seam's replay checks)
    from cassette.seam.transport import replay_parts

    if "event_stream" in response:  # an AWS event stream, replayed by the botocore seam
        return botocore_seam.replay_problem(response)
    try:
        _, headers, _, _ = replay_parts(response)
        if not all(
            isinstance(k, str) and isinstance(v, str) and k.isascii() and v.isascii() for k, v in headers
        ):
            # names and values must encode as the HTTP library sends them: plain ASCII text always
            # does, anything else is the library's to judge (importing it costs ~0.05 s)
            _headers_class()(headers)
    except binascii.Error as exc:
        return f"its `base64` body is not valid base64 ({exc})"
    except (TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        return str(exc) if isinstance(exc, (TypeError, ValueError)) else f"{type(exc).__name__}: {exc}"
    return None


def _headers_class() -> Any:
    """The ``Headers`` class of the HTTP library the SDKs use (httpx2 when installed, else httpx),
    imported only when a response is checked (importing httpx2 costs ~0.05 s)."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name).Headers
        except ImportError:
            continue
    return dict


class _CheckedStore(BlobStore):
    """Replay's own blob reads (`check_refs`) answered by verify's lookup: the disk or the git index."""

    def __init__(self, check: BlobCheck, manifest: str) -> None:
        super().__init__(Path(manifest).parent)
        self._check = check

    def get(self, blob_id: str, *, manifest: Path | None = None) -> bytes:
        data, problem = self._check(blob_id)
        if problem is not None or data is None:
            raise MissingBlobError(problem or f"blob {blob_id} cannot be read.", path=manifest)
        return data


def _check_replayable(cassette: Cassette, file: str, check: BlobCheck, report: FileReport) -> None:
    """Report each interaction replay would refuse to serve, by its interaction number.

    Its request and response go through `check_refs` (every text blob decodes, every JSON blob
    parses, every chain is whole), as replay checks a request it serves; then its hydrated
    response through the seam that replays it: `replay_parts` for LLM/HTTP calls,
    `replay_outcome` for tool calls.
    """
    # the tool seam imports the session and its dependencies, needed once a cassette holds a call
    # deferred: a hook on a commit with no cassette never gets here, and stays fast
    from cassette.seam.tools import replay_outcome

    store = _CheckedStore(check, file)
    verified: dict[str, int] = {}
    for n, inter in enumerate(cassette.interactions):
        where = f"interactions[{n}]"
        if any(p.where and p.where.startswith(where + ".") for p in report.problems):
            continue  # a missing or damaged blob in it is reported already
        try:
            check_refs(inter.request, cassette, verified, store)
            check_refs(inter.response, cassette, verified, store)
            response = inter.response
            if holds_refs(response):
                response = hydrate(response, store, Path(file))
        except (CassetteError, RecursionError) as exc:
            report.problems.append(
                Problem(file, f"interaction #{inter.seq} cannot be read: {exc}", where + ".response")
            )
            continue
        what = f"interaction #{inter.seq}"
        if inter.kind in _HTTP_KINDS:
            reason = replay_problem(response)
        else:
            name, reason = _tool_problem(response, inter, file, replay_outcome, store)
            what += f" (tool {name!r})"
        if reason is not None:
            report.problems.append(
                Problem(
                    file,
                    f"the recorded response of {what} cannot be replayed: {reason}. "
                    f"Restore the cassette from git (git checkout -- {file}) or re-record it.",
                    where + ".response",
                )
            )


def _tool_problem(
    response: Any, inter: Any, file: str, outcome: Any, store: BlobStore
) -> tuple[str, str | None]:
    """The tool's name, and why replay could not rebuild its recorded result or error (or None)."""
    request = inter.request
    if holds_refs(request):
        request = hydrate(request, store, Path(file))
    name = str(request.get("name") if isinstance(request, dict) else None)
    path = Path(file)
    try:
        outcome(response, name, path)
    except UnimportedTypeError:
        return name, None  # the class's module is imported by the code under test, not by verify
    except CassetteError as exc:
        return name, str(exc).removeprefix(f"cassette {path.absolute()}: ").rstrip(".")
    except RecursionError:
        return name, "a recorded value nests too deeply to rebuild"
    return name, None


class _Reported(Exception):
    """A chain node whose blob problem is already in the report."""


def _chain_refs(value: Any, prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """``(json path, reference)`` for every ``{"$blob": …, "$chain": n}`` reference directly in ``value``."""
    out: list[tuple[str, dict[str, Any]]] = []
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict):
            if "$blob" in v:
                if "$chain" in v:
                    out.append((path, v))
                continue
            inner = (
                v["$literal"] if "$literal" in v and len(v) == 1 and isinstance(v["$literal"], dict) else v
            )
            stack.extend((f"{path}.{k}" if path else str(k), child) for k, child in inner.items())
        elif isinstance(v, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(v))
    return out


def _check_chains(
    chains: list[tuple[str, dict[str, Any]]],
    file: str,
    check: BlobCheck,
    reported: set[str],
    parsed: dict[str, Any],
    report: FileReport,
) -> None:
    """Walk each chain as hydration does: every node ``{item, prev}``, as many as the reference declares."""

    def read_node(node_id: Any) -> Any:
        if not isinstance(node_id, str) or not BLOB_ID.fullmatch(node_id):
            raise _Reported  # an invalid reference: the reference walk reported it
        if node_id not in parsed:
            data, problem = check(node_id)
            if problem is not None or data is None:
                if node_id in reported:
                    raise _Reported  # a missing or tampered blob: the reference walk reported it
                raise TamperedBlobError(problem or f"blob {node_id} cannot be read.", path=file)
            try:
                parsed[node_id] = loads(data)
            except (ValueError, RecursionError):
                raise TamperedBlobError(
                    f"chain node {node_id} does not parse; re-record the cassette.", path=file
                ) from None
        return parsed[node_id]

    done: set[tuple[Any, Any]] = set()
    messages: set[str] = set()
    for where, ref in chains:
        key = (str(ref.get("$blob")), str(ref.get("$chain")))
        if key in done:
            continue
        done.add(key)
        try:
            walk_chain(ref, read_node, Path(file))
        except _Reported:
            continue
        except CassetteError as exc:
            if str(exc) not in messages:  # a broken node shared by later turns' chains: once
                messages.add(str(exc))
                report.problems.append(Problem(file, str(exc), where, key[0]))


def disk_blobs(store: Path, manifest: str) -> BlobCheck:
    """Check blobs in a blob-store directory (presence, hash, no symlink escaping the store)."""
    blobs = BlobStore(store)

    def check(blob_id: str) -> tuple[bytes | None, str | None]:
        try:
            return blobs.get(blob_id, manifest=Path(manifest)), None
        except BlobError as exc:
            return None, str(exc)

    return check


def _store_for(path: Path) -> Path:
    """The blob store a `Session` would use for the cassette at ``path``."""
    config = load_config(path.parent)
    if config.store:
        return config.store_path()
    try:
        resolve_path(path).relative_to(config.cassette_root())
    except ValueError:
        return default_store_for(path)
    return config.store_path()


def _is_temp(path: Path) -> bool:
    return path.name.endswith(TMP_SUFFIX)


def cassette_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The manifests named by ``paths``: files as given, directories searched (``.blobs`` skipped).

    In a directory under the project's ``cassette_dir`` every ``*.json`` file (not a ``*.tmp``)
    is a cassette: a truncated or damaged one is listed, to be reported. Elsewhere only files
    shaped like a cassette are (``package.json`` is not one), and empty ``.json`` files.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        try:
            is_dir = p.is_dir()
        except OSError:  # a name too long, no permission: reported when it is read
            is_dir = False
        if is_dir:
            cassette_root = load_config(p).cassette_root()
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if d not in (BLOB_DIR_NAME, ".git"))
                under_root = _is_within(Path(dirpath), cassette_root)
                for name in sorted(filenames):
                    f = Path(dirpath) / name
                    if not name.endswith(".json") or _is_temp(f):
                        continue
                    try:
                        data = read_regular(f)
                    except NotRegularFileError:  # a FIFO or a device where a cassette would be
                        out.append(f)  # reported by verify_paths, as replay would refuse it
                        continue
                    except OSError:
                        if under_root:
                            out.append(f)  # unreadable where cassettes live: reported
                        continue
                    if looks_like_manifest(f.as_posix(), data) or not data.strip():
                        out.append(f)  # an empty file is a truncated cassette
                    elif under_root and not _other_json(data):
                        out.append(f)  # damaged, truncated, or of the wrong shape: a failure, not skipped
        elif not _is_temp(p):
            out.append(p)
    return out


def _other_json(data: bytes) -> bool:
    """Whether ``data`` parses as JSON that is no cassette (a fixture with no `version` or `interactions`)."""
    try:
        doc = loads(data)  # a compressed file is expanded (and a damaged one raises)
    except (ValueError, RecursionError):
        return False
    return not (isinstance(doc, dict) and ("version" in doc or "interactions" in doc))


def _is_within(path: Path, root: Path) -> bool:
    try:
        resolve_path(path).relative_to(root)
    except (ValueError, OSError):
        return False
    return True


def verify_paths(paths: Iterable[str | os.PathLike[str]]) -> VerifyReport:
    """Verify cassettes on disk: files as given, directories searched recursively.

    Example::

        report = verify_paths(["tests/cassettes"])
        print(report.render())
        assert report.ok
    """
    report = VerifyReport()
    for path in cassette_files(paths):
        shown = display_path(path)
        try:
            data = read_regular(path)
        except FileNotFoundError:
            report.files.append(FileReport(shown, problems=[Problem(shown, f"no such file: {shown}.")]))
            continue
        except NotRegularFileError as exc:
            reason = not_regular_reason(path, exc)
            problem = f"{shown}: {reason}. Remove it, then restore the cassette from git or re-record it."
            report.files.append(FileReport(shown, problems=[Problem(shown, problem)]))
            continue
        except OSError as exc:
            report.files.append(FileReport(shown, problems=[Problem(shown, f"cannot read {shown}: {exc}.")]))
            continue
        report.files.append(verify_manifest(data, shown, disk_blobs(_store_for(path), shown)))
    return report


def verify_staged(
    start: str | os.PathLike[str] | None = None,
    *,
    only: Iterable[str] | None = None,
    all_files: bool = False,
) -> VerifyReport:
    """Verify the cassettes staged in the git index, requiring their blobs to be staged too.

    Checks every staged (added or modified) manifest; with ``only``, the index entries of those
    paths, changed or not (the file names pre-commit passes; names that are not cassettes are
    skipped); with ``all_files``, every manifest the index tracks (``pre-commit run --all-files``,
    CI). Every manifest in the index is checked when a blob-store file is being deleted (removing
    a payload can break a cassette that is not itself staged). A blob that is on disk but not
    staged is reported with the ``git add`` to run.

    Example::

        assert verify_staged().ok
        verify_staged(only=["tests/cassettes/triage.json"])
    """
    repo = open_repo(start)
    root = Path(repo.path)
    index = IndexSnapshot(repo)
    entries = index.entries()
    stores = blob_store_dirs(entries)
    if only is None and not all_files:
        changed, deleted = staged_changes(repo)
    else:  # the names given: HEAD's blob stores alone are read, for deletions
        changed = index_files(repo, only or ())
        deleted = [] if all_files else deleted_under(repo, stores | {_default_store(root)})
    # removing a payload can break a cassette that is not itself staged: then check them all
    deleting_blobs = any(blob_path_id(p) for p in deleted)
    candidates = sorted(entries) if all_files or deleting_blobs else [f.path for f in changed]
    report = VerifyReport()
    for path in candidates:
        if not path.endswith(".json") or blob_path_id(path):
            continue
        data = index.read(path)
        if not is_staged_cassette(path, data, root):  # an empty .json counts only under cassette_dir
            continue
        assert data is not None
        report.files.append(verify_manifest(data, path, _index_blobs(repo, root, entries, stores, path)))
    return report


def _default_store(root: Path) -> str:
    """The configured blob store, repo-relative (a deleted store is in no index path any more)."""
    try:
        return resolve_path(load_config(root).store_path()).relative_to(resolve_path(root)).as_posix()
    except ValueError:
        return BLOB_DIR_NAME


def _index_blobs(
    repo: Any, root: Path, entries: dict[str, str], stores: set[str], manifest: str
) -> BlobCheck:
    """Check blobs in the index: staged under the manifest's blob store, named after their hash."""
    store = store_dir_for(manifest, stores, root)

    def check(blob_id: str) -> tuple[bytes | None, str | None]:
        blob_path = f"{store}/{blob_id[:2]}/{blob_id[2:]}"
        sha = entries.get(blob_path)
        if sha is None:
            if (root / blob_path).is_file():
                return None, (
                    f"blob {blob_id} is on disk but not staged: run `git add {blob_path}` "
                    f"(or `git add {store}`) so the commit carries it."
                )
            return None, (
                f"blob {blob_id} is neither staged nor on disk in {store}. Re-record the cassette, "
                "or restore the blob from the commit that had it."
            )
        if sha != blob_id:
            return None, (
                f"the staged {blob_path} does not hash to its name (it was modified). Restore it "
                f"(git checkout HEAD -- {blob_path}) or re-record the cassette."
            )
        data = read_object(repo, sha)
        if data is None or git_blob_id(data) != blob_id:
            return None, f"git cannot read the staged blob {blob_path}; run `git add {blob_path}` again."
        return data, None

    return check
