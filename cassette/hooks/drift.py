"""The drift summary behind ``cassette drift`` and the ``cassette-drift`` hook.

Pairs each changed cassette with its earlier version (staged vs ``HEAD``, one
revision vs another, or a ``.pending.json`` re-recording vs the committed
file), classifies every changed interaction with :mod:`cassette.review.drift`, and
renders the result for a terminal, a pull-request comment (GitHub-flavoured
markdown) or a program (JSON).
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cassette.core.canonical import json_text
from cassette.core.model import Cassette
from cassette.errors import CassetteConfigError, CassetteError
from cassette.git.repo import (
    StagedFile,
    changed_between,
    head_blob,
    head_entries,
    read_at_rev,
    resolve_commit,
    staged_changes,
)
from cassette.git.snapshot import (
    BlobReader,
    IndexSnapshot,
    RevSnapshot,
    blob_path_id,
    blob_store_dirs,
    cassette_from_bytes,
    display_path,
    git_blob_reader,
    head_file,
    index_files,
    looks_like_manifest,
    open_repo,
    read_object,
)
from cassette.plugins.manager import default_rules, get_plugin_manager, tokens_of
from cassette.review.drift import (
    CATEGORIES,
    DESCRIPTIONS,
    REGRESSIONS,
    TOOL_SIDES,
    DriftItem,
    change_signature,
    compare_cassettes,
)
from cassette.secrets import redact_text, rules_from_plugins
from cassette.store.cassettes import load_cassette

PENDING_SUFFIX = ".pending.json"
# How much a report shows before it counts the rest and names the command that lists them all.
SHOWN_BLOCKS = 10  # cassettes (or groups of cassettes changed the same way) shown in full
SHOWN_FILES = 5  # file names listed under a group
# GitHub refuses a pull-request comment longer than this many characters.
MARKDOWN_LIMIT = 65_536


@dataclass
class CassetteDrift:
    """The drift of one cassette file: its status, interaction counts and every changed interaction."""

    file: str
    status: str  # added | removed | modified
    old_count: int = 0
    new_count: int = 0
    items: list[DriftItem] = field(default_factory=list)
    old_tokens: int = 0
    new_tokens: int = 0
    error: str | None = None  # the file could not be read; items are empty
    # the two recordings compared (what the html page shows side by side); None: that side is absent
    old: Cassette | None = field(default=None, repr=False, compare=False)
    new: Cassette | None = field(default=None, repr=False, compare=False)

    def counts(self) -> Counter[str]:
        return Counter(i.category for i in self.items)

    @property
    def review(self) -> list[DriftItem]:
        """The items a reviewer should read: everything but volatile-only changes."""
        return [i for i in self.items if i.category != "volatile-only"]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "status": self.status,
            "interactions": {"old": self.old_count, "new": self.new_count},
            "tokens": {
                "old": self.old_tokens,
                "new": self.new_tokens,
                "delta": self.new_tokens - self.old_tokens,
            },
            "counts": dict(sorted(self.counts().items(), key=lambda kv: CATEGORIES.index(kv[0]))),
            "error": self.error,
            "items": [i.to_json() for i in self.items],
        }


def _tokens(cassette: Cassette | None) -> int:
    if cassette is None:
        return 0
    total = 0
    for inter in cassette.interactions:
        try:
            total += tokens_of(cassette.hydrate(inter.response))
        except CassetteError:
            continue
    return total


def drift_of(
    file: str, old: Cassette | None, new: Cassette | None, *, backend: str | None = None
) -> CassetteDrift:
    """Classify the drift of one cassette between two versions (``None``: the version does not exist).

    Example::

        d = drift_of("triage.json", load_cassette("triage.json"), load_cassette("triage.pending.json"))
        d.counts()  # Counter({'volatile-only': 3, 'reworded': 1})
    """
    status = "added" if old is None else "removed" if new is None else "modified"
    return CassetteDrift(
        file,
        status,
        len(old.interactions) if old else 0,
        len(new.interactions) if new else 0,
        compare_cassettes(old, new, backend=backend),
        _tokens(old),
        _tokens(new),
        old=old,
        new=new,
    )


def _failed(file: str, status: str, exc: CassetteError) -> CassetteDrift:
    return CassetteDrift(file, status, error=str(exc))


# --- sources --------------------------------------------------------------------------------------


def pending_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every ``*.pending.json`` re-recording under ``paths`` (files or directories)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*" + PENDING_SUFFIX) if ".blobs" not in f.parts))
        elif p.name.endswith(PENDING_SUFFIX):
            out.append(p)
        elif p.with_name(p.stem + PENDING_SUFFIX).exists():
            out.append(p.with_name(p.stem + PENDING_SUFFIX))
    return out


def drift_pending(
    paths: Iterable[str | os.PathLike[str]], *, backend: str | None = None
) -> list[CassetteDrift]:
    """Committed cassettes vs their ``.pending.json`` re-recordings on disk (the ``rerecord`` workflow).

    Example::

        for d in drift_pending(["tests/cassettes"]):
            print(d.file, d.counts())
    """
    out: list[CassetteDrift] = []
    for pending in pending_files(paths):
        committed = pending.with_name(pending.name[: -len(PENDING_SUFFIX)] + ".json")
        shown = display_path(committed)
        try:
            old = load_cassette(committed) if committed.exists() else None
            new = load_cassette(pending)
        except CassetteError as exc:
            out.append(_failed(shown, "modified", exc))
            continue
        out.append(drift_of(shown, old, new, backend=backend))
    return out


# (old path, new path, status): a cassette file that changed between two versions
_Pair = tuple[str | None, str | None, str]


def _pairs_drift(
    repo: Any,
    pairs: Iterable[_Pair],
    read_old: Callable[[str], bytes | None],
    read_new: Callable[[str], bytes | None],
    *,
    backend: str | None,
) -> list[CassetteDrift]:
    """Drift of every cassette among ``pairs``; payloads come from git's objects (or the stores on disk)."""
    # payloads are git objects once staged or committed; a store on disk covers the rest (its
    # folders found from the index only when git lacks a payload: a hook's drift stays one index read)
    root = Path(repo.path)
    in_git = git_blob_reader(repo)
    on_disk: list[BlobReader] = []

    def reader(blob_id: str) -> bytes | None:
        data = in_git(blob_id)
        if data is None:
            if not on_disk:
                stores = sorted(blob_store_dirs(IndexSnapshot(repo).entries()))
                on_disk.append(git_blob_reader(repo, tuple(root / s for s in stores)))
            data = on_disk[0](blob_id)
        return data

    out: list[CassetteDrift] = []
    for old_path, new_path, status in pairs:
        path = new_path or old_path
        assert path is not None
        if not path.endswith(".json") or blob_path_id(path):
            continue
        old_data = read_old(old_path) if old_path else None
        new_data = read_new(new_path) if new_path else None
        if not (looks_like_manifest(path, new_data) or looks_like_manifest(path, old_data)):
            continue
        shown = path if new_path is None or old_path in (None, new_path) else f"{old_path} → {new_path}"
        try:
            old = cassette_from_bytes(old_data, old_path or path, reader) if old_data is not None else None
            new = cassette_from_bytes(new_data, path, reader) if new_data is not None else None
        except CassetteError as exc:
            out.append(_failed(shown, status, exc))
            continue
        out.append(drift_of(shown, old, new, backend=backend))
    return out


