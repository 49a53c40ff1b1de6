"""``cassette drift``: what changed in re-recorded cassettes, interaction by interaction, for review."""

from __future__ import annotations

import argparse
import sys

from cassette.cli._paths import resolve_arg
from cassette.config import load_config
from cassette.errors import CassetteError
from cassette.git.snapshot import open_repo
from cassette.hooks.drift import (
    drift_pending,
    drift_revs,
    drift_staged,
    failing,
    failing_summary,
    parse_fail_on,
    pending_files,
    render_html,
    render_json,
    render_markdown,
    render_text,
)

HELP = "summarise cassette drift (staged, between revisions, or pending re-recordings) for review"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        help="with --pending: cassettes or directories to look in (default: cassette directory); with "
        "--staged: the file names pre-commit passes (each one that differs from HEAD is summarised)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--staged", action="store_true", help="staged cassettes (git index) vs HEAD")
    source.add_argument(
        "--rev", metavar="A..B", help="between two commits: A..B, A.. (to HEAD), or A (its changes)"
    )
    source.add_argument(
        "--pending", action="store_true", help="committed cassettes vs their .pending.json re-recordings"
    )
    parser.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="output format (html: one self-contained page, both runs side by side)",
    )
    parser.add_argument(
        "--fail-on",
        metavar="CATEGORIES",
        default="",
        help="exit 1 when an interaction falls in one of these comma-separated categories "
        "(e.g. tools,changed,numbers; 'regressions' for all real regressions). Default: informational.",
    )
    parser.add_argument(
        "--backend", help="semantic backend that decides reworded vs changed (default: config)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list volatile-only interactions too")
    parser.add_argument(
        "--all",
        action="store_true",
        help="text: show every changed cassette and every file of a group (default: the first "
        "10 cassettes or groups of cassettes changed the same way, 5 files a group, the rest counted); "
        "markdown always stays under GitHub's 65,536-character comment limit",
    )


def _in_git_repo() -> bool:
    try:
        open_repo()
    except CassetteError:
        return False
    return True


def run(args: argparse.Namespace) -> int:
    fail_on = parse_fail_on(args.fail_on)
    if args.rev and args.paths:
        print(
            "cassette drift: paths go with --pending or --staged (or no source flag), not --rev.",
            file=sys.stderr,
        )
        return 2
    if args.staged:
        # the file names pre-commit passes are index paths, as git has them (repo-relative)
        drifts = drift_staged(backend=args.backend, only=args.paths or None)
        if not drifts and args.paths and args.format == "text":
            # the hook's names (every tracked file under `pre-commit run --all-files`), none changed:
            # said in one line, where a bare `--staged` stays quiet
            print(
                f"no staged cassette differs from HEAD among the {len(args.paths):,} file(s) given: "
                "no drift to summarise."
            )
            return 0
    elif args.rev:
        drifts = drift_revs(args.rev, backend=args.backend)
    else:
        paths = [str(resolve_arg(p)) for p in args.paths] or [str(load_config().cassette_root())]
        if args.pending or pending_files(paths) or not _in_git_repo():
            drifts = drift_pending(paths, backend=args.backend)
        else:
            drifts = drift_staged(backend=args.backend)
    source = "--staged " if args.staged else f"--rev {args.rev} " if args.rev else ""
    more = f"cassette drift {source}--all"
    if args.format == "json":
        sys.stdout.write(render_json(drifts))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(drifts, more=more))
    elif args.format == "html":
        sys.stdout.write(render_html(drifts))
    else:
        text = render_text(drifts, verbose=args.verbose, show_all=args.all, more=more)
        if text:
            print(text)
    bad = failing(drifts, fail_on)
    if bad:
        print(failing_summary(bad, fail_on), file=sys.stderr)
        return 1
    return 0
