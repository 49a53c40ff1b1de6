"""The compiled form of a rule list: find every rule's literals fast, run its regex only there.

A rule (:class:`~cassette.secrets.rules.SecretRule`) names the literal strings a secret starts with
(``prefixes``, case-sensitive) or the words that announce it (``keywords``, case-insensitive). The
:class:`Engine` finds those literals through a few shared anchors (one compiled regex each, run in
C) and runs the rule's regex only at each hit, so text without a hit costs one search per anchor;
that keeps a pure-Python scan of megabytes of JSON cassettes fast.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Protocol

from cassette.errors import CassetteConfigError
from cassette.secrets.rules import SecretRule, shannon_entropy

__all__ = ["Engine", "HasEngine", "Hit", "Rules", "engine_for", "resolve_overlaps"]


# (rule index, start, end) of a secret in a byte string
Hit = tuple[int, int, int]
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


class Engine:
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
    ) -> list[Hit]:
        """Secrets in ``data``, overlaps resolved in rule order.

        With ``starts`` (segment offsets, segments separated by one byte), a
        match never crosses from one segment into the next. ``cands`` collects
        the offset of every literal and keyword found (whether or not a rule
        matched there), ``keyword_cands`` those of keywords alone. ``cut`` is
        :meth:`cut_of` ``data``, if the caller made it. ``keywords=False``
        looks for key shapes (prefixes) only, not for values a keyword announces.
        """
        raw: set[Hit] = set()
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
        return resolve_overlaps(raw)

    def _scan_table(
        self,
        anchors: list[_Anchor],
        hay: bytes,
        data: bytes,
        starts: list[int] | None,
        raw: set[Hit],
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

    def _try_at(self, i: int, data: bytes, p: int, lo: int, hi: int) -> Hit | None:
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


def resolve_overlaps(raw: set[Hit]) -> list[Hit]:
    """Keep one finding per place: an earlier (more specific) rule wins an overlap."""
    if len(raw) <= 1:
        return list(raw)
    kept: list[Hit] = []
    for hit in sorted(raw):
        _, s, e = hit
        if all(e <= ks or s >= ke for _, ks, ke in kept):
            kept.append(hit)
    kept.sort(key=lambda h: (h[1], h[0]))
    return kept


_ENGINES: dict[tuple[int, ...], tuple[tuple[SecretRule, ...], Engine]] = {}


class HasEngine(Protocol):
    """Anything holding a compiled rule list (a :class:`~cassette.secrets.scan.Scanner`)."""

    @property
    def engine(self) -> Engine: ...


# What the redactors take as rules: a rule list, its compiled form, or a scanner
Rules = Sequence[SecretRule] | Engine | HasEngine


def engine_for(rules: Rules) -> Engine:
    """The compiled form of ``rules`` (compiled once per rule list)."""
    if isinstance(rules, Engine):
        return rules
    if not isinstance(rules, Sequence):
        return rules.engine
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


_LAST: list[tuple[Sequence[SecretRule], Engine] | None] = [None]


def _compiled(rules: Sequence[SecretRule]) -> Engine:
    key = tuple(map(id, rules))
    cached = _ENGINES.get(key)
    if cached is not None:
        return cached[1]
    engine = Engine(rules)
    if len(_ENGINES) > 64:
        _ENGINES.clear()
    _ENGINES[key] = (engine.rules, engine)  # holding the rules keeps their ids unique
    return engine
