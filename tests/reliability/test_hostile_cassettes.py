"""Hostile cassettes: whatever a manifest or a blob store holds, only a `CassetteError` comes out.

Property-based (hypothesis) fuzzing of the loader (`parse_manifest`, `load_cassette`),
the blob resolver (`hydrate`, `BlobStore.get`) and replay through a `Session` and the
real transport: random bytes, truncations, byte and structural mutations of a valid
cassette, deep nesting, huge numbers, invalid UTF-8, `$blob` references that try to
leave the store, symlinks and FIFOs in the store, reference bombs, tool values that
name arbitrary callables. Each input must be read, or refused with a `CassetteError`:
never another exception, never a file opened outside the store (an audit hook
watches), never unbounded time (hypothesis deadline) or memory (an address-space cap).

The inputs that found bugs are kept below as named regression tests.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import os
import resource
import shutil
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_support import FastDevServer, has_module, soak_mode

import cassette
from cassette import CassetteError, CassetteShapeError, InvalidBlobRefError, MissingBlobError, load_cassette
from cassette.core.canonical import ordered_json
from cassette.store.blobs import BlobStore
from cassette.store.manifest import parse_manifest

# --- guards: no read outside the store, bounded memory -----------------------------------------------

_watch = threading.local()
_LIBRARY = tuple(
    os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, *sys.path} if p and os.path.isdir(p)
)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    allowed = getattr(_watch, "allowed", None)
    if allowed is None or event != "open":
        return
    target = args[0]
    if isinstance(target, int):  # an already opened descriptor
        return
    path = os.path.realpath(os.fsdecode(target))
    if path.startswith(allowed) or path.startswith(_LIBRARY):
        return
    _watch.outside.append(path)


sys.addaudithook(_audit)


@contextlib.contextmanager
def reads_confined_to(*roots: Path) -> Iterator[None]:
    """Fail if the block opens a file outside ``roots`` (module imports aside)."""
    _watch.allowed = tuple(os.path.realpath(r) for r in roots)
    _watch.outside = []
    try:
        yield
    finally:
        outside, _watch.allowed = _watch.outside, None
    assert not outside, f"opened outside the store: {outside[:5]}"


@contextlib.contextmanager
def memory_cap(extra: int = 768 * 2**20) -> Iterator[None]:
    """Cap the address space at its current size plus ``extra`` bytes while the block runs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[0]) * resource.getpagesize()
    cap = current + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def only_cassette_errors(fn: Callable[[], Any]) -> str:
    """Run ``fn``: ``"ok"`` or ``"refused"`` (a CassetteError); anything else fails the test."""
    try:
        fn()
    except CassetteError:
        return "refused"
    return "ok"


# --- a valid cassette to mutate ---------------------------------------------------------------------


@dataclasses.dataclass
class Receipt:
    order_id: str
    lines: list[str]


class OrderError(ValueError):
    pass


@cassette.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "notes": "Customer was charged twice. " * 40, "total": 12.5}


@cassette.tool
def make_receipt(order_id: str) -> Receipt:
    return Receipt(order_id, [f"line {n}: " + "x" * 60 for n in range(12)])


@cassette.tool
def cancel_order(order_id: str) -> None:
    raise OrderError(f"order {order_id} already shipped")


SYSTEM = "You are a careful support agent for a shop that sells tea. " * 20


def run_calls(base: str, http: Any) -> list[str]:
    """Every kind of call the seam records: JSON, SSE stream, HTTP error, generic HTTP, Anthropic, tools.

    Returns one outcome per call ("ok", "refused", or the recorded exception's name).
    """
    chat = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}],
    }
    calls: list[Callable[[], Any]] = [
        lambda: http.post(f"{base}/v1/chat/completions", json=chat).read(),
        lambda: _stream(http, f"{base}/v1/chat/completions", {**chat, "stream": True}),
        lambda: http.post(f"{base}/v1/chat/completions", json={**chat, "model": "error-429"}).read(),
        lambda: http.get(f"{base}/v1/models", params={"limit": "5"}).read(),
        lambda: http.post(
            f"{base}/v1/messages",
            json={"model": "claude-x", "max_tokens": 50, "messages": [{"role": "user", "content": SYSTEM}]},
            headers={"anthropic-version": "2023-06-01"},
        ).read(),
        lambda: lookup_order("A1"),
        lambda: make_receipt("A1"),
        lambda: cancel_order("A1"),
    ]
    outcomes = []
    for call in calls:
        try:
            call()
            outcomes.append("ok")
        except CassetteError:
            outcomes.append("refused")
        except Exception as exc:
            outcomes.append(f"{type(exc).__module__}:{type(exc).__qualname__}")
    return outcomes


