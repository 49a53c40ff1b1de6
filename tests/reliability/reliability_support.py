"""Helpers shared by the reliability suites (imported by the test modules beside it)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cassette import load_cassette
from cassette.store.blobs import git_blob_id
from cassette.store.files import TMP_SUFFIX
from cassette.testing.devserver import DevServer

# Set by conftest.py's pytest_configure (``--soak``); CASSETTE_SOAK=1 works without it.
SOAK = os.environ.get("CASSETTE_SOAK", "").strip().lower() not in ("", "0", "false", "no")


def soak_mode() -> bool:
    """True when the long variants were asked for (``--soak`` or ``CASSETTE_SOAK=1``).

    Read it at import time or later: the autouse fixture of tests/conftest.py clears
    CASSETTE_* variables for each test, so the environment is read once, here.
    """
    return SOAK


class FastDevServer(DevServer):
    """The project's dev server, with Nagle's algorithm guaranteed off on its sockets.

    Its handler writes the headers and the body in two sends; with Nagle on, the
    body waits for the client's delayed ACK, ~40 ms per call on Linux. The dev
    server now turns it off itself; this keeps the suites (thousands of calls) fast
    should that ever regress.
    """

    def _bind(self) -> Any:
        httpd = super()._bind()
        handler = httpd.RequestHandlerClass
        if not getattr(handler, "disable_nagle_algorithm", False):
            httpd.RequestHandlerClass = type(handler.__name__, (handler,), {"disable_nagle_algorithm": True})
        return httpd


def has_module(name: str) -> bool:
    """True when the optional module ``name`` exists in this tree (features other helpers are adding)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def is_temp_name(name: str) -> bool:
    """The name `atomic_write` gives its temporary files: ``.<final>.<pid>.<hex>.tmp``."""
    return name.startswith(".") and name.endswith(TMP_SUFFIX)


@dataclass
class StoreReport:
    """What a walk over a blob store found."""

    blobs: int = 0
    temps: list[Path] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)  # final-named files that do not hash to their name


def check_store(root: Path, seen: set[str] | None = None) -> StoreReport:
    """Every file under ``root`` is a temp file or a blob whose bytes hash to its name.

    ``seen`` (paths already verified) lets repeated walks hash only new files: a
    file under its final name is only ever created by a rename, never rewritten.
    """
    report = StoreReport()
    if not root.exists():
        return report
    for dirpath, _dirs, files in os.walk(root):
        prefix = os.path.basename(dirpath)
        for name in files:
            full = os.path.join(dirpath, name)
            if is_temp_name(name):
                report.temps.append(Path(full))
                continue
            if seen is not None and full in seen:
                report.blobs += 1
                continue
            with open(full, "rb") as fh:
                data = fh.read()
            ok = len(prefix) == 2 and len(name) == 38 and os.path.dirname(dirpath) == str(root)
            if not ok or git_blob_id(data) != prefix + name:
                report.bad.append(os.path.relpath(full, root))
                continue
            report.blobs += 1
            if seen is not None:
                seen.add(full)
    return report


def hydrate_all(path: Path, store: Path | None = None) -> list[tuple[Any, Any]]:
    """Load a cassette and resolve every blob of every interaction (what replay would read)."""
    c = load_cassette(path, store)
    return [(c.hydrate(i.request), c.hydrate(i.response)) for i in c.interactions]


def iter_files(root: Path) -> Iterator[Path]:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            yield Path(dirpath) / name
