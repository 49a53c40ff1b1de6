"""The manifest layout (small values on one line) and opening a cassette for replay lazily."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from openai import OpenAI

import cassette
from cassette import load_cassette
from cassette.core.canonical import ordered_json, pretty_json
from cassette.core.layout import MANIFEST_WIDTH, manifest_json
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer

CASSETTE = "tests/cassettes/run.json"
SYSTEM = "You are a careful support agent for an outdoor-gear shop. " * 12


def _tool(name: str, what: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{what} Use it whenever the customer asks about {what.lower()}",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }


TOOLS = [
    _tool("lookup_order", "Return the order, its lines and its payment state."),
    _tool("issue_refund", "Refund an order, in full or in part, to the original payment method."),
    _tool("send_replacement", "Ship a replacement for a damaged or wrong item."),
    _tool("open_ticket", "Open a ticket for a human agent with a summary and a priority."),
]


def _record(srv: DevServer, path: str = CASSETTE, turns: int = 3) -> list[str]:
    """A conversation with tools; returns each call's first tool name or content, to compare on replay."""
    client = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))
    return _converse(client, path, "record", turns)


def _converse(client: OpenAI, path: str, mode: str, turns: int) -> list[str]:
    messages: list[Any] = [{"role": "system", "content": SYSTEM}]
    seen = []
    with cassette.using(path, mode=mode):
        for n in range(turns):
            messages.append({"role": "user", "content": f"order {1000 + n} arrived torn, refund please"})
            r = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            message = r.choices[0].message
            calls = message.tool_calls or []
            seen.append(calls[0].function.name if calls else message.content or "")
            messages.append({"role": "assistant", "content": message.content or "done"})
    return seen


def _replay(srv: DevServer, path: str = CASSETTE, turns: int = 3) -> list[str]:
    client = cassette.instrument(OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0))
    return _converse(client, path, "replay", turns)


def _has(value: Any, key: str) -> bool:
    if isinstance(value, dict):
        return key in value or any(_has(v, key) for v in value.values())
    if isinstance(value, list):
        return any(_has(v, key) for v in value)
    return False


# --- layout ----------------------------------------------------------------------------------------


def test_small_values_sit_on_one_line_and_big_ones_are_expanded() -> None:
    doc = {
        "interactions": [
            {
                "key": "k" * 64,
                "kind": "tool",
                "request": {"arguments": {"order_id": "1"}, "kind": "tool", "name": "lookup_order"},
                "response": {"result": {"lines": ["tent " * 30, "stove"], "paid": True}},
                "seq": 0,
            }
        ],
        "version": 1,
    }
    text = manifest_json(doc).decode()
    assert text == (
        "{\n"
        '  "interactions": [\n'
        "    {\n"
        f'      "key": "{"k" * 64}",\n'
        '      "kind": "tool",\n'
        '      "request": {"arguments": {"order_id": "1"}, "kind": "tool", "name": "lookup_order"},\n'
        '      "response": {\n'
        '        "result": {\n'
        '          "lines": [\n'
        f'            "{"tent " * 30}",\n'
        '            "stove"\n'
        "          ],\n"
        '          "paid": true\n'
        "        }\n"
        "      },\n"
        '      "seq": 0\n'
        "    }\n"
        "  ],\n"
        '  "version": 1\n'
        "}\n"
    )
    assert json.loads(text) == doc
    assert (
        manifest_json({"interactions": [], "version": 1}) == b'{\n  "interactions": [],\n  "version": 1\n}\n'
    )


def test_values_the_fast_encoder_cannot_hold_fall_back_to_the_standard_layout() -> None:
    doc = {"interactions": [], "version": 1, "note": {"big": 2**70}}
    assert json.loads(manifest_json(doc)) == doc


