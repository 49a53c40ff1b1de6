"""semantic_match: the lexical default, its guards, the embeddings backend, and the plugin door."""

from __future__ import annotations

import doctest
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from cassette import (
    CassetteConfigError,
    CassetteError,
    MatchResult,
    SemanticBackendError,
    UnknownSemanticBackendError,
    get_plugin_manager,
    hookimpl,
    semantic_match,
)
from cassette.core import meaning
from cassette.core.meaning import (
    analyse,
    antonyms,
    changed_names,
    changed_role,
    guard,
    said_of_another,
    stem,
    swapped_modifiers,
)
from cassette.plugins.semantic_lexical import LEXICAL
from cassette.review.semantic import SemanticBackend, available_backends, configure, get_backend

LONG_ANSWER = (
    "Thanks for reaching out, and I'm sorry the blender arrived damaged. "
    "I checked order #4821: it was delivered on Monday, so it is well inside the 30-day window. "
    "I have issued a full refund to your original card. "
    "You should see it within 3 to 5 business days. Is there anything else I can help with?"
)


@pytest.fixture(autouse=True)
def _default_config() -> Iterator[None]:
    configure(None, {})
    yield
    configure(None, {})


# --- lexical: recall-oriented coverage -------------------------------------------------------


@pytest.mark.parametrize(
    "expected",
    ["a full refund was issued", "refund issued", "refund to your card", "delivered on Monday", "30-day"],
)
def test_long_answer_containing_the_meaning_matches(expected: str) -> None:
    assert semantic_match(LONG_ANSWER, expected)


@pytest.mark.parametrize("expected", ["", "   ", "$", "...!!!", "a an the", ["", "refund"]])
def test_an_expectation_with_nothing_to_look_for_is_an_error_not_a_pass(expected: Any) -> None:
    # before: all of these passed any answer, so a typo'd assertion could never fail
    with pytest.raises(CassetteConfigError, match="semantic_match: expected"):
        semantic_match("I cannot help with that.", expected)


@pytest.mark.parametrize(
    ("answer", "expected", "matches"),
    [
        ("我们已经为您办理了退款。", "退款", True),  # "we have processed your refund" / "refund"
        ("返金しました", "返金", True),
        ("我们已经为您办理了退款。", "换货", False),  # "exchange": not said
    ],
)
def test_chinese_and_japanese_words_are_found_inside_a_run_of_characters(
    answer: str, expected: str, matches: bool
) -> None:
    # before: a whole unspaced sentence was one token, so no expected word was ever found in it
    assert bool(semantic_match(answer, expected)) is matches


def test_long_answer_missing_the_meaning_fails_and_names_the_missing_words() -> None:
    result = semantic_match(LONG_ANSWER, "offered store credit instead")
    assert not result
    assert "missing 'offered', 'store', 'credit'" in result.reason


def test_inflections_meet_through_stemming() -> None:
    assert stem("refunded") == stem("refunds") == stem("refunding") == "refund"
    assert semantic_match("We refunded the charges.", "refunds the charge")


def test_paraphrase_with_no_shared_words_is_beyond_lexical() -> None:
    # Documented limit: use backend="embeddings" or a model-backed backend for these.
    assert not semantic_match("Your money will be returned in full.", "you get a refund")


# --- negation polarity ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "actual",
    [
        "I cannot offer a refund.",
        "I can't offer a refund for this order.",
        "We will NOT refund opened items.",
        "There is no refund for opened items.",
        "We won't refund that.",
        "We never give refunds after 30 days.",
        "I'm unable to offer a refund.",
        "We refuse to refund this order.",
        "I cannot, unfortunately, offer a refund.",
    ],
)
def test_negated_answer_does_not_match_positive_expectation(actual: str) -> None:
    result = semantic_match(actual, "offers a refund")
    assert not result
    assert result.reason.startswith("negated: ")
    assert "refund" in result.reason


def test_negation_reason_quotes_cue_and_word() -> None:
    assert (
        semantic_match("I cannot offer a refund.", "offers a refund").reason == "negated: 'cannot … refund'"
    )
    assert guard("There is no refund.", "a refund") == "negated: 'no refund'"


@pytest.mark.parametrize(
    "actual",
    ["I'm sorry, but I cannot offer a refund.", "No refund is possible here.", "We won't refund it."],
)
def test_negated_expectation_matches_negated_answer(actual: str) -> None:
    assert semantic_match(actual, "no refund")


