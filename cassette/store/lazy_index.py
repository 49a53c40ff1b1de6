"""The fast replay index: a manifest's interactions found by their bytes, each parsed when served.

Replay needs only each interaction's key, kind and place to build its index. This module cuts a
manifest at its interaction boundaries with ``bytes.find`` instead of parsing it whole, and
parses one interaction's JSON when it is first served or inspected.

**The layout contract it relies on** (what `cassette.core.layout.manifest_json` writes, and
nothing else is assumed):

- the file starts ``{\n  "interactions": [\n    {\n      "`` and ends
  ``\n    }\n  ],\n  "version": 1\n}`` (with or without the final newline): no other top-level field;
- consecutive interactions are separated by exactly ``\n    },\n    {\n      "``, which valid JSON
  in this layout holds nowhere else (a raw newline cannot sit inside a string, and nothing else
  is indented by four);
- each interaction's fields are sorted, one per line at an indent of six, so it opens with
  ``"key": "<64 characters>",`` then ``"kind": "<llm|tool|http>",``.

`scan_lazy` returns ``None`` for any file that breaks the contract (hand-written, compact,
re-indented, extra top-level fields), and the caller parses it whole. The property test in
``tests/test_lazy_index.py`` checks both halves: every manifest the writer produces is indexed
exactly as a full parse reads it, and every other layout falls back.
"""

from __future__ import annotations

import gc
from functools import cached_property
from itertools import repeat
from operator import getitem
from pathlib import Path
from typing import Any, cast

import orjson

from cassette.core.canonical import loads
from cassette.core.model import KINDS, Cassette, Interaction
from cassette.errors import (
    CorruptCassetteError,
)
from cassette.store.blobs import default_store_for
from cassette.store.manifest import _read_item, _shape_error
from cassette.store.refs import StoredCassette, _ref_known

_LAZY_HEAD = b'{\n  "interactions": [\n    {\n      "'
_LAZY_TAILS = (b'\n    }\n  ],\n  "version": 1\n}\n', b'\n    }\n  ],\n  "version": 1\n}')
# In valid JSON of this layout only the end of one interaction and the start of the next read so:
# raw newlines cannot sit inside strings, and nothing else is indented by four.
_LAZY_SEP = b'\n    },\n    {\n      "'
_LAZY_KEY = b'key": "'  # each piece starts so, then 64 characters of key, then `kind`
_LAZY_SEQ = b'\n      "seq": '
# the bytes after the key: its closing quote, `kind`, and the start of the next field (`request`, or
# `redacted_key` in a call whose request held a secret), cut to one length for every kind
_LAZY_KINDS = {(b'",\n      "kind": "' + k.encode() + b'",\n      "')[:30]: k for k in KINDS}
_LAZY_FIELD = b'\n      "'  # an interaction's own field starts a line at this indent (nothing else does)
_LAZY_RESPONSE = _LAZY_FIELD + b'response": '
_HEAD_LEN = 109  # an interaction's head: its key and kind, from just after its first '"'
# The scan looks for the separator less its last byte, the '"' that opens the first field (a needle
# ending in a space is found ~18% faster in this text), and takes each head from that quote on.
_LAZY_FIND = _LAZY_SEP[:-1]
_SCAN_PREFIX, _SCAN_KEY, _SCAN_KIND = b'"' + _LAZY_KEY, slice(8, 72), slice(72, 102)
_SEP_LEN = len(_LAZY_SEP)


# An interaction this large (bytes of JSON) is parsed with the collector paused: its thousands of new
# objects would set off collections that find nothing. A smaller one is not worth the calls.
_PAUSE_GC_OVER = 64 * 1024


