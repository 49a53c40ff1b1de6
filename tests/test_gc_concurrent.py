"""`cassette gc --apply` running while another process records never deletes what the recording writes.

Two real processes share one blob store: one records cassettes over and over (its tool results
are above the blob threshold, some of them payloads an earlier recording left unreferenced and
old), re-opening each cassette as replay would right after saving it; the other runs
``cassette gc --apply --grace 0`` in a loop until the recorder is done. Without the recording
marker and the touch of re-used blobs, gc deleted a blob of a manifest saved a moment later.
No sleeps: the recorder starts once gc has run once (a line on its stdout), gc stops when the
recorder's done file appears, both are bounded in count and time; mtimes are set with os.utime.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cassette.cli import main
from cassette.maintenance.hygiene import apply_gc, plan_gc, recordings_in_progress
from cassette.store.blobs import BlobStore
from cassette.store.files import atomic_write

ROOT = Path(__file__).resolve().parents[1]
SAVES = 150
DAY = 86400.0

RECORDER = r"""
import json, sys, time
from pathlib import Path
import cassette
from cassette.errors import MissingBlobError

pool = json.loads(Path("pool.json").read_text())
missing, saves, deadline = [], 0, time.monotonic() + 90


@cassette.tool
def lookup(n: int) -> dict:
    # a payload re-used from the pool (old and unreferenced when first used), one of its own, and
    # a row list whose object is a JSON blob holding a text blob
    return {"pool": pool[n % len(pool)], "own": f"answer {n} " * 200, "rows": [{"n": n, "text": "r" * 900}]}


for n in range(int(sys.argv[1])):
    if time.monotonic() > deadline:
        break
    path = Path(f"cassettes/c{n % 3}.json")
    with cassette.using(path, mode="record"):
        lookup(n)
    saves += 1
    try:
        with cassette.using(path, mode="replay"):
            assert lookup(n)["pool"] == pool[n % len(pool)]
    except MissingBlobError as exc:
        missing.append(str(exc))
Path("recorder.done").write_text("")
print(json.dumps({"saves": saves, "missing": missing}))
"""

COLLECTOR = r"""
import contextlib, io, json, sys, time
from pathlib import Path
from cassette.cli import main

removed, runs, deadline = [], 0, time.monotonic() + 120
while runs < 5000 and time.monotonic() < deadline:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["gc", "cassettes", "--apply", "--grace", "0"])
    runs += 1
    if code != 0:
        print(json.dumps({"error": out.getvalue()}), flush=True)
        sys.exit(1)
    lines = out.getvalue().splitlines()
    removed += [line.rsplit(" ", 1)[1] for line in lines if line.startswith("removed unreferenced blob ")]
    if runs == 1:
        print("ready", flush=True)
    if Path("recorder.done").exists():
        break
print(json.dumps({"runs": runs, "removed": removed}), flush=True)
"""


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CASSETTE_MODE", None)
    return env


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def _stepped(code: str, *args: str) -> subprocess.Popen[bytes]:
    """A process that takes one step per byte written to its stdin (unbuffered) and prints its result."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
        env=_env(),
    )