def test_positive_answer_does_not_match_negated_expectation() -> None:
    result = semantic_match("We will refund you today.", "will not refund")
    assert not result
    assert result.reason == "not negated: expected 'not refund', answer says 'refund'"


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "Your landlord returned $1,320. They deducted $280 for carpet cleaning and sent the itemized "
            "list by email.",
            "The landlord did not provide an itemized list of deductions.",
            "not negated: expected 'not provide', answer says 'They deducted $280 for carpet cleaning "
            "and sent the itemize…'",
        ),
        (  # a denial said in one word ("declined to") is read on what it refuses: "provide"
            "The quote is $1,870, and they will provide a loaner tractor.",
            "Heartland declined to provide a loaner tractor.",
            "opposite: expected 'declined' of 'declined to provide', answer says 'provide'",
        ),
        (  # a thing said not done is denied itself
            "I renewed your residential parking permit for Zone 4 online; it cost $35.",
            "The parking permit renewal was not completed.",
            "not negated: expected 'not completed', answer says 'I renewed your residential parking permit "
            "for Zone 4 online'",
        ),
        (
            "We blocked your debit card. A replacement card will be mailed to you within 7 days.",
            "we will not send a replacement card",
            "not negated: expected 'not send', answer says 'A replacement card will be mailed to you "
            "within 7 days'",
        ),
    ],
)
def test_a_denial_of_what_the_answer_says_in_other_words_is_vetoed(
    actual: str, expected: str, reason: str
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        # a host name is no sentence end: the clause about "api" is the one that says it failed
        (
            "The certificate for shop.greenleaf.io was renewed. The certificate for api.greenleaf.io failed "
            "to renew because the DNS record is missing.",
            "api certificate renewal failed",
        ),
        # what stopped it may be said in another clause of the sentence
        (
            "I started the parking permit renewal, but the payment failed.",
            "The permit renewal was not completed.",
        ),
        # "no later than" says "by"
        ("The balance is due by September 1.", "The balance must be paid no later than September 1."),
        # a cue in the clause that governs nothing still denies
        ("The plan adds 4 resources, changes 2 and destroys none.", "the plan destroys no resources"),
        # a lack said in one word ("fully booked") may be the denial
        ("The Van Gogh Museum was fully booked that day.", "No tickets for the Van Gogh Museum were bought."),
        # what the answer says only in a condition is no claim
        ("If you confirm the address, the new card will be mailed.", "we will not send a new card"),
        # the clause about the expected words denies it too
        ("I mailed the invoice, but the receipt was not mailed.", "the receipt was not mailed"),
    ],
)
def test_a_denial_the_answer_does_not_contradict_passes_the_guard(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


@pytest.mark.parametrize(
    "actual",
    [
        "No problem, we will offer a full refund.",
        "No, we are happy to offer a refund.",
        "We can't ship it today, but we will offer a refund.",
        "Not only do we offer a refund, we also cover shipping.",
        "The old card wasn't working and the refund was offered today.",
    ],
)
def test_negation_scope_ends_where_it_should(actual: str) -> None:
    assert semantic_match(actual, "offers a refund")


@pytest.mark.parametrize(
    ("actual", "said", "denied"),
    [
        (
            "8 cartons had no RMA and are sitting in quarantine on rack Q2.",
            "the cartons are in quarantine on rack Q2",
            "the cartons had an RMA",
        ),
        (
            "The refund was not approved and will be reviewed again on Monday.",
            "the refund will be reviewed again on Monday",
            "the refund was approved",
        ),
    ],
)
def test_negation_scope_ends_at_and_with_a_verb_of_its_own(actual: str, said: str, denied: str) -> None:
    # once the cue has governed a word, "and" + an auxiliary opens a clause with its own polarity
    assert guard(actual, said) is None
    assert guard(actual, denied) is not None


@pytest.mark.parametrize(
    ("actual", "said", "denied"),
    [
        (
            "I quarantined it so it no longer blocks merges, and opened issue #733 for a readiness check.",
            "Issue #733 was opened for a readiness check.",
            "The test still blocks merges.",
        ),
        (
            "They found the cancellation didn't go through, refunded the full $82.99 and closed it.",
            "They refunded the $82.99 charge.",
            "The cancellation went through.",
        ),
    ],
)
def test_negation_scope_ends_at_a_comma_and_a_verb_in_the_past(actual: str, said: str, denied: str) -> None:
    # once a verbal cue has governed a word, a past verb after a comma is a new predicate of the subject
    assert guard(actual, said) is None
    assert guard(actual, denied) is not None


@pytest.mark.parametrize(
    ("text", "denied", "not_denied"),
    [
        # what stops is denied; where and when it stops are not
        ("Electricity will stop at your old apartment on March 31.", set(), {"apart", "march"}),
        ("It stopped sending readings on February 11.", {"send", "reading"}, {"february"}),
        ("Replication had stopped with error 1062.", {"replication"}, {"error"}),
        # intransitive: the subject is what stopped, even when a circumstance ends the cue at once
        ("iOS push notifications stopped on June 3.", {"notification", "push"}, {"jun"}),
        # after a negation the verb of stopping is itself denied, with what follows it
        ("The buses will not stop at Elm Street.", {"stop", "elm"}, set()),
        ("The buses will stop at Elm Street.", set(), {"elm", "street"}),
        ("The new route leaves no stop in Mexico.", {"stop", "mexico"}, set()),
    ],
)
def test_a_verb_of_stopping_denies_what_it_stops(text: str, denied: set[str], not_denied: set[str]) -> None:
    negated = analyse(text).negated
    assert denied <= negated.keys(), negated
    assert not not_denied & negated.keys(), negated


def test_stopping_on_a_date_is_not_a_denial_of_the_date() -> None:
    actual = "I scheduled your electricity service to stop at your old apartment on March 31."
    assert guard(actual, "Service at the old apartment ends March 31.") is None
    assert guard(actual, "Service at the old apartment ends April 30.") == "expected '30', answer has '31'"
    # "not stop at": the stop and the street are denied
    assert guard("The buses will not stop at Elm Street.", "The buses stop at Elm Street.") is not None


# --- opposite states and denials ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        ("Your claim was approved.", "denied", "opposite: expected 'denied', answer says 'approved'"),
        # a third side: still undecided is neither approved nor rejected
        (
            "Your visa application is still under review.",
            "visa application approved",
            "opposite: expected 'approved', answer says 'under review'",
        ),
        (
            "The export has finished.",
            "the export failed",
            "not negated: expected 'export … failed', answer says 'export'",
        ),
        (
            "I've cancelled your plan.",
            "your plan will renew",
            "opposite: expected 'renew', answer says 'cancelled'",
        ),
        ("Prices went up 5%.", "prices fell 5%", "opposite: expected 'fell', answer says 'went up'"),
        (
            "The rent stays at $900.",
            "the rent increases to $900",
            "opposite: expected 'increases', answer says 'stays at'",
        ),
        (
            "The key will stop working today.",
            "the key still works",
            "negated: 'stop working'",  # 'stop' denies what it governs; the families agree
        ),
        (
            "Returns are free of charge.",
            "returns cost money",
            "opposite: expected 'cost', answer says 'free of charge'",
        ),
        (
            "The seed is available now, but the fertilizer is backordered until April 16.",
            "The fertilizer was in stock.",
            "opposite: expected 'in stock', answer says 'backordered' of it",
        ),
        (
            "In March the fleet used 14,870 liters, which is 6% over budget.",
            "March fuel costs came in under budget.",
            "opposite: expected 'under budget', answer says 'over budget'",
        ),
        (
            "Van 7 has the longest route at 9.5 hours, still within the 10-hour driver limit.",
            "Van 7's route exceeds the 10-hour driver limit.",
            "opposite: expected 'exceeds', answer says 'within the'",
        ),
        (
            "Line 3 was down for 6 hours; maintenance replaced the pump and the line restarted at 2:00 PM.",
            "Line 3 is still down.",
            "opposite: expected 'still down', answer says 'restarted'",
        ),
        (
            "The update reset the motion zones, so I redrew them. Motion alerts are back on.",
            "Motion alerts have been turned off.",
            "opposite: expected 'turned off', answer says 'back on'",
        ),
        (
            "The building permit for the addition was issued by the city on May 15.",
            "The city denied the permit.",
            "opposite: expected 'denied', answer says 'issued'",
        ),
        (
            "The committee upheld Chris Dalton's red card, so he is suspended for 2 games.",
            "Chris Dalton's red card was overturned.",
            "opposite: expected 'overturned', answer says 'upheld'",
        ),
        (
            "I dropped MATH 240 for you before the deadline.",
            "The student is still enrolled in MATH 240.",
            "opposite: expected 'still enrolled', answer says 'dropped'",
        ),
        (
            "All 612 unit tests pass and the PR is merged.",
            "some unit tests fail",
            "opposite: expected 'fail', answer says 'pass'",
        ),
        (
            "The store was out of oat milk, so I substituted almond milk.",
            "Oat milk was in stock at the store.",
            "opposite: expected 'in stock', answer says 'was out of'",
        ),
        (
            "Error rates are flat so far.",
            "Error rates have gone up since the flag was turned on.",
            "opposite: expected 'gone up', answer says 'are flat'",
        ),
        (
            "The errors came from the 8.14.2 deploy, so I rolled back to 8.14.1.",
            "The errors were unrelated to the 8.14.2 deploy.",
            "opposite: expected 'unrelated to', answer says 'came from'",
        ),
        (
            "Origin load peaked at 2,300 req/s, well under the 5,000 req/s limit.",
            "Origin load went over the 5,000 req/s limit.",
            "opposite: expected 'went over', answer says 'under the'",
        ),
        (
            "I paused the Win-back Q3 drip campaign after the second email.",
            "The Win-back Q3 campaign is still running.",
            "opposite: expected 'still running', answer says 'paused'",
        ),
        (
            "I rotated the password and revoked the old password at 13:45.",
            "The old password was left active.",
            "opposite: expected 'left active', answer says 'revoked'",
        ),
        (
            "Liam and Ava will lose Premium access then.",
            "Liam and Ava keep Premium access after the change.",
            "opposite: expected 'keep', answer says 'lose'",
        ),
        (
            "Overhead lifting is still off-limits until the re-check.",
            "Overhead lifting is now allowed.",
            "opposite: expected 'allowed', answer says 'off limits'",
        ),
        (
            "Sales were down from $12,000 to $9,500.",
            "sales rose to $9,500",
            "opposite: expected 'rose', answer says 'down from'",
        ),
        (
            "I resolved incident INC-3307 at 03:18 UTC.",
            "Incident INC-3307 is still open.",
            "opposite: expected 'open', answer says 'resolved'",
        ),
        # a change put live or undone
        (
            "The new build threw errors on checkout, so I rolled it back.",
            "The new build is still deployed.",
            "opposite: expected 'deployed', answer says 'rolled it back'",
        ),
        (
            "I deployed the fix to production at 16:05.",
            "The fix was rolled back.",
            "opposite: expected 'rolled back', answer says 'deployed'",
        ),
        (
            "The team decided to revert the new checkout page in March.",
            "The team kept the new checkout page.",
            "opposite: expected 'kept', answer says 'revert'",
        ),
        (
            "I rolled back the API, but the schema migration was left in place.",
            "The schema migration was reverted too.",
            "opposite: expected 'reverted', answer says 'in place' of it",
        ),
        # a place on a waitlist is a booking not yet confirmed
        (
            "Your seat upgrade is still waitlisted.",
            "The seat upgrade was confirmed.",
            "opposite: expected 'confirmed', answer says 'waitlisted'",
        ),
        (
            "The hotel is full tonight, so your room request is on the waitlist.",
            "Your room is confirmed.",
            "opposite: expected 'confirmed', answer says 'on the waitlist'",
        ),
        # what is left in place is kept
        (
            "I archived the old flags but left the billing flag in place.",
            "The billing flag was archived.",
            "opposite: expected 'archived', answer says 'in place' of it",
        ),
        (
            "I cancelled the order with Acme because they missed the deadline.",
            "The Acme order remains in place.",
            "opposite: expected 'in place', answer says 'cancelled'",
        ),
        # a word of three families ("cancelled"), said by the answer in all three, is read in each
        (
            "I cancelled the gym membership, but I kept the magazine subscription.",
            "The magazine subscription was cancelled as well.",
            "opposite: expected 'cancelled', answer says 'kept' of it",
        ),
        # past forms and phrasal verbs of a side: "withdrew", "went live", "voted down", "still on"
        (
            "I called off the Thursday standup because half the team is away.",
            "The Thursday standup is still on.",
            "opposite: expected 'still on .', answer says 'called off'",
        ),
        (
            "I withdrew you from the pottery class and asked for a refund.",
            "You are still enrolled in the pottery class.",
            "opposite: expected 'still enrolled', answer says 'withdrew'",
        ),
        (
            "The members voted down the new parking fee at the meeting.",
            "The parking fee was approved.",
            "opposite: expected 'approved', answer says 'voted down'",
        ),
        (
            "I processed your address change request on Monday.",
            "Your address change request was turned down.",
            "opposite: expected 'turned down', answer says 'processed'",
        ),
        (
            "The bank released the hold on your card this morning.",
            "Your card is still blocked.",
            "opposite: expected 'blocked', answer says 'released'",
        ),
        (
            "The new pricing page went live at noon.",
            "The new pricing page was rolled back.",
            "opposite: expected 'rolled back', answer says 'went live'",
        ),
        (
            "The judge dismissed the speeding ticket.",
            "The speeding ticket was upheld.",
            "opposite: expected 'upheld', answer says 'dismissed'",
        ),
        # a request refused in the clauses about most of what the expected text says was done
        (
            "Housing denied your request to move into the quiet dorm, since the waitlist is closed.",
            "You were enrolled in the quiet dorm.",
            "opposite: expected 'enrolled', answer says 'denied'",
        ),
        # the clause after, in its sentence, that takes the thing up with a pronoun says its state
        (
            "I cancelled the train tickets. The hotel in Lyon is non-refundable, so I kept that booking.",
            "The Lyon hotel booking was cancelled too.",
            "opposite: expected 'cancelled', answer says 'kept' of it",
        ),
        (
            "The printer arrived with a cracked tray, so I refused it; the rest was accepted.",
            "I accepted the printer with the cracked tray.",
            "opposite: expected 'accepted', answer says 'refused' of it",
        ),
        # phrases a shorter form misreads or misses: "is over the" limit (not "is over"), a review's
        # "requested changes", a post "left up"
        (
            "The draft is 14 pages, within the 15-page limit.",
            "The draft is over the page limit.",
            "opposite: expected 'is over the', answer says 'within the'",
        ),
        (
            "I reviewed PR #77 and requested changes: the new parser has no tests.",
            "PR #77 was approved.",
            "opposite: expected 'approved', answer says 'requested changes'",
        ),
        (
            "I deleted the spam comment; the original post was left up.",
            "The original post was removed.",
            "opposite: expected 'removed', answer says 'left up' of it",
        ),
        # "fee" names what a price is said of: "waived the fee" says no price, read first as
        # the fee refused (a waived charge is a charge not made)
        (
            "I moved your internet plan, and Sonic waived the $50 installation fee because you asked.",
            "Sonic charged the $50 installation fee.",
            "negated: 'waived … fee'",
        ),
        # deciding against a thing refuses it
        (
            "I booked a taxi for your Sunday arrival at 8:15 AM.",
            "I decided against booking a taxi.",
            "opposite: expected 'decided against', answer says 'booked'",
        ),
        (
            "I added the roadside assistance option you asked about.",
            "The agent opted against adding roadside assistance.",
            "opposite: expected 'opted against', answer says 'added'",
        ),
        # what is renewed or in effect is active; what is called off is not
        (
            "The heat advisory stays in effect until Sunday noon.",
            "The heat advisory was called off.",
            "opposite: expected 'called off', answer says 'in effect'",
        ),
        (
            "I renewed the lease on flat 3 for another year.",
            "The lease on flat 3 was terminated.",
            "opposite: expected 'terminated', answer says 'renewed'",
        ),
        # what is done away with is not kept; what is left off is left out
        (
            "The old cluster of 6 nodes has been terminated.",
            "The old cluster was kept running.",
            "opposite: expected 'kept', answer says 'terminated'",
        ),
        (
            "I left off the cheese because it was over your limit.",
            "The cheese was included in the order.",
            "opposite: expected 'included', answer says 'left off'",
        ),
        # permission given or withheld
        (
            "Drones are banned in the park this summer.",
            "Drones are permitted in the park.",
            "opposite: expected 'permitted', answer says 'banned'",
        ),
        (
            "Build 4.2 is blocked from shipping until the bug is fixed.",
            "Build 4.2 has been cleared to ship.",
            "opposite: expected 'cleared to', answer says 'blocked'",
        ),
        # what runs as usual goes on; what is frozen has stopped
        (
            "The Tuesday chess club is paused for December.",
            "The chess club is running as usual in December.",
            "opposite: expected 'running as usual', answer says 'paused'",
        ),
        (
            "I have frozen all releases to the payments service until Friday.",
            "Releases to the payments service are continuing.",
            "opposite: expected 'continuing', answer says 'frozen'",
        ),
        # what is ordered is booked, as what is placed is
        (
            "The lamp is backordered until May, but I ordered it anyway to hold your place.",
            "The lamp order was cancelled.",
            "opposite: expected 'cancelled', answer says 'ordered'",
        ),
        (
            "I ordered 20 amps of electrical and a carpet for the booth.",
            "The electrical order was not placed.",
            "negated: expected 'not placed', answer says 'ordered'",
        ),
        # what is put off is neither settled nor agreed; what is finalized is settled
        (
            "Mr. Ortiz decided to hold off on the new gutters for now.",
            "Mr. Ortiz agreed to have the gutters replaced.",
            "opposite: expected 'agreed', answer says 'hold off'",
        ),
        (
            "The budget decision was deferred to next week.",
            "The budget was finalized at the meeting.",
            "opposite: expected 'finalized', answer says 'deferred'",
        ),
        (
            "The proposal to repave the lot was tabled until June.",
            "The repaving was confirmed.",
            "opposite: expected 'confirmed', answer says 'tabled'",
        ),
        # what goes as planned goes ahead
        (
            "I paused the second mailing to the EU list because of the consent issue.",
            "The second mailing went out to the EU list as planned.",
            "opposite: expected 'as planned', answer says 'paused'",
        ),
        (
            "The container is still on board and will be unloaded in Hamburg as planned.",
            "The unloading in Hamburg has been cancelled.",
            "opposite: expected 'cancelled', answer says 'as planned'",
        ),
        # an unsuccessful application is a refusal as well as a failure
        (
            "Congratulations, you have been awarded the Miller research grant.",
            "Your grant application was unsuccessful.",
            "opposite: expected 'unsuccessful', answer says 'awarded'",
        ),
        (
            "I enrolled Max in the dental plan effective May 1.",
            "Max's enrollment in the dental plan was unsuccessful.",
            "opposite: expected 'unsuccessful', answer says 'enrolled'",
        ),
        # what is reversed or voided is undone; what is left standing is kept
        (
            "The bank reversed the late fee as a courtesy.",
            "The bank kept the late fee in place.",
            "opposite: expected 'kept', answer says 'reversed'",
        ),
        (
            "I voided invoice #88 because it billed the wrong hours.",
            "Invoice #88 was left standing.",
            "opposite: expected 'left standing', answer says 'voided'",
        ),
        # what is in transit has not been delivered yet
        (
            "Your parcel is out for delivery today and expected by 6 PM.",
            "The parcel has already been delivered.",
            "opposite: expected 'delivered', answer says 'out for delivery'",
        ),
        (
            "The first crate was delivered on Monday, but the second is still in transit.",
            "Both crates have been delivered.",
            "opposite: expected all 'delivered', answer also says 'in transit'",
        ),
        # the way a thing is sent or done: by text is not by email, online is not on paper
        (
            "Your class is full, so you're on the waitlist; if a seat frees up we'll text you.",
            "If a seat frees up, we will tell you by email.",
            "opposite: expected 'by email', answer says 'text you'",
        ),
        (
            "Your visa form was submitted online this morning.",
            "The visa form was mailed in on paper.",
            "opposite: expected 'mailed in', answer says 'submitted online'",
        ),
    ],
)
def test_an_answer_saying_another_state_is_vetoed(actual: str, expected: str, reason: str) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("Returns are free of charge.", "free returns"),  # the phrase is read once: not also "charge"
        ("It costs $12. Feel free to ask anything.", "costs $12"),  # "feel free" says no price
        ("The status moved from pending to approved.", "approved"),  # the answer says both sides
        # the clause about the API says it was undone; "in place of" keeps nothing
        ("I rolled back the API, but the schema migration was left in place.", "The API was rolled back."),
        ("I put the new logo in place of the old one.", "The old logo was removed."),
        ("You were on the waitlist until Monday; your spot is now confirmed.", "Your spot is confirmed."),
        # "until cancelled" says how long, not that it was cancelled
        ("The sell order stays in place as a good-til-cancelled order.", "The sell order is still in place."),
        ("I decided against the taxi and booked the shuttle instead.", "The shuttle was booked."),
        ("The strike was called off; the old contract remains in effect.", "The contract is in effect."),
        ("I kept the staging bucket and purged the temp bucket.", "The staging bucket was kept."),
        ("Legal signed off on the contract terms on Monday.", "Legal approved the contract terms."),
        ("The pool closed for a week, but lessons are running as usual.", "Lessons are running as usual."),
        ("I cancelled the blue mug and ordered the green one.", "The green mug was ordered."),
        ("The roster was finalized on Friday after the swap was put off.", "The roster was finalized."),
        ("The kickoff was moved to Tuesday; the demo goes ahead as planned.", "The kickoff was moved."),
        ("Your application was unsuccessful this round.", "The application was turned down."),
        ("I voided the duplicate charge and kept the first one in place.", "The first charge was kept."),
        (
            "I cancelled the gym membership, but I kept the magazine subscription.",
            "The gym membership was cancelled.",
        ),
        ("The parcel was in transit on Sunday and was delivered on Monday.", "The parcel was delivered."),
        ("The Thursday standup is still on, and I booked the room.", "The Thursday standup is still on."),
        (
            "I cancelled the train tickets. The hotel in Lyon is non-refundable, so I kept that booking.",
            "The Lyon hotel booking was kept.",
        ),
        (
            "I cancelled the train tickets. The hotel in Lyon is non-refundable, so I kept that booking.",
            "The train tickets were cancelled.",
        ),
        (
            "The printer arrived with a cracked tray, so I refused it; the rest was accepted.",
            "The rest of the delivery was accepted.",
        ),
        ("The draft is 18 pages, which is over the 15-page limit.", "The draft exceeds the page limit."),
        ("I reviewed PR #77 and requested changes: the new parser has no tests.", "PR #77 was turned down."),
        ("I deleted the spam comment; the original post was left up.", "The original post was kept."),
        (
            "I moved your internet plan, and Sonic waived the $50 installation fee because you asked.",
            "The $50 installation fee was not charged.",
        ),
        (
            "I moved your internet plan, and Sonic waived the $50 installation fee because you asked.",
            "Sonic waived the installation fee.",
        ),
        # one thing refused, another done
        (
            "The clinic declined the walk-in slot, but I booked you an appointment with Dr. Reyes on Friday.",
            "You are booked with Dr. Reyes on Friday.",
        ),
        (
            "The members voted down the new parking fee at the meeting.",
            "The members turned down the parking fee.",
        ),
        ("The new pricing page went live at noon.", "The new pricing page was deployed."),
        ("The judge dismissed the speeding ticket.", "The speeding ticket was overturned."),
        ("I processed your address change request on Monday.", "Your address change request was completed."),
        ("If a seat frees up we'll email you.", "If a seat frees up, we will tell you by email."),
        ("Your visa form was submitted online this morning.", "The visa form was filed online."),
    ],
)
def test_states_said_alike_or_not_at_all_pass_the_guard(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "The meeting has been set up in the large conference room.",
            "the meeting is in the small conference room",
            "opposite: expected 'small', answer says 'large'",
        ),
        (
            "The candidate starts as a senior engineer in the data team.",
            "starts as a junior engineer",
            "opposite: expected 'junior', answer says 'senior'",
        ),
        (
            "We moved you to a larger room.",
            "a smaller room",
            "opposite: expected 'smaller', answer says 'larger'",
        ),
        (
            "Your replacement is the black model.",
            "the white model",
            "opposite: expected 'white', answer says 'black'",
        ),
        (
            "The answer you gave is incorrect.",
            "the answer is correct",
            "opposite: expected 'correct', answer says 'incorrect'",
        ),
        (  # opposites agent answers use that WordNet does not relate (tools/build_antonyms.py ADDED)
            "Potassium is low at 95 ppm, while phosphorus is adequate.",
            "Phosphorus is deficient.",
            "opposite: expected 'deficient', answer says 'adequate'",
        ),
        (
            "You are within the 30-day window.",
            "The purchase was outside the 30-day refund window.",
            "opposite: expected 'outside', answer says 'within'",
        ),
        (  # "same" is a stopword, but the end of "different" no content word says
            "The delivery moved to Thursday. The matching chairs will arrive on the same truck.",
            "The matching chairs will come on a different truck.",
            "opposite: expected 'different', answer says 'same'",
        ),
        (  # an adverb in "-ically" is its adjective's: "automatically" (stem "automatical") is "automatic"
            "Your membership will automatically resume on August 1.",
            "You will have to resume the membership manually.",
            "opposite: expected 'manually', answer says 'automatically'",
        ),
        (
            "You will pay the bill manually each month.",
            "The bill is paid automatically.",
            "opposite: expected 'automatically', answer says 'manually'",
        ),
    ],
)
def test_an_answer_saying_the_antonym_is_vetoed(actual: str, expected: str, reason: str) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        # the expected word is said too: the antonym is about something else
        ("A small fee applies; the large file is fine.", "a small fee"),
        # the antonym in a sentence about something else
        ("Your room is on the third floor. Large groups should book ahead.", "a small room"),
        # the antonym negated says the expected state
        ("The room is not large.", "a small room"),
        # "not the same" says "different"; a "same" in a sentence about something else says nothing
        (
            "The hearing moved to courtroom 4B, which is not the same courtroom.",
            "The hearing is in a different courtroom.",
        ),
        (
            "I moved your dentist appointment. The same day I renewed your licence.",
            "It moved to a different clinic.",
        ),
        # the same adverb: "automatically" is read as "automatic" on both sides
        ("Your membership will automatically resume on August 1.", "The membership resumes automatically."),
        # converses say one event from either side
        ("We will give you a refund.", "you take a refund"),
        # a word of many senses ("back": front, ahead, advance) is not guarded
        ("We will get back to you about the package.", "the package is at the front door"),
    ],
)
def test_antonyms_said_elsewhere_negated_or_ambiguous_pass_the_guard(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # both ends of the pair are said: "wrong" says "incorrect" in another word
            "I checked the entries: most dates are correct, but some entries have wrong dates.",
            "Some entries had incorrect dates.",
            None,
        ),
        (
            "I checked the entries: the dates are correct.",
            "Some entries had incorrect dates.",
            "opposite: expected 'incorrect', answer says 'correct'",
        ),
    ],
)
def test_an_answer_saying_both_ends_of_an_antonym_pair_says_the_expected_end(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # both ends said, of different things: the clause about the expected thing says the other
            "Your weakest domain was cost optimization, whereas security was your strongest.",
            "Cost optimization was your strongest domain.",
            "opposite: expected 'strongest', answer says 'weakest'",
        ),
        (
            "I checked the new overtime formula and it is correct. The original overtime formula was wrong.",
            "The original overtime formula was correct.",
            "opposite: expected 'correct', answer says 'wrong'",
        ),
        # ... and the expected end, said of the expected thing
        (
            "Your weakest domain was security, whereas cost optimization was your strongest.",
            "Cost optimization was your strongest domain.",
            None,
        ),
        # an expected text naming a lack: the other end is what was there
        (
            "The job failed because the trust policy only listed the old account. I added the new account.",
            "The trust policy was missing the new account.",
            None,
        ),
        # a date says when, not what: "June" does not make "starting June 10" the clause about it
        (
            "I assigned the trainings to the new associates starting June 10; each must finish by June 24.",
            "The trainings must be finished by June 24.",
            None,
        ),
    ],
)
def test_an_antonym_said_of_the_expected_thing_is_vetoed_beside_the_expected_word(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # "more" and "less" are the comparatives of every amount
            "I found the Nimbus 3, which is in stock and costs $15 more.",
            "The Nimbus 3 is cheaper.",
            "opposite: expected 'cheaper', answer says 'more'",
        ),
        (
            "That's $220 a year less than your current policy.",
            "The quote costs more than your current policy.",
            "opposite: expected 'more', answer says 'less'",
        ),
        (  # a verb of change says the way too
            "I restarted the replication process, and lag has dropped back under 2 seconds.",
            "Replication lag has grown since the restart.",
            "opposite: expected 'grown', answer says 'back under'",
        ),
        # ... unless the answer says both ways ("jumped to 7% … back under 0.5%")
        (
            "Error rates jumped to 7% after the deploy. Error rates are back under 0.5%.",
            "Errors have fallen.",
            None,
        ),
        # the same way in another word
        (
            "The quote is $220 a year less than your current policy.",
            "The quote is cheaper than your current policy.",
            None,
        ),
        (  # the other way said of something else, in a sentence sharing fewer expected words
            "Starter churn was 6.8%, against 2.1% for Pro. Annual-plan customers churned far less.",
            "Starter customers churned at a higher rate than Pro customers.",
            None,
        ),
        # a "more" that compares nothing
        ("The Nimbus 3 costs no more than the Nimbus 2.", "The Nimbus 3 is cheaper than the Nimbus 2.", None),
    ],
)
def test_an_answer_comparing_the_other_way_is_vetoed(actual: str, expected: str, reason: str | None) -> None:
    assert guard(actual, expected) == reason


def test_the_antonym_table_leaves_out_converses_and_words_of_many_senses() -> None:
    table = antonyms()
    assert "larg" in table["small"] and "senior" in table["junior"]
    assert "take" not in table.get("give", ()) and "sell" not in table.get("buy", ())
    # "back" (front, ahead, advance) and "light" (heavy, dark, unlit): which antonym depends on the sense
    assert "front" not in table.get("back", ()) and "dark" not in table.get("light", ())
    # ... but the antonym a prefix makes holds in every sense, and a few agent words are added
    assert (
        "inactiv" in table["activ"] and "incorrect" in table["correct"] and "optional" in table["mandatory"]
    )


def test_a_word_said_both_ways_is_read_in_the_clause_about_the_expected_thing() -> None:
    answer = "The warranty covers manufacturing defects for 2 years but does not cover accidental damage."
    assert guard(answer, "manufacturing defects are not covered") == (
        "not negated: expected 'not covered', answer says 'covers'"
    )
    assert guard(answer, "covers manufacturing defects") is None
    assert guard(answer, "accidental damage is not covered") is None
    # no clause says the word about another expected word: the answer-wide polarity decides, as before
    assert guard("We refund fees. We do not refund shipping.", "refunds are possible") is None


