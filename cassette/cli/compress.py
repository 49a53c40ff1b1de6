"""``cassette compress [PATH ...] [--readable] [--dry-run]``: rewrite cassettes in the other form.

Compressed cassettes (`compress = true`) are gzip manifests with their responses
inline; readable ones are the reviewed JSON layout. This converts existing files
either way without re-recording: every call replays exactly as before. Each new
file is read back and compared with the old one before it replaces it, so a
conversion that would lose anything changes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cassette.cli._paths import resolve_arg, shown
from cassette.config import Config, load_config
from cassette.core.compression import gzip_bytes, is_compressed
from cassette.core.model import Cassette
from cassette.errors import CassetteError
from cassette.maintenance.hygiene import cassette_dir, cassette_files, format_size
from cassette.seam.session import store_for
from cassette.store.blobs import BlobStore
from cassette.store.cassettes import load_cassette, manifest_bytes
from cassette.store.files import atomic_write, read_regular
from cassette.store.manifest import parse_manifest

HELP = "rewrite cassettes gzip-compressed (or --readable: as readable JSON) without re-recording"


STICKS = (
    "The form sticks: a cassette re-recorded later keeps the form it has (compressed stays\n"
    "compressed, readable stays readable) unless [tool.cassette] compress, the marker's compress=\n"
    "or cassette.use(..., compress=) says otherwise; new cassettes follow [tool.cassette] compress."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = f"{HELP}.\n\n{STICKS}"
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help="cassettes or directories (default: [tool.cassette] cassette_dir)",
    )
    parser.add_argument(
        "--readable", action="store_true", help="write readable JSON manifests (undo a compression)"
    )
    parser.add_argument("--dry-run", action="store_true", help="only say which files would change")


def _hydrated(path: Path, store: Path) -> Any:
    recorded = load_cassette(path, store)
    return Cassette(
        path=path,
        interactions=[recorded.hydrated(i) for i in recorded.interactions],
        store=store,
        meta=recorded.meta,
    )


def convert(path: Path, *, compress: bool, config: Config) -> tuple[int, int]:
    """Rewrite the cassette at ``path`` compressed (or readable); (bytes before, bytes after).

    The new manifest must read back to the same calls, payloads and fields as the old
    one, else `CassetteError` is raised and the file is left as it was.

    Example::

        convert(Path("tests/cassettes/triage.json"), compress=True, config=load_config())
    """
    store = store_for(path, config)
    before = path.stat().st_size
    old = _hydrated(path, store)
    data = manifest_bytes(old, BlobStore(store), config.blob_threshold, compact=compress)
    new = parse_manifest(data, path, store)
    same = len(new.interactions) == len(old.interactions) and all(
        new.hydrated(n) == o for n, o in zip(new.interactions, old.interactions, strict=True)
    )
    if not same or new.meta != old.meta:
        raise CassetteError(
            f"{path}: the converted cassette would not read back as the same calls; it was left "
            "as it is. Run `cassette verify` on it, and report this with the file if it passes.",
            path=path,
        )
    atomic_write(path, gzip_bytes(data) if compress else data)
    return before, path.stat().st_size


def run(args: argparse.Namespace) -> int:
    compress = not args.readable
    config = load_config()
    todo: list[Path] = []
    for given in [resolve_arg(p, config) for p in args.paths] or [cassette_dir(None)]:
        todo.extend(cassette_files(given, side_files=True) if given.is_dir() else [given])
    changed = failed = 0
    total_before = total_after = 0
    for path in todo:
        try:
            if is_compressed(read_regular(path)[:2]) == compress:
                continue  # already in that form
            if args.dry_run:
                print(f"would {'compress' if compress else 'expand'} {shown(path, config)}")
                changed += 1
                continue
            before, after = convert(path, compress=compress, config=config)
        except (CassetteError, OSError) as exc:
            print(f"{shown(path, config)}: not converted: {exc}")
            failed += 1
            continue
        changed += 1
        total_before += before
        total_after += after
        verb = "compressed" if compress else "expanded"
        print(f"{verb} {shown(path, config)}: {format_size(before)} -> {format_size(after)}")
    if not changed and not failed:
        print(
            f"nothing to do: {len(todo)} cassette(s), all {'compressed' if compress else 'readable'} already"
        )
    elif not args.dry_run:
        done = "compressed" if compress else "made readable"
        print(
            f"{done} {changed} cassette(s)"
            + (f": {format_size(total_before)} -> {format_size(total_after)}" if changed else "")
            + (f"; {failed} could not be converted" if failed else "")
        )
    return 1 if failed else 0
