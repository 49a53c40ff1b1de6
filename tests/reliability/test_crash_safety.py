"""Crash safety: a recorder killed with SIGKILL at random points never leaves a torn cassette.

A fork server (``crash_child.py``) records a run in a loop - three LLM calls through
the real OpenAI SDK to a dev server on loopback plus three tool calls, payloads
above the blob threshold - and is killed at a seeded random delay, then restarted
from what is on disk. The delays cluster on the save (blob writes, then the
manifest write) measured in a calibration run, and spread over the whole run too.

After every kill:
- the manifest is the last one acknowledged as saved, or the complete new one
  being saved when the kill landed (never a mix, never a truncation);
- it verifies: every interaction loads and hydrates, and holds exactly the content
  of one version;
- every file under its final name in ``.blobs`` hashes to that name (temp files
  from killed writers may remain, under their temp names only).
Then ``cassette gc`` removes the stale temp files and the cassette still verifies.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crash_child  # tests/reliability is on sys.path: pytest's rootdir-less import of this module
import pytest
from reliability_support import FastDevServer, check_store, has_module, hydrate_all

from cassette import CassetteError

CHILD = Path(__file__).with_name("crash_child.py")
SEED = 20261130


@dataclass
class Event:
    kind: str  # start | saving | saved
    version: int
    at: float
    sha: str | None = None


def read_events(log: Path, offset: int) -> tuple[list[Event], int]:
    """Events appended since ``offset`` (a torn last line, from a kill mid-write, is left for later)."""
    data = log.read_bytes()[offset:] if log.exists() else b""
    events: list[Event] = []
    consumed = 0
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        consumed += len(line)
        parts = line.decode().split()
        if parts[0] == "saved":
            events.append(Event("saved", int(parts[1]), float(parts[3]), parts[2]))
        else:
            events.append(Event(parts[0], int(parts[1]), float(parts[2])))
    return events, offset + consumed


def version_of(path: Path) -> tuple[int, list[str]]:
    """The version a cassette on disk holds, and every way it falls short of a complete recording."""
    problems: list[str] = []
    interactions = hydrate_all(path)
    if len(interactions) != crash_child.INTERACTIONS:
        problems.append(f"{len(interactions)} interactions, expected {crash_child.INTERACTIONS}")
    versions: set[int] = set()
    for n, (request, response) in enumerate(interactions):
        expected_kind = "llm" if n % 2 == 0 else "tool"
        if request.get("kind") != expected_kind:
            problems.append(f"interaction {n} is {request.get('kind')}, expected {expected_kind}")
            continue
        if response.get("incomplete"):
            problems.append(f"interaction {n} is marked incomplete")
        if expected_kind == "llm":
            text = request["messages"][1]["content"]
            start = text.find("[cassette-version ")
            found = [int(text[start + 18 : text.index("]", start)])] if start >= 0 else []
            versions.update(found)
            if response.get("status") != 200 or not response.get("json", {}).get("choices"):
                problems.append(f"interaction {n} has no complete chat completion")
        else:
            args = request["arguments"]
            versions.add(args["version"])
            want = crash_child.payload(args["version"], args["turn"], crash_child.TOOL_RESULT_BYTES)
            if response.get("result", {}).get("body") != want:
                problems.append(f"tool result {n} differs from what the tool returned")
    if len(versions) != 1:
        problems.append(f"content of versions {sorted(versions)} mixed in one manifest")
    return (min(versions) if versions else -1), problems


def verify(path: Path) -> None:
    """`cassette verify` on one cassette (every blob present and hash-correct), then a full hydrate."""
    if has_module("cassette.maintenance.verify"):
        from cassette.maintenance.verify import verify_paths

        report = verify_paths([path])
        assert report.ok and report.files, f"cassette verify failed on {path}: {report.render()}"
    hydrate_all(path)


@dataclass
class Lane:
    """One fork server recording into its own cassette (lanes share the blob store)."""

    workdir: Path
    name: str
    trials: int = 0
    kills: int = 0
    phases: dict[str, int] = field(default_factory=dict)
    saves_acknowledged: int = 0
    new_version_on_disk_unacknowledged: int = 0
    temp_blob_files: set[Path] = field(default_factory=set)
    temp_manifest_files: set[Path] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    verified_blobs: set[str] = field(default_factory=set)
    timing_ms: tuple[int, int] = (0, 0)

    @property
    def cassette(self) -> Path:
        return self.workdir / "cassettes" / f"{self.name}.json"

    @property
    def events(self) -> Path:
        return self.workdir / f"{self.name}.events"

    @property
    def store(self) -> Path:
        return self.workdir / "cassettes" / ".blobs"


class Zygote:
    """The fork server process: ``trial(first_version, delay)`` forks, waits, SIGKILLs and reaps."""

    def __init__(self, workdir: Path, base_url: str, lane: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CASSETTE_")}
        self.stderr = open(workdir / f"{lane}.stderr", "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(workdir), base_url, lane],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            cwd=workdir,
            env=env,
        )
        self.expect("ready")

    def send(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def expect(self, word: str) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith(word):
            self.close()
            stderr = Path(self.stderr.name).read_text()
            raise AssertionError(f"fork server said {line!r}, expected {word!r}; its stderr:\n{stderr}")
        return line

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except OSError:
                pass
            self.proc.wait(timeout=30)
        self.stderr.close()


class Timing:
    """Where the save window of a fresh recorder lies, learnt from the trials' own events.

    Kill points are drawn against the running medians: most inside the first
    version's save (blob writes, manifest write, the moments between them), some
    anywhere in the first version, some later so that versions complete between kills.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.first_saving: list[float] = []  # seconds from fork to the first "saving"
        self.save: list[float] = []  # seconds from "saving" to "saved"

    def learn(self, forked_at: float, events: list[Event]) -> None:
        savings = {e.version: e.at for e in events if e.kind == "saving"}
        if savings:
            self.first_saving.append(savings[min(savings)] - forked_at)
        for e in events:
            if e.kind == "saved" and e.version in savings:
                self.save.append(e.at - savings[e.version])

    @staticmethod
    def _median(values: list[float]) -> float:
        recent = sorted(values[-25:])
        return recent[len(recent) // 2]

    def next_delay(self) -> float:
        record, save = self._median(self.first_saving), self._median(self.save)
        roll = self.rng.random()
        if roll < 0.65:
            return max(0.0, record + self.rng.uniform(-0.1, 1.1) * save)
        if roll < 0.9:
            return self.rng.uniform(0, record + save)
        return self.rng.uniform(record + save, 2.5 * (record + save))


def inspect(run: Lane, new: list[Event], state: dict[str, Any], dead_pid: int) -> None:
    """Check the invariants after one kill and update what is known to be on disk."""
    last = new[-1] if new else None
    phase = last.kind if last else "before-start"
    run.phases[phase] = run.phases.get(phase, 0) + 1
    for e in new:
        if e.kind == "saved":
            state["sha"], state["version"] = e.sha, e.version
            run.saves_acknowledged += 1
    blobs = check_store(run.store, run.verified_blobs)
    # temp files of the writer just killed (the other lane's live writers have theirs too)
    mine = f".{dead_pid}."
    run.temp_blob_files.update(p for p in blobs.temps if mine in p.name)
    run.temp_manifest_files.update(p for p in run.cassette.parent.glob(".*.tmp") if mine in p.name)
    if blobs.bad:
        run.violations.append(f"trial {run.trials}: blob files not matching their names: {blobs.bad[:3]}")
    if not run.cassette.exists():
        if state["sha"] is not None:
            run.violations.append(f"trial {run.trials}: the saved cassette disappeared")
        return
    data = run.cassette.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    if sha == state["sha"]:
        try:
            verify(run.cassette)
        except (CassetteError, AssertionError) as exc:
            run.violations.append(f"trial {run.trials}: the acknowledged cassette does not verify: {exc}")
        return
    # Not the acknowledged one: legal only as the complete new version whose save the kill interrupted.
    try:
        version, problems = version_of(run.cassette)
        verify(run.cassette)
    except (CassetteError, AssertionError, KeyError, TypeError, ValueError) as exc:
        run.violations.append(f"trial {run.trials} (killed while {phase}): unreadable cassette: {exc!r}")
        return
    saving = last is not None and last.kind == "saving"
    if not saving or version != last.version or problems:
        run.violations.append(
            f"trial {run.trials} (killed while {phase}): on disk is version {version}, neither the "
            f"acknowledged version {state['version']} nor a complete new one ({problems})"
        )
        return
    run.new_version_on_disk_unacknowledged += 1
    state["sha"], state["version"] = sha, version


def run_lane(lane: Lane, base_url: str, trials: int, seed: int) -> Lane:
    """Calibrate, then ``trials`` kills of freshly forked recorders, checking the files after each."""
    zygote = Zygote(lane.workdir, base_url, lane.name)
    try:
        zygote.send("calibrate 1 2")  # warms imports and caches in the fork server
        calibration, offset = read_events(lane.events, 0)
        saved = [e for e in calibration if e.kind == "saved"]
        state: dict[str, Any] = {"sha": saved[-1].sha, "version": saved[-1].version}
        timing = Timing(random.Random(seed))
        for n in range(trials):
            # the first trials run long, to learn where a fresh recorder's saves fall
            delay = 1.0 if n < 3 else timing.next_delay()
            reply = zygote.send(f"trial {state['version'] + 1} {delay:.6f}").split()
            assert reply and reply[0] == "killed", f"fork server replied {reply}; see {zygote.stderr.name}"
            lane.trials += 1
            lane.kills += int(reply[1]) == 9  # the raw wait status of a SIGKILL
            new, offset = read_events(lane.events, offset)
            timing.learn(float(reply[2]), new)
            inspect(lane, new, state, dead_pid=int(reply[3]))
        lane.timing_ms = (
            round(1000 * Timing._median(timing.first_saving)),
            round(1000 * Timing._median(timing.save)),
        )
    finally:
        zygote.close()
    return lane


@dataclass
class CrashRun:
    workdir: Path
    lanes: list[Lane]

    @property
    def store(self) -> Path:
        return self.workdir / "cassettes" / ".blobs"

    def total(self, attr: str) -> int:
        return sum(getattr(lane, attr) for lane in self.lanes)

    def phase(self, name: str) -> int:
        return sum(lane.phases.get(name, 0) for lane in self.lanes)

    def temps(self) -> set[Path]:
        return {p for lane in self.lanes for p in (*lane.temp_blob_files, *lane.temp_manifest_files)}


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory: pytest.TempPathFactory, soak: bool) -> CrashRun:
    """Two lanes at once (two cores; a shared store adds concurrent writers to the kills)."""
    workdir = tmp_path_factory.mktemp("crash")
    per_lane = 750 if soak else 100
    lanes = [Lane(workdir, name) for name in ("a", "b")]
    with FastDevServer(seed=SEED) as srv, ThreadPoolExecutor(len(lanes)) as pool:
        url = srv.openai_base_url
        done = [pool.submit(run_lane, lane, url, per_lane, SEED + n) for n, lane in enumerate(lanes)]
        for future in done:
            future.result()
    return CrashRun(workdir, lanes)


