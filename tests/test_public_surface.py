"""Tests reach cassette through its public surface where they test public behaviour.

The public surface: the names `import cassette` exports (`cassette.__all__`, each documented in
docs/reference/api.md), the `cassette` command (`cassette.cli.main`), the pytest plugin, the hook
contract (`cassette.hookspecs`) and the test support in `cassette.testing`. A test of one layer's
own unit may import that layer's module (`cassette.core.canonical`, `cassette.secrets`, ...), never
a `_private` name or module of the package: the few units with no public door are listed in
`ALLOWED`, each with the reason. A name `cassette` exports is imported from `cassette`, not from
the module that happens to define it today. (Code inside strings, run by pytester, is not read.)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import cassette

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
PACKAGE = Path(cassette.__file__).resolve().parent

# (test file, private name) -> why the test cannot go through a public door
ALLOWED = {
    ("tests/conftest.py", "cassette.seam.session._last"): (
        "the session `cassette.drift()` reads when given no path: each test forgets the one an "
        "earlier test left, and nothing public forgets it"
    ),
    ("tests/test_replay_fastpath.py", "cassette.seam.transport._raw_request"): (
        "the lazy request the seam builds off the wire, a unit of the seam: it is never handed out "
        "whole, and the odd URLs and header objects the test gives it cannot be sent"
    ),
    ("tests/test_replay_fastpath.py", "cassette.plugins.providers.openai._ENDPOINTS"): (
        "every endpoint the OpenAI provider claims: its own table, listed nowhere public"
    ),
    ("tests/test_replay_fastpath.py", "cassette.plugins.providers.anthropic._ENDPOINTS"): (
        "every endpoint the Anthropic provider claims: its own table, listed nowhere public"
    ),
}
# modules of the package that are public as a whole (documented for plugin authors)
PUBLIC_MODULES = {"cassette.hookspecs"}


def _modules() -> set[str]:
    out = set()
    for path in PACKAGE.rglob("*.py"):
        parts = ("cassette", *path.relative_to(PACKAGE).with_suffix("").parts)
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


MODULES = _modules()


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def _ours(module: str | None) -> bool:
    return (module or "").split(".")[0] == "cassette"


def _dotted(node: ast.expr, modules: dict[str, str]) -> str | None:
    """``a.b.c`` as the dotted path it names, when ``a`` is a module of cassette the file imported."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in modules:
        return None
    return ".".join([modules[node.id], *reversed(attrs)])


def private_uses(source: str) -> Iterator[tuple[int, str]]:
    """Each private name or module of cassette a test's source reaches, with its line:
    ``from cassette.x import _y``, ``import cassette._x``, and ``m._y`` on a module ``m`` of
    cassette it imported (inside functions too)."""
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # a local name -> the module of cassette it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and _ours(node.module):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in MODULES:
                    modules[alias.asname or alias.name] = full
                if _private(full):
                    yield node.lineno, full
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _ours(alias.name):
                    modules[alias.asname or "cassette"] = alias.name if alias.asname else "cassette"
                    if _private(alias.name):
                        yield node.lineno, alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = _dotted(node.value, modules)
            if base is not None and base in MODULES:
                yield node.lineno, f"{base}.{node.attr}"


def public_names_from_inside(source: str) -> Iterator[tuple[int, str]]:
    """Each name `import cassette` exports that a test's source imports from an inner module."""
    public = set(cassette.__all__)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and _ours(node.module):
            if node.module == "cassette" or node.module in PUBLIC_MODULES:
                continue
            for alias in node.names:
                if alias.name in public:
                    yield node.lineno, f"{node.module}.{alias.name}"


def _test_sources() -> Iterator[tuple[str, str]]:
    for path in sorted(TESTS.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_no_test_imports_a_private_name_of_cassette_but_the_allowed_units() -> None:
    found = {(name, used): line for name, source in _test_sources() for line, used in private_uses(source)}
    offenders = sorted(
        f"{name}:{line} uses {used}" for (name, used), line in found.items() if (name, used) not in ALLOWED
    )
    assert offenders == [], "use the public name, or test through public behaviour:\n" + "\n".join(offenders)
    stale = sorted(set(ALLOWED) - set(found))
    assert stale == [], f"allowed but no longer used, remove them from ALLOWED: {stale}"


def test_tests_import_the_names_cassette_exports_from_cassette() -> None:
    offenders = [
        f"{name}:{line} imports {used}; use `from cassette import {used.rsplit('.', 1)[1]}`"
        for name, source in _test_sources()
        for line, used in public_names_from_inside(source)
    ]
    assert offenders == []


def test_the_checks_find_what_they_look_for() -> None:
    source = (
        "import cassette\n"
        "import cassette.cli._paths\n"
        "from cassette.seam.session import _last, run_stats\n"
        "from cassette.errors import CassetteMiss\n"
        "from cassette.hookspecs import hookimpl\n"
        "from cassette import tool\n"
        "def f():\n"
        "    from cassette.seam import session as s\n"
        "    from cassette.plugins.providers import openai\n"
        "    return s._active, openai._ENDPOINTS, cassette.seam.transport._raw_request, s.run_stats\n"
    )
    assert sorted(used for _, used in private_uses(source)) == [
        "cassette.cli._paths",
        "cassette.plugins.providers.openai._ENDPOINTS",
        "cassette.seam.session._active",
        "cassette.seam.session._last",
        "cassette.seam.transport._raw_request",
    ]
    assert [used for _, used in public_names_from_inside(source)] == ["cassette.errors.CassetteMiss"]


def test_every_public_name_resolves_and_the_api_reference_documents_it() -> None:
    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    assert len(set(cassette.__all__)) == len(cassette.__all__)
    for name in cassette.__all__:
        assert getattr(cassette, name) is not None, name
        assert not name.startswith("_"), name
    undocumented = [name for name in cassette.__all__ if not re.search(rf"`@?(cassette\.)?{name}\b", page)]
    assert undocumented == []
    for name in set(re.findall(r"`cassette\.(\w+)", page)):  # and the page names nothing else
        assert name in cassette.__all__, name