@pytest.mark.parametrize(
    ("actual", "rest_denied", "contradiction", "never_denied"),
    [
        # "the other sensors", "no more charges": denied of the rest, said of one, as the answer says it
        (
            "The leak sensor under the sink triggered at 3:12 am; moisture readings are dry, and no other "
            "sensors went off.",
            "None of the other sensors were triggered.",
            "None of the sensors were triggered.",
            "The sink sensor triggered, and the hallway sensor went off too.",
        ),
        (
            "The box for Friday couldn't be stopped, so you'll still be charged $59.99 for it, but there "
            "will be no further charges.",
            "No more charges will occur after that box.",
            "No charges will occur for that box.",
            "You'll be charged $59.99 for the box on Friday and charged again for the next one.",
        ),
    ],
)
def test_a_word_denied_of_the_rest_may_be_said_of_one(
    actual: str, rest_denied: str, contradiction: str, never_denied: str
) -> None:
    assert guard(actual, rest_denied) is None
    assert guard(actual, contradiction) is not None
    # an answer that never denies it still contradicts the denial of the rest
    assert guard(never_denied, rest_denied) is not None


_KITCHEN = (
    "I checked with the kitchen: the pad thai contains peanuts and is cooked in a shared wok, so it isn't "
    "safe for a peanut allergy. The green curry has no peanuts."
)
_HAUL_AWAY = "It passed, but the old unit wasn't hauled away because the haul-away fee wasn't in the order."
_VOIDED = (
    "I called Cigna about the duplicate charge on your March 12 lab work: the claim had been processed twice "
    "by mistake, and they've voided the second one (claim 7781-B), so the $148 you were billed a second time "
    "is no longer owed."
)


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            _KITCHEN,
            "There are no peanuts in the pad thai.",
            "not negated: expected 'no peanuts', answer says 'peanuts'",
        ),
        (_KITCHEN, "The green curry has no peanuts.", None),
        (_KITCHEN, "the pad thai has peanuts", None),
        (_HAUL_AWAY, "The old unit was hauled away.", "negated: 'wasn't hauled'"),
        (_HAUL_AWAY, "The old unit is still there.", None),
        # "second" is not what the expected negation is about (the paying is): the clause decides whole
        (_VOIDED, "The user doesn't have to pay the second $148 charge.", None),
    ],
)
def test_a_reason_or_result_in_a_clause_says_its_own_polarity(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


_RENTAL = "Your pickup is confirmed for Saturday. Unlimited mileage is included, but the insurance is not."
_PAYROLL = (
    "Omar Reyes's overtime is included, but Jenna Park's isn't because her timesheet was still unapproved."
)


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (_RENTAL, "insurance is included", "negated: 'insurance … not'"),
        (_RENTAL, "Insurance costs extra.", None),  # another predicate: the left-out one is not said
        (_PAYROLL, "Jenna Park's overtime was included in this payroll.", "negated: 'Jenna … isn't'"),
        (_PAYROLL, "Jenna's overtime deferred", None),
    ],
)
def test_a_denial_with_its_predicate_left_out_denies_that_predicate(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


def test_a_word_free_suffix_denies_the_word_before_it_only() -> None:
    menu = "The pad thai contains peanuts and cannot be made without them. The green curry is peanut-free."
    assert guard(menu, "the green curry has no peanuts") is None
    assert guard(menu, "the green curry contains peanuts") == "negated: 'peanut-free'"
    assert guard(menu, "the pad thai is peanut-free") is not None
    assert guard("The peanut-free curry is ready.", "the curry is ready") is None  # the curry is said
    assert guard("Transfers are fee-free.", "transfers cost a fee") == "negated: 'fee-free'"  # no price said


def test_what_expected_says_in_a_condition_is_not_a_claim() -> None:
    answer = "I opened the pull request. CI is still running, so it has not been merged."
    assert guard(answer, "the upgrade waits for CI before it can be merged") is None
    assert guard(answer, "the pull request was merged") == "negated: 'not … merged'"


def test_not_yet_is_one_negation() -> None:
    assert guard("Your certificate is available to download.", "the certificate is not yet available") == (
        "not negated: expected 'not available', answer says 'available'"
    )
    assert guard("The certificate is not yet available.", "certificate not available") is None


def test_no_need_to_denies_what_is_needed() -> None:
    answer = "Your appointment is booked. Please arrive 15 minutes early."
    assert guard(answer, "there is no need to arrive early") == (
        "not negated: expected 'no … arrive', answer says 'arrive'"
    )
    # another negation whose first word the answer does not say is left to the score
    assert (
        guard(
            "It is still in our warehouse and will not ship until next week.", "it hasn't left the warehouse"
        )
        is None
    )


@pytest.mark.parametrize(
    ("answer", "denied", "veto", "said"),
    [
        (
            "I quarantined the test after it failed 9 of the last 50 runs with a race in the mock server.",
            "the flakiness was not caused by a race condition",
            "not negated: expected 'not … race', answer says 'race'",
            "the test failed because of a race",
        ),
        (
            "I kept the hourly ad_spend DAG unchanged because the dashboard depends on it.",
            "the dashboard does not rely on the ad_spend DAG",
            "not negated: expected 'not … ad', answer says 'ad'",
            "the ad_spend DAG was kept hourly",
        ),
    ],
)
def test_a_denied_link_denies_what_it_links_to(answer: str, denied: str, veto: str, said: str) -> None:
    assert guard(answer, denied) == veto
    assert guard(answer, said) is None
    # an answer that denies the link in other words still passes
    assert (
        guard(
            "The dashboard no longer uses the ad_spend DAG.",
            "the dashboard does not rely on the ad_spend DAG",
        )
        is None
    )


@pytest.mark.parametrize(
    ("answer", "denied", "veto", "said"),
    [
        (
            "Your train was cancelled. You're entitled to a Delay Repay claim as you'll arrive late.",
            "you aren't eligible for Delay Repay",
            "not negated: expected 'aren't … Delay', answer says 'Delay'",
            "you can claim Delay Repay",
        ),
        (
            "Your refinance was declined, but you're welcome to reapply after 90 days.",
            "you are not allowed to reapply",
            "not negated: expected 'not … reapply', answer says 'reapply'",
            "you can reapply after 90 days",
        ),
    ],
)
def test_a_denied_permission_denies_what_it_permits(answer: str, denied: str, veto: str, said: str) -> None:
    assert guard(answer, denied) == veto
    assert guard(answer, said) is None
    # an answer that denies it in other words still passes
    assert (
        guard(
            "Your refinance was declined and you can't reapply this year.", "you are not allowed to reapply"
        )
        is None
    )


def test_both_sides_said_the_clause_about_the_expected_thing_decides() -> None:
    answer = "Roaming is on. Data in the EU is free, but calls to the US cost $0.25 per minute."
    assert guard(answer, "calls to the US are free") == "opposite: expected 'free', answer says 'cost' of it"
    assert guard(answer, "data in the EU is free") is None
    # the side said of a pronoun may be said of the expected thing: no veto
    assert (
        guard("Your account was locked after five failed logins. I've unlocked it now.", "account unlocked")
        is None
    )


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # "and" before a subject ends the pronoun's clause: "it succeeded | and the sales report ..."
            "The nightly import failed at 02:00 because the feed was late. I reran it at 03:00; it succeeded "
            "and the sales report now shows the new totals.",
            "The rerun of the nightly import succeeded.",
            None,
        ),
        (  # a time or place after the side says where it failed, not what: "it failed | at frame 1,200"
            "The 1080p render of 'Promo_v2' finished in 40 minutes on the farm. I also tried the HDR "
            "version, but it failed at frame 1,200 with a memory error.",
            "HDR render failed",
            None,
        ),
        (  # no pronoun: the side is said of the HDR render itself
            "The 1080p render of 'Promo_v2' finished in 40 minutes on the farm, and the HDR render failed.",
            "HDR render finished",
            "negated: 'HDR … failed'",
        ),
        (
            "Roaming is on. Data in the EU is free, but calls to the US cost $0.25 per minute.",
            "calls to the US are free",
            "opposite: expected 'free', answer says 'cost' of it",
        ),
    ],
)
def test_what_a_pronoun_says_ends_at_another_subject_or_a_time_or_place(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # the amount is said of guest tickets, with no price word: "free" is said of member tickets
            "Member tickets are free. Guest tickets are $15 for adults.",
            "Adult guest tickets cost fifteen dollars.",
            None,
        ),
        (  # ... but here the clause with the amount is about member tickets
            "Guest tickets are free. Member tickets are $15 for adults.",
            "Adult guest tickets cost fifteen dollars.",
            "opposite: expected 'cost', answer says 'free'",
        ),
        (
            "I deleted the 14 unused buckets; the other 3 belong to the data team, so I left them for now.",
            "The data team's 3 buckets were kept.",
            None,
        ),
        (
            "I deleted the data team's 3 buckets.",
            "The data team's 3 buckets were kept.",
            "opposite: expected 'kept', answer says 'deleted'",
        ),
        (  # a number that names a thing says nothing of its state
            "Line 3 was down for an hour; I restarted it.",
            "Line 3 is still down.",
            "opposite: expected 'still down', answer says 'restarted'",
        ),
    ],
)
def test_a_clause_saying_the_expected_amount_without_a_state_is_what_the_state_is_about(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # the fall is said in the reason, of the sign-ups
            "I stopped the pricing trial because sign-ups dropped by a third. The trial data is saved for "
            "the sales team.",
            "The trial data was kept for the sales team.",
            None,
        ),
        (
            "I dropped the trial data for the sales team because nobody used it.",
            "The trial data was kept for the sales team.",
            "opposite: expected 'kept', answer says 'dropped'",
        ),
        (  # the answer says both: "stuck" is said in the reason, of the worker
            "Reports were late because the upload worker had been stuck on a bad file since 07:45, backing "
            "up 900 uploads. I skipped that file, and the backlog cleared by 09:20.",
            "The upload backlog has cleared.",
            None,
        ),
        (
            "I skipped the bad file, but the upload backlog is still stuck.",
            "The upload backlog has cleared.",
            "opposite: expected 'cleared', answer says 'stuck'",
        ),
    ],
)
def test_a_state_said_in_a_reason_is_said_of_what_the_reason_names(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # the answer says the whole count passed: "still waiting" is of another thing
            "I fixed the config and all 9 smoke tests passed; the release is still waiting on sign-off.",
            "All 9 smoke tests passed.",
            None,
        ),
        (
            "The smoke tests passed on staging, but two of them failed on production.",
            "All smoke tests passed.",
            "opposite: expected all 'passed', answer also says 'failed'",
        ),
        (  # "the failed deploys" named them by what they were; "5 of 5 passed" says the count passed
            "Deploys were failing because of a stale token. I rotated it and re-ran the failed deploys; "
            "5 of 5 passed.",
            "All 5 re-run deploys passed.",
            None,
        ),
        (
            "I re-ran the 5 failed deploys; 3 of 5 passed.",
            "All 5 re-run deploys passed.",
            "expected all, answer says '3 of … 5'",
        ),
    ],
)
def test_a_side_said_of_the_whole_count_is_said_of_all(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "Departs at 3:40 PM from gate B12; seat 14C.",
            "departs from gate C12",
            "expected 'C12', answer has 'B12'",
        ),
        (
            "Your renewal for Apartment 4B is done.",
            "the renewal is for Apartment 4D",
            "expected '4D', answer has '4B'",
        ),
        ("Your premium is increasing from $1,240 to $1,315.", "the premium is going down", None),
        ("Weekly active users rose 8.4%.", "weekly active users declined", None),
        ("Your flight is delayed by 45 minutes.", "the flight is ahead of schedule", None),
        ("I've extended your rental by two days.", "your rental has been shortened", None),
        ("It should arrive today by 8 PM.", "the package will arrive tomorrow", None),
        (
            "The Saturday workshop is full, so you are on the waitlist.",
            "spots are available on Saturday",
            None,
        ),
        ("Your federal refund of $1,248 is scheduled.", "you owe $1,248", None),
        ("Autopay is on, so it will be charged on June 15.", "autopay is turned off", None),
        (
            "You are enrolled for the spring term.",
            "enrolled for the autumn term",
            "expected 'autumn', answer has 'spring'",
        ),
        ("Good morning! The technician comes in the afternoon.", "the technician comes in the evening", None),
        (
            "Attendance is optional.",
            "attendance is mandatory",
            "opposite: expected 'mandatory', answer says 'optional'",
        ),
        ("We're aware of an internet outage in 94110.", "internet service in 94110 is working", None),
    ],
)
def test_changed_codes_and_states_are_vetoed(actual: str, expected: str, reason: str | None) -> None:
    found = guard(actual, expected)
    assert found is not None and (reason is None or found == reason)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (
            "The seller declined your offer and accepted a higher bid.",
            "offer declined",
        ),  # a refusal, not a fall
        ("Gate B12, seat 14C, boarding at 10am.", "boarding at 10am from gate B12"),  # a time is no code
        ("I ran the suite: 142 tests passed and 3 failed.", "3 tests failed"),  # "3 failed" is the 3 tests
        ("Your account was locked after five failed login attempts.", "locked after failed logins"),
    ],
)
def test_refusals_times_and_failures_said_alike_pass_the_guard(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None
    assert changed_role(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (  # "tests" said both ways; "3 failed" is the failure of three of them
            "I ran the full test suite: 1,284 tests passed, 3 failed, and 12 were skipped. "
            "I didn't modify any tests.",
            "three tests failed",
            None,
        ),
        (
            "I added a guard that skips tracking with a warning when the key is missing. "
            "I haven't touched tracking otherwise.",
            "tracking is skipped when the key is absent",
            None,
        ),
        (  # the clause about the key says tracking, and no skipping
            "I added a guard that logs tracking with a warning when the key is missing. "
            "I haven't touched tracking otherwise.",
            "tracking is skipped when the key is absent",
            "not negated: expected 'tracking … skipped', answer says 'tracking'",
        ),
    ],
)
def test_a_failure_said_alike_in_a_clause_is_said_when_the_answer_says_the_word_both_ways(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


def test_an_event_said_only_in_a_condition_has_not_happened() -> None:
    answer = "Your claim is on hold until we receive the police report."
    assert guard(answer, "we received the police report") == (
        "condition: expected 'received', answer says 'receive' only in a condition"
    )
    assert guard(answer, "the claim waits for the police report") is None  # the report itself is said


def test_a_refusal_is_not_said_by_an_answer_that_says_it_was_done() -> None:
    answer = "I sent the dishwasher request. The property manager scheduled a repair technician."
    assert guard(answer, "The property manager declined the maintenance request.") == (
        "opposite: expected 'declined the', answer says 'scheduled'"
    )
    # a refusal in the answer as well, or one said of another thing, is no such veto
    answer = "The property manager declined the request, so I scheduled a plumber myself."
    assert guard(answer, "The property manager declined the maintenance request.") is None
    answer = "The hotel declined the upgrade; your booking is confirmed."
    assert guard(answer, "the booking is confirmed") is None


def test_all_is_not_said_by_an_answer_that_leaves_one_out() -> None:
    answer = "The Q3 report is done: all 5 services met their targets except ledger-writer."
    assert (
        guard(answer, "All five payments services met their Q3 targets.")
        == "expected all, answer says 'except …'"
    )
    assert (
        guard(
            "The Q3 report is done: all 5 services met their targets.", "all five services met their targets"
        )
        is None
    )


def test_still_so_is_not_said_by_an_answer_that_ended_it() -> None:
    answer = (
        "The cells were formatted as text. I converted column E to number format and re-entered the formulas."
    )
    assert guard(answer, "Column E is still formatted as text.") == (
        "opposite: expected 'still formatted', answer says 'converted'"
    )
    # "still" said of it in the answer too, or what is still to be done
    answer = "I rotated the keys on the build servers; two were unreachable, so they still have the old key."
    assert guard(answer, "two build servers still have the old key") is None
    answer = "I converted column E to number format; the totals row still needs a formula."
    assert guard(answer, "the totals row still needs a formula") is None


def test_the_verb_that_ended_a_state_is_named_not_a_noun_of_change() -> None:
    """A word of ending after a determiner is a noun ("the change", "the update"): the reason names
    the verb the answer said instead."""
    answer = "I added a cache step to the workflow. The build time dropped, and the change is merged to main."
    assert guard(answer, "The caching change is still waiting to be merged.") == (
        "opposite: expected 'still waiting', answer says 'merged'"
    )
    answer = "Column E went back to general format after the update."
    assert guard(answer, "column E is still formatted as text") == (
        "opposite: expected 'still formatted', answer says 'went'"
    )


@pytest.mark.parametrize(
    ("answer", "also", "veto"),
    [
        (
            "I raised the rent on the Oak Street flats by 4%. "
            "The rent on the Elm Street flat was not changed.",
            "The rent on the Elm Street flat was raised as well.",
            "also: expected 'The rent on the Elm Street flat was raised as well.', "
            "answer says 'The rent on the Elm Street flat was not changed'",
        ),
        (
            "I translated the user guide into English, and I left the legal appendix in German.",
            "The legal appendix was translated along with the guide.",
            "also: expected 'The legal appendix was translated along with the guide.', "
            "answer says 'I left the legal appendix in German'",
        ),
    ],
)
def test_an_also_is_not_said_by_an_answer_that_left_the_thing_as_it_was(
    answer: str, also: str, veto: str
) -> None:
    assert guard(answer, also) == veto
    # the answer says it went the way of the others, or says the "also" itself
    answer = "I raised the rent on the Oak Street flats and on the Elm Street flat by 4%."
    assert guard(answer, "The rent on the Elm Street flat was raised as well.") is None
    answer = "I translated the user guide and the legal appendix into English."
    assert guard(answer, "The legal appendix was translated along with the guide.") is None
    assert guard("The heater broke, and the spare is also broken.", "the spare heater is also broken") is None


def test_a_thing_said_as_the_subject_of_a_denial_is_not_said_doing_another_thing() -> None:
    answer = "The airline refunded your fare. The bonus points from the trip won't be credited."
    assert guard(answer, "You still collect the bonus points for the trip.") == "negated: 'bonus … won't'"
    # a denied lack says the thing is there; a negation in a relative clause is said of another noun
    answer = "The airline refunded your fare, and the bonus points from the trip were not deleted."
    assert guard(answer, "the bonus points from the trip were kept") is None
    answer = "I filed a claim for the bonus points that never arrived."
    assert guard(answer, "A claim was filed for the bonus points.") is None
    # a thing said to be where it was is said by a denial of its removal
    assert guard("The old sofa wasn't collected today.", "The old sofa is still there.") is None


def test_the_whole_is_not_said_by_a_part() -> None:
    answer = "I cancelled 12 of the 30 rooms in the wedding block."
    assert guard(answer, "The whole wedding block was cancelled.") == "expected all, answer says '12 of … 30'"
    assert guard(answer, "12 rooms of the wedding block were cancelled") is None


def test_all_is_not_said_when_the_answer_says_another_side_too() -> None:
    answer = "I ran the suite: 142 tests passed and 3 failed."
    assert guard(answer, "all tests passed") == "opposite: expected all 'passed', answer also says 'failed'"
    assert guard(answer, "142 tests passed") is None


def test_a_number_with_a_multiplier_is_one_value() -> None:
    assert guard("$300 was withheld for carpet cleaning.", "three hundred dollars were kept") is None
    assert (
        guard("$30 was withheld.", "three hundred dollars were kept")
        == "expected 'three hundred', answer has '$30'"
    )
    assert guard("The round raised $6,000,000.", "raised $6 million") is None


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("The account unlocks in 24 hours.", "it unlocks in twenty-four hours"),
        ("We now have 120 users.", "a hundred and twenty users"),
        ("The order has 24 eggs.", "two dozen eggs"),
        ("CPU stayed above 85% for 15 minutes.", "usage was over 85 percent"),
        ("Your bill was up 12% from September.", "spending rose by twelve percent"),
        ("The average order value came out to $62.40.", "about sixty-two dollars and forty cents"),
        ("Keep the last 30 days of dumps.", "thirty days of dumps are kept"),
    ],
)
def test_a_number_in_words_is_its_value(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


def test_a_round_figure_is_said_by_a_value_that_rounds_to_it() -> None:
    answer = "62.4 million rows were reloaded. The logs show 2,314 errors; retention was 58%."
    assert guard(answer, "About 62 million rows were reloaded.") is None
    assert guard(answer, "about 2,300 errors appear in the logs") is None
    assert guard(answer, "retention of around 60%") is None
    assert guard(answer, "62 million rows were reloaded") is not None  # said exactly: another number
    assert guard(answer, "about 3,300 errors") == (
        "expected '3,300', answer has '62.4 million', '2,314', '58%'"
    )
    assert guard("There were 15 errors.", "about 14 errors") is not None  # 15 is not within half a unit


def test_nothing_after_a_verb_denies_the_verb_not_what_follows() -> None:
    answer = "I contested your $65 ticket from March 3 on Elm Street; the city dismissed it. Nothing is owed."
    assert guard(answer, "You owe nothing on the Elm Street ticket.") is None
    assert guard("You owe $65 on the Elm Street ticket.", "You owe nothing on the Elm Street ticket.") == (
        "not negated: expected 'owe nothing', answer says 'owe'"
    )


def test_a_count_of_none_is_no() -> None:
    answer = "I rescanned with Trivy (0 critical, 2 low) and redeployed."
    assert guard(answer, "Trivy reports no critical vulnerabilities") is None
    assert guard(answer, "zero critical vulnerabilities") is None
    assert guard(answer, "the rescan still found a critical vulnerability") == "negated: 'zero critical'"
    assert guard("Trivy reports no critical issues.", "0 critical issues") is None
    assert guard("Trivy reports 3 critical issues.", "0 critical issues") is not None
    # a value, not a count of none: after "to", or "$0"
    assert guard("I scaled it down to 0 nodes.", "the cluster was scaled to zero") is None
    assert guard("It costs $0 to change.", "free to change") is None


def test_a_range_of_minutes_and_zero_reached_are_values_not_a_time_or_a_denial() -> None:
    # "11 minutes to 4" would be the time 3:49, but "4 minutes" is an amount
    assert guard("The build time dropped from 11 minutes to 4 minutes.", "builds now take 4 minutes") is None
    assert guard("Errors dropped to zero after the rollback.", "errors fell to 0") is None
    assert (
        guard("Errors dropped to zero after the rollback.", "errors went to zero after the rollback") is None
    )
    assert (
        guard("Errors dropped to 5 after the rollback.", "errors fell to zero")
        == "expected 'zero', answer has '5'"
    )
    assert guard("We charge zero fees.", "a fee is charged") == "negated: 'zero fees'"


def test_a_state_that_may_be_or_is_said_of_another_clause_is_no_state_said() -> None:
    answer = "Your booking is confirmed for 3 nights. Free cancellation is available until 6 PM on June 10."
    assert guard(answer, "The booking can be cancelled for free until 6 PM on June 10.") is None
    assert guard("Your booking is confirmed.", "the booking was cancelled") is not None
    # "free" is said of the installation, in its own clause
    answer = "Installation is free under the promotion, and your 1 Gig plan will be $80 a month."
    assert guard(answer, "The 1 Gig plan costs $80 a month.") is None


def test_a_changed_number_in_words_is_quoted_as_written() -> None:
    assert guard("The account unlocks in 24 hours.", "in thirty-four hours") == (
        "expected 'thirty-four', answer has '24'"
    )
    assert guard("Your bill was up 12% from September.", "up fifteen percent") == (
        "expected 'fifteen percent', answer has '12%'"
    )
    # "one" is mostly a pronoun: it stays a word
    assert guard("They took pictures at one park.", "pictures at one park") is None


def test_what_the_answer_says_only_in_a_condition_does_not_contradict_a_denial() -> None:
    answer = "The Saturday workshop is full, so you are on the waitlist. If a spot opens up, we'll text you."
    assert guard(answer, "there are no open seats on Saturday") is None


def test_what_the_answer_says_will_be_done_is_not_done() -> None:
    answer = "They ship on November 18 and your card will be charged only when they ship."
    assert guard(answer, "your card has already been charged") == (
        "tense: expected 'charged' as done, answer says 'will … charged'"
    )
    assert guard("We'll drop the old tables next Monday.", "the old tables were dropped") is not None
    assert guard(answer, "your card will be charged when they ship") is None
    assert guard("Your card was charged and the order will ship Monday.", "your card was charged") is None


def test_a_denied_state_said_in_other_words_is_vetoed() -> None:
    answer = "Good news: Ethan has been accepted into the Advanced Placement Biology course."
    assert guard(answer, "Ethan was not admitted to the course") == (
        "negated: expected 'not admitted', answer says 'accepted'"
    )
    # a phrase cue denies its noun, not the state: "no data lost" is said by "no data has been lost"
    assert guard("Only PDF export is slow, and no data has been lost.", "no data lost") is None
    # the answer denies the state itself ("refund request … declined"): no contradiction
    assert guard("Your refund request has been declined.", "we won't be refunding this item") is None


def test_still_is_read_against_the_state_the_answer_says_last() -> None:
    answer = "Your account was locked after five failed logins. I've unlocked it now."
    assert guard(answer, "the account is still locked") == (
        "opposite: expected still 'locked', answer says 'unlocked' last"
    )
    assert guard(answer, "account unlocked") is None


def test_a_person_named_by_a_title_is_compared_by_name() -> None:
    answer = "Your appointment with Dr. Alvarez is booked for Wednesday."
    assert (
        guard(answer, "the appointment is with Dr. Patel")
        == "name: expected 'Dr. Patel', answer has 'Dr. Alvarez'"
    )
    assert guard(answer, "appointment with Dr Alvarez") is None


def test_no_loss_denies_the_loss_not_what_was_kept() -> None:
    answer = "Only the PDF export is slow, and no data has been lost."
    assert guard(answer, "all data remains intact") is None
    assert guard(answer, "data was lost") == "negated: 'no … lost'"
    assert guard(answer, "no data lost") is None
    assert analyse("No customer records were affected.").negated == {"affect": "No … affected"}


def test_a_denial_until_something_happens_is_a_delay() -> None:
    answer = "Your shipment is being held at customs. Once you pay the duty, it will be released."
    assert guard(answer, "the package won't be released until the duty is paid") is None
    assert guard("It was released yesterday.", "it won't be released") is not None


def test_a_lack_said_by_expected_may_be_said_by_a_negation_of_something_else() -> None:
    answer = "The front door is locked, but the garage door is open — it didn't respond to the close command."
    assert guard(answer, "the garage door failed to close when commanded") is None
    assert (
        guard("After reviewing your file, we are unable to approve your loan.", "your loan was turned down")
        is None
    )
    # ... but not when the negated word is the lack itself, or the negation is about the word
    assert (
        guard("Only export is slow, and no data has been lost.", "some customer data has been lost")
        is not None
    )
    assert guard("I cannot offer a refund.", "refund issued") is not None


def test_a_range_and_a_pronoun_carry_the_value_for_the_role_veto() -> None:
    assert (
        changed_role("I scaled the deployment from 3 to 8 replicas.", "it went from three replicas to eight")
        is None
    )
    assert changed_role("Expect 14 to 20 inches of snow.", "14-20 inches of snow") is None
    answer = "There were 1,284 orders placed in March, and 37 of them were refunded."
    assert changed_role(answer, "37 orders refunded") is None
    # the dates the failing partitions carry are no other count of partitions than "46"
    answer = "46 partitions were rewritten; 2 of them (Jan 19 and Jan 20) failed and were rerun."
    assert changed_role(answer, "The January 19 and 20 partitions failed at first.") is None
    # "May" before a day is the month, a date "backordered" carries besides the count
    answer = "18 of the 20 drums arrived, and 2 are backordered until May 3."
    assert changed_role(answer, "Two drums are backordered.") is None


def test_a_claim_said_of_another_thing_of_its_kind_is_vetoed() -> None:
    # the clause that says it names another gate, another person, another code
    answer = "Gate 4 is now boarding passengers; gate 7 was closed for cleaning."
    assert said_of_another(answer, "Gate 7 is boarding passengers.") is not None
    assert said_of_another(answer, "Passengers are boarding at gate 4.") is None
    answer = "Lena will chair the review, and Omar will take the minutes."
    assert said_of_another(answer, "Omar will chair the review.") is not None
    assert said_of_another(answer, "Lena will chair the review.") is None
    answer = "The web-3 node crashed at noon, so I restarted it on web-5."
    assert said_of_another(answer, "web-3 was restarted.") is None  # "it" may stand for web-3
    answer = "I restarted web-5 after the crash; web-3 stays down."
    assert said_of_another(answer, "web-3 was restarted after the crash.") is not None
    # a name in other words ("Jordan Reyes" is "Jordan"), a thing said by a pronoun ("they")
    answer = "I sent both passes to Jordan Reyes via Eventbrite. Jordan has them now."
    assert said_of_another(answer, "the passes were sent to Jordan") is None
    answer = "I wrote to Acme about the fault. Under their Shield plan they've sent a new unit."
    assert said_of_another(answer, "Acme sent a new unit.") is None
    # a quoted title is a name, and a pronoun after the other thing stands for it ("a hold on it")
    answer = "I renewed 'Dune' until May 2, but 'Emma' couldn't be renewed because of a hold on it."
    assert said_of_another(answer, "'Dune' couldn't be renewed because of a hold.") is not None
    assert said_of_another(answer, "'Emma' couldn't be renewed because of a hold.") is None
    # a clause naming both reads in its parts, at a reason
    answer = "I gave the night shift to Team Red, since Team Gold is short-staffed."
    assert said_of_another(answer, "Team Gold will work the night shift.") is not None
    assert said_of_another(answer, "Team Red will work the night shift.") is None
    # a word before a noun the answer says as a name: "the Price flat", where Ms. Price signed it off
    answer = "I fitted the new boiler at the Novak flat, and the gas engineer, Ms. Price, signed it off."
    assert said_of_another(answer, "The boiler was fitted at the Price flat.") is not None
    assert said_of_another(answer, "The boiler was fitted at the Novak flat.") is None


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        ("The backlog grew because two of the five consumers had crashed.", "two consumers crashed", False),
        (
            "It is paused: only 3 of the 8 volunteer tutors were available.",
            "Only 3 tutors were available.",
            False,
        ),
        # the part and its whole are one run, which still holds no other count
        (
            "I renewed 3 of your library books; the 4 others are due.",
            "All 4 library books were renewed.",
            True,
        ),
    ],
)
def test_a_part_of_the_whole_after_a_determiner_is_a_count_of_the_noun(
    actual: str, expected: str, vetoed: bool
) -> None:
    assert (changed_role(actual, expected) is not None) is vetoed


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        (
            "It failed its inspection on May 2; the re-inspection is set for May 6.",
            "re-inspection on May 6",
            False,
        ),
        (
            "The order stays at 60, and I ordered 25 boxes elsewhere.",
            "the order is at 60",
            False,
        ),
        # the value the linking verb reaches is still the noun's own
        (
            "It failed its inspection on May 2; the re-inspection is set for May 9. I booked May 6.",
            "re-inspection on May 6",
            True,
        ),
        (
            "The order stays at 60; I got 25 boxes elsewhere.",
            "the order stays at 25",
            True,
        ),
    ],
)
def test_a_noun_reaches_its_value_over_a_linking_verb(actual: str, expected: str, vetoed: bool) -> None:
    assert (changed_role(actual, expected) is not None) is vetoed


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        (
            "Your tax bill from Harris County is $6,830; an exemption could cut the bill by $900.",
            "tax bill $6,830",
            False,
        ),
        (
            "It credited 27 additional qualifying payments, bringing you to 96 of 120.",
            "96 qualifying payments",
            False,
        ),
        # the difference is no value of the bill: the bill is still $6,830
        (
            "Your tax bill is $6,830; an exemption could cut the bill by about $900.",
            "the tax bill is $900",
            True,
        ),
    ],
)
def test_an_amount_of_change_is_no_value_of_the_word(actual: str, expected: str, vetoed: bool) -> None:
    assert (changed_role(actual, expected) is not None) is vetoed


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        ("It used 1 credit, leaving you 4 for this month.", "The user has 4 credits left this month.", False),
        ("It used 1 of your 8 class credits, so you have 5 left.", "Five class credits remain.", False),
        # a count not said as what is left, or an expected text not about what is left
        (
            "It used 1 credit, and 4 are booked for next week.",
            "The user has 4 credits left this month.",
            True,
        ),
        ("It used 1 credit, leaving you 4 for this month.", "The user used 4 credits.", True),
    ],
)
def test_a_count_said_as_what_is_left_is_the_count_left(actual: str, expected: str, vetoed: bool) -> None:
    assert (changed_role(actual, expected) is not None) is vetoed


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        (
            "I redeemed 40,000 Chase Ultimate Rewards points for a credit. You have 12,350 points left.",
            "40,000 points were used",
            False,
        ),
        (
            "2,418 SkyMiles were posted today. Your new balance is 88,905 miles.",
            "2,418 miles were credited",
            False,
        ),
        # the count is of another thing, or the name carries another count
        (
            "I spent 40,000 dollars of credit on 500 Rewards points. You have 12,350 points left.",
            "40,000 points were used",
            True,
        ),
        (
            "2,418 SkyMiles were posted today. Your new balance is 88,905 miles.",
            "88,905 SkyMiles were posted",
            True,
        ),
    ],
)
def test_a_count_of_a_kind_of_the_thing_counts_the_thing(actual: str, expected: str, vetoed: bool) -> None:
    assert (changed_role(actual, expected) is not None) is vetoed