def drift_staged(
    start: str | os.PathLike[str] | None = None,
    *,
    backend: str | None = None,
    only: Iterable[str] | None = None,
) -> list[CassetteDrift]:
    """Staged cassettes (read from the git index) vs their ``HEAD`` versions.

    With ``only`` (the file names pre-commit passes), those files alone: each whose index entry
    differs from HEAD is compared, the others are left out (under ``pre-commit run --all-files``,
    with nothing staged, that is every file: nothing to summarise), and deletions, which
    pre-commit does not pass, are not summarised.

    Example::

        print(render_markdown(drift_staged()))
    """
    repo = open_repo(start)
    old_ids: dict[str, str] = {}  # HEAD's blob id of each named file that changed
    if only is None:
        changed, deleted = staged_changes(repo)
    else:
        named = index_files(repo, only)
        # a few names: the trees on their way; many (--all-files): one walk of HEAD
        lookup = head_entries(repo).get if len(named) > 32 else functools.partial(head_file, repo)
        changed = []
        for f in named:
            old = lookup(f.path)
            if old is None or old[1] != f.blob_id:
                changed.append(StagedFile(f.path, f.blob_id, "add" if old is None else "modify", repo))
                if old is not None:
                    old_ids[f.path] = old[1]
        deleted = []
    staged = {f.path: f for f in changed}
    pairs: list[_Pair] = [
        (f.path if f.change == "modify" else None, f.path, f.change) for f in staged.values()
    ]
    pairs += [(p, None, "delete") for p in deleted]
    pairs.sort(key=lambda p: p[1] or p[0] or "")

    def read_new(path: str) -> bytes | None:
        return read_object(repo, staged[path].blob_id)

    def read_old(path: str) -> bytes | None:
        return read_object(repo, old_ids[path]) if path in old_ids else head_blob(repo, path)

    return _pairs_drift(repo, pairs, read_old, read_new, backend=backend)