def _stream(http: Any, url: str, body: dict[str, Any]) -> bytes:
    with http.stream("POST", url, json=body) as response:
        return b"".join(response.iter_bytes())


@dataclasses.dataclass
class Template:
    dir: Path
    manifest: bytes = dataclasses.field(repr=False)
    doc: dict[str, Any] = dataclasses.field(repr=False)
    base: str

    @property
    def store(self) -> Path:
        return self.dir / ".blobs"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    root = tmp_path_factory.mktemp("hostile")
    path = root / "valid.json"
    with FastDevServer(seed=7) as srv:
        http = seam_client()
        with cassette.using(path, mode="record", store=root / ".blobs", blob_threshold=64):
            outcomes = run_calls(srv.url, http)
        base = srv.url
    assert outcomes[:-1] == ["ok"] * 7 and outcomes[-1].endswith("OrderError"), outcomes
    data = path.read_bytes()
    return Template(root, data, json.loads(data), base)


@functools.cache
def seam_client() -> Any:
    """One client for every example (each new one costs ~100 ms of SSL context set-up)."""
    return cassette.http_client()


def replay(template: Template, manifest: bytes, workdir: Path) -> list[str]:
    """Replay every call against ``manifest``; the dev server is gone, so nothing can go live."""
    path = workdir / "mutated.json"
    path.write_bytes(manifest)
    # `cassette verify` reads hostile files too: a report, never a crash
    if has_module("cassette.maintenance.verify"):
        from cassette.maintenance.verify import verify_paths

        verify_paths([path])
    http = seam_client()
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(
                cassette.using(path, mode="replay", store=template.store, check_order="off", unused="off")
            )
        except CassetteError:
            return ["refused"]
        outcomes = run_calls(template.base, http)
        try:
            stack.close()
        except CassetteError:
            pass
    return outcomes


def check_outcomes(outcomes: list[str], manifest: bytes) -> None:
    for outcome in outcomes:
        if outcome in ("ok", "refused"):
            continue
        # a tool error the (mutated) cassette itself records is a faithful replay, not a leak
        assert outcome.encode() in manifest, f"replay raised {outcome}, not a CassetteError"


# --- hypothesis strategies ----------------------------------------------------------------------------

FUZZ = settings(
    max_examples=3000 if soak_mode() else 150,
    deadline=3000,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_keys = st.sampled_from(
    [
        "$blob",
        "$json",
        "$chain",
        "$literal",
        "$dataclass",
        "$pydantic",
        "$bytes",
        "$datetime",
        "fields",
        "data",
        "type",
        "args",
        "error",
        "result",
        "status",
        "headers",
        "json",
        "text",
        "base64",
        "events",
        "content-type",
        "content-encoding",
        "content-length",
        "transfer-encoding",
        "incomplete",
        "usage",
        "message",
        "choices",
        "delta",
    ]
) | st.text(max_size=8)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "../../etc/passwd",
            "/etc/passwd",
            "0" * 40,
            "a" * 39,
            "builtins:ValueError",
            "builtins:SystemExit",
            "os:system",
            "subprocess:Popen",
            "not base64!",
            "2026-13-45",
            "gzip",
            "text/event-stream",
            "application/json",
            "\ud800",
            "é\n\r",
        ]
    )
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=12,
)


# recorded SSE events whose data is hostile JSON (what the token counter and the SDK parse)
sse_events = st.lists(json_values.map(lambda v: "data: " + json.dumps(v)), max_size=4)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _mutate(doc: Any, path: tuple[Any, ...], op: str, new: Any) -> Any:
    doc = copy.deepcopy(doc)
    if not path:
        return new
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "wrap":
        parent[last] = {"$blob": parent[last]} if isinstance(parent, dict) else [parent[last]]
    else:
        parent[last] = new
    return doc


# --- the properties ---------------------------------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=2048))
def test_random_bytes_never_escape_as_other_errors(data: bytes, counts: Any, tmp_path: Path) -> None:
    counts["inputs"] += 1
    counts[only_cassette_errors(lambda: parse_manifest(data, tmp_path / "c.json"))] += 1


