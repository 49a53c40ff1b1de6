"""Special files where a cassette manifest should be: FIFOs, sockets, devices, symlinks to them.

Git can commit a symlink (to ``/dev/zero``, say) and anyone can leave a FIFO in a working
tree. Every reader of manifests — replay, record's auto mode, rerecord, `load_cassette`,
`cassette verify`, `scan`, `show`, `ls`, `gc`, `accept` and `drift --pending` — must refuse
such a file with a `CassetteIOError` naming it (or skip it, where a directory is walked
for files of any kind), never block on a FIFO or read a device until memory runs out.

Each case runs in a worker thread with a deadline, so a regression fails the test
instead of hanging the suite (a thread stuck on a FIFO is released by opening its
write end), under an address-space cap, so a regression reading /dev/zero ends in a
MemoryError instead of exhausting the machine.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import CassetteIOError, NotRegularFileError, load_cassette
from cassette.cli import main
from cassette.store.files import MAX_MANIFEST_BYTES, read_regular

DEADLINE = 20.0  # seconds: each case takes milliseconds; a hang is the bug
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no os.mkfifo on this platform")
needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
needs_symlinks = pytest.mark.skipif(os.name != "posix", reason="symlinks need privileges on Windows")

KINDS = ["fifo", "dev-zero-symlink", "socket"]


def _unblock(path: Path) -> None:
    """Release a reader stuck opening or reading the FIFO at ``path`` (a failed test's cleanup)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)


@contextlib.contextmanager
def memory_cap(extra: int = 1024 * 2**20) -> Iterator[None]:
    """Cap the address space at its current size plus ``extra`` while the block runs (Linux).

    A regression reading /dev/zero then ends in a MemoryError (a failure), not in the OOM killer.
    """
    try:
        import resource

        with open("/proc/self/statm") as fh:
            current = int(fh.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = current + extra if hard == resource.RLIM_INFINITY else min(current + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def within_deadline(fn: Callable[[], Any], *, fifos: tuple[Path, ...] = ()) -> Any:
    """``fn()``'s result or its exception, or a test failure if it has not returned in DEADLINE s."""
    with memory_cap():
        return _within_deadline(fn, fifos)


def _within_deadline(fn: Callable[[], Any], fifos: tuple[Path, ...]) -> Any:
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(DEADLINE)
    if worker.is_alive():
        for fifo in fifos:
            _unblock(fifo)
        worker.join(2.0)
        pytest.fail(f"still running after {DEADLINE} s: it blocked on a special file")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@contextlib.contextmanager
def special_file(path: Path, kind: str) -> Iterator[Path]:
    """Make ``path`` a FIFO, a symlink to /dev/zero or a listening UNIX socket."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sock: socket.socket | None = None
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no os.mkfifo on this platform")
        os.mkfifo(path)
    elif kind == "dev-zero-symlink":
        if os.name != "posix" or not os.path.exists("/dev/zero"):
            pytest.skip("needs POSIX symlinks and /dev/zero")
        os.symlink("/dev/zero", path)
    elif kind == "socket":
        if not hasattr(socket, "AF_UNIX") or len(os.fsencode(path)) > 100:
            pytest.skip("no UNIX sockets here, or the path is too long to bind")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(os.fspath(path))
    else:  # pragma: no cover
        raise AssertionError(kind)
    try:
        yield path
    finally:
        if sock is not None:
            sock.close()


def _valid_manifest() -> bytes:
    return json.dumps({"version": 1, "interactions": []}).encode()


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with ``tests/cassettes`` holding one sound cassette; the working directory is its root."""
    (tmp_path / "pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "tests/cassettes"\n')
    cassettes = tmp_path / "tests" / "cassettes"
    cassettes.mkdir(parents=True)
    (cassettes / "good.json").write_bytes(_valid_manifest())
    monkeypatch.chdir(tmp_path)
    return cassettes


def cli(capsys: pytest.CaptureFixture[str], fifos: tuple[Path, ...], *argv: str) -> tuple[int, str, str]:
    code = within_deadline(lambda: main(list(argv)), fifos=fifos)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# --- the reader -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_read_regular_refuses_special_files(tmp_path: Path, kind: str) -> None:
    with special_file(tmp_path / "x.json", kind) as path:
        with pytest.raises(NotRegularFileError) as info:
            within_deadline(lambda: read_regular(path), fifos=(path,))
    assert info.value.filename == os.fspath(path)
    assert {"fifo": "FIFO", "dev-zero-symlink": "character device", "socket": "socket"}[kind] in str(
        info.value
    )


def test_read_regular_reads_a_regular_file_and_keeps_directory_errors(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b"x" * 200_000)
    assert read_regular(tmp_path / "a.json") == b"x" * 200_000
    (tmp_path / "empty.json").write_bytes(b"")
    assert read_regular(tmp_path / "empty.json") == b""
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing.json")


def test_read_regular_checks_the_size_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "sparse.json"
    with open(path, "wb") as fh:  # sparse: a huge size on disk costs nothing
        fh.truncate(4096)
    assert read_regular(path, limit=4096) == b"\0" * 4096
    with pytest.raises(OSError) as info:
        read_regular(path, limit=4095)
    assert info.value.errno == errno.EFBIG
    assert MAX_MANIFEST_BYTES >= 2**32  # never below a real (50 MB and more) cassette


def test_a_manifest_over_the_limit_is_a_cassette_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cassette.store.files as store

    path = tmp_path / "big.json"
    path.write_bytes(_valid_manifest())
    monkeypatch.setattr(store.read_regular, "__kwdefaults__", {"limit": 10})  # its default limit
    with pytest.raises(CassetteIOError, match=r"big\.json.*over the 10-byte limit"):
        load_cassette(path)


# --- the library: load, replay, auto, rerecord ----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lazy", [False, True])
def test_load_cassette_refuses(tmp_path: Path, kind: str, lazy: bool) -> None:
    with special_file(tmp_path / "f.json", kind) as path:
        with pytest.raises(CassetteIOError) as info:
            within_deadline(lambda: load_cassette(path, lazy=lazy), fifos=(path,))
    message = str(info.value)
    assert "f.json" in message and "not a regular file" in message
    assert "restore the cassette from git" in message or "re-record" in message
    assert info.value.path == os.fspath(path)
    if kind == "dev-zero-symlink":
        assert "a symlink to /dev/zero" in message


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["replay", "auto", "rerecord"])
def test_a_session_refuses(tmp_path: Path, kind: str, mode: str) -> None:
    def run() -> None:
        with cassette.using(path, mode=mode):
            pass

    with special_file(tmp_path / "f.json", kind) as path:
        with pytest.raises(CassetteIOError, match="not a regular file"):
            within_deadline(run, fifos=(path,))


@pytest.mark.parametrize("kind", ["fifo", "socket"])
@pytest.mark.parametrize("mode", ["record", "rerecord-pending"])
def test_recording_over_a_special_file_is_refused_before_it_runs_and_leaves_it_there(
    tmp_path: Path, kind: str, mode: str
) -> None:
    # the atomic rename would put a regular file in its place (as root, /dev/null itself)
    cassette_path = tmp_path / "f.json"
    if mode == "rerecord-pending":
        cassette_path.write_bytes(_valid_manifest())
    target = tmp_path / ("f.pending.json" if mode == "rerecord-pending" else "f.json")
    ran: list[str] = []

    def run() -> None:
        with cassette.using(cassette_path, mode=mode.split("-")[0]):
            ran.append("block")

    with special_file(target, kind) as path:
        with pytest.raises(CassetteIOError) as info:
            within_deadline(run, fifos=(path,))
        assert not ran  # refused when the block starts, not after a whole recording
        message = str(info.value)
        assert target.name in message and "not a regular file" in message and "record again" in message
        mode_now = os.lstat(path).st_mode
        assert stat.S_ISFIFO(mode_now) if kind == "fifo" else stat.S_ISSOCK(mode_now)


@needs_fifo
def test_a_special_file_that_appears_before_the_save_is_not_replaced(tmp_path: Path) -> None:
    from cassette import Cassette
    from cassette.store.cassettes import save_cassette

    path = tmp_path / "f.json"
    os.mkfifo(path)
    with pytest.raises(CassetteIOError, match="a FIFO"):
        within_deadline(
            lambda: save_cassette(Cassette(path=path, interactions=[]), path, 4096), fifos=(path,)
        )
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


# --- the command line -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_verify_reports_a_special_file_in_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "f.json", kind) as path:
        code, _, err = cli(capsys, (path,), "verify", "tests/cassettes")
    assert code == 1
    assert "f.json" in err and "not a regular file" in err


@pytest.mark.parametrize("kind", KINDS)
def test_verify_named_special_file_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "f.json", kind) as path:
        code, _, err = cli(capsys, (path,), "verify", "tests/cassettes/f.json")
    assert code == 2
    assert err.startswith("cassette verify: error: tests/cassettes/f.json: ") and "not a regular file" in err


@pytest.mark.parametrize("kind", KINDS)
def test_scan_skips_a_special_file_in_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "f.json", kind) as path:
        code, out, err = cli(capsys, (path,), "scan", "tests/cassettes")
    assert (code, out, err) == (0, "", "")


@pytest.mark.parametrize("kind", KINDS)
def test_scan_named_special_file_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "f.json", kind) as path:
        code, _, err = cli(capsys, (path,), "scan", "tests/cassettes/f.json")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].count("cassette scan:") == 1, err
    assert "tests/cassettes/f.json" in err and "not a regular file" in err