def test_a_recorded_manifest_keeps_one_line_values_within_the_width(devserver: DevServer) -> None:
    _record(devserver)
    text = Path(CASSETTE).read_text()
    for line in text.splitlines():
        stripped = line.strip().rstrip(",")
        one_line_container = stripped[-1:] in "}]" and ("{" in stripped or "[" in stripped)
        if one_line_container and '"$blob"' not in stripped:
            assert len(line.rstrip(",")) <= MANIFEST_WIDTH, line
    doc = json.loads(text)
    first = doc["interactions"][0]
    assert list(first) == ["key", "kind", "request", "response", "seq"]
    assert text.count('"kind": ') == 2 * len(doc["interactions"])  # the envelope's and the request's own


def test_request_history_is_chained_and_response_lists_are_not(devserver: DevServer) -> None:
    _record(devserver, turns=3)
    doc = json.loads(Path(CASSETTE).read_text())
    last = doc["interactions"][-1]
    assert last["request"]["messages"]["$chain"] == 6  # the growing history: one blob per message
    assert last["request"]["tools"]["$chain"] == len(TOOLS)  # shared by every call, stored once
    for inter in doc["interactions"]:
        assert not _has(inter["response"], "$chain")


def _chained(items: list[Any], store: BlobStore) -> dict[str, Any]:
    """``items`` as a hash chain of JSON blobs, as the store writes one: node ``i`` is
    ``{"item": items[i], "prev": <ref to node i-1> | null}``, the reference names the last node."""
    prev: dict[str, Any] | None = None
    for item in items:
        prev = {"$blob": store.put(ordered_json({"item": item, "prev": prev})), "$json": True}
    assert prev is not None
    return {**prev, "$chain": len(items)}


def test_a_response_list_chained_by_an_earlier_release_still_replays(devserver: DevServer) -> None:
    recorded = _record(devserver)
    store = BlobStore(Path("tests/cassettes/.blobs"))
    loaded = load_cassette(CASSETTE)
    doc = orjson.loads(Path(CASSETTE).read_bytes())
    for raw, inter in zip(doc["interactions"], loaded.interactions, strict=True):
        choices = loaded.hydrate(inter.response)["json"]["choices"]
        raw["response"]["json"]["choices"] = _chained(choices, store)
    Path(CASSETTE).write_bytes(pretty_json(doc))  # the two-space layout every earlier release wrote
    assert _has(load_cassette(CASSETTE).interactions[0].response, "$chain")
    assert _replay(devserver) == recorded


# --- lazy opening ---------------------------------------------------------------------------------


def test_opening_for_replay_reads_keys_and_parses_an_interaction_when_used(devserver: DevServer) -> None:
    recorded = _record(devserver)
    full = load_cassette(CASSETTE)
    lazy = load_cassette(CASSETTE, lazy=True)
    assert type(lazy.interactions[0]).__name__ == "_LazyInteraction"
    assert "request" not in vars(lazy.interactions[0])  # not parsed yet
    assert [(i.seq, i.kind, i.key, i.request, i.response, i.extra) for i in lazy.interactions] == [
        (i.seq, i.kind, i.key, i.request, i.response, i.extra) for i in full.interactions
    ]
    assert _replay(devserver) == recorded


def test_the_two_space_layout_of_earlier_releases_opens_lazily_and_replays(devserver: DevServer) -> None:
    recorded = _record(devserver)
    Path(CASSETTE).write_bytes(pretty_json(orjson.loads(Path(CASSETTE).read_bytes())))
    assert type(load_cassette(CASSETTE, lazy=True).interactions[0]).__name__ == "_LazyInteraction"
    assert _replay(devserver) == recorded


@pytest.mark.parametrize(
    "rewrite",
    [
        pytest.param(lambda doc: orjson.dumps(doc), id="compact one line"),
        pytest.param(lambda doc: pretty_json({"comment": "hand-made", **doc}), id="extra top-level field"),
        pytest.param(
            lambda doc: pretty_json(
                {**doc, "interactions": [{"duration": 1, **i} for i in doc["interactions"]]}
            ),
            id="extra field before key",
        ),
        pytest.param(
            lambda doc: pretty_json(doc).replace(b"\n", b"\r\n"),
            id="CRLF line ends",
        ),
        pytest.param(
            # valid JSON whose second interaction opens with a blank line: its separator is not
            # followed by the quote of its first field
            lambda doc: pretty_json(doc).replace(
                b'},\n    {\n      "key"', b'},\n    {\n      \n      "key"', 1
            ),
            id="blank line opening an interaction",
        ),
    ],
)
def test_other_layouts_are_parsed_whole_and_replay(devserver: DevServer, rewrite: Any) -> None:
    recorded = _record(devserver)
    Path(CASSETTE).write_bytes(rewrite(orjson.loads(Path(CASSETTE).read_bytes())))
    assert type(load_cassette(CASSETTE, lazy=True).interactions[0]).__name__ == "Interaction"
    assert _replay(devserver) == recorded


