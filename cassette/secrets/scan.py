"""Scanning files for secrets: cassettes (plain or compressed), blobs, traces and any staged text.

JSON files are scanned twice over: the raw text, and every decoded string (with its key as context,
descending into strings that hold JSON, such as a tool call's ``arguments``, and base64 in a tool's
bytes result, ``{"$bytes": ...}``), so a key escaped inside JSON inside JSON is found and reported
with its JSON path and line. Binary content is scanned for key shapes in its runs of printable text,
as ``strings`` prints them.

A :class:`Finding` never holds the secret: only a masked form and a stable fingerprint, which is
also what ``[tool.cassette] secrets_allow`` lists.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import string
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

from cassette.config import load_config
from cassette.core.compression import GZIP_MAGIC, gunzip, salvage
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError, CompressedDataError
from cassette.secrets.engine import Engine, resolve_overlaps
from cassette.secrets.escapes import escaped_hits, has_escape, unescape
from cassette.secrets.lists import list_hits
from cassette.secrets.masking import masked_text
from cassette.secrets.redact import Stream, joined, redact_text
from cassette.secrets.registry import describes, plural_secret_name, says_password
from cassette.secrets.rules import SecretRule, fingerprint, mask
from cassette.store.blobs import BlobStore, default_store_for

__all__ = ["DAMAGED_RULE", "SCAN_VERSION", "BlobReader", "Finding", "Scanner", "store_reader"]


@dataclass(frozen=True)
class Finding:
    """A secret found in a file; the secret itself is never kept.

    ``path`` is the JSON path of the string holding it (``None`` for text
    files); a string that holds JSON is descended into, so a key inside a tool
    call's arguments reads ``...function.arguments.api_key``.
    """

    rule: str
    file: str
    line: int
    path: str | None
    masked: str
    fingerprint: str

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON-able dict.

        Example::

            json.dumps([f.to_json() for f in scanner.scan(data, "c.json")])
        """
        return {
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "path": self.path,
            "masked": self.masked,
            "fingerprint": self.fingerprint,
        }

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.file}:{self.line}: {self.rule} {self.masked}{where} (fingerprint {self.fingerprint})"


# Bumped whenever what a scan finds changes without a rule changing (how text, JSON, $bytes or
# binary content is read): the staged scan's cache keys on it as well as on the rules.
SCAN_VERSION = 8

# A compressed file that does not expand whole: reported as a finding of its own, since the part
# after the damage cannot be scanned (restoring the file from git or re-recording it clears it).
DAMAGED_RULE = "damaged-compressed-file"

# A stored finding without its file: (rule id, line, path, masked, fingerprint)
_Row = tuple[str, int, str | None, str, str]
# Reads a blob by its id: its bytes, or None when it is not to be had
BlobReader = Callable[[str], bytes | None]


class _Blobs:
    """The blob reader of one scan, and whether a blob it was asked for was missing (the result then
    depends on what the store holds, so the scanner does not cache it)."""

    def __init__(self, read: BlobReader | None) -> None:
        self.read = read
        self.missing = False

    def text(self, blob_id: str) -> str | None:
        data = self.read(blob_id) if self.read is not None else None
        if data is None:
            self.missing = True
            return None
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return None


def store_reader(cassette: str | os.PathLike[str]) -> BlobReader | None:
    """A reader of the blobs a cassette on disk references, from the store a session on it would use
    (and the nearest ``.blobs`` directory): None when no such file exists. Blobs are addressed by their
    content and checked against their id, so any store that has one gives its bytes.

    Example::

        Scanner(default_rules(), blobs=store_reader("tests/cassettes/triage.json"))
    """
    path = Path(cassette)
    try:
        if not path.is_file():
            return None
        roots = [default_store_for(path)]
    except (CassetteError, OSError, ValueError):
        return None
    try:
        config = load_config(path.parent)
        if config.store:
            roots.insert(0, config.store_path())
        else:
            try:
                resolve_path(path).relative_to(config.cassette_root())
                roots.insert(0, config.store_path())
            except ValueError:
                pass
    except (CassetteError, OSError, ValueError):
        pass  # a broken config: the nearest .blobs directory still serves
    stores = [BlobStore(root) for root in dict.fromkeys(roots)]

    def read(blob_id: str) -> bytes | None:
        for store in stores:
            try:
                return store.get(blob_id)
            except (CassetteError, OSError, ValueError):
                continue
        return None

    return read


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\Z")
_CACHE_LIMIT = 100_000


# What the scan inflates of a compressed file that does not expand whole (the file is a finding
# anyway): a bomb is not inflated to the 1 GiB a cassette may hold, then copied
_SALVAGE_MAX = 256 * 2**20


