"""Workload 5: what the pytest plugin adds to each test that replays a cassette.

A generated suite of N pairs of tests, each pair replaying the same recorded chat
call through the OpenAI SDK: one test through the plugin
(``@pytest.mark.cassette`` with ``--cassette-mode=replay``), its twin opening the
same cassette itself with ``cassette.using(..., mode="replay")``. The replay work
is the same, so the difference within a pair is the plugin's own cost (marker,
fixture, network guard, stash, summary bookkeeping). The twins run next to each
other in one pytest process (which goes first alternates), because this machine's
speed drifts by several milliseconds per test between two pytest runs. A conftest
times each test's whole protocol (setup, call, teardown) in CPU time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
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
        _times.append((item.name, time.process_time() - c0, time.perf_counter() - w0))


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
    """The paired tests (through the plugin / by hand), the conftest timer and the config."""
    (root / "pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "cassettes"\n')
    (root / "conftest.py").write_text(CONFTEST)
    (root / "calls.json").write_text(json.dumps(chat_calls(n)))
    out = [PROLOGUE.format(key=API_KEY, model=MODEL)]
    for i in range(n):
        plugin = (
            f'\n@pytest.mark.cassette("t{i:04d}.json")\ndef test_{i:04d}_plugin():\n    assert ask({i})\n'
        )
        by_hand = (
            f"\ndef test_{i:04d}_by_hand():\n"
            f'    with cassette.using(HERE / "cassettes" / "t{i:04d}.json", mode="replay"):\n'
            f"        assert ask({i})\n"
        )
        out += [plugin, by_hand] if i % 2 == 0 else [by_hand, plugin]
    (root / "test_suite.py").write_text("".join(out))


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


def run_suite(root: Path, profile_to: Path | None = None) -> dict[str, tuple[float, float]]:
    """Run the suite in a pytest subprocess: test name -> (cpu, wall) seconds."""
    times = root / "times.json"
    # other installed pytest plugins (vcr markers, hypothesis, xdist) cost both twins the same: off
    others = ("recording", "cassetter", "hypothesispytest", "xdist", "asyncio", "anyio", "randomly")
    profiler = ["-m", "cProfile", "-o", str(profile_to)] if profile_to else []
    args = [sys.executable, *profiler, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    for name in others:
        args += ["-p", f"no:{name}"]
    args += ["--cassette-mode=replay", "test_suite.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "PYTEST_"))}
    env["BENCH_TIMES"] = str(times)
    env["PYTHONHASHSEED"] = "0"
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-12:]
        raise RuntimeError("pytest failed: " + " | ".join(tail))
    return {name: (cpu, wall) for name, cpu, wall in json.loads(times.read_text())}


def run(cfg: BenchConfig) -> Section:
    section = Section("plugin", "5. pytest plugin: overhead per test that replays a cassette")
    if peer("cassette.pytest_plugin") is None:
        section.error = "cassette/pytest_plugin.py is not there yet: workload skipped"
        return section
    n = cfg.size(200, 4)
    # a whole pytest process shifts by several ms per test from run to run on this VM: the twins run
    # in the same process, and each run gives the median over its pairs
    rounds = cfg.size(5, 1)
    root = cfg.scratch("plugin-suite")
    write_suite(root, n)
    port = free_port()
    with devserver(SEED, port, separate_process=False):
        record(root, n, f"http://127.0.0.1:{port}/v1")
    with_ms: list[float] = []
    without_ms: list[float] = []
    per_round: list[float] = []
    for _ in range(rounds):
        times = run_suite(root)
        diffs = []
        for i in range(1, n):  # the first pair pays for warming up the SDK
            plugin = times[f"test_{i:04d}_plugin"][0] * 1000
            by_hand = times[f"test_{i:04d}_by_hand"][0] * 1000
            with_ms.append(plugin)
            without_ms.append(by_hand)
            diffs.append(plugin - by_hand)
        per_round.append(median(diffs))
    overhead = median(per_round)
    section.lines.append(
        textwrap.dedent(
            f"""\
            {n} pairs of tests × {rounds} pytest run(s), the twins side by side in one process;
            per test (setup + call + teardown), median CPU: through the plugin {median(with_ms):.3f} ms,
            opening the cassette by hand {median(without_ms):.3f} ms; overhead = median over the pairs
            of (plugin − by hand), per run: {", ".join(f"{d:.3f}" for d in per_round)} ms, median
            {overhead:.3f} ms. The plugin's hooks run for the by-hand twin too (they find no marker and
            return): that cost is in the profile below"""
        ).replace("\n", " ")
    )
    if cfg.profile and not cfg.quick:
        import pstats

        out = root / "with-plugin.prof"
        run_suite(root, profile_to=out)
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
            "same test opening the cassette by hand",
            median(without_ms),
            target=Target("<=", 1.0, on="ours"),
            note="ours = median over runs of the median over pairs of (through the plugin) − (by hand); "
            "theirs = the by-hand test's own cost",
            show_ratio=False,
        )
    )
    return section
