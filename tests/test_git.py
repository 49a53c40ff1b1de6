"""The dulwich git helpers, on real repositories built in tmp_path (no git binary at run time)."""

from __future__ import annotations

import random
import shutil
import string
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from cassette.git.repo import (
    blob_id,
    changed_between,
    find_repo,
    head_blob,
    last_commit_time,
    read_at_rev,
    read_index_blob,
    staged_files,
)

AUTHOR = b"Test <test@example.com>"


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    r = porcelain.init(str(tmp_path))
    try:
        yield r
    finally:
        r.close()


def write(repo: Repo, path: str, data: bytes) -> None:
    target = Path(repo.path) / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def stage(repo: Repo, *paths: str) -> None:
    porcelain.add(repo, paths=[str(Path(repo.path) / p) for p in paths])


def commit(repo: Repo, message: str, when: int) -> str:
    sha = porcelain.commit(
        repo,
        message=message,
        author=AUTHOR,
        committer=AUTHOR,
        author_timestamp=when,
        commit_timestamp=when,
        author_timezone=0,
        commit_timezone=0,
    )
    return sha.decode()


def test_blob_id_equals_git_hash_object(tmp_path: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("the git binary is only used to cross-check; not installed here")
    for i, data in enumerate([b"", b"hello\n", bytes(range(256)) * 40, '{"k": "é"}\n'.encode()]):
        f = tmp_path / f"f{i}"
        f.write_bytes(data)
        expected = subprocess.run([git, "hash-object", str(f)], capture_output=True, check=True, text=True)
        assert blob_id(data) == expected.stdout.strip()


def test_find_repo_searches_upwards(repo: Repo, tmp_path: Path) -> None:
    (tmp_path / "tests" / "cassettes").mkdir(parents=True)
    found = find_repo(tmp_path / "tests" / "cassettes")
    assert found is not None
    with found:
        assert Path(found.path).resolve() == tmp_path.resolve()


def test_find_repo_outside_a_repository(tmp_path_factory: pytest.TempPathFactory) -> None:
    lonely = tmp_path_factory.mktemp("norepo")
    if _inside_repo(lonely):
        pytest.skip("the temp directory is inside a git repository")
    assert find_repo(lonely) is None


def _inside_repo(path: Path) -> bool:
    return any((p / ".git").exists() for p in [path, *path.parents])


def test_staged_files_before_the_first_commit(repo: Repo) -> None:
    write(repo, "tests/cassettes/a.json", b'{"a": 1}\n')
    write(repo, "README.md", b"# hi\n")
    write(repo, "untracked.txt", b"not staged\n")
    stage(repo, "tests/cassettes/a.json", "README.md")
    staged = staged_files(repo)
    assert [(f.path, f.change) for f in staged] == [("README.md", "add"), ("tests/cassettes/a.json", "add")]
    assert staged[1].read() == b'{"a": 1}\n'
    assert staged[1].blob_id == blob_id(b'{"a": 1}\n')
    assert head_blob(repo, "README.md") is None
    assert last_commit_time(repo, "README.md") is None


def test_staged_files_reads_the_index_not_the_worktree(repo: Repo) -> None:
    write(repo, "a.json", b"v1\n")
    write(repo, "gone.txt", b"bye\n")
    write(repo, "same.txt", b"same\n")
    stage(repo, "a.json", "gone.txt", "same.txt")
    commit(repo, "first", 1_700_000_000)

    write(repo, "a.json", b"v2 staged\n")
    stage(repo, "a.json")
    write(repo, "a.json", b"v3 in the worktree only\n")
    write(repo, "new.json", b"new\n")
    stage(repo, "new.json")
    porcelain.rm(repo, paths=[str(Path(repo.path) / "gone.txt")])

    staged = staged_files(repo)
    assert [(f.path, f.change) for f in staged] == [("a.json", "modify"), ("new.json", "add")]
    assert staged[0].read() == b"v2 staged\n"
    assert read_index_blob(repo, "a.json") == b"v2 staged\n"
    assert read_index_blob(repo, "gone.txt") is None
    assert read_index_blob(repo, "missing.txt") is None
    assert head_blob(repo, "a.json") == b"v1\n"


def test_read_at_rev_with_relative_revisions_branches_tags_and_shas(repo: Repo) -> None:
    write(repo, "c.json", b"one\n")
    stage(repo, "c.json")
    first = commit(repo, "one", 1_700_000_000)
    write(repo, "c.json", b"two\n")
    stage(repo, "c.json")
    commit(repo, "two", 1_700_000_100)
    porcelain.tag_create(repo, "v2")
    write(repo, "c.json", b"three\n")
    stage(repo, "c.json")
    commit(repo, "three", 1_700_000_200)
    porcelain.branch_create(repo, "old", first)

    assert read_at_rev(repo, "HEAD", "c.json") == b"three\n"
    assert read_at_rev(repo, "HEAD~1", "c.json") == b"two\n"
    assert read_at_rev(repo, "HEAD^", "c.json") == b"two\n"
    assert read_at_rev(repo, "HEAD~2", "c.json") == b"one\n"
    assert read_at_rev(repo, "v2", "c.json") == b"two\n"
    assert read_at_rev(repo, "old", "c.json") == b"one\n"
    assert read_at_rev(repo, first, "c.json") == b"one\n"
    assert read_at_rev(repo, first[:10], "c.json") == b"one\n"
    assert read_at_rev(repo, "HEAD~9", "c.json") is None
    assert read_at_rev(repo, "no-such-branch", "c.json") is None
    assert read_at_rev(repo, "HEAD", "missing.json") is None
    assert read_at_rev(repo, "HEAD", "c.json/inside") is None


def test_changed_between_reports_adds_modifies_deletes_and_renames(repo: Repo) -> None:
    big = b"".join(b"line %d of a long cassette\n" % i for i in range(200))
    write(repo, "keep.json", b"same\n")
    write(repo, "edit.json", b"before\n")
    write(repo, "drop.json", b"bye\n")
    write(repo, "old/name.json", big)
    stage(repo, "keep.json", "edit.json", "drop.json", "old/name.json")
    commit(repo, "a", 1_700_000_000)

    write(repo, "edit.json", b"after\n")
    write(repo, "added.json", b"hi\n")
    write(repo, "new/name.json", big)
    stage(repo, "edit.json", "added.json", "new/name.json")
    porcelain.rm(repo, paths=[str(Path(repo.path) / "drop.json"), str(Path(repo.path) / "old/name.json")])
    commit(repo, "b", 1_700_000_100)

    changes = sorted(changed_between(repo, "HEAD~1", "HEAD"), key=lambda c: (c[2], str(c[0]), str(c[1])))
    assert changes == [
        (None, "added.json", "add"),
        ("drop.json", None, "delete"),
        ("edit.json", "edit.json", "modify"),
        ("old/name.json", "new/name.json", "rename"),
    ]
    assert changed_between(repo, "HEAD", "HEAD") == []
    with pytest.raises(KeyError, match="nope"):
        changed_between(repo, "nope", "HEAD")


def test_last_commit_time_is_when_the_file_last_changed(repo: Repo) -> None:
    write(repo, "a.json", b"1\n")
    write(repo, "b.json", b"1\n")
    stage(repo, "a.json", "b.json")
    commit(repo, "both", 1_700_000_000)
    write(repo, "a.json", b"2\n")
    stage(repo, "a.json")
    commit(repo, "a only", 1_700_000_500)
    write(repo, "c.json", b"1\n")
    stage(repo, "c.json")
    commit(repo, "c", 1_700_000_900)

    assert last_commit_time(repo, "a.json") == 1_700_000_500
    assert last_commit_time(repo, "b.json") == 1_700_000_000
    assert last_commit_time(repo, "c.json") == 1_700_000_900
    assert last_commit_time(repo, "missing.json") is None
    # bounded: within the newest commit only, b.json did not change
    assert last_commit_time(repo, "b.json", limit=1) is None


def test_staged_blob_scanned_for_secrets_end_to_end(repo: Repo) -> None:
    from cassette.plugins.manager import default_rules
    from cassette.secrets import Scanner

    rng = random.Random(7)
    key = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    write(repo, "tests/cassettes/t.json", b'{"headers": {"authorization": "token ' + key.encode() + b'"}}')
    stage(repo, "tests/cassettes/t.json")
    write(repo, "tests/cassettes/t.json", b"{}")  # the worktree no longer has it: the index does
    scanner = Scanner(default_rules())
    findings = [f for s in staged_files(repo) for f in scanner.scan(s.read(), s.path, content_id=s.blob_id)]
    assert [(f.file, f.rule, f.path) for f in findings] == [
        ("tests/cassettes/t.json", "github-token", "headers.authorization")
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary to stage and repack")
def test_staged_blob_reads_the_same_loose_packed_or_tampered(repo: Repo) -> None:
    """The fast loose-object read and dulwich agree; a packed or odd object falls back to dulwich."""
    root = Path(repo.path)
    data = b'{"version": 1, "interactions": []}\n' * 500
    write(repo, "c.json", data)
    subprocess.run(["git", "-C", str(root), "add", "c.json"], check=True)
    (staged,) = staged_files(repo)
    loose = root / ".git" / "objects" / staged.blob_id[:2] / staged.blob_id[2:]
    assert loose.is_file()
    assert staged.read() == data  # straight from the loose object

    # a loose file whose header is not a blob of its size is left to dulwich: both readers agree
    original = loose.read_bytes()
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob 3\0" + data))
    with Repo(str(root)) as fresh:
        odd = staged_files(fresh)[0]
        assert odd.read() == fresh.object_store[odd.blob_id.encode()].as_raw_string()
    loose.write_bytes(b"not zlib at all")
    with Repo(str(root)) as fresh, pytest.raises(Exception):  # noqa: B017 - dulwich's own error
        staged_files(fresh)[0].read()
    loose.write_bytes(original)

    # packed (git repack keeps objects the index names): read through dulwich's pack lookup
    subprocess.run(["git", "-C", str(root), "repack", "-a", "-d", "-q"], check=True)
    subprocess.run(["git", "-C", str(root), "prune-packed"], check=True)
    assert not loose.exists()
    with Repo(str(root)) as fresh:
        (again,) = staged_files(fresh)
        assert again.read() == data
