"""The drift summary behind ``cassette drift`` and the ``cassette-drift`` hook.

Pairs each changed cassette with its earlier version (staged vs ``HEAD``, one
revision vs another, or a ``.pending.json`` re-recording vs the committed
file), classifies every changed interaction with :mod:`cassette.review.drift`, and
renders the result for a terminal, a pull-request comment (GitHub-flavoured
markdown) or a program (JSON).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cassette.core.canonical import json_text
from cassette.core.model import Cassette
from cassette.errors import CassetteConfigError, CassetteError
from cassette.review.drift import (
    CATEGORIES,
    DESCRIPTIONS,
    REGRESSIONS,
    TOOL_SIDES,
    DriftItem,
    compare_cassettes,
)
from cassette.review.view import DriftSide, drift_page

PENDING_SUFFIX = ".pending.json"


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
    from cassette.plugins.manager import tokens_of

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
    from cassette.git.snapshot import display_path
    from cassette.store.cassettes import load_cassette

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
    from cassette.git.snapshot import (
        IndexSnapshot,
        blob_path_id,
        blob_store_dirs,
        cassette_from_bytes,
        git_blob_reader,
        looks_like_manifest,
    )

    # payloads are git objects once staged or committed; a store on disk covers the rest
    root = Path(repo.path)
    reader = git_blob_reader(
        repo, tuple(root / s for s in sorted(blob_store_dirs(IndexSnapshot(repo).entries())))
    )
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
    start: str | os.PathLike[str] | None = None, *, backend: str | None = None
) -> list[CassetteDrift]:
    """Staged cassettes (read from the git index) vs their ``HEAD`` versions.

    Example::

        print(render_markdown(drift_staged()))
    """
    from cassette.git.repo import head_blob, staged_files
    from cassette.git.snapshot import open_repo, read_object, staged_deletions

    repo = open_repo(start)
    staged = {f.path: f for f in staged_files(repo)}
    pairs: list[_Pair] = [
        (f.path if f.change == "modify" else None, f.path, f.change) for f in staged.values()
    ]
    pairs += [(p, None, "delete") for p in staged_deletions(repo)]
    pairs.sort(key=lambda p: p[1] or p[0] or "")

    def read_new(path: str) -> bytes | None:
        return read_object(repo, staged[path].blob_id)

    return _pairs_drift(repo, pairs, lambda p: head_blob(repo, p), read_new, backend=backend)


def drift_revs(
    spec: str, start: str | os.PathLike[str] | None = None, *, backend: str | None = None
) -> list[CassetteDrift]:
    """Cassettes changed between commits: ``A..B``, ``A..`` (to ``HEAD``) or ``A`` (what commit A changed).

    Renamed cassettes are compared with their earlier version.

    Example::

        drift_revs("origin/main..HEAD")
    """
    from cassette.git.repo import changed_between, read_at_rev, resolve_commit
    from cassette.git.snapshot import RevSnapshot, open_repo

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


def _masked(text: str) -> str:
    """Rendered drift with every secret-rule match replaced by its placeholder: a re-recording
    that caught a key (redaction off, a hand edit) must not print it into a terminal, a CI log or
    a PR comment, while the secret scan beside it reports it masked."""
    if not text:
        return text
    from cassette.secrets import redact_text, rules_from_plugins

    try:
        from cassette.plugins.manager import default_rules, get_plugin_manager

        rules = rules_from_plugins(get_plugin_manager())
    except CassetteError:  # a broken plugin is reported elsewhere; the built-in rules still mask
        rules = default_rules()
    return redact_text(text, rules)


def render_text(drifts: list[CassetteDrift], *, verbose: bool = False) -> str:
    """Terminal text: one block per changed cassette; empty when nothing changed.

    Volatile-only interactions are counted, not listed (``verbose`` lists them too). Secrets in
    excerpts are masked (see `_masked`), in every format.
    """
    lines: list[str] = []
    for d in drifts:
        if d.error:
            lines.append(f"{d.file}: cannot compare ({d.error})")
            continue
        if not d.items and d.status == "modified":
            continue
        if d.status == "removed":  # the file is gone: its calls are not listed one by one
            lines.append(f"{d.file}: {_gone(d)}")
            continue
        head = f"{d.file}: {d.status}, {d.old_count} → {d.new_count} interactions"
        if d.old_tokens or d.new_tokens:
            head += f", tokens {_delta(d.old_tokens, d.new_tokens)}"
        lines.append(head + (f" [{_summary(d.counts())}]" if d.items else ""))
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
    return _masked("\n".join(lines))


def _gone(d: CassetteDrift) -> str:
    """``removed (was 4 interactions, 724 tokens)``: what a deleted cassette held."""
    tokens = f", {d.old_tokens:,} tokens" if d.old_tokens else ""
    return f"removed (was {d.old_count} interaction{'s' if d.old_count != 1 else ''}{tokens})"


def _cell(text: str, width: int = 160) -> str:
    flat = " ".join(str(text).split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(drifts: list[CassetteDrift]) -> str:
    """GitHub-flavoured markdown for a pull-request comment: a summary table, details collapsed.

    Example::

        Path("drift.md").write_text(render_markdown(drift_revs("origin/main..HEAD")))
    """
    shown = [d for d in drifts if d.items or d.status != "modified" or d.error]
    if not shown:
        return "### Cassette drift\n\nNo cassette changed.\n"
    regressions = sum(1 for d in shown for i in d.items if i.output_category in REGRESSIONS)
    lines = ["### Cassette drift", ""]
    lines.append(
        f"{len(shown)} cassette(s) changed; {regressions} interaction(s) need review."
        if regressions
        else f"{len(shown)} cassette(s) changed; no regressions (only rewordings and volatile fields)."
    )
    lines += ["", "| cassette | change | interactions | tokens | categories |", "|---|---|---|---|---|"]
    for d in shown:
        counts = d.counts()
        cats = ", ".join(
            (f"**{counts[c]} {c}**" if c in REGRESSIONS else f"{counts[c]} {c}")
            for c in CATEGORIES
            if counts.get(c)
        )
        if d.error:
            cats = f"**unreadable**: {_cell(d.error, 100)}"
        counted = f"was {d.old_count}" if d.status == "removed" else f"{d.old_count} → {d.new_count}"
        lines.append(
            f"| `{d.file}` | {d.status} | {counted} | {_delta(d.old_tokens, d.new_tokens)} | {cats or '–'} |"
        )
    for d in shown:
        review = d.review
        if not review or d.status == "removed":
            continue
        lines += [
            "",
            f"<details><summary><code>{_cell(d.file)}</code>: {len(review)} change(s)</summary>",
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
        lines += ["", "</details>"]
    used = {c for d in shown for c in d.counts()}
    if used:
        lines += ["", "<details><summary>What the categories mean</summary>", ""]
        lines += [f"- **{c}**: {DESCRIPTIONS[c]}" for c in CATEGORIES if c in used]
        lines += ["", "</details>"]
    return _masked("\n".join(lines) + "\n")


def render_html(drifts: list[CassetteDrift], *, title: str = "cassette drift") -> str:
    """One self-contained HTML page: each changed cassette's two recordings side by side, paired as
    drift pairs them, each pair marked with its category (a CI artifact beside the markdown summary).

    Example::

        Path("drift.html").write_text(render_html(drift_revs("origin/main..HEAD")))
    """
    shown = [d for d in drifts if d.items or d.status != "modified" or d.error]
    sides = [DriftSide(d.file, d.old, d.new, d.items, d.status, d.error) for d in shown]
    return drift_page(sides, title=title)


def render_json(drifts: list[CassetteDrift]) -> str:
    """Every cassette's drift as a JSON list (volatile-only items included)."""
    return _masked(json_text([d.to_json() for d in drifts]))
