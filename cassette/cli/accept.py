"""``cassette accept [PATH...]``: promote ``*.pending.json`` re-recordings over the committed cassettes."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from cassette.cli._paths import resolve_arg, shown
from cassette.config import load_config
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError
from cassette.maintenance.hygiene import PENDING_SUFFIX, blob_use, cassette_dir, cassette_files, read_manifest
from cassette.seam.session import store_for
from cassette.store.files import file_kind

HELP = "replace cassettes by their reviewed *.pending.json re-recordings (whole cassette dir, or by path)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="cassettes (relative to the project root; .json optional; or a test's node id), their "
        ".pending.json files, or directories (default: the whole cassette dir)",
    )
    parser.add_argument("--dry-run", action="store_true", help="list what would be accepted, change nothing")


def committed_path(pending: Path) -> Path:
    """``triage.pending.json`` → ``triage.json``."""
    return pending.with_name(pending.name[: -len(PENDING_SUFFIX)] + ".json")


def pending_for(path: Path) -> list[Path]:
    """The pending re-recordings a command-line path names."""
    if path.is_dir():
        return [p for p in cassette_files(path, side_files=True) if p.name.endswith(PENDING_SUFFIX)]
    if path.name.endswith(PENDING_SUFFIX):
        if not path.is_file():
            _not_a_file(path)
            raise CassetteError(
                f"{path} does not exist. Run the test with CASSETTE_MODE=rerecord first.", path=path
            )
        return [path]
    pending = path.with_name(path.stem + PENDING_SUFFIX)
    if not pending.is_file():
        raise CassetteError(
            f"no pending re-recording for {path} (expected {pending}). Run its test with "
            "CASSETTE_MODE=rerecord (or pytest --cassette-mode=rerecord) first.",
            path=path,
        )
    return [pending]


def _not_a_file(path: Path) -> None:
    """Raise for a path that exists but is no regular file (a FIFO, a socket, a directory...)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # nothing there (or a dangling symlink): "does not exist"
    raise CassetteError(
        f"{path} is {file_kind(mode)}, not a cassette file: nothing was accepted. Remove it and "
        "run the test with CASSETTE_MODE=rerecord again.",
        path=path,
    )


def accept(pending: Path) -> Path:
    """Check ``pending`` is a readable cassette with all its blobs, then rename it over the committed one.

    Example::

        accept(Path("tests/cassettes/triage.pending.json"))  # -> tests/cassettes/triage.json
    """
    doc = read_manifest(pending)
    store = store_for(pending, load_config(resolve_path(pending).parent))
    use = blob_use([doc], store)
    if use.missing:
        raise CassetteError(
            f"{pending} references {len(use.missing)} blob(s) missing from {store} "
            f"(e.g. {sorted(use.missing)[0]}). Re-record it; nothing was accepted.",
            path=pending,
        )
    target = committed_path(pending)
    os.replace(pending, target)  # atomic: the committed cassette is either the old or the new one
    return target


def run(args: argparse.Namespace) -> int:
    if args.paths:
        todo = [p for path in args.paths for p in pending_for(resolve_arg(path))]
    else:
        root = cassette_dir(None)
        todo = [p for p in cassette_files(root, side_files=True) if p.name.endswith(PENDING_SUFFIX)]
    if not todo:
        print("nothing to accept: no *.pending.json re-recordings found")
        return 0
    for pending in sorted(set(todo)):
        if args.dry_run:
            print(f"would accept {shown(pending)} -> {shown(committed_path(pending))}")
            continue
        target = accept(pending)
        print(f"accepted {shown(target)}")
    return 0
