"""Replay checks every blob a request needs, chain nodes included, and a broken one is a clear error.

A conversation whose every request repeats the history is recorded through the real
OpenAI SDK against the local server; its blob store is then damaged on disk the way
a partial checkout, a bad merge or a hand edit would leave it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

import cassette
from cassette.cli import main
from cassette.core.canonical import ordered_json
from cassette.core.layout import manifest_json
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer

SYSTEM = "You are a support agent for an online shop. " * 20  # over the blob threshold: a text blob


@dataclass
class Conversation:
    """A recorded cassette of three chat calls, each repeating the history (chains of 4, 6, 8 nodes)."""

    path: Path
    calls: list[list[dict[str, Any]]]
    client: OpenAI

    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.path.read_text())
        return doc

    def save(self, doc: dict[str, Any]) -> None:
        self.path.write_bytes(manifest_json(doc))  # the layout cassette writes: replay opens it lazily

    def chain(self, call: int) -> list[str]:
        """The node ids of call ``call``'s messages chain, last node first."""
        ref = self.doc()["interactions"][call]["request"]["messages"]
        ids = [ref["$blob"]]
        while (prev := json.loads(blob_path(ids[-1]).read_bytes())["prev"]) is not None:
            ids.append(prev["$blob"])
        return ids

    def replay(self, answers: list[str]) -> None:
        """Replay every call in order in one session, appending each answer as it comes."""
        with cassette.using(self.path, mode="replay"):
            for messages in self.calls:
                answers.append(self.ask(messages))

    def ask(self, messages: list[dict[str, Any]]) -> str:
        r = self.client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
        return r.choices[0].message.content or ""


def blob_path(blob_id: str) -> Path:
    return Path(".blobs") / blob_id[:2] / blob_id[2:]


def run_verify(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str]:
    code = main(["verify", str(path)])
    return code, capsys.readouterr().err


@pytest.fixture
def conversation(devserver: DevServer, tmp_path: Path) -> Conversation:
    (tmp_path / "pyproject.toml").write_text("")  # the project root: blobs go to <tmp>/.blobs
    client = OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)
    recorded = Conversation(tmp_path / "c.json", [], cassette.instrument(client))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "I ordered a lamp last week."},
        {"role": "assistant", "content": "Thanks, I can look into that."},
    ]
    with cassette.using(recorded.path, mode="record"):
        for n in range(3):
            messages.append({"role": "user", "content": f"question {n}: where is my order?"})
            recorded.calls.append([dict(m) for m in messages])
            messages.append({"role": "assistant", "content": recorded.ask(messages)})
    assert [i["request"]["messages"]["$chain"] for i in recorded.doc()["interactions"]] == [4, 6, 8]
    answers: list[str] = []
    recorded.replay(answers)  # sound as recorded
    assert len(answers) == 3
    return recorded


# --- a missing or tampered blob deep in a chain -----------------------------------------------------


