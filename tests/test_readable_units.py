"""No function in the package is longer than a reader can hold at once (issue 22, point 6).

A function's length is counted from its ``def`` line to its last line (its docstring included,
its decorators not), read from the package's own AST. A function that needs more is several
units waiting to be named (see STYLE.md).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from textwrap import indent

import cassette

PACKAGE = Path(cassette.__file__).parent
MAX_LINES = 80

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, _Function]]:
    """Every function under ``tree`` with its qualified name (``Session.__init__``, ``tool.wrapper``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, _Function):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_functions(source: str, where: str, limit: int = MAX_LINES) -> list[str]:
    """``where:line name (N lines)`` for each function in ``source`` longer than ``limit`` lines."""
    out = []
    for name, node in _functions(ast.parse(source)):
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > limit:
            out.append(f"{where}:{node.lineno} {name} ({length} lines)")
    return out


def test_no_function_in_the_package_is_over_80_lines() -> None:
    offenders = [
        found
        for path in sorted(PACKAGE.rglob("*.py"))
        for found in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    ]
    assert not offenders, f"functions over {MAX_LINES} lines (split them into named units):\n" + "\n".join(
        offenders
    )


def test_the_length_check_finds_a_long_function_nested_or_in_a_class() -> None:
    body = "".join(f"x{i} = {i}\n" for i in range(MAX_LINES - 1))  # with its def line: exactly the limit
    source = (
        f"def fits():\n{indent(body, '    ')}\n"
        f"class Box:\n    def method(self):\n{indent(body + 'return 1', ' ' * 8)}\n\n"
        f"async def outer():\n    def inner():\n{indent(body + 'return 2', ' ' * 8)}\n    return inner\n"
    )
    found = [f.split(" ", 1) for f in long_functions(source, "m.py")]
    assert [name for _, name in found] == [
        f"Box.method ({MAX_LINES + 1} lines)",
        f"outer ({MAX_LINES + 3} lines)",
        f"outer.inner ({MAX_LINES + 1} lines)",
    ]
    lines = source.splitlines()
    assert [lines[int(where.split(":")[1]) - 1].strip() for where, _ in found] == [
        "def method(self):",
        "async def outer():",
        "def inner():",
    ]
