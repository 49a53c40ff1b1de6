"""``[tool.cassette]`` in pyproject.toml: read with tomlkit, validated key by key."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import ipaddress
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from cassette.core.paths import resolve_path
from cassette.errors import CassetteConfigError

MODES = ("auto", "record", "replay", "rerecord")


@dataclass(frozen=True)
class Config:
    """Settings from ``[tool.cassette]``; every field has a working default."""

    root: Path = field(default_factory=Path.cwd)  # the directory holding pyproject.toml
    source: Path | None = None  # the pyproject.toml read, if any
    cassette_dir: str = "tests/cassettes"
    store: str | None = None  # blob store directory; default <cassette_dir>/.blobs
    mode: str = "auto"
    blob_threshold: int = 512
    compress: bool = False  # write manifests gzip-compressed, responses inline
    check_order: str = "warn"  # "warn" | "error" | "off"
    unused: str = "warn"  # "warn" | "error" | "off"
    plugins: tuple[str, ...] = ()
    redact_headers: tuple[str, ...] = ()
    redact_fields: tuple[str, ...] = ()
    redact_query: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    network_guard: bool = True
    semantic_backend: str = "lexical"
    semantic_thresholds: dict[str, float] = field(default_factory=dict)
    judge_model: str = "gpt-4o-mini"
    max_age: str | None = None  # e.g. "90d"
    max_age_action: str = "warn"  # "warn" | "fail" | "rerecord"
    secrets_allow: tuple[str, ...] = ()
    orphans: str = "off"  # "off" | "warn" | "fail"
    keys: frozenset[str] = frozenset()  # the keys the file set (a default differs from an explicit value)

    def cassette_root(self) -> Path:
        return _resolved(self.root, self.cassette_dir)

    def store_path(self) -> Path:
        if self.store:
            return _resolved(self.root, self.store)
        return self.cassette_root() / ".blobs"


@functools.lru_cache(maxsize=256)
def _resolved(root: Path, relative: str) -> Path:
    # the pytest plugin asks for these paths several times per test; resolving walks the file
    # system each time (cleared with the config cache)
    return resolve_path(root / relative)


_CHOICES: dict[str, tuple[str, ...]] = {
    "mode": MODES,
    "check_order": ("warn", "error", "off"),
    "unused": ("warn", "error", "off"),
    "max_age_action": ("warn", "fail", "rerecord"),
    "orphans": ("off", "warn", "fail"),
}


def _check(key: str, value: Any, expected: Any, source: Path) -> Any:
    def bad(what: str) -> CassetteConfigError:
        return CassetteConfigError(
            f"{source}: [tool.cassette] {key} must be {what}, got {value!r}. Fix the value in that file.",
            path=source,
        )

    if expected is bool:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if expected is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad("a non-negative integer")
        return value
    if expected in (str, "str|None"):
        if not isinstance(value, str):
            raise bad("a string")
        if "\x00" in value:
            raise bad("a string without NUL bytes")
        if key in _PATHS and not value.strip():
            raise bad("a directory path (it is empty)")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise bad("one of " + ", ".join(repr(c) for c in _CHOICES[key]))
        return value
    if expected == "strs":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a list of strings")
        if key == "allow_hosts":
            for entry in value:
                problem = host_pattern_problem(entry)
                if problem is not None:
                    raise CassetteConfigError(
                        f"{source}: [tool.cassette] allow_hosts entry {entry!r} {problem}; it would never "
                        "match. Use a host name, a pattern (*.internal), an IP or a CIDR network.",
                        path=source,
                    )
        return tuple(value)
    if expected == "floats":
        if not isinstance(value, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1 for v in value.values()
        ):
            raise bad("a table of scores from 0 to 1, e.g. {lexical = 0.6}")
        return {str(k): float(v) for k, v in value.items()}
    raise AssertionError(expected)  # pragma: no cover


_PATHS = frozenset({"cassette_dir", "store"})  # an empty one would resolve to the project root itself

_TYPES: dict[str, Any] = {
    "cassette_dir": str,
    "store": "str|None",
    "mode": str,
    "blob_threshold": int,
    "compress": bool,
    "check_order": str,
    "unused": str,
    "plugins": "strs",
    "redact_headers": "strs",
    "redact_fields": "strs",
    "redact_query": "strs",
    "allow_hosts": "strs",
    "network_guard": bool,
    "semantic_backend": str,
    "semantic_thresholds": "floats",
    "judge_model": str,
    "max_age": "str|None",
    "max_age_action": str,
    "secrets_allow": "strs",
    "orphans": str,
}


def find_pyproject(start: Path | None = None) -> Path | None:
    here = resolve_path(start or Path.cwd())
    for d in (here, *here.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def parse_config(pyproject: Path) -> Config:
    """Read and validate ``[tool.cassette]`` from one pyproject.toml.

    Example::

        cfg = parse_config(Path("pyproject.toml"))
        cfg.cassette_dir  # "tests/cassettes" unless set
    """
    try:
        doc = tomlkit.parse(pyproject.read_text(encoding="utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise CassetteConfigError(
            f"{pyproject}: not valid TOML ({exc}). Fix the syntax of that file.", path=pyproject
        ) from exc
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        raise CassetteConfigError(
            f"{pyproject}: `tool` must be a table (it holds the [tool.<name>] sections), got "
            f"{type(tool).__name__}. Fix that file: remove or rename its top-level `tool = ...` value.",
            path=pyproject,
        )
    section = tool.get("cassette", {})
    section = section.unwrap() if hasattr(section, "unwrap") else dict(section)
    if not isinstance(section, dict):
        raise CassetteConfigError(
            f"{pyproject}: [tool.cassette] must be a table. Fix that file: put the settings under a "
            "`[tool.cassette]` header, one `key = value` per line.",
            path=pyproject,
        )
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key not in _TYPES:
            known = ", ".join(sorted(_TYPES))
            close = difflib.get_close_matches(key, list(_TYPES), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise CassetteConfigError(
                f"{pyproject}: unknown key [tool.cassette] {key!r}.{hint} Known keys: {known}.",
                path=pyproject,
            )
        values[key] = _check(key, value, _TYPES[key], pyproject)
    return Config(root=pyproject.parent, source=pyproject, keys=frozenset(values), **values)


_cache: dict[Path | None, Config] = {}
_by_dir: dict[str, Config] = {}  # the working directory -> its config, so a hot path costs one getcwd
_cache_lock = threading.Lock()


def load_config(start: Path | None = None) -> Config:
    """The config of the project around ``start`` (default: the working directory), cached.

    Example::

        load_config().cassette_dir  # "tests/cassettes" unless [tool.cassette] says otherwise
    """
    where = str(start) if start is not None else os.getcwd()
    cached = _by_dir.get(where)
    if cached is not None:
        return cached
    pyproject = find_pyproject(start)
    with _cache_lock:
        cfg = _cache.get(pyproject)
    if cfg is None:
        cfg = parse_config(pyproject) if pyproject else Config()
    with _cache_lock:
        _cache[pyproject] = cfg
        _by_dir[where] = cfg
    return cfg


def clear_config_cache() -> None:
    with _cache_lock:
        _cache.clear()
        _by_dir.clear()
    _resolved.cache_clear()


def env_mode() -> str | None:
    """``CASSETTE_MODE`` if set (validated by the caller)."""
    value = os.environ.get("CASSETTE_MODE", "").strip()
    return value or None


def replace(cfg: Config, **changes: Any) -> Config:
    return dataclasses.replace(cfg, **changes)


def host_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` can never match a host (an allow-list entry), or ``None`` if it is usable.

    Usable: a host name (``vault.internal``), a glob (``*.internal``), an IP address, or an IP
    network in CIDR form (``10.0.0.0/8``).

    Example::

        host_pattern_problem("http://example.com")  # "is a URL: give its host alone (example.com)"
    """
    text = pattern.strip()
    if not text:
        return "is empty"
    if "://" in text:
        host = text.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
        return f"is a URL: give its host alone ({host or 'example.com'})"
    if any(ch.isspace() for ch in text) or "\x00" in text:
        return "holds spaces or a NUL byte"
    if "/" in text:
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            return "is neither a host name nor an IP network (CIDR such as 10.0.0.0/8)"
        return None
    if ":" in text:
        try:
            ipaddress.ip_address(text.strip("[]"))
        except ValueError:
            return "holds a port or a scheme: give the host alone (a connection to any port is allowed)"
    return None
