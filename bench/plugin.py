"""Workload 5: what the pytest plugin adds to each test that replays a cassette.

A generated suite of N tests, each replaying one recorded chat call through the
OpenAI SDK, runs twice in a pytest subprocess: once through the plugin
(``@pytest.mark.cassette`` with ``--cassette-mode=replay``) and once with the
plugin disabled (``-p no:cassette``), each test then opening the same cassette
itself with ``cassette.using(..., mode="replay")``. The replay work is the same,
so the difference per test is the plugin's own cost (marker, fixture, network
guard, stash, summary bookkeeping). A conftest times each test's whole protocol
(setup, call, teardown) in CPU time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench._data import MODEL, SEED, chat_calls, devserver, free_port
from bench._harness import REPO, BenchConfig, Row, Section, Target, median, peer, stats_text
from bench.replay import API_KEY

CONFTEST = """
import json, os, time
import pytest

_times = []


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        return (yield)
    finally:
        _times.append((time.process_time() - c0, time.perf_counter() - w0))


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["BENCH_TIMES"], "w") as fh:
        json.dump(_times, fh)
"""

PROLOGUE = """
import json
from pathlib import Path

import cassette
import pytest
from openai import OpenAI

CALLS = json.loads(Path(__file__).with_name("calls.json").read_text())
HERE = Path(__file__).parent
client = cassette.instrument(OpenAI(base_url="http://127.0.0.1:9/v1", api_key={key!r}, max_retries=0))


def ask(i):
    reply = client.chat.completions.create(model={model!r}, messages=CALLS[i], stream=False)
    return reply.choices[0].message.content
"""


def write_suite(root: Path, n: int) -> None:
    """The two test files (with and without the plugin), the conftest timer and the config."""
    (root / "pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "cassettes"\n')
    (root / "conftest.py").write_text(CONFTEST)
    (root / "calls.json").write_text(json.dumps(chat_calls(n)))
    prologue = PROLOGUE.format(key=API_KEY, model=MODEL)
    with_plugin = [prologue]
    without = [prologue]
    for i in range(n):
        with_plugin.append(
            f'\n@pytest.mark.cassette("t{i:04d}.json")\ndef test_{i:04d}():\n    assert ask({i})\n'
        )
        without.append(
            f"\ndef test_{i:04d}():\n"
            f'    with cassette.using(HERE / "cassettes" / "t{i:04d}.json", mode="replay"):\n'
            f"        assert ask({i})\n"
        )
    (root / "test_with_plugin.py").write_text("".join(with_plugin))
    (root / "test_without_plugin.py").write_text("".join(without))


def record(root: Path, n: int, base_url: str) -> None:
    """One cassette per test, recorded against the devserver."""
    from openai import OpenAI

    import cassette

    calls = chat_calls(n)
    client = cassette.instrument(OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0))
    store = root / "cassettes" / ".blobs"
    for i in range(n):
        with cassette.using(root / "cassettes" / f"t{i:04d}.json", mode="record", store=store):
            client.chat.completions.create(model=MODEL, messages=calls[i], stream=False)


def run_suite(root: Path, plugin: bool, profile_to: Path | None = None) -> list[tuple[float, float]]:
    """Run one of the two files in a pytest subprocess; (cpu, wall) seconds per test."""
    times = root / ("times-with.json" if plugin else "times-without.json")
    # other installed pytest plugins (vcr markers, hypothesis, xdist) cost both runs the same: off
    others = ("recording", "cassetter", "hypothesispytest", "xdist", "asyncio", "anyio", "randomly")
    profiler = ["-m", "cProfile", "-o", str(profile_to)] if profile_to else []
    args = [sys.executable, *profiler, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    for name in others:
        args += ["-p", f"no:{name}"]
    if plugin:
        args += ["--cassette-mode=replay", "test_with_plugin.py"]
    else:
        args += ["-p", "no:cassette", "test_without_plugin.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "PYTEST_"))}
    env["BENCH_TIMES"] = str(times)
    env["PYTHONHASHSEED"] = "0"  # one source of run-to-run layout differences fewer, the same for both
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-12:]
        raise RuntimeError("pytest failed: " + " | ".join(tail))
    return [tuple(t) for t in json.loads(times.read_text())]  # type: ignore[misc]


def run(cfg: BenchConfig) -> Section:
    section = Section("plugin", "5. pytest plugin: overhead per test that replays a cassette")
    if peer("cassette.pytest_plugin") is None:
        section.error = "cassette/pytest_plugin.py is not there yet: workload skipped"
        return section
    n = cfg.size(200, 4)
    # a whole pytest process shifts by up to ~1 ms per test from run to run (memory layout, caches),
    # so the overhead is the median over rounds of (with − without) within each round
    rounds = cfg.size(6, 1)
    root = cfg.scratch("plugin-suite")
    write_suite(root, n)
    port = free_port()
    with devserver(SEED, port, separate_process=False):
        record(root, n, f"http://127.0.0.1:{port}/v1")
    per_test: dict[bool, list[float]] = {True: [], False: []}
    wall: dict[bool, list[float]] = {True: [], False: []}
    paired: list[float] = []
    for r in range(rounds):
        order = (True, False) if r % 2 == 0 else (False, True)
        if cfg.quick:  # a smoke run, not a measurement: both suites at once
            with ThreadPoolExecutor(2) as pool:
                results = dict(zip(order, pool.map(lambda p: run_suite(root, p), order)))
        else:
            results = {plugin: run_suite(root, plugin) for plugin in order}
        round_ms: dict[bool, float] = {}
        for plugin, times in results.items():
            times = times[1:]  # the first test pays for warming up the SDK
            per_test[plugin].extend(c * 1000 for c, _ in times)
            wall[plugin].extend(w * 1000 for _, w in times)
            round_ms[plugin] = median([c * 1000 for c, _ in times])
        paired.append(round_ms[True] - round_ms[False])
    with_ms, without_ms = median(per_test[True]), median(per_test[False])
    overhead = median(paired)
    section.lines.append(
        textwrap.dedent(
            f"""\
            {n} generated tests × {rounds} run(s) each way; per test (setup + call + teardown), median CPU:
            with the plugin {with_ms:.3f} ms, without it (the test opens the cassette itself)
            {without_ms:.3f} ms; wall: {median(wall[True]):.3f} ms vs {median(wall[False]):.3f} ms;
            overhead per round (with − without, in run order): {", ".join(f"{d:.2f}" for d in paired)} ms,
            median {overhead:.3f} ms"""
        ).replace("\n", " ")
    )
    if cfg.profile and not cfg.quick:
        import pstats

        out = root / "with-plugin.prof"
        run_suite(root, True, profile_to=out)
        plugin_code = re.escape(str(REPO / "cassette")) + r"/(pytest_plugin|_netguard)\.py"
        section.profile = f"pytest run of the {n} tests with the plugin (whole process, imports included):\n"
        section.profile += stats_text(
            pstats.Stats(str(out)), limit=8, ours=plugin_code, label="the plugin's code"
        )
    section.rows.append(
        Row(
            "plugin overhead per replayed test",
            "ms",
            overhead,
            "same test without the plugin",
            without_ms,
            target=Target("<=", 1.0, on="ours"),
            note="ours = median over rounds of (with plugin) − (without); theirs = the test's own cost "
            "without the plugin",
            show_ratio=False,
        )
    )
    return section