def test_a_count_with_its_noun_left_out_is_part_of_the_total_the_noun_carries() -> None:
    answer = "I processed the 18 returned units: 15 passed inspection, and 3 had cracked housings."
    assert changed_role(answer, "Three units were damaged.") is None
    answer = "48 participants enrolled, 37 completed the training, and 29 were placed in jobs."
    assert changed_role(answer, "29 participants got jobs.") is None
    # a relative pronoun leaves the noun out too, and a smaller count of the noun is no total
    answer = "Overnight there were 12 alerts; 10 auto-resolved. The two that remain are on worker-7."
    assert changed_role(answer, "two alerts still open") is None
    answer = "I pushed it to 118 Macs, excluding the 4 Mac Studios. So far {} have installed it."
    assert changed_role(answer.format(96), "96 Macs had installed it") is None
    assert changed_role(answer.format(196), "196 Macs had installed it") == (
        "role: expected 'Macs' with '196', answer has it with '118'"
    )
    # a count that ends its phrase, or counts "people", leaves its noun out too
    answer = "I added the 25 new iPhones; 23 enrolled. The other two, serials K7QP and M2XD, are stuck."
    assert changed_role(answer, "Two iPhones are stuck.") is None
    answer = "36 volunteers are on the rotation, and {} people replied that they can't make it."
    assert changed_role(answer.format(2), "Two volunteers dropped out.") is None
    assert changed_role(answer.format(40), "40 volunteers dropped out.") == (
        "role: expected 'volunteers' with '40', answer has it with '36'"
    )
    assert changed_role("I processed the 18 returned units, and 3 had cracks.", "3 units had cracks") is None
    assert changed_role("I processed the 18 returned units, and 30 had cracks.", "30 units had cracks") == (
        "role: expected 'units' with '30', answer has it with '18'"
    )


