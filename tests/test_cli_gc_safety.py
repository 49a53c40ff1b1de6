"""`cassette gc` never deletes a blob that a cassette sharing the store still needs.

A blob store is shared by every cassette that uses it, so `cassette gc DIR` must
count the references of cassettes outside DIR too. Cassettes are recorded with the
real OpenAI SDK against the local dev server, then cleaned with the real command.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from openai import OpenAI

import cassette
from cassette.cli import main
from cassette.maintenance.hygiene import plan_gc
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer
from tests.agent_helpers import run_agent

STORE = Path("tests/cassettes/.blobs")
A = Path("tests/cassettes/a/x.json")
B = Path("tests/cassettes/b/y.json")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def client(devserver: DevServer) -> OpenAI:
    return cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))


def record(devserver: DevServer, path: Path, question: str) -> str:
    with cassette.using(path, mode="record"):
        return run_agent(client(devserver), question)


def replay(devserver: DevServer, path: Path, question: str) -> str:
    with cassette.using(path, mode="replay"):
        return run_agent(client(devserver), question)


def files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file())


def age_blobs(store: Path) -> None:
    """Make every blob a day old: gc keeps unreferenced blobs younger than its grace period."""
    then = time.time() - 86400
    for p in files(store):
        os.utime(p, (then, then))


@pytest.fixture
def two_dirs(devserver: DevServer) -> dict[Path, tuple[str, str]]:
    """Two agent runs in two sub-directories of the cassette dir, sharing tests/cassettes/.blobs."""
    Path("pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "tests/cassettes"\n')
    runs = {A: "My card was charged twice for order A-1", B: "Where is my order B-2? It is late."}
    return {path: (question, record(devserver, path, question)) for path, question in runs.items()}


def test_gc_of_a_sub_directory_keeps_the_blobs_other_cassettes_use(
    two_dirs: dict[Path, tuple[str, str]], devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    store = BlobStore(STORE)
    orphan = store.path_for(store.put(b"a prompt no cassette uses any more " * 20))
    age_blobs(STORE)
    # the hazard: counted from tests/cassettes/a alone, the blobs only b/y.json uses look unreferenced
    assert plan_gc(A.parent, STORE).blobs
    before = files(STORE)

    code, out, _ = run_cli(capsys, "gc", str(A.parent))
    assert code == 0
    assert f"would remove unreferenced blob {orphan.resolve()}" in out
    assert "would remove 1 blob(s)" in out
    assert f"that cassettes outside {A.parent} still use" in out
    assert files(STORE) == before  # a dry run

    code, out, _ = run_cli(capsys, "gc", str(A.parent), "--apply")
    assert code == 0 and "removed 1 blob(s)" in out
    assert not orphan.exists()
    assert files(STORE) == [p for p in before if p != orphan]

    code, out, err = run_cli(capsys, "verify")
    assert code == 0, err
    assert out.startswith("verified 2 cassette(s)")
    for path, (question, answer) in two_dirs.items():  # both still replay, offline
        assert replay(devserver, path, question) == answer


def test_gc_refuses_while_a_cassette_sharing_the_store_is_unreadable(
    two_dirs: dict[Path, tuple[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    B.write_text('{"version": 1, "interactions": [')  # truncated: its references are unknown
    age_blobs(STORE)
    before = files(STORE)
    code, out, err = run_cli(capsys, "gc", str(A.parent), "--apply")
    assert code == 2 and out == ""
    assert err.startswith("cassette gc: error: cannot collect garbage while ")
    assert str(B.resolve()) in err and "shares the blob store" in err
    assert files(STORE) == before


def test_a_configured_store_counts_cassettes_anywhere_in_the_project(
    devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "tests/cassettes"\nstore = "blobs"\n')
    inside, outside = Path("tests/cassettes/x.json"), Path("evals/z.json")
    record(devserver, inside, "My card was charged twice for order A-1")
    answer = record(devserver, outside, "Where is my order B-2? It is late.")
    assert not Path("evals/.blobs").exists()  # z.json uses the configured store too
    # other JSON of the project is not a cassette: it neither counts nor stops gc
    Path("package.json").write_text('{"name": "app"}')
    Path("evals/fixtures").mkdir()
    Path("evals/fixtures/broken.json").write_text("{not json")
    age_blobs(Path("blobs"))
    assert plan_gc(inside.parent, Path("blobs")).blobs  # what the cassette dir alone would drop
    before = files(Path("blobs"))

    code, out, err = run_cli(capsys, "gc", "--apply")
    assert code == 0, err
    assert "nothing to remove" in out
    assert files(Path("blobs")) == before
    assert run_cli(capsys, "verify", str(inside), str(outside))[0] == 0
    assert replay(devserver, outside, "Where is my order B-2? It is late.") == answer


def test_a_store_found_beside_the_cassettes_counts_its_sibling_directories(
    devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("pyproject.toml").write_text("")  # the project root; cassette_dir is tests/cassettes
    Path("evals/.blobs").mkdir(parents=True)  # the nearest .blobs of every cassette under evals/
    one, two = Path("evals/one/p.json"), Path("evals/two/q.json")
    record(devserver, one, "My card was charged twice for order A-1")
    answer = record(devserver, two, "Where is my order B-2? It is late.")
    before = files(Path("evals/.blobs"))

    code, out, _ = run_cli(capsys, "gc", "evals/one", "--apply")
    assert code == 0 and "nothing to remove" in out
    assert files(Path("evals/.blobs")) == before
    assert replay(devserver, two, "Where is my order B-2? It is late.") == answer


def test_gc_with_a_store_that_is_not_there_is_an_input_error(
    two_dirs: dict[Path, tuple[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "gc", "--store", "no/such/.blobs")
    assert code == 2 and out == ""
    assert err == (
        "cassette gc: error: no blob store at no/such/.blobs: the path does not exist. Pass the store "
        "directory (e.g. tests/cassettes/.blobs), or leave out --store to clean the one the cassettes use.\n"
    )
    code, _, err = run_cli(capsys, "gc", "--store", str(A), "--apply")
    assert code == 2 and f"no blob store at {A}: the path is not a directory" in err
    assert A.is_file()
