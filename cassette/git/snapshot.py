"""The files of a repository at one point in time: the index, a commit, or the working tree.

Hooks read staged content from the git *index* with dulwich, never from
``git diff`` output (which a textconv driver rewrites), and need no git binary.
Blob-store payloads are addressed by their git blob id, so any payload that was
ever staged or committed can be read back from git's object database by id.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from dulwich.object_store import iter_tree_contents

from cassette.config import load_config
from cassette.core.canonical import loads
from cassette.core.compression import gunzip, is_compressed
from cassette.core.model import Cassette
from cassette.core.paths import resolve_path
from cassette.errors import (
    MissingBlobError,
    NotAGitRepositoryError,
    TamperedBlobError,
)
from cassette.git.repo import (
    StagedFile,
    cached_head_entries,
    find_repo,
    head_tree,
    index_entries,
    resolve_commit,
    tree_files,
)
from cassette.store.blobs import BLOB_DIR_NAME, BLOB_ID, git_blob_id, invalid_ref_error
from cassette.store.files import TMP_SUFFIX
from cassette.store.manifest import parse_manifest
from cassette.store.refs import StoredCassette

_BLOB_PATH = re.compile(r"(?:^|/)\.blobs/([0-9a-f]{2})/([0-9a-f]{38})$")


def open_repo(start: str | os.PathLike[str] | None = None) -> Any:
    """The dulwich ``Repo`` whose work tree holds ``start`` (default: the working directory).

    Example::

        repo = open_repo()
        repo.path  # the work tree root
    """
    here = resolve_path(Path(start or Path.cwd()))
    repo = find_repo(here)
    if repo is None:
        raise NotAGitRepositoryError(
            f"{here} is not inside a git work tree, so there is no index or history to read. "
            "Run the command inside the repository, or pass file paths instead of --staged/--rev."
        )
    return repo


def blob_path_id(path: str) -> str | None:
    """The blob id a blob-store file is named after (``…/.blobs/ab/cdef…`` → ``abcdef…``), or ``None``."""
    m = _BLOB_PATH.search(path)
    return m.group(1) + m.group(2) if m else None


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working directory when it is below it (what a person would type)."""
    try:
        return resolve_path(Path(path)).relative_to(resolve_path(Path.cwd())).as_posix()
    except (ValueError, OSError):
        return os.fspath(path)


def is_temp(path: str) -> bool:
    """An atomic-write temporary file (``.name.<pid>.<hex>.tmp``): never a cassette, never scanned."""
    return path.endswith(TMP_SUFFIX)


class Snapshot:
    """Files of a repository at one point: ``entries()`` maps repo-relative paths to git blob ids."""

    label = "snapshot"

    def __init__(self, repo: Any) -> None:
        self.repo = repo
        self.root = Path(repo.path)
        self._entries: dict[str, str] | None = None

    def entries(self) -> dict[str, str]:
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> dict[str, str]:
        raise NotImplementedError

    def read(self, path: str) -> bytes | None:
        """The bytes of ``path`` in this snapshot, or ``None`` when it has no such file."""
        sha = self.entries().get(path)
        if sha is None:
            return None
        return read_object(self.repo, sha)


class IndexSnapshot(Snapshot):
    """What ``git commit`` would commit now: the staged files of ``$GIT_INDEX_FILE`` or ``.git/index``.

    Conflicted and intent-to-add (``git add -N``) entries are skipped: neither is committed.
    """

    label = "index"

    def _load(self) -> dict[str, str]:
        # $GIT_INDEX_FILE when git set it; read once per process however many snapshots ask
        return {path: r.sha for path, r in index_entries(self.repo).items() if r.committable}


class RevSnapshot(Snapshot):
    """The tree of one commit (``HEAD``, a branch, a tag, ``HEAD~2``, a sha); empty for an unborn HEAD."""

    def __init__(self, repo: Any, rev: str) -> None:
        super().__init__(repo)
        self.rev = rev
        self.label = rev
        self.tree = _tree_of(repo, rev)

    def _load(self) -> dict[str, str]:
        if self.tree is None:
            return {}
        out: dict[str, str] = {}
        for entry in iter_tree_contents(self.repo.object_store, self.tree):  # type: ignore[arg-type]
            if entry.mode is None or (entry.mode & 0o170000) != 0o100000:  # regular files only
                continue
            out[entry.path.decode("utf-8", "surrogateescape")] = entry.sha.decode("ascii")
        return out


def _tree_of(repo: Any, rev: str) -> bytes | None:
    if rev == "HEAD":
        try:
            repo.head()
        except KeyError:
            return None  # no commit yet: everything staged is new
    tree: bytes = resolve_commit(repo, rev).tree
    return tree


def read_object(repo: Any, sha: str) -> bytes | None:
    """A blob's bytes from git's object database, or ``None`` when git does not have it."""
    key = sha.encode("ascii")
    try:
        obj = repo.object_store[key]
    except KeyError:
        return None
    data = getattr(obj, "data", None)
    return data if isinstance(data, bytes) else None


