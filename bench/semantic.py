"""Workload 6: ``semantic_match`` throughput of the lexical backend, in pairs per second.

Pairs are generated (seeded): an agent's answer of 20-40 words against a short
expected gist, half of them paraphrases, a quarter negated, a quarter with a
changed number. Every text is unique and the backend's per-text cache is
cleared before each round, so each pair is analysed from scratch.
cendor-cassette's ``lexical_score`` is timed on the same pairs for context (a
different, cruder scorer: no negation or number guard).
"""

from __future__ import annotations

import random

from bench._harness import NOT_INSTALLED, BenchConfig, Row, Section, label, median, peer, profile_text, timed

_OPENERS = [
    "Thanks for reaching out!",
    "Sorry about the trouble.",
    "Good news:",
    "I checked your order,",
    "Hi there,",
]
_FACTS = [
    ("I've issued a full refund of ${n} to your card", "refund issued", "I cannot issue a refund of ${n}"),
    ("a replacement ships today by express courier", "replacement sent", "we will not send a replacement"),
    ("your order #{n} was delivered on Tuesday", "order delivered", "your order #{n} was not delivered"),
    ("the voucher for {n}% off is in your inbox", "voucher sent", "no voucher can be offered"),
    ("I opened ticket {n} for our billing team", "ticket opened", "I did not open a ticket"),
]
_TAILS = [
    "It should show up within five business days.",
    "Let me know if there is anything else I can do.",
    "You'll get an e-mail with the details shortly.",
    "Have a great weekend on the trails!",
]


def pairs(count: int, seed: int = 11) -> list[tuple[str, str]]:
    """``(answer, expected)`` pairs; unique answers, a mix of matches and near misses."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        fact, gist, negated = _FACTS[i % len(_FACTS)]
        n = 10 + i
        kind = i % 4
        body = negated if kind == 1 else fact
        if kind == 2:
            n += 1  # the number differs from the expected one
        answer = f"{rng.choice(_OPENERS)} {body.format(n=n)}. {rng.choice(_TAILS)} (case {i})"
        expected = gist if kind != 2 else f"{gist}: {10 + i}"
        out.append((answer, expected))
    return out


def _ours(items: list[tuple[str, str]]) -> float:
    import cassette
    from cassette.core import meaning

    cassette.semantic_match("warm up the plugin manager", "warm up", backend="lexical")
    for name in ("analyse", "stem", "_classify", "_piece"):
        clear = getattr(getattr(meaning, name, None), "cache_clear", None)
        if clear is not None:
            clear()
    with timed() as t:
        for answer, expected in items:
            cassette.semantic_match(answer, expected, backend="lexical")
    return len(items) / t.cpu


def _cendor(items: list[tuple[str, str]]) -> float:
    from cendor.cassette import lexical_score

    with timed() as t:
        for answer, expected in items:
            lexical_score(answer, expected)
    return len(items) / t.cpu


def run(cfg: BenchConfig) -> Section:
    section = Section("semantic", "6. semantic_match throughput, lexical backend")
    if peer("cassette.review.semantic") is None:
        section.error = "cassette/_semantic.py is not there yet"
        return section
    items = pairs(cfg.size(5000, 400))
    rounds = cfg.size(3, 1)
    ours = [_ours(items) for _ in range(rounds)]
    have = peer("cendor.cassette") is not None
    theirs = [_cendor(items) for _ in range(rounds)] if have else []
    words = [len(a.split()) for a, _ in items]
    section.lines.append(
        f"{len(items):,} pairs (answers of {min(words)}-{max(words)} words vs a 2-4 word gist), "
        f"cache cleared each round, median of {rounds}"
    )
    section.rows.append(
        Row(
            "pairs per second",
            "pairs/s",
            median(ours),
            label("cendor-cassette") + " lexical_score",
            median(theirs) if theirs else None,
            "" if have else NOT_INSTALLED,
            note="no target; cendor's scorer has no negation or number guard",
        )
    )
    if cfg.profile:
        sample = items[: cfg.size(3000, 100)]
        section.profile = f"our semantic_match, {len(sample)} pairs:\n" + profile_text(lambda: _ours(sample))
    return section
