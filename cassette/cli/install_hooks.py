"""``cassette install-hooks``: a plain git pre-commit hook (secret scan, blob check, drift summary)."""

from __future__ import annotations

import argparse

from cassette.hooks.install import install_hooks

HELP = "install a git pre-commit hook (secrets, blobs, drift) without the pre-commit framework"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force", action="store_true", help="replace a pre-commit hook not written by cassette"
    )
    parser.add_argument(
        "--textconv",
        action="store_true",
        help="also register the diff=cassette driver so `git diff` shows cassettes with blobs inlined",
    )


def run(args: argparse.Namespace) -> int:
    for line in install_hooks(force=args.force, textconv=args.textconv):
        print(line)
    return 0
