"""Secret detection for cassettes, traces and any staged text.

A rule (:class:`SecretRule`) names the literal strings a secret starts with
(``prefixes``, case-sensitive) or the words that announce it (``keywords``,
case-insensitive). The :class:`Scanner` finds those literals with ``bytes.find``
and runs the rule's regex only at each hit, so text without a hit costs one
``find`` per literal; that keeps a pure-Python scan of megabytes of JSON
cassettes fast. JSON files are scanned twice over: the raw text, and every
decoded string (with its key as context, descending into strings that hold JSON,
such as a tool call's ``arguments``, and base64 in a tool's bytes result,
``{"$bytes": ...}``), so a key escaped inside JSON inside JSON is found and
reported with its JSON path and line. Binary content is scanned for key shapes
in its runs of printable text, as ``strings`` prints them.

A :class:`Finding` never holds the secret: only a masked form and a stable
fingerprint, which is also what ``[tool.cassette] secrets_allow`` lists.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import re
import string
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

from cassette.config import resolve_path
from cassette.core import sse
from cassette.core.compression import GZIP_MAGIC, CompressedDataError, gunzip, salvage
from cassette.errors import CassetteConfigError, CassetteError
from cassette.store.blobs import BlobStore, default_store_for

__all__ = [
    "Finding",
    "Scanner",
    "SecretRule",
    "default_rules",
    "redact_stream",
    "redact_text",
    "rules_from_plugins",
    "shannon_entropy",
]


@dataclass(frozen=True, eq=False)
class SecretRule:
    """One kind of secret.

    The regex is tried at every place where one of ``prefixes`` (case-sensitive)
    or ``keywords`` (case-insensitive; write them in lower case and make the
    regex accept any case for them) occurs: it must match *starting there* (or up
    to ``lookbehind`` characters earlier) and within ``window`` characters. A
    rule with neither prefixes nor keywords has its regex searched over the
    whole text, which is slow. The secret is the first capturing group that
    took part in the match, or the whole match. Regexes must be ASCII: they run
    on UTF-8 bytes.

    ``skip_base64=True`` promises that the regex cannot match at a literal deep
    inside a long base64 run (letters, digits, ``+`` and ``/``: embeddings,
    images, audio): true for a rule that needs a boundary before its literal
    (like ``_L`` in the built-in rules) or a separator soon after it (a
    keyword followed by ``=`` or ``:``). The scanner then does not look for that
    rule's literals in the middle of runs of 256 or more such characters
    (anything within 32 characters of a run's start or 96 of its end is still
    looked at), which is most of the bytes of a large cassette.

    Example::

        SecretRule(
            id="acme-token",
            description="Acme API token",
            prefixes=("acme_",),
            regex=re.compile(r"(?<![A-Za-z0-9_])acme_[A-Za-z0-9]{32}(?![A-Za-z0-9_])"),
            entropy=3.0,
        )
    """

    id: str
    description: str
    prefixes: tuple[str, ...]
    regex: re.Pattern[str]
    entropy: float | None = None
    validate: Callable[[str], bool] | None = None
    keywords: tuple[str, ...] = ()
    window: int = 512
    lookbehind: int = 0
    skip_base64: bool = False


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
SCAN_VERSION = 7


def shannon_entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character.

    Example::

        shannon_entropy("aaaa") == 0.0
    """
    n = len(text)
    if not n:
        return 0.0
    counts = Counter(text).values()
    if n < len(_C_LOG2_C):  # -sum(c/n * log2(c/n)) = log2(n) - sum(c * log2(c)) / n, summed in C
        return max(math.log2(n) - sum(map(_C_LOG2_C.__getitem__, counts)) / n, 0.0)
    return -sum(c / n * math.log2(c / n) for c in counts)


# c * log2(c) for each count c a secret's characters can have (every rule's value is shorter)
_C_LOG2_C = [0.0, *(c * math.log2(c) for c in range(1, 4097))]


