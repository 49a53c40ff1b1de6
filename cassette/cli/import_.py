"""``cassette import vcr|cendor SOURCE --to TARGET``: bring recordings from vcrpy or cendor-cassette over."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

from cassette.importers import CassetteImportError, ImportReport, import_cendor, import_vcr

HELP = "convert vcrpy / pytest-recording or cendor-cassette recordings into cassettes (prints what was lost)"

_VCR_SUFFIXES = (".yaml", ".yml", ".json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "format",
        choices=("vcr", "pytest-recording", "cendor"),
        help="what wrote SOURCE (vcr = pytest-recording)",
    )
    parser.add_argument("source", help="the file to convert (vcr: or a directory of cassettes)")
    parser.add_argument("--to", required=True, help="the cassette to write (a directory when SOURCE is one)")
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
        "or for one provider anthropic.max_tokens=1024 (VALUE is JSON, else a string; repeatable)",
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


def _vcr_pairs(source: Path, to: Path) -> list[tuple[Path, Path]]:
    if not source.is_dir():
        return [(source, to)]
    files = sorted(p for p in source.rglob("*") if p.suffix.lower() in _VCR_SUFFIXES and p.is_file())
    if not files:
        raise CassetteImportError(f"{source} holds no .yaml/.yml/.json cassettes.", path=source)
    return [(f, (to / f.relative_to(source)).with_suffix(".json")) for f in files]


def run(args: argparse.Namespace) -> int:
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
        for source, target in _vcr_pairs(Path(args.source), Path(args.to)):
            reports.append(import_vcr(source, target, overwrite=args.force, skip_bad=args.skip_bad))
    for report in reports:
        print(report)
    return 1 if any(r.skipped for r in reports) else 0