def drift_revs(
    spec: str, start: str | os.PathLike[str] | None = None, *, backend: str | None = None
) -> list[CassetteDrift]:
    """Cassettes changed between commits: ``A..B``, ``A..`` (to ``HEAD``) or ``A`` (what commit A changed).

    Renamed cassettes are compared with their earlier version.

    Example::

        drift_revs("origin/main..HEAD")
    """
    repo = open_repo(start)
    if ".." in spec:
        a, b = spec.split("..", 1)
        if a.endswith(".") or b.startswith("."):
            raise CassetteConfigError(
                f"--rev {spec!r}: three-dot ranges are not supported; write A..B (both commits named)."
            )
        a, b = a or "HEAD", b or "HEAD"
    else:
        b = spec
        parents = resolve_commit(repo, spec).parents
        a = parents[0].decode("ascii") if parents else ""
    new_id = resolve_commit(repo, b).id.decode("ascii")
    if not a:  # a root commit: everything in it is new
        pairs: list[_Pair] = [(None, p, "add") for p in sorted(RevSnapshot(repo, new_id).entries())]
        return _pairs_drift(
            repo, pairs, lambda p: None, lambda p: read_at_rev(repo, new_id, p), backend=backend
        )
    old_id = resolve_commit(repo, a).id.decode("ascii")
    pairs = changed_between(repo, old_id, new_id)
    return _pairs_drift(
        repo,
        pairs,
        lambda p: read_at_rev(repo, old_id, p),
        lambda p: read_at_rev(repo, new_id, p),
        backend=backend,
    )


# --- failing on categories --------------------------------------------------------------------------


def parse_fail_on(value: str | None) -> frozenset[str]:
    """``"tools,changed"`` → those categories; ``regressions`` stands for every regression category.

    Example::

        parse_fail_on("tools,numbers") == {"tools", "numbers"}
    """
    if not value:
        return frozenset()
    out: set[str] = set()
    for raw in value.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        if name in ("regressions", "regression"):
            out |= REGRESSIONS
        elif name == "any":
            out |= set(CATEGORIES) - {"volatile-only"}
        elif name in CATEGORIES:
            out.add(name)
        else:
            raise CassetteConfigError(
                f"--fail-on: unknown drift category {name!r}. Use a comma-separated list of: "
                f"{', '.join(CATEGORIES)}, or 'regressions' / 'any'."
            )
    return frozenset(out)


def failing(
    drifts: Iterable[CassetteDrift], categories: frozenset[str]
) -> list[tuple[str, DriftItem | None]]:
    """``(file, item)`` for each item whose category (or output category) is in ``categories``.

    ``tools`` also matches a change of the tools offered in the request (see `matched`).
    A cassette that could not be read fails any non-empty ``categories`` (item ``None``).
    """
    out: list[tuple[str, DriftItem | None]] = []
    if not categories:
        return out
    for d in drifts:
        if d.error:
            out.append((d.file, None))
        out.extend((d.file, i) for i in d.items if matched(i, categories))
    return out


def matched(item: DriftItem, categories: frozenset[str]) -> list[str]:
    """Why ``item`` fails ``--fail-on categories``: each matching category, ``tools`` saying which side.

    Example::

        matched(item, frozenset({"tools"})) == ["tools: tools offered (request) + tool calls (response)"]
    """
    names = {item.category, item.output_category}
    if item.tools_changed:
        names.add("tools")
    out = []
    for name in CATEGORIES:
        if name in names and name in categories:
            out.append(f"tools: {item.tools_label}" if name == "tools" and item.tools_changed else name)
    return out


