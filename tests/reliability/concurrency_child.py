"""One writer of the multi-process concurrency suite (tests/reliability/test_concurrency.py).

``python concurrency_child.py WORKDIR STORE BASE_URL WORKER COUNT`` imports everything,
prints ``ready``, waits for ``go`` on stdin (so all writers start together), then
records COUNT cassettes ``WORKDIR/w<WORKER>/<n>.json`` into the shared STORE and
prints ``done``. Payloads come from a small shared pool, so the writers store the
same blobs at the same moments.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from openai import OpenAI

import cassette

PAYLOAD_CHARS = 8_000


def shared_key(n: int) -> int:
    return n // 2


def shared_payload(k: int) -> str:
    return random.Random(f"shared:{k}").randbytes(PAYLOAD_CHARS // 2).hex()


def own_payload(worker: int, n: int) -> str:
    return random.Random(f"own:{worker}:{n}").randbytes(50).hex()  # below the blob threshold


@cassette.tool
def fetch(worker: int, n: int) -> dict[str, Any]:
    return {"shared": shared_payload(shared_key(n)), "own": own_payload(worker, n)}


@cassette.tool
def summarise(text: str) -> str:
    return text[::-1]


def record(client: Any, workdir: Path, store: Path, worker: int, n: int) -> None:
    with cassette.using(workdir / f"w{worker}" / f"{n}.json", mode="record", store=store):
        doc = fetch(worker, n)
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                # the shared payload as a whole message: a JSON blob every writer writes
                {"role": "system", "content": "refund policy: " + shared_payload(shared_key(n))},
                {"role": "user", "content": f"charged twice, worker {worker} recording {n}"},
            ],
        )
        summarise(doc["own"])


def main() -> None:
    workdir, store, base_url = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    worker, count = int(sys.argv[4]), int(sys.argv[5])
    client = cassette.instrument(OpenAI(base_url=base_url, api_key="sk-none", max_retries=0))
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    for n in range(count):
        record(client, workdir, store, worker, n)
    print("done", flush=True)


if __name__ == "__main__":
    main()
