"""Values a keyword-named YAML block list or map holds: the raw text names the key only before the
first item (``api_keys:`` then ``- …`` lines), so each item is scanned again as ``key: item``."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate

from cassette.secrets.engine import Engine, Hit
from cassette.secrets.registry import describes, plural_secret_name, says_password

__all__ = ["list_hits"]

# YAML block lists (`api_keys:` ending its line, then `- item` lines): the raw text names the key only
# before the first item, so each item is scanned again as `key: item`.
# After a keyword: the rest of a key that ends its line (quoted or not, a comment after it).
_YAML_KEY_END = re.compile(rb"""([A-Za-z0-9_.-]{0,40})["']?[ \t]*:[ \t]*(?:#[^\r\n]*)?\r?\n""")
# A line's text before the keyword: its indent (and a `- ` when the key opens a list item), a quote.
_YAML_KEY_HEAD = re.compile(rb"""([ \t]*(?:-[ \t]+)?)["']?([A-Za-z0-9_.-]{0,40})\Z""")

_YAML_MAX_ITEMS = 1000


def _yaml_items(
    data: bytes, p: int, lo: int, hi: int, keyword: Callable[[str], bool] | None = None
) -> tuple[bytes, list[tuple[int, int]]] | None:
    """The key whose name holds the keyword at ``p`` and the (start, end) of each item of the YAML
    block list it names, or of each value of the block map it names when its name is a plural
    secret name (see :func:`_yaml_map`), within ``data[lo:hi]``; None when the key names neither."""
    m = _YAML_KEY_END.match(data, p, hi)
    if m is None:
        return None
    ls = data.rfind(b"\n", lo, p) + 1 or lo
    head = _YAML_KEY_HEAD.search(data, ls, p)
    if head is None:
        return None
    name = head.group(2) + m.group(1)
    # a key after other text (`Keys: api_keys:`, a JSON string's first line) has no known column
    column = len(head.group(1)) if head.start() == ls else 0
    items: list[tuple[int, int]] = []
    item_column = -1
    for pos, line, body, indent in _lines(data, m.end(), hi):
        if len(items) >= _YAML_MAX_ITEMS:
            break
        if not body or body[:1] == b"#" or indent > item_column >= 0:
            continue  # a blank line, a comment, or inside an item
        if body[:2] not in (b"- ", b"-\t") or indent < column or (item_column >= 0 and indent != item_column):
            if not items and indent > column and plural_secret_name(name.decode("ascii")):
                # no list: a map under a plural name (`api_keys:` then `  prod: …`)
                text = name.decode("ascii")
                values = _yaml_map(data, pos, hi, column, keyword, says_password(text))
                return (name, values) if values else None
            break  # the list is over (or there was none)
        item_column = indent
        start, end = pos + indent + 1, pos + len(line)
        while start < end and data[start] in b" \t":
            start += 1
        items.append((start, end))
    return (name, items) if len(items) > 1 else None


def _lines(data: bytes, pos: int, hi: int) -> Iterator[tuple[int, bytes, bytes, int]]:
    """``(start, line, body, indent)`` for each line of ``data[pos:hi]``: where it starts, its text
    without the line break, that text after its indent (spaces and tabs), and the indent's width."""
    while pos < hi:
        eol = data.find(b"\n", pos, hi)
        if eol < 0:
            eol = hi
        line = data[pos:eol].rstrip(b"\r")
        body = line.lstrip(b" \t")
        yield pos, line, body, len(line) - len(body)
        pos = eol + 1


# A line of a YAML block map: its key, plain or quoted, then `:` and a blank or the line's end.
_YAML_MAP_KEY = re.compile(
    rb"""(?:"([^"\r\n]{1,80})"|'([^'\r\n]{1,80})'|([A-Za-z0-9_$][A-Za-z0-9_.$ /-]{0,79}?))"""
    rb"""[ \t]*:(?:[ \t]+|\Z)"""
)


