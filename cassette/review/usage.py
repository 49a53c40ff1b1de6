"""Token counts read from recorded responses: each provider plugin reads its own usage fields."""

from __future__ import annotations

from typing import Any

from cassette.plugins.manager import get_plugin_manager


def tokens_of(response: dict[str, Any], request: dict[str, Any] | None = None) -> int:
    """Tokens a recorded response cost (0 when it says nothing about usage), as the provider
    plugins read it (``cassette_response_tokens``); ``request`` is the call's normalised
    request when the caller has it (the provider that made it answers).

    Example::

        tokens_of({"json": {"usage": {"total_tokens": 42}}}) == 42
    """
    found = get_plugin_manager().hook.cassette_response_tokens(response=response, request=request)
    # a recorded file (or a plugin) may say anything: only a plausible count is added to a total
    return found if type(found) is int and 0 <= found < 2**40 else 0
