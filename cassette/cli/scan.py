"""``cassette scan [--staged | --all-files] [PATHS...]``: find secrets before they are committed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cassette.config import load_config
from cassette.core.canonical import json_text
from cassette.errors import CassetteNotFoundError
from cassette.hooks.scan import render_text, scan_paths, scan_staged

HELP = "find API keys and other secrets in staged cassettes and blobs, or in any text files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="*", help="files or directories to scan (default: the cassette directory)"
    )
    parser.add_argument(
        "--staged", action="store_true", help="scan what is staged for commit, read from the git index"
    )
    parser.add_argument(
        "--all-files",
        action="store_true",
        help="scan every file git tracks (read from the index), changed or not: what "
        "`pre-commit run --all-files` and CI mean",
    )
    parser.add_argument(
        "--every-type",
        action="store_true",
        help="with --staged: scan every staged file, not only cassettes, blobs and JSON/YAML/log files",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--no-cache", action="store_true", help="rescan even payloads scanned before")


def run(args: argparse.Namespace) -> int:
    if args.staged or args.all_files:
        # with --staged, paths are the file names pre-commit passes: their index entries are scanned
        # (every tracked file under `pre-commit run --all-files`, the staged ones otherwise)
        found = scan_staged(
            all_files=args.all_files and not args.paths,
            every_type=args.every_type,
            only=args.paths or None,
            use_cache=not args.no_cache,
        )
    else:
        for raw in args.paths:  # checked here so the error reads as the command's, with its prefix once
            if not Path(raw).exists():
                raise CassetteNotFoundError(f"no such file or directory: {raw}. Check the path.", path=raw)
        default = load_config().cassette_root()
        if not args.paths and not default.is_dir():
            print(f"cassette scan: no cassette directory at {default}; nothing to scan.", file=sys.stderr)
            return 0
        found = scan_paths(args.paths or [str(default)])
    if args.format == "json":
        sys.stdout.write(json_text([r.to_json() for r in found]))
    elif found:
        print(render_text(found, staged=args.staged or args.all_files))
    return 1 if found else 0
