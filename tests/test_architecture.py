"""The layout of docs/architecture.md, read from the package's own AST.

`lint-imports` checks the layer contract in pyproject.toml; these tests check what it does not
see: imports inside functions count towards a cycle, no module imports another package's private
name, and every error class lives in `cassette.errors` under `CassetteError`.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import cassette
import cassette.errors

PACKAGE = Path(cassette.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("cassette", *path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, ast.ImportFrom | ast.Import, list[str]]]:
    """Each import of ours in module ``name``, anywhere in it (inside functions too): the module it
    reaches, the statement, and the names it takes."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    yield sub, node, []
                elif target in MODULES:
                    yield target, node, [alias.name]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name, node, []


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for target, _, _ in _imports(name, path):
            if target != name and target != "cassette":  # the root is the public API, above all
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = _graph()
    graph["cassette.core.model"].add("cassette.seam.session")  # the loop the layout cut
    assert any("cassette.core.model" in c and "cassette.seam.session" in c for c in _cycles(graph))


def test_no_module_imports_a_private_name_from_another_package() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {target}.{taken}"
        for name, path in MODULES.items()
        for target, node, names in _imports(name, path)
        for taken in names
        if taken.startswith("_") and not taken.startswith("__") and _package_of(target) != _package_of(name)
    ]
    assert offenders == []


def test_every_error_class_lives_in_errors_under_cassette_error() -> None:
    elsewhere = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_") or name == "cassette.errors":
                continue
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
            if any(b.endswith(("Error", "Exception", "Miss")) or b == "CassetteError" for b in bases):
                elsewhere.append(f"{name}.{node.name}")
    assert elsewhere == []
    errors = [
        c
        for _, c in inspect.getmembers(cassette.errors, inspect.isclass)
        if issubclass(c, Exception) and not issubclass(c, Warning)  # CassetteWarning: a warning, not raised
    ]
    assert errors and all(issubclass(c, cassette.CassetteError) for c in errors), [
        c.__name__ for c in errors if not issubclass(c, cassette.CassetteError)
    ]


def test_each_package_states_its_job() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 20, f"{init.relative_to(PACKAGE.parent)} has no docstring stating its job"
