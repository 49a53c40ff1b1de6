"""Measurements for the resource-bounds suite, each in a fresh process (peak RSS is per process).

``python resource_child.py big BASE_URL WORKDIR``: record one chat completion whose
content is 50 MB, then replay it; print the peak RSS deltas as JSON.
``python resource_child.py record BASE_URL WORKDIR CONVERSATIONS``: record a cassette
of CONVERSATIONS x (1 LLM call + 39 tool calls) into ``WORKDIR/.blobs``.
``python resource_child.py replay BASE_URL WORKDIR CONVERSATIONS``: replay it (the
server is gone) and print the peak RSS delta as JSON.

Peaks are read from ``VmHWM`` after resetting it (``/proc/self/clear_refs``), so each
phase is measured from its own start, not from the import-time high-water mark.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

from openai import OpenAI

import cassette

MB = 2**20
TOOLS_PER_CONVERSATION = 39


def current_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


def peak_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _trim() -> None:
    """Hand freed heap back to the kernel (glibc), so RSS shows what is alive, not what malloc kept."""
    name = ctypes.util.find_library("c")
    if name:
        libc = ctypes.CDLL(name)
        if hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)


def reset_peak() -> float:
    """Start a new high-water mark here; returns the current RSS."""
    gc.collect()
    _trim()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return current_mb()


def client(base_url: str) -> Any:
    return cassette.instrument(OpenAI(base_url=base_url, api_key="unused", max_retries=0))


def big(base_url: str, workdir: Path) -> dict[str, float]:
    c = client(base_url)
    with cassette.using(
        workdir / "warm.json", mode="record", store=workdir / ".blobs"
    ):  # every code path imported and warm
        c.chat.completions.create(model="small", messages=[{"role": "user", "content": "hi"}])
    out: dict[str, float] = {}
    base = reset_peak()
    tracemalloc.start()  # what Python objects hold, whatever the allocator keeps of freed memory
    traced_base = tracemalloc.get_traced_memory()[0]
    with cassette.using(workdir / "big.json", mode="record", store=workdir / ".blobs"):
        answer = c.chat.completions.create(model="big", messages=[{"role": "user", "content": "hi"}])
        out["content_mb"] = len(answer.choices[0].message.content or "") / MB
        out["call_peak_mb"] = peak_mb() - base
        del answer  # the agent is done with it; what stays is what the session keeps
        held = reset_peak()
        out["held_by_session_mb"] = (tracemalloc.get_traced_memory()[0] - traced_base) / MB
        out["held_rss_mb"] = held - base
        tracemalloc.stop()
        held = reset_peak()
    out["save_peak_mb"] = peak_mb() - held
    out["record_peak_mb"] = max(out["call_peak_mb"], out["held_by_session_mb"] + out["save_peak_mb"])
    gc.collect()
    base = reset_peak()
    with cassette.using(workdir / "big.json", mode="replay", store=workdir / ".blobs"):
        answer = c.chat.completions.create(model="big", messages=[{"role": "user", "content": "hi"}])
        out["replayed_content_mb"] = len(answer.choices[0].message.content or "") / MB
        del answer
    out["replay_peak_mb"] = peak_mb() - base
    return out


@cassette.tool
def lookup(conversation: int, step: int) -> dict[str, Any]:
    detail = (
        f"conversation {conversation} step {step}: order shipped, tracking {conversation * 1000 + step}. "
    )
    return {"conversation": conversation, "step": step, "detail": detail * (1 + step % 8)}


SYSTEM = "You are a support agent for a tea shop. Be precise, kind and brief. " * 30


def conversation(c: Any, n: int) -> None:
    messages = [
        {"role": "system", "content": SYSTEM},  # one shared blob for all 10,000 interactions
        {"role": "user", "content": f"I was charged twice for order {n}; where is it?"},
    ]
    c.chat.completions.create(model="gpt-4o-mini", messages=messages)
    for step in range(TOOLS_PER_CONVERSATION):
        lookup(n, step)


def record(base_url: str, workdir: Path, conversations: int) -> dict[str, float]:
    c = client(base_url)
    with cassette.using(workdir / "big10k.json", mode="record", store=workdir / ".blobs"):
        for n in range(conversations):
            conversation(c, n)
    return {"interactions": len(cassette.load_cassette(workdir / "big10k.json").interactions)}


def replay(base_url: str, workdir: Path, conversations: int) -> dict[str, float]:
    c = client(base_url)
    store = workdir / ".blobs"
    with cassette.using(workdir / "big10k.json", mode="replay", store=store, check_order="off", unused="off"):
        conversation(c, 0)  # warm every code path
    base = reset_peak()
    with cassette.using(workdir / "big10k.json", mode="replay", store=store) as session:
        for n in range(conversations):
            conversation(c, n)
        served = sum(session.stats()["served"].values())
    return {
        "interactions_replayed": served,
        "replay_peak_mb": peak_mb() - base,
        "manifest_mb": (workdir / "big10k.json").stat().st_size / MB,
        "blobs_mb": sum(f.stat().st_size for f in store.rglob("*") if f.is_file()) / MB,
        "blob_files": sum(1 for f in store.rglob("*") if f.is_file()),
    }


def main() -> None:
    what, base_url, workdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    if what == "big":
        result = big(base_url, workdir)
    elif what == "record":
        result = record(base_url, workdir, int(sys.argv[4]))
    else:
        result = replay(base_url, workdir, int(sys.argv[4]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
