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
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, pairwise
from pathlib import Path

# A vetoed score keeps its rank among vetoed pairs but stays below any sensible threshold.
VETO_FACTOR = 0.1

# Chinese and Japanese write no spaces between words: each of their characters is a token of its own,
# so an expected word (退款, "refund") is found inside an answer's run of characters.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Times ("9:30"), numbers (with currency and %; a version or address, "4.17.21", is one), CJK
# characters, words (with apostrophes), sentence ends, commas.
_TOKEN = re.compile(
    rf"\d{{1,2}}:\d\d(?!\d)|[$€£]?\d+(?:,\d{{3}})*(?:\.\d+)*%?|[{_CJK}]|[^\W\d_{_CJK}]+(?:'[^\W\d_{_CJK}]+)*|[.!?;:\n。！？；：]|[,、，]"
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
    about against between into through during before after above below from up down out off over every
    under and or if as until of per via etc let lets get gets got getting please thank thanks
    sure okay ok well yes hi hello dear one ones something anything everything someone anyone
    """
    )
)

# A verb of stopping denies what it stops, not where or when: "stopped sending readings", but "stop
# at your old apartment on March 31", "had stopped with error 1062" (its scope ends at `_CIRCUMSTANCE`).
_STOPPING = frozenset(_words("stop stops stopped ceased ceases"))
_NEGATIONS = _STOPPING | frozenset(
    _words(
        """
    not no never cannot nor neither without except excluding unable refuse refuses refused refusing none
    zero hardly
    nothing nobody
    nowhere cant wont dont doesnt didnt isnt arent wasnt werent shouldnt wouldnt couldnt havent hasnt
    hadnt mustnt
    """
    )
)
# Cues that are nouns too, after a determiner or another noun ("the bus stop", "two stops").
_NOUN_CUES = frozenset({"stop", "stops"})
# Cues that negate a noun phrase: their scope also ends at a comma ("No, we will refund you").
_PHRASE_CUES = frozenset(
    {"no", "none", "nothing", "nobody", "nowhere", "without", "except", "excluding", "zero"}
)
# Words after a cue that cancel it: "no problem, we will refund you".
_IDIOMS = frozenset({"problem", "worry", "doubt", "matter", "wonder", "only", "mind"})  # stems
# Words that open a new clause and so end a negation's scope: "I can't refund it until Monday" does not
# deny Monday, "costs nothing if you return it" does not deny returning.
_CONTRAST = frozenset(
    {"but", "however", "although", "though", "yet", "instead", "whereas", "because", "since", "so"}
    | {"if", "unless", "until", "when", "while"}
)
# Tense markers: what follows in the clause is said of the future ("will be charged") or the past.
_FUTURE = frozenset({"will", "shall"})
_PAST = frozenset({"already", "was", "were", "been", "had"})
# Words that open a condition: what follows in the clause is not said to be so ("before it can be merged").
_CONDITIONS = frozenset({"if", "unless", "until", "before"})
# "..., and we will ...": "and" then a subject pronoun opens a new clause with its own polarity.
_PRONOUNS = frozenset({"i", "we", "you", "they", "he", "she", "it"})
_SCOPE = 4  # content words a negation reaches
# Where or when: the words that end a verb of stopping's scope ("stop at your old apartment").
_CIRCUMSTANCE = frozenset(_words("at on in with from since for by after during"))
_TO_A_VALUE = frozenset({"to", "at", "from"})  # "zero" after these is a value ("errors dropped to zero")

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        _words(
            "_ _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen twenty"
        )
    )
    if w != "_"
}
_MULTIPLIERS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}

# Numbers spelled out past one word ("twenty-four", "a hundred and twenty", "two dozen"), "N percent"
# and "N dollars and M cents": `_in_digits` writes them as the tokeniser reads digits before anything
# reads the text, so "twenty-four hours" is 24 hours, not a 20 and a 4, and "twelve percent" is 12%.
# One word below twenty stays as written: the tokeniser reads it as its value (`_NUMBER_WORDS`).
_UNIT_VALUES = dict(zip(_words("one two three four five six seven eight nine"), range(1, 10)))
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
_TEEN_VALUES = dict(zip(_words(_TEENS), range(10, 20)))
_TENS_VALUES = dict(zip(_words("twenty thirty forty fifty sixty seventy eighty ninety"), range(20, 100, 10)))
_SPELLED_VALUES = _UNIT_VALUES | _TEEN_VALUES | _TENS_VALUES
_BELOW_100 = (
    rf"(?:(?:{'|'.join(_TENS_VALUES)})(?:[- ](?:{'|'.join(_UNIT_VALUES)}))?"
    rf"|{'|'.join(_TEEN_VALUES)}|{'|'.join(_UNIT_VALUES)})"
)
_BELOW_1000 = rf"(?:(?:{_BELOW_100}|a) hundred(?:(?: and)? {_BELOW_100})?|{_BELOW_100})"
_SPELLED = (
    rf"(?:(?:{_BELOW_100}|a|half a) dozen"
    rf"|(?:{_BELOW_1000}|a) thousand(?:(?: and)? {_BELOW_1000})?"
    rf"|{_BELOW_1000})"
)
_AMOUNT = rf"(?:\d+(?:\.\d+)?|{_SPELLED})"
_SCALES = {"k": 1_000, "m": 1_000_000, "bn": 1_000_000_000}
_SCALED = re.compile(r"\d(?:[kK]|M|bn)\b")
_HOURS = {
    w: i for i, w in enumerate(_words("twelve one two three four five six seven eight nine ten eleven"))
}
# what one of `_IN_WORDS` has in it: a text with none of these (most: 94 % of those in
# tests/data/semantic_pairs.jsonl and STS-B dev) is left as it is, without running `_IN_WORDS`
_IN_WORDS_CUES = re.compile(
    "|".join(
        (
            *_TENS_VALUES,
            *("hundred", "thousand", "dozen", "cent", "noon", "midnight", "midday"),
            *("past", "half", "quarter", "minute"),  # "half past six", "a quarter to nine", "20 minutes to 4"
            *("th of", "st of", "nd of", "rd of"),  # "the 3rd of": no; "the third of", "the first of"
        )
    ),
    re.IGNORECASE,
)
_ORDINALS = _words(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth"
    " fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
)
_ORDINAL_DAYS = {w: i for i, w in enumerate(_ORDINALS, 1)}
_ORDINAL_DAYS |= {f"twenty-{w}": 20 + i for i, w in enumerate(_ORDINALS[:9], 1)}
_ORDINAL_DAYS |= {"thirtieth": 30, "thirty-first": 31}
_MONTHS = "january february march april may june july august september october november december"
# A unit after "N minutes to 4" makes it a range of amounts ("from 11 minutes to 4 minutes"), not a time.
_UNIT_AFTER = r"(?:minutes?|mins?|hours?|hrs?|seconds?|secs?|days?|weeks?|percent)\b"
_IN_WORDS = re.compile(
    # "the third of June" is June 3
    rf"\b(?:the )?(?P<ordinal>{'|'.join(sorted(_ORDINAL_DAYS, key=len, reverse=True))}) of "
    rf"(?P<month>{'|'.join(_words(_MONTHS))})\b"
    # "half past six", "ten past five", "a quarter to nine", "20 minutes to 4"; not "from three to eight"
    rf"|\b(?:(?P<minutes>half|(?:a )?quarter|(?:{_BELOW_100}|\d{{1,2}}) minutes|{_BELOW_100}(?= past))"
    rf" (?P<way>past|to) (?P<hour>{'|'.join(_HOURS)}|\d{{1,2}})\b(?! ?(?:%|{_UNIT_AFTER})))"
    rf"|\b(?P<noon>noon|midday|midnight)\b"
    rf"|(?P<short>[$€£]?\d+(?:\.\d+)?)(?P<scale>[kK]|M|bn)\b"
    rf"|\$?\b(?P<dollars>{_AMOUNT}) dollars? and (?P<cents>{_AMOUNT}) cents?\b"
    rf"|\b(?P<percent>{_AMOUNT}) ?(?:percent|per cent)\b"
    rf"|\b(?P<number>{_SPELLED})\b",
    re.IGNORECASE,
)


def _spelled_value(phrase: str) -> str:
    """The value of one amount `_IN_WORDS` matched, in digits ("a hundred and twenty" is 120)."""
    if phrase[0].isdigit():
        return phrase
    total = part = 0.0
    for word in re.split(r"[- ]+", phrase.lower()):
        if word == "hundred":
            part = (part or 1) * 100
        elif word == "thousand":
            total, part = total + (part or 1) * 1000, 0.0
        elif word == "dozen":
            part = (part or 1) * 12
        elif word == "half":
            part = 0.5
        elif word in ("a", "an"):
            part = part or 1  # "a hundred"; "half a dozen"
        elif word != "and":
            part += _SPELLED_VALUES[word]
    return _number(str(total + part))


def _clock(minutes: str, way: str, hour: str) -> str:
    """A time said in words as the clock writes it: "a quarter to nine" is 8:45, "ten past five" 5:10."""
    minutes = minutes.lower().removesuffix(" minutes")
    past = {"half": 30, "quarter": 15, "a quarter": 15}.get(minutes)
    past = past if past is not None else int(float(_spelled_value(minutes)))
    at = _HOURS.get(hour.lower(), int(hour) if hour.isdigit() else 0) % 12 or 12
    if way.lower() == "to":
        at, past = (at - 2) % 12 + 1, 60 - past
    return f"{at}:{past:02d}"


@lru_cache(maxsize=4096)
def _in_digits(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``text`` with its amounts in words written as the tokeniser reads digits, and (value, words)
    of each, so a message can quote it as written.

    >>> _in_digits("twenty-four hours, two dozen eggs, up twelve percent, ten dollars and five cents")[0]
    '24 hours, 24 eggs, up 12%, $10.05'
    """
    if not _SCALED.search(text) and not _IN_WORDS_CUES.search(text):
        return text, ()  # most texts: nothing to rewrite
    written: list[tuple[str, str]] = []

    def digits(match: re.Match[str]) -> str:
        if match["ordinal"]:
            return f"{match['month']} {_ORDINAL_DAYS[match['ordinal'].lower()]}"
        if match["way"]:
            return _clock(match["minutes"], match["way"], match["hour"])
        if match["noon"]:
            return "12 am" if match["noon"].lower() == "midnight" else "12 pm"
        if match["short"]:  # "$152k", "$4.2M", "1.5bn"
            currency = match["short"][0] if match["short"][0] in "$€£" else ""
            out = currency + _number(
                str(float(match["short"].lstrip("$€£")) * _SCALES[match["scale"].lower()])
            )
        elif match["dollars"]:
            out = f"${_spelled_value(match['dollars'])}.{int(float(_spelled_value(match['cents']))):02d}"
        elif match["percent"]:
            out = f"{_spelled_value(match['percent'])}%"
        elif match[0].lower() in _NUMBER_WORDS or match[0].lower() == "one":
            return match[0]  # one word the tokeniser reads as its value; "one" is mostly a pronoun
        else:
            out = _spelled_value(match[0])
        written.append((_number(out), match[0]))
        return out

    return _IN_WORDS.sub(digits, text), tuple(written)


def in_digits(text: str) -> str:
    """``text`` with numbers spelled out past one word written in digits, "N percent" as "N%",
    "N dollars and M cents" and "$152k" as amounts and times said in words as the clock writes them:
    what `analyse` and `changed_role` read.

    >>> in_digits("a hundred and twenty users, thirty days")
    '120 users, 30 days'
    """
    return _in_digits(text)[0]


_NAMES = frozenset(
    _words(
        """
    monday tuesday wednesday thursday friday saturday sunday january february march april june july
    august september october november december spring summer autumn winter
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


_FREE = stem("free")  # "free of nuts" denies the nuts


# Verbs that describe what an answer does rather than what it says: "offers a refund", "mentions the
# order id". An answer that gives the refund need not use the verb ("We'll refund the duplicate
# charge"), so in the expected text they count half. Measured neutral on STS-B dev (ROC-AUC 0.863).
_DESCRIBING = frozenset(
    stem(w) for w in _words("offers provides gives mentions says explains suggests includes tells promises")
)


def _number(text: str) -> str:
    pct = text.endswith("%")
    value = text.lstrip("$€£").rstrip("%").replace(",", "")
    if value.count(".") == 1:  # "2.50" is 2.5; a version ("4.17.20") is as written
        value = value.rstrip("0").rstrip(".")
    if len(value) > 1 and value[0] == "0" and value[1].isdigit() and "." not in value:
        return value  # "section 02", "MR-01": a label as written, not the number 2
    value = value.lstrip("0") or "0"
    if value[0] == ".":
        value = "0" + value  # "0.27.2", "0.5"
    return value + ("%" if pct else "")


# Verbs that deny what comes before them in their clause ("payment failed", "refund declined"): that
# subject counts as both polarities, so "payment failed" may match "we could not process your payment".
# Of those, the ones that also deny their object in the active voice: "the bank declined the payment",
# "I rejected the invite" (but "declined by your bank", "failed for lack of funds": not the bank, the funds).
# A charge waived is a charge not made: "the $15 fee was waived" says "no fee was charged".
_DENYING_OBJECT = frozenset(
    stem(w) for w in _words("denied denies declined declines rejected rejects skipped skips waived waives")
)
_DENYING = _DENYING_OBJECT | frozenset(stem(w) for w in _words("failed fails"))
_PASSIVE = frozenset(_words("is are was were be been being get gets got"))
_AUXILIARIES = _PASSIVE | _FUTURE | frozenset(_words("has have had"))
# Verbs of change: in their clause, "from X" is the old value ("moved from Wednesday to Thursday").
_CHANGING = frozenset(
    stem(w)
    for w in _words(
        """
    change changed changes move moved moves reschedule rescheduled switch switched update updated
    upgrade upgraded downgrade downgraded raise raised raises lower lowered lowers increase increased
    increases decrease decreased decreases reduce reduced reduces rise rose fall fell drop dropped go
    goes went bump bumps bumped roll rolled rolls revert reverted reverts push pushed postpone postponed
    scale scaled scales resize resized adjust adjusted adjusts revise revised shift shifted
    """
    )
)
# Before a denying word, these make it an adjective ("the failed payment"), not a verb.
_DETERMINERS = frozenset(_words("a an the your my our their his her its this that these those"))
# Words that do not end a clause's first run of content words, its subject ("your refund request").
_SUBJECT_WORDS = _DETERMINERS | {"i", "we", "you"}


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
    if first.isdigit() and ":" in tok:  # a time: "08:12" is 8:12, "14:05" 2:05, "7:00" 7
        hour, minute = tok.split(":")
        hour = str(int(hour) - 12) if int(hour) > 12 else str(int(hour))
        return _NUMBER, hour if minute == "00" else f"{hour}:{minute}", ""
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


# Opposite states: saying one side where the expected text says another is a contradiction that word
# coverage cannot see ("approved" vs "denied" are just two different words). Each family lists the word
# forms of each of its sides (two or three: approved / denied / still pending); phrases are matched as
# written, with any spacing. A form may belong to several families ("pending" is an undecided decision
# and an unfinished outcome).
_OPPOSITES: dict[str, tuple[str, ...]] = {
    "decision": (
        "approve approved approves approval accept accepted accepts granted grants authorised authorized "
        "admitted allowed permitted agreed issued awarded cleared_to cleared_for signed_off okayed",
        "deny denied denies denial reject rejected rejects rejection decline declined declines refused "
        "refuses unsuccessful forbidden prohibited banned disallowed barred turned_down turned_away "
        "voted_down ruled_out rules_out blocked off_limits "
        "decided_against decides_against decide_against chose_not_to opted_against opted_not_to "
        "requested_changes request_changes requests_changes",
        "pending on_hold under_review being_processed being_reviewed in_review awaiting_review "
        "awaiting_approval awaiting_a_decision waitlisted wait-listed on_the_waitlist waiting_for_approval "
        "pending_approval accepted_for_review unapproved hold_off held_off holding_off holds_off",
    ),
    "refund": (
        "refund refunded refunds refunding reimbursed credited_back",
        "charged billed debited owe owes",
    ),
    "booking": (
        "confirmed booked scheduled reserved renew renewed renews placed ordered finalized finalised "
        "going_ahead goes_ahead go_ahead went_ahead gone_ahead as_planned as_originally_planned as_scheduled "
        "still_on_. still_on_, still_on_for",
        "cancelled canceled cancel cancels cancelling canceling called_off call_off calls_off",
        "postponed rescheduled moved_to moved_from paused frozen on_hold waitlisted wait_listed "
        "on_the_waitlist deferred tabled put_off",
    ),
    "stock": (
        "available in_stock back_in_stock",
        "unavailable out_of_stock sold_out fully_booked no_longer_available is_full are_full backordered "
        "on_backorder was_out_of were_out_of is_out_of are_out_of ran_out_of",
    ),
    "outcome": (
        "succeed succeeded succeeds successful successfully pass passes passed passing went_through "
        "go_through goes_through gone_through came_through completed finished "
        "complete done processed",
        "fail failed fails failing failure unsuccessful",
        "pending on_hold in_progress still_running still_processing queued still_outstanding still_waiting",
    ),
    "ruling": ("upheld", "overturned dismissed"),
    "enrolment": (
        "enrolled enroled registered still_enrolled",
        "unenrolled withdrawn withdrew withdraw withdraws dropped_out dropped",
    ),
    "went": ("went_well went_fine went_smoothly", "went_badly went_poorly went_wrong"),
    "normal": (
        "back_to_normal returned_to_normal back_to_baseline back_below back_under back_to_the_usual "
        "back_at_the_usual back_within",
        "elevated still_elevated still_high remain_high remains_high still_climbing",
    ),
    "ease": ("eased easing improved improving", "worsened worsening gotten_worse got_worse deteriorated"),
    "switch": (
        "enabled activated turned_on switched_on is_on_, is_on_. are_on_, are_on_. stays_on stay_on "
        "remains_on left_on back_on still_on_. still_on_, still_on_for",
        "disabled deactivated turned_off switched_off is_off are_off stays_off stay_off remains_off left_off "
        "kept_off",
    ),
    "online": (
        "online back_online up_and_running restored back_up recovered back_in_service in_operation restarted",
        "offline still_down still_out is_down are_down went_down suspended interrupted out_of_service",
    ),
    "ongoing": (
        "ongoing continuing still_ongoing still_running still_live running_as_usual running_as_normal",
        "is_over are_over now_over has_ended have_ended resolved paused halted frozen",
    ),
    "active": (
        "is_active are_active still_active remains_active stays_active left_active renewed in_effect",
        "deleted closed cancelled canceled terminated deactivated blocked suspended frozen inactive lapsed "
        "revoked called_off",
    ),
    "works": (
        "works working still_works still_working",
        "stop_working stops_working stopped_working broken outage outages faulty defective malfunctioning "
        "dead still_dead",
    ),
    "open": ("open opened reopened", "closed shut closure resolved"),
    "lock": ("locked blocked frozen", "unlocked unblocked released"),
    "level": (
        "increase increased increases increasing raise raised raises raising rise rises rising rose risen "
        "higher grew grow grows growing go_up goes_up went_up gone_up going_up scaled_up scale_up up_# "
        "climbed lifted jumped jumping up_from slightly_up bumped lengthened",
        "decrease decreased decreases decreasing lower lowered lowers reduce reduced reduces reduction "
        "drop dropped drops fell fall falls falling cut cutting go_down goes_down went_down gone_down "
        "going_down scaled_down scale_down down_# is_down_# are_down_# declined declining dipped dips "
        "slightly_down down_to_# down_from shrinking shrank shrinks shortened",
        "unchanged stays_the_same stay_the_same remains_the_same remain_the_same stays_at staying_at "
        "stayed_at stayed_the_same remained_at remained_the_same stayed_flat was_flat were_flat is_flat "
        "are_flat held_steady "
        "remains_# stays_# remained_# stayed_# "
        "remains_at",
    ),
    "plan": ("upgrade upgraded upgrades", "downgrade downgraded downgrades"),
    "rollout": (  # a change put live, or undone: "deployed v2.8.1" / "rolled it back to 2.8.0"
        "deployed redeployed rolled_out rolled_it_out rolled_them_out promoted kept in_place left_standing "
        "went_live gone_live is_live is_now_live now_live",
        "rolled_back rolled_it_back rolled_them_back rolling_back revert reverts reverted reverting reversed "
        "voided undone",
    ),
    "add": (
        "add added include included includes",
        "remove removed delete deleted exclude excluded excludes left_out left_it_out left_off",
    ),
    "keep": (
        "keep keeps kept keeping retain retained retains retaining in_place left_up",
        "deleted erased removed discarded destroyed dropped cancelled canceled archived lose loses losing "
        "terminated revoked voided scrapped purged wiped",
    ),
    "whole": ("full complete", "partial partially incomplete"),
    "hours": ("full_time", "part_time"),
    # the shape a thing is found in: "the roof in good condition" is not "the roof is in poor shape"
    "condition": (
        "in_good_condition in_good_shape in_great_shape in_good_working_order is_fine was_fine are_fine "
        "were_fine tested_accurate",
        "in_poor_condition in_bad_condition in_poor_shape in_bad_shape faulty defective was_low is_worn "
        "are_worn",
    ),
    # how much of a thing there is to have: "plenty of free rooms" is not "the hotel is overbooked"
    "supply": (
        "plenty_of plentiful surplus_of a_surplus ample",
        "running_low is_low are_low already_low overbooked sold_out fully_booked #_full out_of_space "
        "out_of_disk out_of_memory out_of_room",
    ),
    "valid": ("valid", "invalid expired"),
    "timing": (
        "on_time early ahead_of_schedule ahead_of_the_deadline before_the_deadline up_to_date",
        "late delayed overdue running_late after_the_deadline past_the_deadline missed_the_deadline "
        "behind_schedule",
    ),
    "limit": (
        "above exceeds exceeded exceeding over_budget over_the went_over goes_over go_over is_over_the "
        "are_over_the was_over_the were_over_the",
        "below within_the under_budget under_the stayed_under stays_under stay_under",
    ),
    "cause": (
        "caused_by came_from comes_from come_from stemmed_from traced_to root_cause",
        "unrelated unrelated_to nothing_to_do_with",
    ),
    "duration": ("extended extend extends lengthened longer", "shortened shorten shortens shorter cut_short"),
    "day": ("today tonight this_morning this_afternoon this_evening", "tomorrow", "yesterday"),
    "daypart": (
        "morning mornings",
        "afternoon afternoons",
        "evening evenings tonight night nights overnight",
    ),
    "paid": ("paid", "unpaid is_due are_due still_due outstanding still_outstanding owed"),
    "price": (
        "free free_of_charge at_no_cost no_charge costs_nothing cost_nothing waived",
        "cost costs charge charged fee fees",
    ),
    "present": ("received found arrived", "missing lost"),
    "delivery": (  # "it was delivered yesterday" / "the second box is still in transit"
        "delivered",
        "in_transit out_for_delivery on_the_way on_its_way en_route",
    ),
    "customs": ("cleared released", "held stuck holding"),
    # the way a thing is sent or done: "we'll text you" is not "we will notify you by email", "submitted
    # online" is not "mailed in on paper", "direct-deposited" is not "mailed as a paper check"
    "channel": (
        "by_email via_email emailed_you email_you e_mailed",
        "by_text via_text texted text_you by_sms via_sms",
        "by_phone phoned call_you called_you",
        "by_mail by_post paper_check on_paper mailed_in",
        "direct_deposit direct_deposited direct_deposits",
        "submitted_online filed_online e_filed applied_online",
        "in_person",
        "telehealth by_video video_call",
    ),
}

# word form (phrases joined by "_") -> the "family:side" keys it says ("decision:1")
_SIDE_OF: dict[str, tuple[str, ...]] = {}
for _family, _forms in _OPPOSITES.items():
    for _side, _words_of_side in enumerate(_forms):
        for _form in _words_of_side.split():
            _SIDE_OF[_form] = (*_SIDE_OF.get(_form, ()), f"{_family}:{_side}")
# phrases that say no side: "feel free to ask", "good morning"
for _neutral in (
    "feel_free",
    "free_to",
    "free_of",  # "free of nuts" (but "free of charge" is a price: the longer form is read first)
    "due_to",
    "in_place_of",  # "the new logo in place of the old one" keeps nothing
    "until_cancelled",  # "valid until cancelled", "a good-til-cancelled order": how long, not a cancellation
    "til_cancelled",
    "till_cancelled",
    "good_morning",
    "good_afternoon",
    "good_evening",
    "good_night",
):
    _SIDE_OF[_neutral] = ()
# "declined" with an object is a refusal ("declined your offer"), without one a fall ("sales declined 5%")
for _refusal in ("declined", "declines", "declining"):
    for _object in _words("the your a an my our their his her its this that these those"):
        _SIDE_OF[f"{_refusal}_{_object}"] = ("decision:1",)
# A unit of time in its base: "3 weeks" is 1,814,400 seconds, "2 years" 24 months
_IN_BASE = {"second": ("second", 1), "minute": ("second", 60), "hour": ("second", 3600)}
_IN_BASE |= {
    "day": ("second", 86400),
    "week": ("second", 604800),
    "month": ("month", 1),
    "year": ("month", 12),
}
# A figure of a change, its unit of time or of size read in its base ("40 ms" is 0.04 s): the number
# and the unit are its two groups; "about", a currency, a range's upper end and "%" are read past.
_IN_UNITS = {unit: float(factor) for unit, (base, factor) in _IN_BASE.items() if base == "second"}
_IN_UNITS |= {"ms": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "min": 60, "h": 3600, "hr": 3600}
_IN_UNITS |= {"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}
_FIGURE = (
    r"(?:about |around |roughly )?[$€£]?(\d[\d,]*(?:\.\d+)?)(?:-\d[\d,]*(?:\.\d+)?)?%?"
    rf" ?(?:({'|'.join(sorted(_IN_UNITS, key=len, reverse=True))})s?\b)?"
)
# A change of value with its verb: the direction it says, as the "level" family ("from $30 to $45" rose).
_CHANGE_FROM_TO = re.compile(
    r"\b(?:changed|moved|raised|increased|lowered|reduced|cut|dropped|rose|fell|scaled|bumped|updated|went)"
    rf"\b[^.;]{{0,60}}?\bfrom {_FIGURE} to {_FIGURE}",
    re.IGNORECASE,
)


def _way_it_went(old: str, old_unit: str | None, new: str, new_unit: str | None) -> tuple[str, str] | None:
    """("more" or "less", the kind of its unit: "time", "size" or "") of a change from the figure ``old``
    to ``new``, a figure without a unit taking the other's ("from 2.3 seconds to 40 ms" is less time),
    or None for no change ("from 30 to 30")."""
    old_unit = (old_unit or new_unit or "").lower()
    new_unit = (new_unit or old_unit).lower()
    was = float(old.replace(",", "")) * _IN_UNITS.get(old_unit, 1)
    now = float(new.replace(",", "")) * _IN_UNITS.get(new_unit, 1)
    if was == now:
        return None
    kind = "" if not old_unit else "size" if old_unit.endswith("b") else "time"
    return ("more" if now > was else "less", kind)


_LONGEST_SIDE = max(form.count("_") + 1 for form in _SIDE_OF)
_SIDE_FIRST = frozenset(form.split("_", 1)[0] for form in _SIDE_OF)  # most words start no side: skip them
_SIDE_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|\d+|[.!?;:,]")  # a number reads as "#": "up 8%"


_OBLIGED = frozenset(_words("has have needs need yet"))  # "… to" before what is still to be done


_MODALS = frozenset(_words("must should can could may might"))  # "… be" before what is to be or may be


def _is_cue(word: str) -> bool:
    """Whether a lowercased word is a negation cue ("not", "none", "isn't", "cant")."""
    return word.replace("'", "") in _NEGATIONS or word.endswith("n't")


# Verbs of needing, after which a side is a thing asked for: "needs approval", "requires a refund"
_NEEDING = frozenset(_words("need needs needed require requires required"))
_POSSESSIVES = frozenset(_words("your my our their his her"))  # "for your approval": asked of you


def _asked_for(recent: list[str]) -> bool:
    """Whether the words before a side make it a thing needed or asked for, not yet had: "needs
    approval from security", "waiting as a draft for your approval" (not "for the morning shift", a
    time, nor "for the cancelled flight", a thing said in its state)."""
    if recent[-2:-1] == ["for"] and recent[-1] in _POSSESSIVES:
        return True
    words = recent[:-1] if recent[-1:] and recent[-1] in _DETERMINERS else recent
    return bool(words) and words[-1] in _NEEDING


def _to_do(recent: list[str]) -> bool:
    """Whether the words before a side make it a thing to do or one that may be, not a state said:
    "still has to approve", "has yet to approve", "must be paid", "needs to be signed", "can be
    cancelled", "needs approval"; not "turned out to be faulty"."""
    if _asked_for(recent):
        return True
    if recent[-1:] == ["be"]:  # "must be paid", "needs to be signed"
        recent = recent[:-1]
        if recent[-1:] and recent[-1] in _MODALS:
            return True
    return recent[-1:] == ["to"] and len(recent) > 1 and recent[-2] in _OBLIGED


# Verbs whose side is said with a particle after their object ("turned the fans on", "ruled Biscuit
# out", "turned the grain away"), or with a preposition after an object pronoun ("cleared him for
# anesthesia", "moved it to Friday")
_PARTICLES = frozenset(_words("on off out away down back up"))
_TWO_WORD_FORMS = [form.split("_") for form in _SIDE_OF if form.count("_") == 1]
_NOT_SEPARATED = frozenset(  # verbs with no object: "is on", "went down", "stays off"
    _words("is are was were still back slightly go goes going gone went sold dropped stays stay remains due")
    + _words("free unrelated")
)
_SEPARABLE_BY_PRONOUN = frozenset(v for v, then in _TWO_WORD_FORMS if then in ("for", "to")) - _NOT_SEPARATED
_SEPARABLE = (
    _SEPARABLE_BY_PRONOUN | frozenset(v for v, then in _TWO_WORD_FORMS if then in _PARTICLES) - _NOT_SEPARATED
)
_OBJECT_PRONOUNS = frozenset(_words("it them him her"))
# What may follow a particle: it ends the phrase ("turned the fans on at 5:10", "… off."), where a
# determiner after it makes it a preposition ("left the cat on the couch")
_AFTER_PARTICLE = frozenset(
    _words(". , ; : ! ? at on for from in to until since after before during by with as because so and but")
)


def _separated_particle(words: list[str], i: int) -> int:
    """The index of the particle of a separable verb at ``words[i]`` said after its object ("turned
    the exhaust fans on at 5:10", "ruled Biscuit out for anesthesia", "switched it off", "cleared him
    for"), or 0: the object is a pronoun, or one word, or an article and up to three words."""
    verb = words[i]
    first = words[i + 1] if i + 1 < len(words) else "."
    if first in _OBJECT_PRONOUNS and verb in _SEPARABLE_BY_PRONOUN:
        return i + 2 if i + 2 < len(words) and f"{verb}_{words[i + 2]}" in _SIDE_OF else 0
    ends: tuple[int, ...] = (i + 2,)
    if first in _DETERMINERS:
        ends = tuple(range(i + 3, min(i + 6, len(words) - 1)))
    for k in ends:
        if k + 1 >= len(words) or any(w in ".!?;:," or w in _PARTICLES for w in words[i + 1 : k]):
            return 0
        if f"{verb}_{words[k]}" in _SIDE_OF and words[k] in _PARTICLES and words[k + 1] in _AFTER_PARTICLE:
            return k
    return 0


# Nouns of a decision that name the thing decided on after an article or "pre-": "the mortgage
# pre-approval was turned down" says one side, not two (not "Finance gave its approval": a decision).
_DECISION_NOUNS = frozenset(_words("approval denial rejection"))
_NAMED_AFTER = frozenset(_words("the a an this that pre"))


@lru_cache(maxsize=4096)
def _read_sides(text: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """The opposite-state sides ``text`` says positively (``{"decision:1": "denied"}``), the sides it
    denies with a verbal cue (``{"stock:0": "not available"}``: left to the negation guard as a
    contradiction of its own word, read here for other words of the side), and the side each family
    is said in last (``{"stock": "stock:1"}``: "was in stock, now sold out").

    >>> _read_sides("Your claim was denied; the item is not available.")
    ({'decision:1': 'denied'}, {'stock:0': 'not available'}, {'decision': 'decision:1'})
    """
    found: dict[str, str] = {}
    denied: dict[str, str] = {}
    latest: dict[str, str] = {}
    lowered = text.replace("’", "'").lower()
    if "-free" in lowered:  # "fee-free" says no price
        lowered = _FREE_OF.sub("", lowered)
    raw = [*_SIDE_TOKEN.findall(lowered), "."]  # the text's end ends its last clause: "the cache is on"
    words = ["#" if w[0].isdigit() else w for w in raw]
    clause_start = 0
    skip_to = 0  # past the words of a phrase already read ("free of charge" is not also "charge")
    for i, word in enumerate(words):
        if word in ".!?;:,":
            clause_start = i + 1
            continue
        if i < skip_to or word not in _SIDE_FIRST:
            continue
        keys: tuple[str, ...] | None = None
        particle = _separated_particle(words, i) if word in _SEPARABLE else 0
        if particle:  # "turned the exhaust fans on", "ruled Biscuit out": the phrase around its object
            size = particle + 1 - i
            keys = _SIDE_OF[f"{word}_{words[particle]}"]
        else:
            for size in range(_LONGEST_SIDE, 0, -1):  # the longest phrase first: "out of stock", not "stock"
                keys = _SIDE_OF.get("_".join(words[i : i + size]))
                if keys is not None:
                    break
        if keys is None:
            continue
        skip_to = i + size
        recent = words[max(clause_start, i - 3) : i]
        said = " ".join(raw[i : i + size])
        if _to_do(recent):
            continue  # "still has to approve it", "must be paid by": what is to be done is not said
        if word in _DECISION_NOUNS and recent[-1:] and recent[-1] in _NAMED_AFTER:
            continue  # "the mortgage pre-approval was turned down", "the denial": the thing decided on
        cues = [w for w in recent if _is_cue(w)]
        if cues:
            if not any(c in _PHRASE_CUES for c in cues):  # "not admitted"; "no data lost" denies the data
                for key in keys:
                    denied.setdefault(key, f"not {said}")
            continue
        for key in keys:
            found.setdefault(key, said)
            latest[key.partition(":")[0]] = key
    changes = _CHANGE_FROM_TO.finditer(text) if " from " in text else ()  # most texts name no change
    for change in changes:  # "changed your donation from $30 to $45" went up
        went = _way_it_went(*change.groups())
        if went is not None:
            key = "level:0" if went[0] == "more" else "level:1"
            found.setdefault(key, change.group(0))
            latest["level"] = key
    for (hour, _, half), written in _clock_times(text).items():  # "at 9:00 p.m." is in the evening
        key = f"daypart:{_daypart(hour, half)}"
        found.setdefault(key, written)
        latest.setdefault("daypart", key)
    return found, denied, latest


def _daypart(hour: int, half: str) -> int:
    """The side of the "daypart" family an hour of 12 with "a" or "p" falls in: 0 morning (5 am to
    noon), 1 afternoon (noon to 6 pm), 2 evening and night."""
    if half == "a":
        return 0 if hour >= 5 else 2
    return 1 if hour < 6 else 2


# A code: letters and digits in one word ("gate B12", "apartment 4D", "seat 14C"), but not a value with
# its unit or an ordinal ("10am", "5GB", "3rd"), which the number guard reads.
_CODE = re.compile(r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]{2,12}\b")
_UNIT_SUFFIX = re.compile(
    r"\d+(?:st|nd|rd|th|am|pm|[kmgtp]b|ms|[smhkgxp]|hrs?|mins?|secs?|kg|km|mi|ft|cm|mm|mg|ml|px|mph|kph)"
)


_EXTENSION = r"\.(?:pdf|csv|xlsx?|docx?|json|ya?ml|txt|py|sql)\b"
# An identifier a tool names, each kind with the mark that must be there for it to be: a channel
# or handle ("#eng-announcements", "@ops"), a snake_case name ("load_inventory"), a file ("Q2.pdf").
_IDENTIFIERS = (
    (re.compile(r"[#@]"), re.compile(r"(?<![\w#@])[#@][A-Za-z][\w-]*")),
    (re.compile(r"_"), re.compile(r"\b[A-Za-z]\w*_\w+\b")),
    (re.compile(_EXTENSION), re.compile(rf"\b[\w-]+{_EXTENSION}")),
    # a thing named by a letter ("Zone C", "Warehouse B", "Plan A"); not "I"
    (re.compile(r"[a-z] [A-HJ-Z]\b"), re.compile(r"\b[A-Z][a-z]+ [A-HJ-Z]\b(?![.'’-]\w)")),
)
_LETTER_BY_DIGIT = re.compile(r"[A-Za-z]\d|\d[A-Za-z]")  # where a code can be: most texts have none


@lru_cache(maxsize=4096)
def _codes(text: str) -> dict[str, str]:
    """The codes of letters and digits and the identifiers ``text`` writes, lowercased, as written.

    >>> _codes("Gate B12, seat 14C, boarding at 10am; posted to #eng-announcements.")
    {'b12': 'B12', '14c': '14C', '#eng-announcements': '#eng-announcements'}
    """
    found: dict[str, str] = {}
    for code in _CODE.findall(text) if _LETTER_BY_DIGIT.search(text) else ():
        if not _UNIT_SUFFIX.fullmatch(code.lower()):
            found.setdefault(code.lower(), code)
    for mark, pattern in _IDENTIFIERS:
        for name in pattern.findall(text) if mark.search(text) else ():
            found.setdefault(name.lower(), name)
    return found


def _is_code(piece: str) -> bool:
    """Whether a space-free piece of text is a code of letters and digits ("4B", "Q3"), not a value
    with its unit ("10am", "5kg")."""
    return any(not _UNIT_SUFFIX.fullmatch(code.lower()) for code in _CODE.findall(piece))


# A code that is a value all the same: a time in glued units ("11m40s", "1h30m") or a percentile ("p95").
_VALUE_CODE = re.compile(r"(?:\d+[dhms])+\d*|p\d\d(?:\.\d)?")


def _only_in_codes(key: str, act: Analysis, exp: Analysis) -> bool:
    """Whether the answer writes number ``key`` only inside codes, which name a thing and count nothing
    ("in unit 2F" says no "for 2 hours", "a Toyota RAV4" no "at 4:00 PM", "M8 bolts" no "on May 8"),
    while ``expected`` writes it outside one."""
    if not key.isdigit() or not any(
        key in re.findall(r"\d+", code) for code in act.codes if not _VALUE_CODE.fullmatch(code)
    ):
        return False
    return key not in _numbers_beside_codes(act.text) and key in _numbers_beside_codes(exp.text)


@lru_cache(maxsize=1024)
def _numbers_beside_codes(text: str) -> frozenset[str]:
    """The numbers ``text`` writes outside its codes of letters and digits ("Q3 revenue of 3 million": 3)."""
    blanked = _CODE.sub(lambda m: m[0] if _UNIT_SUFFIX.fullmatch(m[0].lower()) else " ", text)
    return frozenset(analyse(blanked).numbers)


def _shape(code: str) -> str:
    """Letters as "a", digits as "9": "B12" and "C12" have one shape, "4D" another; an identifier's
    shape is its kind ("#" channel, "@" handle, "_" name, a file's extension)."""
    if code[0] in "#@":
        return code[0]
    if "." in code:
        return code.rsplit(".", 1)[1]
    if "_" in code:
        return "_"
    if " " in code:  # "zone c" and "zone b" have one shape, "gate b" another
        return code.split(" ", 1)[0] + " ?"
    return "".join("9" if ch.isdigit() else "a" for ch in code)


# "no data has been lost", "no customers were affected": "no" denies the loss, not the noun.
_NO_LOSS = re.compile(
    r"\b[Nn]o (?:(?P<adjective>\w+) )??(?P<noun>\w+) "
    r"(?:has |have |was |were |is |are |will be |had )?(?:been )?"
    r"(?:lost|deleted|affected|damaged|harmed|compromised|exposed|leaked|corrupted|impacted|missing)\b"
)
_Token = tuple[str, str, str, str]  # kind, key, extra (as _classify), the token as written


# "peanut-free", "fee-free": the word before the suffix is denied, and nothing after it.
_FREE_OF = re.compile(r"(?<=[^\W\d_])-free\b", re.IGNORECASE)
_DENIED_BEFORE = "suffix"  # the payload of a negation token that denies the word before it ("-free", "non-")


@lru_cache(maxsize=65536)
def _piece(piece: str) -> tuple[_Token, ...]:
    """The classified tokens of one space-free piece of text ("refund." -> the word, then the stop)."""
    if "-" in piece and _FREE_OF.search(piece):
        head, tail = _FREE_OF.split(piece, maxsplit=1)
        return (*_piece(head), (_NEGATION, "-free", _DENIED_BEFORE, "-free"), *_piece(tail))
    if piece[:4].lower() == "non-" and len(piece) > 4:  # "non-refundable": the word, denied
        word, *rest = _piece(piece[4:]) or ((_SKIP, "", "", ""),)
        if word[0] is _CONTENT:
            return (word, (_NEGATION, "non-", _DENIED_BEFORE, piece[:4]), *rest)
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
    core: dict[str, str]  # the first word each negation governs (what it is about) -> the next one, or ""
    old: frozenset[str]  # numbers and date names said only as what changed ("moved from Monday to ...")
    conditional: frozenset[str]  # stems said only in a condition ("before it can be merged"): not claims
    prefixes: dict[str, tuple[str, ...]]  # first 4 letters -> stems, for the prefix match; filled by _find
    text: str  # as given, for the guards that read it sentence by sentence

    # Read on first use (most answers are never asked: only an expected text that says a state or
    # names a code makes the answer's be read).

    @property
    def sides(self) -> dict[str, str]:
        """``"family:side"`` of each opposite-state word said positively -> as written."""
        return _read_sides(self.text)[0]

    @property
    def denied_sides(self) -> dict[str, str]:
        """... of each said under a verbal negation -> ``"not …"`` as written."""
        return _read_sides(self.text)[1]

    @property
    def latest_sides(self) -> dict[str, str]:
        """family -> the side said last ("was locked … unlocked it now")."""
        return _read_sides(self.text)[2]

    @property
    def codes(self) -> dict[str, str]:
        """Codes of letters and digits ("B12", "4D") and identifiers, lowercased -> as written."""
        return _codes(self.text)


# A count of none before a word: "0 critical" (not "$0", "2.0", "0 of 5" or "12 to 0 after"), and before
# what is to be done: "0 to destroy" is nothing to destroy (not "0 to 5").
_NONE_COUNTED = re.compile(r"(?<![$€£.,:\d])\b0 (?=(?P<next>[^\W\d_]+)(?: (?P<then>[^\W\d_]+))?)")


def _none_counted(match: re.Match[str]) -> str:
    """What `_NONE_COUNTED`'s match reads as: the cue "zero", or the count as written."""
    before = match.string[max(0, match.start() - 5) : match.start()].split()
    if before and before[-1].lower() in _TO_A_VALUE:
        return match[0]  # "scaled down to 0 nodes": a value
    then = match["then"]
    if match["next"].lower() in _STOPWORDS and not (
        match["next"].lower() == "to" and then and then.lower() not in _STOPWORDS
    ):
        return match[0]  # "0 of 5": a value
    return "zero "  # the cue: "0 critical" says "zero critical", "no critical"


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
    text, written = _in_digits(text)
    if "0 " in text:
        text = _NONE_COUNTED.sub(_none_counted, text)
    order: list[str] = []
    surface: dict[str, str] = {}
    positive: set[str] = set()
    negated: dict[str, str] = {}
    numbers: dict[str, str] = {}
    names: dict[str, str] = {}
    core: dict[str, str] = {}
    conditional: set[str] = set()
    old = _read_clauses(text, order, surface, positive, negated, numbers, names, core, conditional)
    for value, words in written:  # "expected 'three hundred'", not the digits the reader saw
        if value in numbers:
            numbers[value] = words
    losses = _NO_LOSS.finditer(text) if "o " in text else ()  # "no data has been lost": the data is there
    for match in losses:
        for word in (match["adjective"], match["noun"]):
            noun = stem(word.lower()) if word else ""
            if negated.get(noun, "").lower().startswith("no"):
                del negated[noun]
                positive.add(noun)
    return Analysis(
        tuple(order),
        surface,
        frozenset(positive),
        negated,
        numbers,
        names,
        core,
        old,
        frozenset(conditional),
        {},
        text,
    )


def _read_clauses(
    text: str,
    order: list[str],
    surface: dict[str, str],
    positive: set[str],
    negated: dict[str, str],
    numbers: dict[str, str],
    names: dict[str, str],
    core: dict[str, str],
    conditional: set[str],
) -> frozenset[str]:
    """Read ``text`` clause by clause for `analyse`, filling its collections (`Analysis`): each content word
    in order and as written, if it is said positively, the negation reaching it, numbers, date names, the
    words each negation governs first, those said only in a condition; returns those said only as old."""
    r = _Reader(positive, negated, core)
    old: set[str] = set()  # numbers and names said as an old value ("from $90 to $140", "instead of Monday")
    current: set[str] = set()  # ... and said otherwise
    changed = False  # the clause has a verb of change ("moved", "raised"), so "from X" is the old value
    prev2 = prev = here = ""  # the two tokens before this one, and this one (their keys)
    before = kind_here = _STOP  # the kind of the token before this one, and of this one
    content, skip = _CONTENT, _SKIP  # locals: this loop is hot
    last_value = ""  # the value the previous token added to numbers, if it was a number
    old_run = False  # the previous token was a value said as an old one ("from May 6 to May 20")
    start = True  # at the start of a sentence, where "May" is the verb ("May I help?")
    # No token spans a space, so tokenising space-separated pieces (cached: answers reuse their words)
    # gives the same tokens as one findall over the text, at a third of the cost.
    for kind, word, payload, tok in chain.from_iterable(map(_piece, text.replace("’", "'").split(" "))):
        prev2, prev, here = prev, here, word
        before, kind_here = kind_here, kind
        was_start, start = start, kind is _STOP
        if word == "may" or word == "zero" or word in _STOPPING:
            kind, word, payload = _in_context(kind, word, payload, tok, was_start, before, r.last_skip)
        if kind is skip:
            old_run = old_run and word in ("at", "and")  # "from Friday at 7:30", "instead of 8:00 and 14:00"
            r.stopword(word, prev)
            changed = changed or word == "up" or word == "down"  # "was up from $610 to $616"
            continue
        was_old = _said_as_old(kind is _NUMBER or bool(payload), prev, prev2, changed, old_run)
        old_run = was_old and (kind is _NUMBER or bool(payload))
        r.after_and = False
        passive, adjectival = r.last_skip in _PASSIVE, r.last_skip in _DETERMINERS or r.last_number
        pronoun = r.last_skip in _PRONOUNS  # "after it failed": the pronoun is what failed
        r.last_skip, r.last_number = "", kind is _NUMBER
        if kind is content and last_value and tok.lower() in _MULTIPLIERS:  # "three hundred" is 300
            (old if was_old else current).add(_multiply(numbers, last_value, tok))
            last_value = ""
            continue
        last_value = ""
        if kind is content:
            was_adjacent, r.adjacent = r.adjacent, False
            if was_adjacent and r.extends_cue(word):
                continue
            if payload:
                names.setdefault(payload, tok)
                (old if was_old else current).add(payload)
            changed = changed or word in _CHANGING
            (conditional if r.in_condition else r.asserted).add(word)
            if word not in surface:
                surface[word] = tok
                order.append(word)
            r.past_verb_after_comma(tok, before is _COMMA or (prev == "and" and prev2 == ","))
            if word in _DENYING and r.cue is None and not adjectival and tok[-1] in "dsDS":  # not "a decline"
                r.denial(word, tok, passive, pronoun)
            else:
                r.content(word, tok, was_adjacent)
        elif kind is _NEGATION:
            r.negation(word, payload, tok, prev)
        elif kind is _NUMBER:
            last_value = "" if word in numbers else word  # a value this token adds, for a multiplier
            numbers.setdefault(word, tok)
            (old if was_old else current).add(word)
            r.number(adjectival)
        elif (kind is _STOP or kind is _COMMA or kind is _CONTRAST_WORD) and not (
            word == "yet" and r.adjacent
        ):
            # a clause ends (not at the "yet" of "not yet available": that is one cue)
            r.boundary(kind is _COMMA, word)
            changed = changed and kind is _COMMA  # "rose by 2%, from $610 to $616"
    r.finish(conditional)
    return frozenset(old - current)


def _in_context(
    kind: str, word: str, payload: str, tok: str, was_start: bool, before: str, last_skip: str
) -> tuple[str, str, str]:
    """A token's (kind, key, extra) read with the token before it: "May" inside a sentence is the
    month ("delivered in May"), "stop" after a determiner, a noun or a number is the noun ("the Cozumel
    stop", "146 stops"), a verb of stopping after a negation is what it denies ("will not stop at Elm
    Street", "no stop in Mexico"), "zero" after "to", "at" or "from" is a value ("errors dropped to zero")."""
    if kind is _SKIP and word == "may" and tok[0] == "M" and not was_start:
        return _CONTENT, word, "may"
    if word == "zero":
        return (_NUMBER, "0", "") if last_skip in _TO_A_VALUE else (kind, word, payload)
    noun = word in _NOUN_CUES and (before is _CONTENT or before is _NUMBER or last_skip in _DETERMINERS)
    if kind is _NEGATION and (noun or before is _NEGATION):
        return _CONTENT, stem(word), payload
    return kind, word, payload


def _said_as_old(value: bool, prev: str, prev2: str, changed: bool, old_run: bool) -> bool:
    """Whether a token is said as an old value: after "from" in a clause with a verb of change, after
    "instead of" or "rather than", or as the next value of an old one ("from May 6": the 6 too)."""
    return (
        (prev == "from" and changed)
        or (prev == "of" and prev2 == "instead")
        or prev2 == "rather"
        or (old_run and value)
    )


def _multiply(numbers: dict[str, str], value: str, multiplier: str) -> str:
    """Replace ``value`` in ``numbers`` by its product with ``multiplier`` ("three hundred" is 300)."""
    written = numbers.pop(value)
    product = _number(str(float(value) * _MULTIPLIERS[multiplier.lower()]))
    numbers.setdefault(product, f"{written} {multiplier}")
    return product


class _Reader:
    """The state of `_read_clauses` inside the current clause, and what each kind of token does to it."""

    __slots__ = (
        "adjacent",
        "after_and",
        "asserted",
        "comma_and",
        "core",
        "cue",
        "cue_core",
        "cue_phrase",
        "delayed",
        "denied_here",
        "held",
        "in_condition",
        "last_number",
        "last_skip",
        "negated",
        "pending",
        "positive",
        "reach",
        "subject",
        "subject_open",
    )

    def __init__(self, positive: set[str], negated: dict[str, str], core: dict[str, str]) -> None:
        self.positive, self.negated, self.core = positive, negated, core
        self.cue_core = ""  # the first word the active cue governs, until the next is read
        self.in_condition = False  # past "if", "unless", "until" or "before" in this clause
        self.asserted: set[str] = set()  # content words said outside a condition
        self.denied_here: list[str] = []  # words a verbal cue denies in this clause
        self.delayed: set[str] = set()  # ... when "until" follows: denied only for a while
        # Content words of the current clause not under a negation, positive when the clause ends (and
        # negated too if a verbal cue follows them in the clause).
        self.pending: list[tuple[str, str]] = []
        self.cue: str | None = None  # the active negation cue
        self.cue_phrase = False  # its scope ends at a comma
        self.reach = 0  # content words it still reaches
        self.adjacent = False  # the previous token was the cue itself
        self.last_skip = ""  # the previous token, when it was a stopword ("was" in "was declined")
        self.last_number = False  # the previous token was a number ("five failed attempts": an adjective)
        self.subject: list[str] = []  # the clause's first run of content words: its subject, as a guess
        self.subject_open = True  # no other word has ended that run yet
        # the subject of an active "declined": denied unless an object follows (see `denial`)
        self.held: list[tuple[str, str]] = []
        self.after_and = False  # the previous token was "and"
        self.comma_and = False  # ... after a comma

    def new_clause(self) -> None:
        """No subject reaches back past a clause boundary: what is pending is said."""
        self.positive.update(w for w, _ in self.pending)
        self.pending.clear()
        self.subject, self.subject_open, self.held = [], True, []
        self.denied_here = []

    def stopword(self, word: str, prev: str) -> None:
        self.last_skip, self.last_number = word, False
        if word in _CONDITIONS:
            self.in_condition = True
        if self.subject and word not in _SUBJECT_WORDS:
            self.subject_open = False
        if self.adjacent and word in _IDIOMS:
            self.cue = None
        if word in _CIRCUMSTANCE and self.cue is not None and self.cue.lower() in _STOPPING:
            if self.reach == _SCOPE:  # "push notifications stopped on June 3": they are what stopped
                _deny(self.pending, self.negated, self.cue)
            self.cue = None
        self.adjacent = False
        if self.after_and and (
            word in _PRONOUNS
            or (word in _DETERMINERS and (self.comma_and or self.reach < _SCOPE))
            or (word in _AUXILIARIES and self.reach < _SCOPE)
        ):
            # "..., and you keep access", "…, and the file reaches the server", "wasn't working and the
            # exit sign was unlit", "had no RMA and are sitting in Q2" (the cue has a word of its own):
            # a new clause
            self.cue = None
        self.after_and = word == "and"
        self.comma_and = self.after_and and prev == ","
        if self.after_and:  # "is cancelled and won't renew": the negation denies the renewal only
            self.new_clause()
        if (word == "of" and prev in ("instead", _FREE)) or (word == "than" and prev == "rather"):
            self.cue, self.cue_phrase, self.reach, self.adjacent = f"{prev} {word}", True, _SCOPE, True

    def past_verb_after_comma(self, tok: str, after_comma: bool) -> None:
        """ "so it no longer blocks merges, and opened issue #733", "didn't go through, refunded the full
        $82.99": once a verbal cue has governed a word, a verb in the past after a comma (``tok``, when
        ``after_comma``) is a new predicate of the subject, outside the cue."""
        if (
            after_comma
            and self.cue is not None
            and tok[-2:] == "ed"
            and not self.cue_phrase
            and self.reach < _SCOPE
        ):
            self.cue = None

    def denial(self, word: str, tok: str, passive: bool, pronoun: bool) -> None:
        """ "the refund was denied", "payment failed": the clause's subject is denied, not said; the rest
        of the clause so far counts as both ("request to work on Fridays was declined"). After a pronoun
        ("I quarantined the test after it failed") the pronoun is what was denied: the rest is said."""
        if pronoun:
            self.new_clause()
        _deny(self.pending, self.negated, tok)
        denied = [p for p in self.pending if p[0] in self.subject]
        self.pending = [p for p in self.pending if p[0] not in self.subject]
        self.core.update((w, "") for w, _ in denied)
        self.pending.append((word, tok))
        if word in _DENYING_OBJECT and not passive:
            # "the bank declined the payment": the object is denied and the subject said
            self.cue, self.cue_phrase, self.reach, self.held = tok, True, 2, denied
        self.subject_open = False

    def content(self, word: str, tok: str, was_adjacent: bool) -> None:
        if self.subject_open:
            self.subject.append(word)
        cue = self.cue
        if cue is None:
            self.pending.append((word, tok))
            return
        if self.held:  # "declined the review": the one who declined is said
            self.pending.extend(self.held)
            self.held = []
        if self.reach == _SCOPE - 1 and self.cue_core:  # "not send a replacement": what else it governs
            self.core[self.cue_core] = self.core[self.cue_core] or word
        self.cue_core = ""
        if self.reach == _SCOPE:  # the first word the cue governs: it is what the negation is about
            self.core.setdefault(word, "")
            self.cue_core = word
            if not self.cue_phrase:
                # A verbal cue may deny its clause's subject ("accidental damage is not covered")
                # or not ("the subscription will not renew"): the subject counts as both.
                _deny(self.pending, self.negated, cue)
        if word not in self.negated:
            self.negated[word] = f"{cue} {tok}" if was_adjacent else f"{cue} … {tok}"
        if not self.cue_phrase:
            self.denied_here.append(word)
        self.reach -= 1
        if self.reach == 0:
            self.cue = None

    def extends_cue(self, word: str) -> bool:
        """Whether the word right after a cue is part of it: "no problem" cancels it, "no longer"
        makes "no" a verbal cue ("no longer requires an appointment")."""
        if word in _IDIOMS:
            self.cue = None
            return True
        if word == "longer" and self.cue is not None and self.cue.lower() == "no":
            self.cue, self.cue_phrase, self.adjacent = f"{self.cue} longer", False, True
            return True
        return False

    def negation(self, word: str, payload: str, tok: str, prev: str) -> None:
        """A negation cue: it governs what follows, or denies the word before it ("you owe nothing",
        "peanut-free")."""
        if (word == "nothing" or payload is _DENIED_BEFORE) and self.pending and self.pending[-1][0] == prev:
            self.deny_last(tok)
            if word == "nothing":
                return  # "you owe nothing on the ticket": the owing is denied, not the ticket
        if payload is not _DENIED_BEFORE:
            self.cue, self.cue_phrase, self.reach, self.adjacent = tok, bool(payload), _SCOPE, True

    def number(self, in_a_phrase: bool) -> None:
        """A number ends the clause's subject and is no cue's neighbour; after "declined" it says a fall
        ("web traffic declined by 2%"): its subject is said, unless a determiner (or a number) before it
        puts it in the refused object's noun phrase ("waived the $20 fee", "rejected the 3 invoices")."""
        if self.held and not in_a_phrase:
            self.pending.extend(self.held)
            self.held, self.cue = [], None
        self.adjacent = False
        if self.subject:
            self.subject_open = False

    def deny_last(self, by: str) -> None:
        """ "you owe nothing", "it costs nothing": the word just before ``by`` is denied."""
        word, tok = self.pending.pop()
        written = f"{by}{tok}" if by.endswith("-") else f"{tok}{by}" if by.startswith("-") else f"{tok} {by}"
        self.negated.setdefault(word, written)
        self.core.setdefault(word, "")

    def end_cue(self) -> None:
        """ "refund refused.": a verbal cue that governed nothing denies its subject."""
        if self.cue is not None and self.reach == _SCOPE and not self.cue_phrase:
            _deny(self.pending, self.negated, self.cue)
        self.cue = None

    def boundary(self, comma: bool, word: str) -> None:
        if not comma or self.cue_phrase:  # a verbal cue reaches past a comma, a phrase cue does not
            self.end_cue()
        if word == "until":  # "won't be released until the duty is paid": a delay, not a denial
            self.delayed.update(self.denied_here)
        self.adjacent = False
        self.new_clause()
        self.in_condition = word in _CONDITIONS

    def finish(self, conditional: set[str]) -> None:
        """At the end of the text: what is pending is said; a word said in a condition and outside
        one is said; a word denied only until something happens is not denied."""
        self.end_cue()
        self.positive.update(w for w, _ in self.pending)
        conditional.difference_update(self.asserted)
        conditional.update(self.delayed)


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


# Words that make the number after them a round figure: "about 62 million" for "62.4 million".
_ROUGHLY = re.compile(
    r"\b(?:about|around|roughly|approximately|nearly|almost|close to|just over|just under)\s+"
    r"(?P<figure>[$€£]?\d[\d,]*(?:\.\d+)?%?(?: (?:hundred|thousand|million|billion)\b)?)",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def _round_figures(text: str) -> frozenset[str]:
    """The numbers ``text`` says as round figures, by key ("about 2,300" -> "2300")."""
    found: set[str] = set()
    for match in _ROUGHLY.finditer(text):
        found.update(analyse(match["figure"]).numbers)
    return frozenset(found)


def _near(key: str, text: str, have: dict[str, str]) -> bool:
    """Whether ``key`` is a round figure of ``text`` that a value the answer says rounds to: within
    half its last significant place and a tenth of it ("about 2,300" for 2,314, not "about 14" for 15)."""
    if key not in _round_figures(text):
        return False
    try:
        want = float(key.rstrip("%"))
    except ValueError:
        return False
    digits = key.rstrip("%")
    places = digits.partition(".")[2]
    step = 10.0 ** -len(places) if places else 10.0 ** (len(digits) - len(digits.rstrip("0")))
    for value in have:
        try:
            got = float(value.rstrip("%"))
        except ValueError:
            continue
        if value.endswith("%") == key.endswith("%") and abs(got - want) <= min(step / 2, abs(want) / 10):
            return True
    return False


def _counts_a_word(key: str, text: str) -> bool:
    """Whether ``text`` says number ``key`` right before a content word, as a count of it ("60 days",
    "3 pages"): a count, not a share."""
    slots = _slots(text)
    return any(slot == (_VALUE, key) and slots[n + 1][0] is _WORD for n, slot in enumerate(slots[:-1]))


def compare(act: Analysis, exp: Analysis) -> tuple[float, list[str], str | None]:
    """Coverage of ``exp``'s content words by ``act``, the missing words as written, and any veto."""
    veto = _value_vetoes(act, exp)
    opposite = _opposite(act, exp)
    missing: list[str] = []
    negation: str | None = None
    # a describing verb weighs half, unless the expected text has nothing else
    light = 0.5 if any(s not in _DESCRIBING for s in exp.order) else 1.0
    weights = [light if s in _DESCRIBING else 1.0 for s in exp.order]
    lost = 0.0
    mixed: list[tuple[str, bool]] = []  # expected words the answer says both ways, and if wanted negated
    for s, weight in zip(exp.order, weights):
        t = _find(s, act)
        if t is None:
            missing.append(exp.surface[s])
            lost += weight
            if s in _PASSING_ON and s in exp.core and s in exp.negated and s not in exp.positive:
                negation = negation or _said_of_the_next(act, exp, exp.core[s])
            continue
        want_pos, want_neg = s in exp.positive, s in exp.negated
        if want_pos and not want_neg and t not in act.positive and s not in exp.conditional:
            if (
                (t in act.core and not (_failed_subject(t, act, exp) and (exp.negated or _says_a_lack(exp))))
                or not (exp.negated or _says_a_lack(exp))
                or _is_lack(t, act.surface[t])
            ) and not (_denial_said_alike(t, act, exp) or _failure_taken_up(t, act, exp)):
                negation = f"negated: '{act.negated[t]}'"
        elif (
            not want_neg
            and t in _old_words(act.text)
            and s not in _old_words(exp.text)
            and not _said_done(s, exp)
        ):
            # "the thermostat is in cooling mode" is not "switched it from cooling to heating mode"
            negation = f"expected '{exp.surface[s]}', answer has it only as what changed ('{act.surface[t]}')"
        elif want_pos and _done_but_to_come(s, t, act, exp):
            # "your card has already been charged" is not "your card will be charged when they ship"
            negation = f"tense: expected '{exp.surface[s]}' as done, answer says 'will … {act.surface[t]}'"
        elif want_pos and t in act.conditional and s not in exp.conditional and exp.surface[s].endswith("ed"):
            # "we received the police report" is not "on hold until we receive the police report"
            negation = (
                f"condition: expected '{exp.surface[s]}', answer says '{act.surface[t]}' only in a condition"
            )
        elif (
            want_neg
            and not want_pos
            and s in exp.core
            and t not in act.negated
            and t not in act.conditional  # "if a spot opens up" does not say there are open seats
            and s not in exp.conditional  # "won't be released until the duty is paid": a delay
            and not _denied_alike(s, act, exp)
            and not _verb_denies_alike(act, exp)
            # "no refrigerant recharge needed" for "the refrigerant is fine, so no recharge was needed"
            and not any(w in act.core and w not in act.positive for w in exp.negated if w != s)
            and not _head_denied(s, act, exp)
            and not _denied_by_a_refusal(s, act, exp)
            and not _still_to_do(act, exp)
        ):
            negation = f"not negated: expected '{exp.negated[s]}', answer says '{act.surface[t]}'"
        elif want_pos != want_neg and t in act.positive and t in act.negated and s not in exp.conditional:
            mixed.append((s, want_neg))
    total = sum(weights)
    value = 1.0 - lost / total if total else 1.0  # no content words: only the guards decide
    if veto or negation or opposite:
        return value, missing, veto or negation or opposite
    mixed_veto = _mixed_polarity(act, exp, mixed) if mixed else None
    return value, missing, mixed_veto or _antonym(act, exp) or _yet(act, exp) or _clause_vetoes(act, exp)


def _value_vetoes(act: Analysis, exp: Analysis) -> str | None:
    """The first veto of `compare` on values: an expected number or name the answer lacks or says only
    as what changed, then a changed code, name, half of day, clock time or duration, or two things swapped."""
    veto: str | None = None
    for wanted, have in ((exp.numbers, act.numbers), (exp.names, act.names)):
        for key, written in wanted.items():
            if (
                (key not in have or (have is act.numbers and _only_in_codes(key, act, exp)))
                # "from 78 to 83 percent" for "from 78% to 83%"; not "60%" for "60 days"
                and (f"{key}%" not in have or _counts_a_word(key, exp.text))
                and key not in _same_durations(exp.text, act.text)
                and not _both(key, act)
                and not _near(key, exp.text, have)
            ):
                found = ", ".join(f"'{w}'" for w in have.values()) or "none"
                veto = veto or f"expected '{written}', answer has {found}"
            elif key in act.old and key not in exp.old and key not in _said_from(exp.text):
                veto = veto or f"expected '{written}', answer has it only as what changed ('{have[key]}')"
    veto = veto or _changed_code(act, exp) or _changed_titled_name(act, exp) or _not_all(act, exp)
    return (
        veto
        or _changed_half_of_day(act, exp)
        or _changed_clock_time(act, exp)
        or _changed_duration(act, exp)
        or _swapped(act, exp)
    )


def _clause_vetoes(act: Analysis, exp: Analysis) -> str | None:
    """The vetoes read on the answer's clauses as wholes, when the word-by-word guards found nothing: a
    denial the answer contradicts in other words, a "still" the answer ended, and an "also" the answer
    leaves as it was."""
    return (
        _denial_unsaid(act, exp)
        or _ended(act, exp)
        or _also_left_as_it_was(act, exp)
        or _subject_denied(act, exp)
        or _done_to_the_untouched(act, exp)
        or _not_there(act, exp)
    )


# A thing said to be where or as it was: "the old unit is still there", "the plan remains", "kept"
# (not the "still" of "you will still earn the miles", which says it happens all the same).
_STILL_THERE = re.compile(
    r"\b(?:is|are|was|were)\s+still\b|\b(?:remains?|remained|stays?|stayed|kept|left)\b", re.I
)
# A negation in a relative clause, said of the noun before it: "the bundle that never arrived".
_RELATIVE_CUE = re.compile(r"\b(?:that|which|who)\s+(?:\w+\s+)?(?:not|never|\w+n't)\b", re.IGNORECASE)


def _denied_as_subject(written: str) -> bool:
    """Whether a negated word, as `Analysis.negated` writes it ("keys … weren't"), is the subject of a
    verbal cue after it: not a word a cue governs ("not … keys"), nor one a phrase cue ("none"), a verb
    of stopping or of failure denies."""
    first, _, last = written.partition(" … ")
    cue = last.lower()
    return _is_cue(cue) and cue not in _PHRASE_CUES and cue not in _STOPPING and not _is_cue(first.lower())


def _subject_denied(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a thing does or is something, with no negation, lack or condition,
    and the answer's clauses about the most of its words (two at least, and half) all make that thing
    the subject of a verbal negation of another predicate ("the SkyMiles you'd have earned won't be
    credited" for "the user will still earn SkyMiles"; "the science quiz won't need to be made up" for
    "Leo must make up the science quiz"). Not when such a clause says a lack or denies one ("existing
    snapshots were not deleted" for "existing snapshots kept", "wasn't hauled away" for "is still there"),
    the negation is a relative clause's ("a
    claim for the bundle that never arrived"), the expected predicate is said of a pronoun elsewhere
    ("don't match the source, so I flagged it" for "benchmark chart flagged"), or the answer says a
    state the expected text says ("couldn't assume the role … and completed at 06:00")."""
    if not act.negated or exp.negated or exp.conditional or _says_a_lack(exp):
        return None  # no clause of an answer that negates nothing makes its subject denied
    if any(k in act.sides for k in exp.sides) or _says(exp.text, _STILL_THERE):
        return None  # "the old unit wasn't hauled away" says "the old unit is still there"
    words = [s for s in _stateless(exp) if s not in _DESCRIBING]
    about = _clauses_about_most(act, words, _STATE_CLAUSE_END)
    subjects = [t for s in words if about and (t := _find(s, about[0])) is not None]
    for clause in about:
        shared = [t for s in words if (t := _find(s, clause)) is not None]
        if clause.conditional or not all(_denied_as_subject(clause.negated.get(t, "")) for t in shared):
            return None
        if clause.denied_sides or _RELATIVE_CUE.search(clause.text) or _names_a_lack(clause):
            return None
        if any(_is_lack_side(key) for key in clause.sides):
            return None
        missing = [s for s in words if _find(s, clause) is None]
        others = _clauses(act.text, _STATE_CLAUSE_END)
        if any(_find(s, c) is not None and _refers(c) for s in missing for c in others):
            return None  # "… so I flagged it"
    return f"negated: '{about[0].negated[subjects[0]]}'" if subjects else None


# A thing said to be left as it was, its subject before: "your existing projects and settings were not
# affected", "Bus 9 is unaffected", "the French glossaries were not touched", "your 2 credits were not used".
_LEFT_ALONE = re.compile(
    r"\b(?:not|never|\w+n't)\s+(?:been\s+|being\s+)?(?:affected|touched|changed|modified|impacted|altered|used)\b"
    r"|\b(?:unaffected|untouched|unchanged|unmodified|unaltered)\b",
    re.IGNORECASE,
)
_DONE_TO = re.compile(r"\b[^\W\d_]{3,}ed\b", re.IGNORECASE)  # what was done to a thing: "deleted", "changed"


def _done_to_the_untouched(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says, with no negation, lack, condition or verb of keeping, that a thing
    was done to (a verb in "-ed" the answer's clause does not say: "deducted", "evicted", "changed") and
    an answer's clause says that thing, its subject, was left as it was (`_LEFT_ALONE`): "your 2 eUpgrade
    credits were not used" for "the customer's eUpgrade credits were deducted". The subject's words must be
    the expected text's (two of them at least, or all) and, if both say numbers, one of the same ("Bus 9 is
    unaffected" for "Bus 14 rerouted"), nor the rest of a kind ("other OUs are unchanged")."""
    if exp.negated or exp.conditional or not _might_say(act.text, ("not", "n't", "never", "un")):
        return None
    if _says(exp.text, _AS_IT_WAS) or _says(exp.text, _LEFT_ALONE) or not _LACKING.isdisjoint(exp.order):
        return None
    for clause in _clauses(act.text, _STATE_CLAUSE_END):
        left = _LEFT_ALONE.search(clause.text)
        if left is None:
            continue
        said = analyse(clause.text[: left.start()])
        other_number = said.numbers and exp.numbers and exp.numbers.keys().isdisjoint(said.numbers)
        if other_number or _OF_THE_REST.search(said.text):
            continue  # "other OUs are unchanged", "Bus 9 is unaffected": not the thing expected
        subject = [s for s in said.order if s not in _DESCRIBING]
        shared = [s for s in subject if _find(s, exp) is not None]
        if not (len(shared) >= 2 or (shared and len(shared) == len(subject))):
            continue
        done = [
            m[0]
            for m in _DONE_TO.finditer(exp.text)
            if (s := stem(m[0].lower())) in exp.positive and s not in shared and _find(s, clause) is None
        ]
        if done:
            return f"negated: expected '{done[0]}', answer says '{clause.text[: left.end()].strip()}'"
    return None


# Predicates of a thing's being there or on offer: denied, they deny their subject, which is then not
# there at all ("telehealth was not available", "the piano won't be included", "a refund isn't possible").
_BEING_THERE = frozenset(
    stem(w)
    for w in _words("available offered included covered possible allowed permitted provided supported")
)

# The families whose lack sides say a thing is not there or not given: "sold out", "excluded", "denied".
_THERE_OR_NOT = frozenset(_words("stock add keep decision present active"))


def _says_not_there(said: Analysis) -> bool:
    """Whether ``said`` says a lack side of a `_THERE_OR_NOT` family ("sold out", "excluded")."""
    return any(key.partition(":")[0] in _THERE_OR_NOT and _is_lack_side(key) for key in said.sides)


def _not_there(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says, with no negation, lack (`_names_a_lack`, or a lack side of
    `_THERE_OR_NOT`) or condition, every word of a subject an answer's clause denies with a predicate of
    being there (`_BEING_THERE`: "a free loaner isn't available" for "the dealership will provide a free
    loaner car"), and no other clause of the answer says those words (the reader counts a denied subject
    as both said and denied)."""
    if exp.negated and not exp.conditional and not _BEING_THERE.isdisjoint(exp.core):
        return _there_after_all(act, exp)
    if exp.negated or exp.conditional or _names_a_lack(exp) or _BEING_THERE.isdisjoint(act.core):
        return None
    if _says_not_there(exp):
        return None  # "piano excluded", "automatic sold out": the lack said in other words
    clauses = _clauses(act.text, _STATE_CLAUSE_END)
    for i, clause in enumerate(clauses):
        if not any(w in _BEING_THERE and w not in clause.positive for w in clause.core):
            continue
        subject = [t for t in clause.order if t in clause.negated and _denied_as_subject(clause.negated[t])]
        if not subject or any((s := _find(t, exp)) is None or s not in exp.positive for t in subject):
            continue
        if any(t in c.positive for t in subject for c in clauses[:i] + clauses[i + 1 :]):
            continue
        return f"negated: '{clause.negated[subject[0]]}'"
    return None


def _there_after_all(act: Analysis, exp: Analysis) -> str | None:
    """`_not_there` the other way round: a veto when ``expected`` opens with a subject it denies with a
    predicate of being there ("express shipping is not offered", "a projector will not be provided") and
    an answer's clause (to a contrast) says every word of it, with no negation, condition, lack
    (`_names_a_lack`) or lack side of `_THERE_OR_NOT` ("the blue hoodie is out of stock"): "Express
    shipping is available for this item", "chairs and a projector will be set up for you"."""
    subject = [s for s in exp.order if s in exp.negated and _denied_as_subject(exp.negated[s])]
    if not subject or subject[0] != exp.order[0]:
        return None  # not "weed control costs $35 extra since the plan doesn't cover it": a reason's subject
    if any(w in exp.core and w not in exp.positive for w in subject):
        return None
    for clause in _clauses(act.text, _CLAUSE_END):
        if clause.negated or clause.conditional or _names_a_lack(clause):
            continue
        if _says_not_there(clause):
            continue  # "the blue XL hoodie is currently out of stock"
        if any(_find(s, clause) is None for s in subject):
            continue
        said = clause.text.strip()
        return f"not negated: expected '{exp.negated[subject[0]]}', answer says '{said[:59]}'"
    return None


# Where a clause ends for `_mixed_polarity`: a sentence end, a semicolon, or a contrast ("but").
# Where a sentence ends, for the antonym guard: not in "$49.99", "5 p.m." or "api.example.io", nor after
# "Dr." and "No."
_SENTENCE = re.compile(
    r"(?:[!?;\n]|(?<!\bDr)(?<!\bMr)(?<!\bMs)(?<!\bMrs)(?<!\bSt)(?<!\b[Nn]o)(?<!\b[ap])(?<!\b[ap]\.m)\.(?!\w))+"
)
_CLAUSE_END = re.compile(rf"{_SENTENCE.pattern}|\s(?:but|however|whereas|although|while)\s", re.IGNORECASE)
# ... and for the states of `_opposite`, also at ", and" / ", so" ("departing tomorrow at 11:40, and a
# hotel tonight"): a state is said of its own clause, a negation may reach past the comma.
_STATE_CLAUSE_END = re.compile(rf"{_CLAUSE_END.pattern}|,\s+(?:and|so)\s", re.IGNORECASE)


# Words that deny a thing only of the rest of its kind: "none of the other sensors were triggered", "no
# further charges", "apart from that one issue, nothing critical" say it of one and deny it of the others.
_OF_THE_REST = re.compile(
    r"\b(?:other|others|further|more|additional|else|apart from|except|besides)\b", re.IGNORECASE
)


# Where a reason or a result opens a part of a clause: "contains peanuts …, so it isn't safe for a
# peanut allergy", "wasn't hauled away because the haul-away fee wasn't in the order".
_CAUSE_END = re.compile(rf"{_CLAUSE_END.pattern}|,\s+so\s|\s(?:because|since)\s", re.IGNORECASE)


def _narrowed(clause: Analysis, t: str, s: str, others: list[str]) -> list[tuple[Analysis, str]]:
    """The parts of a clause that says ``t`` both ways, split where a reason or a result opens, that
    say it about the most of ``others`` ("the pad thai contains peanuts", not "so it isn't safe for a
    peanut allergy"): a reason or a result says its own words' polarity. The clause, if it has no parts."""
    if not (t in clause.positive and t in clause.negated):
        return [(clause, t)]
    parts = [(p, u) for p in _clauses_about(clause, others, _CAUSE_END) if (u := _find(s, p)) is not None]
    return parts or [(clause, t)]


# A negation whose predicate is left out, said of the clause before it: "unlimited mileage is included,
# but the insurance is not", "Omar's overtime is included, but Jenna's isn't because …".
_BARE_DENIAL = re.compile(
    r"\b(?:(?:is|are|was|were|will|does|do|did|has|have|can) not"
    r"|(?:is|are|was|were|wo|does|do|did|has|have|ca)n't)"
    r"\s*(?:[.;,!]|$|(?:because|since|yet)\b)",
    re.IGNORECASE,
)


def _elided_denial(act: Analysis, exp: Analysis, s: str) -> str | None:
    """A veto when the clause that says ``s`` denies it with its predicate left out, and the clause
    before it ends in that predicate, a word of ``expected`` ("insurance is included" for "unlimited
    mileage is included, but the insurance is not"; not "Jenna's overtime deferred")."""
    if not _might_say(act.text, ("not", "n't")):
        return None
    clauses = _clauses(act.text, _CLAUSE_END)
    for before, clause in pairwise(clauses):
        t = _find(s, clause)
        if (
            t in clause.negated
            and before.order
            and _find(before.order[-1], exp) is not None
            and _says(clause.text, _BARE_DENIAL)
        ):
            return f"negated: '{clause.negated[t]}'"
    return None


def _mixed_polarity(act: Analysis, exp: Analysis, mixed: list[tuple[str, bool]]) -> str | None:
    """A veto when the answer says an expected word both ways ("covers manufacturing defects but does
    not cover accidental damage"), and every clause that says it about what ``expected`` says it
    about (the most other words of ``expected``: "accidental damage") has the other polarity. A word the
    answer denies only under a cue that governs another first ("did not touch the MX records") is said
    alike by an expected text that denies or names a lack itself ("MX records left untouched"), as in
    `compare`; one the expected text denies only of the rest (`_OF_THE_REST`: "no further charges") may be
    said of one; and a clause that says the expected verb of failure of an elided subject ("1,284 tests
    passed, 3 failed" for "three tests failed") says the denial, as `_denied_alike` reads it there. A
    clause that says it both ways says it as its part about those words does (`_narrowed`), when the
    word is what ``expected`` says or denies first ("there are no peanuts in the pad thai"). A word
    said with its predicate left out ("but the insurance is not") is denied (`_elided_denial`)."""
    for s, want_neg in mixed:
        others = [o for o in exp.order if o != s and o not in _DESCRIBING and _find(o, act) is not None]
        # the clauses saying s about the most other expected words ("the green curry": not "contains")
        said = [(c, t) for c in _clauses_about(act, others) if (t := _find(s, c)) is not None]
        if not want_neg or s in exp.core:  # "doesn't have to pay the second charge" is about the paying
            said = [(part, u) for c, t in said for part, u in _narrowed(c, t, s, others)]
        if not want_neg and all(t in c.negated for c, t in said) and (elided := _elided_denial(act, exp, s)):
            return elided  # "but the insurance is not": denied, whatever the clause's subject rule says
        if not said:
            continue
        if (
            not want_neg
            and all(t not in c.positive for c, t in said)
            and not (
                (_names_a_lack(exp) or exp.negated)
                and all(t not in c.core or _failed_subject(t, c, exp) for c, t in said)
            )
        ):
            return f"negated: '{said[0][0].negated[said[0][1]]}'"
        if (
            want_neg
            and not _OF_THE_REST.search(exp.text)
            and all(t not in c.negated and not _denied_alike(s, c, exp) for c, t in said)
        ):
            return f"not negated: expected '{exp.negated[s]}', answer says '{said[0][0].surface[said[0][1]]}'"
    return None


# Words whose negation is about the next word it governs: "no need to arrive early" says "do not
# arrive early", as "you will not need to choose a password" says "you will not choose one"; and a
# verb of a link between two things, denied, denies the thing it links to, for an answer that names
# that thing as linked in other words ("the flakiness was not caused by a race condition" for "it
# failed 9 of the last 50 runs with a race in the mock server"); and a word of permission denies what
# it permits ("you aren't eligible for Delay Repay" for "you're entitled to a Delay Repay claim").
_PASSING_ON = frozenset(
    stem(w)
    for w in _words(
        "need needs needed require requires required necessary able include includes included"
        " caused related rely relies depend depends affect affects contribute eligible allowed permitted"
    )
)


# "switched it from cooling to heating mode", "moved you from the Basic plan to Pro": the old word.
_FROM_WORD_TO = re.compile(
    r"\b(?:changed|moved|switched|converted|upgraded|downgraded|updated|transferred|migrated|set)\b"
    r"[^.;]{0,40}?\bfrom (?:the |your |a |an )?(?P<words>[^\W\d_][\w'-]*(?: [^\W\d_][\w'-]*)?)"
    r" (?:\w+ )?(?:in)?to\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def _old_words(text: str) -> frozenset[str]:
    """The stems ``text`` names only as what a change left behind ("from cooling to heating")."""
    found: set[str] = set()
    for match in _FROM_WORD_TO.finditer(text) if " from " in text else ():
        # the first content word: "cooling" of "from cooling mode to", "progress" of "from In Progress to"
        word = next((w for w in match["words"].split() if w.lower() not in _STOPWORDS), "")
        if word and len(re.findall(rf"\b{re.escape(word)}\b", text, re.IGNORECASE)) == 1:
            found.add(stem(word.lower()))
    return frozenset(found)


# The counts people write as one word in a duration or a part ("two weeks", "2 of the 3").
_COUNT_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
# A duration and the units it is also said in: "two weeks" is 14 days, "four years" 48 months, "an hour
# and a half" 90 minutes, "three-quarters of an hour" 45 minutes; "a third of a day" is none, nor is
# an amount of money before a unit ("the $95 day pass").
_DURATION = re.compile(
    r"\b(?:(?P<part>half|(?:a|one|three)[ -]quarters? of) an? "
    rf"|(?P<amount>(?<![$€£.,\d])\d+(?:\.\d+)?|(?<!of )an?|{_COUNT_WORDS})(?P<plus> and a half)?[ -])"
    r"(?P<unit>day|week|month|year|hour|minute|second)s?"
    r"(?P<more> and a half)?\b",
    re.IGNORECASE,
)
_UNITS_OF_TIME = ("day", "week", "month", "year", "hour", "minute", "second")


@lru_cache(maxsize=4096)
def _durations(text: str) -> dict[tuple[str, float], tuple[str, str]]:
    """(base unit, amount) of each duration ``text`` says -> (the number it is written with, the
    duration as written)."""
    found: dict[tuple[str, float], tuple[str, str]] = {}
    for match in _DURATION.finditer(text):
        amount = match["amount"] or re.split(r"[- ]", match["part"])[0]  # "three-quarters of": 3
        number = "1" if amount.lower() in ("a", "an", "one", "half") else _count(amount)
        if match["part"]:
            value = 0.5 if match["part"] == "half" else 0.75 if match["part"][0] in "tT" else 0.25
        else:
            value = float(number) + (0.5 if match["plus"] or match["more"] else 0)
        base, factor = _IN_BASE[match["unit"].lower()]
        found.setdefault((base, value * factor), (number, match[0]))
    return found


def _same_durations(expected: str, actual: str) -> frozenset[str]:
    """The numbers of ``expected`` that give a duration the answer says in other units ("two weeks"
    for "the last 14 days"): no changed number."""
    if not (_might_say(expected, _UNITS_OF_TIME) and _might_say(actual, _UNITS_OF_TIME)):
        return frozenset()
    said = _durations(actual)
    return frozenset(number for amount, (number, _) in _durations(expected).items() if amount in said)


_A_UNIT = re.compile(r"an? \w+", re.IGNORECASE)


def _other_count(written: str, other: str) -> bool:
    """Whether two durations written in digits count one unit ("30 days", "90 days"): another count of
    it, not a size ("a 12-month plan") nor the same time in other units ("24 hours" for "1 day")."""
    if not (written[0].isdigit() and other[0].isdigit()) or "-" in written + other:
        return False
    return written.split()[-1].rstrip("sS").lower() == other.split()[-1].rstrip("sS").lower()


def _changed_duration(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a duration the answer does not, and the answer says its number
    with another unit ("4 months" for "about 4 weeks"), or ``expected`` says it in words and the
    answer says another duration of its kind ("an hour and a half" for "for 37 minutes"), or in
    digits and the answer another count of its unit ("90 days" for "for 30 days")."""
    if not (_might_say(exp.text, _UNITS_OF_TIME) and _might_say(act.text, _UNITS_OF_TIME)):
        return None
    said = _durations(act.text)
    for (base, amount), (number, written) in _durations(exp.text).items() if said else ():
        if (base, amount) in said:
            continue
        # "an hour and a half", "two weeks"; not "a month", often a rate ("$30 a month")
        in_words = not written[0].isdigit() and not _A_UNIT.fullmatch(written)
        for (other_base, _), (other_number, other) in said.items():
            if other_number == number or (in_words and other_base == base) or _other_count(written, other):
                return f"expected '{written}', answer has '{other}'"
    return None


_COUNT = rf"\d[\d,]*|{_COUNT_WORDS}"
_PART_OF = re.compile(
    rf"\b({_COUNT}) (?:out )?of (?:the |its |their |all |our |your )?({_COUNT})\b", re.IGNORECASE
)


_EXCEPT = re.compile(r"\b(?:except|but|apart from|other than)\b", re.IGNORECASE)


def _not_all(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says all ("all three interviewers", "every task") and the answer says
    a part ("two of the three interviewers", "11 of the 12 tasks")."""
    if not _ALL.search(exp.text) or _EXCEPT.search(exp.text):  # "every director except Helen"
        return None
    for part, whole in _PART_OF.findall(act.text):
        if _count(part) != _count(whole):
            return f"expected all, answer says '{part} of … {whole}'"
    # "all 5 services met their targets except ledger-writer" is not "all five services met them"
    words = [s for s in exp.order if s not in _DESCRIBING]
    for clause in _clauses_about(act, words) if len(words) > 1 else ():
        but = _LEFT_OUT.search(clause.text)
        if but is not None and _ALL.search(clause.text[: but.start()]):
            return f"expected all, answer says '{but[0]} …'"
    return None


_LEFT_OUT = re.compile(r"\b(?:except|apart from|other than|excluding|with the exception of)\b", re.IGNORECASE)


def _count(word: str) -> str:
    return _NUMBER_WORDS.get(word.lower()) or _number(word)


# A time with its half of the day: "9:30 am", "4 p.m.", "9 in the morning", "7 in the evening".
_CLOCK = re.compile(
    r"\b(\d{1,2})(?::(\d\d))?(?:\s?([ap])\.?m\b\.?|\s+in the (morning|afternoon|evening)\b)", re.IGNORECASE
)


@lru_cache(maxsize=4096)  # read for each expected text an answer is compared with
def _clock_times(text: str) -> dict[tuple[int, int, str], str]:
    """(hour of 12, minute, "a" or "p") of each time said with am or pm, or with the part of the day
    ("9 in the morning" is 9 am) -> as written."""
    times: dict[tuple[int, int, str], str] = {}
    lowered = text.lower()
    for match in _CLOCK.finditer(text) if "m" in lowered or "evening" in lowered else ():
        hour, minute, half, part = match.groups()
        half = half or ("a" if part.lower() == "morning" else "p")
        times.setdefault((int(hour) % 12, int(minute or 0), half.lower()), match[0])
    return times


_FROM_VALUE = re.compile(
    r"\b(?:from|than|versus|vs\.?|compared (?:with|to)(?: [^\W\d][\w']*){0,3}?)"
    r"\s+([$€£]?\d[\d,]*(?:\.\d+)?%?)",
    re.IGNORECASE,
)


def _said_from(text: str) -> frozenset[str]:
    """The numbers ``text`` says as an old value of any verb, after "from", "than", "versus" or
    "compared with" ("charged from 18% to 80%"), where `Analysis.old` knows only the verbs of change."""
    return frozenset(_number(m[1]) for m in _FROM_VALUE.finditer(text))


_NOT_YET = re.compile(r"\b(?:not|never|\w+n't)\b[^.;,]{0,40}?\byet\b|\byet to\b", re.IGNORECASE)
_ALREADY = re.compile(r"\balready\b", re.IGNORECASE)
_DONE_VERB = re.compile(
    r"\b(?:was|were|has been|have been|had been)\s+(?:\w+ly\s+)?\w+(?:ed|en|t)\b", re.IGNORECASE
)


def _yet(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a thing is already done and the clause of the answer about it says
    not yet ("has not been submitted yet"), or ``expected`` says not yet and that clause says it was done,
    with no negation ("the receipt was emailed to you")."""
    not_yet = _NOT_YET.search(exp.text) if "yet" in exp.text else None
    if not_yet is None and not ("already" in exp.text and _ALREADY.search(exp.text)):
        return None
    for clause in _clauses_about(act, list(exp.order)):
        if not_yet is None and (said := _NOT_YET.search(clause.text)):
            return f"tense: expected 'already', answer says '{said[0]}'"
        if not_yet is not None and not clause.negated and (done := _DONE_VERB.search(clause.text)):
            return f"tense: expected '{not_yet[0]}', answer says '{done[0]}'"
    return None


_STILL_OR_YET = re.compile(r"\b(?:still|yet)\b", re.IGNORECASE)


def _still_to_do(act: Analysis, exp: Analysis) -> bool:
    """Whether ``expected`` says a thing is not done yet ("hasn't been received yet") and every clause of
    the answer about it says it is still so or not yet ("the counselor report is still missing", "is
    still waitlisted for the upgrade"): the answer says the wait in its own words."""
    if "yet" not in exp.text or _NOT_YET.search(exp.text) is None:
        return False
    about = _clauses_about(act, list(exp.order))
    return bool(about) and all(_STILL_OR_YET.search(c.text) for c in about)


_BOTH = re.compile(r"\bboth\b", re.IGNORECASE)


def _both(key: str, act: Analysis) -> bool:
    """Whether a 2 of ``expected`` is the answer's "both" ("the two load balancers")."""
    return key == "2" and "oth" in act.text and _BOTH.search(act.text) is not None


# Two things in an order that says which is which: "from you to Mark Ellis", "oat milk was replaced
# with almond milk"; each pattern with the words it needs (a cheap first look, `_might_say`).
_IN_ORDER = (
    (
        ("from",),
        re.compile(
            r"\bfrom (?P<a>[^\W\d_][\w'-]*(?: [\w'-]+){0,2}?) to (?P<b>[^\W\d_][\w'-]*)", re.IGNORECASE
        ),
    ),
    (
        ("replaced", "swapped", "substituted", "exchanged"),
        re.compile(
            r"(?P<a>(?:[^\W\d_][\w'-]* )?[^\W\d_][\w'-]*) (?:was |were |is |are |has been |have been )?"
            r"(?:replaced|swapped|substituted|exchanged) (?:with|by|for) (?:an? |the )?"
            r"(?P<b>[\w'-]+(?: [\w'-]+)?)",
            re.IGNORECASE,
        ),
    ),
)


def _ordered_pairs(text: str, pattern: re.Pattern[str]) -> set[tuple[str, str]]:
    """(a, b) of each of ``pattern``'s matches in ``text``, each the stem of its first content word."""
    return {(_head(m["a"]), _head(m["b"])) for m in pattern.finditer(text)}


def _head(span: str) -> str:
    words = [w for w in span.lower().split() if w not in _STOPWORDS]
    return stem(words[0]) if words else span.lower()


def _swapped(act: Analysis, exp: Analysis) -> str | None:
    """A veto when the answer says two things of ``expected`` the other way round: "from Mark Ellis to
    you" for "from you to Mark Ellis", "the oat milk was replaced with almond milk" for "the almond
    milk was replaced with oat milk"."""
    for cues, pattern in _IN_ORDER:
        wanted = _ordered_pairs(exp.text, pattern) if _might_say(exp.text, cues) else set()
        said = _ordered_pairs(act.text, pattern) if wanted else set()
        for a, b in wanted - said:
            if (b, a) in said:
                return f"swapped: expected '{a}' then '{b}', answer says them the other way round"
    return None


def _changed_half_of_day(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a time with am or pm that the answer says with the other one
    ("9:00 pm" for "9:00 am ET": the numbers are the same)."""
    said = _clock_times(act.text)
    for (hour, minute, half), written in _clock_times(exp.text).items() if said else ():
        other = said.get((hour, minute, "p" if half == "a" else "a"))
        if other is not None and (hour, minute, half) not in said:
            return f"expected '{written}', answer has '{other}'"
    return None


def _changed_clock_time(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a time with am or pm and the answer says times so but not that one
    ("after 9 a.m." for "after 11 a.m.", where "Windows 11" holds the 11), nor on a clock with no half
    ("11:00") or of 24 hours ("16:00")."""
    said = _clock_times(act.text)
    for (hour, minute, half), written in _clock_times(exp.text).items() if said else ():
        if (hour, minute, half) in said or (hour, minute, "p" if half == "a" else "a") in said:
            continue  # the same time, or the other half of the day (`_changed_half_of_day`)
        hours = hour + (12 if half == "p" else 0)
        if any(
            re.search(rf"(?<![\d:]){h}:{minute:02d}\b", act.text) for h in {hour or 12, hours, f"{hours:02d}"}
        ):
            continue  # said on the clock with no half ("the 11:00 sailing") or on the 24-hour clock
        return f"expected '{written}', answer has '{next(iter(said.values()))}'"
    return None


_TITLED = re.compile(r"\b(Dr|Mr|Mrs|Ms|Mx|Prof|Professor|Judge|Officer|Captain)\.?\s+([A-Z][\w'-]+)")


def _changed_titled_name(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` names a person by a title the answer gives another name ("Dr. Patel"
    for "Dr. Alvarez"): a word cosine cannot tell two surnames apart, a title can."""
    if not _TITLED.search(exp.text):
        return None
    answer = _TITLED.findall(act.text)
    for title, name in _TITLED.findall(exp.text):
        if name.lower() in act.text.lower():
            continue
        for other_title, other in answer:
            if other_title.rstrip(".") == title.rstrip(".") and other.lower() not in exp.text.lower():
                return f"name: expected '{title}. {name}', answer has '{other_title}. {other}'"
    return None


# The sides that say a lack in families whose first side is not the one thing had: "unchanged" (no
# change, not a fall), "free" (no cost, not a cost); none in a family of two values ("tomorrow", "below").
_LACK_SIDES: dict[str, frozenset[str]] = {"level": frozenset("2"), "price": frozenset("0")} | dict.fromkeys(
    _words("plan rollout hours limit duration day daypart lock refund cause ruling"), frozenset()
)


def _is_lack_side(key: str) -> bool:
    """Whether ``"family:side"`` says a thing is missing, failed, refused, not yet done or left as it
    was: in most families a side after the first ("decision:1" denied, "outcome:2" pending)."""
    family, _, side = key.partition(":")
    return side in _LACK_SIDES[family] if family in _LACK_SIDES else side != "0"


def _is_lack(word: str, written: str) -> bool:
    """Whether a word says something is missing, failed or refused ("lost", "failed", "unpaid")."""
    return word in _DENYING or any(_is_lack_side(key) for key in _SIDE_OF.get(written.lower(), ()))


# Words that say a thing was left as it was or did not happen ("the fund was left untouched"), or is not
# there or not done ("the package is gone from the lock file", "left unanswered", "still undecided").
_LACKING = frozenset(
    stem(w)
    for w in _words(
        "untouched intact unaffected unused skipped missed avoided alone blocked retried"
        " gone unanswered undecided unresolved unsigned unsent"
    )
)


def _names_a_lack(exp: Analysis) -> bool:
    """Whether ``expected`` says in one word that a thing failed, was refused or left as it was
    ("rejected", "skipped", "untouched", "was avoided")."""
    return not _DENYING.isdisjoint(exp.order) or not _LACKING.isdisjoint(exp.order)


def _says_a_lack(exp: Analysis) -> bool:
    """Whether ``expected`` itself says something is missing, failed, refused or left alone ("Columbus
    out of stock", "bag missed the connection", "fund untouched"): a word the answer names only under a
    negation it does not govern first ("none in Columbus", "didn't make the connection", "no changes
    were made to the fund") may then be said alike."""
    return any(_is_lack_side(key) for key in exp.sides) or _names_a_lack(exp)


def _failed_subject(t: str, act: Analysis, exp: Analysis) -> bool:
    """Whether the answer denies ``t`` as the subject of a verb of failure or refusal ("the imaging
    archive backup failed at 73%", "the rental car coverage was denied"), not under a cue, or as what
    "except" leaves out ("all 5 services met their targets except ledger-writer"): what failed is still
    there, and an expected text that says a lack ("will be retried", "is quarantined so it doesn't block
    merges", "ledger-writer missed its objective") may say that failure in its own words, not in the
    answer's verb (said of another subject: "the renewal that failed was for shop.greenleaf.io")."""
    first, _, last = act.negated[t].partition(" … ")
    if first.split()[0].lower() == "except":
        return True
    verb = stem(last.lower())
    return verb in _DENYING and verb not in exp.surface and not _is_cue(first.lower())


_TAKING_UP = frozenset(_words("it he she him her"))  # "the delivery failed … I rescheduled it"


def _failure_taken_up(t: str, act: Analysis, exp: Analysis) -> bool:
    """Whether what failed or refused (`_failed_subject`: "the delivery was marked failed", "Jonas
    declined") is taken up again by a singular pronoun in a later clause with no negation of its own ("I
    rescheduled it for Tuesday", "so he can watch later"): what failed is still there, and what is said
    of it next is what an expected text may say ("told about the new delivery window"). Not "them" or
    "they", which may stand for others ("asking them to update the card")."""
    if not _failed_subject(t, act, exp):
        return False
    clauses = _clauses(act.text, _STATE_CLAUSE_END)
    failed = next((i for i, c in enumerate(clauses) if t in c.negated), len(clauses))
    return any(_refers(c, _TAKING_UP) and not _says_no(c) for c in clauses[failed + 1 :])


def _refused(written: str) -> bool:
    """Whether a negated word, as `Analysis.negated` writes it, is denied by a verb of refusal or
    failure, after it ("return … was rejected") or, in the active voice, before it ("declined … request")."""
    first, _, last = written.partition(" … ")
    before, after = first.split(" ", 1)[0], last.rsplit(" ", 1)[-1]
    return stem(after.lower()) in _DENYING or stem(before.lower()) in _DENYING


def _denied_by_a_refusal(s: str, act: Analysis, exp: Analysis) -> bool:
    """Whether ``expected`` denies ``s`` with a verb of refusal ("the blender return was denied") and
    the answer refuses another word that denial is of, in either voice ("the return ... was rejected":
    the blender it names elsewhere is what was sent back; "I declined the request to give the contractor
    admin rights" for "the admin request was denied")."""
    verb = exp.negated[s].rsplit(" ", 1)[-1]
    if stem(verb.lower()) not in _DENYING:
        return False
    for w, written in exp.negated.items():
        t = _find(w, act) if w != s and written.endswith(verb) else None
        if t is not None and t in act.negated and _refused(act.negated[t]):
            return True
    return False


def _head_denied(s: str, act: Analysis, exp: Analysis) -> bool:
    """Whether ``expected`` denies ``s`` with the word right after it, the next its cue governs, and the
    answer denies that word and never says it: "no office visit is needed" for "no DMV visit needed",
    "no photos are needed" for "does not have to bring photographs" (not "would not honor the
    reservation" for "no record of your reservation": there the words are apart)."""
    head = exp.core.get(s, "")
    t = _find(head, act) if head else None
    if t is None or t not in act.negated or t in act.positive:
        return False
    return f"{exp.surface[s]} {exp.surface[head]}".lower() in exp.text.lower()


def _denied_alike(s: str, act: Analysis, exp: Analysis) -> bool:
    """Whether ``expected`` denies ``s`` with a verb of failure the answer says too, of an elided or
    adjectival subject: "3 tests failed" in "142 tests passed and 3 failed", "locked after failed
    logins" in "locked after five failed login attempts"."""
    by = exp.negated[s].rsplit(" ", 1)[-1].lower()
    return stem(by) in _DENYING and stem(by) in act.surface


def _denial_said_alike(t: str, act: Analysis, exp: Analysis) -> bool:
    """Whether ``expected`` says the answer's denial of ``t`` in its own words: "unsafe" for "isn't
    safe" (the answer negates what the "un-" word of ``expected`` denies), "failed capacitor" for "the
    capacitor had failed", "so that claim was rejected" for "the siding claim was denied" (a verb of
    failure or refusal in both), "was unsuccessful" for "was marked failed" (a word of its side)."""
    by = act.negated[t].rsplit(" ", 1)[-1].lower()
    if stem(by) in _DENYING and stem(by) != t:
        if _beside(stem(by), [t], exp.text) or _DENYING & set(exp.order):
            return True  # "failed capacitor" for "the capacitor had failed"; "… so that claim was rejected"
        if any(key in exp.sides for key in _SIDE_OF.get(by, ())):
            return True  # "was unsuccessful" for "was marked failed": one side of failure in both
    return any(f"un{core}" in exp.surface for core in act.core)


_VERB_NONE = re.compile(r"\b([^\W\d_]{3,})\s+(?:no|none|nothing)\b", re.IGNORECASE)


def _verb_denies_alike(act: Analysis, exp: Analysis) -> bool:
    """Whether a verb ``expected`` says before "no" ("destroys no resources") is said before "none" or
    "nothing" in the answer too ("adds 4 resources and destroys none"): the answer denies its object."""
    said = {stem(m[1].lower()) for m in _VERB_NONE.finditer(act.text)} if "no" in act.text else set()
    return bool(said) and any(stem(m[1].lower()) in said for m in _VERB_NONE.finditer(exp.text))


def _done_but_to_come(s: str, t: str, act: Analysis, exp: Analysis) -> bool:
    """Whether ``expected`` says ``s`` as done ("has already been charged") and the answer says it
    only as to come ("your card will be charged when they ship")."""
    return _says(act.text, _TO_COME) and _said_done(s, exp) and t in _tenses(act.text)[0]


def _said_done(s: str, exp: Analysis) -> bool:
    """Whether ``expected`` says ``s`` after "already", "was", "were", "been" or "had"."""
    return _says(exp.text, _DONE) and s in _tenses(exp.text)[1]


@lru_cache(maxsize=8192)
def _says(text: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` occurs in ``text`` (asked for each word of a text: cached)."""
    return pattern.search(text) is not None


def _might_say(text: str, words: tuple[str, ...]) -> bool:
    """A cheap first look before a pattern: whether ``text`` holds one of ``words`` anywhere."""
    lowered = text.lower()
    return any(word in lowered for word in words)


_TO_COME = re.compile(rf"\b(?:{'|'.join(sorted(_FUTURE))})\b|'ll\b", re.IGNORECASE)
_DONE = re.compile(rf"\b(?:{'|'.join(sorted(_PAST))})\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _tenses(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The stems ``text`` says only after "will" / "'ll" in their clause, and those it says after
    "already", "was", "were", "been" or "had" in their clause."""
    said: dict[str, set[str]] = {"": set(), "future": set(), "past": set()}
    tense = ""
    for kind, word, _, tok in chain.from_iterable(map(_piece, text.replace("’", "'").split(" "))):
        if kind is _SKIP or kind is _CONTRAST_WORD:
            if word in _FUTURE or tok.lower().endswith("'ll"):  # "we'll" is read as "we"
                tense = "future"
            elif word in _PAST:
                tense = "past"
            elif word == "and" or kind is _CONTRAST_WORD:
                tense = ""
        elif kind is _CONTENT:
            said[tense].add(word)
        elif kind is _STOP or kind is _COMMA:
            tense = ""
    return frozenset(said["future"] - said["past"] - said[""]), frozenset(said["past"])


def _changed_code(act: Analysis, exp: Analysis) -> str | None:
    """A veto when a code of ``expected`` is missing and the answer writes another of its shape
    ("gate C12" for "gate B12", "apartment 4D" for "apartment 4B")."""
    if not exp.codes:  # most expected texts name no code: the answer's are not read
        return None
    for key, written in exp.codes.items():
        if key in act.codes:
            continue
        others = [w for k, w in act.codes.items() if _shape(k) == _shape(key) and k not in exp.codes]
        if others:
            return f"expected '{written}', answer has '{others[0]}'"
    return None


def _said_of_the_next(act: Analysis, exp: Analysis, word: str) -> str | None:
    """For an expected negation of a word the answer does not say whose negation passes on
    (:data:`_PASSING_ON`: "there is no *need* to arrive early" for "please arrive 15 minutes
    early"): a veto when the answer says the next word it governs positively and never negated."""
    t = _find(word, act) if word and word in exp.negated and word not in exp.positive else None
    if t is None or t not in act.positive or t in act.negated:
        return None
    return f"not negated: expected '{exp.negated[word]}', answer says '{act.surface[t]}'"


def _opposite(act: Analysis, exp: Analysis) -> str | None:
    """A veto when the answer says only another side of a family the expected text says one side of,
    or says both sides and the clauses about what ``expected`` is about say only another side ("data
    in the EU is free, but calls to the US cost $0.25" is not "calls to the US are free")."""
    if not exp.sides:  # most expected texts say no state: the answer's are not read
        return _denied_side(act, exp)
    for key, written in exp.sides.items():
        family = key.partition(":")[0]
        if any(k.partition(":")[0] == family for k in exp.sides if k != key):
            continue  # the expected text says two sides itself ("moved from pending to approved")
        if written.lower() in _NAMING and key in exp.denied_sides:
            continue  # "the fee was not charged": the fee names what it denies
        if stem(written.rsplit(" ", 1)[-1].lower()) in exp.negated:
            continue  # "no fee was charged" says another side ("waived") as well as the answer does
        if key not in act.sides and any(
            k in act.sides for k, w in exp.sides.items() if w == written and k != key
        ):
            # a word of two families ("declined"), read in the one the answer says; one the answer says in
            # this family too ("cancelled": a booking, an account, a thing not kept) is read here as well
            continue
        others = [k for k in act.sides if k != key and k.partition(":")[0] == family]
        if key in act.denied_sides and key not in act.sides and not exp.negated and not _names_a_lack(exp):
            # said in another word of its side, denied: "won't be charged" for "will still be billed"
            return f"negated: expected '{written}', answer says '{act.denied_sides[key]}'"
        if not others:
            continue
        if key not in act.sides:
            if _said_stateless_with_its_number(act, _clause_saying(exp, key), family):
                continue
            # said of something the expected text names, or of "it": not "you finished 7 of the 10
            # modules" for "the final project is still outstanding"; a reason says its own state ("paused
            # the experiment because retention dropped" for "the experiment data was kept")
            words = _stateless(_clause_saying(exp, key))
            said = next(
                (
                    c.sides[k]
                    for c in _clauses(act.text, _REASON_END)
                    for k in others
                    if k in c.sides
                    and (not words or any(_find(w, c) is not None for w in words) or _refers(c))
                ),
                None,
            )
            if said is not None:
                return f"opposite: expected '{written}', answer says '{said}'"
            continue
        if _ALL.search(exp.text[: exp.text.lower().find(written.lower())]) and not _says_all(
            act, key, written
        ):
            # "all tests passed" is not "142 tests passed and 3 failed"; "the failing tests are all in
            # one file" says no "all" of the failing; "all 14 test cases passed" says it too
            return f"opposite: expected all '{written}', answer also says '{act.sides[others[0]]}'"
        latest = act.latest_sides[family]
        if _STILL.search(exp.text) and latest != key:  # "was locked … I've unlocked it now"
            return f"opposite: expected still '{written}', answer says '{act.sides[latest]}' last"
        # what the side is said of: the words of the expected clause that says it ("while iOS held steady"),
        # not those of a reason ("late because the worker was stuck, … and the backlog cleared")
        words = _stateless(_clause_saying(exp, key))
        about = _taken_up(act, _clauses_about(act, words, _REASON_END), family)
        if (
            about
            and not any(key in c.sides and not _names_what_is_said(c, key) for c in about)
            and not _may_refer_back(act, exp, key)
            and not _said_with_its_count(act, _clause_saying(exp, key), key)
        ):
            said = next((c.sides[k] for c in about for k in others if k in c.sides), None)
            if said is not None:
                return f"opposite: expected '{written}', answer says '{said}' of it"
    return _refused_or_done(act, exp) or _denied_side(act, exp)


# Side words that name a thing as well as say its side: "the fee" (what a price is) is "waived" too.
_NAMING = frozenset(_words("cost costs charge fee fees"))


def _names_what_is_said(clause: Analysis, key: str) -> bool:
    """Whether ``clause`` says side ``key`` only in a noun naming what another side of its family is
    said of: "ConEd waived the $20 fee" says no price, though "fee" is a word of one."""
    family = key.partition(":")[0]
    return clause.sides[key].lower() in _NAMING and any(
        k != key and k.partition(":")[0] == family for k in clause.sides
    )


def _taken_up(act: Analysis, about: list[Analysis], family: str) -> list[Analysis]:
    """``about`` and, when none of its clauses says a side of ``family``, the clause after each in its
    sentence that takes it up with a pronoun: "the hotel is non-refundable, | so I left that booking in
    place", "one of the maples arrived broken, | so I refused it" say the state of the hotel and the
    maple. Not for a time of day ("needs a cleaning, | so I've booked that for 9 AM" says when)."""
    if not about or family in _TIMES or any(k.partition(":")[0] == family for c in about for k in c.sides):
        return about
    texts = {c.text for c in about}
    taken = []
    for sentence in _SENTENCE.split(act.text):
        pieces = [piece for piece in _REASON_END.split(sentence) if piece.strip()]
        clauses = [analyse(piece) for piece in pieces]
        taken += [after for clause, after in pairwise(clauses) if clause.text in texts]
    return about + [c for c in taken if _refers(c)]


_TIMES = frozenset(_words("day daypart"))  # the families whose sides are times: when, not a state


def _said_stateless_with_its_number(act: Analysis, said: Analysis, family: str) -> bool:
    """Whether an answer's clause says an amount of the expected clause ``said``, no side of ``family``,
    and more of its other words than any clause that says a side: the amount names what the state is
    said of ("general tickets are £12 for adults" for "adult tickets cost twelve pounds"), and a side
    said elsewhere is said of another thing ("season-ticket holders get in free")."""
    counts = _counts(said)
    if not counts:  # most expected states come with no amount
        return False
    words = _stateless(said)
    shared: list[tuple[bool, int, Analysis]] = [
        (any(k.partition(":")[0] == family for k in c.sides), sum(_find(w, c) is not None for w in words), c)
        for c in _clauses(act.text, _STATE_CLAUSE_END)
    ]
    most = max((n for side, n, _ in shared if side), default=0)
    # a clause soon after that says the state of "it" or "they" says it of the amount's thing: "Version
    # 2.14.0 caused error rates to jump, | so I rolled it back", "the missing 5% cashback … | they
    # confirmed … | they declined to apply the 5%"
    return any(
        not side
        and n > most
        and any(key in c.numbers for key in counts)
        and not any(later_side and _refers(later) for later_side, _, later in shared[i + 1 : i + 3])
        for i, (side, n, c) in enumerate(shared)
    )


def _said_with_its_count(act: Analysis, said: Analysis, key: str) -> bool:
    """Whether an answer's clause says side ``key`` with an amount of the expected clause ``said``: the
    amount names what the side is said of ("re-ran the failed jobs; 23 of 23 passed" for "all 23 re-run
    jobs passed", "… and 44 were denied" for "forty-four candidates were turned down")."""
    counts = _counts(said)
    return bool(counts) and any(
        key in c.sides and not _names_what_is_said(c, key) and any(n in c.numbers for n in counts)
        for c in _clauses(act.text, _STATE_CLAUSE_END)
    )


def _counts(said: Analysis) -> list[str]:
    """The numbers of ``said`` that measure an amount ("$150", "5%", "twelve pounds", "4 mm"), not those
    that name a thing ("Line 3", "Pixel 8", "code #3") or a day ("May 31")."""
    return [
        key
        for key, written in said.numbers.items()
        if written[0] in "$€£"
        or written.endswith("%")
        or any(
            match["word"].lower() not in _STOPWORDS
            for match in re.finditer(rf"(?<![\w.#]){re.escape(written)}{_COUNTED}", said.text)
        )
    ]


# The word a number counts, right after it: "twelve pounds", "9 people", "4 mm" (not "Line 3 is down")
_COUNTED = r"[ -](?P<word>[a-z][\w-]*)"


# "23 of 23", "all 14": a whole said as a count of itself
_ALL_OF = re.compile(r"\b(\d[\d,]*) (?:out )?of (?:the |all )?\1\b")


def _says_all(act: Analysis, key: str, written: str) -> bool:
    """Whether a clause of the answer says side ``key`` (in the expected word ``written``, or its own)
    of all it counts ("all 14 test cases passed", "re-ran the failed jobs; 23 of 23 passed"): an "all"
    said too, so another side said elsewhere is of another thing."""
    for clause in _clauses(act.text, _STATE_CLAUSE_END):
        if key in clause.sides:
            lowered = clause.text.lower()
            at = lowered.rfind(written.lower())
            before = clause.text[: at if at >= 0 else lowered.find(clause.sides[key].lower())]
            if _ALL.search(before) or _ALL_OF.search(before):
                return True
    return False


# Sides that say a request was carried out: a refusal ("decision:1") of it is their opposite.
_DONE_SIDES = frozenset(_words("booking:0 outcome:0 refund:0 enrolment:0 paid:0 add:0"))


def _refused_or_done(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a request was refused and the answer, saying no decision at all,
    says it was carried out, in a clause about the words the refusal is said of ("the property
    manager declined the request" for "the property manager scheduled a technician"). The other way
    round only on the clauses about most of what ``expected`` says done (`_done_but_refused`): an
    answer may refuse one thing and do another ("declined the upgrade; the booking is confirmed")."""
    if "decision:1" not in exp.sides:
        return _called_off_but_done(act, exp) or _done_but_refused(act, exp)
    if any(k.startswith("decision:") for k in act.sides):
        return None
    done_instead = _refused_verb_done(act, exp)
    if done_instead is not None:
        return done_instead
    return _side_said_instead(act, exp, "decision:1", _DONE_SIDES)


def _side_said_instead(act: Analysis, exp: Analysis, key: str, instead: frozenset[str]) -> str | None:
    """A veto when the answer's clauses about the words ``expected`` says its side ``key`` of (the
    words of its clause saying it, less those of states) say a side of ``instead``: "declined the
    request" (decision:1) for "scheduled a technician" (a side done)."""
    clauses = _clauses_about(act, _stateless(_clause_saying(exp, key)), _STATE_CLAUSE_END)
    said = next((c.sides[k] for c in clauses for k in sorted(instead) if k in c.sides), None)
    return None if said is None else f"opposite: expected '{exp.sides[key]}', answer says '{said}'"


# Sides that say a thing went ahead: its cancellation or postponement is their opposite
_WENT_AHEAD = frozenset(_words("outcome:0 rollout:0 delivery:0 delivery:1 enrolment:0 paid:0"))


def _called_off_but_done(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a thing was cancelled or postponed and the answer, saying no
    booking at all, says it went ahead in a clause about the words it is said of ("the Uber Eats order
    was cancelled" for "your Uber Eats order is on the way", "the SSO rollout was postponed" for "SSO
    between Okta and Zendesk is now live"). Not another side of a booking ("moved to", "waitlisted"):
    a thing still booked."""
    if "booking:1" in exp.sides:
        called_off = "booking:1"
    elif exp.sides.get("booking:2", "").lower() == "postponed":
        called_off = "booking:2"
    else:
        return None
    if "booking:0" in exp.sides or any(k.startswith("booking:") for k in (*act.sides, *act.denied_sides)):
        return None  # "Done: the subscription will not renew" says the cancellation
    return _side_said_instead(act, exp, called_off, _WENT_AHEAD)


# What a refusal is of, said as a verb: "declined to cover the refill", "the request to unlock Sam's
# account was refused", "a request to be excused from jury service"
_REFUSED_TO = re.compile(
    r"\b(?:declined|declines|refused|refuses|denied|denies|rejected|rejects|request|requests|requested)"
    r"\s+to\s+(?:be\s+)?(?P<verb>[^\W\d_]+)",
    re.IGNORECASE,
)


# a clause or a comma ends a phrase: "they found your cancellation didn't go through, | refunded the $82.99"
_COMMA_END = re.compile(rf"{_STATE_CLAUSE_END.pattern}|,\s", re.IGNORECASE)


def _refused_verb_done(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` refuses a thing to be done, said as a verb ("the insurance declined to
    cover the refill", "the request to cancel the membership was refused"), and the answer, saying no
    decision, says that verb done in a clause with no negation or lack of its own ("your insurance
    covered it", "your membership is cancelled", "I've unlocked it now")."""
    if " to " not in exp.text:
        return None
    for match in _REFUSED_TO.finditer(exp.text):
        t = _find(stem(match["verb"].lower()), act)
        if t is None or t not in act.positive or t in act.negated or t in act.conditional:
            continue
        for clause in _clauses(act.text, _COMMA_END):
            if t in clause.positive and not (_says_no(clause) or _names_a_lack(clause) or clause.conditional):
                refused = exp.sides["decision:1"]
                return f"opposite: expected '{refused}' of '{match[0]}', answer says '{act.surface[t]}'"
    return None


def _done_but_refused(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected``, saying no decision, says a request was carried out and the answer's
    clauses about most of its words (two at least, and half) all say it was refused, and not done:
    "the benefits team denied your request to join the dental plan" for "you were enrolled in the
    dental plan"."""
    done = [k for k in sorted(_DONE_SIDES) if k in exp.sides]
    if not done or "decision:1" not in act.sides or any(k.startswith("decision:") for k in exp.sides):
        return None
    about = _clauses_about_most(act, _stateless(_clause_saying(exp, done[0])), _STATE_CLAUSE_END)
    if not about or any("decision:1" not in c.sides or any(k in c.sides for k in done) for c in about):
        return None
    return f"opposite: expected '{exp.sides[done[0]]}', answer says '{about[0].sides['decision:1']}'"


def _clause_saying(exp: Analysis, key: str) -> Analysis:
    """The clause of ``expected`` that says side ``key`` ("while iOS held steady"), or all of it."""
    return next((c for c in _clauses(exp.text, _STATE_CLAUSE_END) if key in c.sides), exp)


def _stateless(said: Analysis) -> list[str]:
    """The content stems of ``said`` that are no side of an opposite-state family, or name a thing as
    well (:data:`_NAMING`): what its states are said of ("the final project" of "the final project is
    still outstanding", "the start-service fee" of "ConEd charged the start-service fee")."""
    return [
        s
        for s in said.order
        if said.surface[s].lower() in _NAMING or not _SIDE_OF.get(said.surface[s].lower())
    ]


def _denied_side(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` denies a side the answer says, in other words as well: "not admitted"
    for "accepted", "not in stock" for "available"."""
    if not exp.denied_sides:
        return None
    for key, written in exp.denied_sides.items():
        delayed = any(stem(w) in exp.conditional for w in written.split()[1:])  # "not released until …"
        if key in act.sides and key not in act.denied_sides and key not in exp.sides and not delayed:
            said = act.sides[key]
            stems = [stem(w) for w in said.split()]
            if all(t in act.conditional for t in stems) or _still_to_do(act, exp):
                continue  # "no new POs until they pass a new inspection" says no pass
            if all(t not in act.negated for t in stems):  # "your refund request has been declined"
                return f"negated: expected '{written}', answer says '{said}'"
    return None


_STILL = re.compile(r"\b(?:still|anymore|any longer|remains|remain|keeps)\b", re.IGNORECASE)
_REFERRING = frozenset({"it", "they", "them", "this", "that", "these", "those"})


def _may_refer_back(act: Analysis, exp: Analysis, key: str) -> bool:
    """Whether a clause saying side ``key`` has a pronoun that may stand for what ``expected`` is about
    ("your account was locked … I've unlocked it now"); not one in the reason it gives ("coverage was
    denied because your policy does not include it"), nor one said of another thing ("passed the safety
    inspection, but it failed the emissions test")."""
    said = [c for c in _clauses(act.text, _REASON_END) if key in c.sides and _refers(c)]
    return any(
        key in part.sides
        and _refers(part)
        and sum(_find(w, exp) is None for w in _stateless(_before_adjunct(part, key))) < 2
        for part in chain.from_iterable(_clauses(c.text, _SUBJECT_AND) for c in said)
    )


def _refers(clause: Analysis, pronouns: frozenset[str] = _REFERRING) -> bool:
    """Whether ``clause`` has one of ``pronouns`` (by default :data:`_REFERRING`)."""
    return bool(pronouns.intersection(_LETTERS.findall(clause.text.lower())))


# The words a subject opens with: "the dashboard", "it", "our team"
_SUBJECT_START = "the|a|an|it|they|we|he|she|i|you|this|that|there|our|your|their"
# "and" before a subject begins another clause: "it succeeded | and the dashboard now shows the total"
_SUBJECT_AND = re.compile(rf"\sand\s(?=(?:{_SUBJECT_START})\s)", re.IGNORECASE)
# A preposition of time or place after a side says when or where it holds: "it failed | at frame 5,210"
_ADJUNCT = re.compile(r"\s(?:at|after|during|until|before|within)\s", re.IGNORECASE)


def _before_adjunct(clause: Analysis, key: str) -> Analysis:
    """``clause`` up to a preposition of time or place after its side ``key``: "it failed at frame
    5,210 with an out-of-disk-space error" says what failed in "it", and where and why in the rest."""
    written = clause.sides[key]
    end = clause.text.lower().find(written.lower())
    adjunct = _ADJUNCT.search(clause.text, end + len(written)) if end >= 0 else None
    return analyse(clause.text[: adjunct.start()]) if adjunct else clause


# "no later than Friday" says "by Friday", "no more than 3" says a limit: neither denies a claim.
_NO_LATER = re.compile(r"\bno (?:later|earlier|sooner|more|less|fewer)\b", re.IGNORECASE)
_CUE_WORD = re.compile(r"[^\W\d_]+(?:'t)?")  # a word, with the "n't" a cue may end in


# Verbs that say a thing was done: denied, they deny the thing itself ("the backup was not completed").
_COMPLETING = frozenset(
    stem(w)
    for w in _words("completed complete finished done made go went happened processed carried created")
)


def _says_no(clause: Analysis) -> bool:
    """Whether a clause has a negation cue, even one that governs nothing ("and destroys none")."""
    return any(_is_cue(w) for w in _CUE_WORD.findall(clause.text.lower()))


def _did(action: str, clause: Analysis) -> bool:
    """Whether ``clause`` says the expected stem ``action`` ("restor" of "the restore") as a verb in the
    past: "I restored the database", "I rebalanced the account"."""
    t = _find(action, clause)
    return t is not None and t in clause.positive and clause.surface[t].lower().endswith("ed")


def _denial_unsaid(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` denies what the answer says in so many words: the answer's clauses about
    the most of its words (at least two, and half of them) say a word it denies, with no negation, lack
    or condition of their own ("sent the itemized list by email" for "did not provide an itemized list").

    Checked only when the word-by-word guards found nothing: there a denial is read on the word its cue
    governs ("provide", which the answer does not say), here on the clause as a whole.
    """
    if not exp.negated or exp.conditional or _NO_LATER.search(exp.text):
        return None
    denied = [s for s in exp.order if s in exp.negated and s not in exp.positive]
    cue = exp.negated[denied[0]] if denied else ""
    # "the renewal was not completed" denies the renewal itself, said in a sentence of its own ("I
    # renewed your permit"; not "I started the renewal, but the payment failed")
    done = bool(denied) and all(s in _COMPLETING for s in denied)
    if done:
        denied = [s for s in exp.order if s in exp.negated]
    if not denied or any((t := _find(s, act)) is not None and t in act.negated for s in exp.negated):
        return None  # nothing is denied alone, or the answer denies it too
    about = _clauses_about_most(
        act, [s for s in exp.order if s not in _DESCRIBING], _SENTENCE if done else _STATE_CLAUSE_END
    )
    action = [s for s in exp.order if s not in _DESCRIBING and s not in _COMPLETING] if done else []
    if not about and len(action) == 1:
        # "the restore was not completed" for "I restored the database …": the action said as a verb done
        about = [c for c in _clauses(act.text, _STATE_CLAUSE_END) if _did(action[0], c)]
    if not about:
        return None
    for clause in about:
        if not any(_find(s, clause) is not None for s in denied) or clause.conditional or _says_no(clause):
            return None
        if _names_a_lack(clause) or any(_is_lack_side(key) for key in clause.sides):
            return None  # "the museum was fully booked" may say "no tickets" in other words
    said = about[0].text.strip()
    said = said if len(said) <= 60 else said[:59] + "…"
    return f"not negated: expected '{cue}', answer says '{said}'"


# "Still" saying a thing goes on as it was (not "still needs to", what is yet to be done).
_STILL_SO = re.compile(r"\bstill\b(?! (?:need|needs|has to|have to|must|to)\b)(?:\s+[\w'-]+)?", re.IGNORECASE)
# Verbs that end what was so: "still on the flaky list" is not "I removed the test from the flaky list".
_ENDING = frozenset(
    stem(w)
    for w in _words(
        "fixed repaired removed replaced converted switched restored cleared merged revoked deleted purged "
        "migrated resolved rotated updated changed moved upgraded reran rerun redeployed unblocked lifted"
    )
)


# A verb of keeping a thing as it was (not the noun of "for their whole stay"): "the unit test was kept
# on its original date", "the user is staying on Unlimited Plus", "I left the record unchanged"
_KEPT_AS_IT_WAS = re.compile(
    r"(?<!\bthe )(?<!\ba )(?<!\bwhole )(?<!\btheir )(?<!\byour )(?<!\bhis )(?<!\bher )(?<!\bour )"
    r"\b(?:stay|stays|stayed|staying|remain|remains|remained|kept|left)\b",
    re.IGNORECASE,
)
_CHANGED = (
    _ENDING
    | _CHANGING
    | frozenset(
        stem(w)
        for w in _words(
            "swapped paused promoted cancelled canceled deactivated closed terminated halted stopped"
        )
    )
)
_IRREGULAR_PAST = frozenset(_words("went rose fell"))
_NOT_A_CHANGE_AFTER = _DETERMINERS | frozenset(_words("til till until"))  # "a good-til-cancelled order"


def _said_as_verb(clause: Analysis, stems: frozenset[str], *, past: bool) -> str | None:
    """The first word of ``clause`` with one of ``stems`` that it says (not negated) as a verb, not
    after a determiner ("after the update", "a good-til-cancelled order"); with ``past``, only a past
    form ("a revised site plan", "requested changes" and "for the fall" are not verbs of change)."""
    words = _LETTERS.findall(clause.text.lower())
    for prev, word in pairwise(["", *words]):
        if past and not (word.endswith("ed") or word in _IRREGULAR_PAST):
            continue
        if prev not in _NOT_A_CHANGE_AFTER and (t := stem(word)) in stems and t in clause.positive:
            return word
    return None


def _ended(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says a thing is still so and the answer's clauses about it (the most of
    its words: two at least, and half) say, with no negation or condition, a verb that ended it ("Column
    E is still formatted as text" for "I converted column E to number format"), unless the answer says
    "still" too of something ``expected`` names ("… so they still have the old key"). So too when
    ``expected`` says it was kept as it was and the answer a verb of change in the past ("the unit test
    was kept on its original date" for "I pushed the unit test from Wednesday to Friday"), unless the
    answer keeps too ("so he stays assigned to Riverside")."""
    still = _STILL_SO.search(exp.text)
    kept = _KEPT_AS_IT_WAS.search(exp.text) if still is None else None
    said = still or kept
    if exp.negated or said is None:
        return None
    words = [s for s in _stateless(exp) if s not in _DESCRIBING]
    about = _clauses_about_most(act, words, _STATE_CLAUSE_END)
    if not about or any(c.negated or c.conditional for c in about):
        return None
    if any(
        (_STILL_SO.search(c.text) or (kept and _KEPT_AS_IT_WAS.search(c.text)))
        and any(_find(s, c) is not None for s in words)
        for c in _clauses(act.text, _STATE_CLAUSE_END)
    ):
        return None
    for clause in about:
        verb = _said_as_verb(clause, _CHANGED, past=True)  # "was moved to April 16", "went back"
        if still is not None:
            verb = _said_as_verb(clause, _ENDING, past=False) or verb
        if verb is not None:
            return f"opposite: expected '{said[0]}', answer says '{verb}'"
    return None


# Words that say the expected thing went the way of others: "the monthly cap was raised along with the
# daily budgets", "the crash also happens on iOS", "the mice shipped together with the keyboards"; not
# "too" before an adjective ("too high").
_ALSO = re.compile(
    r"\b(?:also|as well|along with|together with)\b|\btoo\b(?=\s*(?:[.,;!?]|$))", re.IGNORECASE
)
# Verbs of keeping a thing as it was, and of its going another way: "kept the ad_spend DAG unchanged",
# "left the partition count at 48", "April orders stay at the old price", "the mice ship separately".
_AS_IT_WAS = re.compile(
    rf"{_STILL.pattern}|\b(?:kept|keep|left|leave|leaves|stay|stays|stayed|remained|separately)\b",
    re.IGNORECASE,
)


def _leaves_as_it_was(clause: Analysis, shared: set[str], exp: Analysis) -> bool:
    """Whether an answer's clause says the expected stems it has (``shared``) were left as they were:
    denied ("the USDC balance wasn't touched", "I rejected the $95 minibar charge"), with a word or a
    side of a lack that ``expected`` does not say itself ("iOS was unaffected", "the kit was out of
    stock"; not "your spare is also flat" for "spare tire also flat"), or with a verb of keeping."""
    if any(_find(s, clause) in clause.negated for s in shared):
        return True
    lacks = [w for w in clause.order if w in _DENYING or w in _LACKING]
    lacks += [w for key, said in clause.sides.items() if _is_lack_side(key) for w in said.lower().split()]
    return any(_find(stem(w), exp) is None for w in lacks) or _says(clause.text, _AS_IT_WAS)


_ALSO_WORD = re.compile(r"\balso\s+([^\W\d_]+)", re.IGNORECASE)


def _says_also(clause: Analysis, exp: Analysis) -> bool:
    """Whether an answer's clause says "also" right before a word of ``expected``: it says the expected
    "also" itself ("since your spare is also flat" for "spare tire also flat"; not "the kit you also
    wanted was out of stock" for "the kit was ordered as well")."""
    return any(_find(stem(m[1].lower()), exp) is not None for m in _ALSO_WORD.finditer(clause.text))


def _also_left_as_it_was(act: Analysis, exp: Analysis) -> str | None:
    """A veto when ``expected`` says with "also" or "along with" that one more thing went the way of
    others, and the answer says that thing only in a clause that leaves it as it was (`_leaves_as_it_was`):
    "the overall monthly cap did not change" for "the monthly cap was raised along with the daily
    budgets". The clause must say a set of expected words no other clause of the answer says all of
    ("I kept the Florence hotel" for "the Florence hotel was cancelled as well", though another clause
    names Florence and another a hotel)."""
    if not _says(exp.text, _ALSO) or exp.negated or exp.conditional or _says_a_lack(exp):
        return None
    if _says(exp.text, _AS_IT_WAS):
        return None  # "the old plan also stays": a thing kept, like the others
    words = [s for s in _stateless(exp) if s not in _DESCRIBING]
    said = [
        (shared, c)
        for c in _clauses(act.text, _STATE_CLAUSE_END)
        if (shared := {s for s in words if _find(s, c)})
    ]
    kept = [(shared, _leaves_as_it_was(c, shared, exp), c) for shared, c in said]
    for shared, left, clause in kept:
        if (
            left
            and not _says_also(clause, exp)
            and not any(shared <= other for other, other_left, _ in kept if not other_left)
        ):
            written = clause.text.strip()
            written = written if len(written) <= 60 else written[:59] + "…"
            return f"also: expected '{exp.text.strip()}', answer says '{written}'"
    return None


# "as" gives a reason only before a subject ("as the worker was stuck"), not in "as planned", "as of May"
_REASON_END = re.compile(
    rf"{_STATE_CLAUSE_END.pattern}|\s(?:because|since)\s"
    rf"|\sas\s(?=(?:{_SUBJECT_START}|his|her|its)\s)",
    re.IGNORECASE,
)


_ALL = re.compile(r"\b(?:all|every|both|each|whole|entire)\b", re.IGNORECASE)


def _clauses(text: str, ends: re.Pattern[str]) -> list[Analysis]:
    """The analyses of the non-empty pieces of ``text`` split at ``ends`` (sentences, clauses)."""
    return [analyse(piece) for piece in ends.split(text) if piece.strip()]


def _clauses_about_most(act: Analysis, words: list[str], ends: re.Pattern[str]) -> list[Analysis]:
    """`_clauses_about` ``words``, or none unless they share two of them at least, and half: the
    clauses that say what a text of those words says, for the vetoes read on clauses as wholes."""
    about = _clauses_about(act, words, ends) if len(words) > 1 else []
    if not about:
        return []
    shared = sum(_find(w, about[0]) is not None for w in words)
    return about if shared >= max(2, (len(words) + 1) // 2) else []


def _clauses_about(act: Analysis, words: list[str], ends: re.Pattern[str] = _CLAUSE_END) -> list[Analysis]:
    """The clauses of the answer (split at ``ends``) that share the most of ``words`` (stems; at least
    one) with it."""
    best: list[Analysis] = []
    most = 1
    for clause in _clauses(act.text, ends):
        shared = sum(_find(w, clause) is not None for w in words)
        if shared >= most:
            best, most = ([] if shared > most else best), shared
            best.append(clause)
    return best


@lru_cache(maxsize=1)
def antonyms() -> dict[str, frozenset[str]]:
    """Each word's antonyms, by stem, from ``antonyms.txt`` (WordNet's, less the words of many senses
    and the converses; written by ``tools/build_antonyms.py``), read once.

    >>> sorted(antonyms()["small"])
    ['big', 'larg']
    """
    table: dict[str, set[str]] = {}
    lines = (Path(__file__).with_name("antonyms.txt")).read_text(encoding="utf-8").splitlines()
    for line in lines:
        if line and not line.startswith("#"):
            a, b = (stem(w) for w in line.split())
            if a != b:
                table.setdefault(a, set()).add(b)
                table.setdefault(b, set()).add(a)
    return {word: frozenset(others) for word, others in table.items()}


@lru_cache(maxsize=65536)
def _degree_base(word: str) -> str | None:
    """The stem the antonym table knows ``word`` by: itself, or the adjective a comparative or
    superlative is made from ("larger" -> "larg", "bigger" -> "big", "earliest" -> "early"), or the
    adjective in "-ic" an adverb in "-ically" is made from ("automatically", stem "automatical" ->
    "automatic")."""
    table = antonyms()
    if word in table:
        return word
    if word.endswith("ical") and word[:-2] in table:
        return word[:-2]
    for suffix in ("er", "est"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            base = word[: -len(suffix)]
            for candidate in (base, base + "e", base[:-1], base[:-1] + "y" if base.endswith("i") else ""):
                if candidate and stem(candidate) in table:
                    return stem(candidate)
    return None


def _antonym(act: Analysis, exp: Analysis) -> str | None:
    """A veto when the answer says the antonym of an expected word instead of it ("the large room" for
    "the small room", "a senior engineer" for "a junior engineer"), in a sentence with another word
    of ``expected`` when it has more than one: an antonym said about something else says nothing."""
    table = antonyms()
    for s in exp.order:
        base = _degree_base(s) if s in exp.positive and s not in exp.negated else None
        if base is None:
            continue
        if _find(s, act) is not None:
            if (t := _antonym_in_its_clauses(s, act, exp)) is not None:
                return f"opposite: expected '{exp.surface[s]}', answer says '{t}'"
            continue
        if any(key in act.sides for key in _SIDE_OF.get(exp.surface[s].lower(), ())):
            continue  # the answer says it in another word of its side: "turned off" for "disabled"
        for t in act.order:
            if t not in act.positive or t in act.negated or _degree_base(t) not in table[base]:
                continue
            if _find(t, exp) is not None or not _beside(t, [o for o in exp.order if o != s], act.text):
                continue
            if _says_both_ends(t, act):
                continue  # "lists the wrong code … sent the corrected invoice" says "incorrect" too
            return f"opposite: expected '{exp.surface[s]}', answer says '{act.surface[t]}'"
        if (said := _unread_antonym(table[base], [o for o in exp.order if o != s], act)) is not None:
            return f"opposite: expected '{exp.surface[s]}', answer says '{said}'"
    return _other_comparative(act, exp) or _other_change(act, exp) or _other_side_of(act, exp)


# The stopword that is the one end of an antonym pair ("different" / "same"), which the analysis
# drops: "on the same truck" for "on a different truck" (not "not the same", which says "different").
_UNREAD_ANTONYM = re.compile(r"(?<!not the )(?<!n't the )\bsame\b", re.IGNORECASE)
_SAME = stem("same")


def _unread_antonym(antonyms_of: frozenset[str], others: list[str], act: Analysis) -> str | None:
    """The stopword of `_UNREAD_ANTONYM`, as written, when it is among ``antonyms_of`` (stems) and the
    answer says it in a sentence with one of ``others`` (stems), if any are given."""
    if _SAME not in antonyms_of:
        return None
    for said in _clauses(act.text, _SENTENCE):
        found = _UNREAD_ANTONYM.search(said.text)
        if found and (not others or any(_find(o, said) is not None for o in others)):
            return found[0]
    return None


# The stopwords that are the two ends of an order, which the analysis drops: "submitted at 4:52 pm, just
# before the 5 pm deadline" for "submitted after the deadline", "should arrive before your June 20
# trip" for "only after the June 20 trip". Each is read with the first content word after it, what it is
# said of. (The ends of a degree, "over" / "under", are the "limit" family's sides.)
_SIDES_OF = {"before": "after", "after": "before"}
_SIDE_REACH = 5  # tokens after the stopword that may come before its word ("before your June 20 trip")
# The adverbs that say a side of the answer's own order: "uploaded it before switching over … signed
# in afterwards" says what happened after the switch.
_SIDE_ADVERB = {"after": re.compile(r"\b(?:afterwards?|thereafter)\b", re.IGNORECASE)}
_SIDE_ADVERB["before"] = re.compile(r"\bbeforehand\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _sides_of(text: str) -> frozenset[tuple[str, str]]:
    """(stopword of `_SIDES_OF`, the stem of the content word it is said of) for each such stopword of
    ``text`` not negated ("not before Monday"), skipping numbers, units and dates ("before the 5 pm
    deadline" -> ("before", "deadlin"))."""
    if not any(word in text.lower() for word in _SIDES_OF):
        return frozenset()
    tokens = tuple(chain.from_iterable(map(_piece, text.replace("’", "'").split())))
    found = set()
    for i, (kind, key, _extra, _tok) in enumerate(tokens):
        if kind is not _SKIP or key not in _SIDES_OF or (i and tokens[i - 1][0] is _NEGATION):
            continue
        for next_kind, word, name, _ in tokens[i + 1 : i + 1 + _SIDE_REACH]:
            if next_kind is _CONTENT and not name and word not in _UNITS:
                found.add((key, word))
                break
            if next_kind is not _SKIP and next_kind is not _NUMBER and next_kind is not _CONTENT:
                break  # a stop, a comma, a negation or a new clause: it is said of nothing here
    return frozenset(found)


def _other_side_of(act: Analysis, exp: Analysis) -> str | None:
    """A veto when the expected text puts something on one side of a thing ("after the deadline") and
    the answer only on the other ("just before the 5 pm deadline")."""
    wanted = _sides_of(exp.text)
    if not wanted:
        return None
    said = _sides_of(act.text)
    for side, word in sorted(wanted):
        other = _SIDES_OF[side]
        adverb = _SIDE_ADVERB.get(side)
        if (other, word) in said and (side, word) not in said and not (adverb and adverb.search(act.text)):
            return f"opposite: expected '{side} … {exp.surface.get(word, word)}', answer says '{other}'"
    return None


# Comparatives of an amount by the way they go, as written: "more" and "less" are stopwords no
# antonym pair reads, and "lower" is the table's verb ("lower the price" / "raise"), not "higher"'s end;
# and the verbs of an amount changing ("lag has grown" / "dropped back under 2 seconds"), whose
# ends the table leaves out for their other senses ("rise" / "set", "fall" / "spring"): the "level"
# family's (one word each) and a few more, so that "I'm increasing your long run to 12 km" is read
# against "the long run will be shortened", "loss was still falling" against "climbing".
_GREATER = frozenset(_words("more higher larger bigger greater longer costlier pricier grown climbing"))
_LESSER = frozenset(_words("less fewer lower smaller shorter cheaper fallen back_under back_below"))
_GREATER |= frozenset(w for w in _OPPOSITES["level"][0].split() if "_" not in w)
_LESSER |= frozenset(w for w in _OPPOSITES["level"][1].split() if "_" not in w)
_COMPARATIVE = re.compile(
    rf"\b(?:{'|'.join(sorted(w.replace('_', ' ') for w in _GREATER | _LESSER))})\b", re.IGNORECASE
)
_NOT_MORE = re.compile(r"\b(?:no|not|any|once|learn|read)\s+$", re.IGNORECASE)  # "no more than", "learn more"


def _comparatives(text: str) -> set[str]:
    """The comparatives of an amount ``text`` says ("costs $15 more" -> "more"), lowercased, less the
    ones that compare nothing ("no more than", "learn more")."""
    return {
        found[0].lower().replace(" ", "_")
        for found in _COMPARATIVE.finditer(text)
        if not _NOT_MORE.search(text[: found.start()])
    }


def _other_comparative(act: Analysis, exp: Analysis) -> str | None:
    """A veto when the expected text compares one way ("the Nimbus 3 is $15 cheaper") and the answer
    only the other ("costs $15 more"), in the sentences that share the most words of ``expected``:
    the way an amount goes is said in comparatives of many words, "more" and "less" the commonest,
    and one said of something else ("annual plans churned less") says nothing. An answer that says
    both ways says the other of it when those sentences do ("slept 40 minutes less than the week
    before … woke up more often" for "slept 40 minutes more")."""
    said = _comparatives(exp.text)
    if not said or (said & _GREATER and said & _LESSER):
        return None
    other = _LESSER if said & _GREATER else _GREATER
    answered = _comparatives(act.text)
    if not answered & other:
        return None
    words = [o for o in exp.order if o not in said]
    about = _clauses_about(act, words, _SENTENCE) if words else _clauses(act.text, _SENTENCE)
    if not answered <= other and any(_comparatives(sentence.text) - other for sentence in about):
        return None  # "less … and more" in the sentences about it: the answer says both ways
    for sentence in about:
        found = _comparatives(sentence.text) & other
        if found:
            return f"opposite: expected '{min(said)}', answer says '{min(found).replace('_', ' ')}'"
    return None


# A value said to have changed, with or without its verb: "went from about 2.3 seconds to 40
# milliseconds", "kept for 35 days instead of 14", "2-3 weeks instead of 6-8" (`_way_it_went`)
_CHANGE = re.compile(rf"\bfrom {_FIGURE} to {_FIGURE}|{_FIGURE} instead of {_FIGURE}", re.IGNORECASE)
# Comparatives of time taken: a slower thing takes more of it ("the query got slower" for "from 35 ms to
# 4 s"), read only against a change said in units of time.
_TAKING_LONGER = {"slower": _GREATER, "faster": _LESSER, "quicker": _LESSER}


def _changes(text: str) -> list[tuple[str, str, str]]:
    """(the way it went: "more" or "less", the kind of its unit: "time", "size" or "", as written) of
    each change of `_CHANGE` in ``text``."""
    found = []
    for match in _CHANGE.finditer(text):
        groups = match.groups()  # "X instead of Y" went from Y to X
        went = _way_it_went(*(groups[:4] if match[1] else groups[6:8] + groups[4:6]))
        if went is not None:
            found.append((*went, match[0].strip(" ,")))
    return found


def _other_change(act: Analysis, exp: Analysis) -> str | None:
    """A veto when the expected text compares one way ("the retention period got shorter", "the query
    became slower") and the sentences of the answer about it say a change only the other way, with no
    comparative of the expected way ("kept for 35 days instead of 14", "from 2.3 seconds to 40 ms")."""
    if " from " not in act.text and " instead of " not in act.text:
        return None  # the commonest case, read first: the answer says no change of value
    lowered = exp.text.lower()
    said = _comparatives(exp.text) | {w for w in _TAKING_LONGER if re.search(rf"\b{w}\b", lowered)}
    if not said:
        return None
    ways = {_TAKING_LONGER.get(w) or (_GREATER if w in _GREATER else _LESSER) for w in said}
    if len(ways) > 1:
        return None  # the expected text says both ways
    way = ways.pop()
    other = "less" if way is _GREATER else "more"
    timed = bool(said & _TAKING_LONGER.keys())
    stems = {stem(w) for w in said}
    words = [o for o in exp.order if o not in stems]
    for sentence in _clauses_about(act, words, _SENTENCE) if words else _clauses(act.text, _SENTENCE):
        changes = [c for c in _changes(sentence.text) if not timed or c[1] == "time"]
        if changes and all(c[0] == other for c in changes) and not _comparatives(sentence.text) & way:
            return f"opposite: expected '{min(said)}', answer says '{changes[0][2]}'"
    return None


def _antonym_in_its_clauses(s: str, act: Analysis, exp: Analysis) -> str | None:
    """The antonym of ``s`` (an expected word the answer says too) as written, when every clause of the
    answer about the most other words of ``expected`` says it and not ``s`` ("the citation is
    already paid … your meter ticket is still unpaid" for "the meter ticket has been paid"): the
    answer says both ends, of different things, and the expected thing's is the other."""
    table = antonyms()
    base = _degree_base(s)
    if base is None or not any(t in act.positive and _degree_base(t) in table[base] for t in act.order):
        return None  # the commonest case, read first: the answer says no antonym of it
    others = [
        o
        for o in exp.order
        if o != s
        and not {o, exp.surface[o].lower()} & (exp.numbers.keys() | exp.names.keys())
        and _find(o, act) is not None
    ]  # the words of what it is about, not of when: "finished by June 24" is not about June
    if not others or _says_a_lack(exp):
        return None  # "the policy was missing the new account": the other end is what it had
    about = _clauses_about_most(act, others, _CLAUSE_END)
    said = [
        c.surface[t]
        for c in about
        for t in c.order
        if t in c.positive and t not in c.negated and _degree_base(t) in table[base] and _find(t, exp) is None
    ]
    if not said or len(said) < len(about) or any(_find(s, c) is not None for c in about):
        return None
    return said[0]


def _says_both_ends(t: str, act: Analysis) -> bool:
    """Whether the answer says, besides ``t``, an antonym of it too ("20 resolve correctly, 2 have wrong
    years"): it says both ends of the pair, so an expected word of the other end ("incorrect") is said
    in other words, not denied."""
    table = antonyms()
    base = _degree_base(t)
    return base is not None and any(
        u != t and u in act.positive and u not in act.negated and _degree_base(u) in table[base]
        for u in act.order
    )


def _beside(word: str, others: list[str], text: str) -> bool:
    """Whether a sentence of ``text`` says ``word`` and one of ``others`` (stems); true if none are given."""
    if not others:
        return True
    return any(
        word in said.surface and any(_find(o, said) is not None for o in others)
        for said in _clauses(text, _SENTENCE)
    )


@lru_cache(maxsize=4096)
def proper_names(text: str) -> dict[str, str]:
    """The names ``text`` writes: acronyms ("EU", "AWS", "US": 2 to 6 capitals, even a stopword's) and
    capitalised words not opening a sentence ("your Visa card"), as ``{stem: as written}``. Single
    letters ("P.O.") are left out.

    >>> proper_names("Your data stays in the US. Ask Maria at Acme.")
    {'us': 'US', 'maria': 'Maria', 'acm': 'Acme'}
    """
    found: dict[str, str] = {}
    words = text.split()
    capitals = sum(w[0].isupper() for w in words)
    # a capitalised stopword ("Son Found Dead At Home"); not "registered for KubeCon Europe in Paris"
    title_case = any(w[0].isupper() and w.lower() in _STOPWORDS for w in words[1:])
    if capitals >= 4 and capitals * 2 > len(words) and title_case:
        return found  # a title-case heading: capitals mark no names there
    start = True
    for kind, word, name, tok in chain.from_iterable(map(_piece, text.replace("’", "'").split(" "))):
        acronym = 1 < len(tok) <= 6 and tok.isupper() and tok.isalpha()
        named = kind is _CONTENT and len(tok) > 1 and tok[0].isupper() and not start
        if (acronym or named) and not name:  # weekdays and months: the date guard compares them
            found.setdefault(word, tok)
        start = kind is _STOP
    return found


def changed_names(actual: str, expected: str) -> tuple[list[str], list[str]]:
    """The names of ``expected`` the answer does not say, and the answer's names ``expected`` does not
    (as written): when both are non-empty, the answer may name another entity ("the EU" for "the US").

    >>> changed_names("Your data is stored in the EU.", "data is stored in the US")
    (['US'], ['EU'])
    """
    want = proper_names(expected)
    if not want:
        return [], []
    act, exp, have = analyse(actual), analyse(expected), proper_names(actual)
    missing = [
        written
        for s, written in want.items()
        if s not in have
        and _find(s, act) is None
        and not _spelled_out(written, actual)
        and not _abbreviated(written, expected, have.values())
        and not _as_symbol(written, actual)
    ]
    if not missing:
        return [], []
    others = [written for s, written in have.items() if s not in want and _find(s, exp) is None]
    return missing, others


_NAME_PARTS = re.compile(r"[A-Z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+")


def sibling_names(name: str, other: str) -> bool:
    """Whether two names are built of parts and share one but not all ("GitLab" and "GitHub",
    "ProfileActivity" and "CheckoutActivity"): two things of one family, not one thing said two ways,
    however alike their word vectors.

    >>> sibling_names("GitLab's", "GitHub"), sibling_names("GitHub", "GitHub's"), sibling_names("EU", "US")
    (True, False, False)
    """
    parts = [set(_NAME_PARTS.findall(n.removesuffix("'s").removesuffix("’s"))) for n in (name, other)]
    return len(parts[0]) > 1 and len(parts[1]) > 1 and bool(parts[0] & parts[1]) and parts[0] != parts[1]


def _opens_phrase(tokens: tuple[_Token, ...], i: int) -> bool:
    """Whether token ``i`` opens a noun phrase: after a determiner, a number or a sentence start."""
    if i == 0:
        return True
    kind, word = tokens[i - 1][0], tokens[i - 1][1]
    return kind is _STOP or kind is _NUMBER or (kind is _SKIP and word in _DETERMINERS)


# Words before a noun that name no kind of it: units ("a 75 dollar fee") and words that say which one.
_NO_KIND = frozenset(
    stem(w)
    for w in _words(
        "dollar dollars euro euros pound pounds percent minute hour day week month year mile"
        # and words that say which one, not what kind: "the new plan" is "your mobile plan"
        " new old current original same other next last previous higher lower extra whole entire additional"
        " earliest latest"
        " separate different replacement"
        # and words that say how much of it: "a partial deposit refund" is "$1,200 of your security deposit"
        " partial full"
    )
)


@lru_cache(maxsize=4096)
def _modifiers(text: str) -> tuple[tuple[str, str, str], ...]:
    """(modifier stem, as written, head stem) of each noun phrase of ``text`` that opens with two
    content words, neither a verb form nor the first a unit ("the security team", "your work email";
    not "the failed payment", "reschedule approved", "a 75 dollar fee")."""
    tokens = tuple(chain.from_iterable(map(_piece, text.replace("’", "'").split(" "))))
    found = []
    for i in range(len(tokens) - 1):
        (kind, word, name, tok), (head_kind, head) = tokens[i][:4], tokens[i + 1][:2]
        head_tok = tokens[i + 1][3].lower()
        verbal = (
            tok.lower().endswith(("ing", "ed")) or word in _DESCRIBING or head_tok.endswith(("ed", "ing"))
        )
        both_words = kind is _CONTENT and head_kind is _CONTENT and not name and len(tok) > 2
        both_words = both_words and word not in _NO_KIND  # "a 75 dollar fee": a unit, not a kind
        if both_words and not verbal and _opens_phrase(tokens, i):
            found.append((word, tok, head))
    return tuple(found)


def swapped_modifiers(actual: str, expected: str) -> list[tuple[str, str]]:
    """Pairs (expected's word, the answer's word) where the answer puts another word before the same
    noun: "the network team" for "the security team", "Windows users" for "Mac users". Each word is
    missing from the other text, and both are written alike (capitalised or not). Whether the two are
    one thing said two ways is for the caller to judge (the embeddings backend asks its word vectors).

    >>> swapped_modifiers("I sent it to the network team.", "sent to the security team")
    [('security', 'network')]
    """
    act, exp = analyse(actual), analyse(expected)
    answer = _modifiers(actual)
    pairs = []
    for word, tok, head in _modifiers(expected):
        said_head = _find(head, act)
        if said_head is None or _find(word, act) is not None:
            continue
        for other, other_tok, other_head in answer:
            if (
                other_head == said_head
                and _find(other, exp) is None
                and other_tok[0].isupper() == tok[0].isupper()
            ):
                pairs.append((tok, other_tok))
                break
    return pairs


_LETTERS = re.compile(r"[^\W\d_]+")


def _spelled_out(name: str, text: str) -> bool:
    """Whether acronym ``name`` is written out in ``text`` as the words it stands for: "PR" as "pull
    request", "HR" as "human resources" (the initials of consecutive words).

    >>> _spelled_out("PR", "I opened pull request #311."), _spelled_out("PR", "I opened a ticket.")
    (True, False)
    """
    if not (1 < len(name) <= 6 and name.isupper()):
        return False
    return name.lower() in "".join(w[0] for w in _LETTERS.findall(text)).lower()


# Units written as names, and the symbols that say them: "17 degrees Celsius" is "17°C".
_UNIT_SYMBOLS = {"Celsius": re.compile(r"\d\s?°\s?C\b"), "Fahrenheit": re.compile(r"\d\s?°\s?F\b")}


def _as_symbol(name: str, text: str) -> bool:
    """Whether ``name`` is a unit ``text`` writes as its symbol: "Celsius" in "set to 20°C".

    >>> _as_symbol("Fahrenheit", "cold air at 56°F"), _as_symbol("Celsius", "cold air at 56°F")
    (True, False)
    """
    symbol = _UNIT_SYMBOLS.get(name)
    return symbol is not None and symbol.search(text) is not None


_NAME_RUN = re.compile(r"(?:[A-Z][\w'-]*\s+){1,5}[A-Z][\w'-]*")


def _abbreviated(name: str, text: str, acronyms: Iterable[str]) -> bool:
    """Whether ``name`` is one of a run of capitalised words in ``text`` whose initials are one of
    ``acronyms``: "Contentful" in "Largest Contentful Paint" for "LCP".

    >>> _abbreviated("Contentful", "Largest Contentful Paint is 3.1 s.", ["LCP"])
    True
    """
    said = {a.upper() for a in acronyms if 1 < len(a) <= 6 and a.isupper()}
    return bool(said) and any(
        name in run.split() and "".join(w[0] for w in run.split()).upper() in said
        for run in _NAME_RUN.findall(text)
    )


_VALUE, _WORD, _GAP, _END = "v", "w", "g", "e"
# Words a value is read with ("7:30 pm", "$6 million"): one value, not a word attached to it.
_UNITS = frozenset(_words("am pm million millions billion billions thousand cents percent"))
_PARTITIVE = frozenset({"of", "out", "to"})  # "2 of 5 nodes", "from 3 to 8 replicas": one run
_BY_HOW_MUCH = frozenset({"by"})  # "cut the bill by $900", "lagging by 1.2 million": how much, not what
_ADDED = frozenset(stem(w) for w in _words("additional extra"))  # "27 additional payments", like "3 more"
# Verbs that join a noun to its value as "is" does: "the order stays at 60" is "the order is at 60".
_COPULAS = frozenset(_words("stay stays stayed remain remains remained become becomes became"))
_SIZE = re.compile(r"\d[\d.,]*-[^\W\d_]")  # "a 30-year mortgage", "a 20-minute visit"
_LETTER_DASH_DIGIT = re.compile(r"[^\W\d_]{1,4}-\d")  # "W-9", "I-130", "PO-7740": a code


@lru_cache(maxsize=4096)
def _slots(text: str) -> tuple[tuple[str, str], ...]:
    """``text`` as (kind, key) for `changed_role`: values (numbers, weekdays, months), content words,
    stopwords (gaps) and ends (of sentences and at commas); single letters ("14C") and am/pm are left out."""
    slots = [slot for piece in in_digits(text).replace("’", "'").split(" ") for slot in _piece_slots(piece)]
    # a comma ends a value's reach ("412 passed, 0 failed"), but not inside a date ("Thursday, October 9")
    return tuple(
        slot
        for n, slot in enumerate(slots)
        if slot != (_END, ",")
        or n + 1 == len(slots)
        or slots[n + 1][0] is not _VALUE
        or not _in_a_date(slots, n)
    )


def _in_a_date(slots: list[tuple[str, str]], n: int) -> bool:
    """Whether the comma at ``n`` follows a weekday or a month's day ("Thursday, October 9", "July 7,
    2027"), not a count ("412 passed, 0 failed")."""
    return any(kind is _VALUE and key[0].isalpha() for kind, key in slots[max(0, n - 2) : n]) and (
        slots[n - 1][0] is _VALUE
    )


@lru_cache(maxsize=65536)
def _piece_slots(piece: str) -> tuple[tuple[str, str], ...]:
    """The slots of one space-free piece of text (cached like `_piece`: pieces recur across texts)."""
    tokens = _piece(piece)
    if _SIZE.match(piece):  # "a 30-year mortgage": the number describes the next word
        tokens = ((_SKIP, "", "", ""), *tokens[1:])
    elif (_LETTER_BY_DIGIT.search(piece) and _is_code(piece)) or _LETTER_DASH_DIGIT.match(piece):
        # "unit 4B", "in Q3", "their W-9", "vendor V-30417": a code, no value
        tokens = tuple((_SKIP, "", "", "") if t[0] is _NUMBER else t for t in tokens)
    slots = (_slot(kind, word, name, tok) for kind, word, name, tok in tokens)
    return tuple(slot for slot in slots if slot is not None)


def _slot(kind: str, word: str, name: str, tok: str) -> tuple[str, str] | None:
    """One token's slot for `_slots`, or ``None`` for a token it leaves out."""
    if kind is _NUMBER or (kind is _CONTENT and name) or tok == "May":  # "until May 3": the month
        return _VALUE, name or word
    if kind is _CONTENT and tok.lower() not in _COPULAS:
        return (_WORD, word) if len(tok) > 1 and word not in _UNITS else None
    if (kind is _STOP and tok != ":") or kind is _COMMA:
        return _END, tok
    return (_GAP, word) if word not in _UNITS else None


def _values_after(slots: tuple[tuple[str, str], ...], i: int) -> list[str]:
    """The values after the word at ``i``, up to the next content word ("placed on March 3, will") but
    a participle after a form of "be" ("the re-inspection is set for May 6"); an amount after "by" is
    how much it changes, not its value ("cut the bill by about $900"), but a date there is a deadline."""
    found: list[str] = []
    prev, by = "", False
    for kind, key in slots[i + 1 :]:
        if kind is _VALUE and by and not found and key[0].isdigit() and ":" not in key:
            break  # "reduce the bill by about $900": how much it changes, not what it is
        if kind is _VALUE:
            found.append(key)
        elif kind is not _GAP and not (kind is _WORD and prev in _PASSIVE and not found):
            break
        prev, by = key, key in _BY_HOW_MUCH or (by and kind is _GAP)
    return found


def _values_before(slots: tuple[tuple[str, str], ...], i: int) -> list[str]:
    """The values right before the word at ``i``, with no word between ("build 412 failed") but the
    noun it ends ("128 order lines") or a form of "be" ("3 were revoked")."""
    if i > 1 and slots[i - 1][0] is _WORD and slots[i - 2][0] is _VALUE:
        if slots[i - 1][1] in _ADDED:
            return []  # "credited 27 additional qualifying payments": how many were added, not how many
        i -= 1
    while i > 1 and slots[i - 1][0] is _GAP and slots[i - 1][1] in _PASSIVE:
        i -= 1  # "3 were revoked": the 3 were
    j = i
    while j > 0 and (
        slots[j - 1][0] is _VALUE or (slots[j - 1][1] in _PARTITIVE and j > 1) or _of_which(slots, j)
    ):
        j -= 1  # "2 of 5 nodes" is one run: the 2 are nodes too
    return [key for kind, key in slots[j:i] if kind is _VALUE]


def _counts_its_kind(slots: tuple[tuple[str, str], ...], key: str, word: str) -> bool:
    """Whether value ``key`` comes right before a noun phrase that ends in ``word``, over up to three
    words that name or describe it ("40,000 Chase Ultimate Rewards points"), or before a name that ends
    in it ("2,418 SkyMiles"): a count of a kind of the thing counts the thing."""
    for n, (kind, noun) in enumerate(slots):
        if kind is _WORD and (noun == word or (noun.endswith(word) and len(noun) > len(word) + 2)):
            j = n
            while j > 0 and n - j < _PHRASE_WORDS and slots[j - 1][0] is _WORD:
                j -= 1
            if key in _values_before(slots, j):
                return True
    return False


# How many words may stand between a count and the noun it counts: "40,000 Chase Ultimate Rewards points".
_PHRASE_WORDS = 3


def _of_which(slots: tuple[tuple[str, str], ...], j: int) -> bool:
    """Whether the slot before ``j`` is a determiner right after a partitive ("3 of the 8 tutors", "58 of
    our 60 seats"): the run of a part and its whole goes on over it."""
    return j > 2 and slots[j - 1][1] in _DETERMINERS and slots[j - 2][1] in _PARTITIVE


def _carried_alike(
    act: tuple[tuple[str, str], ...], key: str, exp: Analysis, written: dict[str, str]
) -> bool:
    """Whether the answer attaches value ``key`` to another word of ``expected`` that carries no other
    value of its kind in the answer (its numbers as ``written``): "3 failed" in "142 tests passed and 3
    failed" says "3 tests failed"; or to a pronoun that may stand for the expected word ("1,284 orders
    …, and 37 of them were refunded")."""
    for n, slot in enumerate(act[:-2]):
        if slot == (_VALUE, key) and act[n + 1] == (_GAP, "of") and act[n + 2][1] in _REFERRING:
            return True
    carriers: dict[str, list[list[str]]] = {}
    for n, (kind, word) in enumerate(act):
        if kind is _WORD:
            carriers.setdefault(word, []).extend(
                v for v in (_values_after(act, n), _values_before(act, n)) if v
            )
    kind = _value_kind([key], exp.numbers)  # values of other kinds say nothing of it: "2 of them (Jan 19)"
    return any(
        all(values == [key] for values in carried if _value_kind(values, written) == kind)
        and _find(word, exp) is not None
        for word, carried in carriers.items()
        if any(key in values for values in carried)
    )


def _part_of_a_total(act: tuple[tuple[str, str], ...], key: str, others: list[list[str]]) -> bool:
    """Whether the answer says count ``key`` with its noun left out ("3 had cracked housings", "29 were
    placed", "4 each") while the word carries a greater count, a total it is part of ("the 18 returned
    units: 15 passed inspection and 3 had cracked housings" says "three units were damaged"); a smaller
    count is of some of them ("118 managed Macs, excluding the 4 Mac Studios … 96 have installed it")."""
    try:
        part = float(key)
        totals = [float(v) for b in others for v in b]
    except ValueError:
        return False
    elided = any(
        slot == (_VALUE, key)
        and (act[n + 1] in _A_PART_DOES or (act[n + 1][0] is _END and n > 0 and act[n - 1][1] in _THE_OTHER))
        and (n == 0 or act[n - 1][0] is not _VALUE)
        for n, slot in enumerate(act[:-1])
    )
    return elided and any(total > part for total in totals)


def _left_over(act: tuple[tuple[str, str], ...], key: str, exp: tuple[tuple[str, str], ...]) -> bool:
    """Whether both texts say what is left, and the answer says count ``key`` as it ("It used 1 credit,
    leaving you 4", "so you have 5 left" for "5 class credits remain"): what is left of a thing is
    neither what was used nor the whole, which the word carries too."""
    if not any(k in _LEFT for _, k in exp):
        return False
    return any(
        slot == (_VALUE, key)
        and (
            (n + 1 < len(act) and act[n + 1][1] in _LEFT)
            or any(k == _LEAVING for _, k in act[max(0, n - 2) : n])
        )
        for n, slot in enumerate(act)
    )


# What says a count is what is left: "5 left", "3 remaining", "4 remain"; and "leaving you 4" before it.
_LEFT = frozenset(stem(w) for w in _words("left remaining remain"))
_LEAVING = stem("leaving")


# What a count with its noun left out is followed by: "3 had …", "29 were placed", "4 each", "the two that".
_A_PART_DOES = frozenset(
    (_GAP, w) for w in _words("is are was were had have has each will did that who which")
) | frozenset((_WORD, stem(w)) for w in _words("people persons"))  # "36 volunteers … 2 people replied"
# What a count ending its phrase with its noun left out follows: "the other two, serials ending in K7QP".
_THE_OTHER = _DETERMINERS | {"other"}


def _value_kind(values: list[str], written: dict[str, str]) -> str:
    """A run of role values' kind: a date (it names a weekday, month or season: "July 9"), a time
    ("6:15"), a share ("90%"), an amount of money (written with its currency in ``written``, the
    text's numbers as written: "$3,780") or a number."""
    if any(v[0].isalpha() for v in values):
        return "date"
    if any(":" in v for v in values):
        return "time"
    if any(v.endswith("%") for v in values):
        return "share"
    return "money" if any(written.get(v, " ")[0] in "$€£" for v in values) else "number"


def _reads(word: str, key: str, act: tuple[tuple[str, str], ...], stems: Analysis) -> bool:
    """Whether ``word`` (a stem of expected) carries value ``key`` in the answer, after it or before it."""
    said = _find(word, stems)
    at = [n for n, slot in enumerate(act) if slot == (_WORD, said)] if said is not None else []
    return any(key in _values_after(act, n) or key in _values_before(act, n) for n in at)


def changed_role(actual: str, expected: str) -> str | None:
    """A veto when a number or date of ``expected`` is in the answer, but the word it is attached to
    in ``expected`` carries another value there: "delivered on March 3" for "placed on March 3, will be
    delivered on March 10", "build 411 failed" for "build 412 failed; build 411 passed".

    The attached word is the content word before the value's run in ``expected`` (stopwords between
    are skipped: "delivered on"), or right after it ("411 failed"). In the answer, each of that word's
    occurrences is read with the values after it up to the next content word, or right before it. The
    veto needs one occurrence with other values and none with this one.

    >>> changed_role("Your order, placed on March 3, will be delivered on March 10.", "delivered on March 3")
    "role: expected 'delivered' with 'march 3', answer has it with 'march 10'"
    """
    exp, act = _slots(expected), _slots(actual)
    if not any(kind is _VALUE for kind, _ in exp):
        return None
    stems, expected_analysis = analyse(actual), analyse(expected)
    expected_numbers = expected_analysis.numbers
    as_written = stems.numbers  # the answer's values as written: "$3,780" is money
    for i, (kind, key) in enumerate(exp):
        if kind is not _VALUE or (_VALUE, key) not in act:
            continue
        start, end = i, i
        while start > 0 and exp[start - 1][0] is _VALUE:
            start -= 1
        while end + 1 < len(exp) and exp[end + 1][0] is _VALUE:
            end += 1
        before = start - 1
        while before >= 0 and exp[before][0] is _GAP:
            before -= 1
        # the values expected reads with a word, but with a word the answer reads this one with ("placed
        # on March 10 and delivered on March 3" for "placed on March 3, … delivered on March 10")
        stated = [
            v
            for n, (k, w) in enumerate(exp)
            if k is _WORD and not _reads(w, key, act, stems)
            for v in (*_values_after(exp, n), *_values_before(exp, n))
        ]
        for j, read in ((before, _values_after), (end + 1, _values_before)):
            if not 0 <= j < len(exp) or exp[j][0] is not _WORD:
                continue
            word = _find(exp[j][1], stems)
            if word is None:
                continue
            at = [n for n, slot in enumerate(act) if slot == (_WORD, word)]
            others = [b for b in (read(act, n) for n in at) if b]
            run = [v for _, v in exp[start : end + 1]]
            kind_of_run = _value_kind(run, expected_numbers)
            counted = end + 1 < len(exp) and exp[end + 1][0] is _WORD
            if (
                others
                # said the other way round: "the charge from April 28" for "the April 28 charge"
                and not any(key in _values_after(act, n) or key in _values_before(act, n) for n in at)
                and not _counts_its_kind(act, key, word)
                # another value of its kind: "table for 6" is not "table for 6 Friday", "the 6:15 spin class
                # on Thursday" is "Thursday spin class"
                # and not one expected states too: "3 meals for 2 people", "from January 6 to March 28"
                and any(
                    v not in run and v not in stated
                    for b in others
                    if _value_kind(b, as_written) == kind_of_run
                    for v in b
                )
                and not _carried_alike(act, key, expected_analysis, as_written)
                # "Three units were damaged" (a count of its noun) for "the 18 units: … 3 had cracks"
                and not (counted and _part_of_a_total(act, key, others))
                and not _left_over(act, key, exp)
            ):
                said = " ".join(run)
                written = stems.surface[word]
                return f"role: expected '{written}' with '{said}', answer has it with '{' '.join(others[0])}'"
    return None


def forget_texts() -> None:
    """Empty the caches keyed on a whole text, so the next reading of every text starts afresh.

    The caches of single words (stems, token classes, antonyms) stay: a process keeps meeting the
    same words in new texts. ``bench/calibrate_semantic.py`` times the backends with this.
    """
    texts = (analyse, _in_digits, _read_sides, _codes, _round_figures, _old_words, _durations)
    for cache in (
        *texts,
        _numbers_beside_codes,
        _clock_times,
        _says,
        _tenses,
        proper_names,
        _slots,
        _named_things,
        _modifiers,
        _sides_of,
    ):
        cache.cache_clear()


# The things a text names, each with its kind, for `said_of_another`: a noun with its number or letter
# ("court 3", "Bus 14", "flat 4B"; its kind is the noun), a hyphenated code with a digit ("db-east-2",
# "INV-20918"; its kind is its first part), a run of capitalised words ("Coach Harris", "Team Blue"; its
# kind is the first word), a capitalised word ("Priya"; of the kind "name") and a word before a noun
# (`_modifiers`: "the penicillin allergy"; its kind is the noun).
_LABELLED = re.compile(
    r"\b([A-Za-z][a-z]{2,}) (\d+[A-Za-z]?|[A-Z])\b(?![.,:/]\d|%|[.'’-]\w)(?: (?P<next>[a-z]+))?"
)
_HYPHEN_CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)([A-Za-z][A-Za-z\d]*)(?:-[A-Za-z\d]+)+\b")
_CAPITALISED_RUN = re.compile(r"(?<![\w-])(?<!\w['’])[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)*")
_NAME = "name"


@lru_cache(maxsize=4096)
def _named_things(text: str) -> frozenset[tuple[str, str]]:
    """(kind, key) of each thing ``text`` names (see :data:`_LABELLED` above).

    >>> sorted(_named_things("I booked court 3 for Priya and Team Blue on db-east-2."))
    [('court', 'court 3'), ('db-', 'db-east-2'), ('name', 'priya'), ('team', 'team blue')]
    """
    found: set[tuple[str, str]] = set()
    for m in _LABELLED.finditer(text):
        head = m[1].lower()
        kind, word, name, _ = _piece(head)[0]
        # "court 3 at", "Nimbus 2 running shoes"; not "spent 48 hours", which counts the hours
        if (
            kind is _CONTENT
            and not name
            and (m["next"] in _STOPWORDS or m["next"] is None or m[1][0].isupper())
        ):
            found.add((word, f"{head} {m[2].lower()}"))
    found.update((f"{m[1].lower()}-", m[0].lower()) for m in _HYPHEN_CODE.finditer(text))
    for m in _CAPITALISED_RUN.finditer(text):
        words = m[0].replace("’", "'").split(" ")
        while words and (_classify(words[0])[0] is not _CONTENT or _classify(words[0])[2]):
            words = words[1:]  # "The Overstory", "On Tuesday": not the stopword, nor a date's name
        words = [w.removesuffix("'s").rstrip("'") for w in words]  # "GitHub's", "'Circe'"
        if len(words) > 1:
            found.add((stem(words[0].lower()), " ".join(words).lower()))
        elif words and not words[0].isupper() and not words[0].lower().endswith(("ing", "ed", "ly")):
            found.add((_NAME, words[0].lower()))  # not an acronym ("UTC"), nor "Existing", "Overnight"
    found.update((head, word) for word, tok, head in _modifiers(text) if tok.lower() not in _ORDINAL_DAYS)
    return frozenset(found)  # "the second email" is "email 2", no other email


def _names_it(clause: str, thing: tuple[str, str]) -> bool:
    """Whether ``clause`` names ``thing``: as a thing of its kind, or in its words ("Jordan Reyes")."""
    if thing in _named_things(clause):
        return True
    return re.search(rf"\b{re.escape(thing[1])}\b", clause, re.IGNORECASE) is not None


def _where(clause: str, thing: tuple[str, str]) -> int:
    """Where ``clause`` names ``thing`` first (its end when it names it only as a thing of its kind)."""
    found = re.search(rf"\b{re.escape(thing[1])}\b", clause, re.IGNORECASE)
    return found.start() if found else len(clause)


# Pronouns that may stand for a thing named before: "Viagogo … they've approved a refund", "I realigned it".
_STANDING_FOR = _REFERRING | _TAKING_UP | frozenset(_words("their his its"))


def _wanted_things(expected: str) -> list[tuple[str, str]]:
    """The things ``expected`` names, and a capitalised word opening it ("Marco will own …")."""
    wanted = set(_named_things(expected))
    opening = _CAPITALISED_RUN.match(expected)
    if (
        opening
        and " " not in opening[0]
        and not opening[0].isupper()
        and _classify(opening[0])[0] is _CONTENT
    ):
        wanted.add((_NAME, opening[0].lower().removesuffix("'s")))
    return sorted(wanted)


def _best_clauses(
    actual: str, words: list[str], thing: tuple[str, str], others: list[tuple[str, str]]
) -> tuple[int, int, str]:
    """How many of ``words`` the answer's clause naming ``thing`` says at most, how many one naming one
    of ``others`` (and no pronoun before it that may stand for ``thing``) says at most, and its key."""
    best_it, best_other, said = 0, 0, ""
    pieces = _STATE_CLAUSE_END.split(actual)
    # a clause naming both reads in its parts: "to Team Blue …, | since Team Green is fully booked"
    pieces = [
        part
        for piece in pieces
        for part in (
            _REASON_END.split(piece)
            if _names_it(piece, thing) and any(_names_it(piece, o) for o in others)
            else (piece,)
        )
    ]
    for piece in pieces:
        clause = analyse(piece)
        shared = sum(_find(w, clause) is not None for w in words)
        if _names_it(piece, thing):
            best_it = max(best_it, shared)
        elif shared > best_other:
            other = next((o for o in others if _names_it(piece, o)), None)
            if other is not None and not _refers(analyse(piece[: _where(piece, other)]), _STANDING_FOR):
                best_other, said = shared, other[1]
    return best_it, best_other, said


def said_of_another(actual: str, expected: str) -> str | None:
    """A veto when ``expected`` says something of a thing the answer names, but the answer's clause that
    says the most of it names another thing of its kind instead, and the things' clauses say less:
    "Marco will own the fraud rules" for "Priya will own the fraud rules, and Marco will update the
    calendar", "court 1" for "booked court 3 … Court 1 was unavailable". A clause is one of `_opposite`'s
    (:data:`_STATE_CLAUSE_END`); the other clause must say two words of ``expected`` at least, all of
    them when the things are bare names (which may be of different kinds: "Hertz" and "Shell").

    >>> answer = "I renewed the lease for flat 2A; flat 4B had a leak."
    >>> said_of_another(answer, "the lease renewal was for flat 4B")
    "said of another: expected it of 'flat 4b', answer says it of 'flat 2a'"
    """
    wanted = _wanted_things(expected)
    had = _named_things(actual) if wanted else frozenset()
    lowered = expected.lower()
    for thing in wanted:
        kind, key = thing
        # another of its kind the expected text does not name ("Jordan Reyes" is "Jordan")
        others = sorted(t for t in had if t[0] == kind and key not in t[1] and t[1] not in lowered)
        if not others or (thing not in had and (_NAME, key) not in had):  # "the Grant house", "Mr. Grant"
            continue
        named = {stem(w) for w in _words(key)} | {kind}
        words = [s for s in analyse(expected).order if s not in named]
        best_it, best_other, said = (
            _best_clauses(actual, words, thing, others) if len(words) > 1 else (0, 0, "")
        )
        # one word of it is enough when the answer names the thing, and another written alike, and says
        # no other word of it: "on the waitlist for section 02, while section 01 is still open" for "on
        # the waitlist for section 01"
        least = int(
            thing not in had
            or said.count(" ") != key.count(" ")
            or sum(_find(w, analyse(actual)) is not None for w in words) > 1
        )
        if best_other > max(best_it, least) and (kind != _NAME or best_other == len(words)):
            return f"said of another: expected it of '{key}', answer says it of '{said}'"
    return None
