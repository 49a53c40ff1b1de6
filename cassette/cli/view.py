"""``cassette view FILE``: a run as one self-contained HTML page; ``--drift``: two runs side by side."""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from cassette.cli.show import read_cassette
from cassette.core.paths import resolve_path
from cassette.errors import CassetteError, CassetteNotFoundError
from cassette.hooks.drift import drift_pending, drift_revs
from cassette.review.view import DriftSide, drift_page, run_page
from cassette.seam.session import pending_path
from cassette.store.files import atomic_write

HELP = (
    "write a cassette as an HTML page (a timeline of its calls); "
    "--drift: the committed and re-recorded runs side by side"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="the cassette manifest (.json)")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE.html",
        help="where to write the page (default: beside the cassette, NAME.html or NAME.drift.html)",
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument(
        "--drift",
        action="store_true",
        help="compare the committed cassette with its .pending.json re-recording (or, with --rev, "
        "two commits' versions) side by side",
    )
    parser.add_argument(
        "--rev", metavar="A..B", help="with --drift: compare the cassette between two commits"
    )
    parser.add_argument(
        "--backend", help="with --drift: semantic backend that decides reworded vs changed (default: config)"
    )


def run(args: argparse.Namespace) -> int:
    path: Path = args.file
    if args.rev and not args.drift:
        raise CassetteError("--rev goes with --drift: `cassette view --drift --rev A..B FILE`.")
    if args.drift:
        page = _drift(path, args.rev, args.backend)
        default = path.with_name(_stem(path) + ".drift.html")
    else:
        page = run_page(read_cassette(path), title=str(path))
        default = path.with_name(_stem(path) + ".html")
    out: Path = args.output or default
    if out.suffix.lower() in (".json", ".gz"):
        raise CassetteError(f"{out}: the page is HTML; give -o a name ending in .html, not a cassette's.")
    atomic_write(out, page.encode("utf-8"))
    print(f"wrote {out} ({len(page.encode('utf-8')):,} bytes)")
    if args.open:
        opened = webbrowser.open(resolve_path(out).as_uri())
        if not opened:
            print(f"cassette view: no web browser found; open {out} yourself.", file=sys.stderr)
    return 0


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _drift(path: Path, rev: str | None, backend: str | None) -> str:
    if rev:
        wanted = resolve_path(path)
        drifts = [
            d for d in drift_revs(rev, backend=backend) if wanted.as_posix().endswith(d.file.split(" → ")[-1])
        ]
        title = f"cassette drift {rev}: {path}"
    else:
        committed = path.with_name(_stem(path).removesuffix(".pending") + ".json")
        pending = pending_path(committed)
        if not pending.exists():
            raise CassetteNotFoundError(
                f"no re-recording to compare for {committed}: {pending} does not exist. Run the test with "
                "CASSETTE_MODE=rerecord first, or pass --rev A..B to compare two commits.",
                path=pending,
            )
        drifts = drift_pending([pending], backend=backend)
        title = f"cassette drift: {committed} vs {pending.name}"
    sides = [DriftSide(d.file, d.old, d.new, d.items, d.status, d.error) for d in drifts]
    return drift_page(sides, title=title)
