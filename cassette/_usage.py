"""Token counts read from recorded responses, whatever the provider's field names."""

from __future__ import annotations

from typing import Any

import orjson


def _from_usage(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    total = usage.get("total_tokens")
    if isinstance(total, int):
        return total
    return sum(v for k, v in usage.items() if k in ("input_tokens", "output_tokens") and isinstance(v, int))


def tokens_of(response: dict[str, Any]) -> int:
    """Tokens a recorded response cost (0 when it says nothing about usage).

    Example::

        tokens_of({"json": {"usage": {"total_tokens": 42}}}) == 42
    """
    body = response.get("json")
    if isinstance(body, dict):
        return _from_usage(body.get("usage"))
    events = response.get("events")
    if not isinstance(events, list):
        return 0
    best = 0
    for event in events:
        if not isinstance(event, str) or "usage" not in event:
            continue
        for line in event.splitlines():
            if not line.startswith("data:"):
                continue
            try:
                data = orjson.loads(line[5:].strip())
            except orjson.JSONDecodeError:
                continue
            if isinstance(data, dict):
                found = [data.get("usage"), (data.get("message") or {}).get("usage")]
                found.append((data.get("response") or {}).get("usage"))
                for u in found:
                    best = max(best, _from_usage(u))
    return best