def fingerprint(rule_id: str, secret: str) -> str:
    """Stable id of one secret under one rule: first 16 hex of sha256(rule, secret)."""
    return hashlib.sha256(f"{rule_id}\x00{secret}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def mask(rule: SecretRule, secret: str) -> str:
    """Show the rule's literal prefix and the last 4 characters, never the whole secret.

    Example::

        mask(openai_rule, key) == "sk-proj-…Xy12"
    """
    head = ""
    for p in rule.prefixes:
        if len(p) > len(head) and secret.startswith(p):
            head = p
    head = head[:16]
    tail = secret[-4:] if len(secret) - len(head) >= 12 else ""
    return f"{head}…{tail}"


def default_rules() -> list[SecretRule]:
    """The built-in rules, without going through the plugin manager.

    Example::

        Scanner(default_rules()).scan(Path("c.json").read_bytes(), "c.json")
    """
    from cassette.plugins.secret_rules import RULES

    return list(RULES)


def rules_from_plugins(pm: Any) -> list[SecretRule]:
    """Every rule returned by the ``cassette_secret_rules`` hook, in plugin order.

    Example::

        rules = rules_from_plugins(get_plugin_manager())
    """
    rules: list[SecretRule] = []
    for batch in pm.hook.cassette_secret_rules():
        for rule in batch or ():
            if not isinstance(rule, SecretRule):
                raise CassetteConfigError(
                    f"a cassette_secret_rules hook returned {rule!r}; expected cassette.SecretRule "
                    "objects. Fix the plugin that returns it."
                )
            rules.append(rule)
    return rules


# (rule index, start, end) of a secret in a byte string
_Hit = tuple[int, int, int]
# Literals are found through a shared anchor: one compiled regex per anchor,
# the anchor followed by a branch per literal that checks the literal's bytes
# around it with a look-behind and a look-ahead. The regex engine's literal
# prefix search and those checks run in C, so Python sees only real
# occurrences of a literal; one pass per anchor beats one pass per literal.
_PREFIX_ANCHORS = (b"_", b"-", b"~", b"A", b"J")
_KEYWORD_ANCHORS = (b"key", b"token", b"secret", b"pass", b"pin")

# (offset of the anchor in the literal, literal, rule indexes)
_Entry = tuple[int, bytes, tuple[int, ...]]


_Anchor = tuple[bytes, re.Pattern[bytes], list[_Entry]]

# Base64 runs (embeddings, images, audio) are most of a large cassette's bytes.
# For rules with skip_base64, literals are looked for in a copy of the text with
# the middle of every long run cut out (see SecretRule).
_B64_CLASS = bytes(
    0x61 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/") else 0x20 for i in range(256)
)
_RUN_MIN = 256
_RUN_HEAD = 32
_RUN_TAIL = 96
# a short needle: the search for a long one spends more on preparing it than on searching
_RUN_NEEDLE = b"a" * 32
# Text shorter than this is searched whole: cutting cannot pay for itself.
_CUT_FROM = 4096


def _anchors(literals: dict[bytes, list[int]], candidates: tuple[bytes, ...]) -> list[_Anchor]:
    groups: dict[bytes, list[_Entry]] = {}
    for lit, idxs in literals.items():
        needle = next((a for a in candidates if a in lit), lit)
        groups.setdefault(needle, []).append((lit.find(needle), lit, tuple(idxs)))
    anchors = []
    for needle, entries in groups.items():
        branches = []
        for offset, lit, _ in entries:
            head, tail = lit[: offset + len(needle)], lit[offset + len(needle) :]
            branch = b""
            if offset:
                branch += b"(?<=" + re.escape(head) + b")"
            if tail:
                branch += b"(?=" + re.escape(tail) + b")"
            branches.append(branch)
        pattern = re.escape(needle)
        if all(branches):
            pattern += b"(?:" + b"|".join(branches) + b")"
        anchors.append((needle, re.compile(pattern), entries))
    return anchors


class _Tables:
    """The anchor tables of one group of rules: prefixes (case-sensitive) and keywords (lower case)."""

    def __init__(self, prefixes: dict[bytes, list[int]], keywords: dict[bytes, list[int]]) -> None:
        self.prefixes = _anchors(prefixes, _PREFIX_ANCHORS)
        self.keywords = _anchors(keywords, _KEYWORD_ANCHORS)
        self.longest = max(map(len, [*prefixes, *keywords]), default=0)

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.keywords)


class _Cut:
    """``data`` with the middle of its long base64 runs cut out, and the way back to ``data``'s offsets."""

    def __init__(self, data: bytes, keep: int) -> None:
        mapped = data.translate(_B64_CLASS)
        pieces: list[bytes] = []
        self.starts: list[int] = []  # where each piece starts in the cut text
        self.origins: list[int] = []  # ... and in data
        pos = at = 0
        find = mapped.find
        s = find(_RUN_NEEDLE)
        head, tail = _RUN_HEAD + keep, _RUN_TAIL + keep
        while s >= 0:
            e = find(b" ", s + len(_RUN_NEEDLE))
            if e < 0:
                e = len(data)
            if e - s >= _RUN_MIN and e - s > head + tail + 64:
                piece = data[pos : s + head]
                pieces.append(piece)
                self.starts.append(at)
                self.origins.append(pos)
                at += len(piece) + 1
                pos = e - tail
            s = find(_RUN_NEEDLE, e)
        pieces.append(data[pos:])
        self.starts.append(at)
        self.origins.append(pos)
        # NUL is in no literal, so no literal is found across a cut
        self.text = b"\x00".join(pieces) if len(pieces) > 1 else data

    def origin(self, p: int) -> int:
        j = bisect_right(self.starts, p) - 1
        return self.origins[j] + p - self.starts[j]


