"""The cassette format: canonical layout, content-addressed blobs, and every bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from openai import OpenAI

import cassette
from cassette.store.blobs import BlobStore, git_blob_id
from cassette.testing.devserver import DevServer

CASSETTE = "tests/cassettes/run.json"
LONG = "You are a careful support agent. " * 40


def _record(srv: DevServer, path: str = CASSETTE, mode: str = "record", turns: int = 2) -> None:
    client = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))
    messages = [{"role": "system", "content": LONG}]
    with cassette.using(path, mode=mode):
        for n in range(turns):
            messages.append({"role": "user", "content": f"question {n}"})
            r = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            messages.append({"role": "assistant", "content": r.choices[0].message.content or ""})


def test_manifest_is_readable_versioned_and_sorted(devserver: DevServer) -> None:
    _record(devserver)
    doc = json.loads(Path(CASSETTE).read_text())
    assert doc["version"] == 1
    assert list(doc) == sorted(doc)
    first = doc["interactions"][0]
    assert list(first) == sorted(first) == ["key", "kind", "request", "response", "seq"]
    assert [i["seq"] for i in doc["interactions"]] == [0, 1]
    assert "created_at" not in Path(CASSETTE).read_text()  # no timestamps of ours


def test_rerecording_identical_traffic_is_byte_identical() -> None:
    with DevServer(seed=3) as srv:
        _record(srv)
    first = Path(CASSETTE).read_bytes()
    with DevServer(seed=3) as srv:
        _record(srv)
    assert Path(CASSETTE).read_bytes() == first


def test_large_payloads_go_to_blobs_named_by_git_blob_id(devserver: DevServer) -> None:
    _record(devserver)
    text = Path(CASSETTE).read_text()
    assert LONG not in text and '"$blob"' in text
    store = Path("tests/cassettes/.blobs")
    blob_id = git_blob_id(LONG.encode())
    blob = store / blob_id[:2] / blob_id[2:]
    assert blob.read_bytes() == LONG.encode()
    if shutil.which("git"):
        out = subprocess.run(["git", "hash-object", str(blob)], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == blob_id


def test_a_repeated_system_prompt_is_stored_once(devserver: DevServer) -> None:
    _record(devserver, "tests/cassettes/a.json", turns=3)
    _record(devserver, "tests/cassettes/b.json", turns=3)
    blobs = [p for p in Path("tests/cassettes/.blobs").rglob("*") if p.is_file()]
    assert sum(1 for p in blobs if p.read_bytes() == LONG.encode()) == 1


def test_blob_writes_are_idempotent(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "store")
    a = store.put(b"x" * 1000)
    b = store.put(b"x" * 1000)
    assert a == b and store.get(a) == b"x" * 1000
    assert not list((tmp_path / "store").rglob("*.tmp"))


def test_hydrated_replay_reads_blobs_back(devserver: DevServer) -> None:
    _record(devserver)
    loaded = cassette.load_cassette(CASSETTE)
    request = loaded.hydrate(loaded.interactions[0].request)
    assert request["messages"][0]["content"] == LONG


def test_user_data_that_looks_like_a_blob_reference_round_trips(tmp_path: Path) -> None:
    from cassette import Cassette, Interaction
    from cassette.store.cassettes import save_cassette

    path = tmp_path / "c.json"
    weird = {"result": {"$blob": "not-a-ref", "other": 1}}
    save_cassette(
        Cassette(path, [Interaction(0, "tool", "k", {"kind": "tool"}, weird)], tmp_path / "s"), path, 8
    )
    loaded = cassette.load_cassette(path, tmp_path / "s")
    assert loaded.hydrate(loaded.interactions[0].response) == weird


# --- bad input: each a distinct error naming the file and the next step ---------------------------


def _write(text: str | bytes) -> Path:
    path = Path(CASSETTE)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _replay_error(path: Path) -> cassette.CassetteError:
    with pytest.raises(cassette.CassetteError) as err, cassette.using(path, mode="replay"):
        pass
    return err.value


@pytest.mark.parametrize(
    ("content", "error", "hint"),
    [
        ('{"version": 1, "interactions": [{"seq": 0,', cassette.TruncatedCassetteError, "truncated"),
        ("", cassette.TruncatedCassetteError, "empty"),
        ('{"version": 1, "interactions": [}', cassette.CorruptCassetteError, "not valid JSON"),
        (b'{"version": 1, "interactions": ["\xff\xfe"]}', cassette.CorruptCassetteError, "UTF-8"),
        ("[1, 2, 3]", cassette.CassetteShapeError, "top level is a list"),
        ('{"interactions": []}', cassette.CassetteShapeError, "version"),
        ('{"version": 1, "interactions": [{"seq": "0"}]}', cassette.CassetteShapeError, "seq"),
        ('{"version": 1, "entries": []}', cassette.CassetteShapeError, "cassette import"),
        ('{"version": 99, "interactions": []}', cassette.UnsupportedVersionError, "upgrade cassette"),
        ('{"version": 0, "interactions": []}', cassette.UnsupportedVersionError, "no release"),
    ],
)
def test_bad_manifests_raise_specific_errors(content: str | bytes, error: type, hint: str) -> None:
    path = _write(content)
    err = _replay_error(path)
    assert type(err) is error
    assert str(path) in str(err) and hint in str(err)
    assert isinstance(err, cassette.CassetteFormatError)


def _recorded_blob(devserver: DevServer) -> Path:
    _record(devserver)
    blob_id = git_blob_id(LONG.encode())
    return Path("tests/cassettes/.blobs") / blob_id[:2] / blob_id[2:]


def _replay_once() -> None:
    client = cassette.instrument(OpenAI(base_url="http://127.0.0.1:9", api_key="sk-test", max_retries=0))
    with cassette.using(CASSETTE, mode="replay"):
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": LONG}, {"role": "user", "content": "question 0"}],
        )


def test_missing_blob(devserver: DevServer) -> None:
    _recorded_blob(devserver).unlink()
    with pytest.raises(cassette.MissingBlobError) as err:
        _replay_once()
    assert "run.json" in str(err.value) and "git add" in str(err.value)


def test_tampered_blob(devserver: DevServer) -> None:
    blob = _recorded_blob(devserver)
    blob.chmod(0o644)
    blob.write_bytes(b"You are a careless agent.")
    with pytest.raises(cassette.TamperedBlobError, match="does not match its hash"):
        _replay_once()


def test_invalid_blob_reference_cannot_escape_the_store(tmp_path: Path) -> None:
    path = _write(
        '{"version": 1, "interactions": [{"seq": 0, "kind": "tool", "key": "k", '
        '"request": {}, "response": {"result": {"$blob": "../../../etc/passwd"}}}]}'
    )
    loaded = cassette.load_cassette(path)
    with pytest.raises(cassette.InvalidBlobRefError, match="40 lower-case hex"):
        loaded.hydrate(loaded.interactions[0].response)


def test_symlinked_blob_pointing_outside_the_store_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"top secret")
    blob_id = git_blob_id(b"top secret")
    store = tmp_path / "tests/cassettes/.blobs"
    (store / blob_id[:2]).mkdir(parents=True)
    (store / blob_id[:2] / blob_id[2:]).symlink_to(outside)
    with pytest.raises(cassette.TamperedBlobError, match="outside the store"):
        BlobStore(store).get(blob_id)


def _conversation(srv: DevServer, turns: int, path: str) -> None:
    client = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))
    messages: list[dict[str, object]] = [{"role": "system", "content": LONG}]
    with cassette.using(path, mode="record"):
        for n in range(turns):
            messages.append({"role": "user", "content": f"question {n}: where is my order and the refund?"})
            r = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            messages.append(r.choices[0].message.model_dump(exclude_none=True))


def _bytes_on_disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_a_growing_conversation_costs_linear_bytes_not_quadratic(tmp_path: Path) -> None:
    sizes = {}
    with DevServer(seed=5) as srv:
        for turns in (10, 40):
            root = tmp_path / f"t{turns}"
            _conversation(srv, turns, str(root / "cassettes/conv.json"))
            sizes[turns] = _bytes_on_disk(root)
    # 4x the turns: quadratic storage would be ~16x; chained history keeps it near 4x
    assert sizes[40] < 6 * sizes[10], sizes
    doc = json.loads((tmp_path / "t40/cassettes/conv.json").read_text())
    assert doc["interactions"][-1]["request"]["messages"]["$chain"] == 80


def test_chained_history_replays_and_a_broken_chain_is_a_clear_error(devserver: DevServer) -> None:
    _conversation(devserver, 4, CASSETTE)
    loaded = cassette.load_cassette(CASSETTE)
    messages = loaded.hydrate(loaded.interactions[-1].request)["messages"]
    assert [m["role"] for m in messages][:3] == ["system", "user", "assistant"] and len(messages) == 8
    doc = json.loads(Path(CASSETTE).read_text())
    doc["interactions"][-1]["request"]["messages"]["$chain"] = 3  # lies about its length
    Path(CASSETTE).write_text(json.dumps(doc))
    broken = cassette.load_cassette(CASSETTE)
    with pytest.raises(cassette.TamperedBlobError, match="longer than the 3 items"):
        broken.hydrate(broken.interactions[-1].request)


@pytest.mark.parametrize("size", [0, 1, 700, 8192, 8193, 100_000])
def test_sha256_hex_is_sha256_whatever_the_size(size: int) -> None:
    import hashlib

    from cassette.core.canonical import sha256_hex

    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