class Scanner:
    """Finds secrets in files with a fixed list of rules and an allow-list of fingerprints.

    Results can be cached by a caller-supplied content id (a git blob id), so a
    blob shared by many cassettes or commits is scanned once.

    Example::

        scanner = Scanner(default_rules(), allowlist=config.secrets_allow)
        for finding in scanner.scan(blob_bytes, "tests/cassettes/triage.json", content_id=blob_sha):
            print(finding)
    """

    def __init__(
        self,
        rules: Iterable[SecretRule],
        allowlist: Iterable[str] = frozenset(),
        *,
        blobs: BlobReader | None = None,
    ) -> None:
        self._engine = Engine(list(rules))
        self.allowlist = frozenset(allowlist)
        # reads the blob a manifest references (see `scan`); None: the store of the file scanned
        self.blobs = blobs
        self.incomplete = False  # the last scan missed a blob it needed (its result is not cached)
        self._cache: dict[str, list[_Row]] = {}

    @property
    def rules(self) -> tuple[SecretRule, ...]:
        return self._engine.rules

    @property
    def engine(self) -> Engine:
        """The compiled rules (what :func:`~cassette.secrets.redact.redact_text` takes too)."""
        return self._engine

    def scan(
        self,
        data: bytes | str,
        file: str = "<text>",
        *,
        content_id: str | None = None,
        as_json: bool | None = None,
        blobs: BlobReader | None = None,
    ) -> list[Finding]:
        """Findings in one file's content, sorted by line, allow-listed ones dropped.

        ``as_json=None`` treats content that parses as JSON (an object or a
        list) as JSON and anything else as text. Content with a NUL byte in its
        first 8 KiB is text with stray control bytes when they are few there
        (they are read as spaces), and binary otherwise: its runs of 16 or more
        printable ASCII characters, as ``strings`` prints them, are scanned for
        key shapes (rules with a prefix).

        A streamed response's events are joined to find a secret split over them; an event the
        writer moved to the blob store (``{"$blob": id}``) is read with ``blobs`` (else the
        scanner's ``blobs``, else :func:`store_reader` of ``file`` when it names a file on disk),
        and left out when its blob is not to be had.

        Example::

            scanner.scan(b'{"key": "..."}', "c.json")
        """
        rows = self._cache.get(content_id) if content_id is not None else None
        self.incomplete = False
        if rows is None:
            raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
            reader = _Blobs(blobs or self.blobs or _lazy(lambda: store_reader(file)))
            rows = self._scan_bytes(raw, as_json, reader)
            self.incomplete = reader.missing  # a result that depends on what the store holds
            if content_id is not None and not reader.missing:
                if len(self._cache) >= _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[content_id] = rows
        return [
            Finding(rule=r, file=file, line=line, path=path, masked=masked, fingerprint=fp)
            for r, line, path, masked, fp in rows
            if fp not in self.allowlist
        ]

    def scan_file(self, path: str | os.PathLike[str], *, display: str | None = None) -> list[Finding]:
        """Read and scan one file; findings name it as ``display`` (default: the path).

        Example::

            scanner.scan_file("tests/cassettes/triage.json")
        """
        reader = self.blobs or _lazy(lambda: store_reader(path))
        return self.scan(
            Path(path).read_bytes(), display if display is not None else os.fspath(path), blobs=reader
        )

    def redact(self, text: str) -> str:
        """:func:`redact_text` with this scanner's rules."""
        return redact_text(text, self)

    # -- internals -----------------------------------------------------------

    def _scan_bytes(self, raw: bytes, as_json: bool | None, blobs: _Blobs | None = None) -> list[_Row]:
        if raw[:2] == GZIP_MAGIC:  # a compressed cassette (or any gzip file): its content is scanned
            try:
                return self._scan_bytes(gunzip(raw), as_json, blobs)
            except CompressedDataError as exc:
                # damaged: the key may be in what still inflates, and what does not cannot be
                # vouched for, so the file itself is reported (as `cassette verify` refuses it)
                inner = salvage(raw, _SALVAGE_MAX)
                rows = self._scan_bytes(inner, as_json, blobs) if inner else []
                damage = hashlib.sha256(raw).hexdigest()[:16]
                return [
                    *rows,
                    (DAMAGED_RULE, 1, "", f"({exc}: not scanned whole)", f"{DAMAGED_RULE}:{damage}"),
                ]
        if raw[:2] in _UTF16_BOMS or b"\x00" in raw[:_SAMPLE]:
            text = _utf16(raw)
            if text is not None:  # a file saved as UTF-16 (Windows tools): every other byte a NUL
                return self._scan_bytes(text, as_json, blobs)
        if b"\x00" in raw[:_SAMPLE]:
            if not _mostly_text(raw):
                return self._scan_binary(raw)
            raw = raw.translate(_CONTROL_AS_SPACE)  # same length: lines and offsets stay
        rows = self._scan_text(raw, as_json, blobs)
        if b"!binary" in raw:  # a VCR cassette's base64 header or body (`!!binary`; Ruby VCR's `!binary`)
            known = {(r[0], r[4]) for r in rows}
            rows.extend(r for r in self._scan_yaml_binary(raw) if (r[0], r[4]) not in known)
        decoded = _base64_file(raw)
        if decoded is not None:
            # one base64 string, a tool's bytes result moved to the blob store: its one line, decoded
            rows.extend((r, 1, path, m, fp) for r, _, path, m, fp in self._scan_bytes(decoded, None))
        return rows

    def _scan_text(self, raw: bytes, as_json: bool | None, blobs: _Blobs | None = None) -> list[_Row]:
        engine = self._engine
        cands: list[int] = []
        keyword_cands: list[int] = []
        cut = engine.cut_of(raw)
        raw_hits = engine.hits(raw, cands=cands, cut=cut, keyword_cands=keyword_cands)
        if keyword_cands:  # the items of a YAML list after its first, which the key's name announces too
            listed = list_hits(engine, raw, keyword_cands, None)
            if listed:
                raw_hits = resolve_overlaps({*raw_hits, *listed})
        short = cut.text if cut is not None else raw  # everything but the middle of long base64 runs
        quiet = (
            not raw_hits
            and not _escape_may_hide(raw, cands, short)
            and b"$bytes" not in short
            and not _keyword_list(raw, keyword_cands)
            and not _escaped_yaml_list(raw, keyword_cands)
        )
        # a cassette with a streamed response: a secret may be split over its events' deltas, or
        # over the `data:` lines of a generic stream (neither word is ever inside a long base64
        # run, so the cut text is searched); events the writer moved to the blob store (every
        # one, when each carries logprobs) may be them
        streamed = (
            as_json is not False
            and b'"events"' in short
            and (b"data:" in short or (blobs is not None and b'"$blob"' in short))
        )
        if quiet and not streamed:
            # A decoded string holds its literals as the raw text does, so with no raw hit
            # only a JSON escape can hide one: a literal written escaped (\u0067hp_...), or
            # the character just before a literal written as an escape (\u201csk-...). So can
            # a list under a keyword key (the raw text names the key only before its first
            # item) and base64 in a tool's bytes result ({"$bytes": ...}).
            return []
        lines = _LineIndex(raw)
        raw_rows = [self._row(i, raw[s:e], lines.line(s), None) for i, s, e in raw_hits]
        doc = None
        if as_json is not False and raw.lstrip()[:1] in (b"{", b"["):
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError:
                doc = None
        if not isinstance(doc, dict | list):
            if has_escape(short):  # a text holding JSON: a key partly \u-escaped in it
                hits = escaped_hits(engine, raw, raw_hits)
                if hits is not raw_hits:
                    return [self._row(i, unescape(raw[s:e]), lines.line(s), None) for i, s, e in hits]
            return raw_rows
        try:
            rows = [] if quiet else self._scan_decoded(doc, raw, lines, _holding(raw, cands, short))
        except RecursionError:
            return raw_rows
        seen = {(r[0], r[1], r[3]) for r in rows}
        rows.extend(r for r in raw_rows if (r[0], r[1], r[3]) not in seen)
        if streamed and isinstance(doc, dict):
            rows.extend(self._scan_streams(doc, raw, lines, {(r[0], r[4]) for r in rows}, blobs))
        rows.sort(key=lambda r: (r[1], r[2] or ""))
        return rows

    def _scan_yaml_binary(self, raw: bytes) -> list[_Row]:
        """Secrets in YAML ``!!binary`` values (vcrpy writes a header or body that is bytes so; Ruby's
        VCR a ``!binary`` one): each
        decoded, a gzipped one expanded, and scanned on the line of its tag. A short one-line value
        (a header's) is read after the two lines before it, so the rules see its name
        (``X-Amz-Security-Token:`` then ``- !!binary |``); a longer one as a file of its own."""
        lines = _LineIndex(raw)
        rows: list[_Row] = []
        for m in _YAML_BINARY.finditer(raw):
            encoded = m.group(1) or m.group(2)
            try:
                data = base64.b64decode(b"".join(encoded.split()), validate=True)
            except (binascii.Error, ValueError):
                continue
            if data[:2] == GZIP_MAGIC:
                try:
                    data = gunzip(data, _SALVAGE_MAX)
                except CompressedDataError:
                    continue
            line = lines.line(m.start())
            if len(data) <= _SHORT_VALUE and b"\n" not in data and b"\x00" not in data:
                start = raw.rfind(b"\n", 0, max(raw.rfind(b"\n", 0, m.start()), 0)) + 1
                head = raw[start : m.start()]
                text = head + data
                for i, s, e in self._engine.hits(text):
                    if e > len(head):
                        rows.append(self._row(i, text[s:e], line, None))
            else:
                rows.extend((r, line, path, mk, fp) for r, _, path, mk, fp in self._scan_bytes(data, None))
        return rows

    def _scan_binary(self, raw: bytes) -> list[_Row]:
        """Key shapes in the printable runs of binary data, each run scanned as a text of its own.

        Only rules with a literal prefix look: string tables put unrelated strings side by
        side (``secretKeyRef`` beside a type name), which values announced by a keyword
        would be read from.
        """
        if raw[2:4] == b"\r\n" and raw[16:17] == b"\xe3":
            return []  # compiled Python (a .pyc header, then a code object): its source is scanned
        runs = _printable_runs(raw)
        if not runs:
            return []  # random or compressed bytes (images, archives): one translate and one find
        text = b"\n".join(raw[s:e] for s, e in runs)
        starts = [0, *accumulate(e - s + 1 for s, e in runs)][:-1]
        lines = _LineIndex(raw)
        rows: list[_Row] = []
        for i, s, e in self._engine.hits(text, starts, keywords=False):
            seg = bisect_right(starts, s) - 1
            rows.append(self._row(i, text[s:e], lines.line(runs[seg][0] + s - starts[seg]), None))
        return rows

    def _scan_decoded(
        self,
        doc: dict[str, Any] | list[Any],
        raw: bytes,
        lines: _LineIndex,
        holding: set[str] | None,
    ) -> list[_Row]:
        got = _Texts()
        engine = self._engine
        got.keyword = engine.has_keyword
        if isinstance(doc, dict) and _is_bytes(doc):
            _collect_bytes(doc, (), None, got)
        elif holding is None or engine.full:
            _collect(doc, (), None, got, None)
        else:
            _collect(doc, (), None, got, _Only(holding, engine.has_keyword))
        rows: list[_Row] = []
        for path, value, data in got.binary:
            # binary bytes: key shapes in their printable runs, on the line of their base64
            line = lines.line(max(_locate(raw, value.encode(), 0), 0))
            named = _format_path(path, self._engine)
            rows.extend((r, line, named, m, fp) for r, _, _, m, fp in self._scan_binary(data))
        texts = got.texts
        if not texts:
            return rows
        data, starts = joined(texts)
        keyword_cands: list[int] = []
        hits = engine.hits(data, starts, keyword_cands=keyword_cands)
        if keyword_cands:  # a string holding YAML: each item of a list a keyword names
            listed = list_hits(engine, data, keyword_cands, starts)
            if listed:
                hits = resolve_overlaps({*hits, *listed})
        if has_escape(data):  # a string holding JSON (an SSE event): a key partly \u-escaped in it
            hits = escaped_hits(engine, data, hits, starts)
        after: dict[bytes, int] = {}
        for i, s, e in hits:
            secret = unescape(data[s:e])
            seg = bisect_right(starts, s) - 1
            # a secret decoded from base64 is not in the file: its line is the base64 value's
            where = got.encoded[seg].encode() if seg in got.encoded else secret
            offset = _locate(raw, where, after.get(where, 0))
            if offset >= 0:
                after[where] = offset + 1
            line = lines.line(offset) if offset >= 0 else 1
            rows.append(self._row(i, secret, line, _format_path(got.paths[seg], self._engine)))
        return rows

    def _scan_streams(
        self,
        doc: dict[str, Any],
        raw: bytes,
        lines: _LineIndex,
        seen: set[tuple[str, str]],
        blobs: _Blobs | None = None,
    ) -> list[_Row]:
        """Secrets that a streamed response's deltas hold only together (see `Stream`), each at the
        event and delta where it starts; one the other passes found (the same rule and secret) is
        not reported twice. An event in the blob store (``{"$blob": id}``) is read with ``blobs``;
        a secret starting in it is on the line of its reference."""
        interactions = doc.get("interactions")
        if type(interactions) is not list:
            return []
        rows: list[_Row] = []
        after: dict[str, int] = {}
        for at, interaction in enumerate(interactions):
            response = interaction.get("response") if type(interaction) is dict else None
            events = response.get("events") if type(response) is dict else None
            if type(events) is not list or len(events) < 2:
                continue
            stored: dict[int, str] = {}  # event index -> blob id, for an event read from the store
            if blobs is not None:
                events, stored = _stored_events(events, blobs)
            for pieces, data, starts, hits in Stream(events).hits(self._engine):
                for i, s, e in hits:
                    piece = pieces[bisect_right(starts, s) - 1]
                    row = self._row(i, data[s:e], 1, None)
                    if (row[0], row[4]) in seen:
                        continue
                    seen.add((row[0], row[4]))
                    event = stored.get(piece.event) or events[piece.event]
                    offset = _locate(raw, event.encode("utf-8", "surrogatepass"), after.get(event, 0))
                    if offset >= 0:
                        after[event] = offset + 1
                    path = ("interactions", at, "response", "events", piece.event, *piece.path)
                    line = lines.line(offset) if offset >= 0 else 1
                    rows.append((row[0], line, _format_path(path, self._engine), row[3], row[4]))
        return rows

    def _row(self, i: int, secret: bytes, line: int, path: str | None) -> _Row:
        rule = self._engine.rules[i]
        text = secret.decode("utf-8", "replace")
        return (rule.id, line, path, mask(rule, text), fingerprint(rule.id, text))


