"""The ``lexical`` semantic backend, and the text guards every backend shares.

``lexical`` asks: does the answer contain the expected text's content words?
It lowercases, drops stopwords, strips common suffixes, and measures how much
of the expected text the answer covers, so a long answer that contains the
expected meaning passes. Two guards sit on top, shared with the other
backends through :func:`guard`:

- negation polarity: "I cannot offer a refund" does not match "offers a refund",
  but it does match "no refund";
- an exact guard for numbers, amounts, weekdays and months: "$20" is not "$200",
  "Tuesday" is not "Thursday", "March 3" is not "March 4".

It cannot see paraphrases that share no words ("money back" vs "refund"); use
the ``embeddings`` backend (or a model-backed one) for those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from cassette.errors import CassetteConfigError
from cassette.hookspecs import hookimpl

# A vetoed score keeps its rank among vetoed pairs but stays below any sensible threshold.
VETO_FACTOR = 0.1

# Chinese and Japanese write no spaces between words: each of their characters is a token of its own,
# so an expected word (退款, "refund") is found inside an answer's run of characters.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Numbers (with currency and %), CJK characters, words (with apostrophes), sentence ends, commas.
_TOKEN = re.compile(
    rf"[$€£]?\d+(?:,\d{{3}})*(?:\.\d+)?%?|[{_CJK}]|[^\W\d_{_CJK}]+(?:'[^\W\d_{_CJK}]+)*|[.!?;:\n。！？；：]|[,、，]"
)


def _words(text: str) -> list[str]:
    return text.split()


_STOPWORDS = frozenset(
    _words(
        """
    a an the this that these those there here it its it's itself i me my mine myself we us our ours
    ourselves you your yours yourself yourselves he him his himself she her hers herself they them
    their theirs themselves what which who whom whose when where why how all any both each few more
    most other some such only own same than too very just also even still again ever further then
    once s t d ll m o re ve y st nd rd th am is are was were be been being have has had having do
    does did doing will would shall should can could may might must ought to of in on at by for with
    about against between into through during before after above below from up down out off over
    under and or if as until of per via etc let lets get gets got getting please thank thanks
    sure okay ok well yes hi hello dear one ones something anything everything someone anyone
    """
    )
)

_NEGATIONS = frozenset(
    _words(
        """
    not no never cannot nor neither without unable refuse refuses refused refusing none nothing nobody
    nowhere cant wont dont doesnt didnt isnt arent wasnt werent shouldnt wouldnt couldnt havent hasnt
    hadnt mustnt
    """
    )
)
# Cues that negate a noun phrase: their scope also ends at a comma ("No, we will refund you").
_PHRASE_CUES = frozenset({"no", "none", "nothing", "nobody", "nowhere", "without"})
# Words after a cue that cancel it: "no problem, we will refund you".
_IDIOMS = frozenset({"problem", "worry", "doubt", "matter", "wonder", "only", "mind"})  # stems
# Words that open a new clause and so end a negation's scope.
_CONTRAST = frozenset({"but", "however", "although", "though", "yet", "instead", "whereas", "because", "so"})
_SCOPE = 4  # content words a negation reaches

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        _words(
            "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen twenty"
        )
    )
    if w != "_"
}
_NAMES = frozenset(
    _words(
        """
    monday tuesday wednesday thursday friday saturday sunday january february march april june july
    august september october november december
    """
    )
)
# Abbreviations that are also everyday words (sat, sun, wed, mar) are left out.
_NAME_ALIASES = {
    "mon": "monday",
    "tue": "tuesday",
    "tues": "tuesday",
    "thu": "thursday",
    "thur": "thursday",
    "thurs": "thursday",
    "fri": "friday",
    "jan": "january",
    "feb": "february",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Strip common English suffixes so "refunds", "refunded" and "refunding" meet.

    >>> stem("refunded"), stem("offers"), stem("replies")
    ('refund', 'offer', 'reply')
    """
    w = word
    if len(w) <= 3:
        return w
    if w.endswith("ies") or w.endswith("ied"):
        w = w[:-3] + "y"
    elif w.endswith("sses") or (w.endswith("es") and (w[-3] in "sxz" or w[-4:-2] in ("ch", "sh"))):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    elif w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif (w.endswith("ed") and len(w) > 4) or (w.endswith("ly") and len(w) > 5):
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]  # stopped -> stop
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # charge/charged -> charg
    return w


# Verbs that describe what an answer does rather than what it says: "offers a refund", "mentions the
# order id". An answer that gives the refund need not use the verb ("We'll refund the duplicate
# charge"), so in the expected text they count half. Measured neutral on STS-B dev (ROC-AUC 0.863).
_DESCRIBING = frozenset(
    stem(w) for w in _words("offers provides gives mentions says explains suggests includes tells promises")
)


