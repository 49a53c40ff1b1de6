"""Peak RSS while replaying a 10,000-interaction cassette, measured in a fresh subprocess.

The child imports the SDK and cassette, opens the cassette, replays every call
through the OpenAI SDK, and reports its peak resident set size after the
imports, after opening, and at the end: ``VmHWM`` of ``/proc/self/status`` on
Linux (``resource.getrusage``'s ``ru_maxrss`` survives fork+exec there, so a
child started by a big parent would report the parent's peak), ``ru_maxrss``
elsewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys

from bench import _synth
from bench._harness import REPO, BenchConfig, Row, Section


def child(manifest: str, store: str, count: int) -> None:
    """Runs in the subprocess: replay ``count`` calls, print the RSS readings as JSON."""
    import resource
    import time

    from openai import OpenAI

    import cassette
    from bench._data import MODEL, chat_calls

    def rss_mb() -> float:
        # Linux carries ru_maxrss across fork+exec, so a child would report its parent's peak: read the
        # high-water mark of this process's own address space where the kernel offers it
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    calls = chat_calls(count)
    client = cassette.instrument(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-bench", max_retries=0))
    baseline = rss_mb()
    started = time.perf_counter()
    with cassette.using(manifest, mode="replay", store=store, check_order="off") as session:
        opened = rss_mb()
        for messages in calls:
            reply = client.chat.completions.create(model=MODEL, messages=messages, stream=False)
            assert reply.choices[0].message.content is not None
        served = sum(session.stats()["served"].values())
    print(
        json.dumps(
            {
                "baseline": baseline,
                "opened": opened,
                "peak": rss_mb(),
                "served": served,
                "seconds": time.perf_counter() - started,
            }
        )
    )


def run(cfg: BenchConfig) -> Section:
    section = Section("memory", "7. Peak RSS replaying a large cassette (resource bound)")
    count = cfg.size(10000, 30)
    work = cfg.scratch("memory")
    manifest, store = work / "ours.json", work / ".blobs"
    _synth.write_ours(manifest, store, list(_synth.calls(count)))
    done = subprocess.run(
        [sys.executable, "-m", "bench.memory", str(manifest), str(store), str(count)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        section.error = "child failed: " + " | ".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        return section
    got = json.loads(done.stdout.strip().splitlines()[-1])
    size = manifest.stat().st_size / 1e6
    section.lines.append(
        f"{count:,} interactions ({size:.1f} MB manifest), every call replayed through the SDK in "
        f"{got['seconds']:.1f} s ({got['served']:,} served): RSS after imports {got['baseline']:.0f} MB, "
        f"after opening {got['opened']:.0f} MB, peak {got['peak']:.0f} MB"
    )
    section.rows += [
        Row(
            f"peak RSS, {count:,} interactions replayed",
            "MB",
            got["peak"],
            note="no target: printed for the reliability bound",
        ),
        Row(
            "RSS the replay added (peak − after imports)",
            "MB",
            got["peak"] - got["baseline"],
            note=f"{(got['peak'] - got['baseline']) / size:.1f}× the manifest's size",
        ),
    ]
    return section


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
