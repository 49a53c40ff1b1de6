"""The layout of docs/architecture.md, read from the package's own AST.

`lint-imports` checks the layer contract in pyproject.toml; these tests check what it does not
see: imports inside functions count towards a cycle, an import of ours inside a function says why
it is deferred, no module imports another package's private name, and every error class lives in
`cassette.errors` under `CassetteError`.
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
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target, names in _reached(name, path, node):
                yield target, node, names


def _reached(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, list[str]]]:
    """The modules of ours that import statement ``node`` of module ``name`` reaches, each with the
    names it takes from it."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            if sub in MODULES:
                yield sub, []
            elif target in MODULES:
                yield target, [alias.name]
    else:
        for alias in node.names:
            if alias.name in MODULES:
                yield alias.name, []


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


DEFERRED = "# deferred:"


def _function_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement inside a function (at any depth), but not under ``if TYPE_CHECKING:``."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[ast.Import | ast.ImportFrom]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # never run: a type checker's view, not a hidden arrow
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            yield from walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    return walk(tree, False)


def _undeferred(name: str, path: Path) -> list[int]:
    """The lines of the imports of ours inside functions of module ``name`` that do not say why they
    are deferred: a ``# deferred:`` comment on the statement, or in the comment lines just above it
    (one comment may head a run of consecutive imports)."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    import_lines = {
        n
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    missing = []
    for node in _function_imports(tree):
        if not any(_reached(name, path, node)):
            continue
        said = any(DEFERRED in lines[n - 1] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1))
        above = node.lineno - 1
        while not said and above >= 1:
            if above not in import_lines and not lines[above - 1].lstrip().startswith("#"):
                break  # a blank line or code: the comment, if any, is someone else's
            said = DEFERRED in lines[above - 1]
            above -= 1
        if not said:
            missing.append(node.lineno)
    return missing


def test_every_import_of_ours_inside_a_function_says_why_it_is_deferred() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for name, path in MODULES.items()
        for line in _undeferred(name, path)
    ]
    assert offenders == [], f"hoist these to the module's top, or say `{DEFERRED} <why>` beside them"


def test_the_deferred_check_finds_a_hidden_import(tmp_path: Path) -> None:
    module = tmp_path / "hidden.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from cassette.core.model import Cassette\n"
        "def f():\n"
        "    if TYPE_CHECKING:\n"
        "        from cassette.core.model import Interaction\n"
        "    from cassette.core import sse\n"
        "    # deferred: the reason\n"
        "    from cassette.core import diff\n"
        "    from cassette.core import layout\n"
        "\n"
        "    from cassette.core import paths  # deferred: another\n"
        "    import json\n"
        "    class C:\n"
        "        def g(self):\n"
        "            from cassette.core import canonical\n",
        encoding="utf-8",
    )
    assert _undeferred("cassette.hidden", module) == [7, 16]


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