class _Engine:
    """The compiled form of a rule list: anchor tables and bytes regexes."""

    def __init__(self, rules: Sequence[SecretRule]) -> None:
        self.rules = tuple(rules)
        self.bregex: list[re.Pattern[bytes]] = []
        # for a rule with a lookbehind: the regex after a lazy lead-in of at most that many bytes,
        # so one match() finds the leftmost start up to the literal instead of search() running on
        self.lead: list[re.Pattern[bytes] | None] = []
        lits: list[tuple[dict[bytes, list[int]], dict[bytes, list[int]]]] = [({}, {}), ({}, {})]
        self.full: list[int] = []
        for i, rule in enumerate(self.rules):
            if not isinstance(rule, SecretRule):
                raise CassetteConfigError(f"secret rule {rule!r} is not a cassette.SecretRule.")
            try:
                pattern = rule.regex.pattern.encode("ascii")
                flags = rule.regex.flags & ~(re.UNICODE | re.ASCII)
                self.bregex.append(re.compile(pattern, flags))
            except (UnicodeEncodeError, re.error, TypeError, AttributeError) as exc:
                raise CassetteConfigError(
                    f"secret rule {rule.id!r}: its regex must be a compiled ASCII str pattern ({exc}). "
                    "Rewrite the pattern with ASCII classes."
                ) from exc
            self.lead.append(_lead_in(pattern, flags, rule.lookbehind))
            prefixes, keywords = lits[1 if rule.skip_base64 else 0]
            for p in rule.prefixes:
                # "sk-proj-" needs no search of its own when the rule also has "sk-"
                if p and not any(q != p and p.startswith(q) for q in rule.prefixes):
                    prefixes.setdefault(p.encode(), []).append(i)
            for k in rule.keywords:
                if k:
                    keywords.setdefault(k.lower().encode(), []).append(i)
            if not rule.prefixes and not rule.keywords:
                self.full.append(i)
        self.whole = _Tables(*lits[0])  # searched over the whole text
        self.cut = _Tables(*lits[1])  # searched with long base64 runs cut short
        kws = {k for t in lits for k in t[1]}
        self._kw_test = (
            re.compile(b"|".join(map(re.escape, sorted(kws, key=len, reverse=True)))) if kws else None
        )
        self._ctx: dict[str, bool] = {}

    def cut_of(self, data: bytes) -> _Cut | None:
        """``data`` with its long base64 runs cut short, or None where nothing would be cut."""
        if not self.cut or len(data) < _CUT_FROM:
            return None
        c = _Cut(data, self.cut.longest)
        return c if c.text is not data else None

    def has_keyword(self, name: str) -> bool:
        """Whether a JSON key holds one of the keywords (so its values need the decoded scan)."""
        got = self._ctx.get(name)
        if got is None:
            test = self._kw_test
            got = test is not None and test.search(name.lower().encode("utf-8", "surrogatepass")) is not None
            if len(self._ctx) > 10_000:
                self._ctx.clear()
            self._ctx[name] = got
        return got

    def hits(
        self,
        data: bytes,
        starts: list[int] | None = None,
        cands: list[int] | None = None,
        cut: _Cut | None = None,
        keyword_cands: list[int] | None = None,
        keywords: bool = True,
    ) -> list[_Hit]:
        """Secrets in ``data``, overlaps resolved in rule order.

        With ``starts`` (segment offsets, segments separated by one byte), a
        match never crosses from one segment into the next. ``cands`` collects
        the offset of every literal and keyword found (whether or not a rule
        matched there), ``keyword_cands`` those of keywords alone. ``cut`` is
        :meth:`cut_of` ``data``, if the caller made it. ``keywords=False``
        looks for key shapes (prefixes) only, not for values a keyword announces.
        """
        raw: set[_Hit] = set()
        for tables, cut_runs in ((self.whole, False), (self.cut, True)):
            if not tables:
                continue
            hay = data
            origin = None
            if cut_runs and starts is None:
                c = cut if cut is not None else self.cut_of(data)
                if c is not None:
                    hay, origin = c.text, c.origin
            if tables.prefixes:
                self._scan_table(tables.prefixes, hay, data, starts, raw, origin, cands)
            if tables.keywords and keywords:
                # bytes.lower() is ASCII-only, so offsets stay put
                found: list[int] | None = [] if cands is not None or keyword_cands is not None else None
                self._scan_table(tables.keywords, hay.lower(), data, starts, raw, origin, found)
                if found:
                    if cands is not None:
                        cands.extend(found)
                    if keyword_cands is not None:
                        keyword_cands.extend(found)
        for i in self.full:
            for m in self.bregex[i].finditer(data):
                s0, e0 = _secret_span(m)
                if starts is not None:
                    seg = bisect_right(starts, s0) - 1
                    if seg + 1 < len(starts) and e0 >= starts[seg + 1]:
                        continue
                if self._keep(i, data[s0:e0]):
                    raw.add((i, s0, e0))
        return _resolve(raw)

    def _scan_table(
        self,
        anchors: list[_Anchor],
        hay: bytes,
        data: bytes,
        starts: list[int] | None,
        raw: set[_Hit],
        origin: Callable[[int], int] | None = None,
        cands: list[int] | None = None,
    ) -> None:
        n = len(data)
        nstarts = len(starts) if starts is not None else 0
        try_at = self._try_at
        startswith = hay.startswith
        for needle, anchor, entries in anchors:
            if needle not in hay:  # stops at the first occurrence: cheap, and spares a regex pass
                continue
            for m in anchor.finditer(hay):
                q = m.start()
                for offset, lit, idxs in entries:
                    p = q - offset
                    if p < 0 or not startswith(lit, p):
                        continue
                    if origin is not None:
                        p = origin(p)
                    if cands is not None:
                        cands.append(p)
                    if starts is None:
                        lo, hi = 0, n
                    else:
                        seg = bisect_right(starts, p) - 1
                        lo = starts[seg]
                        hi = starts[seg + 1] - 1 if seg + 1 < nstarts else n
                    for i in idxs:
                        hit = try_at(i, data, p, lo, hi)
                        if hit is not None:
                            raw.add(hit)

    def _try_at(self, i: int, data: bytes, p: int, lo: int, hi: int) -> _Hit | None:
        rule = self.rules[i]
        end = min(p + rule.window, hi)
        if rule.lookbehind:
            begin = max(p - rule.lookbehind, lo)
            lead = self.lead[i]
            if lead is not None:
                m = lead.match(data, begin, end)
                if m is None or m.start(1) > p:
                    return None
                s, e = _secret_span(m, 2)
            else:
                m = self.bregex[i].search(data, begin, end)
                if m is None or m.start() > p:
                    return None
                s, e = _secret_span(m)
        else:
            m = self.bregex[i].match(data, p, end)
            if m is None:
                return None
            s, e = _secret_span(m)
        if e <= s or not self._keep(i, data[s:e]):
            return None
        return (i, s, e)

    def _keep(self, i: int, secret: bytes) -> bool:
        rule = self.rules[i]
        if rule.entropy is None and rule.validate is None:
            return True
        text = secret.decode("utf-8", "replace")
        if rule.entropy is not None and shannon_entropy(text) < rule.entropy:
            return False
        return rule.validate is None or bool(rule.validate(text))


