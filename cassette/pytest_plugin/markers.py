"""The ``@pytest.mark.cassette`` marker: its options, merged from every level and checked one by one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cassette.config import MODES, host_pattern_problem
from cassette.errors import CassetteConfigError

MARKER_OPTIONS = (
    "path",
    "mode",
    "check_order",
    "unused",
    "blob_threshold",
    "compress",
    "allow_hosts",
    "network_guard",
    "block_loopback",
)
MARKER_HELP = (
    "cassette(path=None, *, mode=None, check_order=None, unused=None, blob_threshold=None, "
    "compress=None, allow_hosts=(), network_guard=None, block_loopback=None): run the test inside "
    "a cassette session (records if missing, replays if present). See docs/pytest.md."
)


def marker_options(item: pytest.Item) -> dict[str, Any] | None:
    """Merged, validated options of every ``cassette`` marker on the item, or ``None``.

    The closest marker wins key by key: the test's parameter set over the test function, the
    function over its class (a subclass over its base class), the class over the module. Two
    markers at the same level that disagree on a key are an error, never a silent pick.
    """
    found = list(item.iter_markers_with_node("cassette"))
    if not found:
        return None
    nodes: list[tuple[Any, list[pytest.Mark]]] = []
    for node, marker in found:
        if not nodes or nodes[-1][0] is not node:
            nodes.append((node, []))
        nodes[-1][1].append(marker)
    options: dict[str, Any] = {}
    for node, markers in reversed(nodes):  # farthest (module) first, the test itself last
        for layer in _layers(item, node, markers):
            layer_options: dict[str, Any] = {}
            for marker in layer:
                for key, value in _checked_marker(item, marker).items():
                    if key in layer_options and not _same(layer_options[key], value):
                        raise CassetteConfigError(
                            f"{item.nodeid}: two @pytest.mark.cassette markers on {_describe_node(node)} "
                            f"set {key} differently ({layer_options[key]!r} and {value!r}); neither would "
                            "be sure to win. Keep one marker, or give the option once."
                        )
                    layer_options[key] = value
            options.update(layer_options)
    return options


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an exotic value whose == raises: not the same
        return False


def _describe_node(node: Any) -> str:
    if isinstance(node, pytest.Class):
        return f"class {node.name}"
    if isinstance(node, pytest.Module):
        return f"module {node.name}"
    return str(getattr(node, "name", node))


def _layers(item: pytest.Item, node: Any, markers: list[pytest.Mark]) -> list[list[pytest.Mark]]:
    """One node's markers split into override layers, farthest first.

    A class's markers come from every class of its MRO (pytest lists base classes first): a
    subclass's marker overrides its base's. A parametrized test's ``pytest.param(marks=...)``
    markers override the function's decorators.
    """
    groups: list[set[int]] = []
    obj = getattr(node, "obj", None) if isinstance(node, pytest.Class) else None
    if isinstance(obj, type):
        for klass in reversed(obj.__mro__):
            raw = klass.__dict__.get("pytestmark", [])
            groups.append({id(getattr(m, "mark", m)) for m in (raw if isinstance(raw, list) else [raw])})
    elif node is item:
        callspec = getattr(item, "callspec", None)
        if callspec is not None:
            param_marks = {id(m) for m in getattr(callspec, "marks", ())}
            groups.append({id(m) for m in markers if id(m) not in param_marks})
            groups.append(param_marks)
    if not groups:
        return [markers]
    layers: list[list[pytest.Mark]] = []
    left = list(markers)
    for ids in groups:
        layer = [m for m in left if id(m) in ids]
        left = [m for m in left if id(m) not in ids]
        if layer:
            layers.append(layer)
    if left:  # added at run time (item.add_marker): the closest
        layers.append(left)
    return layers


def _checked_marker(item: pytest.Item, marker: pytest.Mark) -> dict[str, Any]:
    """One marker's options, each checked, so a wrong value fails the test by name, not deep inside."""
    where = f"{item.nodeid}: @pytest.mark.cassette"
    if len(marker.args) > 1:
        raise CassetteConfigError(
            f"{where} takes at most one positional argument (the path), got {len(marker.args)}: "
            f"{', '.join(repr(a) for a in marker.args)}. Pass the other options by keyword."
        )
    unknown = sorted(set(marker.kwargs) - set(MARKER_OPTIONS))
    if unknown:
        raise CassetteConfigError(
            f"{item.nodeid}: unknown @pytest.mark.cassette option(s) {', '.join(unknown)}; "
            f"known: {', '.join(MARKER_OPTIONS)}."
        )
    options = dict(marker.kwargs)
    if marker.args:
        if "path" in options:
            raise CassetteConfigError(
                f"{where} got the path twice: {marker.args[0]!r} as its argument and "
                f"path={options['path']!r}. Keep one."
            )
        options["path"] = marker.args[0]
    for key, value in options.items():
        problem = _option_problem(key, value)
        if problem:
            raise CassetteConfigError(f"{where}({key}={value!r}): {key} must be {problem}. Fix the marker.")
    if options.get("path") is not None:
        options["path"] = os.fspath(options["path"])
    return options


def _option_problem(key: str, value: Any) -> str | None:
    """What ``value`` should be for the marker option ``key``, or ``None`` if it is fine."""
    if value is None:
        return None
    if key == "path":
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str):
            return "a string or a str path (relative to the cassette dir)"
        if "\x00" in value:
            return "a path without NUL bytes"
        if Path(value).name in ("", ".", ".."):
            return "a file name such as 'orders/status' (relative to the cassette dir), not a directory"
        return None
    if key == "mode":
        if not isinstance(value, str) or value.strip().lower() not in MODES:
            return "one of " + ", ".join(repr(m) for m in MODES)
        return None
    if key in ("check_order", "unused"):
        if isinstance(value, bool) or value in ("warn", "error", "off"):
            return None
        return "'warn', 'error', 'off', True or False"
    if key == "blob_threshold":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return "a non-negative number of bytes"
        return None
    if key == "allow_hosts":
        hosts = [value] if isinstance(value, str) else value
        if isinstance(hosts, list | tuple) and all(isinstance(h, str) for h in hosts):
            problems = [f"{h!r} {p}" for h in hosts if (p := host_pattern_problem(h)) is not None]
            return None if not problems else "hosts that can match; " + "; ".join(problems)
        return "a host (string) or a list of hosts such as ['vault.internal', '10.0.0.0/8']"
    if key in ("network_guard", "block_loopback", "compress"):
        return None if isinstance(value, bool) else "True or False"
    return None
