"""The fast replay index (cassette/store/lazy_index.py) against a full parse.

Its layout contract: every manifest the writer produces is indexed exactly as a full parse reads
it, and any other layout falls back to the full parse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cassette
from cassette import Interaction
from cassette.core.canonical import request_key
from cassette.store.blobs import BlobStore
from cassette.store.cassettes import manifest_bytes
from cassette.store.lazy_index import scan_lazy
from cassette.store.manifest import parse_manifest

# JSON values as a recorded call holds them: text with newlines, quotes and non-ASCII (the bytes a
# separator could be mistaken for), numbers, nesting
TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40
) | st.sampled_from(['\n    },\n    {\n      "', '"key": "', "\\n    }", "</script>", "$blob", "\u2028"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
KIND = st.sampled_from(["llm", "tool", "http"])
EXTRA = st.dictionaries(st.sampled_from(["redacted_key", "parallel", "note", "zz"]), JSON, max_size=2)


@st.composite
def interactions(draw: Any) -> list[Interaction]:
    out = []
    for seq in range(draw(st.integers(1, 6))):
        request = {"kind": draw(KIND), "body": draw(JSON)}
        response = {"json": draw(JSON)} if draw(st.booleans()) else {"result": draw(JSON)}
        extra = draw(EXTRA)
        if "redacted_key" in extra:
            extra["redacted_key"] = request_key({"r": extra["redacted_key"]})
        out.append(Interaction(seq, request["kind"], request_key(request), request, response, extra))
    return out


def _same(lazy: cassette.Cassette, full: cassette.Cassette) -> None:
    assert lazy.match_keys() == full.match_keys()
    assert [lazy.item(i).to_json() for i in range(len(full.interactions))] == [
        i.to_json() for i in full.interactions
    ]
    assert [i.to_json() for i in lazy.interactions] == [i.to_json() for i in full.interactions]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=interactions(), threshold=st.sampled_from([1, 64, 10_000]))
def test_every_manifest_the_writer_produces_is_indexed_as_a_full_parse_reads_it(
    tmp_path: Path, items: list[Interaction], threshold: int
) -> None:
    path = tmp_path / "c.json"
    store = cassette.Cassette(path=path, interactions=items, store=tmp_path / ".blobs")
    data = manifest_bytes(store, BlobStore(tmp_path / ".blobs"), threshold)
    lazy = scan_lazy(data, path, tmp_path / ".blobs")
    assert lazy is not None, "the writer's own layout must take the fast path"
    full = parse_manifest(data, path, tmp_path / ".blobs")
    _same(lazy, full)
    for i in range(len(items)):  # and the blobs resolve the same through either
        assert lazy.hydrated(lazy.item(i)).to_json() == full.hydrated(full.interactions[i]).to_json()


def _relayouts(doc: dict[str, Any]) -> list[bytes]:
    """The same manifest in layouts the writer never produces."""
    return [
        json.dumps(doc).encode(),  # compact
        json.dumps(doc, indent=4).encode(),  # another indent
        json.dumps({"version": 1, "interactions": doc["interactions"]}, indent=2).encode(),  # version first
        json.dumps({**doc, "meta": {"x": 1}}, indent=2, sort_keys=True).encode(),  # an extra top-level field
        json.dumps(
            {"interactions": [dict(reversed(list(i.items()))) for i in doc["interactions"]], "version": 1},
            indent=2,
        ).encode(),  # fields unsorted
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=interactions())
def test_any_other_layout_falls_back_to_the_full_parse(tmp_path: Path, items: list[Interaction]) -> None:
    path = tmp_path / "c.json"
    data = manifest_bytes(cassette.Cassette(path=path, interactions=items), BlobStore(tmp_path / ".b"), 10**9)
    doc = json.loads(data)
    for other in _relayouts(doc):
        lazy = scan_lazy(other, path, tmp_path / ".b")
        full = parse_manifest(other, path, tmp_path / ".b")
        assert lazy is None, "a layout the writer never produces must not take the fast path"
        path.write_bytes(other)
        opened = cassette.load_cassette(path, tmp_path / ".b", lazy=True)
        _same(opened, full)