def _stored_events(events: list[Any], blobs: _Blobs) -> tuple[list[Any], dict[int, str]]:
    """``events`` with each text blob reference (``{"$blob": id}``) replaced by the blob's text where
    the blob can be read, and the index and id of each event so read."""
    stored: dict[int, str] = {}
    out = events
    for n, event in enumerate(events):
        if type(event) is not dict or len(event) != 1 or type(event.get("$blob")) is not str:
            continue
        text = blobs.text(event["$blob"])
        if text is None:
            continue
        if out is events:
            out = list(events)
        out[n] = text
        stored[n] = event["$blob"]
    return out, stored


def _lazy(make: Callable[[], BlobReader | None]) -> BlobReader:
    """A blob reader made by ``make`` when first asked for a blob (finding the store costs a config
    read, which only a manifest with a blob-stored stream event needs)."""
    made: list[BlobReader | None] = []

    def read(blob_id: str) -> bytes | None:
        if not made:
            made.append(make())
        reader = made[0]
        return reader(blob_id) if reader is not None else None

    return read


class _LineIndex:
    """Byte offset to 1-based line number, counting newlines from the nearest offset asked before."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offsets = [0]
        self._lines = [1]

    def line(self, offset: int) -> int:
        j = bisect_right(self._offsets, offset) - 1
        at = self._offsets[j]
        line = self._lines[j] + self._data.count(b"\n", at, offset)
        if offset != at:
            self._offsets.insert(j + 1, offset)
            self._lines.insert(j + 1, line)
        return line


# Content with a NUL in its first _SAMPLE bytes is text with stray control bytes when at most
# 1/32 of the bytes sampled are controls (tab, line breaks, form feed and ESC, for ANSI colours,
# are text), and binary otherwise: random or compressed bytes are one-eighth controls.
_SAMPLE = 8192
_CONTROL = bytes([*range(0x00, 0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_CONTROL_AS_SPACE = bytes(0x20 if i in _CONTROL else i for i in range(256))
_PRINTABLE_CLASS = bytes(0x61 if 0x20 <= i < 0x7F or i in (0x09, 0x0A, 0x0D) else 0x20 for i in range(256))
# the shortest run of printable ASCII scanned in binary data: random bytes hold shorter ones by the
# thousand (a 16-character run once in ~8 MB), a key with what announces it is longer
_STRINGS_MIN = 16
_STRINGS_NEEDLE = b"a" * _STRINGS_MIN


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _utf16(raw: bytes) -> bytes | None:
    """UTF-16 text as UTF-8 (same lines): one with a byte-order mark, or one whose first 8 KiB
    read as mostly ASCII with a NUL in every other byte; None for anything else."""
    if raw[:2] in _UTF16_BOMS:
        encoding = "utf-16"
    else:
        sample = raw[: _SAMPLE & ~1]
        half = len(sample) // 2
        if half < 8:
            return None
        if sample[1::2].count(0) * 10 >= half * 9 and not sample[0::2].count(0):
            encoding = "utf-16-le"
        elif sample[0::2].count(0) * 10 >= half * 9 and not sample[1::2].count(0):
            encoding = "utf-16-be"
        else:
            return None
    try:
        return raw.decode(encoding).encode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


def _mostly_text(data: bytes) -> bool:
    """Whether content with a NUL in its first 8 KiB is text with stray control bytes, not binary."""
    sample = data[:_SAMPLE]
    return (len(sample) - len(sample.translate(None, _CONTROL))) * 32 <= len(sample)


def _printable_runs(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each run of 16 or more printable ASCII characters: what ``strings`` prints."""
    find = data.translate(_PRINTABLE_CLASS).find
    runs: list[tuple[int, int]] = []
    s = find(_STRINGS_NEEDLE)
    while s >= 0:
        e = find(b" ", s + _STRINGS_MIN)
        if e < 0:
            e = len(data)
        runs.append((s, e))
        s = find(_STRINGS_NEEDLE, e)
    return runs