def failing_summary(bad: list[tuple[str, DriftItem | None]], categories: frozenset[str]) -> str:
    """The one line `cassette drift --fail-on` prints: how many failed, and on what (which tools side)."""
    reasons: list[str] = []
    sides: list[str] = []
    for _, item in bad:
        if item is None:
            if "unreadable" not in reasons:
                reasons.append("unreadable")
            continue
        for side in item.tools_changed:
            if side not in sides:
                sides.append(side)
        for reason in matched(item, categories):
            name = reason.split(":")[0]
            if name not in reasons:
                reasons.append(name)
    label = " + ".join(TOOL_SIDES[s] for s in sorted(sides, key=list(TOOL_SIDES).index))
    shown = [f"tools: {label}" if r == "tools" and label else r for r in reasons]
    return (
        f"cassette drift: {len(bad)} interaction(s) in failing categories ({'; '.join(shown)}). "
        "Review them; re-record or fix the agent, or drop the category from --fail-on."
    )


# --- rendering --------------------------------------------------------------------------------------


def _delta(old: int, new: int) -> str:
    if old == new:
        return f"{new:,}"
    return f"{old:,} → {new:,} ({new - old:+,})"


def _summary(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[c]} {c}" for c in CATEGORIES if counts.get(c))


def _masker() -> Callable[[str], str]:
    """`_masked` with the secret rules read once (a report masks block by block)."""
    try:
        rules = rules_from_plugins(get_plugin_manager())
    except CassetteError:  # a broken plugin is reported elsewhere; the built-in rules still mask
        rules = default_rules()
    return lambda text: redact_text(text, rules) if text else text


def _masked(text: str) -> str:
    """Rendered drift with every secret-rule match replaced by its placeholder: a re-recording
    that caught a key (redaction off, a hand edit) must not print it into a terminal, a CI log or
    a PR comment, while the secret scan beside it reports it masked."""
    return _masker()(text) if text else text


@dataclass
class DriftGroup:
    """Cassettes whose drift is the same change (`change_signature`), or one cassette on its own."""

    drifts: list[CassetteDrift]
    signature: frozenset[tuple[str, str, str]] = frozenset()

    @property
    def first(self) -> CassetteDrift:
        return self.drifts[0]

    def what(self) -> str:
        """``request messages[0].content``: the categories and fields the group's change touches."""
        parts: list[str] = []
        for category, path, _ in sorted(self.signature):
            part = f"{category} {path}".strip()
            if part not in parts:
                parts.append(part)
        shown = "; ".join(parts[:3]) + (f"; … {len(parts) - 3} more" if len(parts) > 3 else "")
        return shown if shown else _summary(self.first.counts())


def _shown(drifts: list[CassetteDrift]) -> list[CassetteDrift]:
    return [d for d in drifts if d.items or d.status != "modified" or d.error]


def group_drifts(drifts: list[CassetteDrift]) -> list[DriftGroup]:
    """The changed cassettes, those that changed the same way (equal `change_signature`, more than
    one) in one group, in the order each group's first cassette comes; a group of one otherwise.

    Example::

        [len(g.drifts) for g in group_drifts(drift_staged())]  # [300, 1, 1]
    """
    groups: list[DriftGroup] = []
    by_signature: dict[frozenset[tuple[str, str, str]], DriftGroup] = {}
    for d in _shown(drifts):
        if d.error or d.status != "modified":
            groups.append(DriftGroup([d]))
            continue
        signature = change_signature(d.items)
        group = by_signature.get(signature)
        if group is None:
            group = by_signature[signature] = DriftGroup([], signature)
            groups.append(group)
        group.drifts.append(d)
    return groups


def _more(count: int, command: str, what: str = "cassette(s)") -> str:
    return f"… and {count} more {what} (`{command}` lists them all)"


def render_text(
    drifts: list[CassetteDrift],
    *,
    verbose: bool = False,
    show_all: bool = False,
    more: str = "cassette drift --staged --all",
) -> str:
    """Terminal text: one block per changed cassette, or per group of cassettes that changed the same
    way; empty when nothing changed.

    Volatile-only interactions are counted, not listed (``verbose`` lists them too). Past
    `SHOWN_BLOCKS` blocks and `SHOWN_FILES` names in a group the rest are counted, with ``more``, the
    command that lists them all (``show_all``: nothing is capped). Secrets in excerpts are masked (see
    `_masked`), in every format.
    """
    lines: list[str] = []
    groups = group_drifts(drifts)
    shown = groups if show_all else groups[:SHOWN_BLOCKS]
    for group in shown:
        if len(group.drifts) > 1:
            files = [d.file for d in group.drifts]
            listed = files if show_all else files[:SHOWN_FILES]
            lines.append(f"{len(files)} cassettes changed the same way ({group.what()}), e.g.:")
            lines.extend(_text_block(group.first, verbose))
            lines.extend(f"    {f}" for f in listed)
            if len(listed) < len(files):
                lines.append("    " + _more(len(files) - len(listed), more))
        else:
            lines.extend(_text_block(group.first, verbose))
    left = sum(len(g.drifts) for g in groups[len(shown) :])
    if left:
        lines.append(_more(left, more, "changed cassette(s)"))
    return _masked("\n".join(lines))