@pytest.mark.parametrize(
    "which", ["the first node, shared by every call", "a node only the last call adds"], ids=["shared", "new"]
)
def test_replay_fails_on_a_missing_inner_chain_node(
    conversation: Conversation, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    last = conversation.chain(2)
    node = last[-1] if which.startswith("the first") else last[1]  # [1]: the last call's own 7th node
    assert node not in (conversation.chain(0)[0], last[0])  # not a head: the manifest never names it
    blob_path(node).unlink()
    answers: list[str] = []
    with pytest.raises(cassette.MissingBlobError) as caught:
        conversation.replay(answers)
    assert len(answers) == (0 if which.startswith("the first") else 2)  # the calls it does not break replay
    message = str(caught.value)
    assert (
        node in message and str(conversation.path) in message and caught.value.path == str(conversation.path)
    )
    assert "git add the .blobs directory" in message and "re-record" in message

    code, err = run_verify(capsys, conversation.path)
    assert code == 1 and node in err and ".request.messages" in err


def test_replay_fails_on_a_tampered_inner_chain_node(conversation: Conversation) -> None:
    node = conversation.chain(1)[1]  # shared by the second and third calls, named by neither
    blob_path(node).chmod(0o644)
    blob_path(node).write_bytes(blob_path(node).read_bytes() + b"\n")  # still a valid node, another hash
    answers: list[str] = []
    with pytest.raises(cassette.TamperedBlobError, match="does not match its hash") as caught:
        conversation.replay(answers)
    assert answers and len(answers) == 1  # the first call's chain does not reach that node
    assert str(conversation.path) in str(caught.value) and "Restore it from git" in str(caught.value)


def test_replay_fails_on_a_missing_text_blob_inside_a_chain_node(
    conversation: Conversation, capsys: pytest.CaptureFixture[str]
) -> None:
    # the system prompt is a text blob that only the first chain node references, never the manifest
    first = json.loads(blob_path(conversation.chain(0)[-1]).read_bytes())
    prompt = first["item"]["content"]["$blob"]
    assert prompt not in conversation.path.read_text()
    blob_path(prompt).unlink()
    with pytest.raises(cassette.MissingBlobError) as caught:
        conversation.replay([])
    assert prompt in str(caught.value) and str(conversation.path) in str(caught.value)
    assert run_verify(capsys, conversation.path)[0] == 1


def test_a_history_checked_by_an_earlier_call_is_not_read_again(conversation: Conversation) -> None:
    """Each call reads only the chain nodes no earlier call of the session checked: replay stays O(new)."""
    shared = conversation.chain(0)  # all four nodes are in every later call's chain too
    with cassette.using(conversation.path, mode="replay"):
        conversation.ask(conversation.calls[0])
        for node in shared:  # gone from disk after the first call checked them
            blob_path(node).unlink()
        conversation.ask(conversation.calls[1])
        conversation.ask(conversation.calls[2])
    with pytest.raises(cassette.MissingBlobError):  # a new session checks them again
        conversation.replay([])


# --- a chain of the wrong shape -------------------------------------------------------------------


def _break(ref: dict[str, Any], how: str) -> None:
    store = BlobStore(Path(".blobs"))
    node = json.loads(blob_path(ref["$blob"]).read_bytes())
    if how == "node is a list":
        ref["$blob"] = store.put(ordered_json([1, 2]))
    elif how == "node has an extra field":
        ref["$blob"] = store.put(ordered_json({**node, "extra": 1}))
    elif how == "length lies":
        ref["$chain"] = 9
    else:
        prev = {
            "prev is an int": 5,
            "prev is a text reference": {"$blob": node["prev"]["$blob"]},
            "prev names a list": {"$blob": [1, 2], "$json": True},
            "prev names no blob id": {"$blob": "not-a-blob-id", "$json": True},
        }[how]
        ref["$blob"] = store.put(ordered_json({"item": node["item"], "prev": prev}))


@pytest.mark.parametrize(
    ("how", "error", "says"),
    [
        ("node is a list", cassette.TamperedBlobError, "is not a chain node .* it holds list"),
        ("node has an extra field", cassette.TamperedBlobError, "is not a chain node"),
        ("length lies", cassette.TamperedBlobError, "a chain has 8 items, its reference declares 9"),
        ("prev is an int", cassette.InvalidBlobRefError, "a chain node links to 5"),
        ("prev is a text reference", cassette.InvalidBlobRefError, "not to a JSON blob"),
        ("prev names a list", cassette.InvalidBlobRefError, r"invalid blob reference '\[1, 2\]'"),
        ("prev names no blob id", cassette.InvalidBlobRefError, "invalid blob reference 'not-a-blob-id'"),
    ],
)
def test_a_chain_of_the_wrong_shape_is_a_clear_error(
    conversation: Conversation,
    capsys: pytest.CaptureFixture[str],
    how: str,
    error: type[cassette.CassetteError],
    says: str,
) -> None:
    doc = conversation.doc()
    _break(doc["interactions"][2]["request"]["messages"], how)
    conversation.save(doc)
    path = str(conversation.path)

    answers: list[str] = []
    with pytest.raises(error, match=says) as replayed:  # a CassetteError, never a TypeError
        conversation.replay(answers)
    assert len(answers) == 2  # only the third call's chain is broken
    assert replayed.value.path == path and replayed.value.args[0].startswith(path)
    assert "re-record" in str(replayed.value)

    loaded = cassette.load_cassette(conversation.path)
    with pytest.raises(error, match=says) as hydrated:
        loaded.hydrate(loaded.interactions[2].request)
    assert hydrated.value.path == path

    code, err = run_verify(capsys, conversation.path)
    assert code == 1 and "interactions[2].request.messages" in err and "Traceback" not in err


# --- a reference that is not a blob id --------------------------------------------------------------


def test_an_invalid_blob_id_names_the_manifest_and_the_next_step(
    conversation: Conversation, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = conversation.doc()
    doc["interactions"][2]["request"]["messages"] = {"$blob": 123}
    conversation.save(doc)
    path = str(conversation.path)

    loaded = cassette.load_cassette(conversation.path)
    with pytest.raises(cassette.InvalidBlobRefError) as hydrated:
        loaded.hydrate(loaded.interactions[2].request)
    with pytest.raises(cassette.InvalidBlobRefError) as replayed:
        conversation.replay([])
    for caught in (hydrated, replayed):
        message = str(caught.value)
        assert caught.value.path == path and message.startswith(f"{path}: invalid blob reference '123'")
        assert f"restore it from git (git checkout -- {path})" in message and "re-record" in message
        assert ".blobs" not in message  # the store is not where the mistake is

    code, err = run_verify(capsys, conversation.path)
    assert code == 1 and "invalid blob reference '123'" in err


def test_user_data_holding_a_blob_key_is_not_taken_for_a_reference(
    devserver: DevServer, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    messages = [{"role": "user", "content": "hi", "metadata": {"$blob": "not-a-blob-id"}}]
    answers: list[str | None] = []
    for mode in ("record", "replay"):
        with cassette.using(tmp_path / "c.json", mode=mode):
            r = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
            answers.append(r.choices[0].message.content)
    assert answers[0] == answers[1]
    assert '{"$literal": {"$blob": "not-a-blob-id"}}' in (tmp_path / "c.json").read_text()


def test_symlinks_that_stay_inside_the_store_are_still_followed(tmp_path: Path) -> None:
    """Reads skip resolving a blob's full path when nothing below the store is a symlink; one that is
    still resolves as before: inside the store it is read, outside it is refused."""
    (tmp_path / "real").mkdir()
    (tmp_path / ".blobs").symlink_to(tmp_path / "real")  # the store itself is reached through a link
    store = BlobStore(tmp_path / ".blobs")
    inside, outside = store.put(b"inside"), store.put(b"outside")
    moved = tmp_path / "real" / "moved"
    linked = store.path_for(inside)
    linked.rename(moved)
    linked.symlink_to(moved)
    (tmp_path / "secret").write_bytes(b"outside")
    store.path_for(outside).unlink()
    store.path_for(outside).symlink_to(tmp_path / "secret")
    for _ in range(2):  # the second read uses the store's real path kept by the first
        assert store.get(inside) == b"inside"
        with pytest.raises(cassette.TamperedBlobError, match="outside the store"):
            store.get(outside)


# --- what a replay skips checking was checked before ------------------------------------------------


def test_a_request_replay_does_not_check_again_is_one_check_refs_would_pass_unread(
    conversation: Conversation,
) -> None:
    """Serving reads a request's references from the manifest's text and skips `check_refs` only
    when each is a blob it already checked, by `check_refs`' own rules (a chain as long as declared)."""
    from cassette import load_cassette
    from cassette.core.model import holds_refs
    from cassette.store.refs import check_refs

    lazy = load_cassette(conversation.path, lazy=True)
    full = load_cassette(conversation.path)
    verified: dict[str, int] = {}
    skipped = []
    for pos in (0, 1, 2, 2, 1, 0):  # each call served again once every chain was checked
        checked, holds = lazy.served_refs(pos, verified)
        assert holds is holds_refs(full.interactions[pos].response)
        before = dict(verified)
        check_refs(full.interactions[pos].request, full, verified)
        if checked:
            assert verified == before  # nothing it would have checked was new
        skipped.append(checked)
    assert skipped == [False, False, False, True, True, True]

    head = conversation.doc()["interactions"][1]["request"]["messages"]["$blob"]
    assert lazy.served_refs(1, {**verified, head: 5})[0] is False  # checked as a chain of another length
    assert lazy.served_refs(1, {**verified, head: -1})[0] is False  # checked as a plain JSON blob only
    assert lazy.served_refs(1, {})[0] is False
