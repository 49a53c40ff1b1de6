"""``cassette ls [DIR]``: every cassette with its call counts and its size, blobs included."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cassette.cli._paths import resolve_arg
from cassette.config import load_config
from cassette.errors import CassetteError
from cassette.maintenance.hygiene import (
    blob_use,
    cassette_dir,
    cassette_files,
    format_size,
    read_manifest,
    store_blobs,
)
from cassette.seam.session import store_for

HELP = "list cassettes with LLM/tool/HTTP call counts and sizes (manifest + the blobs it references)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", nargs="?", type=Path, help="directory to list (default: [tool.cassette] cassette_dir)"
    )
    parser.add_argument("--json", action="store_true", help="print the listing as JSON")


def listing(root: Path) -> dict[str, Any]:
    """``{"cassettes": [...], "store": {...}}`` for every manifest under ``root``.

    Example::

        listing(Path("tests/cassettes"))["cassettes"][0]["calls"]  # {"llm": 3, "tool": 1}
    """
    config = load_config(root)
    rows: list[dict[str, Any]] = []
    stores: dict[Path, set[str]] = {}
    for path in cassette_files(root, side_files=True):
        try:
            size = path.stat().st_size
        except OSError:  # a dangling symlink: read_manifest says what it is
            size = 0
        row: dict[str, Any] = {"path": str(path.relative_to(root)), "manifest_bytes": size}
        try:
            doc = read_manifest(path)
        except CassetteError as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        store = store_for(path, config)
        use = blob_use([doc], store)
        calls: dict[str, int] = {}
        for item in doc.get("interactions", []):
            kind = str(item.get("kind"))
            calls[kind] = calls.get(kind, 0) + 1
        blob_bytes = 0
        for blob_id in use.referenced - use.missing:
            try:
                blob_bytes += (store / blob_id[:2] / blob_id[2:]).stat().st_size
            except OSError:
                pass
        row.update(
            calls=calls,
            interactions=sum(calls.values()),
            blobs=len(use.referenced),
            blob_bytes=blob_bytes,
            missing_blobs=sorted(use.missing),
        )
        rows.append(row)
        stores.setdefault(store, set()).update(use.referenced)
    store_rows = []
    for store, referenced in sorted(stores.items()):
        blobs = store_blobs(store)
        unreferenced = [p for blob_id, p in blobs.items() if blob_id not in referenced]
        store_rows.append(
            {
                "path": str(store),
                "blobs": len(blobs),
                "bytes": sum(p.stat().st_size for p in blobs.values()),
                "unreferenced": len(unreferenced),
            }
        )
    return {"root": str(root), "cassettes": rows, "stores": store_rows}


def run(args: argparse.Namespace) -> int:
    root = cassette_dir(resolve_arg(args.dir) if args.dir is not None else None)
    data = listing(root)
    bad = [r for r in data["cassettes"] if r.get("error") or r.get("missing_blobs")]
    if args.json:
        print(json.dumps(data, indent=2))
        return 1 if bad else 0
    out = sys.stdout
    rows = data["cassettes"]
    width = max([len(r["path"]) for r in rows] + [8])
    out.write(f"{'cassette':<{width}}  {'llm':>4} {'tool':>4} {'http':>4}  {'manifest':>9}  {'blobs':>9}\n")
    for r in rows:
        if "error" in r:
            out.write(f"{r['path']:<{width}}  UNREADABLE: {r['error']}\n")
            continue
        c = r["calls"]
        missing = f"  ({len(r['missing_blobs'])} blob(s) MISSING)" if r["missing_blobs"] else ""
        out.write(
            f"{r['path']:<{width}}  {c.get('llm', 0):>4} {c.get('tool', 0):>4} {c.get('http', 0):>4}  "
            f"{format_size(r['manifest_bytes']):>9}  {format_size(r['blob_bytes']):>9}{missing}\n"
        )
    total = sum(r["manifest_bytes"] for r in rows)
    out.write(f"{len(rows)} cassette(s), manifests {format_size(total)}\n")
    for s in data["stores"]:
        extra = f", {s['unreferenced']} unreferenced (cassette gc)" if s["unreferenced"] else ""
        out.write(f"store {s['path']}: {s['blobs']} blob(s), {format_size(s['bytes'])}{extra}\n")
    return 1 if bad else 0
