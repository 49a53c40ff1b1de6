"""Git, read through dulwich: the index, staged blobs, blobs at a revision, tree changes.

A thin layer over dulwich's object model; never shells out to ``git`` (a
textconv driver can rewrite what ``git diff`` prints, the index cannot lie).
Paths are ``str`` with ``/`` separators, relative to the repository root.

Every staged read goes through :func:`open_index`, which reads the index git
would commit: ``$GIT_INDEX_FILE`` when it is set (``git commit -a`` and
``git commit <path>`` build a temporary index and point hooks at it), else
``.git/index``. Intent-to-add entries (``git add -N``) are not staged content
and are left out.
"""

from __future__ import annotations

import os
import stat
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from dulwich.diff_tree import RenameDetector, tree_changes
from dulwich.errors import NotGitRepository, NotTreeError
from dulwich.index import Index, IndexEntry
from dulwich.objects import Blob, Commit, ObjectID, Tag, Tree
from dulwich.objectspec import parse_commit, parse_object
from dulwich.repo import Repo

from cassette.core.paths import resolve_path
from cassette.errors import GitIndexError, UnknownRevisionError

__all__ = [
    "GitIndexError",
    "StagedFile",
    "blob_id",
    "cached_head_entries",
    "changed_between",
    "find_repo",
    "head_blob",
    "head_entries",
    "head_tree",
    "index_entries",
    "index_path",
    "is_intent_to_add",
    "last_commit_time",
    "open_index",
    "read_at_rev",
    "read_index_blob",
    "staged_changes",
    "staged_files",
    "tree_files",
]

ChangeType = Literal["add", "modify"]

# `git add -N`: the path is recorded, its content is not staged (dulwich's EXTENDED_FLAG_INTEND_TO_ADD)
_INTENT_TO_ADD = 0x2000


def _b(path: str) -> bytes:
    return os.fsencode(path.replace(os.sep, "/"))