class _LazySource:
    """A manifest's bytes, shared by its lazy interactions, and where its last interaction ends.

    An interaction is known by where its fields start (``at``, just after its '{"') and end
    (``end``, the newline before its '}'): the next one's start less the separator, or the
    end of the list for the last one.
    """

    __slots__ = ("data", "end", "path")

    def __init__(self, data: bytes, end: int, path: Path) -> None:
        self.data = data
        self.end = end
        self.path = path

    def seq(self, at: int, end: int) -> int | None:
        """The ``seq`` of the interaction at ``at`` read from its own line, or None (then parse it)."""
        seq_at = self.data.rfind(_LAZY_SEQ, at, end)
        text = self.data[seq_at + len(_LAZY_SEQ) : end]  # the last field, on its own line
        return int(text) if seq_at >= 0 and text.isdigit() and len(text) <= 18 else None

    def parse(self, at: int, end: int, i: int, key: str, kind: str, seq: int | None = None) -> Interaction:
        """Interaction ``i``, checked against the key and kind the scan read."""
        # the object itself, braces included: '{\n      "' before `at`, '\n    }' after its fields
        text = memoryview(self.data)[at - 9 : end + 6]
        # no cycles are built (see parse_manifest): a large one is parsed with the collector paused
        paused = len(text) > _PAUSE_GC_OVER and gc.isenabled()
        if paused:
            gc.disable()
        try:
            try:
                item = orjson.loads(text)  # the manifest was expanded whole when opened: plain JSON here
            except orjson.JSONDecodeError:
                item = loads(text)  # integers beyond 64 bits, or the error
        except (ValueError, RecursionError) as exc:
            raise CorruptCassetteError(
                f"{self.path}: interactions[{i}] is not valid JSON ({exc}). "
                "Restore the file from git (git checkout -- <file>) or re-record it.",
                path=self.path,
            ) from None
        finally:
            if paused:
                gc.enable()
        parsed = _read_item(item, i, self.path)
        if (parsed.kind, parsed.key) != (kind, key) or (seq is not None and parsed.seq != seq):
            # the scan and the parser read different values: a field given twice (hand-edited)
            raise _shape_error(self.path, f"interactions[{i}] gives `seq`, `kind` or `key` twice")
        return parsed


class _LazyInteraction(Interaction):
    """An interaction known by its key and kind; the rest is read from the manifest on first use.

    ``seq``, ``request``, ``response`` and ``extra`` are missing from the instance until
    then: reading ``seq`` reads its line, reading any other parses the interaction's JSON
    (once), so a bad interaction raises the same `CassetteError` the whole-file parse
    would, when it is used.
    """

    def __init__(self, key: str, kind: str, source: _LazySource, at: int, end: int, i: int) -> None:
        self.key = key
        self.kind = kind
        self._source = source
        self._at = at
        self._end = end
        self._i = i

    def __getattr__(self, name: str) -> Any:
        if name not in ("seq", "request", "response", "extra"):
            raise AttributeError(name)
        source, at = self._source, self._at
        if name == "seq":
            seq = source.seq(at, self._end)
            if seq is not None:
                self.seq = seq
                return seq
        parsed = source.parse(at, self._end, self._i, self.key, self.kind, self.__dict__.get("seq"))
        self.__dict__.update(
            seq=parsed.seq, request=parsed.request, response=parsed.response, extra=parsed.extra
        )
        return self.__dict__[name]