def test_values_of_other_kinds_and_the_digits_of_a_code_are_no_other_value_of_the_role() -> None:
    # a share is not another amount, a count not another price, "W-9" no number
    answer = "Trupanion approved the claim: they will pay 90%, which is $3,780 of the $4,200 bill."
    assert changed_role(answer, "Trupanion will pay $3,780 toward the surgery.") is None
    answer = "I listed your two tickets for the show on StubHub at £210 each."
    assert changed_role(answer, "The two tickets are listed at £210 apiece.") is None
    answer = "Onboarding is done: their W-9 is on file, and they were assigned vendor ID V-30417."
    assert changed_role(answer, "Brightline is set up as vendor V-30417.") is None
    answer = "The tickets are listed at £210 each, and the deposit is £250."
    assert changed_role(answer, "the tickets are listed at £250") == (
        "role: expected 'listed' with '250', answer has it with '210'"
    )


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        (
            "I paused it for three weeks; it restarts with your usual 3-meal plan for 2 people.",
            "The plan is 3 meals for 2 people.",
            False,
        ),
        (
            "The standup starts Monday, January 6 and runs until March 28.",
            "The series runs from January 6 to March 28.",
            False,
        ),
        # a value expected says with no word, or denies, is no value of it
        ("The plan costs $25 a month; the setup fee is $10.", "the plan costs $10, not $25", True),
        ("The plan costs $25 a month; the setup fee is $10.", "the plan costs $10", True),
    ],
)
def test_another_value_expected_reads_with_a_word_is_no_other_value(
    actual: str, expected: str, vetoed: bool
) -> None:
    assert (changed_role(actual, expected) is not None) is vetoed


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        (
            "I added 3 regression tests. The full suite passes (412 passed, 0 failed).",
            "All 412 tests passed.",
            False,
        ),
        # inside a date the comma goes on: "Thursday, October 9", "July 7, 2027"
        ("I moved it to Thursday, October 9, 2025 at 10 am.", "moved to October 9", False),
        (
            "The EAD card is valid from July 8, 2025 to July 7, 2027.",
            "The EAD is valid until July 7, 2027.",
            False,
        ),
        (
            "Access ended on her last day, April 30, and her mailbox is forwarded for 90 days.",
            "forwarded for 30 days",
            True,
        ),
    ],
)
def test_a_comma_after_a_count_ends_its_reach(actual: str, expected: str, vetoed: bool) -> None:
    assert (changed_role(actual, expected) is not None) is vetoed


def test_a_value_that_describes_a_word_or_is_said_with_it_keeps_its_role() -> None:
    answer = "You are pre-approved for a 30-year fixed mortgage of up to $420,000 at 6.45% APR."
    assert changed_role(answer, "pre-approved up to $420,000") is None  # "30-year" describes the mortgage
    answer = "I reserved a table for 6 at Osteria Bella on Friday, July 19 at 7:30 pm."
    assert changed_role(answer, "table for six Friday 7:30") is None  # the 6 is among the values expected
    answer = "Your order, placed on March 3, will be delivered on March 10."
    assert changed_role(answer, "delivered on March 3") is not None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "I posted the notes to #eng-announcements. I did not send them to #general.",
            "the notes were posted to #product-updates",
            "expected '#product-updates', answer has '#eng-announcements'",
        ),
        (
            "11 of the 12 tasks succeeded, and the load_inventory task failed.",
            "the load_orders task failed",
            "expected 'load_orders', answer has 'load_inventory'",
        ),
        (
            "Two of the three interviewers flagged weak system design.",
            "all three interviewers flagged weak system design",
            "expected all, answer says 'Two of … three'",
        ),
        (
            "I switched the thermostat from cooling to heating mode.",
            "the thermostat is in cooling mode",
            "expected 'cooling', answer has it only as what changed ('cooling')",
        ),
        (
            "I changed your monthly donation from $30 to $45.",
            "the monthly donation was reduced",
            "opposite: expected 'reduced', answer says 'changed your monthly donation from $30 to $45'",
        ),
        (
            "Bulk item pickup requires an appointment.",
            "bulk pickup no longer requires an appointment",
            "not negated: expected 'no longer requires', answer says 'requires'",
        ),
        (
            "Congratulations, you've been admitted to the program.",
            "you were waitlisted for the program",
            "opposite: expected 'waitlisted', answer says 'admitted'",
        ),
        (
            "Cancelled. I rebooked you departing tomorrow at 11:40 AM, and a hotel is booked tonight.",
            "the new flight departs today at 11:40 AM",
            "opposite: expected 'today', answer says 'tomorrow' of it",
        ),
    ],
)
def test_identifiers_parts_old_values_and_changes_are_read(actual: str, expected: str, reason: str) -> None:
    assert guard(actual, expected) == reason


def test_what_a_change_left_behind_may_still_be_said_as_the_past() -> None:
    assert guard("I moved you from the Basic plan to Pro.", "you were on the Basic plan") is None
    assert guard("Open from 9 am to 5 pm.", "open from 9 am") is None  # a range, not a change
    assert (
        guard("I've disabled the old key; it will stop working today.", "the old key no longer works") is None
    )


def test_a_value_a_scaling_left_behind_is_an_old_one() -> None:
    answer = "I scaled the consumer group from 4 to 12 consumers."
    assert guard(answer, "The consumer group was left at 4 consumers.") == (
        "expected '4', answer has it only as what changed ('4')"
    )
    assert guard(answer, "the group went from 4 to 12 consumers") is None


def test_a_state_of_two_words_a_change_left_behind_is_not_said() -> None:
    answer = "I moved PROJ-1482 from In Progress to Blocked, since it waits on PAY-311."
    assert guard(answer, "PROJ-1482 is still In Progress") == (
        "expected 'Progress', answer has it only as what changed ('Progress')"
    )
    assert guard(answer, "PROJ-1482 was in progress before") is None
    # the noun both sides share is no old word: "plan" of "from the Basic plan to Pro"
    assert guard("I moved you from the Basic plan to Pro.", "your plan is now Pro") is None


def test_a_duration_said_in_other_units_is_the_same_value() -> None:
    assert guard("It keeps the last 14 days of dumps.", "two weeks of dumps are kept") is None
    assert guard("Approved at 7.9% over 48 months.", "a four-year term") is None
    assert guard("The call lasted 90 minutes.", "a call of 2 hours") == "expected '2', answer has '90'"
    assert guard("The call lasted 120 minutes.", "a call of 2 hours") is None
    assert guard("It lasts 10 days.", "it lasts two weeks") == "expected 'two', answer has '10'"


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        # a count of a unit is said as that count: not as a share, nor as another count of the unit
        ("They reimburse 60% of the cost.", "it can take up to 60 days", True),
        ("Her mail, since April 30, is forwarded for 90 days.", "her mail is forwarded for 30 days", True),
        ("It rose from 78% to 83%.", "it rose from 78 to 83 percent", False),
        ("It keeps 14 days of logs and 30 days of backups.", "backups are kept for 30 days", False),
        ("The $95 day pass was refunded within 3 days.", "the day pass was refunded within 3 days", False),
        ("Enrolled in a 6-month plan, 24 hours ago.", "enrolled 1 day ago", False),
    ],
)
def test_a_count_of_a_unit_is_said_as_that_count(actual: str, expected: str, vetoed: bool) -> None:
    assert (guard(actual, expected) is not None) is vetoed


def test_the_subject_of_denied_or_failed_is_denied() -> None:
    assert guard("I've issued a full refund.", "the refund was denied") == (
        "not negated: expected 'refund … denied', answer says 'refund'"
    )
    assert guard("Your refund request has been declined.", "we will refund the item") == (
        "negated: 'refund … declined'"
    )
    assert guard("Your data export is ready.", "the export failed") == (
        "not negated: expected 'export … failed', answer says 'export'"
    )
    # a denial that governs nothing after it denies what came before: "refund refused" = "no refund"
    assert guard("Sorry, I can't refund this order.", "refund refused") is None
    # adjectival "failed" denies nothing before it: the account is still locked
    assert guard("Your account was locked after five failed login attempts.", "account locked") is None


def test_a_cost_a_fall_or_a_day_is_no_lack_but_no_cost_and_no_change_are() -> None:
    # "fee" is no lack, so a denial of the fee is no lack said alike; "waived" (no cost) says one
    answer = "Nonprofit groups don't pay the $60 rental fee."
    assert guard(answer, "The $60 rental fee is waived for the nonprofit group.") is None
    assert guard("I did not touch the payment mock.", "payment mock left unchanged") is None


@pytest.mark.parametrize(
    ("actual", "lack_said", "contradiction"),
    [
        # the records are said twice, denied only as what "not touch" reaches: "untouched" says it alike
        (
            "I updated the A record for the shop. I did not touch the MX records, so mail is unchanged.",
            "MX records left untouched",
            "The MX records were updated too.",
        ),
        (
            "I booked the Riverside office. There were no openings at the Downtown office within the month.",
            "The Downtown office had nothing available in the coming month.",
            "The Downtown office had openings this month.",
        ),
    ],
)
def test_a_word_said_both_ways_is_said_alike_by_a_lack_of_its_own(
    actual: str, lack_said: str, contradiction: str
) -> None:
    assert guard(actual, lack_said) is None
    assert guard(actual, contradiction) is not None


@pytest.mark.parametrize(
    ("actual", "lack_said", "contradiction"),
    [
        # the subject of a verb of failure is what failed: an expected text saying a lack may say it
        (
            "The imaging archive backup failed at 73% because the volume ran out of space; I queued a retry.",
            "The imaging backup will be retried tonight.",
            "The imaging backup completed.",
        ),
        (
            "The test test_upload_retries failed in 14 of 200 runs. I quarantined it with the @flaky marker.",
            "The test is quarantined so it doesn't block merges.",
            "The test passed in every run.",
        ),
        (
            "The rental car coverage was denied because your policy does not include it.",
            "Rental car costs will not be covered, since the policy lacks that coverage.",
            "The rental car coverage was approved.",
        ),
        # ... also when the answer names it elsewhere, and for what "except" leaves out
        (
            "I ran the failover drill. The drill is marked failed against our 60-second target; "
            "I will rerun the drill next week.",
            "The failover drill missed the 60-second recovery target.",
            "The failover drill passed.",
        ),
        (
            "All 5 services met their targets except ledger-writer, which finished at 99.71% against a 99.9% "
            "objective. Ledger-writer's error budget ran out.",
            "ledger-writer missed its 99.9% objective.",
            "ledger-writer met its 99.9% objective.",
        ),
    ],
)
def test_a_failed_subject_is_still_there_for_a_lack_said_of_it(
    actual: str, lack_said: str, contradiction: str
) -> None:
    assert guard(actual, lack_said) is None
    assert guard(actual, contradiction) is not None


@pytest.mark.parametrize(
    ("actual", "said_next", "contradiction"),
    [
        # what failed or refused, taken up again by "it" or "he" in a later clause, is what it is about
        (
            "The delivery to Harmon Medical was marked failed because the dock was closed. I rescheduled "
            "it for Tuesday and notified the customer by email.",
            "The customer was told about the new delivery window by email.",
            "The delivery was completed on time.",
        ),
        (
            "I sent invites to the 4 people on your list. Jonas declined because of a conflict, so I turned "
            "on cloud recording so he can watch later.",
            "Cloud recording was enabled so Jonas can watch afterwards.",
            "Jonas accepted the invite.",
        ),
    ],
)
def test_a_failed_subject_taken_up_again_is_said_in_its_next_clause(
    actual: str, said_next: str, contradiction: str
) -> None:
    assert guard(actual, said_next) is None
    assert guard(actual, contradiction) is not None
    # not taken up again ("them" may stand for others): the failure still denies it
    assert guard(actual.replace(" it ", " them ").replace(" he ", " they "), said_next) is not None


def test_a_noun_cue_after_a_number_is_the_noun_and_a_side_said_in_a_condition_is_none() -> None:
    answer = "The 9 vans now cover all 146 stops, and total planned distance drops to 1,085 km."
    assert guard(answer, "Total planned distance falls to 1,085 km.") is None
    answer = "Kessler failed its re-audit; no new POs will be issued until they pass a new inspection."
    assert guard(answer, "Kessler did not pass the re-audit.") is None
    assert guard("Kessler passed its re-audit.", "Kessler did not pass the re-audit.") is not None


def test_a_refusal_said_of_another_word_of_the_denial_is_said_alike() -> None:
    answer = "The return for order 88-2231 was rejected: the customer sent back the blender 47 days late."
    assert guard(answer, "The blender return was denied.") is None
    answer = "The return for order 88-2231 was approved: the customer sent back the blender."
    assert (
        guard(answer, "The blender return was denied.")
        == "not negated: expected 'return … denied', answer says 'return'"
    )


def test_a_failure_said_in_another_word_of_its_side_is_said_alike() -> None:
    answer = "The delivery to Harmon Medical Supply was marked failed because the dock was closed."
    assert guard(answer, "The delivery attempt to Harmon Medical Supply was unsuccessful.") is None
    assert guard(answer, "The delivery to Harmon Medical Supply succeeded.") == "negated: 'delivery … failed'"
    answer = "Your personal loan application with LendWell for $15,000 was declined."
    assert guard(answer, "LendWell turned down the $15,000 personal loan.") is None


def test_an_active_denial_denies_its_object_not_its_subject() -> None:
    answer = "We could not process your payment: the card was declined by your bank."
    assert guard(answer, "your bank rejected the card payment") is None
    assert guard("I declined the budget review.", "accepted the budget review") is not None
    assert guard("I declined the budget review.", "the budget review was declined") is None


def test_except_negates_what_it_names() -> None:
    answer = "The museum is open every day except Monday."
    assert guard(answer, "the museum is open on Monday") == "negated: 'except Monday'"
    assert guard(answer, "open on Tuesday") is not None  # no Tuesday in the answer at all
    assert guard(answer, "the museum is open every day") == "expected all, answer says 'except …'"


def test_up_or_down_a_number_is_a_direction() -> None:
    answer = "Monthly active users are down 12% from September."
    assert guard(answer, "active users grew 12%") == "opposite: expected 'grew', answer says 'are down 12'"
    assert guard(answer, "active users fell 12%") is None
    assert (
        guard("Latency is up 30 ms.", "latency dropped")
        == "opposite: expected 'dropped', answer says 'up 30'"
    )


def test_instead_of_and_rather_than_negate_what_they_name() -> None:
    answer = "We shipped it by standard post instead of express, so it arrives on Friday."
    assert guard(answer, "sent by express") == "negated: 'instead of express'"
    assert guard(answer, "shipped by standard post") is None
    assert guard("I chose the annual plan rather than the monthly one.", "monthly plan chosen") is not None
    assert guard("It arrives on Tuesday instead of Monday.", "arrives on Monday") is not None


def test_nothing_after_a_verb_denies_it() -> None:
    assert guard("The fee was refunded, so you owe nothing.", "you owe a fee") == "negated: 'owe nothing'"
    assert guard("The fee was waived, so you owe nothing.", "the fee was waived") is None


def test_a_value_said_only_as_what_changed_is_not_the_value() -> None:
    answer = "The meeting has been moved from Wednesday to Thursday at 3 pm."
    assert guard(answer, "the meeting is on Wednesday") == (
        "expected 'Wednesday', answer has it only as what changed ('Wednesday')"
    )
    assert guard(answer, "meeting moved to Thursday") is None
    assert guard(answer, "moved from Wednesday to Thursday") is None  # the expected text says it changed too
    assert guard("The premium rises from $90 to $140.", "premium drops to $90") is not None
    assert guard("The museum is open from 9 am to 5 pm.", "opens at 9 am") is None  # a range, not a change


# --- numbers, amounts, dates, weekdays --------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        ("We refunded $200.", "refunded $20", "expected '$20', answer has '$200'"),
        ("The delivery is on Thursday.", "delivery on Tuesday", "expected 'Tuesday', answer has 'Thursday'"),
        ("Your appointment is on March 4.", "appointment on March 3", "expected '3', answer has '4'"),
        ("The fee is 15%.", "a 5% fee", "expected '5%', answer has '15%'"),
        ("Your appointment is in March.", "appointment on March 3", "expected '3', answer has none"),
        ("It ships in April.", "ships in March", "expected 'March', answer has 'April'"),
        # "May" is a month when written so past a sentence's start; the modal "may" is a stopword
        ("Your order was delivered in June.", "delivered in May", "expected 'May', answer has 'June'"),
        ("Delivered on June 3.", "delivered on May 3", "expected 'May', answer has 'June'"),
    ],
)
def test_numbers_and_dates_must_match_exactly(actual: str, expected: str, reason: str) -> None:
    result = semantic_match(actual, expected)
    assert not result
    assert result.reason == reason


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("You will get $20.00 back as a refund.", "a $20 refund"),
        ("A refund of 1,000 dollars was issued.", "refund of $1000"),
        ("Your appointment is on 3 March.", "appointment on March 3"),
        ("It arrives in three days.", "arrives in 3 days"),
        ("Delivery on Tue.", "delivery on Tuesday"),
        ("It was delivered in May.", "delivered in May"),
        ("May I help with the refund? It may take 5 days.", "help with the refund in 5 days"),
        ("We refunded $20 on 2024-03-03, order 991.", "refunded $20"),
    ],
)
def test_same_numbers_written_differently_match(actual: str, expected: str) -> None:
    assert semantic_match(actual, expected)


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        # the digits of a code count nothing: "unit 2F" says no 2 hours, "a RAV4" no 4 o'clock
        ("Pest control comes to unit 2F; stay out for 4 hours after.", "stay out for 2 hours after", True),
        ("I reserved a Toyota RAV4, pickup April 7 at 2:00 PM.", "pickup April 7 at 4:00 PM", True),
        ("The M8 bolts passed; the NCR was closed on May 3.", "the NCR was closed on May 8", True),
        # said outside the code as well, or as a code that is a value ("p95", "4m15s")
        ("Boarding at gate B12 starts in 12 minutes.", "boarding starts in 12 minutes", False),
        ("The p95 latency stayed at 320 ms.", "the 95th-percentile latency held at 320 ms", False),
        ("Median build time dropped from 11m40s to 4m15s.", "build time fell to about four minutes", False),
        ("Your apartment is 4B.", "you are in apartment 4B", False),
    ],
)
def test_a_number_only_inside_a_code_is_not_said(actual: str, expected: str, vetoed: bool) -> None:
    assert (guard(actual, expected) is not None) is vetoed


