"""A fork server for the crash-safety suite: records cassettes in a loop until it is SIGKILLed.

Run by tests/reliability/test_crash_safety.py as ``python crash_child.py WORKDIR BASE_URL LANE``;
several lanes (fork servers) record into one blob store at once, each into its own
cassette ``WORKDIR/cassettes/LANE.json``.
It imports everything once, then for each ``trial`` command read on stdin forks a
recorder, sleeps the given delay, kills the recorder with SIGKILL and reaps it, so
the test process knows the writer is dead before it inspects the files. Forking
from this single-threaded process (not from pytest, whose dev server runs threads)
keeps the fork safe and makes each trial cost milliseconds instead of an interpreter start.

The recorder appends one line per step to ``WORKDIR/LANE.events`` (monotonic clock):
``start V T``, ``saving V T`` (the with-block ends: save begins), ``saved V SHA T``.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from openai import OpenAI

import cassette

LLM_CALLS = 3
TOOL_CALLS = 3
INTERACTIONS = LLM_CALLS + TOOL_CALLS
# Above the 512-byte blob threshold, and large enough that writing them takes a measurable time.
SYSTEM_PROMPT = "You are the archivist of a very large library. " * 40  # shared by every version
TOOL_RESULT_BYTES = 96 * 1024


def payload(version: int, turn: int, size: int) -> str:
    """Per-version content, so every version writes new blobs (seeded: the test can recompute it)."""
    rng = random.Random(f"{version}:{turn}")
    return rng.randbytes(size // 2).hex()


@cassette.tool
def fetch_document(version: int, turn: int) -> dict[str, Any]:
    return {"version": version, "turn": turn, "body": payload(version, turn, TOOL_RESULT_BYTES)}


def marker(version: int) -> str:
    return f"[cassette-version {version}]"


def new_client(base_url: str) -> Any:
    return cassette.instrument(OpenAI(base_url=base_url, api_key="sk-test", max_retries=0))


def record_forever(client: Any, workdir: Path, lane: str, first_version: int, limit: int | None) -> None:
    events = os.open(workdir / f"{lane}.events", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def event(line: str) -> None:
        os.write(events, f"{line} {time.monotonic():.6f}\n".encode())

    path = workdir / "cassettes" / f"{lane}.json"
    version = first_version
    while limit is None or version < first_version + limit:
        event(f"start {version}")
        with cassette.using(path, mode="record"):
            for turn in range(LLM_CALLS):
                client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[
                        {"role": "system", "content": SYSTEM_PROMPT},
                        {
                            "role": "user",
                            # a rule keyword first: the dev server then scans only this short message
                            "content": f"charged twice? {marker(version)} turn {turn}: "
                            + payload(version, 100 + turn, 600),
                        },
                    ],
                )
                fetch_document(version, turn)
            event(f"saving {version}")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        event(f"saved {version} {digest}")
        version += 1


def main() -> None:
    workdir, base_url, lane = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    # Built before any fork and never used here, so each recorder starts with an empty connection pool
    # without paying ~100 ms for a new SSL context.
    pristine = new_client(base_url)
    _ = pristine.chat.completions  # builds the SDK's lazy resource objects before the forks
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "quit":
            return
        first_version = int(args[0])
        if cmd == "calibrate":  # in this process: warms every lazy import and cache before the forks
            record_forever(new_client(base_url), workdir, lane, first_version, int(args[1]))
            out.write("done\n")
            out.flush()
            continue
        forked_at = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the recorder
            code = 0
            try:
                record_forever(pristine, workdir, lane, first_version, None)
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        time.sleep(float(args[1]))  # the random kill point, not synchronisation
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        out.write(f"killed {status} {forked_at:.6f} {pid}\n")
        out.flush()


if __name__ == "__main__":
    main()
