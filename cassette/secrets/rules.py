"""The rule engine's unit: :class:`SecretRule` (one kind of secret), and what a rule's finding is
known by: its entropy test, its fingerprint and its masked form (``…xYz8``), never the secret.

Rules come from the ``cassette_secret_rules`` hook: the caller asks its plugin manager
(:func:`rules_from_plugins`) and hands the rules to the scanner or the redactor; this package never
asks a plugin itself.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cassette.errors import CassetteConfigError

__all__ = ["SecretRule", "fingerprint", "mask", "rules_from_plugins", "shannon_entropy"]


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

        mask(rule, key) == "sk-proj-…Xy12"  # the rule's longest prefix the key starts with
    """
    head = ""
    for p in rule.prefixes:
        if len(p) > len(head) and secret.startswith(p):
            head = p
    head = head[:16]
    tail = secret[-4:] if len(secret) - len(head) >= 12 else ""
    return f"{head}…{tail}"


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