# --- the result object and the API ------------------------------------------------------------


def test_result_fields_and_truthiness() -> None:
    hit = semantic_match(LONG_ANSWER, "full refund issued")
    assert isinstance(hit, MatchResult)
    assert bool(hit) is True and hit.passed
    assert (hit.score, hit.threshold, hit.backend) == (1.0, LEXICAL.default_threshold, "lexical")
    assert hit.reason == "all 3 expected words found"
    assert hit.expected == "full refund issued"

    miss = semantic_match("I cannot offer a refund.", "offers a refund")
    assert bool(miss) is False
    assert 0.0 <= miss.score < miss.threshold
    assert "negated: 'cannot … refund'" in repr(miss)
    assert "NO MATCH" in repr(miss)


def test_list_expected_passes_if_any_matches_and_reports_the_best() -> None:
    result = semantic_match(LONG_ANSWER, ["offered store credit", "full refund issued", "denied"])
    assert result
    assert result.expected == "full refund issued"


def test_list_expected_all_failing_reports_the_closest() -> None:
    result = semantic_match("We refunded $200.", ["store credit", "refunded $20 today"])
    assert not result
    assert result.expected == "refunded $20 today"


@pytest.mark.parametrize("bad", [[], [None], None, 3])
def test_bad_expected_is_a_config_error(bad: object) -> None:
    with pytest.raises(CassetteConfigError, match="expected must be a string"):
        semantic_match("text", bad)  # type: ignore[arg-type]


def test_non_text_actual_is_a_config_error() -> None:
    with pytest.raises(CassetteConfigError, match="actual must be text, got NoneType"):
        semantic_match(None, "refund")  # type: ignore[arg-type]


def test_threshold_override() -> None:
    partial = "We issued a refund."
    assert semantic_match(partial, "refund issued to card").score == pytest.approx(2 / 3)
    assert semantic_match(partial, "refund issued to card", threshold=0.5)
    assert not semantic_match(partial, "refund issued to card", threshold=0.9)
    assert semantic_match(partial, "refund issued to card", threshold=0.5).threshold == 0.5


@pytest.mark.parametrize("bad", [1.5, -0.1, "0.5", True])
def test_bad_threshold_is_a_config_error(bad: object) -> None:
    with pytest.raises(CassetteConfigError, match="threshold must be a number from 0 to 1"):
        semantic_match("a", "a", threshold=bad)  # type: ignore[arg-type]


def test_configure_sets_threshold_and_default_backend() -> None:
    configure(None, {"lexical": 0.95})
    result = semantic_match("We issued a refund.", "refund issued to card")
    assert result.threshold == 0.95 and not result
    configure("no-such-backend", {})
    with pytest.raises(UnknownSemanticBackendError, match="no-such-backend"):
        semantic_match("a", "a")


def test_configure_rejects_bad_threshold() -> None:
    with pytest.raises(CassetteConfigError, match=r"semantic_thresholds\.lexical"):
        configure("lexical", {"lexical": 2.0})


def test_unknown_backend_names_the_available_ones() -> None:
    with pytest.raises(UnknownSemanticBackendError) as info:
        semantic_match("a", "a", backend="sbert")
    assert isinstance(info.value, CassetteConfigError)
    assert isinstance(info.value, SemanticBackendError)
    assert "'sbert'" in str(info.value)
    assert "lexical" in str(info.value) and "embeddings" in str(info.value)


def test_builtins_are_offered_through_the_hook() -> None:
    backends = available_backends()
    assert {"lexical", "embeddings"} <= set(backends)
    assert all(isinstance(b, SemanticBackend) for b in backends.values())
    assert get_backend() is LEXICAL


class _ShoutBackend:
    name = "shout"
    default_threshold = 0.5

    def score(self, actual: str, expected: str) -> tuple[float, str]:
        same = actual.upper() == expected.upper()
        return (1.0 if same else 0.0), "same letters" if same else "different letters"


class _ShoutPlugin:
    @hookimpl
    def cassette_semantic_backends(self) -> list[object]:
        return [_ShoutBackend()]


class _ShadowPlugin:
    @hookimpl
    def cassette_semantic_backends(self) -> list[object]:
        backend = _ShoutBackend()
        backend.name = "lexical"
        return [backend]


def test_a_third_party_backend_plugs_in_through_the_hook() -> None:
    pm = get_plugin_manager()
    plugin = _ShoutPlugin()
    pm.register(plugin)
    try:
        result = semantic_match("Refund", "REFUND", backend="shout")
        assert result and result.backend == "shout" and result.reason == "same letters"
    finally:
        pm.unregister(plugin)
    with pytest.raises(UnknownSemanticBackendError):
        semantic_match("a", "a", backend="shout")


def test_a_plugin_may_not_shadow_a_builtin_backend() -> None:
    pm = get_plugin_manager()
    plugin = _ShadowPlugin()
    pm.register(plugin)
    try:
        with pytest.raises(CassetteConfigError, match="two plugins offer a semantic backend named 'lexical'"):
            semantic_match("a", "a")
    finally:
        pm.unregister(plugin)


def test_failing_assert_shows_the_reason_in_pytest_output(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import cassette

        def test_refund_policy():
            answer = "I'm sorry, but I cannot offer a refund for opened items."
            assert cassette.semantic_match(answer, "offers a refund")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E * assert <MatchResult NO MATCH [[]lexical[]] score 0.10 < 0.60: negated: 'cannot … refund'; *"]
    )


def test_analysis_is_cached_and_pure() -> None:
    assert analyse("I cannot offer a refund.") is analyse("I cannot offer a refund.")
    assert analyse("I cannot offer a refund.").negated == {
        "offer": "cannot offer",
        "refund": "cannot … refund",
    }


# --- embeddings -------------------------------------------------------------------------------


def test_importing_cassette_loads_no_model() -> None:
    code = (
        "import sys, logging, cassette.review.semantic, cassette.plugins.semantic_embeddings\n"
        "assert not {'tokenizers', 'safetensors', 'wordllama'} & sys.modules.keys(), sys.modules.keys()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_embeddings_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from cassette.plugins.semantic_embeddings import EmbeddingsBackend

    monkeypatch.setitem(sys.modules, "tokenizers", None)  # how Python spells "not installed"
    with pytest.raises(SemanticBackendError, match=r"pip install 'cassette\[embeddings\]'") as info:
        EmbeddingsBackend().score("a", "b")
    assert isinstance(info.value, CassetteError)


@pytest.fixture(scope="module")
def embeddings() -> SemanticBackend:
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    if __import__("importlib").util.find_spec("wordllama") is None:
        pytest.skip("wordllama wheel (the model files) not installed")
    return get_backend("embeddings")


def test_embeddings_match_a_long_answer_by_its_best_sentence(embeddings: SemanticBackend) -> None:
    result = semantic_match(LONG_ANSWER, "I have issued a full refund to your card", backend="embeddings")
    assert result
    assert result.reason.startswith("cosine ") and "sentence 3" in result.reason


def test_embeddings_see_synonyms_that_lexical_cannot(embeddings: SemanticBackend) -> None:
    actual, expected = "The kitten is sleeping on the sofa.", "A cat sleeps on the couch."
    by_vectors = semantic_match(actual, expected, backend="embeddings").score
    by_words = semantic_match(actual, expected).score
    assert by_vectors > by_words + 0.2


def test_embeddings_share_the_negation_veto(embeddings: SemanticBackend) -> None:
    result = semantic_match("I cannot offer a refund.", "offers a refund", backend="embeddings")
    assert not result
    assert result.reason.startswith("negated: 'cannot … refund' (cosine ")


def test_embeddings_veto_an_answer_that_names_another_entity(embeddings: SemanticBackend) -> None:
    stored = "Your data is stored in our EU region."
    result = semantic_match(stored, "data is stored in the US", backend="embeddings")
    assert not result
    assert result.reason.startswith("name: expected 'US', answer has 'EU' (cosine ")
    assert not semantic_match("We charged your Visa card.", "charged to Mastercard", backend="embeddings")
    # the same entity said another way is no change (word cosine "Europe" / "EU" 0.70)
    assert semantic_match(stored, "data is kept in Europe", backend="embeddings")
    assert semantic_match("We charged your Visa card.", "charged to your Visa card", backend="embeddings")


def test_embeddings_veto_another_word_before_the_same_noun(embeddings: SemanticBackend) -> None:
    from cassette.core.meaning import swapped_modifiers

    answer = "I have transferred your ticket to the network team, who handle VPN issues."
    assert swapped_modifiers(answer, "the ticket went to the security team") == [("security", "network")]
    result = semantic_match(answer, "the ticket went to the security team", backend="embeddings")
    assert not result and result.reason.startswith("changed word: expected 'security', answer has 'network'")
    assert not semantic_match(
        "Windows users should download it.", "Mac users should download it", backend="embeddings"
    )
    # one thing said two ways (word cosine "yearly" / "annual" 0.60) and verb forms are no swap
    assert semantic_match(
        "We charged the annual fee to your card.", "the yearly fee was charged", backend="embeddings"
    )
    assert swapped_modifiers("The failed payment was retried.", "the declined payment") == []


@pytest.mark.parametrize(
    ("actual", "expected", "swaps"),
    [
        # "replacement" says which form, "partial" how much of the deposit: no kind of either
        (
            "Sign the distribution form; I pre-filled a fresh form.",
            "the replacement form needs a signature",
            [],
        ),
        ("They returned $1,200 of your $1,500 security deposit.", "partial deposit refund", []),
        ("They returned your security deposit.", "the damage deposit was returned", [("damage", "security")]),
    ],
)
def test_words_that_say_which_one_or_how_much_name_no_kind(
    actual: str, expected: str, swaps: list[tuple[str, str]]
) -> None:
    assert swapped_modifiers(actual, expected) == swaps


def test_proper_names_skip_sentence_starts_headings_and_dates() -> None:
    from cassette.core.meaning import changed_names, proper_names

    assert proper_names("We sent it from the US on Monday. Thanks, Maria") == {"us": "US", "maria": "Maria"}
    assert proper_names("Paid with Visa") == {"visa": "Visa"}
    assert proper_names("Stallone's Son Found Dead At Home") == {}  # title case marks no names
    assert proper_names("We don't ship to P.O. boxes.") == {}  # single letters
    assert changed_names("Kept in Berlin, Germany.", "kept in France") == (["France"], ["Berlin", "Germany"])
    assert changed_names("Stored in France.", "stored in France") == ([], [])
    # an acronym the answer writes out is said: "PR" for "pull request", "HR" for "human resources"
    pr = "I opened pull request #311. CI is still running."
    assert changed_names(pr, "opened PR #311") == ([], [])
    assert changed_names("Ask human resources, or IT.", "ask HR") == ([], [])
    assert changed_names("Ask the finance team, or IT.", "ask HR") == (["HR"], ["IT"])


def test_a_sibling_name_is_another_thing(embeddings: SemanticBackend) -> None:
    from cassette.core.meaning import sibling_names

    # names built of parts that share one but not all are two of a family, however alike their vectors
    assert sibling_names("PayPal", "PayNow") and sibling_names("OrderService", "UserService")
    assert not sibling_names("PayPal", "PayPal's") and not sibling_names("Visa", "Mastercard")
    answer = "The nightly export failed in UserService with a timeout."
    assert not semantic_match(answer, "The export failed in OrderService.", backend="embeddings")
    assert semantic_match(answer, "The export failed in UserService.", backend="embeddings")


@pytest.mark.parametrize(
    ("expected", "missing"),
    [
        ("At night it is held at 17 degrees Celsius.", []),
        # the symbol says its own scale only
        ("At night it is held at 17 degrees Fahrenheit.", ["Fahrenheit"]),
    ],
)
def test_a_unit_written_as_its_symbol_is_said(expected: str, missing: list[str]) -> None:
    from cassette.core.meaning import changed_names

    answer = "I set your Nest thermostat to 17°C overnight."
    assert changed_names(answer, expected) == (missing, ["Nest"] if missing else [])


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("Your order, placed on March 3, will be delivered on March 10.", "delivered on March 3"),
        ("Build 412 failed on the test stage; build 411 passed all checks.", "build 411 failed"),
        ("We received your return on May 2 and will refund you by May 9.", "refund by May 2"),
        ("The invoice for $1,200 is due on June 30; a late fee of $50 applies.", "the invoice is for $50"),
    ],
)
def test_embeddings_veto_a_value_said_in_another_role(
    embeddings: SemanticBackend, actual: str, expected: str
) -> None:
    result = semantic_match(actual, expected, backend="embeddings")
    assert not result
    assert result.reason.startswith("role: expected ")


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("Your order, placed on March 3, will be delivered on March 10.", "delivered on March 10"),
        ("The cluster is degraded: 2 of 5 nodes are offline.", "2 nodes offline"),
        ("Your seat was changed from 14C to 22A, a window seat.", "seat changed to 22A"),
        ("Your table for 4 is booked at 7:30 pm tonight.", "reservation for 4 at 7:30 pm"),
        ("Revenue rose to $616.5 million from $610.6 million.", "from $610.6 million to $616.5 million"),
        (
            "Your order total comes to $84.50, including a 10% discount.",
            "You paid $84.50 after the discount.",
        ),
    ],
)
def test_a_value_in_its_own_role_is_not_vetoed(actual: str, expected: str) -> None:
    from cassette.core.meaning import changed_role

    assert changed_role(actual, expected) is None


def test_embeddings_share_the_number_guard(embeddings: SemanticBackend) -> None:
    assert not semantic_match("We refunded $200.", "refunded $20", backend="embeddings")
    assert not semantic_match("Arrives Thursday.", "arrives Tuesday", backend="embeddings")
    assert semantic_match("We refunded $20.", "refunded $20", backend="embeddings")