def _text_block(d: CassetteDrift, verbose: bool) -> list[str]:
    """One cassette's drift for a terminal: its head line and each changed interaction."""
    if d.error:
        return [f"{d.file}: cannot compare ({d.error})"]
    if d.status == "removed":  # the file is gone: its calls are not listed one by one
        return [f"{d.file}: {_gone(d)}"]
    head = f"{d.file}: {d.status}, {d.old_count} → {d.new_count} interactions"
    if d.old_tokens or d.new_tokens:
        head += f", tokens {_delta(d.old_tokens, d.new_tokens)}"
    lines = [head + (f" [{_summary(d.counts())}]" if d.items else "")]
    for item in d.items:
        if item.category == "volatile-only" and not verbose:
            continue
        line = f"  #{item.seq:<3} {item.kind:<4} {item.category:<13} {item.label}"
        if item.tools_changed:
            line += f" [{item.tools_label}]"
        if item.reason:
            line += f": {item.reason}"
        lines.append(line)
        lines.extend(f"        {change}" for change in item.request_changes)
        if item.excerpt and item.category not in ("volatile-only",):
            lines.append(f"        {item.excerpt}")
    return lines


def _gone(d: CassetteDrift) -> str:
    """``removed (was 4 interactions, 724 tokens)``: what a deleted cassette held."""
    tokens = f", {d.old_tokens:,} tokens" if d.old_tokens else ""
    return f"removed (was {d.old_count} interaction{'s' if d.old_count != 1 else ''}{tokens})"


