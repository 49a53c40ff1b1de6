"""`cassette textconv FILE`: a cassette with its blobs inlined, for `git diff` (a `diff=cassette` driver).

Git hands a textconv driver a path: the work-tree file, or a temporary copy of
a staged or committed version outside the repository. Payloads are found by
their git blob id in the blob store beside the file, in the configured store,
or in git's object database (which holds every payload ever staged or
committed), so old revisions render too. The output is for people: it never
fails (an unreadable file is printed as is; a payload nobody has is shown as
``"<missing blob …>"``).

A textconv driver changes what ``git diff`` prints, so scanners that read diff
output no longer see the raw bytes; the cassette hooks read the index instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cassette.config import load_config
from cassette.core.canonical import loads, pretty_json
from cassette.errors import CassetteError
from cassette.git.snapshot import GitBlobSource, open_repo, read_object
from cassette.store.blobs import default_store_for
from cassette.store.files import read_regular
from cassette.store.manifest import parse_manifest
from cassette.store.refs import hydrate


def _stores(path: Path) -> list[Path]:
    found: list[Path] = [default_store_for(path)]
    try:
        configured = [load_config(Path.cwd()).store_path()]
    except CassetteError:  # a broken pyproject.toml must not break `git diff`
        configured = []
    for candidate in configured:
        if candidate not in found:
            found.append(candidate)
    return found


def render(path: str | os.PathLike[str]) -> bytes:
    """The bytes ``git diff`` shows for a cassette: pretty JSON with every blob reference inlined.

    Example::

        sys.stdout.buffer.write(render("tests/cassettes/triage.json"))
    """
    p = Path(path)
    data = read_regular(p, limit=None)  # a FIFO or a device (/dev/zero): NotRegularFileError, not read
    try:
        return _render(p, data)
    except (CassetteError, OSError, RecursionError, ValueError):  # a damaged or foreign file: as it is
        return data


def _render(p: Path, data: bytes) -> bytes:
    parse_manifest(data, p)
    stores = _stores(p)
    try:
        repo: Any = open_repo(Path.cwd())
    except CassetteError:
        repo = None

    def read(blob_id: str) -> bytes | None:
        for store in stores:
            candidate = store / blob_id[:2] / blob_id[2:]
            if candidate.is_file():
                return candidate.read_bytes()
        return read_object(repo, blob_id) if repo is not None else None

    doc = loads(data)  # parsed again to keep the file's own key order
    doc["interactions"] = hydrate(doc["interactions"], GitBlobSource(read, verify=False), p, lenient=True)
    return pretty_json(doc)
