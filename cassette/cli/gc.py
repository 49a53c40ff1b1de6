"""``cassette gc [DIR] [--apply]``: remove blobs no cassette references and temp files of killed writers.

A blob store is shared: every cassette that may use it counts, not only those
under DIR. So cleaning one sub-directory (``cassette gc tests/cassettes/test_a``)
never deletes a blob that a cassette elsewhere still needs.

Nor one a recording may be about to reference: an unreferenced blob modified in the last
``--grace`` (10 minutes by default), or since a recording now in progress began, is kept.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cassette.cli._paths import resolve_arg
from cassette.config import Config, load_config
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError, CassetteNotFoundError
from cassette.git.snapshot import looks_like_manifest
from cassette.maintenance.hygiene import (
    GC_GRACE_SECONDS,
    apply_gc,
    blob_use,
    cassette_dir,
    cassette_files,
    format_size,
    parse_grace,
    plan_gc,
    read_manifest,
)
from cassette.seam.session import store_for
from cassette.store.files import read_regular

HELP = "remove unreferenced blobs and stale *.tmp files (dry run unless --apply)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", nargs="?", type=Path, help="cassette directory (default: [tool.cassette] cassette_dir)"
    )
    parser.add_argument("--apply", action="store_true", help="remove the files (default: only list them)")
    parser.add_argument(
        "--store", type=Path, default=None, help="blob store to clean (default: the one the cassettes use)"
    )
    parser.add_argument(
        "--grace",
        default=f"{GC_GRACE_SECONDS / 60:g}m",
        help="keep unreferenced blobs modified this recently (e.g. 0, 90s, 10m, 1h; default %(default)s): "
        "a recording may be about to save the manifest that uses them",
    )


def store_users(root: Path, store: Path, config: Config) -> list[Path]:
    """The directories whose cassettes may reference ``store``, none inside another; they hold ``root``.

    Besides ``root``: the configured cassette dir when ``store`` is its store; the
    whole project when ``[tool.cassette] store`` names ``store`` (a cassette
    anywhere in it uses that store); else the directory holding ``store``, whose
    cassettes find it as their nearest ``.blobs``.

    Example::

        store_users(Path("tests/cassettes/a"), Path("tests/cassettes/.blobs"), load_config())
        # [.../tests/cassettes]
    """
    store = resolve_path(store)
    found = [resolve_path(root)]
    if store == config.store_path():
        found.append(config.cassette_root())
        if config.store:
            found.append(resolve_path(config.root))
    if not config.store:
        found.append(store.parent)
    found = list(dict.fromkeys(found))
    return [d for d in found if not any(d != o and d.is_relative_to(o) for o in found)]


def _references_elsewhere(root: Path, store: Path, config: Config) -> tuple[set[str], list[Path]]:
    """Blob ids in ``store`` referenced by cassettes outside ``root``, and the directories searched.

    Under the cassette dir every ``*.json`` is a cassette, so an unreadable one stops gc (its
    references are unknown); elsewhere in the project only files shaped like a cassette count.
    """
    root = resolve_path(root)
    cassette_root = config.cassette_root()
    searched = store_users(root, store, config)
    docs = []
    for base in searched:
        if base == root:
            continue  # plan_gc has read it; no other directory searched lies inside it
        for path in cassette_files(base, side_files=True):
            real = resolve_path(path)
            if real.is_relative_to(root):
                continue  # plan_gc has read it
            if not real.is_relative_to(cassette_root):
                try:
                    data = read_regular(path)  # a FIFO or a device is no cassette: skipped, not waited on
                except OSError:
                    continue
                if not looks_like_manifest(path.as_posix(), data):
                    continue  # some other JSON file of the project
            try:
                docs.append(read_manifest(path))
            except CassetteError as exc:
                raise CassetteError(
                    f"cannot collect garbage while {path} is unreadable ({exc}); it shares the blob store "
                    f"{store}, so the blobs it references are unknown. Fix or delete that cassette, then "
                    "run gc again.",
                    path=path,
                ) from exc
    return blob_use(docs, store).referenced, [d for d in searched if d != root]


def run(args: argparse.Namespace) -> int:
    root = cassette_dir(resolve_arg(args.dir) if args.dir is not None else None)
    config = load_config(root)
    if args.store is not None and not args.store.is_dir():
        what = "is not a directory" if args.store.exists() else "does not exist"
        raise CassetteNotFoundError(
            f"no blob store at {args.store}: the path {what}. Pass the store directory "
            "(e.g. tests/cassettes/.blobs), or leave out --store to clean the one the cassettes use.",
            path=args.store,
        )
    store = resolve_path(args.store or store_for(root / "x.json", config))
    grace = parse_grace(args.grace)
    plan = plan_gc(root, store, grace=grace)
    if plan.blobs:
        used, searched = _references_elsewhere(root, store, config)
        kept = [p for p in plan.blobs if p.parent.name + p.name in used]
        plan.blobs = [p for p in plan.blobs if p.parent.name + p.name not in used]
        if kept:
            where = ", ".join(str(d) for d in searched)
            print(f"kept {len(kept)} blob(s) that cassettes outside {root} still use (searched {where})")
    if plan.young:
        whys = [f"modified in the last {args.grace.strip()}"] if grace > 0 else []
        if plan.recordings:
            whys.append(f"written since a recording in progress began ({len(plan.recordings)} writing now)")
        why = " or ".join(whys)
        print(
            f"kept {len(plan.young)} unreferenced blob(s) {why}: a manifest saved a moment later may use "
            "them. Run gc again later, or pass --grace 0 when no recording is running."
        )
    verb = "removed" if args.apply else "would remove"
    count = len(plan.blobs) + len(plan.temp_files)
    size = apply_gc(plan) if args.apply and count else plan.size
    if plan.restored:
        print(f"kept {len(plan.restored)} blob(s) a recording re-used while gc ran")
        plan.blobs = [p for p in plan.blobs if p not in plan.restored]
        count = len(plan.blobs) + len(plan.temp_files)
    for path in plan.blobs:
        print(f"{verb} unreferenced blob {path}")
    for path in plan.temp_files:
        print(f"{verb} stale temp file {path}")
    if not count:
        print(f"nothing to remove under {root} (store {store})")
        return 0
    summary = f"{verb} {len(plan.blobs)} blob(s) and {len(plan.temp_files)} temp file(s), {format_size(size)}"
    if not args.apply:
        summary += "; run `cassette gc --apply` to delete them"
    print(summary)
    return 0
