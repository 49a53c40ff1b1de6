"""The data of a run: an HTTP request as plain data, an `Interaction`, a `Cassette`."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from cassette.errors import MissingBlobError

KINDS = ("llm", "tool", "http")


@dataclass(frozen=True)
class HttpRequest:
    """An outgoing HTTP request as plain primitives, handed to provider plugins.

    Example::

        HttpRequest("POST", "https://api.example.com/v1/chat/completions", (), b"{}")
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]  # names lower-cased, in wire order
    body: bytes

    def header(self, name: str) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return None

    @property
    def path(self) -> str:
        return _url_path(self.url)


@lru_cache(maxsize=256)
def _url_path(url: str) -> str:
    """The path of ``url``: an agent calls the same few endpoints, and splitting a URL is slow."""
    return urlsplit(url).path


@dataclass
class Interaction:
    """One call, recorded: its kind, match key, normalised request and response.

    ``request`` and ``response`` are JSON-able. In a loaded cassette they may
    still hold ``{"$blob": id}`` references until :meth:`Cassette.hydrate` is
    applied to them.
    """

    seq: int
    kind: str
    key: str
    request: dict[str, Any]
    response: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)  # unknown manifest fields, kept verbatim

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        out.update(seq=self.seq, kind=self.kind, key=self.key, request=self.request, response=self.response)
        return out


@dataclass
class Cassette:
    """An ordered list of interactions plus the file and blob store they live in."""

    path: Path
    interactions: list[Interaction] = field(default_factory=list)
    store: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # unknown top-level fields, kept verbatim
    blob_cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def match_keys(self) -> list[str]:
        """Each interaction's match key, in order."""
        return [i.key for i in self.interactions]

    def item(self, i: int) -> Interaction:
        """Interaction ``i`` (a cassette opened for replay parses it here, when it is served)."""
        return self.interactions[i]

    def release(self, i: int) -> None:
        """Interaction ``i`` was served: a cassette opened for replay drops what it parsed for it."""

    def take(self, i: int) -> Interaction:
        """Interaction ``i``, being served: `item` then `release`."""
        inter = self.item(i)
        self.release(i)
        return inter

    def redacted_keys(self) -> dict[str, list[int]]:
        """Redacted match key -> the positions recorded with it, last first (see `redacted_key`)."""
        out: dict[str, list[int]] = {}
        for pos in range(len(self.match_keys()) - 1, -1, -1):
            key = self.item(pos).extra.get("redacted_key")
            if isinstance(key, str):
                out.setdefault(key, []).append(pos)
        return out

    def served_refs(self, i: int, verified: dict[str, int]) -> tuple[bool, bool]:
        """What serving interaction ``i`` must still do: whether every blob reference in its request
        is one `check_refs` has checked already (recorded in ``verified``), so the request need not
        be checked again; and whether its response may hold blob references, so it must be
        hydrated to be read. Either answer may err the safe way (False, True)."""
        return False, holds_refs(self.item(i).response)

    def hydrate(self, value: Any) -> Any:
        """``value`` with its blob references replaced by their content.

        A cassette built in memory holds none (references are made when it is saved); one read
        from files is a `cassette.store.refs.StoredCassette`, which resolves them from its store.
        """
        if holds_refs(value):
            raise MissingBlobError(
                f"{self.path}: a value holds blob references but the cassette was not read from its "
                "files. Open it with cassette.load_cassette().",
                path=self.path,
            )
        return value

    def hydrated(self, inter: Interaction) -> Interaction:
        """A copy of ``inter`` (one of this cassette's) with its request and response hydrated."""
        request, response = self.hydrate(inter.request), self.hydrate(inter.response)
        return Interaction(inter.seq, inter.kind, inter.key, request, response, inter.extra)


def holds_refs(value: Any) -> bool:
    """Whether hydrating ``value`` could change it: it may hold a blob reference or ``$literal``.

    Read from the compact JSON at C speed (a string that merely says ``"$blob"`` answers True,
    which only costs a needless hydration); a value answering False is its own hydrated form.

    Example::

        holds_refs({"json": {"id": "chatcmpl-1"}}) is False
    """
    if isinstance(value, dict) and "$blob" not in value and "$literal" not in value:
        return any(_holds_refs(v) for v in value.values())
    return _holds_refs(value)


def _holds_refs(value: Any) -> bool:
    if isinstance(value, list) and set(map(type, value)) <= {str}:  # SSE events: no JSON to write out
        return False
    if value is None or isinstance(value, str | int | float):
        return False
    try:
        data = orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, too deep: let hydrate decide
        return True
    return b'"$blob"' in data or b'"$literal"' in data