@pytest.mark.parametrize("kind", KINDS)
def test_show_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "f.json", kind) as path:
        code, _, err = cli(capsys, (path,), "show", "tests/cassettes/f.json")
    assert code == 2
    assert err.startswith("cassette show: error: ") and "f.json" in err and "not a regular file" in err


@pytest.mark.parametrize("kind", KINDS)
def test_ls_marks_it_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "f.json", kind) as path:
        code, out, _ = cli(capsys, (path,), "ls", "tests/cassettes")
    assert code == 1
    assert "f.json" in out and "UNREADABLE" in out and "not a regular file" in out
    assert "good.json" in out


@pytest.mark.parametrize("kind", KINDS)
def test_gc_stops_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "f.json", kind) as path:
        code, _, err = cli(capsys, (path,), "gc", "tests/cassettes")
    assert code == 2
    assert "f.json" in err and "not a regular file" in err


@needs_fifo
def test_gc_skips_a_fifo_outside_the_cassette_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a project-wide store, gc looks at JSON files all over the project: a FIFO is no cassette."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cassette]\ncassette_dir = "tests/cassettes"\nstore = ".blobs"\n'
    )
    (tmp_path / "tests" / "cassettes" / "a").mkdir(parents=True)
    (tmp_path / "tests" / "cassettes" / "a" / "c.json").write_bytes(_valid_manifest())
    (tmp_path / ".blobs" / "ab").mkdir(parents=True)
    (tmp_path / ".blobs" / "ab" / ("c" * 38)).write_bytes(b"orphan")
    fifo = tmp_path / "elsewhere" / "pipe.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, (fifo,), "gc", "tests/cassettes/a")
    assert code == 0, out


