"""What a text says, as the semantic guards read it: content words, negation polarity, numbers
and dates, and opposite decisions (approved / denied).

Every semantic backend and drift review share these guards: :func:`guard` says why two texts
cannot mean the same (``"negated: 'cannot … refund'"``, ``"number: '$20' vs '$200'"``), or ``None``;
:func:`analyse` and :func:`compare` are the lexical coverage score the ``lexical`` backend reports.

Example::

    guard("Sorry, we cannot offer a refund.", "offers a refund")  # "negated: 'cannot … refund'"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

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
# Words that open a new clause and so end a negation's scope: "I can't refund it until Monday" does not
# deny Monday, "costs nothing if you return it" does not deny returning.
_CONTRAST = frozenset(
    {"but", "however", "although", "though", "yet", "instead", "whereas", "because", "so"}
    | {"if", "unless", "until", "when", "while"}
)
# "..., and we will ...": "and" then a subject pronoun opens a new clause with its own polarity.
_PRONOUNS = frozenset({"i", "we", "you", "they", "he", "she", "it"})
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


# Verbs that deny what comes before them in their clause ("payment failed", "refund declined"): that
# subject counts as both polarities, so "payment failed" may match "we could not process your payment".
_DENYING = frozenset(stem(w) for w in _words("failed fails denied denies declined declines rejected rejects"))


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
    if name not in _NAMES and name.endswith("s") and name[:-1] in _NAMES:
        name = name[:-1]  # "on Fridays" is a Friday too
    if name in _NAMES:
        return _CONTENT, stem(name), name  # "Tue" and "Tuesday" are one word
    return _CONTENT, stem(tok), ""


# Opposite pairs: saying one side where the expected text says the other is a contradiction that
# word coverage cannot see ("approved" vs "denied" are just two different words). Each family lists
# the word forms of its "+" and "-" side; phrases are matched as written, with any spacing.
_OPPOSITES: dict[str, tuple[str, str]] = {
    "decision": (
        "approve approved approves approval accept accepted accepts granted authorised authorized "
        "admitted allowed permitted",
        "deny denied denies denial reject rejected rejects rejection decline declined declines refused "
        "forbidden prohibited turned_down",
    ),
    "refund": ("refund refunded refunds refunding reimbursed credited_back", "charged billed debited"),
    "booking": ("confirmed booked scheduled reserved renewed renews", "cancelled canceled cancel cancels"),
    "stock": ("available in_stock", "unavailable out_of_stock sold_out"),
    "outcome": (
        "succeeded succeeds successful successfully passed passing went_through",
        "failed fails failing failure unsuccessful",
    ),
    "switch": ("enabled activated turned_on switched_on", "disabled deactivated turned_off switched_off"),
    "online": ("online up_and_running", "offline"),
    "open": ("open opened reopened", "closed"),
    "lock": ("locked", "unlocked"),
    "level": (
        "increase increased increases raise raised rise rose higher go_up goes_up went_up",
        "decrease decreased decreases lower lowered reduce reduced reduction go_down goes_down went_down",
    ),
    "plan": ("upgrade upgraded upgrades", "downgrade downgraded downgrades"),
    "add": ("add added include included includes", "remove removed delete deleted exclude excluded excludes"),
    "whole": ("full", "partial partially"),
    "valid": ("valid", "invalid expired"),
    "timing": ("on_time early", "late delayed overdue"),
}

# word form (phrases joined by "_") -> "family+" / "family-"
_SIDE_OF = {
    form: family + sign
    for family, pair in _OPPOSITES.items()
    for sign, forms in zip("+-", pair)
    for form in forms.split()
}
_LONGEST_SIDE = max(form.count("_") + 1 for form in _SIDE_OF)
_SIDE_FIRST = frozenset(form.split("_", 1)[0] for form in _SIDE_OF)  # most words start no side: skip them
_SIDE_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|[.!?;:,]")


def _sides(text: str) -> dict[str, str]:
    """The opposite-pair sides ``text`` says positively: ``{"decision-": "denied"}``.

    A side word after a negation in its clause ("not available") is left to the negation guard.

    >>> _sides("Your claim was denied; the item is not available.")
    {'decision-': 'denied'}
    """
    found: dict[str, str] = {}
    words = _SIDE_TOKEN.findall(text.replace("’", "'").lower())
    clause_start = 0
    for i, word in enumerate(words):
        if word in ".!?;:,":
            clause_start = i + 1
            continue
        if word not in _SIDE_FIRST:
            continue
        for size in range(_LONGEST_SIDE, 0, -1):  # the longest phrase first: "out of stock", not "stock"
            side = _SIDE_OF.get("_".join(words[i : i + size]))
            if side is not None:
                break
        if side is None or side in found:
            continue
        recent = words[max(clause_start, i - 3) : i]
        if not any(w.replace("'", "") in _NEGATIONS or w.endswith("n't") for w in recent):
            found[side] = " ".join(words[i : i + size])
    return found


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
    core: frozenset[str]  # the first word each negation governs: what it is about
    sides: dict[str, str]  # "family+" / "family-" of each opposite-pair word said positively -> as written
    prefixes: dict[str, tuple[str, ...]]  # first 4 letters -> stems, for the prefix match; filled by _find


@lru_cache(maxsize=4096)
def analyse(text: str) -> Analysis:
    """Tokenise ``text`` into content stems with their negation, numbers and date names.

    A negation reaches forward (:data:`_SCOPE` content words). A verbal cue (``not``, ``cannot``,
    ``n't``, ``unable``...) may also deny its clause's subject ("accidental damage is not covered" is
    "we do not cover accidental damage"), or not ("the subscription will not renew"), so the subject
    is both positive and negated: neither polarity is vetoed.

    >>> analyse("I cannot offer a refund.").negated["refund"]
    'cannot … refund'
    >>> analyse("The refund is not possible.").negated["refund"]
    'refund … not'
    """
    order: list[str] = []
    surface: dict[str, str] = {}
    positive: set[str] = set()
    negated: dict[str, str] = {}
    numbers: dict[str, str] = {}
    names: dict[str, str] = {}
    core: set[str] = set()
    _read_clauses(text, order, surface, positive, negated, numbers, names, core)
    return Analysis(
        tuple(order), surface, frozenset(positive), negated, numbers, names, frozenset(core), _sides(text), {}
    )


def _read_clauses(
    text: str,
    order: list[str],
    surface: dict[str, str],
    positive: set[str],
    negated: dict[str, str],
    numbers: dict[str, str],
    names: dict[str, str],
    core: set[str],
) -> None:
    """Read ``text`` clause by clause for `analyse`, filling its collections (see `Analysis`):
    each content word in order and as written, whether it is said positively, the negation that
    reaches it, the numbers and date names, and the words each negation governs first."""
    # Content words of the current clause not under a negation, positive when the clause ends (and
    # negated too if a verbal cue follows them in the clause).
    pending: list[tuple[str, str]] = []
    cue: str | None = None  # the active negation cue
    cue_phrase = False  # its scope ends at a comma
    reach = 0  # content words it still reaches
    adjacent = False  # the previous token was the cue itself
    after_and = False  # the previous token was "and"
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
            if after_and and word in _PRONOUNS:  # "..., and you keep access": a new clause
                cue = None
            after_and = word == "and"
            if after_and:  # "is cancelled and won't renew": the negation denies the renewal only
                positive.update(w for w, _ in pending)
                pending.clear()
            continue
        after_and = False
        if kind is content:
            was_adjacent, adjacent = adjacent, False
            if was_adjacent and word in idioms:
                cue = None
                continue
            if payload:
                names.setdefault(payload, tok)
            if word not in surface:
                surface[word] = tok
                order.append(word)
            if word in _DENYING:
                _deny(pending, negated, tok)
            if cue is not None:
                if reach == _SCOPE:  # the first word the cue governs: it is what the negation is about
                    core.add(word)
                    if not cue_phrase:
                        # A verbal cue may deny its clause's subject ("accidental damage is not covered")
                        # or not ("the subscription will not renew"): the subject counts as both.
                        _deny(pending, negated, cue)
                if word not in negated:
                    negated[word] = f"{cue} {tok}" if was_adjacent else f"{cue} … {tok}"
                reach -= 1
                if reach == 0:
                    cue = None
            else:
                pending.append((word, tok))
        elif kind is _NEGATION:
            cue, cue_phrase, reach, adjacent = tok, bool(payload), _SCOPE, True
        elif kind is _NUMBER:
            numbers.setdefault(word, tok)
            adjacent = False
        elif kind is _STOP or kind is _COMMA or kind is _CONTRAST_WORD:
            if kind is not _COMMA or cue_phrase:  # a verbal cue reaches past a comma, a phrase cue does not
                cue = None
            adjacent = False
            positive.update(w for w, _ in pending)  # no subject reaches back past a clause boundary
            pending.clear()
    positive.update(w for w, _ in pending)


def _deny(pending: list[tuple[str, str]], negated: dict[str, str], by: str) -> None:
    """Count each content word of the clause so far (``pending``: stem, as written) as negated by
    the word ``by`` that follows it ("payment … failed"), unless an earlier negation reached it."""
    for subject, written in pending:
        negated.setdefault(subject, f"{written} … {by}")


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
    opposite = _opposite(act.sides, exp.sides)
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
        elif want_neg and not want_pos and s in exp.core and t not in act.negated:
            negation = f"not negated: expected '{exp.negated[s]}', answer says '{act.surface[t]}'"
    total = sum(weights)
    value = 1.0 - lost / total if total else 1.0  # no content words: only the guards decide
    return value, missing, veto or negation or opposite


def _opposite(act: dict[str, str], exp: dict[str, str]) -> str | None:
    """A veto when the answer says only the other side of a pair the expected text says one side of."""
    for key, written in exp.items():
        other = key[:-1] + ("-" if key[-1] == "+" else "+")
        if other in act and key not in act and other not in exp:
            return f"opposite: expected '{written}', answer says '{act[other]}'"
    return None
