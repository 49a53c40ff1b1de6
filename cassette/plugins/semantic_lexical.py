"""The ``lexical`` semantic backend, and the text guards every backend shares.

``lexical`` asks: does the answer contain the expected text's content words?
It lowercases, drops stopwords, strips common suffixes, and measures how much
of the expected text the answer covers, so a long answer that contains the
expected meaning passes. The guards of :mod:`cassette.core.meaning` sit on top, shared with
the other backends and with drift review:

- negation polarity: "I cannot offer a refund" does not match "offers a refund",
  but it does match "no refund";
- an exact guard for numbers, amounts, weekdays and months: "$20" is not "$200",
  "Tuesday" is not "Thursday", "March 3" is not "March 4".

It cannot see paraphrases that share no words ("money back" vs "refund"); use
the ``embeddings`` backend (or a model-backed one) for those.
"""

from __future__ import annotations

from cassette.core.meaning import VETO_FACTOR, analyse, compare
from cassette.errors import CassetteConfigError
from cassette.hookspecs import hookimpl


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