@pytest.mark.parametrize("kind", KINDS)
def test_accept_refuses_a_special_pending_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "good.pending.json", kind) as path:
        code, _, err = cli(capsys, (path,), "accept", "tests/cassettes")
        assert code == 2
        assert "good.pending.json" in err and "not a regular file" in err
        assert (cassettes / "good.json").read_bytes() == _valid_manifest()  # nothing replaced


@pytest.mark.parametrize("kind", KINDS)
def test_drift_pending_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cassettes = _project(tmp_path, monkeypatch)
    with special_file(cassettes / "good.pending.json", kind) as path:
        code, out, _ = cli(capsys, (path,), "drift", "--pending", "tests/cassettes")
    assert code == 0
    assert "good" in out and "not a regular file" in out


@needs_symlinks
def test_a_symlink_to_a_regular_cassette_still_loads(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_bytes(_valid_manifest())
    os.symlink(tmp_path / "real.json", tmp_path / "link.json")
    assert load_cassette(tmp_path / "link.json").interactions == []
    assert stat.S_ISLNK(os.lstat(tmp_path / "link.json").st_mode)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc files are Linux's")
def test_a_regular_file_whose_size_says_zero_is_read_to_its_end() -> None:
    """fstat's size only sizes the first read: a file reporting 0 bytes (as /proc does) is read whole."""
    assert read_regular("/proc/self/status").startswith(b"Name:")


def test_a_sparse_blob_larger_than_any_cassette_file_is_refused_unread(tmp_path: Path) -> None:
    # a 6 GiB sparse file under a blob's name costs no disk; reading it whole would take the memory
    from cassette.store.blobs import BlobStore

    store = BlobStore(tmp_path / ".blobs")
    blob_id = "ef" * 20
    (tmp_path / ".blobs" / "ef").mkdir(parents=True)
    with open(tmp_path / ".blobs" / "ef" / blob_id[2:], "wb") as fh:
        fh.truncate(MAX_MANIFEST_BYTES + 1)
    with memory_cap(), pytest.raises(cassette.MissingBlobError, match="cassette did not write it"):
        store.get(blob_id, manifest=tmp_path / "c.json")


# --- paths no file can be read at ---------------------------------------------------------------------


@needs_symlinks
def test_a_symlink_loop_is_a_cassette_io_error_not_a_runtime_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python 3.11's Path.resolve() raises RuntimeError on a loop; every reader must name the file
    monkeypatch.chdir(tmp_path)
    os.symlink("loop.json", tmp_path / "loop.json")
    with pytest.raises(CassetteIOError, match=r"loop\.json"):
        with cassette.using("loop.json", mode="replay"):
            pass
    code, _, err = cli(capsys, (), "show", "loop.json")
    assert code != 0 and "loop.json" in err
    # a store that loops: gc says what it found, it does not crash
    (tmp_path / "pyproject.toml").write_text('[tool.cassette]\nstore = "blobs"\n')
    os.symlink("blobs", tmp_path / "blobs")
    code, _, err = cli(capsys, (), "gc", ".")
    assert "Traceback" not in err


@pytest.mark.parametrize("mode", ["auto", "rerecord"])
def test_a_cassette_name_too_long_for_the_file_system_is_a_cassette_io_error(
    tmp_path: Path, mode: str
) -> None:
    path = tmp_path / ("x" * 300 + ".json")
    with pytest.raises(CassetteIOError, match="shorter"):
        with cassette.using(path, mode=mode):
            pass


@needs_fifo
def test_the_git_textconv_driver_refuses_a_fifo_and_a_missing_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cassette.hooks.__main__ import main as hooks_main

    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    assert within_deadline(lambda: hooks_main(["textconv", str(fifo)]), fifos=(fifo,)) == 2
    assert hooks_main(["textconv", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "a FIFO" in err and "missing.json" in err and "Traceback" not in err