def _s(path: bytes) -> str:
    return os.fsdecode(path)


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints).

    Example::

        blob_id(b"hello\\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    """
    return Blob.from_string(data).id.decode("ascii")


def find_repo(path: str | os.PathLike[str] = ".") -> Repo | None:
    """The repository containing ``path`` (searching upwards), or ``None``.

    The caller closes it (``repo.close()``, or ``with find_repo(p) as repo``).

    Example::

        repo = find_repo("tests/cassettes")
    """
    try:
        return Repo.discover(os.fspath(path))
    except NotGitRepository:
        return None


def index_path(repo: Repo) -> str:
    """The index file git would commit from: ``$GIT_INDEX_FILE`` when set, else ``<git dir>/index``.

    git sets ``GIT_INDEX_FILE`` for its hooks: an absolute temporary index for
    ``git commit -a`` and ``git commit <path>``, ``.git/index`` (relative to the
    work tree, where hooks run) for a plain commit. A relative value is taken
    relative to the current directory, as git does.

    Example::

        index_path(repo)  # "/work/proj/.git/index"
    """
    override = os.environ.get("GIT_INDEX_FILE")
    return os.path.abspath(override) if override else os.path.abspath(repo.index_path())


def open_index(repo: Repo) -> Index:
    """The index git would commit from (see :func:`index_path`), read in full.

    Raises :class:`GitIndexError` (one line: the file, the cause, the fix) when
    it cannot be read: a split index (``git update-index --split-index``, which
    dulwich does not read), a truncated or damaged file, an unknown version.

    Example::

        for path, entry in open_index(repo).items(): ...
    """
    path = index_path(repo)
    try:
        if path == os.path.abspath(repo.index_path()):
            return repo.open_index()  # with the repository's config (path normalisation)
        object_format = getattr(repo, "object_format", None)  # SHA-256 repositories
        return Index(path) if object_format is None else Index(path, object_format=object_format)
    except Exception as exc:  # any parse failure: never a traceback in a hook
        raise _index_error(path, exc) from None


def _index_error(path: str, exc: Exception) -> GitIndexError:
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError:
        head = b""
    folder = os.path.dirname(path)
    try:
        shared = any(name.startswith("sharedindex.") for name in os.listdir(folder))
    except OSError:
        shared = False
    if head.startswith(b"DIRC") and b"link" in head[12:] and shared:
        return GitIndexError(
            f"cannot read the git index {path}: it is a split index (`git update-index --split-index` "
            "or core.splitIndex), which cassette cannot read. Run `git update-index --no-split-index` "
            "(and `git config core.splitIndex false` if it is set), then run it again.",
            path=path,
        )
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    return GitIndexError(
        f"cannot read the git index {path} ({type(exc).__name__}: {detail}). Check it with "
        "`git status`; a damaged index is rebuilt from HEAD by deleting it and running `git reset` "
        "(then stage your changes again).",
        path=path,
    )


class IndexRecord(NamedTuple):
    """One path of the index: its mode, blob id, and whether git would commit it as it stands."""

    mode: int
    sha: str
    conflicted: bool = False  # an unmerged path (stages 1-3): nothing to commit until it is resolved
    intent_to_add: bool = False  # `git add -N`: a placeholder, not content

    @property
    def committable(self) -> bool:
        return not self.conflicted and not self.intent_to_add


# {index file: (its stat and checksum, its records)}: every staged read of a process reads the index once
_INDEX_CACHE: dict[str, tuple[tuple[int, int, int, bytes], dict[str, IndexRecord]]] = {}
_HEAD_CACHE: dict[tuple[str, bytes], dict[str, tuple[int, str]]] = {}


def index_entries(repo: Repo) -> dict[str, IndexRecord]:
    """Every path of the index git would commit from (see :func:`index_path`), read once per process.

    The index file is parsed directly (versions 2-4, the documented git format); it is read again
    only when it changed (its size, mtime, inode or trailing checksum). Anything the fast reader
    does not know (a split or sparse index, a damaged file) goes through :func:`open_index`, which
    reads it with dulwich or raises its :class:`GitIndexError`. Do not modify the returned dict.

    Example::

        index_entries(repo)["tests/cassettes/triage.json"].sha
    """
    path = index_path(repo)
    object_format = getattr(repo, "object_format", None)
    oid_length = int(getattr(object_format, "oid_length", 20) or 20)
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            fh.seek(max(0, info.st_size - oid_length))
            key = (info.st_size, info.st_mtime_ns, info.st_ino, fh.read())
            cached = _INDEX_CACHE.get(path)
            if cached is not None and cached[0] == key:
                return cached[1]
            fh.seek(0)
            data = fh.read()
    except FileNotFoundError:
        return {}  # no index yet: nothing staged (as git and dulwich see it)
    except OSError:
        data = b""
    records = _parse_index(data, oid_length)
    if records is None:  # not a plain index: dulwich reads it, or says why it cannot
        records = _records_of(open_index(repo))
    else:
        _INDEX_CACHE[path] = (key, records)
    return records


def _parse_index(data: bytes, oid_length: int) -> dict[str, IndexRecord] | None:
    """The records of a git index file (format versions 2, 3 and 4), or ``None`` to let dulwich read it."""
    if len(data) < 12 + oid_length or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        return None
    # skipped: ctime, mtime, dev, ino; read: mode, uid, gid, size, sha, flags
    head = struct.Struct(f">24xIIII{oid_length}sH")
    out: dict[str, IndexRecord] = {}
    end = len(data) - oid_length
    pos = 12
    previous = b""
    try:
        for _ in range(count):
            start = pos
            mode, _, _, _, sha, flags = head.unpack_from(data, pos)
            pos += head.size
            extended = 0
            if flags & 0x4000:
                if version < 3:
                    return None
                (extended,) = struct.unpack_from(">H", data, pos)
                pos += 2
            if version == 4:  # the name is the previous one minus N bytes, plus a NUL-terminated suffix
                strip = data[pos] & 0x7F
                while data[pos] & 0x80:
                    pos += 1
                    strip = ((strip + 1) << 7) | (data[pos] & 0x7F)
                pos += 1
                nul = data.index(b"\0", pos, end)
                name = previous[: len(previous) - strip] + data[pos:nul]
                pos = nul + 1
            else:
                nul = data.index(b"\0", pos, end)
                name = data[pos:nul]
                pos = start + ((nul - start + 8) & ~7)  # 1 to 8 NUL bytes pad the entry to 8
            previous = name
            if stat.S_ISDIR(mode):  # a sparse-index directory entry: dulwich's business
                return None
            text = name.decode("utf-8", "surrogateescape")
            stage = (flags >> 12) & 3
            if stage:
                out[text] = IndexRecord(mode, sha.hex(), conflicted=True)
            else:
                out[text] = IndexRecord(mode, sha.hex(), intent_to_add=bool(extended & _INTENT_TO_ADD))
        while pos + 8 <= end:  # extensions: a split index ("link") is not the whole index
            signature = data[pos : pos + 4]
            if signature in (b"link", b"sdir"):
                return None
            (size,) = struct.unpack_from(">I", data, pos + 4)
            pos += 8 + size
    except (struct.error, ValueError, IndexError):
        return None
    return out


def _records_of(index: Index) -> dict[str, IndexRecord]:
    out: dict[str, IndexRecord] = {}
    for raw, entry in index.items():
        text = raw.decode("utf-8", "surrogateescape")
        if isinstance(entry, IndexEntry):
            out[text] = IndexRecord(
                entry.mode, entry.sha.decode("ascii"), intent_to_add=is_intent_to_add(entry)
            )
        else:
            out[text] = IndexRecord(0, "", conflicted=True)
    return out


def head_entries(repo: Repo) -> dict[str, tuple[int, str]]:
    """Every file of the HEAD commit's tree: ``{path: (mode, blob id)}`` (empty before the first commit).

    Read once per process for a given HEAD tree (`cached_head_entries` says whether it was). Do
    not modify the returned dict.

    Example::

        mode, sha = head_entries(repo)["tests/cassettes/triage.json"]
    """
    tree_id = head_tree(repo)
    if tree_id is None:
        return {}
    key = (os.path.abspath(repo.controldir()), bytes(tree_id))
    cached = _HEAD_CACHE.get(key)
    if cached is not None:
        return cached
    files = tree_files(repo.object_store, "", tree_id)
    out = {path: (mode, sha.decode("ascii")) for path, mode, sha in files}
    _HEAD_CACHE[key] = out
    return out


def cached_head_entries(repo: Repo) -> dict[str, tuple[int, str]] | None:
    """`head_entries` if this process has read HEAD's tree already, else None (nothing is read)."""
    tree_id = head_tree(repo)
    if tree_id is None:
        return {}
    return _HEAD_CACHE.get((os.path.abspath(repo.controldir()), bytes(tree_id)))


def tree_files(store: Any, prefix: str, tree_id: bytes) -> Iterator[tuple[str, int, bytes]]:
    """``(path, mode, blob id)`` of every non-directory entry below the tree ``tree_id``, each tree
    read once and its entries taken as dulwich stores them (no sorted iteration: for 10,000 files
    about half the time of ``Tree.iteritems``)."""
    todo: list[tuple[str, bytes]] = [(prefix, tree_id)]
    while todo:
        at, tid = todo.pop()
        tree = store[tid]
        if not isinstance(tree, Tree):
            continue
        for name in tree:
            mode, sha = tree[name]
            path = at + name.decode("utf-8", "surrogateescape")
            if stat.S_ISDIR(mode):
                todo.append((path + "/", sha))
            else:
                yield path, mode, sha


def is_intent_to_add(entry: IndexEntry) -> bool:
    """Whether ``entry`` was added with ``git add -N``: a placeholder, not content to commit."""
    return bool(getattr(entry, "extended_flags", 0) & _INTENT_TO_ADD)


@dataclass(frozen=True)
class StagedFile:
    """A file whose staged content differs from HEAD; ``read()`` gives the staged bytes."""

    path: str
    blob_id: str
    change: ChangeType
    _repo: Repo = field(repr=False, compare=False)

    def read(self) -> bytes:
        data = _read_loose_blob(self._repo, self.blob_id)
        if data is not None:
            return data
        obj = self._repo.object_store[ObjectID(self.blob_id.encode("ascii"))]
        assert isinstance(obj, Blob)
        return obj.as_raw_string()


def _read_loose_blob(repo: Repo, blob_id: str) -> bytes | None:
    """A just-staged blob straight from its loose object file, or None to let dulwich look.

    ``git add`` writes loose objects; dulwich's lookup lists the pack directory and
    inflates each object twice (header, then body), which made a staged scan of
    1,000 cassettes spend more time reading git than scanning. Anything unusual
    (packed, alternates, a header that does not say ``blob <size>``) goes to dulwich.
    """
    objects = getattr(repo.object_store, "path", None)
    if not isinstance(objects, str) or len(blob_id) != 40:
        return None
    try:
        with open(os.path.join(objects, blob_id[:2], blob_id[2:]), "rb") as fh:
            raw = zlib.decompress(fh.read())
    except (OSError, zlib.error):
        return None
    nul = raw.find(b"\0", 0, 32)
    if nul < 0 or raw[:nul] != b"blob %d" % (len(raw) - nul - 1):
        return None
    return raw[nul + 1 :]


def head_tree(repo: Repo) -> ObjectID | None:
    """The id of HEAD's tree, or None before the first commit (or on an unborn branch)."""
    try:
        head = repo[b"HEAD"]
    except KeyError:  # no commit yet (or HEAD points to an unborn branch)
        return None
    return head.tree if isinstance(head, Commit) else None


def staged_files(repo: Repo) -> list[StagedFile]:
    """Regular files added or modified in the index relative to HEAD, sorted by path.

    Deleted files, submodules, symlinks, unmerged and intent-to-add (``git add -N``)
    paths are left out. Reads :func:`open_index` (``$GIT_INDEX_FILE`` when set).
    Works before the first commit (everything staged is added).

    Example::

        for f in staged_files(repo):
            scanner.scan(f.read(), f.path, content_id=f.blob_id)
    """
    return staged_changes(repo)[0]


def staged_changes(repo: Repo) -> tuple[list[StagedFile], list[str]]:
    """What the index changes against ``HEAD``: the regular files added or modified (as
    `staged_files` lists them) and the paths deleted (``git rm``), sorted, from one read of the
    index and one walk of HEAD's trees.

    Example::

        changed, deleted = staged_changes(repo)
    """
    head = head_entries(repo)
    index = index_entries(repo)
    changed: list[StagedFile] = []
    for path, record in index.items():
        if not record.committable or not stat.S_ISREG(record.mode):  # unmerged, `add -N`, links
            continue
        old = head.get(path)
        if old is None or old != (record.mode, record.sha):
            change: ChangeType = "add" if old is None else "modify"
            changed.append(StagedFile(path, record.sha, change, repo))
    changed.sort(key=lambda f: f.path)
    deleted = sorted(p for p, (mode, _) in head.items() if stat.S_ISREG(mode) and not _kept(index, p))
    return changed, deleted


def _kept(index: dict[str, IndexRecord], path: str) -> bool:
    record = index.get(path)
    return record is not None and record.committable


def read_index_blob(repo: Repo, path: str) -> bytes | None:
    """The staged bytes of ``path``, or ``None`` if it is not in the index (or unmerged, or ``add -N``).

    Example::

        read_index_blob(repo, "tests/cassettes/triage.json")
    """
    record = index_entries(repo).get(path.replace(os.sep, "/"))
    if record is None or not record.committable:
        return None
    obj = repo.object_store[ObjectID(record.sha.encode("ascii"))]
    return obj.as_raw_string() if isinstance(obj, Blob) else None


def resolve_commit(repo: Repo, rev: str) -> Commit:
    """The commit ``rev`` names: a branch, tag, (short) sha or ``HEAD``, with ``~N`` / ``^N`` suffixes
    (dulwich's own revision parsing); `UnknownRevisionError` when the repository has none.

    Example::

        resolve_commit(repo, "HEAD~1").id
    """
    try:
        obj = parse_object(repo, rev) if "~" in rev or "^" in rev else parse_commit(repo, rev)
        while isinstance(obj, Tag):
            obj = repo[obj.object[1]]
        if not isinstance(obj, Commit):
            raise ValueError(f"it names a {obj.type_name.decode()}, not a commit")
        return obj
    except (KeyError, ValueError) as exc:
        # dulwich's KeyError only repeats the name, as bytes (b'nope'): no detail then
        detail = "" if isinstance(exc, KeyError) else f" ({exc})"
        if "parent" in detail:  # "Commit … has no parents", "… does not have parent #2"
            detail = " (not that many parents)"
        raise UnknownRevisionError(
            f"git repository {repo.path} has no commit {rev!r}{detail}. Pass a branch, tag, sha or "
            "HEAD~N that exists, e.g. --rev origin/main..HEAD.",
            path=repo.path,
        ) from None


def _commit(repo: Repo, rev: str) -> Commit | None:
    try:
        return resolve_commit(repo, rev)
    except UnknownRevisionError:
        return None


def _blob_in_tree(repo: Repo, tree_id: ObjectID, path: str) -> bytes | None:
    tree = repo.object_store[tree_id]
    if not isinstance(tree, Tree):
        return None
    try:
        mode, sha = tree.lookup_path(repo.object_store.__getitem__, _b(path))
    except (KeyError, NotTreeError):
        return None
    if not stat.S_ISREG(mode):
        return None
    obj = repo.object_store[sha]
    return obj.as_raw_string() if isinstance(obj, Blob) else None


def read_at_rev(repo: Repo, rev: str, path: str) -> bytes | None:
    """The bytes of ``path`` at revision ``rev``, or ``None`` if the revision or path does not exist.

    Example::

        before = read_at_rev(repo, "HEAD~1", "tests/cassettes/triage.json")
    """
    commit = _commit(repo, rev)
    if commit is None:
        return None
    return _blob_in_tree(repo, commit.tree, path)


def head_blob(repo: Repo, path: str) -> bytes | None:
    """The bytes of ``path`` in the HEAD commit, or ``None`` (no such file, or no commit yet).

    Example::

        head_blob(repo, "tests/cassettes/triage.json")
    """
    tree = head_tree(repo)
    return None if tree is None else _blob_in_tree(repo, tree, path)


def changed_between(repo: Repo, rev_a: str, rev_b: str) -> list[tuple[str | None, str | None, str]]:
    """Files that differ between two revisions: ``(old_path, new_path, change_type)``.

    ``change_type`` is dulwich's: ``"add"``, ``"delete"``, ``"modify"``,
    ``"rename"`` or ``"copy"`` (renames are detected by content similarity).
    An unknown revision raises ``KeyError``.

    Example::

        changed_between(repo, "HEAD~1", "HEAD")  # [(None, "tests/cassettes/new.json", "add"), ...]
    """
    trees = []
    for rev in (rev_a, rev_b):
        commit = _commit(repo, rev)
        if commit is None:
            raise KeyError(f"unknown revision {rev!r} in {repo.path}")
        trees.append(commit.tree)
    out: list[tuple[str | None, str | None, str]] = []
    for change in tree_changes(
        repo.object_store, trees[0], trees[1], rename_detector=RenameDetector(repo.object_store)
    ):
        old = _s(change.old.path) if change.old is not None and change.old.path is not None else None
        new = _s(change.new.path) if change.new is not None and change.new.path is not None else None
        out.append((old, new, str(change.type)))
    return out


def _walk_first(repo: Repo, limit: int) -> Iterator[Commit]:
    try:
        head = repo.head()
    except KeyError:
        return
    for entry in repo.get_walker(include=[head], max_entries=limit):
        yield entry.commit


def last_commit_time(repo: Repo, path: str, *, limit: int = 10_000) -> int | None:
    """When ``path`` last changed in HEAD's history (commit time, seconds since the epoch).

    Walks at most ``limit`` commits, newest first; ``None`` if the path was not
    changed within them (or there is no commit).

    Example::

        age = time.time() - (last_commit_time(repo, "tests/cassettes/triage.json") or 0)
    """
    key = _b(path)

    def sha_at(tree_id: ObjectID) -> bytes | None:
        try:
            tree = repo.object_store[tree_id]
            assert isinstance(tree, Tree)
            return tree.lookup_path(repo.object_store.__getitem__, key)[1]
        except (KeyError, NotTreeError):
            return None

    for commit in _walk_first(repo, limit):
        here = sha_at(commit.tree)
        parents = [repo.object_store[p] for p in commit.parents]
        before = [sha_at(p.tree) for p in parents if isinstance(p, Commit)]
        if here is None:
            continue
        if not before or all(b != here for b in before):
            return int(commit.commit_time)
    return None


def committed_time(path: Path) -> float | None:
    """When the file at ``path`` was last committed, as it is now (seconds since the epoch), or
    ``None``: outside a repository, untracked, or changed since (the file itself is then the news).

    Example::

        committed_time(Path("tests/cassettes/test_agent/test_refund.json"))  # 1764590400.0
    """
    here = resolve_path(path).parent
    root = next((d for d in (here, *here.parents) if (d / ".git").exists()), None)
    if root is None:
        return None
    try:
        rel = resolve_path(path).relative_to(root).as_posix()
        with Repo(str(root)) as repo:
            if head_blob(repo, rel) != path.read_bytes():
                return None
            result = last_commit_time(repo, rel)
    except (NotGitRepository, GitIndexError, OSError, KeyError, ValueError):
        return None
    return None if result is None else float(result)


def set_textconv(repo: Repo, command: str) -> bool:
    """Set ``diff.cassette.textconv`` to ``command`` in the repository's ``.git/config``; whether it changed.

    Example::

        set_textconv(repo, "cassette textconv")
    """
    config = repo.get_config()
    section = (b"diff", b"cassette")
    try:
        if config.get(section, b"textconv") == command.encode():
            return False
    except KeyError:
        pass
    config.set(section, b"textconv", command.encode())
    config.write_to_path()
    return True


def tracked_files(repo: Repo, paths: set[str] | None = None) -> list[StagedFile]:
    """Every regular file the index tracks (staged changes or not), or those of ``paths``, sorted by
    path: what ``pre-commit run --all-files`` asks a hook to check.

    Example::

        [f.path for f in tracked_files(repo, {"tests/cassettes/a.json"})]
    """
    changed = {f.path: f for f in staged_files(repo)}
    out: list[StagedFile] = []
    for path, record in index_entries(repo).items():
        if paths is not None and path not in paths:
            continue
        if not record.committable or not stat.S_ISREG(record.mode):
            continue
        out.append(changed.get(path) or StagedFile(path, record.sha, "modify", repo))
    out.sort(key=lambda f: f.path)
    return out