_BASE64_ALPHABET = (string.ascii_letters + string.digits + "+/").encode()

# A YAML `!!binary` value: a block scalar (`!!binary |` then indented base64 lines) or one on the
# tag's line (quoted or not)
_YAML_BINARY = re.compile(
    rb"!!?binary[ \t]*(?:[|>][-+0-9]*[ \t]*\r?\n((?:[ \t]+[A-Za-z0-9+/=]+[ \t]*(?:\r?\n|\Z))+)"
    rb"""|["']?([A-Za-z0-9+/=]{4,})["']?)"""
)
# a decoded `!!binary` value this short, on one line, is a header's: read after its name
_SHORT_VALUE = 4096


def _base64_file(raw: bytes) -> bytes | None:
    """The bytes a file holding one padded base64 string encodes (a ``$bytes`` value in the blob store)."""
    if len(raw) < 16 or len(raw) % 4 or raw[:64].translate(None, _BASE64_ALPHABET).strip(b"="):
        return None
    if raw.translate(None, _BASE64_ALPHABET) not in (b"", b"=", b"=="):
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None  # the padding is not at the end


# After a keyword, the rest of a JSON key (escaped or not, inside JSON inside JSON) and a list or map:
# the raw text names the key only before the first item, the decoded pass before each.
_KEY_BEFORE_LIST = re.compile(rb'([A-Za-z0-9_.-]{0,40})\\*"\s*:\s*([\[{])')
_KEY_CHARS = frozenset(string.ascii_letters.encode() + string.digits.encode() + b"_.-")


