"""The README's first command, ``python examples/demo.py``, and the example it runs."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo.py"
SUMMARY = re.compile(
    r"^replayed 3 tests: (\d+) LLM calls and (\d+) tool calls served from cassettes in \d+\.\d\d s, "
    r"0 network requests$"
)


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def test_demo_records_then_replays_offline() -> None:
    result = _run(str(DEMO))
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    found = SUMMARY.match(last)
    assert found, last
    llm, tools = int(found.group(1)), int(found.group(2))
    assert llm >= 6 and tools >= 3  # several LLM turns per test, tool calls in between


def test_demo_exits_non_zero_when_the_replay_misses() -> None:
    result = _run(str(DEMO), "--replay-env", "SUPPORT_AGENT_MODEL=gpt-4.1")
    assert result.returncode == 1
    assert 'model: "gpt-4.1" != "gpt-4o-mini"' in result.stdout  # the miss explains itself
    assert "demo failed: the replay run" in result.stderr
    assert not SUMMARY.search(result.stdout)


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_committed_example_cassettes_replay_with_no_server_and_no_key() -> None:
    """What a reader gets by hand: the example's tests replay from the cassettes committed beside them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        CASSETTE_MODE="replay",
        OPENAI_BASE_URL=f"http://127.0.0.1:{_dead_port()}/v1",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    args = ["-m", "pytest", "examples/support_agent", "-q", "-p", "cassette.pytest_plugin"]
    result = _run(*args, "-p", "no:cacheprovider", "-W", "error::cassette.CassetteWarning", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout
