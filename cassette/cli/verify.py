"""``cassette verify [PATHS...] [--staged [FILES...] | --all-files]``: manifests parse; every
referenced blob is there and intact."""

from __future__ import annotations

import argparse
import stat
import sys
from pathlib import Path

from cassette.cli._paths import resolve_arg
from cassette.config import load_config
from cassette.core.canonical import json_text
from cassette.errors import CassetteIOError, CassetteNotFoundError, NotRegularFileError
from cassette.maintenance.verify import verify_paths, verify_staged
from cassette.store.files import file_kind, not_regular_reason

HELP = "check that cassettes parse and every blob they reference is present and hash-correct (and staged)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        help="cassettes or directories (default: the cassette directory); with --staged, the file "
        "names pre-commit passes: their index entries are verified, files that are no cassette skipped",
    )
    parser.add_argument(
        "--staged", action="store_true", help="check the staged cassettes; their blobs must be staged too"
    )
    parser.add_argument(
        "--all-files",
        action="store_true",
        help="check every cassette git tracks (read from the index), changed or not: what "
        "`pre-commit run --all-files` and CI mean",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("-v", "--verbose", action="store_true", help="list sound cassettes too")


def _check_inputs(paths: list[str]) -> None:
    """A named path that is missing or unreadable is an input error (exit 2), not a finding (exit 1)."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():  # a name the system cannot take raises OSError: exit 2 through main too
            raise CassetteNotFoundError(
                f"no such file or directory: {raw}. Check the path; with no path, verify checks "
                "every cassette under [tool.cassette] cassette_dir.",
                path=raw,
            )
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):  # opening a FIFO would wait for a writer
            reason = not_regular_reason(path, NotRegularFileError(path, file_kind(mode)))
            raise CassetteIOError(
                f"{raw}: {reason}. Pass a cassette file or a directory of cassettes.", path=raw
            )
        if stat.S_ISREG(mode):
            with path.open("rb"):  # no permission: OSError, reported by main as an input error
                pass


def run(args: argparse.Namespace) -> int:
    if args.staged or args.all_files:
        # the file names pre-commit passes are repo-relative index paths, read as git has them
        report = verify_staged(only=args.paths or None, all_files=args.all_files and not args.paths)
    else:
        args.paths = [str(resolve_arg(p)) for p in args.paths]  # relative to the project root
        _check_inputs(args.paths)
        default = load_config().cassette_root()
        if not args.paths and not default.is_dir():
            print(f"cassette verify: no cassette directory at {default}; nothing to verify.", file=sys.stderr)
            return 0
        report = verify_paths(args.paths or [str(default)])
    if args.format == "json":
        sys.stdout.write(json_text(report.to_json()))
    elif not report.ok or args.verbose:
        print(report.render(verbose=args.verbose), file=sys.stdout if report.ok else sys.stderr)
    else:  # one line even on success, so a user (or a CI log) can see that it ran and what it covered
        print(report.summary())
    return 0 if report.ok else 1