@FUZZ
@given(cut=st.integers(min_value=0, max_value=10**9))
def test_truncations_of_a_valid_cassette(template: Template, cut: int, counts: Any, tmp_path: Path) -> None:
    data = template.manifest[: cut % (len(template.manifest) + 1)]
    counts["inputs"] += 1

    def load_and_hydrate() -> None:
        c = parse_manifest(data, tmp_path / "c.json", template.store)
        for i in c.interactions:
            c.hydrate(i.request)
            c.hydrate(i.response)

    with reads_confined_to(template.dir, tmp_path):
        counts[only_cassette_errors(load_and_hydrate)] += 1


@FUZZ
@given(
    edits=st.lists(
        st.tuples(
            st.integers(min_value=0),
            st.sampled_from(["flip", "insert", "delete"]),
            st.binary(min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_byte_mutations_load_or_refuse(
    template: Template, edits: list[tuple[int, str, bytes]], counts: Any, tmp_path: Path
) -> None:
    data = bytearray(template.manifest)
    for pos, op, blob in edits:
        at = pos % (len(data) + 1)
        if op == "flip" and at < len(data):
            data[at] ^= blob[0] or 1
        elif op == "insert":
            data[at:at] = blob
        else:
            del data[at : at + len(blob)]
    counts["inputs"] += 1
    with memory_cap(), reads_confined_to(template.dir, tmp_path):
        outcomes = replay(template, bytes(data), tmp_path)
    check_outcomes(outcomes, bytes(data))
    counts["calls_replayed"] += len(outcomes)
    counts["calls_refused"] += outcomes.count("refused")


@FUZZ
@given(
    choice=st.integers(min_value=0),
    op=st.sampled_from(["replace", "delete", "wrap"]),
    new=json_values | sse_events,
)
def test_structural_mutations_replay_or_refuse(
    template: Template, choice: int, op: str, new: Any, counts: Any, tmp_path: Path
) -> None:
    paths = [p for p in _paths(template.doc) if p]
    # half the mutations land in responses: that is what replay hands to the SDK
    responses = [p for p in paths if "response" in p]
    pool = responses if choice % 2 else paths
    path = pool[(choice // 2) % len(pool)]
    if op != "replace" and path and isinstance(path[-1], int) and op == "delete":
        op = "replace"
    mutated = _mutate(template.doc, path, op, new)
    try:
        manifest = ordered_json(mutated)
    except (TypeError, ValueError):
        return  # not writable as JSON (e.g. a lone surrogate): covered by the byte-level tests
    counts["inputs"] += 1
    with memory_cap(), reads_confined_to(template.dir, tmp_path):
        outcomes = replay(template, manifest, tmp_path)
    check_outcomes(outcomes, manifest)
    counts["calls_replayed"] += len(outcomes)
    counts["calls_refused"] += outcomes.count("refused")


@FUZZ
@given(
    ref=st.text(max_size=60)
    | st.sampled_from(["../" * 8 + "etc/passwd", "/etc/passwd", "..", "C:\\x", "a" * 40])
)
def test_blob_references_never_leave_the_store(
    template: Template, ref: str, counts: Any, tmp_path: Path
) -> None:
    c = load_cassette(_write(tmp_path, template.manifest), template.store)
    counts["inputs"] += 1
    with reads_confined_to(template.dir, tmp_path):
        counts[only_cassette_errors(lambda: c.hydrate({"a": [{"$blob": ref}]}))] += 1
        counts[only_cassette_errors(lambda: c.hydrate({"$blob": ref, "$json": True}))] += 1
        counts[only_cassette_errors(lambda: BlobStore(template.store).get(ref))] += 1


@FUZZ
@given(value=json_values, as_json=st.booleans())
def test_hostile_blob_contents_with_valid_ids(value: Any, as_json: bool, counts: Any, tmp_path: Path) -> None:
    """A blob whose content is hostile but whose id is right (anyone can hash): hydrate or refuse."""
    store = BlobStore(tmp_path / ".blobs")
    try:
        data = ordered_json(value)
    except (TypeError, ValueError):
        return
    ref: dict[str, Any] = {"$blob": store.put(data), **({"$json": True} if as_json else {})}
    doc = {"version": 1, "interactions": [_tool_interaction({"result": [ref, {"nested": ref}]})]}
    path = _write(tmp_path, json.dumps(doc).encode())
    counts["inputs"] += 1
    with memory_cap(), reads_confined_to(tmp_path):
        c = load_cassette(path, tmp_path / ".blobs")
        counts[only_cassette_errors(lambda: c.hydrate(c.interactions[0].response))] += 1


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "c.json"
    path.write_bytes(data)
    return path


# --- regression tests: inputs that broke the core ------------------------------------------------------


def test_reference_bomb_is_refused_quickly(tmp_path: Path) -> None:
    """Twenty 600-byte JSON blobs, each referencing the next ten times: 10**20 nodes if expanded."""
    store = BlobStore(tmp_path / ".blobs")
    ref: dict[str, Any] = {"$blob": store.put(b'"leaf"'), "$json": True}
    for _ in range(20):
        ref = {"$blob": store.put(ordered_json([ref] * 10)), "$json": True}
    doc = {"version": 1, "interactions": [_tool_interaction({"result": ref})]}
    path = _write(tmp_path, json.dumps(doc).encode())
    assert path.stat().st_size < 300
    c = load_cassette(path, tmp_path / ".blobs")
    with memory_cap(), pytest.raises(InvalidBlobRefError, match="reference bomb"):
        c.hydrate(c.interactions[0].response)


@functools.cache
def _gzip_bomb() -> bytes:
    """A compressed cassette of 1.2 GB (a JSON object of spaces) in 1.2 MB: past what one may hold."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    spaces = b" " * (64 * 2**20)
    return b"".join([deflate.compress(b"{"), *(deflate.compress(spaces) for _ in range(18)), deflate.flush()])


@pytest.mark.parametrize("trailer", ["honest", "lying"])
def test_a_gzip_bomb_is_refused_without_holding_what_it_expands_to(tmp_path: Path, trailer: str) -> None:
    """Before: inflated up to 1 GiB in memory before the limit refused it; under a process memory
    limit that was a raw MemoryError. Its trailer says its size: refused after a pass that keeps
    nothing. A trailer that lies (says 2 bytes) is inflated, and a MemoryError is a cassette error."""
    bomb = _gzip_bomb()
    if trailer == "lying":
        bomb = bomb[:-4] + (2).to_bytes(4, "little")
    path = _write(tmp_path, bomb)
    with memory_cap(256 * 2**20), pytest.raises(cassette.CorruptCassetteError) as caught:
        load_cassette(path)
    assert str(path) in str(caught.value)
    assert ("more than a cassette may hold" if trailer == "honest" else "memory") in str(caught.value)


def test_the_secret_scan_of_a_gzip_bomb_reports_it_within_bounded_memory(tmp_path: Path) -> None:
    """Before: the scan inflated it twice up to 1 GiB (and joined the pieces: 2 GiB at its peak)."""
    from cassette.plugins.manager import default_rules
    from cassette.secrets import Scanner

    path = _write(tmp_path, _gzip_bomb())
    with memory_cap(768 * 2**20):
        findings = Scanner(default_rules()).scan_file(path)
    assert [f.rule for f in findings] == ["damaged-compressed-file"]


def test_a_value_repeating_one_blob_still_hydrates(tmp_path: Path) -> None:
    """The bomb guard leaves room for real repetition: the same 100 KB tool output 40 times."""
    store = BlobStore(tmp_path / ".blobs")
    big = {"$blob": store.put(b"x" * 100_000)}
    doc = {"version": 1, "interactions": [_tool_interaction({"result": [big] * 40})]}
    c = load_cassette(_write(tmp_path, json.dumps(doc).encode()), tmp_path / ".blobs")
    assert c.hydrate(c.interactions[0].response)["result"] == ["x" * 100_000] * 40


def test_fifo_under_a_blob_name_does_not_block(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / ".blobs")
    (tmp_path / ".blobs" / "ab").mkdir(parents=True)
    os.mkfifo(tmp_path / ".blobs" / "ab" / ("c" * 38))
    with pytest.raises(MissingBlobError, match="not a regular file"):
        store.get("ab" + "c" * 38)  # used to wait forever for a writer


@pytest.mark.parametrize("target", ["/etc/passwd", "/etc", "loop"])
def test_symlinks_in_the_store_are_refused(tmp_path: Path, target: str) -> None:
    store = BlobStore(tmp_path / ".blobs")
    blob_dir = tmp_path / ".blobs" / "cd"
    blob_dir.mkdir(parents=True)
    link = blob_dir / ("e" * 38)
    if target == "loop":
        os.symlink(link, link)  # a symlink loop used to escape as a bare OSError
    else:
        os.symlink(target, link)
    with reads_confined_to(tmp_path), pytest.raises(CassetteError):
        store.get("cd" + "e" * 38)


@pytest.mark.parametrize("ref", [["a"], {"x": 1}, 5, None, "../../etc/passwd", "/etc/passwd"])
def test_blob_references_of_the_wrong_type(tmp_path: Path, ref: Any) -> None:
    doc = {"version": 1, "interactions": [_tool_interaction({"result": {"$blob": ref}})]}
    c = load_cassette(_write(tmp_path, json.dumps(doc).encode()), tmp_path / ".blobs")
    with pytest.raises(InvalidBlobRefError):  # a list used to escape as "unhashable type"
        c.hydrate(c.interactions[0].response)


@pytest.mark.parametrize(
    "result",
    [
        {"$dataclass": "os:system", "fields": {"command": "touch PWNED"}},
        {"$dataclass": "subprocess:Popen", "fields": {"args": ["touch", "PWNED"]}},
        {"$pydantic": "os:system", "data": "touch PWNED"},
    ],
)
def test_tool_values_cannot_name_arbitrary_callables(tmp_path: Path, result: dict[str, Any]) -> None:
    """A cassette naming os:system as a 'dataclass' used to run the command on replay."""
    path = _recorded_tool_cassette(tmp_path, {"result": result})
    with cassette.using(path, mode="replay"), pytest.raises(CassetteShapeError, match="which it is not"):
        lookup_order("A1")
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(
    "error_type", ["builtins:SystemExit", "builtins:KeyboardInterrupt", "builtins:GeneratorExit"]
)
def test_tool_errors_never_rebuild_process_exits(tmp_path: Path, error_type: str) -> None:
    """Only Exception subclasses are recorded, so a cassette cannot make replay raise SystemExit."""
    path = _recorded_tool_cassette(tmp_path, {"error": {"type": error_type, "message": "", "args": [3]}})
    with cassette.using(path, mode="replay"), pytest.raises(CassetteError):
        lookup_order("A1")


@pytest.mark.parametrize(
    "response",
    [
        {"error": "boom"},
        {"error": {"type": "builtins:ValueError", "args": 5}},
        {"result": {"$bytes": 5}},
        {"result": {"$datetime": "not a date"}},
        {"result": {"$datetime": 5}},
        {"result": {"$dataclass": "tests.x:Y", "fields": [1]}},
    ],
)
def test_tool_outcomes_of_the_wrong_shape(tmp_path: Path, response: dict[str, Any]) -> None:
    path = _recorded_tool_cassette(tmp_path, response)
    with cassette.using(path, mode="replay"), pytest.raises(CassetteShapeError, match="Re-record"):
        lookup_order("A1")


_NESTED: Any = "x"
for _ in range(900):
    _NESTED = [_NESTED]


@pytest.mark.parametrize(
    "change",
    [
        {"status": "abc"},
        {"status": [1]},
        {"headers": [1, 2]},
        {"headers": {"x-note": "caf\u00e9 \u2028"}},
        {"json": None, "base64": 5},
        {"events": 5},
        {"events": ["data: {}", 1, None]},
        {"json": _NESTED},
    ],
    ids=[
        "status-text",
        "status-list",
        "headers-list",
        "headers-non-latin",
        "base64-int",
        "events-int",
        "events-mixed",
        "json-900-deep",
    ],
)
def test_recorded_http_responses_of_the_wrong_shape(
    template: Template, tmp_path: Path, change: dict[str, Any]
) -> None:
    doc = copy.deepcopy(template.doc)
    response = doc["interactions"][0]["response"]
    for k, v in change.items():
        if v is None:
            response.pop(k, None)
        else:
            response[k] = v
    manifest = ordered_json(doc)
    outcomes = replay(template, manifest, tmp_path)
    assert outcomes[0] == "refused", outcomes  # each used to escape as TypeError, ValueError, ...
    assert outcomes[1:-1] == ["ok"] * 6, outcomes
    check_outcomes(outcomes, manifest)


@pytest.mark.parametrize("header", ["content-encoding", "content-length", "transfer-encoding"])
def test_wire_encoding_headers_are_ignored(template: Template, tmp_path: Path, header: str) -> None:
    """Bodies are stored decoded; a stray ``content-encoding: gzip`` escaped as httpx2.DecodingError."""
    doc = copy.deepcopy(template.doc)
    response = doc["interactions"][0]["response"]
    response["headers"][header] = {"content-encoding": "gzip", "content-length": "5"}.get(header, "chunked")
    manifest = ordered_json(doc)
    outcomes = replay(template, manifest, tmp_path)
    assert outcomes[:-1] == ["ok"] * 7, outcomes
    check_outcomes(outcomes, manifest)


@pytest.mark.parametrize(
    "event",
    [
        'data: {"message": "not an object", "usage": {"total_tokens": 3}}',
        'data: {"response": ["x"], "usage": 1}',
        'data: {"usage": {"total_tokens": -2000000000}}',
        'data: {"usage": {"input_tokens": true, "output_tokens": 1e300}}',
    ],
)
def test_usage_in_a_recorded_stream_cannot_break_replay_or_the_count(
    template: Template, tmp_path: Path, event: str
) -> None:
    """Token counting reads recorded events: a non-object ``message`` raised AttributeError mid-replay."""
    doc = copy.deepcopy(template.doc)
    stream = next(i for i in doc["interactions"] if "events" in i["response"])
    stream["response"]["events"] = [event, "data: [DONE]"]
    path = tmp_path / "c.json"
    path.write_bytes(ordered_json(doc))
    with cassette.using(
        path, mode="replay", store=template.store, check_order="off", unused="off"
    ) as session:
        _stream(
            seam_client(),
            f"{template.base}/v1/chat/completions",
            {**json.loads(_chat_body()), "stream": True},
        )
    assert session.stats()["tokens_saved"] >= 0


@pytest.mark.parametrize(
    "usage", [{"total_tokens": -2_000_000_000}, {"total_tokens": True}, {"input_tokens": 10**30}]
)
def test_usage_in_a_recorded_response_cannot_skew_the_count(
    template: Template, tmp_path: Path, usage: dict[str, Any]
) -> None:
    """The run summary showed "tokens not spent: -1,943,727,125" after a soak of mutated cassettes."""
    doc = copy.deepcopy(template.doc)
    doc["interactions"][0]["response"]["json"]["usage"] = usage
    path = tmp_path / "c.json"
    path.write_bytes(ordered_json(doc))
    with cassette.using(
        path, mode="replay", store=template.store, check_order="off", unused="off"
    ) as session:
        seam_client().post(f"{template.base}/v1/chat/completions", content=_chat_body()).read()
    assert session.stats()["tokens_saved"] == 0


def test_a_surrogate_in_a_text_blob_fails_before_the_stream_starts(
    template: Template, tmp_path: Path
) -> None:
    """Text blobs decode with surrogatepass; a lone surrogate used to raise mid-stream in the SDK."""
    store_dir = tmp_path / ".blobs"
    shutil.copytree(template.store, store_dir)
    blob_id = BlobStore(store_dir).put("data: \ud800".encode("utf-8", "surrogatepass"))
    doc = copy.deepcopy(template.doc)
    stream = next(i for i in doc["interactions"] if "events" in i["response"])
    stream["response"]["events"] = [{"$blob": blob_id}]
    path = tmp_path / "c.json"
    path.write_bytes(ordered_json(doc))
    http = seam_client()
    with cassette.using(path, mode="replay", store=store_dir, check_order="off", unused="off"):
        with pytest.raises(CassetteShapeError):
            _stream(
                http, f"{template.base}/v1/chat/completions", {**json.loads(_chat_body()), "stream": True}
            )


def _chat_body() -> bytes:
    return json.dumps(
        {
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}],
        }
    ).encode()


def _tool_interaction(response: dict[str, Any]) -> dict[str, Any]:
    return {
        "seq": 0,
        "kind": "tool",
        "key": "0" * 64,
        "request": {"kind": "tool", "name": "t"},
        "response": response,
    }


def _recorded_tool_cassette(tmp_path: Path, response: dict[str, Any]) -> Path:
    path = tmp_path / "tool.json"
    with cassette.using(path, mode="record"):
        lookup_order("A1")
    doc = json.loads(path.read_bytes())
    doc["interactions"][0]["response"] = response
    path.write_bytes(json.dumps(doc).encode())
    return path
