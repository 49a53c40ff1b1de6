"""Where a test's cassette lives by default: its module path and test name as safe file names.

Pure path logic, shared by the pytest plugin (for a collected test) and the CLI (for a node id
such as ``tests/test_agent.py::test_refund``).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

_SAFE_CHARS = re.compile(r"[^A-Za-z0-9._\-\[\]=+,@]")
_MAX_NAME = 120
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
)


def safe_name(name: str) -> str:
    """A file name that is safe everywhere, stable, and distinct for distinct inputs.

    Characters outside ``[A-Za-z0-9._-[]=+,@]`` become ``_`` and a short hash of the
    original is appended; names longer than 120 characters are cut and hashed.

    Example::

        safe_name("test_x[gpt-4o]") == "test_x[gpt-4o]"
        safe_name("test_x[a b]")    == "test_x[a_b]-" + 8 hex digits
    """
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    cleaned = _SAFE_CHARS.sub("_", name).rstrip(". ")
    if cleaned != name or not cleaned:
        cleaned = f"{cleaned}-{digest[:8]}"
    if len(cleaned) > _MAX_NAME:
        cleaned = f"{cleaned[: _MAX_NAME - 11].rstrip('. ')}-{digest[:10]}"
    if cleaned.startswith(".") or cleaned.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
        cleaned = "_" + cleaned
    return cleaned


def cassette_path_of_test(module: Path, test: str, cassette_root: Path, rootpath: Path) -> Path:
    """``<cassette dir>/<test module path without .py>/<test name>.json``.

    ``module`` is the test file's resolved path, ``test`` the node id's part after the file
    (``TestX::test_y[a]``). The module path is taken relative to the directory holding the
    cassette dir (``tests/`` for ``tests/cassettes``) when the module lives there, else to
    ``rootpath``; class names join the test name with ``.``; each parameter set gets its own file.

    Example::

        root = Path("/p/tests/cassettes")
        cassette_path_of_test(Path("/p/tests/test_agent.py"), "test_refund", root, Path("/p"))
        # Path("/p/tests/cassettes/test_agent/test_refund.json")
    """
    try:
        rel = module.relative_to(cassette_root.parent)
    except ValueError:
        try:
            rel = module.relative_to(rootpath)
        except ValueError:
            rel = Path(module.name)
    parts = [safe_name(p) for p in rel.with_suffix("").parts]
    return cassette_root.joinpath(*parts, safe_name(test.replace("::", ".")) + ".json")
