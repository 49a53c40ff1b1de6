"""Random key-shaped strings for the scanner tests (each module seeds its own generator)."""

from __future__ import annotations

import random
import string

ALNUM = string.ascii_letters + string.digits
_CLASSES = (string.ascii_uppercase, string.ascii_lowercase, string.digits)


def random_key(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """A random string; long ones use every character class of the alphabet, as real keys do."""
    classes = [set(c) & set(alphabet) for c in _CLASSES]
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if n < 8 or all(set(s) & c for c in classes if c):
            return s