def _keyword_list(raw: bytes, keyword_cands: list[int]) -> bool:
    """Whether a keyword at one of ``keyword_cands`` is in a JSON key whose value is a list, or a map
    under a plural secret name (``"api_keys": {"prod": …}``)."""
    match = _KEY_BEFORE_LIST.match
    find = raw.find
    for p in keyword_cands:
        # most keywords are in keys of numbers (`prompt_tokens`): a find rules them out cheaper than a match
        if find(b"[", p, p + 64) < 0 and find(b"{", p, p + 64) < 0:
            continue
        m = match(raw, p)
        if m is None:
            continue
        if m.group(2) == b"[" or _plural_key(raw, p, m.group(1)):
            return True
    return False


def _plural_key(raw: bytes, p: int, rest: bytes) -> bool:
    """Whether the key a keyword at ``p`` sits in (the key characters before it, then ``rest``) is
    the plural of a secret's name."""
    q = p
    while q > 0 and p - q < 40 and raw[q - 1] in _KEY_CHARS:
        q -= 1
    return plural_secret_name((raw[q:p] + rest).decode("ascii"))


# ... and the same inside a JSON string, newlines escaped (`"api_keys:\n  - …"`), for the raw text's test.
_ESCAPED_YAML_LIST = re.compile(
    rb"""[A-Za-z0-9_.-]{0,40}\\*["']?[ \t]*:[ \t]*(?:\\+r)?\\+n(?:[ \t]|\\+t)*-[ \t]"""
)
# ... and a key ending its line before an indented key (`"api_keys:\n  prod: …"`), for a map.
_ESCAPED_YAML_MAP = re.compile(
    rb"""([A-Za-z0-9_.-]{0,40})\\*["']?[ \t]*:[ \t]*(?:\\+r)?\\+n(?:[ \t]|\\+t)+(?:\\*["'])?[A-Za-z0-9_$]"""
)