def _cell(text: str, width: int = 160) -> str:
    flat = " ".join(str(text).split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(drifts: list[CassetteDrift], *, more: str = "cassette drift --all") -> str:
    """GitHub-flavoured markdown for a pull-request comment: a summary table, details collapsed.

    Cassettes that changed the same way are one row and one collapsed section. The comment stays
    under `MARKDOWN_LIMIT` characters at any size: what does not fit is counted, with ``more``, the
    command that lists it all.

    Example::

        Path("drift.md").write_text(render_markdown(drift_revs("origin/main..HEAD")))
    """
    shown = _shown(drifts)
    if not shown:
        return "### Cassette drift\n\nNo cassette changed.\n"
    mask = _masker()
    groups = group_drifts(drifts)
    regressions = sum(1 for d in shown for i in d.items if i.output_category in REGRESSIONS)
    lines = ["### Cassette drift", ""]
    same = sum(len(g.drifts) for g in groups if len(g.drifts) > 1)
    grouped = (
        f" ({same} of them in {sum(1 for g in groups if len(g.drifts) > 1)} group(s) changed the same way)"
    )
    lines.append(
        f"{len(shown)} cassette(s) changed{grouped if same else ''}; "
        + (
            f"{regressions} interaction(s) need review."
            if regressions
            else "no regressions (only rewordings and volatile fields)."
        )
    )
    used = {c for d in shown for c in d.counts()}
    legend = ["", "<details><summary>What the categories mean</summary>", ""]
    legend += [f"- **{c}**: {DESCRIPTIONS[c]}" for c in CATEGORIES if c in used]
    legend += ["", "</details>"]
    head = mask("\n".join(lines)) + "\n"
    tail = mask("\n".join(legend)) + "\n"
    # the line that counts what did not fit, at its longest
    room = MARKDOWN_LIMIT - len(head) - len(tail) - 400
    table = ["", "| cassette | change | interactions | tokens | categories |", "|---|---|---|---|---|"]
    body = mask("\n".join(table)) + "\n"
    rows_shown = 0
    for group in groups:
        row = mask(_markdown_row(group)) + "\n"
        if len(body) + len(row) > room // 2:  # the table takes half the room at most
            break
        body += row
        rows_shown += 1
    details_shown: set[int] = set()
    for n, group in enumerate(groups[:rows_shown]):
        block = _markdown_details(group)
        if not block:
            details_shown.add(n)
            continue
        text = mask("\n".join(block)) + "\n"
        if len(body) + len(text) > room:
            break
        body += text
        details_shown.add(n)
    missing_rows = sum(len(g.drifts) for g in groups[rows_shown:])
    missing_details = sum(len(g.drifts) for n, g in enumerate(groups[:rows_shown]) if n not in details_shown)
    notes: list[str] = []
    if missing_rows:
        notes.append(f"{missing_rows} more changed cassette(s) are not in the table")
    if missing_details:
        notes.append(f"{missing_details} cassette(s) in the table have no details here")
    if notes:
        body += (
            f"\n{'; '.join(notes)} (a comment holds at most {MARKDOWN_LIMIT:,} characters): "
            f"`{more}` lists every change, `cassette drift --format html` shows them side by side.\n"
        )
    return head + body + tail


def _markdown_row(group: DriftGroup) -> str:
    d = group.first
    counts = d.counts()
    cats = ", ".join(
        (f"**{counts[c]} {c}**" if c in REGRESSIONS else f"{counts[c]} {c}")
        for c in CATEGORIES
        if counts.get(c)
    )
    if d.error:
        cats = f"**unreadable**: {_cell(d.error, 100)}"
    counted = f"was {d.old_count}" if d.status == "removed" else f"{d.old_count} → {d.new_count}"
    name = f"`{d.file}`"
    if len(group.drifts) > 1:
        name += f" and {len(group.drifts) - 1} more, changed the same way"
        cats = f"{cats} (each)"
    return f"| {name} | {d.status} | {counted} | {_delta(d.old_tokens, d.new_tokens)} | {cats or '–'} |"


def _markdown_details(group: DriftGroup) -> list[str]:
    """The collapsed section of a cassette (or group): its changed interactions, the group's files."""
    d = group.first
    review = d.review
    if not review or d.status == "removed":
        return []
    many = len(group.drifts) > 1
    title = (
        f"{len(group.drifts)} cassettes changed the same way ({_cell(group.what())}), e.g. "
        f"<code>{_cell(d.file)}</code>"
        if many
        else f"<code>{_cell(d.file)}</code>"
    )
    lines = [
        "",
        f"<details><summary>{title}: {len(review)} change(s)</summary>",
        "",
        "| # | call | category | what changed | tokens |",
        "|---|---|---|---|---|",
    ]
    for item in review:
        what = _cell(item.reason)
        for change in item.request_changes:
            what += ("<br>" if what else "") + _cell(change, 200)
        if item.excerpt:
            what += ("<br>" if what else "") + _cell(item.excerpt, 200)
        category = f"**{item.category}**" if item.output_category in REGRESSIONS else item.category
        if item.tools_changed:
            category += f"<br>{_cell(item.tools_label)}"
        lines.append(
            f"| {item.seq} | {_cell(item.label, 60)} | {category} | {what} "
            f"| {_delta(item.tokens[0], item.tokens[1])} |"
        )
    if many:
        files = [f"`{_cell(x.file)}`" for x in group.drifts]
        listed = files[:50]
        lines += [
            "",
            "The cassettes: "
            + ", ".join(listed)
            + ("" if len(listed) == len(files) else f" … and {len(files) - len(listed)} more"),
        ]
    lines += ["", "</details>"]
    return lines


def render_html(drifts: list[CassetteDrift], *, title: str = "cassette drift") -> str:
    """One self-contained HTML page: each changed cassette's two recordings side by side, paired as
    drift pairs them, each pair marked with its category (a CI artifact beside the markdown summary).

    Example::

        Path("drift.html").write_text(render_html(drift_revs("origin/main..HEAD")))
    """
    shown = [d for d in drifts if d.items or d.status != "modified" or d.error]
    # the HTML page (cassette.review.view, its templates) is only for --format html
    # deferred: the drift hook prints text and stays fast without the page
    from cassette.review.view import DriftSide, drift_page

    sides = [DriftSide(d.file, d.old, d.new, d.items, d.status, d.error) for d in shown]
    return drift_page(sides, title=title)


def render_json(drifts: list[CassetteDrift]) -> str:
    """Every cassette's drift as a JSON list (volatile-only items included)."""
    return _masked(json_text([d.to_json() for d in drifts]))
