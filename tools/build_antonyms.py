"""Write ``cassette/core/antonyms.txt``, the antonym pairs of the semantic guards, from Open English WordNet.

The guards veto an answer that says the opposite of the expected text ("the large conference room"
for "the small conference room"). The pairs are WordNet's antonym relations between single words,
less the ones a word-level guard cannot use:

- a word with antonyms in three or more senses ("back": front, ahead, advance; "light": heavy,
  dark, unlit) is left out, since which antonym applies depends on the sense. Words are counted
  as the guard reads them, by stem ("backed" is "back"), and the antonyms a prefix or suffix makes
  ("unlit", "backless") count as one sense;
- converses, two words for one event seen from either side ("give" / "take", "buy" / "sell"), are
  left out: "we will give you a refund" says "you will take a refund".

An antonym a prefix makes ("unsafe", "inactive") is kept even for a word of many senses: it is the
opposite in each of them. A few opposites agent answers use that WordNet does not relate, or relates
only through a word of many senses, are added (:data:`ADDED`).

Run from the repository root with a checkout of https://github.com/globalwordnet/english-wordnet
(and PyYAML, which the dev extra's pre-commit brings)::

    .venv/bin/python tools/build_antonyms.py path/to/english-wordnet
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import yaml

from cassette.core.meaning import stem

OUT = Path(__file__).resolve().parents[1] / "cassette/core/antonyms.txt"
WORD = re.compile(r"[a-z]{2,}")
SENSES = 3  # a word with antonyms in this many senses is too polysemous to guard on
NEGATING = re.compile(r"(?:un|in|im|il|ir|dis|non|de|a)(?P<word>.+)|(?P<base>.+?)(?:less|lessness)")
CONVERSES = {
    frozenset(pair)
    for pair in [
        ("give", "take"),
        ("buy", "sell"),
        ("lend", "borrow"),
        ("come", "go"),
        ("teach", "learn"),
        ("send", "receive"),
        ("import", "export"),
    ]
}
ADDED = [
    ("mandatory", "optional"),
    ("required", "optional"),
    ("temporary", "permanent"),
    ("fixed", "variable"),
    ("domestic", "international"),
    ("inbound", "outbound"),
    ("wet", "dry"),
    ("profit", "loss"),
    ("positive", "negative"),
    ("critical", "minor"),
    ("correct", "wrong"),
    ("arrival", "departure"),
    ("input", "output"),
    ("sunny", "rainy"),
    ("dry", "rainy"),
    ("encrypted", "unencrypted"),
    ("refundable", "nonrefundable"),
    ("adequate", "deficient"),
    ("within", "outside"),
    ("within", "exceed"),
]
HEADER = """\
# Antonym pairs for cassette's semantic guards (cassette/core/meaning.py), one unordered pair a line.
# Written by tools/build_antonyms.py from Open English WordNet ({commit}), which is derived from
# Princeton WordNet: (c) Princeton University, WordNet licence; Open English WordNet under
# CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/), (c) the Open English Wordnet team.
"""


def antonym_pairs(source: Path) -> set[frozenset[str]]:
    """Every antonym relation between two single lower-case words in the entries files."""
    pairs: set[frozenset[str]] = set()
    for path in sorted((source / "src/yaml").glob("entries-*.yaml")):
        with path.open(encoding="utf-8") as f:
            entries = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for lemma, by_pos in entries.items():
            for entry in by_pos.values():
                for sense in entry.get("sense", ()):
                    for other in sense.get("antonym", ()):
                        a, b = str(lemma), other.split("%", 1)[0]
                        if WORD.fullmatch(a) and WORD.fullmatch(b) and a != b:
                            pairs.add(frozenset((a, b)))
    return pairs


def _sense(word: str, antonym: str) -> str:
    """The sense an antonym stands for: one for all the antonyms a prefix or suffix makes of ``word``."""
    made = NEGATING.fullmatch(antonym)
    if made and stem(made["word"] or made["base"]) == stem(word):
        return "negated"
    return stem(antonym)


def usable(pairs: set[frozenset[str]]) -> list[tuple[str, str]]:
    """The pairs the guard may use: no word (by stem) of many senses, no converses."""
    senses: dict[str, set[str]] = defaultdict(set)
    for pair in pairs:
        a, b = sorted(pair)
        senses[stem(a)].add(_sense(a, b))
        senses[stem(b)].add(_sense(b, a))
    polysemous = {s for s, found in senses.items() if len(found) >= SENSES}
    kept = {
        (a, b)
        for a, b in (sorted(p) for p in pairs)
        if frozenset((a, b)) not in CONVERSES
        and (
            (stem(a) not in polysemous and stem(b) not in polysemous)
            or _sense(a, b) == "negated"
            or _sense(b, a) == "negated"
        )
    }
    return sorted(kept | {tuple(sorted(pair)) for pair in ADDED})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a checkout of globalwordnet/english-wordnet")
    parser.add_argument("--commit", default="", help="the checkout's commit, for the header")
    args = parser.parse_args()
    kept = usable(antonym_pairs(args.source))
    text = HEADER.format(commit=args.commit or "a checkout") + "".join(f"{a} {b}\n" for a, b in kept)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(OUT)
    print(f"{OUT}: {len(kept)} pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