def _escaped_yaml_list(raw: bytes, keyword_cands: list[int]) -> bool:
    """Whether a keyword at one of ``keyword_cands`` names a YAML list inside a JSON string, or a
    YAML map under a plural secret name."""
    match = _ESCAPED_YAML_LIST.match
    map_match = _ESCAPED_YAML_MAP.match
    for p in keyword_cands:
        if raw.find(b"\\", p, p + 64) < 0:
            continue
        if match(raw, p) is not None:
            return True
        m = map_match(raw, p)
        if m is not None and _plural_key(raw, p, m.group(1)):
            return True
    return False


# A JSON escape that spells a printable ASCII character (\/ or \u0041): a literal
# written that way is not in the raw text, so every decoded string is scanned.
_ASCII_ESCAPE = re.compile(rb"\\(?:/|u00[2-7][0-9a-fA-F])")


def _escape_may_hide(raw: bytes, cands: list[int], short: bytes) -> bool:
    """Whether a raw text with no hit may still hold one once its JSON strings are decoded.

    An escaped printable ASCII character can spell a literal the raw scan never sees;
    an escape just before a literal (``\\u201c`` for a curly quote, ``\\n``) stands for
    a character that ends a word, where the raw text shows a letter or digit.
    """
    if b"\\" not in short:
        return False
    if _ASCII_ESCAPE.search(short) is not None:
        return True
    return any(raw.find(b"\\", max(p - 6, 0), p) >= 0 for p in cands)