def _number(text: str) -> str:
    pct = text.endswith("%")
    value = text.lstrip("$€£").rstrip("%").replace(",", "")
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    value = value.lstrip("0") or "0"
    return value + ("%" if pct else "")


# Token kinds, compared by identity in the hot loop.
_CONTENT, _SKIP, _NEGATION, _NUMBER, _STOP, _COMMA, _CONTRAST_WORD = (
    "content",
    "skip",
    "negation",
    "number",
    "stop",
    "comma",
    "contrast",
)


@lru_cache(maxsize=65536)
def _classify(tok: str) -> tuple[str, str, str]:
    """(kind, key, extra) of one token: key is the lowercased stem, cue or number value."""
    tok = tok.lower()
    first = tok[0]
    if first == ",":
        return _COMMA, tok, ""
    if first in ".!?;:\n":
        return _STOP, tok, ""
    if first.isdigit() or first in "$€£":
        return _NUMBER, _number(tok), ""
    if "'" in tok:
        tok = tok.replace("'", "") if tok.endswith("n't") else tok.split("'", 1)[0]
    if tok in _NEGATIONS:
        return _NEGATION, tok, "phrase" if tok in _PHRASE_CUES else ""
    if tok in _CONTRAST:
        return _CONTRAST_WORD, tok, ""
    if tok in _NUMBER_WORDS:
        return _NUMBER, _NUMBER_WORDS[tok], ""
    if tok in _STOPWORDS:
        return _SKIP, tok, ""
    name = _NAME_ALIASES.get(tok, tok)
    if name in _NAMES:
        return _CONTENT, stem(name), name  # "Tue" and "Tuesday" are one word
    return _CONTENT, stem(tok), ""


_Token = tuple[str, str, str, str]  # kind, key, extra (as _classify), the token as written


@lru_cache(maxsize=65536)
def _piece(piece: str) -> tuple[_Token, ...]:
    """The classified tokens of one space-free piece of text ("refund." -> the word, then the stop)."""
    return tuple((*_classify(tok), tok) for tok in _TOKEN.findall(piece))


@dataclass(slots=True)
class Analysis:
    """What the guards and the lexical score need to know about one text; shared, so read-only.

    Not ``frozen``: a frozen dataclass's ``__init__`` cost a seventh of ``analyse``.
    """

    order: tuple[str, ...]  # content stems, first occurrence order
    surface: dict[str, str]  # stem -> the word as written
    positive: frozenset[str]  # stems with at least one non-negated occurrence
    negated: dict[str, str]  # stem -> "cannot … refund" for its first negated occurrence
    numbers: dict[str, str]  # normalised value -> as written ("20" -> "$20")
    names: dict[str, str]  # weekday/month -> as written
    prefixes: dict[str, tuple[str, ...]]  # first 4 letters -> stems, for the prefix match; filled by _find


@lru_cache(maxsize=4096)
def analyse(text: str) -> Analysis:
    """Tokenise ``text`` into content stems with their negation, numbers and date names.

    >>> analyse("I cannot offer a refund.").negated["refund"]
    'cannot … refund'
    """
    order: list[str] = []
    surface: dict[str, str] = {}
    positive: set[str] = set()
    negated: dict[str, str] = {}
    numbers: dict[str, str] = {}
    names: dict[str, str] = {}
    cue: str | None = None  # the active negation cue
    cue_phrase = False  # its scope ends at a comma
    reach = 0  # content words it still reaches
    adjacent = False  # the previous token was the cue itself
    content, skip, idioms = _CONTENT, _SKIP, _IDIOMS  # locals: this loop is hot
    start = True  # at the start of a sentence, where "May" is the verb ("May I help?")
    # No token spans a space, so tokenising space-separated pieces (cached: answers reuse their words)
    # gives the same tokens as one findall over the text, at a third of the cost.
    for kind, word, payload, tok in chain.from_iterable(map(_piece, text.replace("’", "'").split(" "))):
        was_start, start = start, kind is _STOP
        if kind is skip and word == "may" and tok[0] == "M" and not was_start:
            kind, payload = content, "may"  # "delivered in May": the month, guarded like the others
        if kind is skip:
            if adjacent and word in idioms:
                cue = None
            adjacent = False
        elif kind is content:
            was_adjacent, adjacent = adjacent, False
            if was_adjacent and word in idioms:
                cue = None
                continue
            if payload:
                names.setdefault(payload, tok)
            if word not in surface:
                surface[word] = tok
                order.append(word)
            if cue is not None:
                if word not in negated:
                    negated[word] = f"{cue} {tok}" if was_adjacent else f"{cue} … {tok}"
                reach -= 1
                if reach == 0:
                    cue = None
            else:
                positive.add(word)
        elif kind is _NEGATION:
            cue, cue_phrase, reach, adjacent = tok, bool(payload), _SCOPE, True
        elif kind is _NUMBER:
            numbers.setdefault(word, tok)
            adjacent = False
        elif kind is _STOP or (kind is _COMMA and cue_phrase):
            cue = None
        elif kind is _CONTRAST_WORD:
            cue, adjacent = None, False
    return Analysis(tuple(order), surface, frozenset(positive), negated, numbers, names, {})


