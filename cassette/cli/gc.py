"""``cassette gc [DIR] [--apply]``: remove blobs no cassette references and temp files of killed writers."""

from __future__ import annotations

import argparse
from pathlib import Path

from cassette._config import load_config
from cassette._hygiene import apply_gc, cassette_dir, format_size, plan_gc, store_for

HELP = "remove unreferenced blobs and stale *.tmp files (dry run unless --apply)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", nargs="?", type=Path, help="cassette directory (default: [tool.cassette] cassette_dir)"
    )
    parser.add_argument("--apply", action="store_true", help="remove the files (default: only list them)")
    parser.add_argument(
        "--store", type=Path, default=None, help="blob store to clean (default: the one the cassettes use)"
    )


def run(args: argparse.Namespace) -> int:
    root = cassette_dir(args.dir)
    store = args.store or store_for(root / "x.json", load_config(root))
    plan = plan_gc(root, store)
    verb = "removed" if args.apply else "would remove"
    for path in plan.blobs:
        print(f"{verb} unreferenced blob {path}")
    for path in plan.temp_files:
        print(f"{verb} stale temp file {path}")
    count = len(plan.blobs) + len(plan.temp_files)
    if not count:
        print(f"nothing to remove under {root} (store {store})")
        return 0
    size = apply_gc(plan) if args.apply else plan.size
    summary = f"{verb} {len(plan.blobs)} blob(s) and {len(plan.temp_files)} temp file(s), {format_size(size)}"
    if not args.apply:
        summary += "; run `cassette gc --apply` to delete them"
    print(summary)
    return 0