def _holding(raw: bytes, cands: list[int], short: bytes) -> set[str] | None:
    """The decoded JSON strings whose raw form holds a literal at one of ``cands``, or None for all.

    A literal or keyword of a decoded string (JSON inside JSON included: its
    escapes are backslashes before quotes, not inside literals) is written
    as is in the raw text, so only these strings and the values under a key
    holding a keyword can have a finding. ``short`` is ``raw`` or its cut form
    (a backslash is never inside a base64 run, so every escape is in it).
    """
    if _ASCII_ESCAPE.search(short) is not None:
        return None
    out: set[str] = set()
    done: set[int] = set()
    for p in sorted(set(cands)):
        q = raw.rfind(b'"', 0, p)
        while q > 0 and _escaped(raw, q):
            q = raw.rfind(b'"', 0, q)
        if q < 0 or q in done:
            continue
        e = raw.find(b'"', p)
        while e > 0 and _escaped(raw, e):
            e = raw.find(b'"', e + 1)
        if e < 0:
            return None
        done.add(q)
        try:
            value = orjson.loads(raw[q : e + 1])
        except orjson.JSONDecodeError:
            return None  # not inside a string after all: scan everything
        if isinstance(value, str):
            out.add(value)
    return out


def _escaped(raw: bytes, q: int) -> bool:
    """Whether the byte at ``q`` follows an odd number of backslashes."""
    n = 0
    while q > n and raw[q - n - 1] == 0x5C:
        n += 1
    return n % 2 == 1


def _locate(raw: bytes, secret: bytes, start: int) -> int:
    """Where a decoded secret sits in the raw file: as is, or JSON-escaped once or twice; a number
    (a numeric password) where it stands alone, not inside a longer one (a timestamp)."""
    if secret.isdigit():
        alone = re.compile(rb"(?<![0-9])" + secret + rb"(?![0-9])")
        for begin in (start, 0):
            m = alone.search(raw, begin)
            if m is not None:
                return m.start()
        return -1
    forms = [secret]
    text = secret.decode("utf-8", "replace")
    once = orjson.dumps(text)[1:-1]
    if once != secret:
        forms.append(once)
        forms.append(orjson.dumps(once.decode())[1:-1])
    for begin in (start, 0):
        for form in forms:
            p = raw.find(form, begin)
            if p >= 0:
                return p
    return raw.find(secret[-8:]) if len(secret) > 8 else -1


