"""Workload 3: bytes on disk for a growing agent conversation and for a suite sharing one prompt.

Both are recorded live against the local devserver by every tool. The
conversation resends its whole history each turn (as every chat API requires),
so a store that keeps each request whole grows with the square of the turns.
Ours counts the manifests and the blob store together, in both of its forms:
readable manifests (the default, reviewed in diffs) and `compress = true`
(gzip manifests with responses inline, read through `cassette textconv` and
`cassette show`). The targets are on the compressed form; the readable one is
printed beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._data import MODEL, SEED, SYSTEM_3K, TOOLS, devserver, free_port, user_turn
from bench._harness import NOT_INSTALLED, BenchConfig, Row, Section, Target, label, peer, tree_bytes
from bench.loading import why
from bench.replay import API_KEY

Recorder = Callable[[Path, Callable[[Any], None], str], Path]  # (path, body(client), base_url) -> files


def _client(base_url: str) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)


def _ours(
    path: Path, body: Callable[[Any], None], base_url: str, store: Path, compress: bool = False
) -> None:
    import cassette

    client = cassette.instrument(_client(base_url))
    with cassette.using(path, mode="record", store=store, compress=compress):
        body(client)


def _vcrpy(path: Path, body: Callable[[Any], None], base_url: str) -> None:
    import vcr

    # pytest-recording: one YAML cassette per test; match_on does not change what is written
    with vcr.VCR(record_mode="all", match_on=("method", "path")).use_cassette(str(path)):
        body(_client(base_url))


def _cassetter(path: Path, body: Callable[[Any], None], base_url: str) -> None:
    import cassetter

    with cassetter.use_cassette(path, record_mode="all", match_on=["method", "uri", "body"]):
        body(_client(base_url))


def _cendor(path: Path, body: Callable[[Any], None], base_url: str) -> None:
    from cendor import cassette as cendor_cassette
    from cendor.core import instrument

    client = instrument(_client(base_url))
    with cendor_cassette.using(str(path), mode="record"):
        body(client)


def conversation(turns: int) -> Callable[[Any], None]:
    """An agent conversation of ``turns`` calls; each call resends the whole history."""

    def body(client: Any) -> None:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_3K}]
        for turn in range(turns):
            messages.append({"role": "user", "content": user_turn(5000 + turn)})
            reply = client.chat.completions.create(
                model=MODEL, messages=messages, tools=TOOLS, tool_choice="none"
            )
            messages.append({"role": "assistant", "content": reply.choices[0].message.content or ""})

    return body


def one_test(i: int) -> Callable[[Any], None]:
    """Test ``i`` of the suite: one call with the shared 3 KB system prompt and tool schemas."""

    def body(client: Any) -> None:
        client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "system", "content": SYSTEM_3K},
                {"role": "user", "content": user_turn(9000 + i)},
            ],
            tools=TOOLS,
        )

    return body


TOOLS_UNDER_TEST = ("ours", "ours-gz", "cendor", "vcrpy", "cassetter")
OURS = "ours-gz"  # the form the targets are on


def run(cfg: BenchConfig) -> Section:
    section = Section("storage", "3. Storage: bytes on disk (manifests + blobs)")
    turn_points = cfg.size([10, 20, 50], [1, 2, 4])
    suite_size = cfg.size(100, 3)
    have = {
        "ours": True,
        "ours-gz": True,
        "cendor": peer("cendor.cassette") is not None,
        "vcrpy": peer("vcr") is not None,
        "cassetter": peer("cassetter") is not None,
    }
    names = {
        "ours": "cassette (ours, readable)",
        "ours-gz": "cassette (ours, compress = true)",
        "cendor": label("cendor-cassette"),
        "vcrpy": label("vcrpy") + " YAML",
        "cassetter": label("cassetter") + " YAML",
    }
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    conv: dict[str, dict[int, int]] = {k: {} for k in TOOLS_UNDER_TEST}
    suite: dict[str, int] = {}
    in_git: dict[str, int] = {}  # the suite committed and packed: what a clone downloads
    suite_parts: dict[str, tuple[tuple[int, int], int]] = {}  # ours: (manifests, blobs) bytes, blob files
    response_floor = packed_floor = 0
    failed: dict[str, str] = {}
    for key in TOOLS_UNDER_TEST:
        if not have[key]:
            continue
        work = cfg.scratch(f"storage-{key}")
        try:
            for turns in turn_points:
                where = work / f"conv-{turns}"
                where.mkdir()
                path = where / ("conversation.yaml" if key in ("vcrpy", "cassetter") else "conversation.json")
                with devserver(SEED, port, separate_process=not cfg.quick):
                    _record(key, path, conversation(turns), base_url, where / ".blobs")
                conv[key][turns] = tree_bytes(where)
            where = work / "suite"
            where.mkdir()
            with devserver(SEED, port, separate_process=not cfg.quick):
                for i in range(suite_size):
                    path = where / (
                        f"test_{i:03d}.yaml" if key in ("vcrpy", "cassetter") else f"test_{i:03d}.json"
                    )
                    _record(key, path, one_test(i), base_url, where / ".blobs")
            suite[key] = tree_bytes(where)
            packed = git_pack_bytes(where)
            if packed is not None:
                in_git[key] = packed
            if key in ("ours", "ours-gz"):
                blobs = [b for b in (where / ".blobs").rglob("*") if b.is_file()]
                blob_bytes = sum(b.stat().st_size for b in blobs)
                suite_parts[key] = ((suite[key] - blob_bytes, blob_bytes), len(blobs))
            if key == "ours":
                response_floor, packed_floor = _responses_alone(where)
        except Exception as exc:
            failed[key] = why(exc)
    last = turn_points[-1]
    section.lines.append(
        f"conversation: a {len(SYSTEM_3K):,}-character system prompt, {len(TOOLS)} tool schemas, "
        f"{last} user turns; bytes after {', '.join(map(str, turn_points))} turns:"
    )
    for key in TOOLS_UNDER_TEST:
        if conv[key]:
            points = ", ".join(f"{t} turns {conv[key][t]:,} B" for t in turn_points if t in conv[key])
            section.lines.append(f"  {names[key]}: {points}; growth {_growth(conv[key], turn_points)}")
    section.lines.append(
        f"suite: {suite_size} tests, one cassette each, all sharing the system prompt and tool schemas: "
        + ", ".join(f"{names[k]} {suite[k]:,} B" for k in TOOLS_UNDER_TEST if k in suite)
    )
    for ours in ("ours-gz", "ours"):
        if ours in suite_parts:
            (manifests, blob_bytes), blob_files = suite_parts[ours]
            kept = "and each response's choices" if ours == "ours" else "responses stay in the manifests"
            section.lines.append(
                f"  {names[ours]}: manifests {manifests:,} B ({suite_size} files), blobs {blob_bytes:,} B "
                f"({blob_files} files: the shared prompt and tool-schema chain; {kept})"
            )
    if "ours" in suite and response_floor:
        # what any faithful recorder must keep per test, before a single byte of request or key
        budgets = ", ".join(
            f"{names[k]} {suite[k] * 0.2 / suite_size:,.0f} B" for k in ("cendor", "vcrpy") if k in suite
        )
        section.lines.append(
            f"  floor: what each test must keep for itself as compact JSON (its response: status, "
            f"headers, body; its request with the shared prompt and schemas as references) is "
            f"{response_floor / suite_size:,.0f} B per test ({packed_floor / suite_size:,.0f} B even if "
            f"compressed, zlib level 9); a 0.2x target leaves {budgets} per test"
        )
    if in_git:
        section.lines.append(
            "  in git (the suite as one commit, packed by `git gc --aggressive`: what a clone fetches; "
            "no target): " + ", ".join(f"{names[k]} {in_git[k]:,} B" for k in TOOLS_UNDER_TEST if k in in_git)
        )
    for ours in ("ours-gz", "ours"):
        ours_conv = conv[ours].get(last)
        for key, target in (("cendor", Target("<=", 0.2)), ("vcrpy", Target("<=", 0.2)), ("cassetter", None)):
            status = NOT_INSTALLED if not have[key] else failed.get(key, "")
            section.rows.append(
                Row(
                    f"conversation, {last} turns" + ("" if ours == OURS else ", readable"),
                    "bytes",
                    ours_conv,
                    names[key],
                    conv[key].get(last),
                    status,
                    target if ours == OURS else None,
                )
            )
    for ours in ("ours-gz", "ours"):
        for key, target in (("cendor", Target("<=", 0.2)), ("vcrpy", Target("<=", 0.2)), ("cassetter", None)):
            status = NOT_INSTALLED if not have[key] else failed.get(key, "")
            note = ""
            if ours != OURS and key in suite and response_floor > suite[key] * 0.2:
                note = (
                    f"readable: the {suite_size} tests' own responses and requests alone take "
                    f"{response_floor:,} B as compact JSON, more than 0.2x of theirs "
                    f"({suite[key] * 0.2:,.0f} B); compressed they take {packed_floor:,} B"
                )
            section.rows.append(
                Row(
                    f"suite of {suite_size} tests" + ("" if ours == OURS else ", readable"),
                    "bytes",
                    suite.get(ours),
                    names[key],
                    suite.get(key),
                    status,
                    target if ours == OURS else None,
                    note=note,
                )
            )
    for ours in ("ours-gz", "ours"):
        if not conv[ours]:
            continue
        exponent = _exponent(conv[ours], turn_points)
        section.rows.append(
            Row(
                f"{'conversation growth' if ours == OURS else 'readable: growth'} exponent "
                f"({turn_points[0]}→{last} turns)",
                "",
                exponent,
                target=Target("<=", 1.25, on="ours"),
                note="bytes ∝ turns^k: k = 1 is linear, k = 2 quadratic",
            )
        )
    if "ours" in failed or OURS in failed:
        section.error = failed.get(OURS) or failed["ours"]
    return section


def git_pack_bytes(where: Path) -> int | None:
    """Bytes of the packfile after committing ``where`` and ``git gc --aggressive``; None without git.

    Git stores each file zlib-compressed and deltas similar files against each other, so
    files that repeat a prompt shrink far more in a pack than on disk.
    """
    import shutil
    import subprocess
    import tempfile

    if shutil.which("git") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="bench-pack-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(where, repo)
        env_args = ("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "gc.auto=0")
        for args in (
            ("init", "-q"),
            ("add", "-A"),
            ("commit", "-q", "-m", "suite"),
            ("gc", "-q", "--aggressive"),
        ):
            done = subprocess.run(["git", *env_args, *args], cwd=repo, capture_output=True)
            if done.returncode != 0:
                return None
        return sum(p.stat().st_size for p in (repo / ".git" / "objects" / "pack").glob("*.pack"))


def _responses_alone(where: Path) -> tuple[int, int]:
    """Bytes every test must keep for itself, as compact JSON: its response (blobs inlined) and its
    request with the shared system prompt and tool schemas left as references; and the same
    bytes compressed per test (zlib, level 9), what even a store of compressed files would keep."""
    import zlib

    import orjson

    import cassette

    total = packed = 0
    for path in sorted(where.glob("test_*.json")):
        recorded = cassette.load_cassette(path, store=where / ".blobs")
        own = b"".join(
            orjson.dumps(recorded.hydrate(inter.response)) + orjson.dumps(inter.request)
            for inter in recorded.interactions
        )
        total += len(own)
        packed += len(zlib.compress(own, 9))
    return total, packed


def _record(key: str, path: Path, body: Callable[[Any], None], base_url: str, store: Path) -> None:
    if key in ("ours", "ours-gz"):
        _ours(path, body, base_url, store, compress=key == "ours-gz")
    elif key == "vcrpy":
        _vcrpy(path, body, base_url)
    elif key == "cassetter":
        _cassetter(path, body, base_url)
    else:
        _cendor(path, body, base_url)


def _exponent(points: dict[int, int], turns: list[int]) -> float | None:
    """k in bytes ∝ turns^k, fitted on the marginal bytes (so fixed overhead does not flatter it)."""
    a, b, c = turns
    if not all(t in points for t in turns):
        return None
    early = (points[b] - points[a]) / (b - a)  # bytes per turn around the start
    late = (points[c] - points[b]) / (c - b)  # bytes per turn towards the end
    if early <= 0 or late <= 0:
        return None
    # for bytes = turns^k the marginal cost grows as turns^(k-1) between the two midpoints
    return 1 + math.log(late / early) / math.log(((b + c) / 2) / ((a + b) / 2))


def _growth(points: dict[int, int], turns: list[int]) -> str:
    k = _exponent(points, turns)
    if k is None:
        return "n/a"
    shape = "linear" if k <= 1.25 else "quadratic" if k >= 1.75 else "super-linear"
    return f"{shape} (exponent {k:.2f})"