def index_files(repo: Any, paths: Iterable[str]) -> list[StagedFile]:
    """The index entries of ``paths`` (the file names pre-commit passes), changed or not, sorted;
    names the index does not hold as a regular file are left out. Reads the index alone: no walk
    of HEAD, so the cost is one index read plus the names given.

    Example::

        [f.path for f in index_files(repo, ["tests/cassettes/a.json"])]
    """
    index = index_entries(repo)
    out: list[StagedFile] = []
    for path in sorted({PurePosixPath(p).as_posix().removeprefix("./") for p in paths}):
        record = index.get(path)
        if record is None or not record.committable or (record.mode & 0o170000) != 0o100000:
            continue
        out.append(StagedFile(path, record.sha, "modify", repo))
    return out


def deleted_under(repo: Any, folders: Iterable[str]) -> list[str]:
    """The files of HEAD under ``folders`` (repo-relative) that the index no longer has, sorted:
    only those folders' trees are read (a blob store's deletions without a walk of all of HEAD).

    Example::

        deleted_under(repo, ["tests/cassettes/.blobs"])  # ["tests/cassettes/.blobs/ab/cdef…"]
    """
    tree_id = head_tree(repo)
    if tree_id is None:
        return []
    index = index_entries(repo)
    store = repo.object_store
    out: list[str] = []
    for folder in sorted({f.strip("/") for f in folders}):
        found = _subtree(store, tree_id, folder)
        if found is None:
            continue
        out.extend(
            path
            for path, mode, _ in tree_files(store, folder + "/", found)
            if (mode & 0o170000) == 0o100000 and not (path in index and index[path].committable)
        )
    return sorted(set(out))


def _subtree(store: Any, tree_id: bytes, folder: str) -> bytes | None:
    """The id of the tree at ``folder`` below the tree ``tree_id``, or None when it has none."""
    for part in folder.split("/") if folder else []:
        try:
            mode, sha = store[tree_id][part.encode("utf-8", "surrogateescape")]
        except KeyError:
            return None
        if (mode & 0o170000) != 0o040000:
            return None
        tree_id = sha
    return tree_id


def head_file(repo: Any, path: str) -> tuple[int, str] | None:
    """``(mode, blob id)`` of ``path`` in HEAD, or ``None``: the trees on its way are read, not the
    whole of HEAD (unless an earlier call in this process walked it already)."""
    tree_id = head_tree(repo)
    if tree_id is None:
        return None
    walked = cached_head_entries(repo)
    if walked is not None:
        return walked.get(path)
    store = repo.object_store
    parts = path.split("/")
    for n, part in enumerate(parts):
        tree = store[tree_id]
        try:
            mode, sha = tree[part.encode("utf-8", "surrogateescape")]
        except KeyError:
            return None
        if n == len(parts) - 1:
            return (mode, sha.decode("ascii")) if (mode & 0o170000) == 0o100000 else None
        if (mode & 0o170000) != 0o040000:
            return None
        tree_id = sha
    return None


# --- cassettes inside a snapshot ------------------------------------------------------------------


def looks_like_manifest(path: str, data: bytes | None) -> bool:
    """A JSON file outside any blob store whose top level has ``version`` and ``interactions``."""
    if data is None or not path.endswith(".json") or is_temp(path) or f"{BLOB_DIR_NAME}/" in path:
        return False
    if is_compressed(data):
        try:
            data = gunzip(data)
        except ValueError:
            return True  # a damaged compressed cassette: verify reports it
    head = data.lstrip()[:1]
    if head != b"{" or b'"interactions"' not in data:
        return False
    try:
        doc = loads(data)
    except (ValueError, RecursionError):
        return True  # broken JSON that mentions interactions: a damaged cassette, verify reports it
    return isinstance(doc, dict) and "interactions" in doc


BlobReader = Callable[[str], bytes | None]


class GitBlobSource:
    """A `BlobSource` over a reader of git's objects (staged or committed), then blob-store folders.

    ``verify=False`` (for display only, as textconv shows a damaged file) skips the hash check.
    """

    def __init__(self, reader: BlobReader, *, verify: bool = True) -> None:
        self.reader = reader
        self.verify = verify

    def get(self, blob_id: str, *, manifest: Path | None = None) -> bytes:
        where = manifest or Path(".")
        if not BLOB_ID.fullmatch(blob_id):
            raise invalid_ref_error(where, blob_id)
        data = self.reader(blob_id)
        if data is None:
            raise MissingBlobError(
                f"{where} references blob {blob_id}, which is neither in git nor in the blob store. "
                "Stage the blob store (git add the .blobs directory) or re-record the cassette.",
                path=where,
            )
        if self.verify and git_blob_id(data) != blob_id:
            raise TamperedBlobError(
                f"{where}: blob {blob_id} does not match its hash. Re-record the cassette.", path=where
            )
        return data


