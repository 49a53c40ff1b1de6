"""``cassette import vcr|cendor SOURCE --to TARGET``: bring recordings from vcrpy or cendor-cassette over."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from cassette.config import load_config
from cassette.errors import CassetteError
from cassette.importers import CassetteImportError, ImportReport, import_cendor, import_vcr
from cassette.seam.session import store_for

HELP = (
    "convert vcrpy / pytest-recording, cassetter, Ruby VCR or cendor-cassette recordings into cassettes "
    "(prints what was lost)"
)

_VCR_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "format",
        choices=("vcr", "vcrpy", "pytest-recording", "cassetter", "ruby-vcr", "cendor"),
        help="what wrote SOURCE (vcr = vcrpy = pytest-recording = cassetter = ruby-vcr: shape is detected)",
    )
    parser.add_argument(
        "source",
        nargs="+",
        help="the file(s) to convert (vcr: or a directory of cassettes); several need --to DIR/",
    )
    parser.add_argument(
        "--to",
        required=True,
        help="the cassette to write; a directory (existing, or ending in /) when SOURCE is one or several",
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing targets")
    parser.add_argument("--skip-bad", action="store_true", help="convert what can be read, list the rest")
    parser.add_argument(
        "--tool",
        action="append",
        default=[],
        metavar="MODULE:FUNCTION",
        help="cendor: a tool function, so positional arguments are bound to its parameter names (repeatable)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="cendor: a request field the LLM calls sent but cendor did not store, e.g. temperature=0, "
        "or for one provider PROVIDER.max_tokens=1024 (VALUE is JSON, else a string; repeatable)",
    )


def _tool(spec: str) -> Any:
    module, _, name = spec.partition(":")
    if not module or not name:
        raise CassetteImportError(
            f"--tool {spec!r}: expected MODULE:FUNCTION, e.g. --tool myapp.tools:lookup_order."
        )
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise CassetteImportError(
            f"--tool {spec!r}: cannot import it ({exc}). Run from the project root or fix PYTHONPATH."
        ) from None
    return getattr(obj, "__wrapped__", obj)  # a @cassette.tool function: bind to the original signature


def _defaults(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise CassetteImportError(f"--set {pair!r}: expected NAME=VALUE, e.g. --set max_tokens=1024.")
        try:
            out[name] = json.loads(raw)
        except json.JSONDecodeError:
            out[name] = raw
    return out


def _stem_suffix(path: Path) -> tuple[str, str]:
    """``("test_x", ".yaml")`` for ``test_x.yaml`` and for the gzipped ``test_x.yaml.gz``."""
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    stem, dot, suffix = name.rpartition(".")
    return (stem, f".{suffix.lower()}") if dot else (name, "")


def _vcr_pairs(source: Path, to: Path) -> list[tuple[Path, Path]]:
    if not source.is_dir():
        return [(source, to)]
    files = sorted(p for p in source.rglob("*") if p.is_file() and _stem_suffix(p)[1] in _VCR_SUFFIXES)
    if not files:
        raise CassetteImportError(
            f"{source} holds no .yaml/.yml/.json/.toml cassettes (gzipped or not).", path=source
        )
    pairs = [(f, to / f.relative_to(source).parent / f"{_stem_suffix(f)[0]}.json") for f in files]
    refuse_clashes(pairs, where=f"{source}: several files")
    return pairs


def refuse_clashes(pairs: list[tuple[Path, Path]], *, where: str) -> None:
    """Refuse, before anything is written, sources that would become the same cassette."""
    sources: dict[Path, list[Path]] = {}
    for f, target in pairs:
        sources.setdefault(target, []).append(f)
    clashes = {t: fs for t, fs in sources.items() if len(fs) > 1}
    if clashes:
        listing = "\n".join(f"  {t}: {', '.join(str(f) for f in fs)}" for t, fs in clashes.items())
        raise CassetteImportError(
            f"{where} would become the same cassette, so nothing was written:\n{listing}\n"
            "Import them one by one with distinct --to paths, or import the directory that holds "
            "them (its sub-folders are kept).",
            path=next(iter(clashes.values()))[0],
        )


def _shared_store(root: Path) -> None:
    store = store_for(root / "x.json", load_config())
    try:
        store.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CassetteImportError(
            f"cannot create the blob store {store} ({exc.strerror or exc}); choose another --to path.",
            path=store,
        ) from None


def _into_dir(to: str) -> bool:
    return to.endswith(("/", "\\")) or Path(to).is_dir()


def run(args: argparse.Namespace) -> int:
    sources: list[str] = args.source
    if len(sources) > 1 or _into_dir(args.to):
        # `cassette import vcrpy tests/cassettes/*.yaml --to new/`: one command per file, into the directory
        if not _into_dir(args.to):
            raise CassetteImportError(
                f"{len(sources)} sources need a directory to write into: pass --to {args.to}/ "
                "(each FILE becomes DIR/FILE.json)."
            )
        files = {
            s: str(Path(args.to) / f"{_stem_suffix(Path(s))[0]}.json")
            for s in sources
            if not Path(s).is_dir()
        }
        refuse_clashes([(Path(s), Path(t)) for s, t in files.items()], where="several sources")
        codes = []
        for source in sources:
            one = argparse.Namespace(**vars(args))
            one.source = [source]
            one.to = files.get(source, args.to)  # a directory source writes into --to itself
            try:
                codes.append(_run_one(one))
            except CassetteError as exc:  # one unreadable file must not stop the others
                print(f"cassette import: {exc}", file=sys.stderr)
                codes.append(1)
        return max(codes)
    return _run_one(args)


def _run_one(args: argparse.Namespace) -> int:
    args.source = args.source[0] if isinstance(args.source, list) else args.source
    reports: list[ImportReport] = []
    if args.format == "cendor":
        tools = {getattr(fn, "__name__", spec): fn for spec in args.tool for fn in [_tool(spec)]}
        reports.append(
            import_cendor(
                args.source,
                args.to,
                tools=tools,
                defaults=_defaults(args.set),
                overwrite=args.force,
                skip_bad=args.skip_bad,
            )
        )
    else:
        if args.tool or args.set:
            raise CassetteImportError("--tool and --set apply to `cassette import cendor` only.")
        pairs = _vcr_pairs(Path(args.source), Path(args.to))
        if Path(args.source).is_dir():
            # one blob store for the whole tree, at its root (or the one it already shares): made
            # first, so a cassette in a sub-folder finds it as the nearest .blobs instead of
            # starting one of its own beside it
            _shared_store(Path(args.to))
        else:
            reports.append(import_vcr(pairs[0][0], pairs[0][1], overwrite=args.force, skip_bad=args.skip_bad))
        failed = 0
        for source, target in pairs if Path(args.source).is_dir() else []:
            # one unreadable file in a tree must not stop the others; each is named with its reason
            try:
                reports.append(import_vcr(source, target, overwrite=args.force, skip_bad=args.skip_bad))
            except CassetteError as exc:  # unreadable, or its target cannot be written
                failed += 1
                print(f"cassette import: {exc}", file=sys.stderr)
        if failed:
            for report in reports:
                print(report)
            print(f"{failed} of {len(pairs)} files not converted (reasons above).", file=sys.stderr)
            return 1
    for report in reports:
        print(report)
    return 1 if any(r.skipped for r in reports) else 0
