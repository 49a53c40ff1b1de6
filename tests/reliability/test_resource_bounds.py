"""Resource bounds: replay memory stays flat on a big cassette; a huge response is not copied over and over.

Measured in fresh subprocesses (``resource_child.py``), each phase from its own
start: the peak resident set size (``VmHWM`` after a reset) minus the RSS when the
phase began. The bounds asserted here are the ones stated in docs/reliability.md.

- Replaying a 10,000-interaction cassette (250 conversations of one LLM call through
  the real OpenAI SDK and 39 tool calls; ~7 MB manifest) peaks at most
  REPLAY_10K_BOUND_MB above the process's baseline, and at most REPLAY_PER_MANIFEST_MB
  times the manifest's size (the soak mode replays 40,000).
- Recording a chat completion whose content is 50 MB: the whole process (the SDK's
  own parse and httpx's buffer included) peaks at most RECORD_BIG_FACTOR x 50 MB
  above its baseline, and saving it (redaction, secret scan, blob write) at most
  SAVE_BIG_FACTOR x 50 MB above what the session holds. Before the fix the save alone
  took 3 x 50 MB: `redacted()` round-tripped the payload through JSON bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from reliability_support import FastDevServer, soak_mode

CHILD = Path(__file__).with_name("resource_child.py")
REPLAY_10K_BOUND_MB = 100
REPLAY_PER_MANIFEST_MB = 8  # the parsed manifest, its index and the blob cache: a few times the file
BIG_MB = 50
RECORD_BIG_FACTOR = 5.0
SAVE_BIG_FACTOR = 2.5
REPLAY_BIG_FACTOR = 5.0

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc peak-RSS reset"
)


def measure(*args: str, cwd: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(CHILD), *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_replaying_ten_thousand_interactions_stays_within_bound(tmp_path: Path, counts: Any) -> None:
    conversations = 250 * (4 if soak_mode() else 1)
    with FastDevServer(seed=4) as srv:
        recorded = measure("record", srv.openai_base_url, str(tmp_path), str(conversations), cwd=tmp_path)
        url = srv.openai_base_url
    assert recorded["interactions"] == conversations * 40
    result = measure("replay", url, str(tmp_path), str(conversations), cwd=tmp_path)  # the server is gone
    counts.update(
        interactions=result["interactions_replayed"],
        manifest_mb=round(result["manifest_mb"], 1),
        replay_peak_mb=round(result["replay_peak_mb"], 1),
        bound_mb=REPLAY_10K_BOUND_MB,
    )
    assert result["interactions_replayed"] == conversations * 40
    assert result["replay_peak_mb"] <= REPLAY_PER_MANIFEST_MB * result["manifest_mb"], result
    if not soak_mode():
        assert result["replay_peak_mb"] <= REPLAY_10K_BOUND_MB, result


class BigHandler(BaseHTTPRequestHandler):
    """A chat completion whose content is BIG_MB of text (model "big"), or a short one."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    big: bytes = b""
    small: bytes = b""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        data = self.big if body.get("model") == "big" else self.small
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-big",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


@pytest.fixture(scope="module")
def big_server() -> Iterator[str]:
    size = BIG_MB * 2**20
    BigHandler.big = _completion(("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size])
    BigHandler.small = _completion("hello")
    server = ThreadingHTTPServer(("127.0.0.1", 0), BigHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_fifty_megabyte_response_is_not_copied_over_and_over(
    big_server: str, tmp_path: Path, counts: Any
) -> None:
    result = measure("big", big_server, str(tmp_path), cwd=tmp_path)
    counts.update({k: round(v, 1) for k, v in result.items()})
    assert result["content_mb"] == BIG_MB and result["replayed_content_mb"] == BIG_MB
    blobs = [
        f for f in (tmp_path / ".blobs").rglob("*") if f.is_file() and f.stat().st_size >= BIG_MB * 2**20
    ]
    assert len(blobs) == 1, "the 50 MB content is not in the blob store"
    # one parsed copy until the session ends (Python-traced memory: RSS also counts what malloc kept)
    assert result["held_by_session_mb"] <= 1.5 * BIG_MB, result
    assert result["save_peak_mb"] <= SAVE_BIG_FACTOR * BIG_MB, result
    assert result["record_peak_mb"] <= RECORD_BIG_FACTOR * BIG_MB, result
    assert result["replay_peak_mb"] <= REPLAY_BIG_FACTOR * BIG_MB, result