def test_embeddings_never_import_wordllama(embeddings: SemanticBackend) -> None:
    code = (
        "import sys, logging\n"
        "from cassette.plugins.semantic_embeddings import EMBEDDINGS\n"
        "EMBEDDINGS.score('a refund', 'refund')\n"
        "assert 'wordllama' not in sys.modules\n"
        "assert not logging.getLogger().handlers\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_embedding_scores_stay_in_range(embeddings: SemanticBackend) -> None:
    for actual, expected in [("", "refund"), ("refund", "refund"), ("zzz qqq", "refund"), ("a", "")]:
        value, reason = embeddings.score(actual, expected)
        assert 0.0 <= value <= 1.0 and reason


REFUND_ANSWERS = (
    "I'm sorry about the duplicate charge. I've flagged it, and a refund for the extra payment will reach "
    "your card within 5-7 business days.",
    "Apologies for the double charge! I've opened a refund for the second payment; you should see it back "
    "on your statement within 5-7 business days.",
)


@pytest.mark.parametrize("answer", REFUND_ANSWERS)
def test_embeddings_find_a_short_expectation_inside_a_long_sentence(
    embeddings: SemanticBackend, answer: str
) -> None:
    # a 3-word gist against a 20-word sentence: the sentence's mean vector alone scored 0.44-0.60
    result = semantic_match(answer, "offers a refund", backend="embeddings")
    assert result and "the words " in result.reason
    for unrelated in ("asks for a password", "ships a replacement", "offers a discount", "cancels the plan"):
        assert not semantic_match(answer, unrelated, backend="embeddings"), unrelated


def test_embeddings_windows_keep_the_negation_veto_and_number_guard(embeddings: SemanticBackend) -> None:
    negated = "Sorry, I cannot offer a refund for the duplicate charge, as it was a separate order."
    assert not semantic_match(negated, "offers a refund", backend="embeddings")
    wrong = "We refunded $200 to your card yesterday after checking the order once more."
    assert not semantic_match(wrong, "refunded $20", backend="embeddings")


def test_embedding_windows_stay_within_clauses() -> None:
    from cassette.plugins.semantic_embeddings import windows

    spans = windows(["Sorry about that, we refunded the duplicate charge to your card today."], 2)
    assert "Sorry about that," in spans and "we refunded" in spans
    assert not any("that, we" in s for s in spans)
    assert windows(["A short one."], 2) == []  # shorter than twice the gist: the sentence itself is enough


def test_the_devservers_rewordings_keep_their_facts() -> None:
    # drift tests rerecord against the devserver: a "rewording" that changes a number or flips a
    # negation would be reported as a real regression
    from cassette.review.drift import compare_text
    from cassette.testing.devserver import RULES

    for rule in RULES:
        for old in rule.answers:
            for new in rule.answers:
                category = compare_text(old, new)[0]
                assert category not in ("numbers", "negated"), (rule.name, old, new)
                # and the default backend calls them the same, so semantic_drift filters them
                assert semantic_match(new, old), (rule.name, old, new, semantic_match(new, old).reason)


def test_the_guards_docstring_examples_hold() -> None:
    assert doctest.testmod(meaning).failed == 0


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        ("The rate is non-refundable.", "The rate is fully refundable.", "negated: 'non-refundable'"),
        ("It added a non-null status column.", "the status column allows null values", "negated: 'non-null'"),
        (
            "I skipped adding the Friday strength session.",
            "The Friday strength session was added.",
            "negated: 'skipped … adding'",
        ),
        (
            "Your claim CLM-88310 was approved. The rental car coverage was denied because your policy"
            " does not include it.",
            "The insurer rejected claim CLM-88310.",
            "opposite: expected 'rejected', answer says 'approved' of it",
        ),
        (
            "The post is scheduled for Thursday at 9:00 am ET.",
            "The post will go out at 9:00 pm ET.",
            "expected '9:00 pm', answer has '9:00 am'",
        ),
        (
            "You are third in line, with a wait of about 4 weeks.",
            "the wait is about 4 months",
            "expected '4 months', answer has '4 weeks'",
        ),
        (
            "The login service returned errors for 37 minutes.",
            "the errors went on for about an hour and a half",
            "expected 'an hour and a half', answer has '37 minutes'",
        ),
    ],
)
def test_a_prefix_a_skip_a_reason_half_a_day_and_a_unit_are_read(
    actual: str, expected: str, reason: str
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected", "vetoed"),
    [
        # a time with its half of the day is said by that time, whatever number holds its hour
        ("Imaged with Windows 11; ready on Tuesday after 9 a.m.", "ready on Tuesday after 11 a.m.", True),
        ("A reminder at 9:00 p.m. for the statin.", "The statin reminder goes off at 9 in the morning", True),
        ("A reminder at 9:00 a.m. for the statin.", "the statin reminder is at 9 in the morning", False),
        ("I booked the 7:30 a.m. ferry; the 11:00 one was full.", "the 11 am ferry was full", False),
        ("The sync runs at 16:00; a report follows at 5 pm.", "the sync runs at 4:00 pm", False),
    ],
)
def test_a_time_with_its_half_of_the_day_is_that_time(actual: str, expected: str, vetoed: bool) -> None:
    assert (guard(actual, expected) is not None) is vetoed


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("The rate is non-refundable.", "the rate cannot be refunded"),
        ("I did not deploy to staging.", "staging deploy skipped"),
        ("Your account will unlock in 30 minutes.", "locked for half an hour"),
        ("Your flight is delayed by 45 minutes.", "it leaves three-quarters of an hour late"),
        ("It lasted 90 minutes.", "it took an hour and a half"),
        ("It unlocks in 24 hours.", "it unlocks within a day"),
        ("The post goes out Thursday at 9:00 am ET.", "posted at 9 AM on Thursday"),
        ("Your plan is $30 a month for 2 months.", "the plan costs $30 a month"),
    ],
)
def test_the_same_prefix_skip_time_and_duration_said_another_way_pass(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        ("Eco mode stays on for weekends.", "Eco mode was turned off for weekends.", "opposite"),
        (
            "Total cholesterol is 212 mg/dL, slightly above the recommended 200.",
            "cholesterol was below it",
            "opposite",
        ),
        ("The cap is only $50,000, which is below our standard.", "the cap exceeds our standard", "opposite"),
        (
            "It was delivered on Monday, two days ahead of the deadline.",
            "it was delivered after the deadline",
            "opposite",
        ),
        (
            "Scaled the checkout deployment in the prod-eu namespace from 4 to 10 replicas.",
            "The checkout deployment was scaled down.",
            "opposite",
        ),
        (
            "The final project has not been submitted yet.",
            "The final project has already been handed in.",
            "tense",
        ),
        (
            "Your donation was processed. The tax receipt was emailed to you.",
            "The tax receipt has not been sent yet.",
            "tense",
        ),
    ],
)
def test_a_state_a_limit_a_deadline_a_direction_and_not_yet_are_read(
    actual: str, expected: str, reason: str
) -> None:
    assert (guard(actual, expected) or "").startswith(reason)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (
            "The car went from 18% to 80%, adding 47 kWh.",
            "the battery was charged from 18 percent up to 80 percent",
        ),
        ("The project has not been submitted yet.", "the project is not handed in yet"),
        ("Your receipt was emailed to you.", "the receipt has already been sent"),
        ("CPU stayed above 85% for 15 minutes.", "CPU was above 85 percent"),
    ],
)
def test_the_same_state_limit_and_change_said_another_way_pass(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


def test_a_value_before_a_compound_noun_is_the_nouns() -> None:
    answer = "126 of 128 order lines were picked by 10:40. Two lines failed because the bin was empty."
    assert changed_role(answer, "126 of 128 lines picked") is None


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        # a pronoun is what failed; the rest of the clause is said
        (
            "I quarantined test_checkout_timeout after it failed 7 of 50 runs.",
            "test_checkout_timeout quarantined",
        ),
        # the answer puts the value after the word
        ("The original charge from April 28 is legitimate.", "the April 28 charge was valid"),
        ("Recall rose to 0.87, and p95 latency stayed at about 40 ms.", "latency was essentially unchanged"),
        (
            "Most of the increase came from Android; iOS was flat.",
            "growth came from Android while iOS held steady",
        ),
        ("They can't promise the food is free of nuts.", "the caterer cannot guarantee a nut-free meal"),
        ("No changes were made to the international fund.", "international fund untouched"),
        (
            "His account had been locked after 5 failed attempts; it's unlocked now.",
            "j.ortiz account unlocked",
        ),
        ("Base salary was raised from $145,000 to $152,000.", "base raised to $152k"),
        ("Overall the project is still within the $4.2M budget.", "within its $4.2 million budget"),
        ("The last ferry leaves at 8:45 pm.", "the final departure is at a quarter to nine"),
        ("Restoration is expected at 6:30 pm today.", "power back at half past six"),
        ("The store opens at 12 pm.", "it opens at noon"),
        ("I lowered the TTL to 300 seconds.", "The TTL was cut to five minutes."),
        (
            "Ports are Nassau and St. Thomas, with three sea days. The Cozumel stop was removed.",
            "The sailing includes three days at sea.",
        ),
        ("Web traffic actually declined by about 2%.", "web traffic dipped slightly"),
        (
            "The upgrade to business cleared. They can't seat you together today.",
            "you won't sit together today",
        ),
    ],
)
def test_said_alike_in_this_round_s_new_ways(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "Your load is now 12 credits, which keeps you full-time.",
            "you are a part-time student",
            "opposite",
        ),
        ("Variant B lifted trial signups by 4.1%.", "Variant B caused trial signups to drop.", "opposite"),
        (
            "The foundation pour finished two days ahead of schedule.",
            "the pour was two days behind schedule",
            "opposite",
        ),
        (
            "He checked the water heater, which is working fine.",
            "The water heater turned out to be faulty.",
            "opposite",
        ),
        (
            "I bumped lodash from 4.17.20 to 4.17.21.",
            "lodash was rolled back from 4.17.21 to 4.17.20",
            "expected '4.17.20'",
        ),
        ("I lowered the TTL to 300 seconds.", "The TTL was cut to 300 minutes.", "expected '300 minutes'"),
        ("The bank declined the payment of $20.", "the payment went through", "negated"),
    ],
)
def test_contradicted_in_this_round_s_new_ways(actual: str, expected: str, reason: str) -> None:
    assert (guard(actual, expected) or "").startswith(reason)


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        ("The printer is back in service as of 11 am.", "The printer is still out of service.", "opposite"),
        (
            "There were no keyboard traps, and screen reader testing went fine.",
            "screen reader testing went badly",
            "opposite",
        ),
        (
            "Released 2.3.0, but I dropped Python 3.8 support as planned.",
            "Python 3.8 support was kept",
            "opposite",
        ),
        ("The taxi receipt was too blurry, so I left it out.", "The taxi receipt was included.", "opposite"),
        (
            "The W-9 is on file, but the security questionnaire is still outstanding.",
            "the questionnaire is completed",
            "opposite",
        ),
        (
            "His account had been locked after 5 failed attempts; it's unlocked now.",
            "His account remains locked.",
            "opposite",
        ),
        (
            "I've issued a full refund of $49.99 to your Visa card.",
            "your card was charged $49.99",
            "opposite",
        ),
    ],
)
def test_service_how_it_went_dropped_left_out_outstanding_and_remains_are_read(
    actual: str, expected: str, reason: str
) -> None:
    assert (guard(actual, expected) or "").startswith(reason)


def test_a_verb_before_none_and_an_acronym_of_capitalised_words_are_said_alike() -> None:
    assert (
        guard("The plan adds 4 resources, changes 2 and destroys none.", "plan destroys no resources") is None
    )
    assert guard("The plan adds 4 resources and destroys 3.", "plan destroys no resources") is not None
    answer = "LCP is now 3.1 s, still above the 2.5 s target."
    assert changed_names(answer, "Largest Contentful Paint hasn't reached the 2.5-second goal.") == ([], [])


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (
            "I ran the query for Q3: there were 1,284 orders from 312 distinct customers.",
            "1,284 orders in Q3",
        ),
        (
            "Seven nights at $48 per night, for a total of $336.",
            "The stay costs $336 in total, which is seven nights at $48 each.",
        ),
        (
            "Mowing every Tuesday, fertilizer in April. The first mow is April 9.",
            "The lawn will be mowed each Tuesday.",
        ),
        (
            "Nginx was reloaded on both load balancers, so no downtime.",
            "reloading Nginx on the two load balancers caused no outage",
        ),
        ("No one reported losing data.", "There were zero reports of lost data."),
        (
            "The pad thai contains peanuts, so it isn't safe for a peanut allergy.",
            "pad thai unsafe for peanut allergy",
        ),
        (
            "The AC wasn't cooling because the capacitor had failed. He replaced it.",
            "failed capacitor replaced",
        ),
        (
            "The green curry has no peanuts or tree nuts.",
            "The green curry is free of both peanuts and tree nuts.",
        ),
        ("The refrigerant level is fine, so no recharge was needed.", "no refrigerant recharge needed"),
        (
            "Velocity is up from 29 points last sprint.",
            "velocity increased compared with the previous sprint's 29 points",
        ),
        ("The report is now pending approval from Helen.", "Helen still has to approve the report."),
    ],
)
def test_said_alike_codes_commas_both_zero_un_free_of_and_to_do(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None and changed_role(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        ("Your registration is active at 18 Birch Lane.", "Your voter registration has lapsed.", "opposite"),
        ("Her DHPP booster has been overdue since August.", "The DHPP booster is up to date.", "opposite"),
        (
            "Velocity is up from 29 points last sprint.",
            "Velocity went down compared with the last sprint.",
            "opposite",
        ),
        (
            "The team agreed to push the launch from May 6 to May 20.",
            "The program will now launch on May 6.",
            "expected '6'",
        ),
        (
            "Most complaints mention the sync with Apple Health.",
            "Hardly anyone complained about the sync.",
            "not negated",
        ),
    ],
)
def test_lapsed_up_to_date_up_from_push_and_hardly_are_read(actual: str, expected: str, reason: str) -> None:
    assert (guard(actual, expected) or "").startswith(reason)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("Coverage went from 78% to 83%.", "test coverage climbed from 78 to 83 percent"),
        (
            "It does not happen on Chrome or Firefox, and the file actually reaches the server.",
            "the file does reach the server",
        ),
        (
            "I scheduled the Q3 board meeting for Thursday, October 9, from 10:00 to 13:00.",
            "Q3 board meeting on October 9",
        ),
        (
            "Six of the seven directors confirmed; Helen Park declined.",
            "Every director except Helen Park confirmed.",
        ),
        ("The meeting is at 14:00.", "the meeting is at 2 pm"),
    ],
)
def test_a_percent_range_a_new_clause_a_date_after_a_comma_an_exception_and_a_24_hour_time(
    actual: str, expected: str
) -> None:
    assert guard(actual, expected) is None and changed_role(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "I rebooked you on the 09:05 service, arriving at 11:18.",
            "The replacement train gets in at 12:18.",
            "expected '12:18'",
        ),
        (
            "The cycle count in Warehouse B found 1,140 units.",
            "The cycle count was done in Warehouse C.",
            "expected 'Warehouse C'",
        ),
        ("I reproduced the bug on Safari 17.", "I wasn't able to reproduce the upload bug.", "not negated"),
        (
            "The plan has daily band exercises at home.",
            "The plan doesn't include any exercises to do at home.",
            "not negated",
        ),
        ("Boxes will go up 12% from September 1.", "Northfield is cutting its prices for boxes.", "opposite"),
        (
            "I moved your dinner from Friday at 7:30 p.m. to Saturday at 8:00 p.m.",
            "Your dinner is now on Saturday at 7:30 p.m.",
            "expected '7:30'",
        ),
    ],
)
def test_times_letters_able_include_cutting_and_an_old_time_are_read(
    actual: str, expected: str, reason: str
) -> None:
    assert (guard(actual, expected) or "").startswith(reason)


def test_a_short_sentence_with_several_names_is_no_heading() -> None:
    answer = "You're registered for KubeCon Europe in Amsterdam, March 19-21."
    assert changed_names(answer, "You're registered for KubeCon Europe in Paris.") == (
        ["Paris"],
        ["Amsterdam"],
    )
    assert changed_names("Obama signs the bill.", "Son Found Dead At Home") == ([], [])


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "Your Honda Civic passed the safety inspection, but it failed the emissions test.",
            "The Civic failed the safety inspection.",
            "opposite",
        ),
        (
            "Boxes go up 12% from September 1; Errors were jumping from 20 to 1,450 an hour.",
            "errors dropped",
            "opposite",
        ),
        ("The appeal was accepted for review.", "The appeal was approved.", "opposite"),
    ],
)
def test_a_pronoun_said_of_another_thing_and_accepted_for_review_are_read(
    actual: str, expected: str, reason: str
) -> None:
    assert (guard(actual, expected) or "").startswith(reason)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (
            "A deposit is paid; the balance is due by September 1.",
            "The remaining balance must be paid by September 1.",
        ),
        ("He checked the water heater, which is working fine.", "the water heater was found to be working"),
        ("I did not run VACUUM FULL because it locks the table.", "VACUUM FULL was avoided"),
        (
            "You finished 7 of the 10 modules. The final project is still outstanding.",
            "the final project is still outstanding",
        ),
        ("I booked you into the 6:15 PM spin class on Thursday.", "Thursday spin class booked"),
    ],
)
def test_to_do_avoided_a_state_of_another_thing_and_a_value_of_another_kind_pass(
    actual: str, expected: str
) -> None:
    assert guard(actual, expected) is None and changed_role(actual, expected) is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "I haven't published the draft; it is in the editor for your approval.",
            "The draft is still pending.",
            None,
        ),
        (
            "The draft got your approval and is published.",
            "The draft is still pending.",
            "opposite: expected 'pending', answer says 'approval'",
        ),
        (
            "I filed the purchase order; it needs approval from finance.",
            "The purchase order is still pending.",
            None,
        ),
        (
            "Finance gave its approval to the purchase order.",
            "The purchase order is still pending.",
            "opposite: expected 'pending', answer says 'approval'",
        ),
    ],
)
def test_a_decision_needed_or_asked_for_is_not_yet_made(
    actual: str, expected: str, reason: str | None
) -> None:
    assert guard(actual, expected) == reason


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (
            "I ran the suite: 1,284 tests passed and 3 failed. All three failures are in test_export.py.",
            "The failing tests are all in one file.",
        ),
        (
            "I turned off the flag in production, while leaving it enabled in staging.",
            "flag disabled in production",
        ),
        (
            "I scaled it down but did not delete it, since the ML team owns it.",
            "The cluster belongs to the ML team.",
        ),
        ("14 users were reviewed, and 3 were revoked because they left.", "3 users revoked"),
        ("I booked two adult tickets on the 7:30 a.m. ferry on July 9.", "ferry booked for July 9"),
        (
            "The change fee is $75, plus a $40 fare difference.",
            "a seventy-five dollar fee and forty dollars in fare difference",
        ),
        ("The registrar approved it because of your documented conflict.", "reschedule approved"),
    ],
)
def test_all_said_of_a_place_a_side_in_another_word_since_be_a_date_run_and_units_pass(
    actual: str, expected: str
) -> None:
    assert guard(actual, expected) is None and changed_role(actual, expected) is None
    assert swapped_modifiers(actual, expected) == []


def test_a_side_said_of_another_thing_and_a_label_number_are_read() -> None:
    assert guard("You'll keep ESPN and add beIN Sports, but you'll lose HBO.", "HBO removed") is None
    answer = "Section 01 is still open with 5 seats; you are on the waitlist for section 02."
    assert guard(answer, "Section 01 has 2 open seats.") == "expected '2', answer has '01', '5', '02'"


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("Latency is up 30 ms since the cache was turned off.", "the cache is on"),
        ("The backlog is down to 2,100 and shrinking.", "The backlog is still growing."),
        (
            "Lag started growing at 09:40. I restarted the consumer, and lag is now decreasing.",
            "Lag keeps growing.",
        ),
    ],
)
def test_a_state_at_the_text_s_end_shrinking_down_to_and_keeps_are_read(actual: str, expected: str) -> None:
    assert (guard(actual, expected) or "").startswith("opposite")


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (
            "An engineer is booked for Tuesday between 1 and 5 p.m.",
            "The engineer is coming on Tuesday morning.",
        ),
        (
            "Marcus Bell's load to Dallas was cancelled by the shipper.",
            "Marcus Bell's Dallas load is still going ahead.",
        ),
        (
            "Because of the forecast, we called off Friday's pre-party.",
            "Friday's pre-party is going ahead as planned.",
        ),
        (
            "The panel passed inspection, but the garage outlet is still dead.",
            "The garage outlet is working now.",
        ),
        (
            "I rerouted Bus 14 around the Maple Avenue bridge closure.",
            "The Maple Avenue bridge has reopened.",
        ),
        ("The vancomycin shortage has eased.", "The vancomycin shortage has gotten worse."),
        ("Errors are back to baseline.", "Error rates are still elevated."),
    ],
)
def test_a_clock_time_s_part_of_day_and_more_states_are_read(actual: str, expected: str) -> None:
    assert (guard(actual, expected) or "").startswith("opposite")


def test_a_generic_word_before_a_noun_and_a_refusal_in_both_are_said_alike() -> None:
    answer = "I've switched your mobile plan from Unlimited Plus to Essentials, starting next cycle."
    assert swapped_modifiers(answer, "The new plan kicks in next cycle.") == []
    answer = "I approved the roof claim; the siding claim was denied because the damage predates the policy."
    assert guard(answer, "The siding damage predates the policy, so that claim was rejected.") is None