def _break_interaction(n: int, old: bytes, new: bytes) -> None:
    """Replace the first ``old`` inside interaction ``n`` of the manifest (layout kept)."""
    data = Path(CASSETTE).read_bytes()
    starts = [i for i in range(len(data)) if data.startswith(b'\n    {\n      "key"', i)]
    at = data.index(old, starts[n])
    Path(CASSETTE).write_bytes(data[:at] + new + data[at + len(old) :])


def test_a_corrupt_interaction_fails_when_served_naming_the_file_and_the_interaction(
    devserver: DevServer,
) -> None:
    _record(devserver)
    _break_interaction(1, b'"status": 200', b'"status": 200 200')
    with pytest.raises(cassette.CorruptCassetteError) as err:
        _replay(devserver)
    message = str(err.value)
    assert str(Path(CASSETTE).resolve()) in message and "interactions[1]" in message
    assert "re-record" in message
    # the whole-file reader refuses it up front, with its own message
    with pytest.raises(cassette.CorruptCassetteError, match="not valid JSON"):
        load_cassette(CASSETTE)


def test_a_wrong_shape_in_an_interaction_is_the_same_error_lazily(devserver: DevServer) -> None:
    _record(devserver)
    _break_interaction(2, b'"response": {', b'"response": [1], "was": {')
    with pytest.raises(cassette.CassetteShapeError, match=r"interactions\[2\] needs object") as lazy_err:
        _replay(devserver)
    with pytest.raises(cassette.CassetteShapeError) as full_err:
        load_cassette(CASSETTE)
    assert str(full_err.value).split(": ", 1)[1] == str(lazy_err.value).split(": ", 1)[1]


def test_a_key_given_twice_is_refused_when_the_interaction_is_used(devserver: DevServer) -> None:
    _record(devserver)
    _break_interaction(0, b'"seq": 0', b'"key": "' + b"0" * 64 + b'",\n      "seq": 0')
    lazy = load_cassette(CASSETTE, lazy=True)
    with pytest.raises(
        cassette.CassetteShapeError, match=r"interactions\[0\] gives `seq`, `kind` or `key` twice"
    ):
        lazy.interactions[0].request  # noqa: B018


def test_a_bad_seq_is_refused_when_read(devserver: DevServer) -> None:
    _record(devserver)
    _break_interaction(1, b'"seq": 1', b'"seq": "one"')
    lazy = load_cassette(CASSETTE, lazy=True)
    assert lazy.interactions[0].seq == 0
    with pytest.raises(cassette.CassetteShapeError, match=r"interactions\[1\]\.seq is not an integer"):
        lazy.interactions[1].seq  # noqa: B018