def cassette_from_bytes(data: bytes, path: str, reader: BlobReader, store: Path | None = None) -> Cassette:
    """Parse manifest bytes (from the index or a commit) into a cassette whose blobs come from ``reader``.

    Example::

        c = cassette_from_bytes(snapshot.read(p), p, git_blob_reader(repo))
        c.hydrate(c.interactions[0].response)
    """
    parsed = parse_manifest(data, Path(path), store)
    out = StoredCassette(
        path=parsed.path,
        interactions=parsed.interactions,
        store=parsed.store,
        meta=parsed.meta,
        source=GitBlobSource(reader),
    )
    return out


def git_blob_reader(repo: Any, fallback_dirs: tuple[Path, ...] = ()) -> BlobReader:
    """Read a payload by id from git's objects (staged or committed), else from blob-store directories."""

    def read(blob_id: str) -> bytes | None:
        data = read_object(repo, blob_id)
        if data is not None:
            return data
        for d in fallback_dirs:
            candidate = d / blob_id[:2] / blob_id[2:]
            if candidate.is_file():
                return candidate.read_bytes()
        return None

    return read


def in_cassette_dir(path: str, root: Path) -> bool:
    """Whether repo-relative ``path`` lies under the ``[tool.cassette] cassette_dir`` of its project."""
    target = root / path
    try:
        resolve_path(target).relative_to(resolve_path(load_config(target.parent).cassette_root()))
    except (ValueError, OSError):
        return False
    return True


def is_staged_cassette(path: str, data: bytes | None, root: Path) -> bool:
    """Whether ``verify --staged`` checks the staged ``path`` (bytes ``data``) as a cassette.

    A manifest (see :func:`looks_like_manifest`) anywhere is one. An empty (or
    blank) ``.json`` file is a truncated cassette, reported, only under the
    configured ``cassette_dir``; elsewhere (``empty.json`` at the root, a
    placeholder in ``config/``) it is not a cassette at all, like ``package.json``.

    Example::

        is_staged_cassette("empty.json", b"", root)  # False
        is_staged_cassette("tests/cassettes/triage.json", b"", root)  # True: truncated
    """
    if looks_like_manifest(path, data):
        return True
    if data is None or data.strip() or not path.endswith(".json") or is_temp(path):
        return False
    return f"{BLOB_DIR_NAME}/" not in path and in_cassette_dir(path, root)


def blob_refs_with_paths(value: Any, prefix: str = "") -> Iterator[tuple[str, Any, bool]]:
    """``(json path, blob id, is JSON blob)`` for every blob reference directly in ``value``."""
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict):
            if "$blob" in v:
                yield path, v.get("$blob"), bool(v.get("$json"))
                continue
            inner = (
                v["$literal"] if "$literal" in v and len(v) == 1 and isinstance(v["$literal"], dict) else v
            )
            for k, child in reversed(list(inner.items())):
                stack.append((f"{path}.{k}" if path else str(k), child))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((f"{path}[{i}]", v[i]))


def blob_store_dirs(paths: Iterable[str]) -> set[str]:
    """The blob-store directories (repo-relative) that hold at least one of ``paths``."""
    out: set[str] = set()
    for p in paths:
        m = _BLOB_PATH.search(p)
        if m:
            out.add(f"{p[: m.start()]}/{BLOB_DIR_NAME}" if m.start() else BLOB_DIR_NAME)
    return out


def store_dir_for(manifest: str, stores: set[str], root: Path) -> str:
    """Where (repo-relative) the blob store of ``manifest`` lives, as a `Session` would choose it.

    ``[tool.cassette] store`` when set, ``<cassette_dir>/.blobs`` for cassettes
    under ``cassette_dir``, else the nearest ``.blobs`` among the manifest's
    ancestors (in ``stores`` or on disk), else ``.blobs`` beside it.
    """
    manifest_dir = PurePosixPath(manifest).parent
    config = load_config(root / manifest_dir)
    try:
        config_rel = PurePosixPath(resolve_path(config.root).relative_to(resolve_path(root)).as_posix())
    except ValueError:
        config_rel = None
    if config_rel is not None:
        if config.store:
            return _norm(config_rel / config.store)
        cassette_dir = PurePosixPath(_norm(config_rel / config.cassette_dir))
        if manifest_dir == cassette_dir or cassette_dir in manifest_dir.parents:
            return str(cassette_dir / BLOB_DIR_NAME)
    dirs = [manifest_dir, *manifest_dir.parents]
    for d in dirs:
        prefix = "" if str(d) == "." else f"{d}/"
        store = f"{prefix}{BLOB_DIR_NAME}"
        if store in stores:
            return store
        if (root / store).is_dir():
            return store
        if str(d) != "." and ((root / d / ".git").exists() or (root / d / "pyproject.toml").exists()):
            break
    prefix = "" if str(manifest_dir) == "." else f"{manifest_dir}/"
    return f"{prefix}{BLOB_DIR_NAME}"


def _norm(p: PurePosixPath) -> str:
    return os.path.normpath(str(p)).replace(os.sep, "/")