def _lead_in(pattern: bytes, flags: int, lookbehind: int) -> re.Pattern[bytes] | None:
    """``[\\s\\S]{0,lookbehind}?(pattern)``, or None where wrapping would change the pattern's meaning."""
    if not lookbehind or re.search(rb"\\[1-9]|\(\?P=|^\(\?[aiLmsux]+\)", pattern):
        return None  # a numbered back-reference would shift; global flags must stay first
    try:
        return re.compile(b"[\\s\\S]{0,%d}?(" % lookbehind + pattern + b")", flags)
    except re.error:
        return None


def _secret_span(m: re.Match[bytes], first: int = 1) -> tuple[int, int]:
    for g in range(first, (m.re.groups or 0) + 1):
        s = m.start(g)
        if s >= 0:
            return s, m.end(g)
    return m.span(first - 1)


def _resolve(raw: set[_Hit]) -> list[_Hit]:
    """Keep one finding per place: an earlier (more specific) rule wins an overlap."""
    if len(raw) <= 1:
        return list(raw)
    kept: list[_Hit] = []
    for hit in sorted(raw):
        _, s, e = hit
        if all(e <= ks or s >= ke for _, ks, ke in kept):
            kept.append(hit)
    kept.sort(key=lambda h: (h[1], h[0]))
    return kept


_ENGINES: dict[tuple[int, ...], tuple[tuple[SecretRule, ...], _Engine]] = {}


def _engine_for(rules: Sequence[SecretRule] | Scanner) -> _Engine:
    if isinstance(rules, Scanner):
        return rules._engine
    last = _LAST[0]
    if (
        last is not None
        and last[0] is rules
        and len(rules) == len(last[1].rules)
        and (not rules or (rules[0] is last[1].rules[0] and rules[-1] is last[1].rules[-1]))
    ):
        return last[1]  # the redactor passes the same list for every string
    engine = _compiled(rules)
    _LAST[0] = (rules, engine)
    return engine


_LAST: list[tuple[Sequence[SecretRule], _Engine] | None] = [None]


def _compiled(rules: Sequence[SecretRule]) -> _Engine:
    key = tuple(map(id, rules))
    cached = _ENGINES.get(key)
    if cached is not None:
        return cached[1]
    engine = _Engine(rules)
    if len(_ENGINES) > 64:
        _ENGINES.clear()
    _ENGINES[key] = (engine.rules, engine)  # holding the rules keeps their ids unique
    return engine


def redact_text(text: str, rules: Sequence[SecretRule] | Scanner) -> str:
    """Replace every detected secret in ``text`` by ``<redacted:RULE_ID>``.

    Ids, UUIDs, hashes and e-mail addresses are left alone; text without a
    secret is returned as is (the same object).

    Example::

        redact_text("Authorization: Bearer " + key, default_rules())
        # 'Authorization: Bearer <redacted:openai-api-key>'
    """
    engine = _engine_for(rules)
    data = text.encode("utf-8", "surrogatepass")
    keyword_cands: list[int] = []
    hits = engine.hits(data, keyword_cands=keyword_cands)
    if keyword_cands:  # YAML in the text: each item of a list, each value of a map a keyword names
        listed = _list_hits(engine, data, keyword_cands, None)
        if listed:
            hits = _resolve({*hits, *listed})
    if not hits:
        return text
    out: list[bytes] = []
    pos = 0
    for i, s, e in hits:
        out.append(data[pos:s])
        out.append(f"<redacted:{engine.rules[i].id}>".encode())
        pos = e
    out.append(data[pos:])
    return b"".join(out).decode("utf-8", "surrogatepass")


# -- streamed responses: text that arrives in pieces ---------------------------------------------


@dataclass(slots=True)
class _Piece:
    """One delta of a channel: the parsed object holding its text, the field, and its JSON path."""

    event: int
    holder: dict[str, Any]
    field: str
    path: tuple[str | int, ...]

    @property
    def text(self) -> str:
        return str(self.holder[self.field])


