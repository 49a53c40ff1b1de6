"""Blob references inside JSON values: dehydrate on write, hydrate and check on read."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cassette.core.canonical import loads, ordered_json
from cassette.core.model import Cassette
from cassette.errors import (
    CassetteError,
    CassetteShapeError,
    InvalidBlobRefError,
    MissingBlobError,
    TamperedBlobError,
)
from cassette.store.blobs import BlobStore, invalid_ref_error

# --- blob references in JSON values ---------------------------------------------------------------


def dehydrate(value: Any, store: BlobStore, threshold: int, *, chains: bool = True) -> Any:
    """Move large strings and large objects inside lists to the store, leaving ``{"$blob": id}``.

    A string of ``threshold`` UTF-8 bytes or more becomes a text blob; an object
    inside a list (a chat message, a tool schema) whose JSON is that large becomes
    a JSON blob ``{"$blob": id, "$json": true}``. With ``chains`` (requests), a list
    of objects directly under ``value`` (``messages``, ``input``, ``tools``) becomes
    a chain (`_chain`). Identical payloads share one blob, so a conversation that
    repeats its history costs O(turns), not O(turns²). Responses keep their lists
    (tool calls, choices) in the manifest: they are not repeated, so a chain would
    only split them into small files a reviewer cannot read.

    Example::

        dehydrate({"content": "x" * 600}, store, 512) == {"content": {"$blob": "<id>"}}
    """
    if threshold <= 0:
        return value
    if not chains or not isinstance(value, dict) or "$blob" in value or "$literal" in value:
        return _dehydrate(value, store, threshold, in_list=False)
    out = {}
    for k, v in value.items():
        if (
            isinstance(v, list)
            and len(v) >= CHAIN_MIN
            and all(isinstance(x, dict) for x in v)
            and len(ordered_json(v)) >= threshold
        ):
            out[k] = _chain(v, store, threshold)
        else:
            out[k] = _dehydrate(v, store, threshold, in_list=False)
    return out


def _dehydrate(value: Any, store: BlobStore, threshold: int, *, in_list: bool) -> Any:
    if isinstance(value, str):
        if len(value) * 4 < threshold:  # cheap bound before encoding
            return value
        data = value.encode("utf-8", "surrogatepass")
        if len(data) >= threshold:
            return {"$blob": store.put(data)}
        return value
    if isinstance(value, list):
        return [_dehydrate(v, store, threshold, in_list=True) for v in value]
    if isinstance(value, dict):
        if "$blob" in value or "$literal" in value:  # user data that looks like a reference
            return {"$literal": {k: _dehydrate(v, store, threshold, in_list=False) for k, v in value.items()}}
        out = {k: _dehydrate(v, store, threshold, in_list=False) for k, v in value.items()}
        if in_list:
            data = ordered_json(out)
            if len(data) >= threshold:
                return {"$blob": store.put(data), "$json": True}
        return out
    return value


CHAIN_MIN = 4  # request lists of this many objects or more (messages, input items, tools) become chains
CHAIN_MAX = 1_000_000


def _chain(items: list[Any], store: BlobStore, threshold: int) -> dict[str, Any]:
    """Store a list of objects as a hash chain of JSON blobs, one node per item.

    Node ``i`` is ``{"item": items[i], "prev": <ref to node i-1> | null}``, so a
    request that repeats the previous request's history plus two new messages
    adds two nodes: a conversation costs O(turns) on disk, not O(turns²). The
    manifest keeps ``{"$blob": <last node>, "$json": true, "$chain": len}``.
    """
    prev: dict[str, Any] | None = None
    for item in items:
        node = {"item": _dehydrate(item, store, threshold, in_list=False), "prev": prev}
        prev = {"$blob": store.put(ordered_json(node)), "$json": True}
    assert prev is not None
    return {**prev, "$chain": len(items)}


def _chain_length(ref: dict[str, Any], manifest: Path) -> int:
    length = ref.get("$chain")
    if isinstance(length, bool) or not isinstance(length, int) or not 0 < length <= CHAIN_MAX:
        raise InvalidBlobRefError(
            f"{manifest}: a chain reference has length {length!r:.80}. Restore the cassette from git "
            "or re-record it.",
            path=manifest,
        )
    return length


def _chain_link(node_ref: Any, manifest: Path) -> Any:
    """The blob id a chain link names; a link that is not a JSON blob reference is refused."""
    if not isinstance(node_ref, dict) or not node_ref.get("$json"):
        raise InvalidBlobRefError(
            f"{manifest}: a chain node links to {node_ref!r:.80}, not to a JSON blob. Restore the "
            "cassette and its blob store from git or re-record the cassette.",
            path=manifest,
        )
    return node_ref.get("$blob")


def _chain_node(node: Any, node_id: Any, manifest: Path) -> dict[str, Any]:
    if not isinstance(node, dict) or node.keys() != {"item", "prev"}:
        held = type(node).__name__ if not isinstance(node, dict) else f"the fields {sorted(node)!r:.80}"
        raise TamperedBlobError(
            f"{manifest}: blob {node_id} is not a chain node (an object with `item` and `prev` only; "
            f"it holds {held}). Restore the blob store from git or re-record the cassette.",
            path=manifest,
        )
    return node


def _chain_count_error(manifest: Path, found: int, length: int) -> TamperedBlobError:
    if found > length:
        what = f"a chain is longer than the {length} items its reference declares"
    else:
        what = f"a chain has {found} items, its reference declares {length}"
    return TamperedBlobError(
        f"{manifest}: {what}. Restore the blob store from git or re-record the cassette.", path=manifest
    )


def walk_chain(ref: dict[str, Any], read_json: Any, manifest: Path) -> list[Any]:
    """The items of a chain reference, first to last; ``read_json(id)`` returns a verified node."""
    length = _chain_length(ref, manifest)
    items: list[Any] = []
    node_ref: Any = ref
    while node_ref is not None:
        if len(items) >= length:
            raise _chain_count_error(manifest, length + 1, length)
        node_id = _chain_link(node_ref, manifest)
        node = _chain_node(read_json(node_id), node_id, manifest)
        items.append(node["item"])
        node_ref = node["prev"]
    if len(items) != length:
        raise _chain_count_error(manifest, len(items), length)
    items.reverse()
    return items


class BlobSource(Protocol):
    """Where a cassette's blobs are read from: its `BlobStore` on disk, or git's objects (`cassette.git`)."""

    def get(self, blob_id: str, *, manifest: Path | None = None) -> bytes:
        """The bytes of blob ``blob_id``, verified against the id; raises `MissingBlobError`,
        `TamperedBlobError` or `InvalidBlobRefError` naming ``manifest``."""
        ...


def hydrate(
    value: Any,
    source: BlobSource | None,
    manifest: Path,
    cache: dict[str, Any] | None = None,
    *,
    lenient: bool = False,
) -> Any:
    """Resolve every blob reference in ``value`` through ``source`` (the one hydration there is).

    Blob contents are verified against their id when first read, then kept in ``cache`` (a
    cassette's ``blob_cache``), so a system prompt shared by every call is read once. ``lenient``
    (for display only) puts ``"<missing blob …>"`` / ``"<unreadable blob …>"`` where a reference
    cannot be resolved, instead of raising.

    Example::

        hydrate({"$blob": blob_id}, BlobStore(store_dir), Path("triage.json"))  # -> the blob's text
    """
    try:
        return _hydrate(
            value, source, manifest, 0, {} if cache is None else cache, _Expansion(manifest), lenient
        )
    except RecursionError:
        raise CassetteShapeError(
            f"{manifest}: a recorded value nests too deeply to replay. Re-record the cassette.",
            path=manifest,
        ) from None


@dataclass
class StoredCassette(Cassette):
    """A cassette read from files: its blob references resolve through ``source``, by default the
    `BlobStore` beside its manifest."""

    source: BlobSource | None = field(default=None, repr=False, compare=False)

    def hydrate(self, value: Any) -> Any:
        source = self.source
        if source is None and self.store is not None:
            source = self.source = BlobStore(self.store)
        return hydrate(value, source, self.path, self.blob_cache)


# One hydrated value may repeat a blob, but a few small blobs referencing each other many times
# would expand exponentially: past the floor, expansion may not exceed this multiple of the distinct bytes.
EXPANSION_FLOOR = 16 * 1024 * 1024
EXPANSION_RATIO = 64


class _Expansion:
    """Bytes resolved from blobs while hydrating one value (a reference bomb stops here)."""

    __slots__ = ("distinct", "manifest", "seen", "spent")

    def __init__(self, manifest: Path) -> None:
        self.manifest = manifest
        self.spent = 0
        self.distinct = 0
        self.seen: set[str] = set()

    def spend(self, blob_id: str, size: int) -> None:
        size = max(size, 1024)  # each resolution costs work, however small the blob
        if blob_id not in self.seen:
            self.seen.add(blob_id)
            self.distinct += size
        self.spent += size
        if self.spent > EXPANSION_FLOOR and self.spent > EXPANSION_RATIO * self.distinct:
            raise InvalidBlobRefError(
                f"{self.manifest}: its blob references expand to over {self.spent // 2**20} MiB from "
                f"{self.distinct} bytes of blobs (references to references, a reference bomb). "
                "Re-record the cassette.",
                path=self.manifest,
            )


def _hydrate(
    value: Any,
    source: BlobSource | None,
    manifest: Path,
    depth: int,
    cache: dict[str, Any],
    budget: _Expansion,
    lenient: bool,
) -> Any:
    if isinstance(value, list):
        return [_hydrate(v, source, manifest, depth, cache, budget, lenient) for v in value]
    if not isinstance(value, dict):
        return value
    if "$blob" in value:
        if not lenient:
            return _resolve(value, source, manifest, depth, cache, budget, lenient)
        try:
            return _resolve(value, source, manifest, depth, cache, budget, lenient)
        except MissingBlobError:
            return f"<missing blob {str(value['$blob'])[:64]}>"
        except CassetteError:
            return f"<unreadable blob {str(value['$blob'])[:64]}>"
    if "$literal" in value and len(value) == 1 and isinstance(value["$literal"], dict):
        inner = value["$literal"].items()
        return {k: _hydrate(v, source, manifest, depth, cache, budget, lenient) for k, v in inner}
    return {k: _hydrate(v, source, manifest, depth, cache, budget, lenient) for k, v in value.items()}


def _resolve(
    value: dict[str, Any],
    source: BlobSource | None,
    manifest: Path,
    depth: int,
    cache: dict[str, Any],
    budget: _Expansion,
    lenient: bool,
) -> Any:
    """The content of one blob reference (a text, a JSON value, or a chain's items), hydrated."""
    blob_id = value["$blob"]
    if source is None:
        raise MissingBlobError(
            f"{manifest} references blob {blob_id!r} but has no blob store. Re-record the cassette.",
            path=manifest,
        )
    if set(value) - {"$blob", "$json", "$chain"}:
        raise InvalidBlobRefError(
            f"{manifest}: a blob reference has unexpected fields {sorted(value)}. Re-record the cassette.",
            path=manifest,
        )
    if not isinstance(blob_id, str):
        raise invalid_ref_error(manifest, blob_id)  # (and keeps a list out of the cache key)
    is_json = bool(value.get("$json"))
    if "$chain" in value:
        chain_source = source

        def read_node(node_id: Any) -> Any:
            hit = cache.get(node_id) if isinstance(node_id, str) else None
            if hit is None or not hit[0]:
                data = chain_source.get(node_id, manifest=manifest)
                hit = (True, _decode_blob(data, node_id, manifest, True, lenient), len(data))
                cache[node_id] = hit
            budget.spend(node_id, hit[2])
            return hit[1]

        items = walk_chain(value, read_node, manifest)
        return [_hydrate(item, source, manifest, depth + 1, cache, budget, lenient) for item in items]
    cached = cache.get(blob_id)
    if cached is None or cached[0] != is_json:
        data = source.get(blob_id, manifest=manifest)
        cached = (is_json, _decode_blob(data, blob_id, manifest, is_json, lenient), len(data))
        cache[blob_id] = cached
    budget.spend(blob_id, cached[2])
    if not is_json:
        return cached[1]
    if depth > 32:
        raise InvalidBlobRefError(
            f"{manifest}: blob references nest deeper than 32 levels. Re-record the cassette.",
            path=manifest,
        )
    return _hydrate(cached[1], source, manifest, depth + 1, cache, budget, lenient)


def _decode_blob(data: bytes, blob_id: str, manifest: Path, is_json: bool, lenient: bool = False) -> Any:
    """A blob's bytes as its value: JSON or UTF-8 text (``lenient``, for display: as text, whatever it is)."""
    if is_json:
        try:
            return loads(data)
        except (ValueError, RecursionError) as exc:
            if lenient:
                return data.decode("utf-8", "replace")
            raise TamperedBlobError(
                f"{manifest}: JSON blob {blob_id} does not parse ({exc}). Re-record the cassette.",
                path=manifest,
            ) from None
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        if lenient:
            return data.decode("utf-8", "replace")
        raise TamperedBlobError(
            f"{manifest}: text blob {blob_id} is not UTF-8. Re-record the cassette.", path=manifest
        ) from None


_REF_FIELDS = frozenset(("$blob", "$json", "$chain"))


def check_refs(
    value: Any, cassette: Cassette, verified: dict[str, int] | None = None, store: BlobStore | None = None
) -> None:
    """Make sure every blob ``value`` needs is present and intact: those it references, and theirs.

    JSON blobs are read and their own references followed; a chain is walked node by node,
    each checked for its shape, and its length against the one its reference declares.
    Nothing is rebuilt. ``verified`` remembers, across calls, each blob that checked out with
    everything below it (a text blob as 0, a JSON blob as -1, a chain node as the length of
    the chain it ends): a chain is walked back only to the first node already checked, so
    consecutive requests sharing a history read only their new nodes. What a call checks is
    added to ``verified`` only when all of ``value`` checks out. ``store``, if given, is the
    cassette's store read by every call (else one is made for this call).

    Example::

        check_refs(cassette.interactions[0].request, cassette)  # raises MissingBlobError, ...
    """
    manifest = cassette.path
    done: dict[str, int] = {} if verified is None else verified
    new: dict[str, int] = {}  # checked by this call, kept only if the whole value checks out
    cache = cassette.blob_cache
    read = _blob_reader(cassette, store)
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
            continue
        if not isinstance(v, dict):
            continue
        if "$blob" not in v:
            if "$literal" in v and len(v) == 1 and isinstance(v["$literal"], dict):
                v = v["$literal"]  # user data: a "$blob" key inside it is not a reference
            stack.extend(v.values())
            continue
        blob_id = v["$blob"]
        if not isinstance(blob_id, str):
            raise invalid_ref_error(manifest, blob_id)
        if not v.keys() <= _REF_FIELDS:
            raise InvalidBlobRefError(
                f"{manifest}: a blob reference has unexpected fields {sorted(v)}. Restore the cassette "
                "from git or re-record it.",
                path=manifest,
            )
        if not v.get("$json"):
            if blob_id not in done and blob_id not in new and blob_id not in cache:
                read(blob_id, False)
                new[blob_id] = 0
        elif "$chain" not in v:
            if not (done.get(blob_id) or new.get(blob_id)):  # unknown, or checked as text only
                stack.append(read(blob_id, True))
                new[blob_id] = -1  # its references are on the stack: checked before this call ends
        else:
            _check_chain(v, blob_id, manifest, done, new, read, stack)
    done.update(new)


def _blob_reader(cassette: Cassette, store: BlobStore | None) -> Callable[[str, bool], Any]:
    """`check_refs`' reader of one blob, as text or parsed JSON: from the cassette's blob cache,
    else from ``store`` (made from ``cassette.store`` at the first read if not given).

    Text read from the store is added to the cache (hydration needs it); parsed nodes are not."""
    manifest = cassette.path
    cache = cassette.blob_cache

    def read(blob_id: str, is_json: bool) -> Any:
        nonlocal store
        hit = cache.get(blob_id)
        if hit is not None and (hit[0] or not is_json):  # JSON that parsed is valid UTF-8 text too
            return hit[1]
        if store is None:
            if cassette.store is None:
                raise MissingBlobError(
                    f"{manifest} references blob {blob_id!r} but has no blob store. Re-record the cassette.",
                    path=manifest,
                )
            store = BlobStore(cassette.store)
        data = store.get(blob_id, manifest=manifest)
        decoded = _decode_blob(data, blob_id, manifest, is_json)
        if not is_json:  # text (a system prompt) is kept for hydration; parsed nodes are not needed
            cache[blob_id] = (False, decoded, len(data))
        return decoded

    return read


def _check_chain(
    ref: dict[str, Any],
    blob_id: Any,
    manifest: Path,
    done: dict[str, int],
    new: dict[str, int],
    read: Callable[[str, bool], Any],
    stack: list[Any],
) -> None:
    """Walk the chain ``ref`` ends at (its last node ``blob_id``) back to its first node, or to
    the first node already checked (in ``done`` or ``new``), for `check_refs`.

    Each node read is checked for its shape, its item pushed on ``stack`` (checked by the
    caller), and the chain's length compared with the one ``ref`` declares; every walked node
    is recorded in ``new`` as the length of the chain it ends."""
    length = _chain_length(ref, manifest)
    walked: list[str] = []  # node ids, last to first, down to one already checked
    below = 0  # the length of the chain ending at that node
    node_id: Any = blob_id
    while True:
        if not isinstance(node_id, str):
            raise invalid_ref_error(manifest, node_id)
        known = done.get(node_id) or new.get(node_id)
        if known is not None and known > 0:
            below = known
            break
        if len(walked) >= length:
            raise _chain_count_error(manifest, length + 1, length)
        node = _chain_node(read(node_id, True), node_id, manifest)
        walked.append(node_id)
        stack.append(node["item"])
        prev = node["prev"]
        if prev is None:
            break
        node_id = _chain_link(prev, manifest)
    if below + len(walked) != length:
        raise _chain_count_error(manifest, below + len(walked), length)
    for n, node_id in enumerate(reversed(walked), below + 1):
        new[node_id] = n


def _ref_known(data: bytes, at: int, stop: int, verified: dict[str, int], cache: dict[str, Any]) -> int:
    """Where the blob reference whose ``"$blob"`` key is written at ``data[at:]`` (before ``stop``,
    in valid JSON) ends, if it is one `check_refs` has checked with everything below it, by the
    same rules; 0 if not (let it check)."""
    if data[at - 1] != 0x7B:  # not written on one line: the key must still open its object
        brace = data.rfind(b"{", max(at - 256, 0), at)
        if brace < 0 or not data[brace + 1 : at].isspace():
            return 0
    found = MANIFEST_REF.match(data, at, stop)
    if found is None:
        return 0
    raw_id, is_json, chain = found.groups()
    blob_id = raw_id.decode("ascii")
    if chain is not None:
        known = verified.get(blob_id) == int(chain)  # a checked chain ending at this node, as long
    elif is_json is not None:
        known = bool(verified.get(blob_id))  # -1: a JSON blob; n > 0: a chain node, JSON too
    else:
        known = blob_id in verified or blob_id in cache
    return found.end() if known else 0


# A blob reference as the manifest writes it (on one line or expanded), from its "$blob" key on: a
# text blob, a JSON blob, or a chain's last node.
MANIFEST_REF = re.compile(
    rb'"\$blob":\s*"([0-9a-f]{40,64})"(?:,\s*"\$json":\s*(true)(?:,\s*"\$chain":\s*([1-9][0-9]{0,8}))?)?\s*\}'
)
