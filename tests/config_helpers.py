"""What ``[tool.cassette]`` accepts, read from `parse_config` itself: each key, its type, its choices.

The reference tables and the bad-value cases are checked against what the parser does, not
against its private tables.
"""

from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path

import cassette
from cassette.config import parse_config

# how a refusal names the type a key wants -> how docs/reference/config.md names it
KINDS = {
    "true or false": "bool",
    "a non-negative integer": "int",
    "a string": "string",
    "a list of strings": "list of strings",
}


def refusal(line: str) -> str | None:
    """What `parse_config` says refusing ``[tool.cassette]`` + ``line``, or ``None`` if it accepts it."""
    with tempfile.TemporaryDirectory() as tmp:
        pyproject = Path(tmp) / "pyproject.toml"
        pyproject.write_text(f"[tool.cassette]\n{line}\n", encoding="utf-8")
        try:
            parse_config(pyproject)
        except cassette.CassetteConfigError as exc:
            return str(exc)
    return None


@functools.cache
def config_keys() -> tuple[str, ...]:
    """Every key `parse_config` accepts, as its unknown-key error lists them."""
    message = refusal("no_such_key_at_all = 1")
    assert message is not None and "Known keys: " in message, message
    return tuple(message.split("Known keys: ", 1)[1].rstrip(".").split(", "))


def config_kind(key: str) -> str:
    """``bool``, ``int``, ``string``, ``list of strings`` or ``table of floats``: what ``key`` wants."""
    message = refusal(f"{key} = {{}}")  # an empty table: only a table of scores accepts it
    if message is None:
        return "table of floats"
    wanted = re.search(rf"\] {key} must be (.*?), got ", message)
    assert wanted is not None, message
    return KINDS[wanted.group(1)]


def config_choices(key: str) -> tuple[str, ...]:
    """The values a string key is limited to (``mode``: auto, record...), or ``()`` for any string."""
    message = refusal(f'{key} = "\\u0001"')  # a string no key with choices accepts
    wanted = re.search(rf"\] {key} must be one of (.*?), got ", message or "")
    return tuple(re.findall(r"'([^']*)'", wanted.group(1))) if wanted else ()