class _Stream:
    """The text a streamed (SSE) response delivers in pieces, gathered per channel.

    A channel is one text the client assembles from deltas: a chat choice's ``delta.content``
    (and its other text fields) or one tool call's ``function.arguments``, per choice and
    tool-call index; a Responses API ``response.….delta`` per event type, output item and
    part; an Anthropic ``content_block_delta``'s ``text``, ``partial_json`` or ``thinking``,
    per block index. Events that are not JSON, or of none of these shapes, are in no channel.
    """

    def __init__(self, events: Sequence[Any]) -> None:
        self.events = events
        # per event in a channel: its text before the JSON, the parsed JSON, the JSON text, the text after
        self.parsed: dict[int, tuple[str, dict[str, Any], str, str]] = {}
        self.channels: dict[tuple[Any, ...], list[_Piece]] = {}
        for n, event in enumerate(events):
            if type(event) is not str or "delta" not in event:
                continue  # every delta event of the three APIs names a delta
            parsed = _sse_json(event)
            if parsed is None:
                continue
            found = _deltas(parsed[1])
            if found:
                self.parsed[n] = parsed
                for channel, holder, field, path in found:
                    self.channels.setdefault(channel, []).append(_Piece(n, holder, field, path))

    def hits(self, engine: _Engine) -> list[tuple[list[_Piece], bytes, list[int], list[_Hit]]]:
        """Per channel of two or more pieces with a secret in its joined text: its pieces, that
        text (UTF-8), where each piece starts in it, and the secrets (offsets in that text)."""
        channels = [pieces for pieces in self.channels.values() if len(pieces) > 1]
        if not channels:
            return []
        texts = ["".join([p.holder[p.field] for p in pieces]) for pieces in channels]
        data, starts = _joined(texts)  # one engine pass; a secret never crosses from one channel to the next
        found: dict[int, list[_Hit]] = {}
        for i, s, e in engine.hits(data, starts):
            c = bisect_right(starts, s) - 1
            found.setdefault(c, []).append((i, s - starts[c], e - starts[c]))
        out = []
        for c, hits in found.items():
            text = texts[c].encode("utf-8", "surrogatepass")
            sizes = (len(p.text.encode("utf-8", "surrogatepass")) for p in channels[c])
            out.append((channels[c], text, [0, *accumulate(sizes)][:-1], hits))
        return out

    def redacted(self, engine: _Engine) -> list[Any] | None:
        """The events with each secret of a channel replaced, or None when there is none.

        The piece where a secret starts gets ``<redacted:RULE_ID>`` in its place and loses the
        secret's characters; the following pieces lose theirs (a piece may become empty). Only
        the events so changed are written anew, in the layout their JSON had.
        """
        changed: dict[int, list[tuple[_Piece, str]]] = {}
        for pieces, data, starts, hits in self.hits(engine):
            spans = [(s, e, f"<redacted:{engine.rules[i].id}>".encode()) for i, s, e in hits]
            for piece, a in zip(pieces, starts):
                b = a + len(piece.text.encode("utf-8", "surrogatepass"))
                new = _without_spans(data, a, b, spans)
                if new is not None:
                    changed.setdefault(piece.event, []).append((piece, new))
        if not changed:
            return None
        events = list(self.events)
        for n, edits in changed.items():
            head, doc, body, tail = self.parsed[n]
            separators, ascii_only = _json_layout(doc, body)
            for piece, new in edits:
                piece.holder[piece.field] = new
            events[n] = head + json.dumps(doc, separators=separators, ensure_ascii=ascii_only) + tail
        return events


