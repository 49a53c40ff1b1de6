"""`use` and `using`: the ways a user opens a cassette."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cassette.config import load_config
from cassette.errors import CassetteConfigError, CassetteError
from cassette.seam.session import Mode, Session

F = TypeVar("F", bound=Callable[..., Any])


def using(path: str | Path, mode: str | Mode | None = None, **options: Any) -> Session:
    """A context manager (``with`` or ``async with``) that records or replays the calls inside it.

    Options: ``store``, ``check_order`` (``"warn"``/``"error"``/``"off"``),
    ``unused`` (same values), ``blob_threshold``, ``compress`` (write the cassette
    gzip-compressed; default ``[tool.cassette] compress``), ``network_guard``: while
    replaying, a connection from the block's context (and from threads that carry no
    context) that does not go through the seam raises `NetworkBlockedError` before any
    DNS query, naming the client; loopback and ``[tool.cassette] allow_hosts`` pass.
    Default ``[tool.cassette] network_guard`` (on); ``network_guard=False`` turns it off
    for the block (the pytest run's guard included).

    Example::

        with cassette.using("tests/cassettes/triage.json", mode="replay") as session:
            agent.run("My card was charged twice")
        print(session.stats())
    """
    _guard_default(options)
    return Session(_checked_path(path, "cassette.using"), mode, **options)


def _guard_default(options: dict[str, Any]) -> None:
    """``network_guard`` as ``[tool.cassette] network_guard`` says (on), unless given."""
    if "network_guard" not in options:
        options["network_guard"] = (options.get("config") or load_config()).network_guard


def _checked_path(path: Any, where: str) -> str | Path:
    """The cassette path, or a clear error for the usual slips (``@cassette.use`` with no path)."""
    if isinstance(path, str | os.PathLike):
        if "\x00" in os.fsdecode(path):
            raise CassetteConfigError(
                f"{where}: the cassette path {os.fsdecode(path)!r:.120} holds a NUL byte, which no file "
                "name can. Fix the path."
            )
        return path if isinstance(path, str) else Path(path)
    if callable(path):
        raise CassetteConfigError(
            f'{where} needs the cassette\'s path: write @cassette.use("tests/cassettes/<name>.json") '
            "with parentheses and a path (or use @pytest.mark.cassette for a default path per test)."
        )
    raise CassetteConfigError(
        f"{where}: the cassette path must be a str or pathlib.Path, got {type(path).__name__} {path!r:.80}."
    )


def use(path: str | Path, mode: str | Mode | None = None, **options: Any) -> Callable[[F], F]:
    """Decorate a sync or ``async def`` function so each call runs inside a cassette.

    The mode is checked when the decorator is applied, so an unknown name fails
    at import, not half-way through a run.

    Example::

        @cassette.use("tests/cassettes/triage.json")
        def test_triage():
            assert "refund" in agent.run("My card was charged twice")
    """
    path = _checked_path(path, "cassette.use")
    _guard_default(options)  # as `using`: replay guards the block's context
    Session(path, mode, **options)  # validate mode and options now

    def decorate(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                async with Session(path, mode, **options):
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
            raise CassetteError(
                f"cassette.use cannot wrap generator function {fn.__qualname__}; "
                "use `with cassette.using(...)` inside it instead."
            )

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with Session(path, mode, **options):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