class _LazyCassette(StoredCassette):
    """A manifest opened for replay: each interaction's key, kind and place, nothing parsed yet.

    `item` parses one interaction when it is served. ``interactions``, asked for by
    anything else (a miss being explained, `unused`, a report), is built on first use
    as `_LazyInteraction` s, each parsed only when read.
    """

    def __init__(
        self,
        path: Path,
        store: Path,
        source: _LazySource,
        keys: list[str],
        kinds: list[str],
        starts: list[int],
    ) -> None:
        super().__init__(path=path, store=store)
        del self.interactions  # built when first asked for
        self._source, self._keys, self._kinds, self._starts = source, keys, kinds, starts
        self._items: dict[int, Interaction] = {}

    # a property, not __getattr__: a class with __getattr__ slows every attribute read of its instances
    @cached_property
    def interactions(self) -> list[Interaction]:  # type: ignore[override]
        source, items = self._source, self._items
        built = [
            items.get(i) or _LazyInteraction(key, kind, source, at, self._end(i), i)
            for i, (key, kind, at) in enumerate(zip(self._keys, self._kinds, self._starts, strict=True))
        ]
        return built

    def match_keys(self) -> list[str]:
        return self._keys

    def redacted_keys(self) -> dict[str, list[int]]:
        if "interactions" not in self.__dict__ and b'"redacted_key"' not in self._source.data:
            return {}  # no request of this cassette held a secret: nothing to parse
        return super().redacted_keys()

    def served_refs(self, i: int, verified: dict[str, int]) -> tuple[bool, bool]:
        """`Cassette.served_refs`, read from interaction ``i``'s text (nothing parsed or re-encoded).

        Its fields sit one per line at this indent: the request's text runs from the head to
        the response's line, the response's from there on. A blob reference or ``$literal`` is
        a key ``"$blob"`` / ``"$literal"`` (a string merely holding those words is written
        escaped, ``\\"$blob\\"``): every ``$`` is looked at, found at C speed. Text holding a
        ``\\u`` escape could spell either key otherwise, so it is left to the full check; so is a
        request whose reference comes after the response's line (a field given twice).
        """
        if "interactions" in self.__dict__:
            return super().served_refs(i, verified)
        at, end = self._starts[i], self._end(i)
        data = self._source.data
        find = data.find
        response = find(_LAZY_RESPONSE, at + _HEAD_LEN, end)
        escape = find(b"\\", at, end)  # one byte: found at C speed; most interactions have none
        if response < 0 or (escape >= 0 and find(b"\\u", escape, end) >= 0):
            return False, True  # not where this layout puts it, or a key may be written escaped
        checked, holds = True, False
        dollar = find(b"$", at, end)
        while dollar >= 0:
            if data[dollar - 1] == 0x22:  # a string starts with it: a key, or a value such as "$5"
                if data.startswith(b'$blob"', dollar):  # a "$blob" key
                    if dollar > response:  # the response's own (hydrated, which checks it), or a
                        checked, holds = False, True  # request given again after it: the full check
                    elif checked:
                        past = _ref_known(data, dollar - 1, response, verified, self.blob_cache)
                        if past:
                            dollar = past - 1  # its "$json" and "$chain" keys are its own
                        else:
                            checked = False
                elif data.startswith(b'$literal"', dollar):
                    return False, True
            dollar = find(b"$", dollar + 1, end)
        return checked, holds

    def _end(self, i: int) -> int:
        """Where interaction ``i``'s fields end: where the separator before the next one starts."""
        starts = self._starts
        return starts[i + 1] - _SEP_LEN if i + 1 < len(starts) else self._source.end

    def _parse(self, i: int) -> Interaction:
        return self._source.parse(self._starts[i], self._end(i), i, self._keys[i], self._kinds[i])

    def release(self, i: int) -> None:
        # a replay serves each call once: kept, every parsed response would stay alive to the end,
        # and the collector would walk them all again and again (the floor's objects die at once)
        self._items.pop(i, None)

    def take(self, i: int) -> Interaction:
        built = self.__dict__.get("interactions")
        if built is not None:
            self._items.pop(i, None)
            return built[i]
        inter = self._items.pop(i, None)
        if inter is None:  # parsed for serving only: not kept
            inter = self._parse(i)
        return inter

    def item(self, i: int) -> Interaction:
        built = self.__dict__.get("interactions")
        if built is not None:
            return built[i]
        inter = self._items.get(i)
        if inter is None:
            inter = self._parse(i)
            self._items[i] = inter
        return inter


def scan_lazy(data: bytes, path: Path, store: Path | None) -> Cassette | None:
    """A `_LazyCassette` when ``data`` is in the layout we write, else None."""
    if not data.startswith(_LAZY_HEAD):
        return None
    for tail in _LAZY_TAILS:
        if data.endswith(tail):
            break
    else:
        return None
    end = len(data) - len(tail)
    # one pass over the bytes, copying only each interaction's first line or two: where its fields
    # start (just after '{"') and its head, which holds the key and kind; an interaction is at
    # least its key and kind long
    find, step, at = data.find, len(_LAZY_SEP), len(_LAZY_HEAD)
    starts, heads = [at], [data[at - 1 : at + _HEAD_LEN]]
    add_start, add_head = starts.append, heads.append
    while (at := find(_LAZY_FIND, at + 100, end)) >= 0:
        at += step
        add_start(at)
        add_head(data[at - 1 : at + _HEAD_LEN])  # from the quote the needle left out
    if not all(map(bytes.startswith, heads, repeat(_SCAN_PREFIX))):
        return None  # a field sorted before `key`, or no '"' where the separator's last byte goes
    cut: Any = getitem  # C-level calls through map: typeshed's signatures do not fit bytes slicing
    kinds: list[str] = list(map(cast(Any, _LAZY_KINDS.get), map(cut, heads, repeat(_SCAN_KIND)), repeat("")))
    if "" in kinds:
        return None  # a key that is not 64 characters, another kind...
    # the key's characters are taken as they stand: the parse on first use checks them
    keys: list[str] = list(map(bytes.decode, map(cut, heads, repeat(_SCAN_KEY)), repeat("latin-1")))
    source = _LazySource(data, end, path)
    return _LazyCassette(path, store or default_store_for(path), source, keys, kinds, starts)