def _joined(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """``texts`` joined by newlines as UTF-8, for one engine pass, and where each starts in it."""
    joined = "\n".join(texts)
    data = joined.encode("utf-8", "surrogatepass")
    if joined.isascii():
        sizes: Iterable[int] = (len(t) + 1 for t in texts)
    else:
        sizes = (len(t.encode("utf-8", "surrogatepass")) + 1 for t in texts)
    return data, [0, *accumulate(sizes)][:-1]


def _without_spans(data: bytes, a: int, b: int, spans: list[tuple[int, int, bytes]]) -> str | None:
    """The piece ``data[a:b]`` with the parts of ``spans`` in it cut out, each span's placeholder
    where it starts; None when no span touches it."""
    out: list[bytes] = []
    pos = a
    for s, e, placeholder in spans:
        if e <= a or s >= b:
            continue
        if s >= a:
            out.append(data[pos:s])
            out.append(placeholder)
        pos = max(pos, min(e, b))
    if pos == a and not out:
        return None
    out.append(data[pos:b])
    return b"".join(out).decode("utf-8", "surrogatepass")


def _json_layout(doc: Any, body: str) -> tuple[tuple[str, str], bool]:
    """The ``json.dumps`` separators and ``ensure_ascii`` that wrote ``body`` (else the nearest)."""
    ascii_only = body.isascii()
    for separators in ((",", ":"), (", ", ": ")):
        if json.dumps(doc, separators=separators, ensure_ascii=ascii_only) == body:
            return separators, ascii_only
    spaced = '", "' in body or '": ' in body
    return ((", ", ": ") if spaced else (",", ":")), ascii_only


def _sse_json(event: str) -> tuple[str, dict[str, Any], str, str] | None:
    """An event's text before its one data line's JSON object, the object, its text, and after."""
    span = sse.data_span(event)
    if span is None or not event.startswith("{", span[0]):
        return None  # not JSON, or data over several lines: left as it is
    start, end = span
    body = event[start:end]
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(doc) is not dict:
        return None
    return event[:start], doc, body, event[end:]


def _scalar(value: Any) -> Any:
    """A channel key part: JSON scalars as they are, anything else by its text."""
    return value if value is None or type(value) in (str, int, float, bool) else repr(value)


# A delta: (channel, the object holding the text, its field, the field's JSON path in the event)
_Delta = tuple[tuple[Any, ...], dict[str, Any], str, tuple[str | int, ...]]


def _deltas(doc: dict[str, Any]) -> list[_Delta]:
    """The text deltas of one parsed stream event (OpenAI chat, OpenAI Responses, Anthropic)."""
    out: list[_Delta] = []
    kind = doc.get("type")
    choices = doc.get("choices")
    if type(choices) is list:  # a chat completion chunk
        for pos, choice in enumerate(choices):
            delta = choice.get("delta") if type(choice) is dict else None
            if type(delta) is not dict:
                continue
            ci = _scalar(choice.get("index", pos))
            at: tuple[str | int, ...] = ("choices", pos, "delta")
            for name, value in delta.items():
                if type(value) is str and name != "role":  # content, refusal, reasoning_content
                    out.append((("choice", ci, name), delta, name, (*at, name)))
                elif name == "function_call" and type(value) is dict and type(value.get("arguments")) is str:
                    out.append((("choice", ci, name), value, "arguments", (*at, name, "arguments")))
                elif name == "tool_calls" and type(value) is list:
                    for tpos, call in enumerate(value):
                        fn = call.get("function") if type(call) is dict else None
                        if type(fn) is dict and type(fn.get("arguments")) is str:
                            channel = ("choice", ci, "tool", _scalar(call.get("index", tpos)))
                            out.append((channel, fn, "arguments", (*at, name, tpos, "function", "arguments")))
    elif kind == "content_block_delta":  # Anthropic
        delta = doc.get("delta")
        if type(delta) is dict:
            for name in ("text", "partial_json", "thinking"):
                if type(delta.get(name)) is str:
                    out.append((("block", _scalar(doc.get("index")), name), delta, name, ("delta", name)))
    elif (
        type(kind) is str
        and kind.startswith("response.")
        and kind.endswith(".delta")
        and kind != "response.audio.delta"  # base64 audio, not text
        and type(doc.get("delta")) is str
    ):  # the Responses API: output text, function call arguments, reasoning, refusals
        parts = [_scalar(doc.get(k)) for k in ("item_id", "output_index", "content_index", "summary_index")]
        out.append((("response", kind, *parts), doc, "delta", ("delta",)))
    return out


def redact_stream(events: list[Any], rules: Sequence[SecretRule] | Scanner) -> list[Any]:
    """A streamed response's events with every secret split over their deltas made ``<redacted:RULE_ID>``.

    Each channel's pieces (see :class:`_Stream`) are joined and the rules run over the joined
    text; a secret's first piece gets the placeholder, and no piece keeps any of the secret's
    characters. Events without a secret are returned untouched (the same list when none has one).

    Example::

        response["events"] = redact_stream(response["events"], default_rules())
    """
    engine = _engine_for(rules)
    new = _Stream(events).redacted(engine)
    return events if new is None else new


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
        from cassette.config import load_config

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
        self._engine = _Engine(list(rules))
        self.allowlist = frozenset(allowlist)
        # reads the blob a manifest references (see `scan`); None: the store of the file scanned
        self.blobs = blobs
        self.incomplete = False  # the last scan missed a blob it needed (its result is not cached)
        self._cache: dict[str, list[_Row]] = {}

    @property
    def rules(self) -> tuple[SecretRule, ...]:
        return self._engine.rules

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
            listed = _list_hits(engine, raw, keyword_cands, None)
            if listed:
                raw_hits = _resolve({*raw_hits, *listed})
        short = cut.text if cut is not None else raw  # everything but the middle of long base64 runs
        quiet = (
            not raw_hits
            and not _escape_may_hide(raw, cands, short)
            and b"$bytes" not in short
            and not _keyword_list(raw, keyword_cands)
            and not _escaped_yaml_list(raw, keyword_cands)
        )
        # a cassette with a streamed response whose events carry deltas: a secret may be split over
        # them (neither word is ever inside a long base64 run, so the cut text is searched); events
        # the writer moved to the blob store (every one, when each carries logprobs) may be them
        streamed = (
            as_json is not False
            and b'"events"' in short
            and (b"delta" in short or (blobs is not None and b'"$blob"' in short))
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
            named = _format_path(path)
            rows.extend((r, line, named, m, fp) for r, _, _, m, fp in self._scan_binary(data))
        texts = got.texts
        if not texts:
            return rows
        data, starts = _joined(texts)
        keyword_cands: list[int] = []
        hits = engine.hits(data, starts, keyword_cands=keyword_cands)
        if keyword_cands:  # a string holding YAML: each item of a list a keyword names
            listed = _list_hits(engine, data, keyword_cands, starts)
            if listed:
                hits = _resolve({*hits, *listed})
        after: dict[bytes, int] = {}
        for i, s, e in hits:
            secret = data[s:e]
            seg = bisect_right(starts, s) - 1
            # a secret decoded from base64 is not in the file: its line is the base64 value's
            where = got.encoded[seg].encode() if seg in got.encoded else secret
            offset = _locate(raw, where, after.get(where, 0))
            if offset >= 0:
                after[where] = offset + 1
            line = lines.line(offset) if offset >= 0 else 1
            rows.append(self._row(i, secret, line, _format_path(got.paths[seg])))
        return rows

    def _scan_streams(
        self,
        doc: dict[str, Any],
        raw: bytes,
        lines: _LineIndex,
        seen: set[tuple[str, str]],
        blobs: _Blobs | None = None,
    ) -> list[_Row]:
        """Secrets that a streamed response's deltas hold only together (see `_Stream`), each at the
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
            for pieces, data, starts, hits in _Stream(events).hits(self._engine):
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
                    rows.append((row[0], line, _format_path(path), row[3], row[4]))
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
        if m.group(2) == b"[":
            return True
        q = p
        while q > 0 and p - q < 40 and raw[q - 1] in _KEY_CHARS:
            q -= 1
        if _plural_name((raw[q:p] + m.group(1)).decode("ascii")):
            return True
    return False


# YAML block lists (`api_keys:` ending its line, then `- item` lines): the raw text names the key only
# before the first item, so each item is scanned again as `key: item`.
# After a keyword: the rest of a key that ends its line (quoted or not, a comment after it).
_YAML_KEY_END = re.compile(rb"""([A-Za-z0-9_.-]{0,40})["']?[ \t]*:[ \t]*(?:#[^\r\n]*)?\r?\n""")
# A line's text before the keyword: its indent (and a `- ` when the key opens a list item), a quote.
_YAML_KEY_HEAD = re.compile(rb"""([ \t]*(?:-[ \t]+)?)["']?([A-Za-z0-9_.-]{0,40})\Z""")
# ... and the same inside a JSON string, newlines escaped (`"api_keys:\n  - …"`), for the raw text's test.
_ESCAPED_YAML_LIST = re.compile(
    rb"""[A-Za-z0-9_.-]{0,40}\\*["']?[ \t]*:[ \t]*(?:\\+r)?\\+n(?:[ \t]|\\+t)*-[ \t]"""
)
# ... and a key ending its line before an indented key (`"api_keys:\n  prod: …"`), for a map.
_ESCAPED_YAML_MAP = re.compile(
    rb"""([A-Za-z0-9_.-]{0,40})\\*["']?[ \t]*:[ \t]*(?:\\+r)?\\+n(?:[ \t]|\\+t)+(?:\\*["'])?[A-Za-z0-9_$]"""
)
_YAML_MAX_ITEMS = 1000


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
        if m is None:
            continue
        q = p
        while q > 0 and p - q < 40 and raw[q - 1] in _KEY_CHARS:
            q -= 1
        if _plural_name((raw[q:p] + m.group(1)).decode("ascii")):
            return True
    return False


def _yaml_items(
    data: bytes, p: int, lo: int, hi: int, keyword: Callable[[str], bool] | None = None
) -> tuple[bytes, list[tuple[int, int]]] | None:
    """The key whose name holds the keyword at ``p`` and the (start, end) of each item of the YAML
    block list it names, or of each value of the block map it names when its name is a plural
    secret name (see :func:`_yaml_map`), within ``data[lo:hi]``; None when the key names neither."""
    m = _YAML_KEY_END.match(data, p, hi)
    if m is None:
        return None
    ls = data.rfind(b"\n", lo, p) + 1 or lo
    head = _YAML_KEY_HEAD.search(data, ls, p)
    if head is None:
        return None
    name = head.group(2) + m.group(1)
    # a key after other text (`Keys: api_keys:`, a JSON string's first line) has no known column
    column = len(head.group(1)) if head.start() == ls else 0
    items: list[tuple[int, int]] = []
    item_column = -1
    pos = m.end()
    while pos < hi and len(items) < _YAML_MAX_ITEMS:
        eol = data.find(b"\n", pos, hi)
        if eol < 0:
            eol = hi
        line = data[pos:eol].rstrip(b"\r")
        body = line.lstrip(b" \t")
        indent = len(line) - len(body)
        if not body or body[:1] == b"#" or indent > item_column >= 0:
            pos = eol + 1  # a blank line, a comment, or inside an item
            continue
        if body[:2] not in (b"- ", b"-\t") or indent < column or (item_column >= 0 and indent != item_column):
            if not items and indent > column and _plural_name(name.decode("ascii")):
                # no list: a map under a plural name (`api_keys:` then `  prod: …`)
                text = name.decode("ascii")
                values = _yaml_map(data, pos, hi, column, keyword, _says_password(text))
                return (name, values) if values else None
            break  # the list is over (or there was none)
        item_column = indent
        start, end = pos + indent + 1, pos + len(line)
        while start < end and data[start] in b" \t":
            start += 1
        items.append((start, end))
        pos = eol + 1
    return (name, items) if len(items) > 1 else None


# A line of a YAML block map: its key, plain or quoted, then `:` and a blank or the line's end.
_YAML_MAP_KEY = re.compile(
    rb"""(?:"([^"\r\n]{1,80})"|'([^'\r\n]{1,80})'|([A-Za-z0-9_$][A-Za-z0-9_.$ /-]{0,79}?))"""
    rb"""[ \t]*:(?:[ \t]+|\Z)"""
)


def _yaml_map(
    data: bytes, pos: int, hi: int, column: int, keyword: Callable[[str], bool] | None, numeric: bool
) -> list[tuple[int, int]]:
    """The (start, end) of each value of the YAML block map starting at ``pos`` (its lines indented
    deeper than ``column``) under a plural secret name: its values, and the scalars nested deeper in
    maps and lists of scalars (``passwords:`` / ``  prod:`` / ``    db: …``), as the JSON scan reads
    ``{"passwords": {"prod": {"db": …}}}`` (see :func:`_collect`). A key whose name holds a keyword
    is left to the scan of its own line, and so is, nested, a key describing the secret (``id``,
    ``name``, ``created_at``), with what is under it; so are the records of a list (``- name: …``)
    and block scalars (``key: |``). A number nested deeper than the map's values counts only when
    the plural name says password (``numeric``), as in JSON."""
    items: list[tuple[int, int]] = []
    openers: list[int] = []  # the indent of each key whose nested map the line is in
    skip = -1  # lines indented deeper than this belong to something not read
    while pos < hi and len(items) < _YAML_MAX_ITEMS:
        eol = data.find(b"\n", pos, hi)
        if eol < 0:
            eol = hi
        line = data[pos:eol].rstrip(b"\r")
        body = line.lstrip(b" \t")
        indent = len(line) - len(body)
        at = pos + indent
        pos = eol + 1
        if not body or body[:1] == b"#":
            continue
        if indent <= column:
            break  # the map is over
        if skip >= 0:
            if indent > skip:
                continue
            skip = -1
        while openers and openers[-1] >= indent:
            openers.pop()
        depth = len(openers) + 1
        if body[:2] in (b"- ", b"-\t"):
            rest = body[2:].lstrip(b" \t")
            if _YAML_MAP_KEY.match(rest) is not None:
                skip = indent  # a record in a list: read by its own names
            elif rest and rest[:1] != b"#":
                items.append((at + len(body) - len(rest), at + len(body)))
            continue
        m = _YAML_MAP_KEY.match(body)
        if m is None:
            if not items and not openers:
                return []  # not a map after all
            continue  # the rest of a value written over several lines
        name = (m.group(1) or m.group(2) or m.group(3)).decode("utf-8", "replace")
        value = body[m.end() :]
        own = (depth > 1 and _describes(name)) or (keyword is not None and keyword(name))
        if not value or value[:1] == b"#":
            if own:
                skip = indent
            else:
                openers.append(indent)
            continue
        if own:
            continue
        if value[:1] in (b"|", b">"):
            skip = indent  # a block scalar: its lines are text, not keys
            continue
        if depth > 1 and value.isdigit() and not numeric:
            continue  # a number nested in a key's record (a date, a size), as in JSON
        items.append((at + m.end(), at + len(body)))
    return items


def _list_hits(
    engine: _Engine, data: bytes, keyword_cands: list[int], starts: list[int] | None
) -> list[_Hit]:
    """Secrets in the items of the YAML block lists named by a keyword at one of ``keyword_cands``
    (offsets in ``data``), each item scanned as ``key: item``; with ``starts``, a list never runs
    from one segment into the next."""
    segments: list[bytes] = []
    origins: list[int] = []  # where each segment's item starts in data
    heads: list[int] = []  # the length of each segment's `key: `
    done: set[int] = set()
    for p in sorted(set(keyword_cands)):
        if starts is None:
            lo, hi = 0, len(data)
        else:
            seg = bisect_right(starts, p) - 1
            lo = starts[seg]
            hi = starts[seg + 1] - 1 if seg + 1 < len(starts) else len(data)
        found = _yaml_items(data, p, lo, hi, engine.has_keyword)
        if found is None:
            continue
        name, items = found
        for s, e in items:
            if s in done:
                continue
            done.add(s)
            segments.append(name + b": " + data[s:e])
            origins.append(s)
            heads.append(len(name) + 2)
    if not segments:
        return []
    text = b"\n".join(segments)
    seg_starts = [0, *accumulate(len(x) + 1 for x in segments)][:-1]
    out: list[_Hit] = []
    for i, s, e in engine.hits(text, seg_starts):
        j = bisect_right(seg_starts, s) - 1
        at = s - seg_starts[j] - heads[j]
        if at >= 0:
            out.append((i, origins[j] + at, origins[j] + at + e - s))
    return out


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
    (``"api_keys": {"prod": …}``, see :func:`_plural_name`), or a map or list
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
            if len(v) > 1 and v[0] in "{[" and v[-1] in "}]":
                try:
                    inner = orjson.loads(v)
                except orjson.JSONDecodeError:
                    inner = None
                if isinstance(inner, dict | list):
                    _collect(inner, sub, ctx, out, None)
                    continue
            out.texts.append(f'"{ctx}": "{v}"' if ctx is not None else v)
            out.paths.append(sub)
        elif t is int and (v >= 100_000 or v <= -100_000):
            own = isinstance(k, str) and (not depth or _own_name(k, depth, out))
            ctx = k if own and isinstance(k, str) else key
            if ctx is None or ("pass" not in ctx.lower() and "pin" not in ctx.lower()):
                continue
            if depth > 1 and not own and not _says_password(ctx):
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
                _collect(v, (*path, k), k, out, only, 1 if "$bytes" not in v and _plural_name(k) else 0)
        elif t is list:
            if depth and isinstance(k, str) and not _own_name(k, depth, out):
                _collect(v, (*path, k), key, out, only, depth + 1)
            else:
                _collect(v, (*path, k), k if isinstance(k, str) else key, out, only)


def _own_name(name: str, depth: int, out: _Texts) -> bool:
    """Whether a field of a map under a plural secret name (or nested in one, ``depth`` > 1) is read by
    its own name: one that holds a keyword (scanned as anywhere else), or a nested one that describes
    the secret (``id``, ``name``, ``created_at``)."""
    return (depth > 1 and _describes(name)) or (out.keyword is not None and out.keyword(name))


_PLURALS: dict[str, bool] = {}
_DESCRIBES: dict[str, bool] = {}


def _plural_name(name: str) -> bool:
    """Whether a map's key is the plural of a secret's name (``api_keys``, ``passwords``): each plain
    value in the map is then a secret, as the redactor (``_secret_plural``) holds it."""
    got = _PLURALS.get(name)
    if got is None:
        from cassette.plugins.redact_default import _secret_plural

        got = _secret_plural(name.lower())
        if len(_PLURALS) > 10_000:
            _PLURALS.clear()
        _PLURALS[name] = got
    return got


def _describes(name: str) -> bool:
    """Whether a field nested in a map under a plural secret name describes the secret (``id``,
    ``name``, ``created_at``) rather than holds it, as the redactor (``describes``) holds it."""
    got = _DESCRIBES.get(name)
    if got is None:
        from cassette.plugins.redact_default import describes

        got = describes(name)
        if len(_DESCRIBES) > 10_000:
            _DESCRIBES.clear()
        _DESCRIBES[name] = got
    return got


def _says_password(name: str) -> bool:
    """Whether a name ends in password, passcode or pin (the redactor's ``says_password``)."""
    from cassette.plugins.redact_default import says_password

    return says_password(name)


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


def _format_path(parts: tuple[str | int, ...]) -> str:
    out: list[str] = []
    for p in parts:
        if isinstance(p, int):
            out.append(f"[{p}]")
        elif _IDENT.match(p):
            out.append(f".{p}" if out else p)
        else:
            out.append(f"[{orjson.dumps(p).decode()}]")
    return "".join(out)
