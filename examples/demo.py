"""Record an agent's tests against a model server once, then replay them offline: no server, no key.

    python examples/demo.py            # prints one summary line at the end; exit 0 when all is green
    python examples/demo.py --keep     # keep the scratch copy to look at the cassettes it wrote

The agent is ``examples/support_agent`` (the OpenAI SDK, two ``@cassette.tool`` tools,
several LLM turns). The demo copies it to a scratch directory without its committed
cassettes, starts ``python -m cassette.devserver`` (a local OpenAI-compatible server),
runs the tests with ``CASSETTE_MODE=record``, stops the server, and runs them again
with ``CASSETTE_MODE=replay``, no API key, and ``OPENAI_BASE_URL`` still pointing at the
server's port, where a listener now counts (and refuses) every connection.

``--replay-env NAME=VALUE`` changes the environment of the replay run only, to see
what a miss looks like, e.g. ``--replay-env SUPPORT_AGENT_MODEL=gpt-4.1``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE / "support_agent"
TIMEOUT = 300  # seconds for one pytest run; the replay takes well under one


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--replay-env", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="cassette-demo-"))
    try:
        return run(scratch, dict(pair.split("=", 1) for pair in args.replay_env))
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def run(scratch: Path, replay_env: dict[str, str]) -> int:
    project = scratch / "support_agent"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("cassettes", "__pycache__"))
    tests = sum(1 for line in (project / "tests").glob("test_*.py") for _ in _test_functions(line))
    print(f"cassette demo: {tests} pytest tests of a support agent, copied to {scratch}")

    server = subprocess.Popen(
        [sys.executable, "-m", "cassette.devserver", "--port", "0", "--seed", "7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        port = _listening_port(server)
        base_url = f"http://127.0.0.1:{port}/v1"
        print(f"1. record: CASSETTE_MODE=record against the local server at {base_url}")
        recorded = _pytest(
            scratch, {"CASSETTE_MODE": "record", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-local"}
        )
        if recorded.returncode != 0:
            return _failed("recording", recorded)
    finally:
        server.terminate()
        server.wait(timeout=30)

    counts, files = _count_calls(project / "cassettes")
    print(f"   wrote {files} cassettes: {counts['llm']} LLM calls and {counts['tool']} tool calls")
    print("2. server stopped, API key removed; its port now only counts connections")

    with _Tripwire(port) as tripwire:
        print("3. replay: CASSETTE_MODE=replay")
        replayed = _pytest(
            scratch,
            {"CASSETTE_MODE": "replay", "OPENAI_BASE_URL": base_url, **replay_env},
            extra=["-W", "error::cassette.CassetteWarning"],  # an unused or reordered call fails the test
        )
    if replayed.returncode != 0:
        return _failed("replay", replayed)
    passed = re.search(r"(\d+) passed.* in ([\d.]+)s", replayed.stdout)
    if passed is None or int(passed.group(1)) != tests or tripwire.connections:
        return _failed("replay", replayed)
    print(
        f"replayed {tests} tests: {counts['llm']} LLM calls and {counts['tool']} tool calls served from "
        f"cassettes in {float(passed.group(2)):.2f} s, {tripwire.connections} network requests"
    )
    return 0


def _test_functions(path: Path) -> list[str]:
    return re.findall(r"^(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), re.M)


def _listening_port(server: subprocess.Popen[str]) -> int:
    assert server.stdout is not None
    line = server.stdout.readline()  # the server prints one line once it is accepting connections
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if found is None:
        raise SystemExit(f"the devserver did not start: {line or server.stdout.read()}")
    return int(found.group(1))


def _pytest(cwd: Path, env: dict[str, str], extra: list[str] = ()) -> subprocess.CompletedProcess[str]:  # type: ignore[assignment]
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CASSETTE_", "OPENAI_", "ANTHROPIC_", "PYTEST_"))
    }
    # Only the cassette plugin: the other plugins installed here (hypothesis, xdist, …) are not needed
    clean.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1", **env)
    command = [sys.executable, "-m", "pytest", "support_agent", "-q", "-p", "cassette.pytest_plugin"]
    command += ["-p", "no:cacheprovider", *extra]
    return subprocess.run(command, cwd=cwd, env=clean, capture_output=True, text=True, timeout=TIMEOUT)


def _count_calls(folder: Path) -> tuple[Counter[str], int]:
    import cassette

    counts: Counter[str] = Counter()
    files = sorted(folder.glob("*.json"))
    for path in files:
        counts.update(i.kind for i in cassette.load_cassette(path).interactions)
    return counts, len(files)


def _failed(step: str, result: subprocess.CompletedProcess[str]) -> int:
    print(result.stdout[-6000:])
    print(result.stderr[-3000:], file=sys.stderr)
    print(f"demo failed: the {step} run exited with {result.returncode}", file=sys.stderr)
    return 1


class _Tripwire:
    """Listens on the dead server's port: counts every connection and closes it unanswered."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed by __exit__
                return
            self.connections += 1
            conn.close()

    def __enter__(self) -> _Tripwire:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
        except OSError:
            pass
        self.sock.close()
        self.thread.join(timeout=5)


if __name__ == "__main__":
    sys.exit(main())