def test_gc_in_a_loop_never_deletes_a_blob_a_concurrent_recording_saves(tmp_path: Path) -> None:
    Path("pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "cassettes"\n')
    store = BlobStore(Path("cassettes/.blobs"))
    pool = [f"pooled payload {i} " * 100 for i in range(8)]
    Path("pool.json").write_text(json.dumps(pool))
    # left over by earlier recordings: unreferenced and a day old. The pool's come back into use
    pooled = [store.path_for(store.put(p.encode())) for p in pool]
    orphans = [store.path_for(store.put(f"an old prompt nothing uses {i} ".encode() * 40)) for i in range(3)]
    for p in (*pooled, *orphans):
        _age(p, DAY)

    collector = _python(COLLECTOR)
    assert collector.stdout is not None
    first = collector.stdout.readline()  # gc has run once: the recording starts while it loops
    assert first.strip() == "ready", first + collector.communicate(timeout=60)[1]
    recorder = _python(RECORDER, str(SAVES))
    rec_out, rec_err = recorder.communicate(timeout=180)
    gc_out, gc_err = collector.communicate(timeout=180)
    assert recorder.returncode == 0, rec_err
    assert collector.returncode == 0, gc_out + gc_err
    recorded = json.loads(rec_out.splitlines()[-1])
    collected = json.loads(gc_out.splitlines()[-1])

    assert recorded["missing"] == []
    assert recorded["saves"] == SAVES
    assert collected["runs"] >= 2  # it ran during the recordings, not only before them
    # the truly orphaned old blobs went, while the recording ran
    assert {str(p.resolve()) for p in orphans} <= set(collected["removed"])
    assert not any(p.exists() for p in orphans)
    assert recordings_in_progress(store.root) == []  # every marker was removed with its recording
    assert main(["verify", "cassettes"]) == 0


def test_a_marker_keeps_blobs_newer_than_its_recording_and_a_touch_keeps_a_reused_blob(
    tmp_path: Path,
) -> None:
    """The two rules, one at a time, with mtimes set by hand."""
    Path("pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "cassettes"\n')
    Path("cassettes").mkdir()
    store = BlobStore(Path("cassettes/.blobs"))
    old = store.path_for(store.put(b"old and unreferenced " * 40))
    _age(old, DAY)
    with store.writing():
        written = store.path_for(store.put(b"written for a manifest not saved yet " * 40))
        (marker,) = recordings_in_progress(store.root)
        _age(marker, 60)  # the recording began a minute ago
        _age(written, 30)  # and wrote this half a minute ago
        plan = plan_gc(Path("cassettes"), store.root, grace=0)
        assert plan.blobs == [old.resolve()] and plan.young == [written.resolve()]
        assert plan.recordings == [marker.resolve()]
    assert not marker.exists()
    plan = plan_gc(Path("cassettes"), store.root, grace=0)
    assert sorted(plan.blobs) == sorted([old.resolve(), written.resolve()])  # no recording: both garbage
    # a grace period keeps the recent one without a marker
    plan = plan_gc(Path("cassettes"), store.root, grace=3600)
    assert plan.blobs == [old.resolve()] and plan.young == [written.resolve()]

    # planned as garbage, then re-used by a recording before the removal: put back, not deleted
    plan = plan_gc(Path("cassettes"), store.root, grace=0)
    assert old.resolve() in plan.blobs
    assert store.put(b"old and unreferenced " * 40) == old.parent.name + old.name  # touches it
    from cassette.maintenance.hygiene import apply_gc

    apply_gc(plan)
    assert old.exists() and plan.restored == [old.resolve()]
    assert not written.exists()


FOLDER_REMOVER = r"""
import os, sys
removed = 0
while sys.stdin.buffer.read(1):  # one go per blob the writer has written and deleted
    try:
        os.rmdir(sys.argv[1])
        removed += 1
    except OSError:  # the writer's next blob is already in it
        pass
print(removed)
"""


def test_a_write_into_a_blob_folder_gc_removes_at_that_moment_makes_it_again(tmp_path: Path) -> None:
    """gc removes a blob folder it left empty; a recording writing a blob there meanwhile still writes it.

    The writer writes a blob and deletes it (as gc would), then lets a second process remove
    the empty folder once, while it writes the next blob: the removal lands before the
    folder is made again, between pathlib's ``mkdir`` and its check that the folder is
    there, or between the ``mkdir`` and the ``open``. Before, the last two failed the write.
    """
    folder = tmp_path / ".blobs" / "ab"
    folder.mkdir(parents=True)
    remover = _stepped(FOLDER_REMOVER, str(folder))
    assert remover.stdin is not None and remover.stdout is not None
    failed: list[str] = []
    try:
        for n in range(3000):
            blob = folder / f"blob{n}"
            try:
                atomic_write(blob, b"payload")
                assert blob.read_bytes() == b"payload"
                blob.unlink()
            except OSError as exc:
                failed.append(repr(exc))
            remover.stdin.write(b".")
    finally:
        remover.stdin.close()
        removed = int(remover.stdout.read())
        remover.wait(timeout=60)
    assert failed == []
    assert removed > 200  # the folder was really taken away under the writer, again and again


BLOB_READER = r"""
import sys
from pathlib import Path
from cassette.errors import MissingBlobError
from cassette.store.blobs import BlobStore

store, blob_id = BlobStore(Path(sys.argv[1])), sys.argv[2]
missing = reads = 0
while sys.stdin.buffer.read(1):  # one burst of reads per gc run
    for _ in range(20):
        reads += 1
        try:
            store.get(blob_id)
        except MissingBlobError:
            missing += 1
print(missing, reads)
"""


def test_a_blob_a_recording_re_uses_after_gc_planned_never_leaves_its_name(tmp_path: Path) -> None:
    """A replay reading a blob while gc applies a plan that listed it, re-used since, always finds it.

    1,000 rounds: the blob is made a day old and unreferenced, gc plans it as garbage, a
    recording re-uses it (``put`` touches it), and gc applies the plan while another process
    reads the blob. Before, gc renamed it aside and only then saw the touch and put it back:
    a read in that moment got `MissingBlobError` (about 1 in 25).
    """
    Path("cassettes").mkdir()
    store = BlobStore(Path("cassettes/.blobs"))
    payload = b"a payload a recording re-uses " * 40
    blob = store.path_for(store.put(payload))
    reader = _stepped(BLOB_READER, str(store.root), blob.parent.name + blob.name)
    assert reader.stdin is not None and reader.stdout is not None
    kept = 0
    try:
        for _ in range(1000):
            _age(blob, DAY)
            plan = plan_gc(Path("cassettes"), store.root, grace=0)
            assert plan.blobs == [blob.resolve()]
            store.put(payload)  # re-used by a recording after the plan
            reader.stdin.write(b".")
            apply_gc(plan)
            kept += len(plan.restored)
    finally:
        reader.stdin.close()
        missing, reads = map(int, reader.stdout.read().split())
        reader.wait(timeout=60)
    assert kept == 1000 and blob.read_bytes() == payload
    assert (missing, reads) == (0, 20_000)