@pytest.mark.parametrize(
    ("actual", "expected", "reason"),
    [
        (
            "The DMV processed the title transfer from Mark Ellis to you.",
            "The title went from you to Mark Ellis.",
            "swapped",
        ),
        (
            "Two items were substituted: the oat milk was replaced with almond milk.",
            "The almond milk was replaced with oat milk.",
            "swapped",
        ),
        (
            "I skipped your box for that week, so you won't be charged.",
            "You will still be billed for that week.",
            "negated",
        ),
    ],
)
def test_two_things_the_other_way_round_and_a_side_denied_in_another_word_are_read(
    actual: str, expected: str, reason: str
) -> None:
    assert (guard(actual, expected) or "").startswith(reason)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("Your leave runs 12 weeks starting June 3.", "The leave begins on the third of June."),
        (
            "The card payment came back with a funds decline. I retried it and it went through.",
            "payment retry succeeded",
        ),
        ("I moved the meeting from Monday to Tuesday.", "the meeting moved from Monday to Tuesday"),
        ("The monthly amount stays $1,842.60.", "The payment amount remains $1,842.60 a month."),
    ],
)
def test_an_ordinal_date_a_noun_decline_and_the_same_order_pass(actual: str, expected: str) -> None:
    assert guard(actual, expected) is None


@pytest.mark.parametrize(
    "answer",
    [
        "Your gym switched you to the off-peak plan, and the cancellation fee was waived as a courtesy.",
        "As a courtesy they waived your cancellation fee.",
    ],
)
def test_a_waived_charge_is_a_charge_not_made(answer: str) -> None:
    # "waived", passive or active, denies the fee as "declined" denies the request
    assert guard(answer, "No cancellation fee was charged.") is None
    assert guard(answer, "You were not charged the cancellation fee.") is None
    assert (guard(answer, "You paid the cancellation fee.") or "").startswith("negated: ")


def test_a_number_after_a_determiner_is_in_the_refused_object() -> None:
    # "waived the $40 booking fee": the amount opens the object, the fee is still what is waived
    answer = "The clinic waived the $40 booking fee for your first visit."
    assert guard(answer, "The clinic charged the $40 booking fee.") == "negated: 'waived … fee'"
    assert guard(answer, "The clinic waived the booking fee.") is None
    # a number right after the verb is still how much a thing fell, not what was refused
    assert guard("Traffic declined by 2% this week.", "Traffic dropped this week.") is None


@pytest.mark.parametrize(
    ("answer", "lack", "contradiction"),
    [
        (
            "I answered the two billing emails. I did not reply to the message from the landlord.",
            "The message from the landlord was left unanswered.",
            "I replied to the message from the landlord.",
        ),
        (
            "The old certificate no longer appears in the trust store.",
            "The old certificate is gone from the trust store.",
            "The old certificate appears in the trust store.",
        ),
    ],
)
def test_a_lack_said_in_one_word_says_the_denial_alike(answer: str, lack: str, contradiction: str) -> None:
    # "unanswered", "gone", "undecided" name a lack as "untouched" does: the answer's denial says it
    assert guard(answer, lack) is None
    assert (guard(answer, contradiction) or "").startswith("negated: ")


def test_a_thing_still_so_is_not_done_yet() -> None:
    # "still missing" says "hasn't been received yet", though the answer received other things
    answer = "The bank received your ID scan and two pay stubs, but the signed lease is still missing."
    assert guard(answer, "The signed lease hasn't been received yet.") is None
    assert (
        guard(answer, "The signed lease was received.")
        == "opposite: expected 'received', answer says 'missing' of it"
    )
    # a clause that says it done is no wait, "still" or not
    assert (
        guard(
            "The bank received the signed lease, and it is still in the review queue.",
            "The signed lease hasn't been received yet.",
        )
        or ""
    ).startswith("not negated: ")


def test_none_counted_before_what_is_to_be_done_denies_it() -> None:
    # "0 to drop" is nothing to drop, as "0 critical" is no critical one
    answer = "The dry run of the migration lists 4 to create and 0 to drop."
    assert guard(answer, "The migration drops nothing.") is None
    assert guard(answer, "The migration will drop tables.") == "negated: 'zero … drop'"
    # "from 0 to 5" is still a value
    assert guard("The pool went from 0 to 5 workers.", "the pool has 5 workers") is None


def test_a_refusal_of_a_thing_to_do_is_contradicted_by_doing_it() -> None:
    # "declined to extend", "a request to transfer … was turned down": the verb is what was refused
    answer = "The professor extended your deadline to Friday, so the essay is due then."
    assert (
        guard(answer, "The professor declined to extend the deadline.")
        == "opposite: expected 'declined' of 'declined to extend', answer says 'extended'"
    )
    answer = "Your seat was transferred to the 6 pm show, and the new ticket is in your email."
    assert (guard(answer, "The request to transfer the seat was turned down.") or "").startswith("opposite: ")
    # said under a negation of its own, the answer refuses it too
    answer = "The professor would not extend your deadline, so the essay is still due Monday."
    assert guard(answer, "The professor declined to extend the deadline.") is None


def test_a_decision_noun_after_a_determiner_names_what_was_decided() -> None:
    # "the car loan pre-approval": the thing decided on, so the text says one side (and "its denial" a side)
    answer = "Your car loan pre-approval from Dune Credit came through: up to $30,000 for 60 months."
    assert (
        guard(answer, "Dune Credit declined the car loan pre-approval.")
        == "opposite: expected 'declined the', answer says 'came through'"
    )
    assert guard(answer, "Dune Credit approved the car loan.") is None
    answer = "The insurer reviewed your appeal and upheld its denial of the dental claim."
    assert guard(answer, "The dental claim denial was upheld.") is None


def test_a_separable_phrase_is_read_around_its_object() -> None:
    # "switched the ceiling fans on", "turned the offer down", "ruled him out": one side, object inside
    answer = "The thermostat read 31°C at noon, so I switched the ceiling fans on in both rooms."
    assert guard(answer, "The ceiling fans were kept off all day.") == (
        "opposite: expected 'kept off', answer says 'switched the ceiling fans on'"
    )
    assert guard(answer, "The ceiling fans were switched on.") is None
    answer = "The board reviewed the bid and turned the offer down on Monday."
    assert (guard(answer, "The board accepted the offer.") or "").startswith("opposite: ")
    assert guard(answer, "The board rejected the offer.") is None
    # a particle before a determiner is a preposition: "left the laptop on the desk" says no switch
    assert guard("I left the laptop on the desk.", "The laptop was switched off.") is None
    assert guard("I left the laptop on.", "The laptop was switched off.") == (
        "opposite: expected 'switched off', answer says 'left the laptop on'"
    )


def test_a_state_said_next_of_it_is_said_of_the_amount_s_thing() -> None:
    # "Build 4.1 broke …, so I rolled it back": "it" is the build its number names
    answer = "Build 4.1 broke the login page for 30% of users, so I rolled it back to 4.0 at noon."
    assert (
        guard(answer, "Build 4.1 remains deployed.")
        == "opposite: expected 'deployed', answer says 'rolled it back'"
    )
    assert guard(answer, "Build 4.1 was rolled back.") is None
    # with no pronoun the side is still said of another thing
    assert (
        guard(
            "General tickets are £12 for adults. Season-ticket holders get in free.",
            "Adult tickets cost £12.",
        )
        is None
    )


def test_a_thing_kept_as_it_was_is_not_changed() -> None:
    # "was left in single-sided mode", "is staying on", "was kept on": a verb of change in the past ends it
    answer = "I switched the office printer to duplex mode this morning."
    assert guard(answer, "The office printer was left in single-sided mode.") == (
        "opposite: expected 'left', answer says 'switched'"
    )
    assert guard(answer, "The office printer now prints in duplex mode.") is None
    # the answer keeps it too, and says the change of another thing
    answer = "The office printer stays in duplex mode; I switched the lobby printer to draft quality."
    assert guard(answer, "The office printer was left in duplex mode.") is None
    # "still" is ended by a change too ("switched"), and "the stay" is a noun
    assert guard(
        "I switched the team channel to the weekly digest.", "The team channel still gets daily emails."
    ) == ("opposite: expected 'still gets', answer says 'switched'")
    # a level said back to normal is read by the 'normal' family first
    assert guard(
        "Queue depth went back to normal after I added two consumers.", "Queue depth is still high."
    ) == ("opposite: expected 'still high', answer says 'back to normal'")
    answer = "Guests in room 4 were comped breakfast for their whole stay, and I moved them to room 6."
    assert guard(answer, "The guests moved to room 6 get free breakfast for the stay.") is None


def test_an_action_said_not_completed_is_contradicted_by_its_verb_done() -> None:
    # "the reinstall was not completed": "I reinstalled the driver" does it, in a clause of its own
    answer = "I reinstalled the printer driver on your laptop, and test pages print fine now."
    assert guard(answer, "The reinstall was not completed.") == (
        "not negated: expected 'not completed', answer says 'I reinstalled the printer driver on your laptop'"
    )
    answer = "I tried to reinstall the printer driver, but the installer crashed."
    assert guard(answer, "The reinstall was not completed.") is None


def test_a_thing_still_to_happen_is_ended_by_its_cancellation() -> None:
    # "will still take place" is not "I cancelled the team offsite"
    answer = "I cancelled the team offsite that was set for Friday, since half the team is out sick."
    assert guard(answer, "The team offsite will still take place on Friday.") == (
        "opposite: expected 'still take', answer says 'cancelled'"
    )
    # "good-til-cancelled" says how long, not a cancellation
    assert (
        guard(
            "Your limit order remains open as a good-til-cancelled order.", "The limit order is still open."
        )
        is None
    )


def test_a_thing_that_remains_so_is_ended_by_a_verb_that_ends_it() -> None:
    answer = "I deactivated the contractor accounts for Dana Reyes in Okta and Slack on Friday."
    assert guard(answer, "The contractor accounts for Dana Reyes remain active.") == (
        "opposite: expected 'remain', answer says 'deactivated'"
    )
    assert guard(answer, "The contractor accounts for Dana Reyes were deactivated.") is None


def test_a_thing_called_off_is_contradicted_by_its_going_ahead() -> None:
    answer = "Your grocery order from Fresh Mart is on the way; the driver picked it up at 5:10 PM."
    assert guard(answer, "The grocery order from Fresh Mart was cancelled.") == (
        "opposite: expected 'cancelled', answer says 'on the way'"
    )
    answer = "The printer firmware update went live on all floors this morning."
    assert guard(answer, "The printer firmware update was postponed.") == (
        "opposite: expected 'postponed', answer says 'went live'"
    )
    # a booking moved is a booking still
    answer = "Your grocery order from Fresh Mart was moved to the 6-8 PM window."
    assert guard(answer, "The grocery order from Fresh Mart was postponed.") is None


def test_a_thing_left_as_it_was_is_not_done_to() -> None:
    # "were not touched" leaves the archive as it was: "was purged" says something was done to it
    answer = "I purged the temp bucket, freeing 40 GB. The audit log archives were not touched."
    assert (
        guard(answer, "The audit log archives were purged.")
        == "negated: expected 'purged', answer says 'The audit log archives were not touched'"
    )
    assert guard(answer, "The audit log archives were kept.") is None
    # another numbered thing ("Queue 3") is not the one said done to ("Queue 7")
    assert guard("I drained Queue 7. Queue 3 is unaffected.", "Queue 7 drained") is None


def test_a_thing_not_available_is_not_there() -> None:
    # "wasn't available" denies its subject, said nowhere else
    answer = "Your table at Nopa is booked for 7 pm. A valet service wasn't available, so park on Fell St."
    assert guard(answer, "The restaurant will provide valet service.") == "negated: 'valet … wasn't'"
    assert guard(answer, "Valet service was unavailable.") is None
    # a subject the expected text says only in part is not the one denied
    assert guard("Window seats were not available, so I took an aisle seat.", "an aisle seat") is None


def test_a_thing_denied_as_not_there_is_there_after_all() -> None:
    # "will not be provided" denies the projector; the answer says it will be there
    answer = "The hall is booked for Friday, and a projector will be set up on the stage."
    assert (guard(answer, "A projector will not be provided.") or "").startswith("not negated: ")
    # a lack side says it is not there in other words
    gone = "The hall is booked for Friday. The projector is out of stock this week."
    assert guard(gone, "A projector will not be provided.") is None


def test_a_refusal_in_the_active_voice_says_a_denial_of_its_object() -> None:
    # "declined the request to let … keep a dog" says "the dog request was denied": the request is
    # what was refused, though the dog comes after it
    answer = "The landlord declined the request to let the upstairs tenants keep a dog in unit 4."
    assert guard(answer, "The dog request for unit 4 was denied.") is None
    assert guard(answer, "The dog request for unit 4 was approved.") == "negated: 'declined … request'"


def test_a_denial_of_the_word_after_the_expected_one_denies_both() -> None:
    # "no office appointment" denies the appointment "no consulate appointment" denies with its modifier
    answer = "Your passport renewal was mailed on May 2, and no office appointment is required."
    assert guard(answer, "no consulate appointment required") is None
    assert guard(answer, "a consulate appointment is required") == "negated: 'no … required'"


def test_the_other_side_of_a_thing_is_an_opposite() -> None:
    # "before" / "after" are stopwords; read with the word they are said of
    answer = "I paid the parking fine on Tuesday, two days before the due date."
    assert guard(answer, "the fine was paid before the due date") is None
    assert guard(answer, "the fine was paid after the due date") == (
        "opposite: expected 'after … due', answer says 'before'"
    )
    assert guard("We reached the gate after the storm had passed.", "got to the gate before the storm") == (
        "opposite: expected 'before … storm', answer says 'after'"
    )
    # an adverb of the answer's own order says the side too
    answer = "I backed up the disk before wiping it. I checked the backup afterwards."
    assert guard(answer, "the backup was checked after wiping") is None
    assert guard("I backed up the disk before wiping it.", "backed up after wiping") is not None


def test_the_other_way_said_where_the_answer_says_both_ways() -> None:
    # the sentences about it say only the other way, whatever the rest of the answer says
    answer = "Your commute took 12 minutes less than last week. Traffic on the bridge grew heavier."
    assert guard(answer, "the commute took 12 minutes more than last week") == (
        "opposite: expected 'more', answer says 'less'"
    )
    assert guard(answer, "the commute took 12 minutes less than last week") is None
    # and the verbs of making an amount go one way
    assert guard("I raised the upload limit from 10 MB to 25 MB.", "the upload limit was lowered") == (
        "opposite: expected 'lowered', answer says 'raised'"
    )
    assert guard("The queue length kept falling all night.", "the queue was still growing") is not None


def test_a_change_of_value_says_the_way_it_went() -> None:
    # "from 1.5 seconds to 90 ms" and "45 days instead of 30" say which way, in its units
    answer = "After the cache warmed up, page loads went from 1.5 seconds to 90 ms."
    assert guard(answer, "page loads got slower") == (
        "opposite: expected 'slower', answer says 'from 1.5 seconds to 90 ms'"
    )
    assert guard(answer, "page loads got faster") is None
    kept = "Invoices are now kept for 45 days instead of 30."
    assert guard(kept, "invoices are kept for a shorter time") == (
        "opposite: expected 'shorter', answer says '45 days instead of 30'"
    )


def test_one_word_is_enough_when_it_is_all_the_answer_says_of_it() -> None:
    # the answer names both studios and says only "waitlist" of the expected claim: of the other one
    answer = "You are on the waitlist for studio 4, while studio 2 still has open spots."
    assert said_of_another(answer, "The dancer is on the waitlist for studio 2.") == (
        "said of another: expected it of 'studio 2', answer says it of 'studio 4'"
    )
    assert said_of_another(answer, "The dancer is on the waitlist for studio 4.") is None


def test_plenty_of_a_thing_is_not_a_thing_running_low() -> None:
    answer = "The 9:40 shuttle is overbooked, so I put you on the 10:10 one."
    assert guard(answer, "the 9:40 shuttle has plenty of seats") == (
        "opposite: expected 'plenty of', answer says 'overbooked'"
    )
    surplus = "floor 3 has a surplus of printer paper"
    assert guard("Printer paper is running low on floor 3.", surplus) is not None
    assert guard("We have plenty of printer paper on floor 3.", surplus) is None


def test_a_level_back_under_its_mark_is_no_longer_elevated() -> None:
    answer = "After the cache fix, p95 latency is back under 200 ms."
    assert guard(answer, "p95 latency remains elevated after the fix") == (
        "opposite: expected 'elevated', answer says 'back under'"
    )
    assert guard("Queue depth is still high after the restart.", "queue depth is back to normal") is not None


def test_a_thing_found_in_good_shape_is_not_in_poor_shape() -> None:
    answer = "The surveyor found the chimney in good condition; the gutters need clearing."
    assert guard(answer, "the chimney is in poor shape") == (
        "opposite: expected 'in poor shape', answer says 'in good condition'"
    )
    assert guard("The brake fluid was fine, so they left it.", "the brake fluid was fine") is None


def test_a_change_said_with_its_verb_is_read_in_its_units() -> None:
    # "from 2 seconds to 300 ms" went down, though 300 is more than 2: both readers of a change of value
    # (the "level" side of "changed … from … to …" and `_other_change`) read a figure in its unit
    answer = "I changed the request timeout from 2 seconds to 300 ms."
    assert guard(answer, "The request timeout was raised.") == (
        "opposite: expected 'raised', answer says 'changed the request timeout from 2 seconds to 300 ms'"
    )
    assert guard(answer, "The request timeout was lowered.") is None
    assert guard("I changed the donation from $30 to $45.", "the donation was raised") is None
