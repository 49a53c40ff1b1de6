"""Secrets written with JSON ``\\u`` escapes in a text: ``"sk-\\u0070roj-…"``, ``"AKIA\\u0049OSF…"``, or a
password ``json.dumps`` wrote as ``"Gr\\u00fc\\u00dfe-Sommer-2024!x"``.

A text holding JSON (a tool's ``json.dumps(result)``, an SSE event's data, a YAML cassette's body)
spells a character as ``\\uXXXX`` where a rule's literal or value expects the character itself. The
text is read with those escapes decoded, and each secret found there is mapped back to where it is
written, escapes included, so the recorder replaces and the scanner reports the whole of it.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from cassette.secrets.engine import Engine, Hit

__all__ = ["escaped_hits", "has_escape", "unescape"]

# one or more backslashes (a JSON text inside JSON doubles them) and four hex digits, or `\/`
_ESCAPE = re.compile(rb"\\+(?:u([0-9a-fA-F]{4})|/)")
# characters an escape stands for that are left escaped: the ones that end a JSON string or a
# line, and lone surrogates (a pair is two escapes, rare in a secret)
_KEEP = frozenset({0x22, 0x5C, *range(0x20)})


def has_escape(data: bytes) -> bool:
    """Whether ``data`` may hold a JSON ``\\u`` (or ``\\/``) escape: one ``find`` each."""
    return b"\\u" in data or b"\\/" in data


def unescape(data: bytes) -> bytes:
    """``data`` with its ``\\uXXXX`` and ``\\/`` escapes decoded as the rules read it (a secret's mask and
    fingerprint are of that form).

    Example::

        unescape(b"AKIA\\\\u0049OSF") == b"AKIAIOSF"
    """
    return _Unescaped(data).text if has_escape(data) else data


class _Unescaped:
    """``data`` with its ``\\uXXXX`` and ``\\/`` escapes decoded, and the way back to its offsets."""

    def __init__(self, data: bytes) -> None:
        out: list[bytes] = []
        self.new: list[int] = []  # where each piece starts in the decoded text
        self.old: list[int] = []  # ... and in data
        self.old_end: list[int] = []  # where an escape ends in data (-1: a plain piece)
        at = pos = 0
        for m in _ESCAPE.finditer(data):
            hexa = m.group(1)
            if hexa is not None:
                code = int(hexa, 16)
                if code in _KEEP or 0xD800 <= code <= 0xDFFF:
                    continue
                char = chr(code).encode("utf-8")
            else:
                char = b"/"
            s, e = m.span()
            if s > pos:
                self._piece(out, data[pos:s], at, pos, -1)
                at += s - pos
            self._piece(out, char, at, s, e)
            at += len(char)
            pos = e
        if pos < len(data):
            self._piece(out, data[pos:], at, pos, -1)
        self.text = b"".join(out)

    def _piece(self, out: list[bytes], piece: bytes, at: int, old: int, old_end: int) -> None:
        out.append(piece)
        self.new.append(at)
        self.old.append(old)
        self.old_end.append(old_end)

    def start(self, p: int) -> int:
        """The offset in data of decoded offset ``p`` (an escape's start for a decoded character)."""
        j = bisect_right(self.new, p) - 1
        return self.old[j] + (p - self.new[j] if self.old_end[j] < 0 else 0)

    def end(self, p: int) -> int:
        """The offset in data where decoded text ending at ``p`` ends (an escape's end, if it ends one)."""
        if p <= 0:
            return 0
        j = bisect_right(self.new, p - 1) - 1
        return self.old[j] + (p - self.new[j]) if self.old_end[j] < 0 else self.old_end[j]


def escaped_hits(engine: Engine, data: bytes, hits: list[Hit], starts: list[int] | None = None) -> list[Hit]:
    """``hits`` (the engine's on ``data``) with the secrets found once ``data``'s ``\\u`` escapes are
    decoded, each at the span it is written in ``data``; a decoded finding wins over a raw one it
    overlaps (the raw one is a part of it). ``hits`` itself when ``data`` has no escape that decodes.

    Example::

        escaped_hits(engine, b'{"k": "AKIA\\\\u0049OSFODNN7EXAMPLE"}', [])  # the key id, escape included
    """
    if not has_escape(data):
        return hits
    view = _Unescaped(data)
    if view.text == data or len(view.new) == 1:
        return hits
    new_starts = None if starts is None else [_new_offset(view, s) for s in starts]
    found = [(i, view.start(s), view.end(e)) for i, s, e in engine.hits(view.text, new_starts)]
    if not found:
        return hits
    kept = [h for h in hits if all(h[2] <= s or h[1] >= e for _, s, e in found)]
    return sorted({*kept, *found}, key=lambda h: (h[1], h[0]))


def _new_offset(view: _Unescaped, old: int) -> int:
    """The decoded offset of offset ``old`` of data (a segment start is never inside an escape)."""
    j = bisect_right(view.old, old) - 1
    return view.new[j] + (old - view.old[j] if view.old_end[j] < 0 else 0)