def test_sigkill_never_leaves_a_torn_cassette(crash_run: CrashRun, counts: Any) -> None:
    run = crash_run
    counts.update(
        trials=run.total("trials"),
        kills=run.total("kills"),
        lanes=len(run.lanes),
        killed_before_start=run.phase("before-start"),
        killed_recording=run.phase("start"),
        killed_saving=run.phase("saving"),
        killed_after_save=run.phase("saved"),
        saves_acknowledged=run.total("saves_acknowledged"),
        new_version_before_ack=run.total("new_version_on_disk_unacknowledged"),
        stale_blob_temps=sum(len(lane.temp_blob_files) for lane in run.lanes),
        stale_manifest_temps=sum(len(lane.temp_manifest_files) for lane in run.lanes),
        fork_to_save_ms=run.lanes[0].timing_ms[0],
        save_ms=run.lanes[0].timing_ms[1],
    )
    assert run.total("trials") >= 200 and run.total("kills") == run.total("trials")
    violations = [v for lane in run.lanes for v in (f"lane {lane.name}: {x}" for x in lane.violations)]
    assert not violations, "\n".join(violations[:10])
    # The kills did land where it matters: inside saves (blob or manifest writes).
    assert run.phase("saving") > 0
    assert run.temps(), "no kill landed inside a file write"