def _yaml_map(
    data: bytes, pos: int, hi: int, column: int, keyword: Callable[[str], bool] | None, numeric: bool
) -> list[tuple[int, int]]:
    """The (start, end) of each value of the YAML block map starting at ``pos`` (its lines indented
    deeper than ``column``) under a plural secret name: its values, and the scalars nested deeper in
    maps and lists of scalars (``passwords:`` / ``  prod:`` / ``    db: …``), as the JSON scan reads
    ``{"passwords": {"prod": {"db": …}}}`` (see :func:`_collect`). A key whose name holds a keyword
    is left to the scan of its own line, and so is, nested, a key describing the secret (``id``,
    ``name``, ``created_at``), with what is under it; so are the records of a list (``- name: …``)
    and block scalars (``key: |``). A number nested deeper than the map's values counts only when
    the plural name says password (``numeric``), as in JSON."""
    items: list[tuple[int, int]] = []
    openers: list[int] = []  # the indent of each key whose nested map the line is in
    skip = -1  # lines indented deeper than this belong to something not read
    for start, _, body, indent in _lines(data, pos, hi):
        if len(items) >= _YAML_MAX_ITEMS:
            break
        at = start + indent
        if not body or body[:1] == b"#":
            continue
        if indent <= column:
            break  # the map is over
        if skip >= 0:
            if indent > skip:
                continue
            skip = -1
        while openers and openers[-1] >= indent:
            openers.pop()
        depth = len(openers) + 1
        if body[:2] in (b"- ", b"-\t"):
            rest = body[2:].lstrip(b" \t")
            if _YAML_MAP_KEY.match(rest) is not None:
                skip = indent  # a record in a list: read by its own names
            elif rest and rest[:1] != b"#":
                items.append((at + len(body) - len(rest), at + len(body)))
            continue
        m = _YAML_MAP_KEY.match(body)
        if m is None:
            if not items and not openers:
                return []  # not a map after all
            continue  # the rest of a value written over several lines
        name = (m.group(1) or m.group(2) or m.group(3)).decode("utf-8", "replace")
        value = body[m.end() :]
        own = (depth > 1 and describes(name)) or (keyword is not None and keyword(name))
        if not value or value[:1] == b"#":
            if own:
                skip = indent
            else:
                openers.append(indent)
            continue
        if own:
            continue
        if value[:1] in (b"|", b">"):
            skip = indent  # a block scalar: its lines are text, not keys
            continue
        if depth > 1 and value.isdigit() and not numeric:
            continue  # a number nested in a key's record (a date, a size), as in JSON
        items.append((at + m.end(), at + len(body)))
    return items


def list_hits(engine: Engine, data: bytes, keyword_cands: list[int], starts: list[int] | None) -> list[Hit]:
    """Secrets in the items of the YAML block lists named by a keyword at one of ``keyword_cands``
    (offsets in ``data``), each item scanned as ``key: item``; with ``starts``, a list never runs
    from one segment into the next."""
    segments: list[bytes] = []
    origins: list[int] = []  # where each segment's item starts in data
    heads: list[int] = []  # the length of each segment's `key: `
    done: set[int] = set()
    for p in sorted(set(keyword_cands)):
        if starts is None:
            lo, hi = 0, len(data)
        else:
            seg = bisect_right(starts, p) - 1
            lo = starts[seg]
            hi = starts[seg + 1] - 1 if seg + 1 < len(starts) else len(data)
        found = _yaml_items(data, p, lo, hi, engine.has_keyword)
        if found is None:
            continue
        name, items = found
        for s, e in items:
            if s in done:
                continue
            done.add(s)
            segments.append(name + b": " + data[s:e])
            origins.append(s)
            heads.append(len(name) + 2)
    if not segments:
        return []
    text = b"\n".join(segments)
    seg_starts = [0, *accumulate(len(x) + 1 for x in segments)][:-1]
    out: list[Hit] = []
    for i, s, e in engine.hits(text, seg_starts):
        j = bisect_right(seg_starts, s) - 1
        at = s - seg_starts[j] - heads[j]
        if at >= 0:
            out.append((i, origins[j] + at, origins[j] + at + e - s))
    return out