def _find(s: str, act: Analysis) -> str | None:
    """The answer's stem that matches expected stem ``s``: equal, or one a prefix of the other."""
    if s in act.surface:
        return s
    if len(s) >= 4:
        prefixes = act.prefixes
        if not prefixes and act.order:  # built on the first miss: most lookups never need it
            _index_prefixes(act.order, prefixes)
        for t in prefixes.get(s[:4], ()):
            if t.startswith(s) or s.startswith(t):
                return t
    return None


def _index_prefixes(order: tuple[str, ...], into: dict[str, tuple[str, ...]]) -> None:
    index: dict[str, list[str]] = {}
    for s in order:
        if len(s) >= 4:
            index.setdefault(s[:4], []).append(s)
    into.update({k: tuple(v) for k, v in index.items()})  # one update: a racing thread sees all or none


def guard(actual: str, expected: str) -> str | None:
    """Why ``actual`` cannot mean ``expected`` whatever its similarity score, or ``None``.

    Checks negation polarity of the shared content words and that every number,
    amount, weekday and month of ``expected`` appears in ``actual``.

    >>> guard("I cannot offer a refund.", "offers a refund")
    "negated: 'cannot … refund'"
    >>> guard("We will refund $200.", "refund of $20")
    "expected '$20', answer has '$200'"
    """
    return compare(analyse(actual), analyse(expected))[2]


def compare(act: Analysis, exp: Analysis) -> tuple[float, list[str], str | None]:
    """Coverage of ``exp``'s content words by ``act``, the missing words as written, and any veto."""
    veto: str | None = None
    for wanted, have in ((exp.numbers, act.numbers), (exp.names, act.names)):
        for key, written in wanted.items():
            if key not in have:
                found = ", ".join(f"'{w}'" for w in have.values()) or "none"
                veto = veto or f"expected '{written}', answer has {found}"
    missing: list[str] = []
    negation: str | None = None
    # a describing verb weighs half, unless the expected text has nothing else
    light = 0.5 if any(s not in _DESCRIBING for s in exp.order) else 1.0
    weights = [light if s in _DESCRIBING else 1.0 for s in exp.order]
    lost = 0.0
    for s, weight in zip(exp.order, weights):
        t = _find(s, act)
        if t is None:
            missing.append(exp.surface[s])
            lost += weight
            continue
        want_pos, want_neg = s in exp.positive, s in exp.negated
        if want_pos and not want_neg and t not in act.positive:
            negation = f"negated: '{act.negated[t]}'"
        elif want_neg and not want_pos and t not in act.negated:
            negation = f"not negated: expected '{exp.negated[s]}', answer says '{act.surface[t]}'"
    total = sum(weights)
    value = 1.0 - lost / total if total else 1.0  # no content words: only the guards decide
    return value, missing, veto or negation


class LexicalBackend:
    """Coverage of the expected content words by the answer, with the shared guards.

    Example::

        LexicalBackend().score("Sorry, we cannot offer a refund.", "offers a refund")
        # (0.1, "negated: 'cannot … refund'")
    """

    name = "lexical"
    default_threshold = 0.6

    def score(self, actual: str, expected: str) -> tuple[float, str]:
        act, exp = analyse(actual), analyse(expected)
        if not exp.order and not exp.numbers:
            # nothing to look for: every answer would pass
            raise CassetteConfigError(
                f"semantic_match: expected {expected[:80]!r} holds no word to look for (only stopwords, "
                "punctuation or nothing), so any answer would match. Write the words the answer must say."
            )
        value, missing, veto = compare(act, exp)
        if veto is not None:
            return value * VETO_FACTOR, veto
        total = len(exp.order)
        if not missing:
            return value, f"all {total} expected words found"
        shown = ", ".join(f"'{w}'" for w in missing[:6]) + (" …" if len(missing) > 6 else "")
        return value, f"{total - len(missing)}/{total} expected words found; missing {shown}"


LEXICAL = LexicalBackend()


@hookimpl
def cassette_semantic_backends() -> list[LexicalBackend]:
    return [LEXICAL]