class _Texts:
    """What :func:`_collect` gathers: each string to scan (its key as context) with its JSON path,
    which of them were decoded from base64 (their index: that base64), and binary ``$bytes`` data."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.paths: list[tuple[str | int, ...]] = []
        self.encoded: dict[int, str] = {}
        self.binary: list[tuple[tuple[str | int, ...], str, bytes]] = []
        # whether a JSON key holds a rule's keyword (a name inside a plural map is then read as itself)
        self.keyword: Callable[[str], bool] | None = None


def _collect(
    node: dict[str, Any] | list[Any],
    path: tuple[str | int, ...],
    key: str | None,
    out: _Texts,
    only: _Only | None,
    depth: int = 0,
) -> None:
    """Every string under ``node`` in document order, each with its key as context.

    With ``only``, a string is taken only if it, or its key, is one of the
    strings whose raw form holds a literal, or its key holds a keyword: no
    other string can have a finding. A tool's bytes result (``{"$bytes":
    base64}``) is always taken, decoded: its literals are not in the raw text.
    A number of 6 digits or more is taken under a name holding ``pass`` or
    ``pin``, for the numeric-password rule.

    ``depth`` > 0: ``node`` is a map under a plural secret name ``key``
    (``"api_keys": {"prod": …}``, see :func:`plural_secret_name`), or a map or list
    of strings nested ``depth - 1`` levels deeper in one (``"passwords":
    {"prod": {"db": …}}``): its strings take that name as context, as a
    list's items take the list's, for the redactor holds each of them a
    secret (``_plural_map``). A string keeps its own name where that name
    holds a keyword (it is scanned as anywhere else) or, nested, describes
    the secret (``describes``: ``id``, ``name``, ``created_at``); a list of
    records is read by the records' own names. A number nested deeper than
    the map's values takes the plural name only when that says password
    (the redactor keeps other numbers, which a key's record has as dates).
    """
    items: Iterable[tuple[str | int, Any]] = node.items() if isinstance(node, dict) else enumerate(node)
    for k, v in items:
        t = type(v)
        if t is str:
            if not depth:
                ctx = k if isinstance(k, str) else key
            else:
                ctx = k if isinstance(k, str) and _own_name(k, depth, out) else key
            if only is not None and not (len(v) in only.sizes and v in only.strings):
                if ctx is None:
                    continue
                ok = only.keys.get(ctx)
                if ok is None:
                    ok = only.keys[ctx] = ctx in only.strings or only.has_keyword(ctx)
                if not ok:
                    continue
            sub = (*path, k)
            if len(v) > 1 and v[0] in "{[" and v[-1] in "}]" and _collect_json(v, sub, ctx, out):
                continue
            out.texts.append(f'"{ctx}": "{v}"' if ctx is not None else v)
            out.paths.append(sub)
        elif t is int and (v >= 100_000 or v <= -100_000):
            own = isinstance(k, str) and (not depth or _own_name(k, depth, out))
            ctx = k if own and isinstance(k, str) else key
            if ctx is None or ("pass" not in ctx.lower() and "pin" not in ctx.lower()):
                continue
            if depth > 1 and not own and not says_password(ctx):
                continue
            if only is not None and not (ctx in only.strings or only.has_keyword(ctx)):
                continue
            out.texts.append(f'"{ctx}": {v}')
            out.paths.append((*path, k))
        elif t is dict and len(v) == 1 and type(v.get("$bytes")) is str:
            _collect_bytes(v, (*path, k), k if isinstance(k, str) else key, out)
        elif t is dict:
            if not isinstance(k, str):
                _collect(v, (*path, k), key, out, only)
            elif depth and not _own_name(k, depth, out):
                _collect(v, (*path, k), key, out, only, depth + 1)
            else:
                _collect(v, (*path, k), k, out, only, 1 if "$bytes" not in v and plural_secret_name(k) else 0)
        elif t is list:
            if depth and isinstance(k, str) and not _own_name(k, depth, out):
                _collect(v, (*path, k), key, out, only, depth + 1)
            else:
                _collect(v, (*path, k), k if isinstance(k, str) else key, out, only)


def _collect_json(text: str, path: tuple[str | int, ...], key: str | None, out: _Texts) -> bool:
    """For `_collect`: whether the string ``text`` (at ``path``, named ``key``) holds a JSON object or
    array (a tool call's arguments, a body kept as text); if so, every string in it is collected,
    whatever the outer call's ``only``."""
    try:
        inner = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(inner, dict | list):
        return False
    _collect(inner, path, key, out, None)
    return True


def _own_name(name: str, depth: int, out: _Texts) -> bool:
    """Whether a field of a map under a plural secret name (or nested in one, ``depth`` > 1) is read by
    its own name: one that holds a keyword (scanned as anywhere else), or a nested one that describes
    the secret (``id``, ``name``, ``created_at``)."""
    return (depth > 1 and describes(name)) or (out.keyword is not None and out.keyword(name))


def _is_bytes(node: dict[str, Any]) -> bool:
    return len(node) == 1 and type(node.get("$bytes")) is str


def _collect_bytes(node: dict[str, Any], path: tuple[str | int, ...], key: str | None, out: _Texts) -> None:
    """What :func:`_collect` takes of a ``{"$bytes": base64}`` value: its text (JSON in it descended
    into), or its bytes when they are binary."""
    value = node["$bytes"]
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return
    sub = (*path, "$bytes")
    if b"\x00" in data[:_SAMPLE]:
        if not _mostly_text(data):
            out.binary.append((sub, value, data))
            return
        data = data.translate(_CONTROL_AS_SPACE)
    text = data.decode("utf-8", "replace")
    if not text:
        return
    first = len(out.texts)
    inner = None
    if text[0] in "{[" and text.rstrip()[-1:] in ("}", "]"):
        try:
            inner = orjson.loads(text)
        except orjson.JSONDecodeError:
            inner = None
    if isinstance(inner, dict | list):
        _collect(inner, sub, key, out, None)
    else:
        out.texts.append(f'"{key}": "{text}"' if key is not None else text)
        out.paths.append(sub)
    for j in range(first, len(out.texts)):
        out.encoded[j] = value


class _Only:
    """What :func:`_collect` keeps: strings holding a literal (and their sizes), keys holding a keyword."""

    def __init__(self, strings: set[str], has_keyword: Callable[[str], bool]) -> None:
        self.strings = strings
        self.sizes = {len(s) for s in strings}
        self.has_keyword = has_keyword
        self.keys: dict[str, bool] = {}


def _format_path(parts: tuple[str | int, ...], engine: Engine | None = None) -> str:
    """A JSON path as text; a key holding a secret (``{KEY: …}``) is shown masked, as a finding is."""
    out: list[str] = []
    for p in parts:
        if engine is not None and isinstance(p, str) and len(p) >= 16:
            p = masked_text(p, engine, fingerprints=False)
        if isinstance(p, int):
            out.append(f"[{p}]")
        elif _IDENT.match(p):
            out.append(f".{p}" if out else p)
        else:
            out.append(f"[{orjson.dumps(p).decode()}]")
    return "".join(out)