def test_stale_temp_files_are_ignored_by_readers(crash_run: CrashRun) -> None:
    from cassette.store.blobs import BlobStore

    temps = [p for p in crash_run.temps() if p.exists()]
    assert temps, "the crash run left no temp file to read around"
    for lane in crash_run.lanes:
        verify(lane.cassette)
    store = BlobStore(crash_run.store)
    for temp in temps:
        if temp.parent.parent == crash_run.store:
            # a temp name is never taken for a blob id, even when asked for by hand
            with pytest.raises(CassetteError):
                store.get(temp.parent.name + temp.name)


@pytest.mark.skipif(not has_module("cassette.cli.gc"), reason="cassette gc missing (cassette/cli/gc.py)")
def test_cassette_gc_removes_stale_temp_files_of_killed_writers(
    crash_run: CrashRun, counts: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from cassette.cli import main

    before = [p for p in crash_run.temps() if p.exists()]
    cassettes = crash_run.workdir / "cassettes"
    assert main(["gc", str(cassettes), "--store", str(crash_run.store)]) == 0  # a dry run first
    assert all(p.exists() for p in before)
    assert main(["gc", str(cassettes), "--store", str(crash_run.store), "--apply"]) == 0
    output = capsys.readouterr().out
    left = [p for p in before if p.exists()]
    counts.update(temps_before_gc=len(before), temps_removed=len(before) - len(left))
    assert "stale temp file" in output
    # Only a temp whose writer's pid was reused by a live process may stay (gc ages those out after 1 h).
    for p in left:
        pid = int(p.name.rsplit(".", 3)[1])
        assert _alive(pid), f"gc left {p}, whose writer {pid} is dead"
    for lane in crash_run.lanes:
        verify(lane.cassette)
    assert not check_store(crash_run.store).bad


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