@pytest.mark.parametrize(
    ("cut", "error"),
    [
        (lambda data: data[: len(data) // 2], cassette.TruncatedCassetteError),
        (lambda data: data[:-3], cassette.TruncatedCassetteError),
        (lambda data: data.replace(b'"version": 1', b'"version": 9'), cassette.UnsupportedVersionError),
        (lambda data: b"", cassette.TruncatedCassetteError),
    ],
)
def test_whole_file_errors_are_still_raised_when_the_session_starts(
    devserver: DevServer, cut: Any, error: type
) -> None:
    _record(devserver)
    Path(CASSETTE).write_bytes(cut(Path(CASSETTE).read_bytes()))
    with pytest.raises(error):
        cassette.Session(CASSETTE, mode="replay").start()


def test_unused_interactions_are_reported_without_parsing_them(devserver: DevServer) -> None:
    _record(devserver)
    unused = r"3 recorded interaction\(s\) were never used \(#0 llm, #1 llm, #2 llm\)"
    with pytest.warns(cassette.CassetteWarning, match=unused):
        with cassette.using(CASSETTE, mode="replay", unused="warn") as session:
            assert session.cassette is not None
            untouched = session.cassette.interactions
    assert all("request" not in vars(i) for i in untouched)


_calls = {"n": 0}


@cassette.tool
def _poll(job: str) -> dict[str, Any]:
    _calls["n"] += 1
    return {"job": job, "state": f"state-{_calls['n']}"}


def test_repeated_and_single_calls_are_served_in_recorded_order_from_a_lazily_opened_cassette() -> None:
    path = "tests/cassettes/poll.json"
    jobs = ["a", "b", "a", "c", "a", "b"]  # `a` three times, `b` twice, `c` once
    with cassette.using(path, mode="record"):
        recorded = [_poll(j) for j in jobs]
    assert type(load_cassette(path, lazy=True)).__name__ == "_LazyCassette"
    _calls["n"] = 100  # a live call would now answer differently
    miss = pytest.raises(cassette.CassetteMiss, match="recorded only 3 times")
    with miss, cassette.using(path, mode="replay", unused="off") as session:
        served = [_poll(j) for j in ["a", "b", "a"]]
        assert served == [recorded[0], recorded[1], recorded[2]]
        key_a = session.cassette.interactions[0].key if session.cassette else ""
        assert session.recorded(key_a)  # still "recorded" once served
        left = session.unused()
        assert [(i.seq, i.request["arguments"]) for i in left] == [
            (3, {"job": "c"}),
            (4, {"job": "a"}),
            (5, {"job": "b"}),
        ]
        assert [_poll(j) for j in ["c", "a", "b"]] == recorded[3:]
        assert session.unused() == []
        _poll("a")  # a fourth `a`: the miss names the count (and the session re-raises it on exit)


def test_an_interaction_served_before_the_list_is_built_is_the_one_in_the_list() -> None:
    path = "tests/cassettes/poll2.json"
    with cassette.using(path, mode="record"):
        _poll("x"), _poll("y")
    lazy = load_cassette(path, lazy=True)
    first = lazy.item(1)
    assert "request" in vars(first) and first.seq == 1  # parsed when taken
    assert lazy.interactions[1] is first
    assert "request" not in vars(lazy.interactions[0])  # the other is still unparsed
    assert lazy.item(0) is lazy.interactions[0]
    assert [i.key for i in lazy.interactions] == lazy.match_keys()


@cassette.tool
def _echo(text: str) -> dict[str, Any]:
    return {"said": text}


def test_the_response_text_check_never_misses_a_reference(devserver: DevServer) -> None:
    """Serving skips hydration when the response's own text names no `$blob`/`$literal` key."""
    path = "tests/cassettes/mixed-refs.json"
    with cassette.using(path, mode="record"):
        recorded = [_echo("short"), _echo("long " * 2000), _echo("x" * 3)]
    full = load_cassette(path)
    lazy = load_cassette(path, lazy=True)
    from cassette.core.model import holds_refs

    flags = [holds_refs(i.response) for i in full.interactions]
    assert flags == [False, True, False]  # the long answer went to a blob
    assert [lazy.served_refs(i, {})[1] for i in range(3)] == flags
    with cassette.using(path, mode="replay"):
        assert [_echo("short"), _echo("long " * 2000), _echo("x" * 3)] == recorded


@cassette.tool
def _quote(text: str) -> dict[str, Any]:
    return {"said": text, "nested": {"$blob_like": "$blob", "note": '{"$blob": "not a reference"}'}}


def test_a_response_that_merely_mentions_blob_comes_back_as_recorded() -> None:
    path = "tests/cassettes/mentions.json"
    with cassette.using(path, mode="record"):
        live = _quote('the key "$blob" and "$literal" are ours')
    with cassette.using(path, mode="replay"):
        assert _quote('the key "$blob" and "$literal" are ours') == live


_ID = "ab" * 20


def _one_call(tmp_path: Path, request: dict[str, Any], response: dict[str, Any]) -> Path:
    from cassette.core.layout import manifest_json

    item = {"key": "0" * 64, "kind": "llm", "request": request, "response": response, "seq": 0}
    path = tmp_path / "one.json"
    path.write_bytes(manifest_json({"interactions": [item], "version": 1}))
    return path


@pytest.mark.parametrize(
    ("request_", "verified", "cached", "checked"),
    [
        ({"m": {"$blob": _ID, "$json": True}}, {_ID: -1}, False, True),
        ({"m": {"$blob": _ID, "$json": True}}, {}, False, False),
        ({"m": {"$blob": _ID, "$json": True}}, {_ID: 0}, False, False),  # checked as text, not parsed
        ({"m": {"$blob": _ID}}, {_ID: 0}, False, True),
        ({"m": {"$blob": _ID}}, {}, True, True),  # read for hydration already
        ({"m": {"$blob": _ID}}, {}, False, False),
        ({"m": {"$blob": _ID, "$json": True, "$chain": 3}}, {_ID: 3}, False, True),
        ({"m": {"$blob": _ID, "$json": True, "$chain": 3}}, {_ID: 2}, False, False),
        ({"m": {"$blob": _ID, "$json": True, "$chain": 3}}, {_ID: -1}, False, False),
        ({"m": [{"$blob": _ID, "$json": True}, {"$blob": "cd" * 20}]}, {_ID: -1}, False, False),
        ({"m": {"$blob": _ID, "$json": True, "extra": 1}}, {_ID: -1}, False, False),  # check_refs refuses it
        ({"m": "costs $5, not $blob"}, {}, False, True),
        ({"m": "$blob"}, {}, False, False),  # a string that only looks like the key: the full check decides
    ],
)
def test_the_request_text_check_skips_only_what_check_refs_passed(
    tmp_path: Path, request_: dict[str, Any], verified: dict[str, int], cached: bool, checked: bool
) -> None:
    lazy = load_cassette(_one_call(tmp_path, request_, {"status": 200, "json": {"ok": True}}), lazy=True)
    if cached:
        lazy.blob_cache[_ID] = (False, "text", 4)
    assert lazy.served_refs(0, verified) == (checked, False)


@pytest.mark.parametrize(
    ("request_", "response", "expected"),
    [
        ({"m": {"$literal": {"$blob": _ID}}}, {"json": {}}, (False, True)),  # user data, not a ref
        ({"m": "bell \u0007"}, {"json": {}}, (False, True)),  # written \\u0007: a key could be escaped
        ({"m": 1}, {"json": {"$literal": {"$blob": 1}}}, (False, True)),
        ({"m": 1}, {"events": [{"$blob": _ID}]}, (False, True)),  # hydrated; the request checked in full
        ({"m": 1}, {"json": {"price": "$5"}}, (True, False)),
    ],
)
def test_what_the_text_check_cannot_vouch_for_goes_to_the_full_check(
    tmp_path: Path, request_: dict[str, Any], response: dict[str, Any], expected: tuple[bool, bool]
) -> None:
    lazy = load_cassette(_one_call(tmp_path, request_, response), lazy=True)
    assert lazy.served_refs(0, {_ID: -1}) == expected


@pytest.mark.parametrize("field", ["response", "request"])
def test_a_field_given_twice_is_checked_as_the_parser_reads_it(tmp_path: Path, field: str) -> None:
    """JSON keeps the last of a field given twice: what the text check reads covers that one too."""
    path = _one_call(tmp_path, {"m": 1}, {"json": {"plain": True}})
    value = {"x": {"$blob": _ID, "$json": True}}
    again = f'      "{field}": {json.dumps(value)},\n      "seq": 0'
    path.write_text(path.read_text().replace('      "seq": 0', again))
    lazy = load_cassette(path, lazy=True)
    assert getattr(lazy.item(0), field) == value  # the parser keeps the last
    # after the response's line: the request is checked in full, the response hydrated
    assert lazy.served_refs(0, {}) == (False, True)
