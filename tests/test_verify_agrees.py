"""`cassette verify` and replay agree: whatever verify passes, replay opens and serves every call.

A run is recorded through the real seam (the OpenAI SDK against the local dev server, and
tools returning tagged values, a text blob, a JSON blob, a recorded error), then the files
are damaged: the reproductions of issue 24.6 one by one, then a hypothesis property over
random mutations of the manifest (in both layouts) and of what its references point to.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil
import traceback
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import OpenAI

import cassette
from cassette import (
    CassetteError,
    CassetteShapeError,
    CorruptCassetteError,
    DuplicateKeyError,
    TamperedBlobError,
    UnimportedTypeError,
    load_cassette,
)
from cassette.cli import main
from cassette.core.layout import manifest_json
from cassette.maintenance.verify import verify_paths
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer

RUN = Path("tests/cassettes/agent/run.json")
STORE = Path("tests/cassettes/.blobs")
QUESTION = [{"role": "user", "content": "My card was charged twice for order A-1"}]


@cassette.tool
def stamp() -> dt.datetime:
    return dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


@cassette.tool
def attachment() -> bytes:
    return b"%PDF-1.7 a receipt"


@cassette.tool
def history(order: str) -> dict[str, Any]:
    # a text blob (the note) and a JSON blob (the row, an object in a list over the threshold)
    return {"note": f"order {order}: " + "charged twice. " * 60, "rows": [{"id": order, "text": "r" * 700}]}


@cassette.tool
def refund(order: str) -> str:
    raise ValueError(f"order {order} is already refunded")


def the_run(client: OpenAI) -> list[Callable[[], Any]]:
    """The calls of the run, each a thunk: recorded once live, then made again on replay."""
    return [
        lambda: client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION),  # type: ignore[arg-type]
        stamp,
        attachment,
        lambda: history("A-1"),
        lambda: refund("A-1"),
    ]


@pytest.fixture
def recorded(devserver: DevServer) -> Iterator[tuple[OpenAI, dict[Path, bytes]]]:
    """The run recorded under tests/cassettes; yields the client and every file as it was written."""
    Path("pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "tests/cassettes"\n')
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    with cassette.using(RUN, mode="record"):
        for call in the_run(client):
            try:
                call()
            except ValueError:
                pass  # refund's error is recorded
    assert verify_paths([RUN]).ok
    files = {p: p.read_bytes() for p in Path("tests/cassettes").rglob("*") if p.is_file()}
    yield client, files


def restore(files: dict[Path, bytes]) -> None:
    shutil.rmtree("tests/cassettes")
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def replay_problems(client: OpenAI) -> list[str]:
    """Replay the run; what went wrong in cassette itself (a `CassetteError`, or a crash in our code).

    Whatever the recording says happens is fine: a recorded tool error raised again, an SDK
    that cannot make sense of a recorded body. A cassette error, or any exception raised from
    cassette's own code other than a recorded tool error re-raised, is a problem.
    """
    problems: list[str] = []
    try:
        session = cassette.using(RUN, mode="replay", unused="off", check_order="off")
        session.start()
    except Exception as exc:
        return [f"open: {type(exc).__name__}: {exc}"]
    try:
        for n, call in enumerate(the_run(client)):
            try:
                call()
            except Exception as exc:
                if _ours(exc):
                    problems.append(f"call {n}: {type(exc).__name__}: {exc}")
    finally:
        session.misses.clear()
        session.finish(None)
    return problems


def _ours(exc: BaseException) -> bool:
    last = traceback.extract_tb(exc.__traceback__)[-1]
    if "/cassette/" in last.filename and last.name == "_replayed":
        return False  # the recorded tool error raised again (a class gone since: a CassetteToolError)
    chain: BaseException | None = exc
    while chain is not None:
        if isinstance(chain, UnimportedTypeError):
            # a value of a class whose module the code under test imports: verify checks its shape
            # and leaves the class to the test run (replay never imports a module a cassette names)
            return False
        if isinstance(chain, CassetteError):
            return True
        chain = chain.__cause__ or chain.__context__
    return "/cassette/" in last.filename


def rewrite(mutate: Callable[[dict[str, Any]], None], *, layout: bool = True) -> None:
    doc = json.loads(RUN.read_bytes())
    mutate(doc)
    RUN.write_bytes(manifest_json(doc) if layout else json.dumps(doc, indent=1).encode())


def tool_response(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(i["response"] for i in doc["interactions"] if i["request"].get("name") == name)


# --- the reproductions ---------------------------------------------------------------------------


def test_a_truncated_cassette_in_the_cassette_dir_fails_verify_with_no_arguments(
    recorded: tuple[OpenAI, dict[Path, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    broken = Path("tests/cassettes/x/test_y.json")
    broken.parent.mkdir()
    broken.write_bytes(b'{"broken')
    Path("tests/cassettes/x/fixture.json").write_text('{"not": "a cassette"}')  # other JSON: not one
    assert main(["verify"]) == 1
    _, err = capsys.readouterr()
    assert "FAILED  tests/cassettes/x/test_y.json" in err and "truncated" in err
    assert "fixture.json" not in err and "verified 2 cassette(s)" in err
    gzipped = Path("tests/cassettes/x/test_z.json")  # a damaged compressed one, too
    gzipped.write_bytes(gzip.compress(b'{"version": 1, "interactions": []}')[:-6])
    broken.unlink()
    assert main(["verify"]) == 1
    assert "FAILED  tests/cassettes/x/test_z.json" in capsys.readouterr().err


def test_a_text_blob_that_is_not_text_fails_verify_as_it_fails_replay(
    recorded: tuple[OpenAI, dict[Path, bytes]],
) -> None:
    gz = BlobStore(STORE).put(gzip.compress(b"charged twice " * 60))  # hashes to its name: no tampering

    def point_at_gzip(doc: dict[str, Any]) -> None:
        tool_response(doc, "history")["result"]["note"] = {"$blob": gz}

    rewrite(point_at_gzip)
    report = verify_paths([RUN])
    assert not report.ok and "is not UTF-8" in str(report.problems[0])
    with pytest.raises(TamperedBlobError, match="not UTF-8"), cassette.using(RUN, mode="replay"):
        history("A-1")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"$datetime": 5}, "malformed"),
        ({"$datetime": "not a date", "type": "date"}, "cannot be rebuilt"),
        ({"$bytes": "!!not base64!!"}, "cannot be rebuilt"),
        ({"$dataclass": 7, "fields": {}}, "malformed"),
    ],
)
def test_a_tagged_value_replay_cannot_rebuild_fails_verify(
    recorded: tuple[OpenAI, dict[Path, bytes]], value: dict[str, Any], message: str
) -> None:
    rewrite(lambda doc: tool_response(doc, "stamp").update(result=value))
    report = verify_paths([RUN])
    assert not report.ok and message in str(report.problems[0]) and "'stamp'" in str(report.problems[0])
    with pytest.raises(CassetteShapeError, match=message), cassette.using(RUN, mode="replay"):
        stamp()


def test_a_huge_gzip_of_spaces_is_reported_as_whitespace_not_as_empty(
    recorded: tuple[OpenAI, dict[Path, bytes]],
) -> None:
    size = 300 * 2**20
    path = Path("tests/cassettes/x/spaces.json")
    path.parent.mkdir()
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        chunk = b" " * 2**20
        for _ in range(size // len(chunk)):  # streamed: 1 MB held, 300 MB written
            out.write(chunk)
    assert path.stat().st_size < 2**20
    [bad] = [f for f in verify_paths(["tests/cassettes"]).files if not f.ok]
    assert bad.file.endswith("spaces.json")
    message = str(bad.problems[0])
    assert f"expands to {size:,} bytes of whitespace and no JSON" in message and "empty" not in message
    with pytest.raises(CorruptCassetteError, match="of whitespace"):
        load_cassette(path)


def test_a_key_given_twice_is_an_error_naming_it(recorded: tuple[OpenAI, dict[Path, bytes]]) -> None:
    text = RUN.read_text()
    assert text.count('"status": 200') == 1
    RUN.write_text(text.replace('"status": 200', '"status": 500,\n"status": 200'))  # hand-edited
    [problem] = verify_paths([RUN]).problems
    assert "gives the key 'status' twice" in str(problem)
    with pytest.raises(DuplicateKeyError, match="'status' twice"):
        load_cassette(RUN)
    # in a JSON blob too (it hashes to its name: written so on purpose)
    restore(recorded[1])
    twice = BlobStore(STORE).put(b'{"id": "A-1", "id": "B-2", "text": "' + b"r" * 700 + b'"}')
    rewrite(
        lambda doc: tool_response(doc, "history")["result"].update(rows=[{"$blob": twice, "$json": True}])
    )
    report = verify_paths([RUN])
    assert "gives the key 'id' twice" in str(report.problems[0]) and twice in str(report.problems[0])


# --- the property -------------------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=8)
)
_TAGGED = st.one_of(
    st.fixed_dictionaries({"$datetime": st.one_of(_SCALARS, st.just("2026-11-30T12:00:00"))}),
    st.fixed_dictionaries(
        {"$datetime": st.just("2026-11-30"), "type": st.sampled_from(["date", "time", "x", 3])}
    ),
    st.fixed_dictionaries({"$bytes": st.one_of(_SCALARS, st.just("aGk="))}),
    st.fixed_dictionaries({"$dataclass": st.one_of(_SCALARS, st.just("builtins:dict")), "fields": _SCALARS}),
    st.fixed_dictionaries({"$pydantic": st.one_of(_SCALARS, st.just("x:y")), "data": _SCALARS}),
    st.fixed_dictionaries({"$http": st.one_of(_SCALARS, st.just("httpx2:Response")), "status": _SCALARS}),
    st.fixed_dictionaries({"$literal": _SCALARS}),
)
_VALUES = st.recursive(
    st.one_of(_SCALARS, _TAGGED),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nodes(v, (*path, i))


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> None:
    *parents, last = path
    for step in parents:
        doc = doc[step]
    if delete and isinstance(doc, dict):
        del doc[last]
    else:
        doc[last] = value


@st.composite
def mutations(draw: st.DrawFn, doc: dict[str, Any], blob_ids: list[str]) -> tuple[Any, ...]:
    paths = [
        (n, part, *p)
        for n, inter in enumerate(doc["interactions"])
        for part in ("request", "response")
        for p in _nodes(inter[part])
    ]
    path = ("interactions", *draw(st.sampled_from(paths)))
    refs = st.sampled_from(blob_ids).flatmap(
        lambda b: st.sampled_from([{"$blob": b}, {"$blob": b, "$json": True}, {"$blob": b, "$chain": 2}])
    )
    value = draw(st.one_of(_VALUES, refs, st.just({"$blob": "0" * 40}), st.just({"$blob": 5})))
    return path, value, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whatever_verify_passes_replay_opens_and_serves(
    recorded: tuple[OpenAI, dict[Path, bytes]], data: st.DataObject
) -> None:
    client, files = recorded
    restore(files)
    store = BlobStore(STORE)
    extra = [
        store.put(gzip.compress(b"not text")),  # valid id, not UTF-8
        store.put(b'{"a": 1, "a": 2}'),  # valid id, a key twice
        store.put(b'{"item": 1, "prev": null}'),  # a chain node of one
        store.put(b"[1, 2"),  # valid id, not JSON
        store.put(zlib.compress(b"x")),
    ]
    doc = json.loads(RUN.read_bytes())
    blob_ids = sorted({p.parent.name + p.name for p in STORE.rglob("*") if p.is_file()} | set(extra))
    path, value, delete, layout = data.draw(mutations(doc, blob_ids))
    if path[-1] in ("seq", "kind", "key") and len(path) == 3:
        return  # the envelope's own fields: keys are opaque hashes verify cannot recompute
    _set(doc, path, value, delete)
    RUN.write_bytes(manifest_json(doc) if layout else json.dumps(doc, indent=1).encode())
    report = verify_paths([RUN])
    if report.ok:
        assert replay_problems(client) == [], f"verify passed {path} = {value!r} (deleted: {delete})"
