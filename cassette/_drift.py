"""What changed between a committed cassette and a new recording of the same run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cassette._diff import field_diff
from cassette._model import Cassette, Interaction

# Response fields that change on every call of a real model: never drift by themselves.
VOLATILE = frozenset(
    {
        "id",
        "created",
        "created_at",
        "system_fingerprint",
        "usage",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "date",
        "completed_at",
    }
)


@dataclass
class DriftItem:
    """One interaction that differs: ``change`` is added/removed/modified, ``fields`` the paths."""

    seq: int
    kind: str
    change: str
    category: str
    fields: list[str] = field(default_factory=list)
    old: Interaction | None = None
    new: Interaction | None = None

    def __str__(self) -> str:
        where = f" ({', '.join(self.fields[:5])})" if self.fields else ""
        return f"#{self.seq} {self.kind} {self.category}{where}"


def _strip(value: Any, volatile: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [_strip(v, volatile) for v in value]
    return value


def diff_cassettes(old: Cassette, new: Cassette) -> list[DriftItem]:
    """Pair interactions by position and report each real change (volatile-only changes are dropped).

    Example::

        for item in diff_cassettes(load_cassette(a), load_cassette(b)):
            print(item)
    """
    items: list[DriftItem] = []
    n = max(len(old.interactions), len(new.interactions))
    for seq in range(n):
        a = old.interactions[seq] if seq < len(old.interactions) else None
        b = new.interactions[seq] if seq < len(new.interactions) else None
        if a is None and b is not None:
            items.append(DriftItem(seq, b.kind, "added", "added", new=b))
            continue
        if b is None and a is not None:
            items.append(DriftItem(seq, a.kind, "removed", "removed", old=a))
            continue
        assert a is not None and b is not None
        if a.key != b.key:
            req = field_diff(new.hydrate(b.request), old.hydrate(a.request))
            items.append(DriftItem(seq, b.kind, "modified", "request", [p for p, _, _ in req], a, b))
            continue
        ra, rb = old.hydrate(a.response), new.hydrate(b.response)
        if ra == rb:
            continue
        diffs = field_diff(_strip(rb, VOLATILE), _strip(ra, VOLATILE))
        if diffs:
            items.append(DriftItem(seq, b.kind, "modified", "changed", [p for p, _, _ in diffs], a, b))
    return items
